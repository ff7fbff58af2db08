//! Workers: claim a match under a lease, have the match host build both
//! fighters from their stored versions (built-in, WASM from the host's
//! component cache or the stored bytes, endpoint after the address policy),
//! keep the lease alive while the session plays the match under the class
//! budget the match row pins, sign the replay and publish it to the replay
//! store, settle. A worker that dies simply stops heartbeating; its lease
//! expires and the next claim re-runs the match from scratch (or voids it after
//! [`crate::limits::MAX_MATCH_RUNS`] runs: its third claim). A run that ends in
//! an error records its cause on the match first (`record_failure`: the step
//! and the error, public as core::failure makes it), so a void names it.
//! Settlement only counts for the lease holder, so a stale worker can never
//! settle.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use duel_referee::address_policy::AddressPolicy;
use duel_referee::limits::DECISION_WALL_CLOCK;
use duel_referee::opening::Opening;
use duel_referee::publish::{LiveEvent, LiveFeeds, LivePublisher};
use duel_referee::{
    BotSpec, EndpointPolicy, Fighter, FighterSource, HostConfig, MatchHost, MatchOptions,
    MatchRecorder, MatchSession, ReplaySinks,
};
use duel_replays::store::ReplayStore;
use duel_replays::{MAX_OPENING_EXCHANGES, Replay, RoundResultRecord, SigningKey, SourceName};
use duel_rules::{ExchangeStep, Ruleset, Side};
use tokio::sync::watch;

use crate::error::{
    LadderError, PinnedRules, PublishedReplayFault, Rejection, Result, ServiceError,
};
use crate::ledger::Settlement;
use crate::limits::{
    DEFAULT_HEARTBEAT_MS, DEFAULT_LEASE_MS, HEARTBEATS_PER_LEASE, LEASE_LEFT_TO_PUBLISH_PERMILLE,
    PUBLISH_LEASE_SHARE_PERMILLE, WORKER_IDLE_POLL_MS,
};
use crate::metrics::{LadderMetrics, Step};
use crate::model::{
    BotKind, BotVersion, Claim, ExchangeLog, Fallbacks, Match, ModelUse, PlayRecord,
};
use crate::store::Store;
use crate::validate::check_endpoint_url;
use duel_ladder_core::repeat::KeySide;

/// What [`BotFactory::fighter`] returns.
pub type FighterFuture<'a> = Pin<Box<dyn Future<Output = Result<Fighter>> + Send + 'a>>;

/// Says where the fighter of one side comes from, given its exact stored
/// version; the match host builds it. A [`ServiceError::BotRejected`] voids the
/// match (stakes returned); any other error leaves it to be re-run.
pub trait BotFactory: Send + Sync + std::fmt::Debug {
    fn fighter<'a>(&'a self, version: &'a BotVersion) -> FighterFuture<'a>;
}

fn builtin_fighter(version: &BotVersion) -> Result<Fighter> {
    match BotSpec::parse(&version.spec) {
        Ok(spec @ BotSpec::Builtin(_)) => Ok(Fighter::from(spec)),
        Ok(_) | Err(_) => {
            Err(LadderError::corrupt(format!("stored built-in spec {:?}", version.spec)).into())
        }
    }
}

/// Runs built-in bots only: the benchmark's factory, so that the ledger and the
/// store are what it measures. WASM and endpoint bots are refused (voided).
#[derive(Clone, Copy, Debug, Default)]
pub struct BuiltinFactory;

impl BotFactory for BuiltinFactory {
    fn fighter<'a>(&'a self, version: &'a BotVersion) -> FighterFuture<'a> {
        Box::pin(async move {
            match version.kind {
                BotKind::Builtin => builtin_fighter(version),
                BotKind::Wasm | BotKind::Endpoint => Err(Rejection::NotBuiltin {
                    kind: version.kind.name(),
                }
                .into()),
            }
        })
    }
}

