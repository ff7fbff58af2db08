//! Duel TV: a paced, never-ending broadcast of recent ranked matches. Ranked
//! matches finish in milliseconds, so `ladder serve --http` replays settled
//! ones exchange by exchange at a pace a person can follow.
//!
//! [`DuelTv::run`] loops until shutdown: it reads the latest settled matches
//! ([`TV_CANDIDATE_MATCHES`]), loads their replays from the replay store, picks
//! one with [`choose`] (an upset, else a close match, else the newest; never
//! one of its last broadcasts while another exists), and plays it as the
//! live feeds' events (`start`, one `exchange` per exchange, `end`), one
//! exchange per [`TvConfig::exchange_pace`]. Each broadcast is also a live
//! feed under its match id, so `/live` lists it while it airs and
//! `/live/{id}/view` follows it. Between matches it pauses; with no settled
//! match it polls ([`TvConfig::idle_poll`]).
//!
//! [`router`] serves `GET /tv` (server-sent events across matches: a new
//! watcher first gets the current match's events so far), `GET /tv/now` (the
//! match on air as JSON) and the home page's widget (`/tv/tv.js`, `/tv/tv.css`).
//! Each event is serialized once and shared by reference: a watcher holds
//! the current match's events by pointer and its place in a broadcast channel,
//! where a watcher that lags skips ahead instead of holding the broadcast.

use std::collections::{HashMap, HashSet, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use duel_plumbing::reply::json_error;
use duel_referee::publish::{LiveEvent, LiveFeeds};
use duel_replays::store::ReplayStore;
use duel_replays::{ClassName, Replay, WinnerName};
use duel_rules::Ruleset;
use futures::StreamExt;
use serde::Serialize;
use tokio::sync::{broadcast, watch};
use tokio_stream::wrappers::BroadcastStream;

use crate::limits::{
    DEFAULT_TV_EXCHANGE_MS, MAX_TV_WATCHERS, TV_CANDIDATE_MATCHES, TV_CLOSE_DAMAGE_PERCENT,
    TV_CLOSE_RATINGS_POINTS, TV_IDLE_POLL, TV_KEEP_ALIVE, TV_PAUSE_EXCHANGES,
    TV_PLAYLIST_BROADCASTS, TV_QUEUE_MATCHES, TV_RECENTLY_SHOWN, TV_REMEMBERED_BROADCASTS,
    TV_RIVALRY_MEETINGS, TV_TOP_RANKS, TV_UPSET_MAX_EXPECTED_SCORE, TV_WATCHER_LAG_EVENTS,
};

/// Where Duel TV streams: server-sent events across matches.
pub const TV_EVENTS_PATH: &str = "/tv/events";
use duel_ladder_core::model::Winner;
use duel_ladder_store::{Reads, SettledMatch};

/// The widget the home page includes (`<script src="/tv/tv.js" defer>`).
const TV_JS: &str = include_str!("tv/tv.js");
/// Its style sheet (`<link rel="stylesheet" href="/tv/tv.css">`).
const TV_CSS: &str = include_str!("tv/tv.css");

/// How Duel TV paces its broadcast.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TvConfig {
    /// Time between two events of a match (`ladder serve --tv-exchange-ms`).
    pub exchange_pace: Duration,
    /// Time between a match's `end` and the next match's `start`.
    pub pause_between_matches: Duration,
    /// How often to look again while no ranked match has settled.
    pub idle_poll: Duration,
    /// How often `GET /tv` sends a keep-alive comment when nothing happens.
    pub keep_alive: Duration,
}

impl TvConfig {
    /// The defaults at `exchange_pace`, pausing [`TV_PAUSE_EXCHANGES`] of it
    /// between matches.
    pub fn paced(exchange_pace: Duration) -> TvConfig {
        TvConfig {
            exchange_pace,
            pause_between_matches: exchange_pace.saturating_mul(TV_PAUSE_EXCHANGES),
            idle_poll: TV_IDLE_POLL,
            keep_alive: TV_KEEP_ALIVE,
        }
    }
}

impl Default for TvConfig {
    fn default() -> TvConfig {
        TvConfig::paced(Duration::from_millis(DEFAULT_TV_EXCHANGE_MS))
    }
}

/// Why Duel TV picked the match it shows, in what is known before the bell
/// (so saying it gives nothing away).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Why {
    /// One of the bots is in its class's top [`TV_TOP_RANKS`] now (in a
    /// class of more bots than that).
    TopBot,
    /// Their ratings before the match were within [`TV_CLOSE_RATINGS_POINTS`].
    CloseRatings,
    /// The pair has met at least [`TV_RIVALRY_MEETINGS`] times.
    Rivalry,
    /// None of these: the newest match not shown lately.
    Latest,
}

impl Why {
    pub fn name(self) -> &'static str {
        match self {
            Why::TopBot => "top-bot",
            Why::CloseRatings => "close-ratings",
            Why::Rivalry => "rivalry",
            Why::Latest => "latest",
        }
    }

    /// What a spectator reads.
    pub fn text(self) -> &'static str {
        match self {
            Why::TopBot => "a top-3 bot",
            Why::CloseRatings => "close ratings",
            Why::Rivalry => "a long rivalry",
            Why::Latest => "the latest match",
        }
    }
}

const _: () = assert!(TV_TOP_RANKS == 3, "Why::text says top-3");

/// What a match turned out to be, said only once its broadcast ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The winner was not expected to win: its Glicko expected score was at
    /// most [`TV_UPSET_MAX_EXPECTED_SCORE`].
    Upset,
    /// The winner lost the first round.
    Comeback,
    /// Won by one round, with damage nearly even ([`TV_CLOSE_DAMAGE_PERCENT`]).
    Close,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Upset => "an upset",
            Verdict::Comeback => "a comeback",
            Verdict::Close => "a close one",
        }
    }
}

