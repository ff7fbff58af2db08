//! A seeded simulation of 10,000 random matches, first in memory over pure
//! settlement plans (`ledger::settle` on a `ledger::Book` and in-memory
//! ratings), then replayed step by step against SQLite and PostgreSQL. The
//! stores must make exactly the plans the model made and end in its state:
//! every balance, every rating and tally (ratings to 1e-6: season 1 ends with
//! the season fit, computed in the store's order), both seasons' standings, the
//! `ledger check` report and the count of settled and voided matches.
//!
//! The model has random stakes (some beyond the owner's balance), results and
//! draws, rake changes, a season ending mid-run with matches still open, and
//! several matches open at once (so ratings move between a match's acceptance
//! and its settlement). The replay adds the lease paths: workers that crash
//! mid-match (the match is claimed again), stale workers refused after losing
//! their lease, retried settlements, unrunnable bots and matches voided after
//! their last attempt. Time is a `ManualClock`: nothing sleeps.
//!
//! Every run prints `LEDGER_SEED=…`; set it to replay that run exactly.

use crate::common;

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use common::TestDb;
use common::rng::SplitMix64;
use duel_ladder_core::clock::ManualClock;
use duel_ladder_core::ledger::{
    self, Account, Book, HOUSE_ACCOUNT, ISSUANCE_ACCOUNT, Plan, TransferOp, TransferRequest,
    escrow_account, owner_account,
};
use duel_ladder_core::limits::{DEFAULT_RAKE_BP, MAX_RAKE_BP};
use duel_ladder_core::model::{BotSource, Match, MatchSide, MatchState, Winner};
use duel_ladder_core::rating::{self, FitGame, Rating, Score};
use duel_ladder_store::LadderError;
use duel_ladder_store::PairSide;
use duel_rules::WeightClass;

const MATCHES: usize = 10_000;
const OWNERS: usize = 12;
const BOTS_PER_OWNER: usize = 2;
/// Most matches accepted and not yet finished at once.
const OPEN_MAX: usize = 4;
const LEASE_MS: i64 = 1_000;
const START_MS: i64 = 1_000_000;

fn seed() -> u64 {
    let seed = match std::env::var("LEDGER_SEED") {
        Ok(text) => text
            .parse::<u64>()
            .unwrap_or_else(|_| panic!("LEDGER_SEED={text:?} is not a u64")),
        Err(_) => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("clock after 1970")
                .as_nanos();
            (nanos as u64) ^ u64::from(std::process::id()).rotate_left(32)
        }
    };
    println!("LEDGER_SEED={seed}");
    seed
}

fn owner_name(index: usize) -> String {
    format!("owner{index}")
}

fn bot_name(owner: usize, bot: usize) -> String {
    format!("bot{owner}x{bot}")
}

fn credits_of(owner: usize) -> i64 {
    // One owner is poor, so some stakes cannot be covered.
    if owner == 0 { 40 } else { 1_000_000 }
}

/// How the replay finishes a match (the model only sees settled or voided).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Settle,
    /// Settled, then the same lease settles again: no effect.
    Retry,
    /// The worker dies mid-match; the next claim runs it again.
    Crash,
    /// The worker stalls past its lease, another claims the match, and the
    /// stale one is refused when it tries to settle.
    Stale,
    /// The worker cannot build a bot and voids the match.
    Unrunnable,
    /// Every attempt crashes until a claim voids the match.
    Exhausted,
}