/// Every kind of bot: WASM components from the host's cache by digest, or from
/// the bytes the store keeps (compiled once per machine, with the sandbox's
/// disk cache), endpoint bots after the endpoint policy is checked again (the
/// name may resolve elsewhere now than at registration).
#[derive(Clone, Debug)]
pub struct LadderFactory {
    store: Store,
    host: MatchHost,
    allow_private_endpoints: bool,
}

impl LadderFactory {
    pub fn new(store: Store, host: MatchHost, allow_private_endpoints: bool) -> LadderFactory {
        LadderFactory {
            store,
            host,
            allow_private_endpoints,
        }
    }
}

impl BotFactory for LadderFactory {
    fn fighter<'a>(&'a self, version: &'a BotVersion) -> FighterFuture<'a> {
        Box::pin(async move {
            match version.kind {
                BotKind::Builtin => builtin_fighter(version),
                BotKind::Wasm => {
                    let wall_clock = DECISION_WALL_CLOCK;
                    let loaded = match self.host.cached_component(&version.spec, wall_clock) {
                        Some(loaded) => loaded,
                        None => {
                            let bytes = self.store.wasm_blob(&version.spec).await?;
                            self.host
                                .load_component(bytes, wall_clock)
                                .await
                                .map_err(Rejection::Sandbox)?
                        }
                    };
                    Ok(Fighter::new(FighterSource::Component(loaded)))
                }
                BotKind::Endpoint => {
                    // Resolving and checking the addresses happens once per
                    // match in the referee, which then dials only the address
                    // it checked (no DNS rebinding between check and use).
                    check_endpoint_url(&version.spec, self.allow_private_endpoints)?;
                    Ok(Fighter::from(BotSpec::Endpoint(version.spec.clone())))
                }
            }
        })
    }
}

/// Where and how a worker plays and publishes.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// Builds and plays the matches: WASM sandboxes and their component cache,
    /// the metered model gateway, the Inference link endpoint bots are told.
    pub host: MatchHost,
    /// Where replays are published (a folder or an S3-compatible bucket).
    pub replays: ReplayStore,
    /// Signs every replay before it is published.
    pub signing_key: Arc<SigningKey>,
    pub lease_ms: i64,
    pub heartbeat_ms: i64,
    /// Per decision; the rules fix 10 s.
    pub decision_wall_clock: Duration,
    /// Live feeds of the matches this worker plays (`ladder serve` shares them
    /// with its HTTP service).
    pub live: Option<LiveFeeds>,
    /// Where the worker counts what it does and times each step (`/metrics`,
    /// which `ladder bench` reads); `None` reads no clock.
    pub metrics: Option<Arc<LadderMetrics>>,
}

impl WorkerConfig {
    pub fn new(
        host: MatchHost,
        replays: ReplayStore,
        signing_key: Arc<SigningKey>,
    ) -> WorkerConfig {
        WorkerConfig {
            host,
            replays,
            signing_key,
            lease_ms: DEFAULT_LEASE_MS,
            heartbeat_ms: DEFAULT_HEARTBEAT_MS,
            decision_wall_clock: DECISION_WALL_CLOCK,
            live: None,
            metrics: None,
        }
    }

    /// The same configuration holding each match for `lease_ms` (`--lease-ms`),
    /// heartbeating [`HEARTBEATS_PER_LEASE`] times per lease.
    pub fn with_lease(mut self, lease_ms: i64) -> WorkerConfig {
        self.lease_ms = lease_ms.max(1);
        self.heartbeat_ms = (self.lease_ms / HEARTBEATS_PER_LEASE).max(1);
        self
    }
}

/// Runs `work`, timing it into `step`'s histogram when the worker has metrics.
async fn timed<T>(metrics: Option<&LadderMetrics>, step: Step, work: impl Future<Output = T>) -> T {
    let Some(metrics) = metrics else {
        return work.await;
    };
    let started = Instant::now();
    let output = work.await;
    metrics.step(step, started.elapsed());
    output
}