/// What [`choose`] knows of a settled match.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub match_id: String,
    pub winner: WinnerName,
    pub round_wins: [u8; 2],
    pub damage: [u32; 2],
    /// The bots' ratings and deviations before the match, when they had one
    /// in its season (`None` for a bot's first match there).
    pub ratings: [Option<f64>; 2],
    pub deviations: [Option<f64>; 2],
    /// Who won the first round.
    pub first_round: WinnerName,
    /// Each bot's rank in its class's table now, if in the top
    /// [`TV_TOP_RANKS`].
    pub ranks: [Option<i64>; 2],
    /// Settled matches of the pair, whichever side each bot played.
    pub meetings: i64,
}

impl Candidate {
    /// A settled match, its replay's result and what Duel TV looked up
    /// before the bell.
    pub fn of(settled: &SettledMatch, replay: &Replay, facts: &Facts) -> Candidate {
        Candidate {
            match_id: settled.id.clone(),
            winner: match settled.winner {
                Winner::A => WinnerName::A,
                Winner::B => WinnerName::B,
                Winner::Draw => WinnerName::Draw,
            },
            round_wins: replay.result.round_wins,
            damage: replay.result.damage,
            ratings: facts.ratings,
            deviations: facts.deviations,
            first_round: replay
                .rounds
                .first()
                .map_or(WinnerName::Draw, |round| round.result.winner),
            ranks: [None; 2],
            meetings: facts.meetings,
        }
    }

    /// The winner's and the loser's sides; `None` for a draw.
    fn sides(&self) -> Option<(usize, usize)> {
        match self.winner {
            WinnerName::A => Some((0, 1)),
            WinnerName::B => Some((1, 0)),
            WinnerName::Draw => None,
        }
    }

    /// The winner's Glicko expected score against the loser before the match
    /// (the loser's deviation discounts the gap, as in Glickman's formula).
    pub fn winner_expected_score(&self) -> Option<f64> {
        let (winner, loser) = self.sides()?;
        let gap = self.ratings[winner]? - self.ratings[loser]?;
        let deviation = self.deviations[loser].unwrap_or(0.0);
        let q = std::f64::consts::LN_10 / 400.0;
        let g =
            1.0 / (1.0 + 3.0 * q * q * deviation * deviation / std::f64::consts::PI.powi(2)).sqrt();
        Some(1.0 / (1.0 + 10f64.powf(-g * gap / 400.0)))
    }

    /// How surprising the win was (1 − the winner's expected score), when it
    /// is an upset.
    pub fn upset_surprise(&self) -> Option<f64> {
        let expected = self.winner_expected_score()?;
        (expected <= TV_UPSET_MAX_EXPECTED_SCORE).then_some(1.0 - expected)
    }

    /// The difference in damage dealt, in percent of all damage dealt.
    pub fn damage_margin_percent(&self) -> u64 {
        let [a, b] = self.damage.map(u64::from);
        a.abs_diff(b)
            .saturating_mul(100)
            .checked_div(a + b)
            .unwrap_or(0)
    }

    /// The winner lost the first round.
    pub fn is_comeback(&self) -> bool {
        match (self.sides(), self.first_round) {
            (Some((winner, _)), WinnerName::A) => winner == 1,
            (Some((winner, _)), WinnerName::B) => winner == 0,
            _ => false,
        }
    }

    /// What the match turned out to be: for after its end only.
    pub fn verdict(&self) -> Option<Verdict> {
        if self.upset_surprise().is_some() {
            Some(Verdict::Upset)
        } else if self.is_comeback() {
            Some(Verdict::Comeback)
        } else if self.sides().is_some()
            && self.round_wins[0].abs_diff(self.round_wins[1]) == 1
            && self.damage_margin_percent() <= TV_CLOSE_DAMAGE_PERCENT
        {
            Some(Verdict::Close)
        } else {
            None
        }
    }

    /// The better rank of the two bots, if either is in the top.
    fn best_rank(&self) -> Option<i64> {
        self.ranks
            .iter()
            .flatten()
            .copied()
            .filter(|rank| *rank <= TV_TOP_RANKS)
            .min()
    }

    /// The gap between the ratings before the match, when both had one.
    fn rating_gap(&self) -> Option<f64> {
        Some((self.ratings[0]? - self.ratings[1]?).abs())
    }

    /// What makes this match worth showing, from what was known before it:
    /// never its result.
    pub fn why(&self) -> Why {
        if self.best_rank().is_some() {
            Why::TopBot
        } else if self
            .rating_gap()
            .is_some_and(|gap| gap <= TV_CLOSE_RATINGS_POINTS)
        {
            Why::CloseRatings
        } else if self.meetings >= TV_RIVALRY_MEETINGS {
            Why::Rivalry
        } else {
            Why::Latest
        }
    }

    /// Higher is more interesting: a top bot (the higher ranked first),
    /// then close ratings (the closer first), then a rivalry (the longer
    /// first), then the rest.
    fn rank(&self) -> (u8, i64) {
        match self.why() {
            Why::TopBot => (3, -self.best_rank().unwrap_or(i64::MAX)),
            Why::CloseRatings => (2, -(self.rating_gap().unwrap_or(0.0).round() as i64)),
            Why::Rivalry => (1, self.meetings),
            Why::Latest => (0, 0),
        }
    }
}

