//! The matches a server runs: the bound on concurrent matches, each match as a
//! spawned task with its live event log (for `WatchMatch`, and for HTTP
//! spectators through [`Publishing`]), finished replays kept for `GetReplay`
//! (and signed into a replay store when publishing), and the drain on shutdown
//! (finish, or abort after the grace).

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use duel_proto::v1 as pb;
use duel_replays::store::ReplayStore;
use duel_replays::{Replay, RoundResultRecord, SigningKey};
use duel_rules::ExchangeStep;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::grpc::convert::{self, MatchRequest};
use crate::grpc::metrics::Metrics;
use crate::grpc::status::ServiceError;
use crate::host::{Fighter, MatchHost, MatchOptions, MatchSession, Played, ReplaySinks};
use crate::limits::MAX_KEPT_MATCHES;
use crate::publish::{LiveEvent, LiveFeeds, LivePublisher};
use crate::record::MatchRecorder;

/// How a match ended.
#[derive(Clone, Debug)]
pub enum MatchEnd {
    Finished(Arc<Replay>),
    /// Stopped before its end; no replay was written.
    Aborted(String),
}

#[derive(Debug, Default)]
struct LiveState {
    exchanges: Vec<pb::ExchangeEvent>,
    end: Option<MatchEnd>,
}

/// One match, running or over.
#[derive(Debug)]
pub struct LiveMatch {
    pub started: pb::MatchStarted,
    state: Mutex<LiveState>,
    /// Bumped on every new event so watchers wake up.
    version: watch::Sender<u64>,
}

impl LiveMatch {
    fn state(&self) -> MutexGuard<'_, LiveState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn bump(&self) {
        self.version.send_modify(|version| *version += 1);
    }

    fn push(&self, event: pb::ExchangeEvent) {
        self.state().exchanges.push(event);
        self.bump();
    }

    fn end(&self, end: MatchEnd) {
        self.state().end = Some(end);
        self.bump();
    }

    pub fn end_state(&self) -> Option<MatchEnd> {
        self.state().end.clone()
    }

    /// Events from `from` on, and the end if reached.
    pub fn events_since(&self, from: usize) -> (Vec<pb::ExchangeEvent>, Option<MatchEnd>) {
        let state = self.state();
        let events = state
            .exchanges
            .get(from..)
            .map(<[_]>::to_vec)
            .unwrap_or_default();
        (events, state.end.clone())
    }

    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    /// Waits for the end of the match.
    pub async fn wait_end(&self) -> MatchEnd {
        let mut changes = self.subscribe();
        loop {
            if let Some(end) = self.end_state() {
                return end;
            }
            if changes.changed().await.is_err() {
                return self
                    .end_state()
                    .unwrap_or_else(|| MatchEnd::Aborted("the match task was lost".to_owned()));
            }
        }
    }
}

/// Where a server publishes its matches for spectators and downloads: each
/// match live on `live` while it is played, then its replay, signed with
/// `signing_key`, in `store` (before spectators hear the end).
#[derive(Clone, Debug)]
pub struct Publishing {
    pub live: LiveFeeds,
    pub store: ReplayStore,
    pub signing_key: Arc<SigningKey>,
}

/// What a server is configured with.
#[derive(Clone, Debug)]
pub struct MatchesConfig {
    pub max_concurrent_matches: usize,
    /// Builds and plays every match of this server.
    pub host: MatchHost,
    /// Where finished replays are also written, `<match_id>.json`.
    pub replay_dir: Option<PathBuf>,
    pub publishing: Option<Publishing>,
}

/// The registry of a server's matches. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Matches {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: MatchesConfig,
    permits: Arc<Semaphore>,
    tracker: TaskTracker,
    abort: CancellationToken,
    shutting_down: AtomicBool,
    table: Mutex<Table>,
    metrics: Metrics,
}

#[derive(Debug, Default)]
struct Table {
    matches: HashMap<String, Arc<LiveMatch>>,
    finished: VecDeque<String>,
}