/// The host a ladder's workers play with: endpoint bots must answer `Hello`
/// before a match (else it is voided), and their failures are recorded by
/// category only, since ranked replays are public.
/// `allow_private_endpoints` (the operator's flag) decides which addresses
/// endpoint bots may have.
pub fn ladder_host_config(mut config: HostConfig, allow_private_endpoints: bool) -> HostConfig {
    config.endpoints = EndpointPolicy {
        require_hello: true,
        peer_text_in_reasons: false,
        addresses: AddressPolicy::allowing_private(allow_private_endpoints),
    };
    config
}

/// What one pass of a worker did.
#[derive(Clone, Debug, PartialEq)]
pub enum Worked {
    Idle,
    Settled(Settlement),
    /// The match could not be run and was voided, stakes returned.
    Voided {
        match_id: String,
        reason: String,
    },
    /// The lease was lost mid-match; another worker will run it.
    LostLease {
        match_id: String,
    },
}

/// A stored acceptance time (ms since the epoch) in RFC 3339.
/// Stops the heartbeat when the match future is dropped, so a cancelled worker
/// lets its lease expire just as a killed process would.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Claims and runs at most one match.
pub async fn work_once(
    store: &Store,
    factory: &dyn BotFactory,
    config: &WorkerConfig,
) -> Result<Worked> {
    let times = config.metrics.as_deref();
    let claimed = timed(
        times,
        Step::Claim,
        store.claim(config.lease_ms, store.clock().now_ms()),
    )
    .await?;
    let Some(claim) = claimed else {
        return Ok(Worked::Idle);
    };
    let (class, accepted_ms) = (claim.game.class, claim.game.accepted_ms);
    let running = config
        .metrics
        .as_ref()
        .map(|metrics| metrics.claimed(class));
    let (match_id, lease_id) = (claim.game.id.clone(), claim.lease_id.clone());
    // Instrumented, not entered: a guard held across awaits would nest spans.
    let span = tracing::info_span!("match", match_id = %match_id);
    let worked = match tracing::Instrument::instrument(
        run_claim(store, factory, config, claim),
        span.clone(),
    )
    .await
    {
        Ok(worked) => Ok(worked),
        Err(failed) => {
            let recording = record_failure(store, &match_id, &lease_id, &failed);
            tracing::Instrument::instrument(recording, span).await;
            Err(failed.error)
        }
    };
    drop(running);
    match (&config.metrics, &worked) {
        (Some(metrics), Ok(Worked::Settled(settlement))) if !settlement.already_settled => {
            metrics.settled(class, store.clock().now_ms() - accepted_ms);
        }
        (Some(metrics), Ok(Worked::Voided { .. })) => metrics.voided(class),
        _ => {}
    }
    worked
}

/// A run that ended in an error, and the step it failed in.
#[derive(Debug)]
struct RunFailure {
    /// What the worker was doing, as owners read it (`publishing the replay`).
    during: &'static str,
    error: ServiceError,
}

/// Tags an error with the step it ended the run in.
fn failed<E: Into<ServiceError>>(during: &'static str) -> impl FnOnce(E) -> RunFailure {
    move |error| RunFailure {
        during,
        error: error.into(),
    }
}

/// Records the cause of a failed run on its match for its owners (and for the
/// void's note, should the last run fail too): the step and, for a failure of
/// the replay store or the referee, the error's words without server paths
/// (core::failure); a failure of the database or of stored data only as a
/// correlation id, whose details go to the operator's log. Best effort: a
/// cause that cannot be recorded is logged.
async fn record_failure(store: &Store, match_id: &str, lease_id: &str, failed: &RunFailure) {
    let RunFailure { during, error } = failed;
    let line = error.line();
    tracing::warn!(error = %line, during, "the run failed; the match runs again after its lease");
    let detail = match error {
        ServiceError::Ladder(
            store @ (LadderError::Database(_) | LadderError::Migrate(_) | LadderError::Corrupt(_)),
        ) => duel_plumbing::reply::internal("a ranked match's run failed", store),
        _ => line,
    };
    let cause = duel_ladder_core::failure::public_cause(during, &detail);
    match store.record_run_failure(match_id, lease_id, &cause).await {
        Ok(true) => {}
        Ok(false) => tracing::info!("the lease was taken meanwhile: the cause is not recorded"),
        Err(error) => tracing::warn!(%error, "cannot record why the run failed"),
    }
}