/// Picks the next match to show from `candidates` (newest first), given
/// the ids shown lately (oldest first, the one just shown last). Only
/// matches not shown lately are considered while there are any, else any
/// but the one just shown, else that one (it is the only one). Among them
/// the most interesting wins ([`Candidate::why`], from what was known before
/// the bell: a top bot, close ratings, a long rivalry, then the newest);
/// ties go to the newer.
pub fn choose(candidates: &[Candidate], recently_shown: &[String]) -> Option<(usize, Why)> {
    let all = 0..candidates.len();
    let fresh: Vec<usize> = all
        .clone()
        .filter(|&index| !recently_shown.contains(&candidates[index].match_id))
        .collect();
    let pool = if fresh.is_empty() {
        let just_shown = recently_shown.last();
        let others: Vec<usize> = all
            .clone()
            .filter(|&index| Some(&candidates[index].match_id) != just_shown)
            .collect();
        if others.is_empty() {
            all.collect()
        } else {
            others
        }
    } else {
        fresh
    };
    pool.into_iter()
        .max_by(|&x, &y| {
            candidates[x]
                .rank()
                .cmp(&candidates[y].rank())
                .then_with(|| y.cmp(&x))
        })
        .map(|index| (index, candidates[index].why()))
}

/// The order in which Duel TV would show `candidates` if no other match
/// settled: [`choose`] again and again, each pick counted as shown, each
/// candidate once, at most `most`. The first is what airs now, the rest the
/// queue.
pub fn lineup(
    candidates: &[Candidate],
    recently_shown: &[String],
    most: usize,
) -> Vec<(usize, Why)> {
    let mut shown = recently_shown.to_vec();
    let mut left: Vec<usize> = (0..candidates.len()).collect();
    let mut order = Vec::new();
    while order.len() < most {
        let pool: Vec<Candidate> = left
            .iter()
            .map(|&index| candidates[index].clone())
            .collect();
        let Some((at, why)) = choose(&pool, &shown) else {
            break;
        };
        let index = left.remove(at);
        shown.push(candidates[index].match_id.clone());
        order.push((index, why));
    }
    order
}

/// What Duel TV looks up of a candidate before the bell, once.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Facts {
    /// The ratings before the match ([`SettledMatch::ratings`], but `None`
    /// for a bot's first rated match of the season, whose rating then is
    /// the one after it).
    pub ratings: [Option<f64>; 2],
    pub deviations: [Option<f64>; 2],
    pub meetings: i64,
    pub season_id: i64,
}

/// The match on air, as `GET /tv/now` describes it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OnAir {
    pub match_id: String,
    pub class: ClassName,
    pub season: String,
    /// The bots' names, side a then side b.
    pub fighters: [String; 2],
    /// Their ratings and deviations before the match (null: none yet in
    /// its season).
    pub ratings: [Option<f64>; 2],
    pub deviations: [Option<f64>; 2],
    pub why: Why,
    /// [`Why::text`].
    pub why_text: &'static str,
    /// Shown before on this Duel TV (since it started). Never live either
    /// way: every broadcast replays a settled match.
    pub rerun: bool,
    pub accepted_ms: i64,
    /// Exchanges shown so far, and in the whole match.
    pub exchange: usize,
    pub exchanges: usize,
    /// Whether its `end` was shown (the pause before the next match).
    pub ended: bool,
    /// What a fighter starts each round with, for the widget's bars.
    pub start_hp: i32,
    pub max_stamina: i32,
}

/// A match in Duel TV's queue: what airs next if nothing newer settles.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Upcoming {
    pub match_id: String,
    pub class: ClassName,
    pub season: String,
    pub fighters: [String; 2],
    pub why: Why,
    pub why_text: &'static str,
}

/// A broadcast that ended: now its result may be said.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Aired {
    pub match_id: String,
    pub class: ClassName,
    pub season: String,
    pub fighters: [String; 2],
    pub why: Why,
    pub why_text: &'static str,
    pub rerun: bool,
    /// The result, null while the same match is on air again.
    pub result: Option<AiredResult>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AiredResult {
    /// The winner's name; null for a draw.
    pub winner: Option<String>,
    pub round_wins: [u8; 2],
    pub verdict: Option<Verdict>,
    /// [`Verdict::text`], or null.
    pub verdict_text: Option<&'static str>,
}

/// What `/tv` shows and `/api/tv` returns: the match on air, the queue and
/// the playlist of recent broadcasts (newest first).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TvPage {
    pub on_air: Option<OnAir>,
    pub queue: Vec<Upcoming>,
    pub playlist: Vec<Aired>,
    /// Where the broadcast streams (server-sent events).
    pub events: &'static str,
}

/// One event, serialized once for every watcher.
#[derive(Debug)]
struct Frame {
    kind: &'static str,
    data: String,
}

impl Frame {
    fn of(event: &LiveEvent) -> Option<Arc<Frame>> {
        match serde_json::to_string(event) {
            Ok(data) => Some(Arc::new(Frame {
                kind: event.kind(),
                data,
            })),
            Err(error) => {
                tracing::error!(%error, "Duel TV cannot serialize an event");
                None
            }
        }
    }
}

/// The match on air and its events so far (a new watcher's history), what
/// airs next and what aired last.
#[derive(Debug, Default)]
struct Program {
    on_air: Option<OnAir>,
    frames: Vec<Arc<Frame>>,
    queue: Vec<Upcoming>,
    /// Newest first, at most [`TV_PLAYLIST_BROADCASTS`].
    playlist: VecDeque<Aired>,
}