impl Matches {
    pub fn new(config: MatchesConfig) -> Matches {
        Matches {
            inner: Arc::new(Inner {
                permits: Arc::new(Semaphore::new(config.max_concurrent_matches)),
                config,
                tracker: TaskTracker::new(),
                abort: CancellationToken::new(),
                shutting_down: AtomicBool::new(false),
                table: Mutex::new(Table::default()),
                metrics: Metrics::default(),
            }),
        }
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.inner
            .table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// The metrics' exposition now (matches running, WASM instances made).
    pub fn render_metrics(&self) -> String {
        self.inner
            .metrics
            .render(self.running(), &self.inner.config.host.wasm_stats())
    }

    pub fn get(&self, match_id: &str) -> Option<Arc<LiveMatch>> {
        self.table().matches.get(match_id).cloned()
    }

    /// Matches running now.
    pub fn running(&self) -> usize {
        self.inner.config.max_concurrent_matches - self.inner.permits.available_permits()
    }

    /// Accepts a match: builds both bots (a bad spec or file is refused before
    /// any slot is taken), takes a slot (or refuses) and spawns the match.
    /// Returns it at once; await [`LiveMatch::wait_end`] for the result.
    pub async fn start(&self, request: MatchRequest) -> Result<Arc<LiveMatch>, ServiceError> {
        if self.inner.shutting_down.load(Ordering::Acquire) {
            return Err(ServiceError::ShuttingDown);
        }
        let mut options = MatchOptions::new(request.class).wall_clock(request.wall_clock);
        options.seed = request.seed;
        let [spec_a, spec_b] = request.specs;
        let session = self
            .inner
            .config
            .host
            .prepare([Fighter::from(spec_a), Fighter::from(spec_b)], options)
            .await?;
        let permit = Arc::clone(&self.inner.permits)
            .try_acquire_owned()
            .map_err(|_| {
                ServiceError::Busy(format!(
                    "{} matches are running, the most this referee runs at once",
                    self.inner.config.max_concurrent_matches
                ))
            })?;
        let config = session.config().clone();
        let fighters = session.fighters().clone();
        let span = tracing::info_span!("match", match_id = %config.match_id);
        let live = Arc::new(LiveMatch {
            started: pb::MatchStarted {
                match_id: config.match_id.clone(),
                ruleset: config.ruleset.version().to_owned(),
                class: convert::class_to_proto(config.class).into(),
                budget_tokens: config.budget_tokens(),
                seed: config.seed,
                wall_clock_ms: u64::try_from(config.decision_wall_clock.as_millis())
                    .unwrap_or(u64::MAX),
                fighters: fighters
                    .iter()
                    .map(convert::fighter_info_to_proto)
                    .collect(),
            },
            state: Mutex::new(LiveState::default()),
            version: watch::channel(0).0,
        });
        // Spectating is secondary: a feed that cannot open (the registry is
        // full) is logged, and the match is played all the same.
        let publisher = self
            .inner
            .config
            .publishing
            .as_ref()
            .and_then(|publishing| {
                publishing
                    .live
                    .start(
                        &config.match_id,
                        LiveEvent::start_of_match(&config, &fighters),
                    )
                    .inspect_err(|error| {
                        span.in_scope(|| tracing::warn!(%error, "no live feed for this match"));
                    })
                    .ok()
            });
        self.table()
            .matches
            .insert(config.match_id.clone(), Arc::clone(&live));
        self.inner.metrics.match_started();
        span.in_scope(|| {
            tracing::info!(
                a = %fighters[0].name,
                b = %fighters[1].name,
                class = config.class.name(),
                seed = config.seed,
                wall_clock_ms = live.started.wall_clock_ms,
                "match accepted"
            );
        });
        let matches = self.clone();
        let task_live = Arc::clone(&live);
        self.inner.tracker.spawn(
            matches
                .play(session, task_live, publisher, permit)
                .instrument(span),
        );
        Ok(live)
    }

    async fn play(
        self,
        session: MatchSession,
        live: Arc<LiveMatch>,
        publisher: Option<LivePublisher>,
        permit: OwnedSemaphorePermit,
    ) {
        let match_id = session.config().match_id.clone();
        let abort = self.inner.abort.clone();
        let metrics = &self.inner.metrics;
        let mut watchers = |recorder: &MatchRecorder, step: &ExchangeStep| {
            if let Some((round, exchange)) = recorder.last_exchange() {
                metrics.side(&exchange.a);
                metrics.side(&exchange.b);
                let round_result = step.round_result.map(|result| RoundResultRecord {
                    winner: result.winner.into(),
                    by: result.by.into(),
                });
                live.push(convert::exchange_to_proto(round, exchange, round_result));
            }
            if let Some(publisher) = &publisher {
                publisher.step(recorder, step);
            }
        };
        // The session (and with it both bots and their Inference credentials)
        // is gone when this select ends, before the slot is freed.
        let played = tokio::select! {
            played = session.play(&mut watchers) => Some(played),
            () = abort.cancelled() => None,
        };
        let end = match played {
            Some(mut played) => {
                self.keep_replay(&mut played).await;
                let replay = played.replay;
                tracing::info!(
                    winner = duel_rules::Winner::from(replay.result.winner).name(),
                    tokens_a = replay.result.tokens_used[0],
                    tokens_b = replay.result.tokens_used[1],
                    "match finished"
                );
                self.inner.metrics.match_finished();
                if let Some(publisher) = publisher {
                    publisher.finish(&replay.result);
                }
                MatchEnd::Finished(Arc::new(replay))
            }
            None => {
                tracing::warn!("match aborted: the referee shut down before it ended");
                self.inner.metrics.match_aborted();
                let reason = "the referee shut down before the match ended";
                if let Some(publisher) = publisher {
                    publisher.abort(reason);
                }
                MatchEnd::Aborted(reason.to_owned())
            }
        };
        live.end(end);
        self.retire(match_id);
        drop(permit);
    }

    /// Signs the replay when publishing, then writes it where configured,
    /// and keeps the transcript apart from it: `DIR/<id>.transcript.json`
    /// (owner-only) beside the replay file, and the store's private
    /// transcript key when publishing. A store or disk failure is logged:
    /// the match result stands regardless.
    async fn keep_replay(&self, played: &mut Played) {
        let mut sinks = ReplaySinks::new();
        let match_id = played.replay.match_id.clone();
        if let Some(dir) = &self.inner.config.replay_dir {
            sinks = sinks.write_to(dir.join(format!("{match_id}.json")));
            if played.said().is_some() {
                sinks = sinks.transcript_to(dir.join(format!("{match_id}.transcript.json")));
            }
        }
        if let Some(publishing) = &self.inner.config.publishing {
            sinks = sinks
                .sign_with(Arc::clone(&publishing.signing_key))
                .put_into(publishing.store.clone());
        }
        if let Err(error) = sinks.keep_played(played).await {
            tracing::error!(%error, "cannot keep the replay");
        }
    }

    /// Keeps the last [`MAX_KEPT_MATCHES`] ended matches.
    fn retire(&self, match_id: String) {
        let mut table = self.table();
        table.finished.push_back(match_id);
        while table.finished.len() > MAX_KEPT_MATCHES {
            if let Some(old) = table.finished.pop_front() {
                table.matches.remove(&old);
            }
        }
    }

    /// Refuses new matches, lets running ones finish for up to `grace`, then
    /// aborts the rest; returns once every match task has ended.
    pub async fn drain(&self, grace: Duration) {
        self.inner.shutting_down.store(true, Ordering::Release);
        self.inner.tracker.close();
        let running = self.running();
        if running > 0 {
            tracing::info!(
                running,
                grace_s = grace.as_secs_f64(),
                "waiting for matches in flight"
            );
        }
        if tokio::time::timeout(grace, self.inner.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                running = self.running(),
                "grace period over: aborting matches in flight"
            );
            self.inner.abort.cancel();
            self.inner.tracker.wait().await;
        }
    }
}