/// The match options the row pins: ruleset, class and budget must agree, or
/// the match cannot be played as accepted.
fn match_options(claim: &Claim, config: &WorkerConfig) -> Result<MatchOptions> {
    let game = &claim.game;
    let ruleset = Ruleset::from_version(&game.ruleset).map_err(PinnedRules::UnknownRuleset)?;
    if ruleset != Ruleset::CURRENT {
        return Err(PinnedRules::Ruleset {
            pinned: ruleset.version(),
            plays: Ruleset::CURRENT.version(),
        }
        .into());
    }
    let budget = ruleset.budget_tokens(game.class);
    if u64::try_from(game.budget).ok() != Some(budget) {
        return Err(PinnedRules::Budget {
            pinned: game.budget,
            ruleset: ruleset.version(),
            class: game.class.name(),
            budget,
        }
        .into());
    }
    let seed = u64::try_from(game.seed)
        .map_err(|_| LadderError::corrupt(format!("stored seed {} is negative", game.seed)))?;
    let opening_exchanges = usize::try_from(game.opening_exchanges)
        .ok()
        .filter(|length| *length <= MAX_OPENING_EXCHANGES)
        .ok_or_else(|| {
            LadderError::corrupt(format!(
                "stored opening of {} exchanges is outside 0..={MAX_OPENING_EXCHANGES}",
                game.opening_exchanges
            ))
        })?;
    let mut options = MatchOptions::new(game.class)
        .seed(seed)
        .wall_clock(config.decision_wall_clock)
        .opening(Opening::random(ruleset, seed, opening_exchanges));
    options.match_id = Some(game.id.clone());
    options.accepted_at = Some(duel_ladder_core::model::rfc3339(game.accepted_ms)?);
    Ok(options)
}

/// Both fighters, shown in the replay under their ladder names and stored
/// specs (so listings by bot name find them), each metered with the budget.
async fn prepare(
    factory: &dyn BotFactory,
    config: &WorkerConfig,
    claim: &Claim,
) -> Result<MatchSession> {
    let options = match_options(claim, config)?;
    let [version_a, version_b] = &claim.versions;
    let (a, b) = tokio::join!(factory.fighter(version_a), factory.fighter(version_b));
    let shown = |fighter: Fighter, side: Side| {
        fighter.shown(
            claim.game.sides[side.index()].bot_name.clone(),
            claim.versions[side.index()].spec.clone(),
        )
    };
    config
        .host
        .prepare([shown(a?, Side::A), shown(b?, Side::B)], options)
        .await
        .map_err(|error| {
            if error.is_bad_input() {
                // A component the sandbox refuses, an endpoint that does not
                // answer: running again would not help.
                Rejection::Match(error).into()
            } else {
                ServiceError::Match(error)
            }
        })
}