#[derive(Debug)]
struct Inner {
    store: Reads,
    replays: ReplayStore,
    live: Option<LiveFeeds>,
    config: TvConfig,
    program: Mutex<Program>,
    sender: broadcast::Sender<Arc<Frame>>,
    /// Turns true when the broadcast stops, which ends every `GET /tv/events`.
    stopped: watch::Sender<bool>,
}

/// Duel TV: the broadcaster ([`DuelTv::run`]) and what its routes read
/// ([`router`]). Cheap to clone.
#[derive(Clone, Debug)]
pub struct DuelTv {
    inner: Arc<Inner>,
}

/// Lock a mutex whose holder may have panicked: the program is replaced
/// whole or appended to, so it stays consistent across any panic.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A new watcher's start: the current match's events so far, then the live ones.
struct Watch {
    history: Vec<Arc<Frame>>,
    receiver: broadcast::Receiver<Arc<Frame>>,
}

/// Marks the broadcast stopped however [`DuelTv::run`] ends.
struct OffAir<'a>(&'a Inner);

impl Drop for OffAir<'_> {
    fn drop(&mut self) {
        lock(&self.0.program).on_air = None;
        self.0.stopped.send_replace(true);
    }
}

/// Sleeps `duration` unless shutdown comes first; `false` when it did.
async fn pause(shutdown: &mut watch::Receiver<bool>, duration: Duration) -> bool {
    if *shutdown.borrow() {
        return false;
    }
    tokio::select! {
        () = tokio::time::sleep(duration) => true,
        _ = shutdown.wait_for(|stopped| *stopped) => false,
    }
}

/// A candidate Duel TV loaded (its replay and what it looked up), or `None`
/// for one it could not (said once).
type Loaded = Option<Arc<Prepared>>;

#[derive(Debug)]
struct Prepared {
    replay: Arc<Replay>,
    facts: Facts,
}

/// What airs next: the match, its replay, why, and the queue after it.
struct Pick {
    settled: SettledMatch,
    replay: Arc<Replay>,
    candidate: Candidate,
    why: Why,
    queue: Vec<Upcoming>,
}

/// The matches this Duel TV has shown, to call a second showing a rerun
/// (the last [`TV_REMEMBERED_BROADCASTS`]).
#[derive(Default)]
struct Shown {
    ids: HashSet<String>,
    order: VecDeque<String>,
}

impl Shown {
    /// Records `id`; whether it was shown before.
    fn again(&mut self, id: &str) -> bool {
        if self.ids.contains(id) {
            return true;
        }
        self.ids.insert(id.to_owned());
        self.order.push_back(id.to_owned());
        if self.order.len() > TV_REMEMBERED_BROADCASTS
            && let Some(oldest) = self.order.pop_front()
        {
            self.ids.remove(&oldest);
        }
        false
    }
}

impl DuelTv {
    /// Duel TV over the ladder's store and replay store; each broadcast is
    /// also published into `live` when given.
    pub fn new(
        store: Reads,
        replays: ReplayStore,
        live: Option<LiveFeeds>,
        config: TvConfig,
    ) -> DuelTv {
        let (sender, _) = broadcast::channel(TV_WATCHER_LAG_EVENTS);
        DuelTv {
            inner: Arc::new(Inner {
                store,
                replays,
                live,
                config,
                program: Mutex::new(Program::default()),
                sender,
                stopped: watch::Sender::new(false),
            }),
        }
    }

    /// The match on air, if any (also during the pause after its end).
    pub fn now(&self) -> Option<OnAir> {
        lock(&self.inner.program).on_air.clone()
    }

    /// The match on air, the queue and the playlist. A playlist entry of
    /// the match on air (a rerun) keeps its result back until it ends.
    pub fn page(&self) -> TvPage {
        let program = lock(&self.inner.program);
        let airing = program
            .on_air
            .as_ref()
            .filter(|on_air| !on_air.ended)
            .map(|on_air| on_air.match_id.as_str());
        TvPage {
            on_air: program.on_air.clone(),
            queue: program.queue.clone(),
            playlist: program
                .playlist
                .iter()
                .map(|aired| {
                    let mut aired = aired.clone();
                    if Some(aired.match_id.as_str()) == airing {
                        aired.result = None;
                    }
                    aired
                })
                .collect(),
            events: TV_EVENTS_PATH,
        }
    }