#[derive(Clone, Debug, PartialEq)]
enum Step {
    SetRake(i64),
    NewSeason,
    /// A pairing the poorer owner cannot cover: refused, nothing changes.
    Refused {
        sides: [(String, i64); 2],
    },
    Accept {
        id: String,
        sides: [(String, i64); 2],
    },
    /// The plan is a settlement's; a void has none.
    Finish {
        id: String,
        fate: Fate,
        winner: Winner,
        plan: Option<Plan>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Tally {
    rating: Rating,
    /// The season's start: the prior of the season fit.
    start: Rating,
    games: i64,
    wins: i64,
    losses: i64,
    draws: i64,
}

/// The ladder in memory: what every store must agree with.
#[derive(Debug)]
struct Model {
    book: Book,
    /// (season, bot) → rating and tally.
    ratings: BTreeMap<(i64, String), Tally>,
    /// Every rated game: (season, bot a, bot b, a's score).
    rated: Vec<(i64, String, String, Score)>,
    season: i64,
    settled: i64,
    voided: i64,
    fates: BTreeMap<String, usize>,
    steps: Vec<Step>,
}

fn side(game: &Match, index: usize) -> &MatchSide {
    &game.sides[index]
}

impl Model {
    /// Runs the whole simulation from `seed`; pure, so a seed gives one run.
    fn run(seed: u64) -> Model {
        let mut rng = SplitMix64::new(seed);
        let mut model = Model {
            book: Book::new(),
            ratings: BTreeMap::new(),
            rated: Vec::new(),
            season: 1,
            settled: 0,
            voided: 0,
            fates: BTreeMap::new(),
            steps: Vec::new(),
        };
        model.book.open(ISSUANCE_ACCOUNT, "issuance", true);
        model.book.open(HOUSE_ACCOUNT, "house", false);
        for owner in 0..OWNERS {
            let account = owner_account(&owner_name(owner));
            model.book.open(&account, "owner", false);
            let grant = TransferRequest {
                id: format!("grant:{}", owner_name(owner)),
                op: TransferOp::Single {
                    debit: ISSUANCE_ACCOUNT.to_owned(),
                    credit: account,
                    amount: credits_of(owner),
                },
                memo: format!("grant to {}", owner_name(owner)),
            };
            model.book.apply(&grant, 0).expect("grant");
        }
        let mut rake_bp = DEFAULT_RAKE_BP;
        let mut open: VecDeque<Match> = VecDeque::new();
        let mut accepted = 0;
        let mut index = 0;
        while accepted < MATCHES || !open.is_empty() {
            if accepted == MATCHES / 2 && model.season == 1 {
                // Matches of season 1 still open settle their stakes unrated.
                model.fit_season(1);
                model.season = 2;
                model.steps.push(Step::NewSeason);
            }
            if rng.below(500) == 0 {
                rake_bp = rng.below(MAX_RAKE_BP as u64 + 1) as i64;
                model.steps.push(Step::SetRake(rake_bp));
            }
            let accept = accepted < MATCHES
                && (open.is_empty() || (open.len() < OPEN_MAX && rng.below(2) == 0));
            if accept {
                let first = rng.below(OWNERS as u64) as usize;
                let mut second = rng.below(OWNERS as u64) as usize;
                while second == first {
                    second = rng.below(OWNERS as u64) as usize;
                }
                let pick = |rng: &mut SplitMix64, owner: usize| {
                    let bot = bot_name(owner, rng.below(BOTS_PER_OWNER as u64) as usize);
                    (owner, bot, 1 + rng.below(60) as i64)
                };
                let picked = [pick(&mut rng, first), pick(&mut rng, second)];
                let sides = picked.clone().map(|(_, bot, stake)| (bot, stake));
                let covered = picked.iter().all(|(owner, _, stake)| {
                    model
                        .book
                        .account(&owner_account(&owner_name(*owner)))
                        .is_some_and(|account| account.available() >= *stake)
                });
                if !covered {
                    model.steps.push(Step::Refused { sides });
                    continue;
                }
                let id = format!("m{index:05}");
                index += 1;
                accepted += 1;
                let game = Match {
                    id: id.clone(),
                    season_id: model.season,
                    class: WeightClass::Light,
                    ruleset: String::new(),
                    budget: 0,
                    rake_bp,
                    seed: 0,
                    opening_exchanges: 0,
                    sides: picked.map(|(owner, bot, stake)| MatchSide {
                        bot_id: bot,
                        bot_name: String::new(),
                        version: 1,
                        owner_id: owner_name(owner),
                        stake,
                    }),
                    state: MatchState::Queued,
                    attempts: 0,
                    accepted_ms: 0,
                    finished_ms: None,
                    winner: None,
                    replay_path: None,
                    note: None,
                    last_failure: None,
                    repeat_of: None,
                    not_rated: None,
                };
                model.book.open(&escrow_account(&id), "escrow", false);
                for stake in ledger::stakes(&game) {
                    model.book.apply(&stake, 0).expect("covered stake");
                }
                for bot in [&game.sides[0].bot_id, &game.sides[1].bot_id] {
                    model.ensure_rating(bot);
                }
                open.push_back(game);
                model.steps.push(Step::Accept { id, sides });
            } else {
                let Some(game) = open.pop_front() else {
                    break;
                };
                let winner = match rng.below(3) {
                    0 => Winner::A,
                    1 => Winner::B,
                    _ => Winner::Draw,
                };
                let fate = match rng.below(20) {
                    // Only when no other match is open: the claims that run
                    // the match out of attempts must find this one.
                    0 | 1 if open.is_empty() => Fate::Exhausted,
                    0..=2 => Fate::Crash,
                    3 | 4 => Fate::Stale,
                    5 => Fate::Unrunnable,
                    6..=8 => Fate::Retry,
                    _ => Fate::Settle,
                };
                *model.fates.entry(format!("{fate:?}")).or_default() += 1;
                let plan = if matches!(fate, Fate::Unrunnable | Fate::Exhausted) {
                    for request in ledger::returns(&game, "stake returned") {
                        model.book.apply(&request, 0).expect("void");
                    }
                    model.voided += 1;
                    None
                } else {
                    let ratings = (game.season_id == model.season).then(|| {
                        [0, 1].map(|index| {
                            model.ratings[&(game.season_id, side(&game, index).bot_id.clone())]
                                .rating
                        })
                    });
                    // The rake pinned at acceptance, whatever it is now.
                    let plan = ledger::settle(&game, winner, game.rake_bp, ratings);
                    for request in &plan.transfers {
                        model.book.apply(request, 0).expect("settle");
                    }
                    if !plan.ratings.is_empty() {
                        model.rated.push((
                            game.season_id,
                            side(&game, 0).bot_id.clone(),
                            side(&game, 1).bot_id.clone(),
                            match winner {
                                Winner::A => Score::Win,
                                Winner::B => Score::Loss,
                                Winner::Draw => Score::Draw,
                            },
                        ));
                    }
                    for change in &plan.ratings {
                        let tally = model
                            .ratings
                            .get_mut(&(game.season_id, change.bot_id.clone()))
                            .expect("rated at acceptance");
                        assert_eq!(tally.rating, change.before);
                        tally.rating = change.after;
                        tally.games += 1;
                        match change.score {
                            Score::Win => tally.wins += 1,
                            Score::Loss => tally.losses += 1,
                            Score::Draw => tally.draws += 1,
                        }
                    }
                    model.settled += 1;
                    Some(plan)
                };
                model.steps.push(Step::Finish {
                    id: game.id.clone(),
                    fate,
                    winner,
                    plan,
                });
            }
        }
        model
    }

    /// Ending a season: its ratings become the fit of its rated games
    /// (rating and deviation; the volatility stays Glicko-2's).
    fn fit_season(&mut self, season: i64) {
        let bots: Vec<String> = self
            .ratings
            .keys()
            .filter(|(of, _)| *of == season)
            .map(|(_, bot)| bot.clone())
            .collect();
        let at = |bot: &str| {
            bots.iter()
                .position(|known| known == bot)
                .expect("rated bot")
        };
        let starts: Vec<Rating> = bots
            .iter()
            .map(|bot| self.ratings[&(season, bot.clone())].start)
            .collect();
        let games: Vec<FitGame> = self
            .rated
            .iter()
            .filter(|(of, ..)| *of == season)
            .map(|(_, a, b, score_a)| FitGame {
                a: at(a),
                b: at(b),
                score_a: *score_a,
            })
            .collect();
        let fitted = rating::season_fit(&starts, &games);
        for (bot, fit) in bots.iter().zip(fitted) {
            let tally = self.ratings.get_mut(&(season, bot.clone())).expect("bot");
            if games
                .iter()
                .any(|game| bots[game.a] == *bot || bots[game.b] == *bot)
            {
                tally.rating.rating = fit.rating;
                tally.rating.deviation = fit.deviation;
            }
        }
    }

    /// A bot's rating row in the running season, made as acceptance makes it:
    /// a soft reset of its season-1 rating, or the initial rating.
    fn ensure_rating(&mut self, bot: &str) {
        let key = (self.season, bot.to_owned());
        if self.ratings.contains_key(&key) {
            return;
        }
        let start = match self.ratings.get(&(self.season - 1, bot.to_owned())) {
            Some(previous) => previous.rating.soft_reset(),
            None => rating::INITIAL,
        };
        self.ratings.insert(
            key,
            Tally {
                rating: start,
                start,
                games: 0,
                wins: 0,
                losses: 0,
                draws: 0,
            },
        );
    }
}

#[test]
fn the_model_replays_exactly_from_its_seed() {
    let seed = seed();
    let first = Model::run(seed);
    let again = Model::run(seed);
    assert_eq!(first.steps, again.steps, "LEDGER_SEED={seed}");
    let report = first
        .book
        .check()
        .unwrap_or_else(|violation| panic!("LEDGER_SEED={seed}: {violation}"));
    assert_eq!(report.pending_unresolved, 0);
    let granted: i64 = (0..OWNERS).map(credits_of).sum();
    assert_eq!(report.credits_in_circulation, granted);
    assert_eq!(first.settled + first.voided, MATCHES as i64);
}

/// Names the model uses for what the store calls by ids, both ways.
#[derive(Default)]
struct Names {
    to_store: BTreeMap<String, String>,
    to_model: BTreeMap<String, String>,
}

impl Names {
    fn add(&mut self, model: String, store: String) {
        self.to_model.insert(store.clone(), model.clone());
        self.to_store.insert(model, store);
    }

    fn store(&self, model: &str) -> &str {
        &self.to_store[model]
    }

    fn model_account(&self, account: &str) -> String {
        match account.strip_prefix("owner:") {
            Some(id) => owner_account(&self.to_model[id]),
            None => account.to_owned(),
        }
    }

    /// A store's plan in the model's names, transfers and ratings in a stable
    /// order (the lock order follows ids, which differ).
    fn model_plan(&self, plan: &Plan) -> Plan {
        let mut plan = plan.clone();
        for transfer in &mut plan.transfers {
            if let TransferOp::Single { debit, credit, .. } = &mut transfer.op {
                *debit = self.model_account(debit);
                *credit = self.model_account(credit);
            }
        }
        for change in &mut plan.ratings {
            change.bot_id = self.to_model[&change.bot_id].clone();
        }
        normalized(plan)
    }
}

fn normalized(mut plan: Plan) -> Plan {
    plan.transfers.sort_by(|x, y| x.id.cmp(&y.id));
    plan.ratings.sort_by(|x, y| x.bot_id.cmp(&y.bot_id));
    plan
}

/// Ratings agree to 1e-6: season 2 starts from season 1's fit, which the
/// store computes over its bots and games in its own order (ids, not the
/// model's names), so the last bits of a float may differ.
fn close(x: Rating, y: Rating) -> bool {
    (x.rating - y.rating).abs() < 1e-6
        && (x.deviation - y.deviation).abs() < 1e-6
        && (x.volatility - y.volatility).abs() < 1e-9
}

/// Equal plans, with ratings compared by [`close`].
fn assert_plans_agree(made: Option<Plan>, expected: Option<Plan>, at: &str) {
    let strip = |plan: Option<Plan>| {
        plan.map(|mut plan| {
            let ratings: Vec<(Rating, Rating)> = plan
                .ratings
                .iter_mut()
                .map(|change| {
                    let pair = (change.before, change.after);
                    (change.before, change.after) = (rating::INITIAL, rating::INITIAL);
                    pair
                })
                .collect();
            (plan, ratings)
        })
    };
    let (made, expected) = (strip(made), strip(expected));
    assert_eq!(
        made.as_ref().map(|(plan, _)| plan),
        expected.as_ref().map(|(plan, _)| plan),
        "{at}"
    );
    if let (Some((_, made)), Some((_, expected))) = (made, expected) {
        for ((made_before, made_after), (before, after)) in made.iter().zip(&expected) {
            assert!(
                close(*made_before, *before) && close(*made_after, *after),
                "{at}: ratings {made:?} vs {expected:?}"
            );
        }
    }
}

/// Replays the model's steps against one store and checks it agrees.
async fn replay_against(db: &TestDb) {
    let seed = seed();
    let model = Model::run(seed);
    let clock = ManualClock::new(START_MS);
    let store = db.store.clone().with_clock(Arc::new(clock.clone()));
    let context = format!("LEDGER_SEED={seed} on {}", store.backend());
    store.start_season("s1").await.expect("season");
    let mut names = Names::default();
    for owner in 0..OWNERS {
        let (user, _) = db.owner(&owner_name(owner), credits_of(owner)).await;
        names.add(owner_name(owner), user.id.clone());
        for bot in 0..BOTS_PER_OWNER {
            let spec = "builtin:random".to_owned();
            let source = BotSource::builtin(spec);
            let registered = store
                .register_bot(&user, &bot_name(owner, bot), "light", &source)
                .await
                .expect("register");
            names.add(bot_name(owner, bot), registered.id);
        }
    }
    let pair = |sides: &[(String, i64); 2]| {
        sides.clone().map(|(bot, stake)| PairSide {
            bot_id: names.store(&bot).to_owned(),
            stake,
        })
    };
    for (number, step) in model.steps.iter().enumerate() {
        let at = format!("{context}, step {number} {step:?}");
        let now = clock.advance(1);
        match step {
            Step::SetRake(rake_bp) => store
                .set_setting("rake_bp", *rake_bp)
                .await
                .expect("set rake"),
            Step::NewSeason => {
                store.end_season().await.expect("end season");
                store.start_season("s2").await.expect("next season");
            }
            Step::Refused { sides } => {
                let refused = store.accept_pair(pair(sides), "refused", 0).await;
                assert!(
                    matches!(refused, Err(LadderError::InsufficientCredits(_))),
                    "{at}: {refused:?}"
                );
            }
            Step::Accept { id, sides } => {
                let game = store
                    .accept_pair(pair(sides), id, number as i64)
                    .await
                    .unwrap_or_else(|error| panic!("{at}: {error}"));
                assert_eq!(
                    game.accepted_ms, now,
                    "{at}: acceptance reads the store's clock"
                );
            }
            Step::Finish {
                id,
                fate,
                winner,
                plan,
            } => {
                finish(&store, &clock, id, *fate, *winner, &at, |made| {
                    let expected = plan.clone().map(normalized);
                    assert_plans_agree(made.map(|plan| names.model_plan(&plan)), expected, &at);
                })
                .await;
            }
        }
    }
    // The store ends where the model ended.
    let report = store
        .ledger_check()
        .await
        .expect("ledger check ran")
        .unwrap_or_else(|violation| panic!("{context}: ledger check failed: {violation}"));
    let expected = model.book.check().expect("model ledger");
    assert_eq!(report, expected, "{context}");
    assert_eq!(report.pending_unresolved, 0, "{context}");
    for owner in 0..OWNERS {
        let name = owner_name(owner);
        let stored = store
            .account(&owner_account(names.store(&name)))
            .await
            .expect("owner account");
        let modelled: &Account = model
            .book
            .account(&owner_account(&name))
            .expect("model account");
        assert_eq!(
            (
                stored.debits_pending,
                stored.debits_posted,
                stored.credits_pending,
                stored.credits_posted
            ),
            (
                modelled.debits_pending,
                modelled.debits_posted,
                modelled.credits_pending,
                modelled.credits_posted
            ),
            "{context}: {name}"
        );
    }
    let counts = store.match_counts().await.expect("counts");
    let count = |state| {
        counts
            .iter()
            .find(|(found, _)| *found == state)
            .map_or(0, |(_, n)| *n)
    };
    assert_eq!(
        (count(MatchState::Settled), count(MatchState::Voided)),
        (model.settled, model.voided),
        "{context}"
    );
    assert_eq!(count(MatchState::Queued) + count(MatchState::Running), 0);
    for season in [1, 2] {
        let (_, standings) = store
            .standings(Some(season), Some(WeightClass::Light))
            .await
            .expect("standings");
        let expected: BTreeMap<&str, &Tally> = model
            .ratings
            .iter()
            .filter(|((of, _), _)| *of == season)
            .map(|((_, bot), tally)| (bot.as_str(), tally))
            .collect();
        assert_eq!(
            standings.len(),
            expected.len(),
            "{context}: season {season}"
        );
        for standing in &standings {
            let bot = names.to_model[&standing.bot_id].as_str();
            let tally = expected[bot];
            let stored = Rating {
                rating: standing.rating,
                deviation: standing.deviation,
                volatility: standing.volatility,
            };
            assert!(
                close(stored, tally.rating),
                "{context}: {bot} in season {season}: {stored:?} vs {:?}",
                tally.rating
            );
            assert_eq!(
                (
                    standing.games,
                    standing.wins,
                    standing.losses,
                    standing.draws
                ),
                (tally.games, tally.wins, tally.losses, tally.draws),
                "{context}: {bot} in season {season}"
            );
        }
    }
    for fate in ["Crash", "Stale", "Retry", "Unrunnable", "Exhausted"] {
        assert!(
            model.fates.get(fate).is_some_and(|n| *n > 0),
            "{context}: no {fate} in {:?}",
            model.fates
        );
    }
    assert!(
        model
            .steps
            .iter()
            .any(|step| matches!(step, Step::Refused { .. })),
        "{context}: the overdraft path ran"
    );
    println!(
        "{context}: settled {}, voided {}, fates {:?}, house {}",
        model.settled, model.voided, model.fates, report.house_credits
    );
}

/// Finishes match `id` on the store as `fate` says; `check` gets the plan the
/// store applied (`None` for a void).
async fn finish(
    store: &duel_ladder_store::Store,
    clock: &ManualClock,
    id: &str,
    fate: Fate,
    winner: Winner,
    at: &str,
    check: impl FnOnce(Option<Plan>),
) {
    let claim = |now: i64| async move {
        let claim = store
            .claim(LEASE_MS, now)
            .await
            .unwrap_or_else(|error| panic!("{at}: claim: {error}"))
            .unwrap_or_else(|| panic!("{at}: nothing to claim"));
        assert_eq!(claim.game.id, id, "{at}: the oldest match is claimed");
        claim
    };
    let complete = |lease: String, now: i64| async move {
        store
            .complete(id, &lease, winner, "x.json", None, now)
            .await
    };
    let now = clock.advance(0);
    match fate {
        Fate::Settle | Fate::Retry => {
            let first = claim(now).await;
            let settlement = complete(first.lease_id.clone(), now)
                .await
                .unwrap_or_else(|error| panic!("{at}: {error}"));
            assert!(!settlement.already_settled, "{at}");
            if fate == Fate::Retry {
                let again = complete(first.lease_id, now + 1)
                    .await
                    .unwrap_or_else(|error| panic!("{at}: retry: {error}"));
                assert!(again.already_settled, "{at}: settled twice");
                assert_eq!(
                    (again.pot, again.rake, again.payout),
                    (settlement.pot, settlement.rake, settlement.payout),
                    "{at}"
                );
            }
            check(settlement.plan);
        }
        Fate::Crash | Fate::Stale => {
            let first = claim(now).await;
            let later = clock.advance(LEASE_MS + 1);
            let second = claim(later).await;
            assert_eq!(second.game.attempts, 2, "{at}");
            if fate == Fate::Stale {
                let stale = complete(first.lease_id, later).await;
                assert!(
                    matches!(stale, Err(LadderError::LeaseLost(_))),
                    "{at}: a stale worker settled: {stale:?}"
                );
            }
            let settlement = complete(second.lease_id, later)
                .await
                .unwrap_or_else(|error| panic!("{at}: {error}"));
            check(settlement.plan);
        }
        Fate::Unrunnable => {
            let first = claim(now).await;
            store
                .void_claimed(id, &first.lease_id, "bot rejected", now)
                .await
                .unwrap_or_else(|error| panic!("{at}: void: {error}"));
            check(None);
        }
        Fate::Exhausted => {
            let mut claims = 0;
            loop {
                let now = clock.advance(LEASE_MS + 1);
                match store.claim(LEASE_MS, now).await.expect("claim") {
                    Some(claimed) => {
                        assert_eq!(claimed.game.id, id, "{at}");
                        claims += 1;
                        assert!(claims <= 10, "{at}: never voided");
                    }
                    None => break,
                }
            }
            let game = store.reads().game(id).await.expect("match");
            assert_eq!(game.state, MatchState::Voided, "{at}");
            check(None);
        }
    }
}

both_backends!(ten_thousand_random_matches, replay_against);