async fn run_claim(
    store: &Store,
    factory: &dyn BotFactory,
    config: &WorkerConfig,
    claim: Claim,
) -> Result<Worked, RunFailure> {
    let game = &claim.game;
    let times = config.metrics.as_deref();
    let session = match timed(times, Step::Prepare, prepare(factory, config, &claim)).await {
        Ok(session) => session,
        // Neither a refused bot, nor rules this worker does not play, nor a
        // corrupt row gets better by running again.
        Err(
            error @ (ServiceError::BotRejected(_)
            | ServiceError::RulesMismatch(_)
            | ServiceError::Ladder(LadderError::Corrupt(_))),
        ) => {
            let reason = error.line();
            tracing::warn!(%reason, "voiding a match that cannot be run");
            store
                .void_claimed(&game.id, &claim.lease_id, &reason, store.clock().now_ms())
                .await
                .map_err(failed("voiding the match"))?;
            return Ok(Worked::Voided {
                match_id: game.id.clone(),
                reason,
            });
        }
        // Anything else (the database, say) may pass: the lease expires and the
        // match is run again, or voided after its last attempt.
        Err(error) => return Err(failed("preparing the match")(error)),
    };
    // Heartbeat beside the match; losing the lease abandons the match.
    let (lost_tx, mut lost_rx) = watch::channel(false);
    let heartbeat = AbortOnDrop({
        let store = store.clone();
        let match_id = game.id.clone();
        let lease_id = claim.lease_id.clone();
        let (lease_ms, every_ms) = (config.lease_ms, config.heartbeat_ms.max(1));
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(Duration::from_millis(every_ms as u64));
            ticker.tick().await;
            loop {
                ticker.tick().await;
                if store
                    .heartbeat(&match_id, &lease_id, lease_ms, store.clock().now_ms())
                    .await
                    .is_err()
                {
                    let _ = lost_tx.send(true);
                    return;
                }
            }
        })
    });
    let live = start_live(config, &session);
    let mut follow = |recorder: &MatchRecorder, step: &ExchangeStep| {
        if let (Some(live), Some((round, exchange))) = (&live, recorder.last_exchange()) {
            let round_result = step.round_result.map(|result| RoundResultRecord {
                winner: result.winner.into(),
                by: result.by.into(),
            });
            live.exchange(round, exchange, round_result);
        }
    };
    // The session (both bots and their Inference credentials) is gone when
    // this select ends, before anything is published.
    let played = tokio::select! {
        played = timed(times, Step::Play, session.play(&mut follow)) => Some(played),
        _ = lost_rx.wait_for(|lost| *lost) => None,
    };
    drop(heartbeat);
    let Some(duel_referee::Played {
        mut replay,
        transcript,
    }) = played
    else {
        tracing::warn!("lease lost mid-match; abandoning it");
        return Ok(Worked::LostLease {
            match_id: game.id.clone(),
        });
    };
    // Only a worker that still holds the match publishes its replay: a stale
    // one must not replace the replay of the run that settles.
    let lease_check = hold_lease_to_publish(store, &game.id, &claim.lease_id, config.lease_ms);
    if timed(times, Step::LeaseCheck, lease_check).await.is_err() {
        tracing::warn!("lease lost before publishing; abandoning the match");
        return Ok(Worked::LostLease {
            match_id: game.id.clone(),
        });
    }
    replay.season = Some(claim.season_name.clone());
    // Ranked replays are public and logs can reveal strategy: each
    // side's logs are kept for its owner, and the published, signed replay
    // carries none.
    timed(times, Step::Logs, keep_logs(store, game, &replay)).await;
    replay.strip_logs();
    let sinks = ReplaySinks::new()
        .sign_with(Arc::clone(&config.signing_key))
        .put_into(config.replays.clone());
    let publish_ms = config.lease_ms.saturating_mul(PUBLISH_LEASE_SHARE_PERMILLE) / 1_000;
    match tokio::time::timeout(
        Duration::from_millis(u64::try_from(publish_ms).unwrap_or(0)),
        timed(times, Step::Publish, sinks.keep(&mut replay)),
    )
    .await
    {
        Ok(Ok(())) => {
            // The transcript stays apart from the public replay, under a key
            // the replay service never lists or serves; this run's replay is
            // the published one, so its digests are what the replay signed.
            if let Some(transcript) = transcript.filter(|kept| !kept.decisions.is_empty()) {
                keep_transcript(store, config, game, &transcript).await;
            }
        }
        // An earlier run of this match published its replay and then lost its
        // lease before settling. A published replay is never replaced (it is
        // served as immutable), so that run's result is the one settled.
        Ok(Err(duel_referee::MatchError::Replay(duel_replays::ReplayError::Conflict(_)))) => {
            replay = published_replay(config, &game.id)
                .await
                .map_err(failed("reading the replay an earlier run published"))?;
            tracing::warn!(
                "this match's replay was published by an earlier run; settling with its result"
            );
        }
        Ok(Err(error)) => {
            return Err(failed("publishing the replay")(ServiceError::Match(error)));
        }
        Err(_) => {
            return Err(failed("publishing the replay")(
                ServiceError::PublishTimedOut {
                    store: config.replays.description().to_owned(),
                    ms: publish_ms,
                },
            ));
        }
    }
    if let Some(live) = live {
        live.finish(&replay.result);
    }
    if let Some(metrics) = &config.metrics {
        metrics.decisions(&replay);
    }
    let winner = replay.result.winner.into();
    let replay_location = config.replays.location(&game.id);
    let played = play_record(game, &replay);
    let settle = store.complete(
        &game.id,
        &claim.lease_id,
        winner,
        &replay_location,
        Some(&played),
        store.clock().now_ms(),
    );
    match timed(times, Step::Settle, settle).await {
        Ok(settlement) => {
            tracing::info!(
                winner = winner.name(),
                pot = settlement.pot,
                rake = settlement.rake,
                "settled"
            );
            Ok(Worked::Settled(settlement))
        }
        Err(LadderError::LeaseLost(_)) => Ok(Worked::LostLease {
            match_id: game.id.clone(),
        }),
        Err(error) => Err(failed("settling the match")(error)),
    }
}