    /// Broadcasts until `shutdown` turns true, then ends every `GET /tv/events`.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let _off_air = OffAir(&self.inner);
        let mut shown: Vec<String> = Vec::with_capacity(TV_RECENTLY_SHOWN + 1);
        let mut ever_shown = Shown::default();
        let mut loaded: HashMap<String, Loaded> = HashMap::new();
        while !*shutdown.borrow() {
            let Some(pick) = self.next_match(&shown, &mut loaded).await else {
                if !pause(&mut shutdown, self.inner.config.idle_poll).await {
                    break;
                }
                continue;
            };
            let rerun = ever_shown.again(&pick.settled.id);
            let finished = self.broadcast(&pick, rerun, &mut shutdown).await;
            shown.push(pick.settled.id);
            if shown.len() > TV_RECENTLY_SHOWN {
                shown.remove(0);
            }
            if !finished || !pause(&mut shutdown, self.inner.config.pause_between_matches).await {
                break;
            }
        }
    }

    /// The next match to show with its replay, or `None` when none has settled.
    /// `loaded` keeps the candidates' replays and facts between calls.
    async fn next_match(
        &self,
        shown: &[String],
        loaded: &mut HashMap<String, Loaded>,
    ) -> Option<Pick> {
        let latest = match self.inner.store.latest_settled(TV_CANDIDATE_MATCHES).await {
            Ok(latest) => latest,
            Err(error) => {
                tracing::warn!(%error, "Duel TV cannot read the latest matches");
                return None;
            }
        };
        loaded.retain(|id, _| latest.iter().any(|settled| &settled.id == id));
        let mut playable = Vec::with_capacity(latest.len());
        for settled in latest {
            if !loaded.contains_key(&settled.id) {
                let prepared = self.load(&settled).await;
                loaded.insert(settled.id.clone(), prepared);
            }
            if let Some(Some(prepared)) = loaded.get(&settled.id) {
                let prepared = Arc::clone(prepared);
                playable.push((settled, prepared));
            }
        }
        // Each class's top of the table now, read once per pick.
        let mut tops: HashMap<(i64, &'static str), Vec<String>> = HashMap::new();
        let mut candidates = Vec::with_capacity(playable.len());
        for (settled, prepared) in &playable {
            let key = (prepared.facts.season_id, settled.class.name());
            let top = match tops.entry(key) {
                std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
                std::collections::hash_map::Entry::Vacant(entry) => {
                    entry.insert(self.top_of(prepared.facts.season_id, settled.class).await)
                }
            };
            let mut candidate = Candidate::of(settled, &prepared.replay, &prepared.facts);
            candidate.ranks = settled.names.clone().map(|name| {
                top.iter()
                    .position(|bot| *bot == name)
                    .and_then(|index| i64::try_from(index + 1).ok())
            });
            candidates.push(candidate);
        }
        let order = lineup(&candidates, shown, TV_QUEUE_MATCHES + 1);
        let (&(index, why), rest) = order.split_first()?;
        let queue = rest
            .iter()
            .map(|&(index, why)| {
                let settled = &playable[index].0;
                Upcoming {
                    match_id: settled.id.clone(),
                    class: settled.class.into(),
                    season: settled.season.clone(),
                    fighters: settled.names.clone(),
                    why,
                    why_text: why.text(),
                }
            })
            .collect();
        let candidate = candidates.swap_remove(index);
        let (settled, prepared) = playable.swap_remove(index);
        Some(Pick {
            settled,
            replay: Arc::clone(&prepared.replay),
            candidate,
            why,
            queue,
        })
    }

    /// The names of the top [`TV_TOP_RANKS`] bots of `class` in season
    /// `season_id` now; none in a class of no more bots than that (every bot
    /// would be "a top-3 bot"), or when it cannot be read (said in the log).
    async fn top_of(&self, season_id: i64, class: duel_rules::WeightClass) -> Vec<String> {
        let store = &self.inner.store;
        let table = async {
            let season = store
                .chosen_season(&duel_ladder_store::SeasonChoice::Id(season_id))
                .await?;
            let top = usize::try_from(TV_TOP_RANKS).unwrap_or(3);
            let table = store.class_table(&season, class, None, top + 1).await?;
            Ok::<_, duel_ladder_store::error::LadderError>((top, table))
        };
        match table.await {
            Ok((top, table)) if table.rows.len() > top => table
                .rows
                .into_iter()
                .take(top)
                .map(|row| row.bot)
                .collect(),
            Ok(_) => Vec::new(),
            Err(error) => {
                tracing::warn!(%error, "Duel TV cannot read the top of the table");
                Vec::new()
            }
        }
    }

    /// A settled match's replay from the replay store (its id is the match's)
    /// and what Duel TV says of it before the bell.
    async fn load(&self, settled: &SettledMatch) -> Loaded {
        let id = &settled.id;
        let failed = |why: String| {
            tracing::warn!(match_id = %id, %why, "Duel TV skips this match: its replay is unusable");
            None
        };
        if settled.replay_path.is_none() {
            return failed("settled without a replay".to_owned());
        }
        let json = match self.inner.replays.get_json(id).await {
            Ok(Some(json)) => json,
            Ok(None) => return failed(format!("not in {}", self.inner.replays.description())),
            Err(error) => return failed(error.to_string()),
        };
        let replay = match Replay::from_slice(&json) {
            Ok(replay) if replay.match_id == *id => Arc::new(replay),
            Ok(replay) => return failed(format!("the replay names match {}", replay.match_id)),
            Err(error) => return failed(error.to_string()),
        };
        let facts = match self.facts(settled).await {
            Ok(facts) => facts,
            Err(error) => return failed(format!("its facts cannot be read: {error}")),
        };
        Some(Arc::new(Prepared { replay, facts }))
    }

    /// The ratings before the match (a bot's first rated match of its
    /// season has none: the store's rating then is the one after it, which
    /// would give the result away) and the pair's meetings.
    async fn facts(
        &self,
        settled: &SettledMatch,
    ) -> Result<Facts, duel_ladder_store::error::LadderError> {
        let store = &self.inner.store;
        let game = store.game(&settled.id).await?;
        let mut facts = Facts {
            ratings: settled.ratings,
            deviations: settled.deviations,
            meetings: 0,
            season_id: game.season_id,
        };
        for (side, match_side) in game.sides.iter().enumerate() {
            let history = &store.bot_reads(&match_side.bot_id).await?.history;
            let first_of_season = history
                .iter()
                .position(|point| point.match_id == settled.id)
                .is_some_and(|at| {
                    history[..at]
                        .iter()
                        .all(|point| point.season != settled.season)
                });
            if first_of_season {
                facts.ratings[side] = None;
                facts.deviations[side] = None;
            }
        }
        let [a, b] = &game.sides;
        // A rivalry is every meeting, rated or not.
        let records = store.head_to_head_record(&a.bot_id, &b.bot_id).await?;
        facts.meetings = records.settled.matches();
        Ok(facts)
    }

    /// Records `event` as the current match's and sends it to every watcher,
    /// under the lock a new watcher takes its history under (nothing missed
    /// or repeated); `update` changes what `/tv/now` says at the same moment.
    fn publish(&self, event: &LiveEvent, update: impl FnOnce(&mut Program)) {
        let Some(frame) = Frame::of(event) else {
            return;
        };
        let mut program = lock(&self.inner.program);
        update(&mut program);
        program.frames.push(Arc::clone(&frame));
        // No watcher is not an error.
        let _ = self.inner.sender.send(frame);
    }

    /// Plays one match at the configured pace; `false` when shutdown
    /// interrupted it.
    async fn broadcast(
        &self,
        pick: &Pick,
        rerun: bool,
        shutdown: &mut watch::Receiver<bool>,
    ) -> bool {
        let (settled, replay, why) = (&pick.settled, pick.replay.as_ref(), pick.why);
        let ruleset = Ruleset::from_version(&replay.ruleset).unwrap_or(Ruleset::CURRENT);
        let on_air = OnAir {
            match_id: settled.id.clone(),
            class: settled.class.into(),
            season: settled.season.clone(),
            fighters: settled.names.clone(),
            ratings: pick.candidate.ratings,
            deviations: pick.candidate.deviations,
            why,
            why_text: why.text(),
            rerun,
            accepted_ms: settled.accepted_ms,
            exchange: 0,
            exchanges: replay
                .rounds
                .iter()
                .map(|round| round.exchanges.len())
                .sum(),
            ended: false,
            start_hp: ruleset.start_hp(),
            max_stamina: ruleset.max_stamina(),
        };
        tracing::info!(
            match_id = %settled.id,
            class = settled.class.name(),
            a = %settled.names[0],
            b = %settled.names[1],
            why = why.name(),
            rerun,
            "Duel TV: on air"
        );
        let start = LiveEvent::start_of(replay);
        let queue = pick.queue.clone();
        self.publish(&start, |program| {
            program.frames.clear();
            program.on_air = Some(on_air);
            program.queue = queue;
        });
        let live = self.inner.live.as_ref().and_then(|feeds| {
            feeds
                .start(&settled.id, start)
                .inspect_err(|error| {
                    tracing::debug!(%error, "Duel TV: no live feed for this broadcast");
                })
                .ok()
        });
        let mut shown = 0;
        let mut finished = true;
        'play: for round in &replay.rounds {
            for (index, exchange) in round.exchanges.iter().enumerate() {
                if !pause(shutdown, self.inner.config.exchange_pace).await {
                    finished = false;
                    break 'play;
                }
                let event = LiveEvent::Exchange {
                    round: round.number,
                    exchange: Box::new(exchange.clone()),
                    round_result: (index + 1 == round.exchanges.len()).then_some(round.result),
                    transcript: Vec::new(),
                };
                shown += 1;
                self.publish(&event, |program| {
                    if let Some(on_air) = &mut program.on_air {
                        on_air.exchange = shown;
                    }
                });
                if let Some(live) = &live {
                    live.publish(event);
                }
            }
        }
        if finished && pause(shutdown, self.inner.config.exchange_pace).await {
            let end = LiveEvent::End {
                result: replay.result.clone(),
            };
            let verdict = pick.candidate.verdict();
            let aired = Aired {
                match_id: settled.id.clone(),
                class: settled.class.into(),
                season: settled.season.clone(),
                fighters: settled.names.clone(),
                why,
                why_text: why.text(),
                rerun,
                result: Some(AiredResult {
                    winner: match replay.result.winner {
                        WinnerName::A => Some(settled.names[0].clone()),
                        WinnerName::B => Some(settled.names[1].clone()),
                        WinnerName::Draw => None,
                    },
                    round_wins: replay.result.round_wins,
                    verdict,
                    verdict_text: verdict.map(Verdict::text),
                }),
            };
            self.publish(&end, |program| {
                if let Some(on_air) = &mut program.on_air {
                    on_air.ended = true;
                }
                program.playlist.push_front(aired);
                program.playlist.truncate(TV_PLAYLIST_BROADCASTS);
            });
        } else {
            finished = false;
        }
        // The replay exists either way: a live viewer goes on to load it.
        if let Some(live) = live {
            live.finish(&replay.result);
        }
        finished
    }

    /// A new watcher, or `None` when [`MAX_TV_WATCHERS`] watch already.
    fn watch(&self) -> Option<Watch> {
        let program = lock(&self.inner.program);
        if self.inner.sender.receiver_count() >= MAX_TV_WATCHERS {
            return None;
        }
        Some(Watch {
            history: program.frames.clone(),
            receiver: self.inner.sender.subscribe(),
        })
    }
}

/// Duel TV's routes: the page `GET /tv` (its JSON twin `GET /api/tv`), the
/// stream `GET /tv/events`, `GET /tv/now`, `GET /tv/tv.js`, `GET /tv/tv.css`,
/// with the replay service's security headers. No fallback, so it merges
/// into another router.
pub fn router(tv: DuelTv) -> Router {
    Router::new()
        .route("/tv", get(tv_page))
        .route("/api/tv", get(tv_api))
        .route("/tv/events", get(tv_feed))
        .route("/tv/now", get(tv_now))
        .route("/tv/tv.js", get(tv_js))
        .route("/tv/tv.css", get(tv_css))
        .with_state(tv)
        .layer(axum::middleware::map_response(
            duel_referee::publish::security_headers,
        ))
}

/// Whether a request asks for a page: a browser's navigation names
/// `text/html` in `Accept`.
fn wants_html(parts: &axum::http::request::Parts) -> bool {
    parts
        .headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(|accept| accept.contains("text/html"))
}

/// The page for browsers. A client that does not ask for HTML (scripts,
/// `curl -N`, the site bench's watchers) still gets the stream here, as
/// before the stream moved to [`TV_EVENTS_PATH`].
async fn tv_page(State(tv): State<DuelTv>, parts: axum::http::request::Parts) -> Response {
    if !wants_html(&parts) {
        let mut response = tv_feed(State(tv), parts).await;
        response
            .headers_mut()
            .insert(header::VARY, HeaderValue::from_static("accept"));
        return response;
    }
    let page = tv.page();
    (
        [
            (header::CACHE_CONTROL, "no-cache"),
            (header::VARY, "accept"),
        ],
        axum::response::Html(crate::pages::tv_page(&page).into_string()),
    )
        .into_response()
}