/// What the settled replay says: the repeat rule's key
/// ([`duel_ladder_core::repeat`]) and the facts listings show.
fn play_record(game: &Match, replay: &Replay) -> PlayRecord {
    let result = &replay.result;
    // Each side's calls per model, read off the replay once; a side's cost
    // is their sum, unknown when one of its models had no price.
    let models: Vec<ModelUse> = [Side::A, Side::B]
        .into_iter()
        .flat_map(|side| {
            replay
                .model_spend(side)
                .into_iter()
                .map(move |spend| ModelUse {
                    side: side.index(),
                    model: spend.model,
                    calls: i64::try_from(spend.calls).unwrap_or(i64::MAX),
                    tokens: i64::try_from(spend.tokens).unwrap_or(i64::MAX),
                    cost_usd: spend.cost_usd,
                })
        })
        .collect();
    let cost = |side: Side| {
        models
            .iter()
            .filter(|used| used.side == side.index())
            .try_fold(0.0, |sum, used| used.cost_usd.map(|usd| sum + usd))
    };
    PlayRecord {
        play_key: play_key(game, replay),
        round_wins: result.round_wins.map(i64::from),
        damage: result.damage.map(i64::from),
        exchanges: i64::try_from(replay.exchanges().count()).unwrap_or(i64::MAX),
        tokens: result
            .tokens_used
            .map(|tokens| i64::try_from(tokens).unwrap_or(i64::MAX)),
        cost_usd: [cost(Side::A), cost(Side::B)],
        fallbacks: fallbacks(replay),
        models,
    }
}

/// Decisions each side lost to the fallback, by cause.
fn fallbacks(replay: &Replay) -> [Fallbacks; 2] {
    let mut counts = [Fallbacks::default(); 2];
    for (_, exchange) in replay.exchanges() {
        for (side, record) in exchange.sides().into_iter().enumerate() {
            let count = &mut counts[side];
            match record.source {
                SourceName::Bot => {}
                SourceName::Timeout => count.timeout += 1,
                SourceName::Budget => count.budget += 1,
                SourceName::Fault => count.fault += 1,
            }
        }
    }
    counts
}