async fn tv_api(State(tv): State<DuelTv>) -> Response {
    ([(header::CACHE_CONTROL, "no-cache")], axum::Json(tv.page())).into_response()
}

async fn tv_feed(State(tv): State<DuelTv>, parts: axum::http::request::Parts) -> Response {
    // Held for as long as the stream lives.
    let place = match duel_plumbing::clients::hold_stream(&parts.extensions) {
        Ok(place) => place,
        Err(refusal) => return json_error(StatusCode::TOO_MANY_REQUESTS, refusal.to_string()),
    };
    let Some(watch) = tv.watch() else {
        return json_error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("Duel TV has {MAX_TV_WATCHERS} watchers already; try again later"),
        );
    };
    let mut stopped = tv.inner.stopped.subscribe();
    let off_air = async move {
        let _ = stopped.wait_for(|stopped| *stopped).await;
    };
    // A lagging watcher skips what it missed rather than holding the broadcast.
    let live = BroadcastStream::new(watch.receiver).filter_map(|frame| async move { frame.ok() });
    let stream = futures::stream::iter(watch.history)
        .chain(live)
        .map(move |frame| {
            let _place = &place;
            Ok::<Event, Infallible>(Event::default().event(frame.kind).data(&frame.data))
        })
        .take_until(off_air);
    (
        [(header::CACHE_CONTROL, "no-cache")],
        Sse::new(stream).keep_alive(KeepAlive::new().interval(tv.inner.config.keep_alive)),
    )
        .into_response()
}

async fn tv_now(State(tv): State<DuelTv>) -> Response {
    (
        [(header::CACHE_CONTROL, "no-cache")],
        axum::Json(serde_json::json!({ "on_air": tv.now() })),
    )
        .into_response()
}

async fn tv_js() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        TV_JS,
    )
        .into_response()
}

async fn tv_css() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        TV_CSS,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(
        id: &str,
        winner: WinnerName,
        round_wins: [u8; 2],
        damage: [u32; 2],
        ratings: [f64; 2],
    ) -> Candidate {
        Candidate {
            match_id: id.to_owned(),
            winner,
            round_wins,
            damage,
            ratings: ratings.map(Some),
            deviations: [Some(60.0); 2],
            first_round: winner,
            ranks: [None; 2],
            meetings: 1,
        }
    }

    fn ids(shown: &[&str]) -> Vec<String> {
        shown.iter().map(|id| (*id).to_owned()).collect()
    }

    #[test]
    fn a_top_bot_beats_close_ratings_beats_a_rivalry_beats_the_newest() {
        let newest = candidate("m5", WinnerName::A, [2, 0], [90, 10], [1700.0, 1500.0]);
        let rivalry = Candidate {
            meetings: TV_RIVALRY_MEETINGS + 3,
            ..candidate("m4", WinnerName::B, [1, 2], [70, 75], [1500.0, 1600.0])
        };
        let close = candidate("m3", WinnerName::A, [2, 0], [80, 20], [1500.0, 1530.0]);
        let top = Candidate {
            ranks: [None, Some(2)],
            ..candidate("m2", WinnerName::A, [2, 0], [80, 20], [1400.0, 1700.0])
        };
        let first = Candidate {
            ranks: [Some(1), Some(7)],
            ..candidate("m1", WinnerName::B, [0, 2], [10, 90], [1800.0, 1500.0])
        };
        let all = [
            newest.clone(),
            rivalry.clone(),
            close.clone(),
            top.clone(),
            first.clone(),
        ];
        assert_eq!(choose(&all, &[]), Some((4, Why::TopBot)), "rank 1 first");
        assert_eq!(choose(&all, &ids(&["m1"])), Some((3, Why::TopBot)));
        assert_eq!(
            choose(&all, &ids(&["m1", "m2"])),
            Some((2, Why::CloseRatings))
        );
        assert_eq!(
            choose(&all, &ids(&["m1", "m2", "m3"])),
            Some((1, Why::Rivalry))
        );
        assert_eq!(
            choose(&all, &ids(&["m1", "m2", "m3", "m4"])),
            Some((0, Why::Latest))
        );
        // The lineup is the same picks in turn: what airs now, then the queue.
        assert_eq!(
            lineup(&all, &[], 10),
            vec![
                (4, Why::TopBot),
                (3, Why::TopBot),
                (2, Why::CloseRatings),
                (1, Why::Rivalry),
                (0, Why::Latest)
            ]
        );
        assert_eq!(lineup(&all, &ids(&["m1"]), 2).len(), 2);
        assert_eq!(lineup(&all, &ids(&["m1"]), 2)[0], (3, Why::TopBot));
        // A rank below the top is no reason; a bot with no rating before the
        // match makes no close ratings.
        let fourth = Candidate {
            ranks: [Some(TV_TOP_RANKS + 1), None],
            ..candidate("x", WinnerName::A, [2, 0], [1, 0], [1000.0, 2000.0])
        };
        assert_eq!(fourth.why(), Why::Latest);
        let mut newcomer = candidate("y", WinnerName::A, [2, 0], [1, 0], [1500.0, 1500.0]);
        newcomer.ratings[1] = None;
        assert_eq!(newcomer.why(), Why::Latest);
    }

    #[test]
    fn why_never_names_a_result_and_the_verdict_waits_for_the_end() {
        for why in [Why::TopBot, Why::CloseRatings, Why::Rivalry, Why::Latest] {
            let text = why.text();
            for spoiler in ["upset", "comeback", "close one", "won", "live", "Live"] {
                assert!(!text.contains(spoiler), "{text}");
            }
        }
        // The same pair, the same ratings: whatever the result, the same why.
        let won = candidate("a", WinnerName::A, [2, 0], [90, 10], [1500.0, 1520.0]);
        let lost = candidate("a", WinnerName::B, [0, 2], [10, 90], [1500.0, 1520.0]);
        assert_eq!(won.why(), lost.why());
    }

    #[test]
    fn verdicts_upset_comeback_close() {
        let upset = candidate("m2", WinnerName::A, [2, 0], [80, 20], [1400.0, 1700.0]);
        let expected = upset.winner_expected_score().expect("rated");
        assert!((0.14..0.16).contains(&expected), "{expected}");
        assert_eq!(upset.verdict(), Some(Verdict::Upset));
        let small_upset = candidate("m1", WinnerName::B, [0, 2], [10, 90], [1620.0, 1500.0]);
        assert_eq!(small_upset.verdict(), Some(Verdict::Upset));
        let comeback = Candidate {
            first_round: WinnerName::A,
            ..candidate("m3", WinnerName::B, [1, 2], [60, 40], [1500.0, 1500.0])
        };
        assert_eq!(comeback.verdict(), Some(Verdict::Comeback));
        let close = candidate("m4", WinnerName::B, [1, 2], [70, 75], [1500.0, 1510.0]);
        assert_eq!(close.damage_margin_percent(), 3);
        assert_eq!(close.verdict(), Some(Verdict::Close));
        let plain = candidate("m5", WinnerName::A, [2, 0], [90, 10], [1600.0, 1500.0]);
        assert_eq!(plain.verdict(), None);
    }

    #[test]
    fn a_likely_win_a_draw_or_no_rating_is_no_upset_and_a_draw_is_never_close() {
        let narrow = candidate("a", WinnerName::B, [0, 2], [10, 90], [1540.0, 1500.0]);
        assert_eq!(narrow.upset_surprise(), None);
        // The loser's wide deviation discounts the gap: 110 points against a
        // newcomer (350) is no upset, against an established bot it is.
        let mut newcomer = candidate("n", WinnerName::A, [2, 0], [90, 10], [1500.0, 1610.0]);
        newcomer.deviations = [Some(350.0); 2];
        assert_eq!(newcomer.upset_surprise(), None);
        newcomer.deviations = [Some(50.0); 2];
        assert!(newcomer.upset_surprise().is_some());
        // 36 jabs traded evenly to a draw: nothing to see.
        let draw = candidate("b", WinnerName::Draw, [1, 1], [50, 50], [1300.0, 1700.0]);
        assert_eq!((draw.upset_surprise(), draw.verdict()), (None, None));
        let mut unrated = candidate("c", WinnerName::A, [2, 0], [90, 10], [1000.0, 2000.0]);
        unrated.ratings[1] = None;
        assert_eq!((unrated.upset_surprise(), unrated.verdict()), (None, None));
        // A one-round win with lopsided damage is not close.
        let lopsided = candidate("d", WinnerName::A, [2, 1], [100, 20], [1500.0, 1500.0]);
        assert_eq!(lopsided.verdict(), None);
        let none = candidate("e", WinnerName::Draw, [0, 0], [0, 0], [1500.0, 1500.0]);
        assert_eq!(none.damage_margin_percent(), 0);
    }

    #[test]
    fn ties_go_to_the_newer_and_the_match_just_shown_is_not_repeated() {
        let plain = |id: &str| candidate(id, WinnerName::A, [2, 0], [90, 10], [1500.0, 1700.0]);
        let all = [plain("new"), plain("mid"), plain("old")];
        assert_eq!(choose(&all, &[]), Some((0, Why::Latest)));
        assert_eq!(choose(&all, &ids(&["new"])), Some((1, Why::Latest)));
        // All shown lately: any but the one just shown, newest first.
        assert_eq!(
            choose(&all, &ids(&["old", "mid", "new"])),
            Some((1, Why::Latest))
        );
        assert_eq!(
            choose(&all, &ids(&["new", "mid", "old"])),
            Some((0, Why::Latest))
        );
        // The only match is shown again; none is none.
        assert_eq!(choose(&all[..1], &ids(&["new"])), Some((0, Why::Latest)));
        assert_eq!(choose(&[], &ids(&["new"])), None);
        assert_eq!(lineup(&[], &[], 5), vec![]);
    }

    #[test]
    fn a_second_showing_is_a_rerun() {
        let mut shown = Shown::default();
        assert!(!shown.again("m1"));
        assert!(shown.again("m1"));
        assert!(!shown.again("m2"));
        for index in 0..TV_REMEMBERED_BROADCASTS {
            shown.again(&format!("x{index}"));
        }
        assert!(
            !shown.again("m1"),
            "forgotten after the last {TV_REMEMBERED_BROADCASTS}"
        );
        assert!(shown.ids.len() <= TV_REMEMBERED_BROADCASTS + 1);
    }
}