/// The key the repeat rule compares: the match's two versions and every
/// exchange's actions, from the replay settled.
fn play_key(game: &Match, replay: &Replay) -> String {
    let actions: Vec<[duel_rules::Action; 2]> = replay
        .opening
        .iter()
        .map(|[a, b]| [(*a).into(), (*b).into()])
        .chain(replay.rounds.iter().flat_map(|round| {
            round
                .exchanges
                .iter()
                .map(|exchange| [exchange.a.action.into(), exchange.b.action.into()])
        }))
        .collect();
    let [a, b] = &game.sides;
    duel_ladder_core::repeat::play_key(
        [
            KeySide {
                bot_id: &a.bot_id,
                version: a.version,
            },
            KeySide {
                bot_id: &b.bot_id,
                version: b.version,
            },
        ],
        &actions,
    )
}

/// Makes sure the lease is still this worker's with enough of it left to
/// publish and settle in: read beside the writer when at least
/// [`LEASE_LEFT_TO_PUBLISH_PERMILLE`] of a lease is left (no write, no wait
/// for the one SQLite writer), else extended as a heartbeat would.
async fn hold_lease_to_publish(
    store: &Store,
    match_id: &str,
    lease_id: &str,
    lease_ms: i64,
) -> Result<()> {
    let now = store.clock().now_ms();
    match store.lease_expires(match_id, lease_id).await? {
        Some(expires) if !lease_needs_extension(expires, now, lease_ms) => Ok(()),
        Some(_) => {
            store.heartbeat(match_id, lease_id, lease_ms, now).await?;
            Ok(())
        }
        None => Err(LadderError::LeaseLost(format!(
            "match {match_id}: lease {lease_id} was taken"
        ))
        .into()),
    }
}

/// Whether a lease that `expires` must be extended before publishing at `now`.
fn lease_needs_extension(expires: i64, now: i64, lease_ms: i64) -> bool {
    expires.saturating_sub(now) < lease_ms.saturating_mul(LEASE_LEFT_TO_PUBLISH_PERMILLE) / 1_000
}

/// Opens the live feed of a match, when this worker has feeds. A feed that
/// cannot open (a re-run while the last run's feed is still open) is skipped:
/// spectators are never a reason not to play.
fn start_live(config: &WorkerConfig, session: &MatchSession) -> Option<LivePublisher> {
    let feeds = config.live.as_ref()?;
    let match_config = session.config();
    let start = LiveEvent::start_of_match(match_config, session.fighters());
    match feeds.start(&match_config.match_id, start) {
        Ok(publisher) => Some(publisher),
        Err(error) => {
            tracing::warn!(%error, "no live feed for this match");
            None
        }
    }
}

/// Works until `shutdown` turns true, sleeping briefly when nothing is waiting.
/// Errors are logged and the loop goes on: the lease protects every match.
pub async fn run(
    store: Store,
    factory: Arc<dyn BotFactory>,
    config: WorkerConfig,
    mut shutdown: watch::Receiver<bool>,
) {
    while !*shutdown.borrow() {
        match work_once(&store, &*factory, &config).await {
            Ok(Worked::Idle) => {}
            Ok(_) => continue,
            Err(error) => {
                if let Some(metrics) = &config.metrics {
                    metrics.error(&error);
                }
                tracing::error!(error = %error.line(), "worker pass failed");
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(WORKER_IDLE_POLL_MS)) => {}
            _ = shutdown.changed() => {}
        }
    }
}

/// Starts `count` workers (at least one) over `store`, each playing with a
/// clone of `config`, until `shutdown`: the one way both `ladder serve`'s
/// in-process workers and `ladder worker` processes start. The tasks end
/// after shutdown, once each has finished or abandoned its match.
pub fn spawn_pool(
    store: &Store,
    factory: &Arc<dyn BotFactory>,
    config: &WorkerConfig,
    count: usize,
    shutdown: &watch::Receiver<bool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..count.max(1))
        .map(|_| {
            tokio::spawn(run(
                store.clone(),
                Arc::clone(factory),
                config.clone(),
                shutdown.clone(),
            ))
        })
        .collect()
}

/// Keeps each side's logs for its owner (`ladder match logs`). Logs are the
/// author's debugging aid, not part of the result: a failure to keep them is
/// logged and the match goes on to settle.
/// Keeps the match's transcript in the replay store and records each side's
/// part against its owner's quota (store::transcripts). A failure is logged:
/// the match settles without it.
async fn keep_transcript(
    store: &Store,
    config: &WorkerConfig,
    game: &crate::model::Match,
    transcript: &duel_replays::transcript::Transcript,
) {
    if let Err(error) = config.replays.put_transcript(transcript).await {
        tracing::error!(%error, "cannot keep the match's transcript");
        return;
    }
    match store
        .keep_transcript(&config.replays, game, transcript)
        .await
    {
        Ok(dropped) if !dropped.is_empty() => tracing::info!(
            parts = dropped.len(),
            "transcript parts dropped to keep owners within their quota"
        ),
        Ok(_) => {}
        Err(error) => tracing::error!(%error, "cannot record the match's transcript"),
    }
}

async fn keep_logs(store: &Store, game: &crate::model::Match, replay: &duel_replays::Replay) {
    for side in [Side::A, Side::B] {
        let logs = logs_of(replay, side);
        if logs.is_empty() {
            continue;
        }
        let owner_id = &game.sides[side.index()].owner_id;
        match store.keep_logs(&game.id, side, owner_id, &logs).await {
            Ok(true) => {}
            Ok(false) => tracing::info!(
                match_id = %game.id,
                side = side.name(),
                "the bot's logs are larger than its owner's whole log quota: not kept"
            ),
            Err(error) => {
                tracing::warn!(match_id = %game.id, side = side.name(), %error, "cannot keep the bot's logs");
            }
        }
    }
}

/// The replay an earlier run of `match_id` published, checked to be this
/// match's and signed with this ladder's key.
async fn published_replay(config: &WorkerConfig, match_id: &str) -> Result<Replay> {
    let unusable = |fault: PublishedReplayFault| ServiceError::PublishedReplay {
        match_id: match_id.to_owned(),
        fault,
    };
    let json = config
        .replays
        .get_json(match_id)
        .await
        .map_err(|error| unusable(error.into()))?
        .ok_or_else(|| unusable(PublishedReplayFault::Missing))?;
    // With an expected key, `Ok(Ok(_))` is always a valid signature by it.
    match duel_replays::check_signature(&json, Some(&config.signing_key.verifying_key())) {
        Ok(Ok(_)) => {}
        Ok(Err(failure)) => {
            return Err(unusable(PublishedReplayFault::Signature(failure)));
        }
        Err(error) => return Err(unusable(error.into())),
    }
    let replay = Replay::from_slice(&json).map_err(|error| unusable(error.into()))?;
    if replay.match_id != match_id {
        return Err(unusable(PublishedReplayFault::OtherMatch(replay.match_id)));
    }
    Ok(replay)
}

/// Each exchange `side` logged anything in, from a replay with logs.
fn logs_of(replay: &duel_replays::Replay, side: duel_rules::Side) -> Vec<ExchangeLog> {
    replay
        .exchanges()
        .filter_map(|(round, exchange)| {
            let record = exchange.sides()[side.index()];
            (!record.log().is_empty() || record.log_truncated).then(|| ExchangeLog {
                round,
                exchange: exchange.number,
                lines: record.log().to_vec(),
                truncated: record.log_truncated,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_extended_before_publishing_only_when_little_is_left() {
        let lease_ms = 30_000;
        // (expires, now, extend?)
        let table = [
            (130_000, 100_000, false), // just claimed: all of it left
            (127_000, 100_000, false), // 90% left
            (126_999, 100_000, true),  // just under 90%
            (105_000, 100_000, true),  // a long match since the last heartbeat
            (100_000, 100_000, true),  // expiring now
            (99_000, 100_000, true),   // expired: the heartbeat refuses it
            (i64::MAX, i64::MIN, false),
            (i64::MIN, i64::MAX, true),
        ];
        for (expires, now, extend) in table {
            assert_eq!(
                lease_needs_extension(expires, now, lease_ms),
                extend,
                "expires {expires}, now {now}"
            );
        }
    }
}
