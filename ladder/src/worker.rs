//! Workers: claim a match under a lease, build both fighters from their stored
//! versions (built-in, WASM through the referee's sandbox, endpoint through its
//! gRPC client), keep the lease alive while the referee library plays the match
//! under the class budget the match row pins, sign the replay and publish it to
//! the replay store, settle. A worker that dies simply stops heartbeating; its
//! lease expires and the next claim re-runs the match from scratch (or voids it
//! after [`crate::limits::MAX_MATCH_ATTEMPTS`]). Settlement only counts for the
//! lease holder, so a stale worker can never settle.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use duel_referee::bot::DecisionFuture;
use duel_referee::builtin::BuiltinBot;
use duel_referee::publish::{LiveEvent, LiveFeeds, LivePublisher};
use duel_referee::{
    Bot, BotContext, BotSpec, InferenceLink, MatchConfig, ModelGateway, make_bot, make_wasm_bot,
};
use duel_replays::store::ReplayStore;
use duel_replays::{FighterInfo, RoundResultRecord, SigningKey};
use duel_rules::{Observation, Ruleset, Side, Winner};
use tokio::sync::watch;

use crate::error::{LadderError, Result};
use crate::limits::{
    DEFAULT_HEARTBEAT_MS, DEFAULT_LEASE_MS, PUBLISH_LEASE_SHARE_PERMILLE, WORKER_IDLE_POLL_MS,
};
use crate::model::{BotKind, BotVersion, Claim, Outcome, Settlement};
use crate::store::{Store, now_ms};
use crate::validate::{check_endpoint_url, check_resolved};

/// What [`BotFactory::build`] returns.
pub type BuildFuture<'a> = Pin<Box<dyn Future<Output = Result<Box<dyn Bot>>> + Send + 'a>>;

/// Builds the fighter for one side of a match from the exact stored version.
/// `context` carries the side, seed, wall clock and the fighter's token meter
/// (already holding the match's budget). A [`LadderError::BotRejected`] voids
/// the match (stakes returned); any other error leaves it to be re-run.
pub trait BotFactory: Send + Sync + std::fmt::Debug {
    fn build<'a>(&'a self, version: &'a BotVersion, context: &'a BotContext) -> BuildFuture<'a>;
}

fn builtin_bot(version: &BotVersion, context: &BotContext) -> Result<Box<dyn Bot>> {
    match BotSpec::parse(&version.spec) {
        Ok(BotSpec::Builtin(spec)) => {
            Ok(Box::new(BuiltinBot::new(spec, context.seed, context.side)))
        }
        Ok(_) | Err(_) => Err(LadderError::corrupt(format!(
            "stored built-in spec {:?}",
            version.spec
        ))),
    }
}

/// Runs built-in bots only: the benchmark's factory, so that the ledger and the
/// store are what it measures. WASM and endpoint bots are refused (voided).
#[derive(Clone, Copy, Debug, Default)]
pub struct BuiltinFactory;

impl BotFactory for BuiltinFactory {
    fn build<'a>(&'a self, version: &'a BotVersion, context: &'a BotContext) -> BuildFuture<'a> {
        Box::pin(async move {
            match version.kind {
                BotKind::Builtin => builtin_bot(version, context),
                BotKind::Wasm | BotKind::Endpoint => Err(LadderError::BotRejected(format!(
                    "{} bots cannot run in the built-in-only worker",
                    version.kind.name()
                ))),
            }
        })
    }
}

/// Builds every kind of bot through the referee library: WASM components from
/// the bytes the store keeps by digest (the referee's sandbox compiles each once
/// per machine, with its disk cache), endpoint bots through the referee's gRPC
/// client after the endpoint policy is checked again (its name may resolve
/// elsewhere now than at registration).
#[derive(Clone, Debug)]
pub struct LadderFactory {
    store: Store,
    allow_private_endpoints: bool,
}

impl LadderFactory {
    pub fn new(store: Store, allow_private_endpoints: bool) -> LadderFactory {
        LadderFactory {
            store,
            allow_private_endpoints,
        }
    }
}

impl BotFactory for LadderFactory {
    fn build<'a>(&'a self, version: &'a BotVersion, context: &'a BotContext) -> BuildFuture<'a> {
        Box::pin(async move {
            match version.kind {
                BotKind::Builtin => builtin_bot(version, context),
                BotKind::Wasm => {
                    let bytes = self.store.wasm_blob(&version.spec).await?;
                    make_wasm_bot(
                        bytes,
                        version.spec.clone(),
                        Some(version.spec.clone()),
                        context,
                    )
                    .await
                    .map_err(|error| LadderError::BotRejected(error.to_string()))
                }
                BotKind::Endpoint => {
                    check_endpoint_url(&version.spec, self.allow_private_endpoints)?;
                    check_resolved(&version.spec, self.allow_private_endpoints).await?;
                    make_bot(&BotSpec::Endpoint(version.spec.clone()), context)
                        .await
                        .map_err(|error| LadderError::BotRejected(error.to_string()))
                }
            }
        })
    }
}

/// A fighter shown in the replay under its ladder name and stored spec, so
/// listings by bot name find it and the replay names the exact version.
struct Named {
    inner: Box<dyn Bot>,
    name: String,
    spec: String,
}

impl Bot for Named {
    fn info(&self) -> FighterInfo {
        FighterInfo {
            name: self.name.clone(),
            spec: Some(self.spec.clone()),
            ..self.inner.info()
        }
    }

    fn decide<'a>(&'a mut self, observation: Observation<'a>) -> DecisionFuture<'a> {
        self.inner.decide(observation)
    }
}

/// Where and how a worker plays, publishes and meters.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// Where replays are published (a folder or an S3-compatible bucket).
    pub replays: ReplayStore,
    /// Signs every replay before it is published.
    pub signing_key: Arc<SigningKey>,
    pub lease_ms: i64,
    pub heartbeat_ms: i64,
    /// Per decision; the rules fix 10 s.
    pub decision_wall_clock: Duration,
    /// Where metered model calls go (disabled: every call is refused, free).
    pub gateway: ModelGateway,
    /// The `duel.v1.Inference` service endpoint bots are told, if one runs.
    pub inference: Option<InferenceLink>,
    /// Live feeds of the matches this worker plays (`ladder serve` shares them
    /// with its HTTP service).
    pub live: Option<LiveFeeds>,
}

impl WorkerConfig {
    pub fn new(replays: ReplayStore, signing_key: Arc<SigningKey>) -> WorkerConfig {
        WorkerConfig {
            replays,
            signing_key,
            lease_ms: DEFAULT_LEASE_MS,
            heartbeat_ms: DEFAULT_HEARTBEAT_MS,
            decision_wall_clock: duel_referee::limits::DECISION_WALL_CLOCK,
            gateway: ModelGateway::disabled(),
            inference: None,
            live: None,
        }
    }
}

/// What one pass of a worker did.
#[derive(Clone, Debug, PartialEq, Eq)]
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

fn rfc3339(ms: i64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|at| {
            at.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_owned())
}

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
    let Some(claim) = store.claim(config.lease_ms, now_ms()).await? else {
        return Ok(Worked::Idle);
    };
    // Instrumented, not entered: a guard held across awaits would nest spans.
    let span = tracing::info_span!("match", match_id = %claim.game.id);
    tracing::Instrument::instrument(run_claim(store, factory, config, claim), span).await
}

/// The match configuration the row pins: ruleset, class and budget must agree,
/// or the match cannot be played as accepted.
fn match_config(claim: &Claim, config: &WorkerConfig) -> Result<MatchConfig> {
    let game = &claim.game;
    let ruleset = Ruleset::from_version(&game.ruleset)
        .map_err(|error| LadderError::BotRejected(format!("match pins {error}")))?;
    let budget = ruleset.budget_tokens(game.class);
    if u64::try_from(game.budget).ok() != Some(budget) {
        return Err(LadderError::BotRejected(format!(
            "match pins a budget of {} tokens, but ruleset {} gives class {} {budget}",
            game.budget,
            ruleset.version(),
            game.class.name()
        )));
    }
    Ok(MatchConfig {
        ruleset,
        match_id: game.id.clone(),
        accepted_at: rfc3339(game.accepted_ms),
        class: game.class,
        seed: u64::try_from(game.seed).unwrap_or_default(),
        decision_wall_clock: config.decision_wall_clock,
    })
}

/// Both fighters, each metered with the match's budget.
async fn build_bots(
    factory: &dyn BotFactory,
    config: &WorkerConfig,
    claim: &Claim,
    match_config: &MatchConfig,
) -> Result<[Box<dyn Bot>; 2]> {
    let contexts = Side::BOTH.map(|side| {
        BotContext::new(
            match_config,
            side,
            config.gateway.meter(match_config.budget_tokens()),
            config.inference.clone(),
        )
    });
    let [version_a, version_b] = &claim.versions;
    let (a, b) = tokio::join!(
        factory.build(version_a, &contexts[0]),
        factory.build(version_b, &contexts[1])
    );
    let named = |inner: Box<dyn Bot>, side: Side| -> Box<dyn Bot> {
        Box::new(Named {
            inner,
            name: claim.game.sides[side.index()].bot_name.clone(),
            spec: claim.versions[side.index()].spec.clone(),
        })
    };
    Ok([named(a?, Side::A), named(b?, Side::B)])
}

async fn run_claim(
    store: &Store,
    factory: &dyn BotFactory,
    config: &WorkerConfig,
    claim: Claim,
) -> Result<Worked> {
    let game = &claim.game;
    let prepared = match match_config(&claim, config) {
        Ok(match_config) => build_bots(factory, config, &claim, &match_config)
            .await
            .map(|bots| (match_config, bots)),
        Err(error) => Err(error),
    };
    let (match_config, [mut bot_a, mut bot_b]) = match prepared {
        Ok(prepared) => prepared,
        // Neither a refused bot nor a corrupt row gets better by running again.
        Err(error @ (LadderError::BotRejected(_) | LadderError::Corrupt(_))) => {
            let reason = error.to_string();
            tracing::warn!(%reason, "voiding a match that cannot be run");
            store
                .void_claimed(&game.id, &claim.lease_id, &reason, now_ms())
                .await?;
            return Ok(Worked::Voided {
                match_id: game.id.clone(),
                reason,
            });
        }
        // Anything else (the database, say) may pass: the lease expires and the
        // match is run again, or voided after its last attempt.
        Err(error) => return Err(error),
    };
    let season = store.season(game.season_id).await?;
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
                    .heartbeat(&match_id, &lease_id, lease_ms, now_ms())
                    .await
                    .is_err()
                {
                    let _ = lost_tx.send(true);
                    return;
                }
            }
        })
    });
    let live = start_live(config, &match_config, [bot_a.info(), bot_b.info()]);
    let played = duel_referee::runner::run_match_observed(
        match_config,
        [&mut *bot_a, &mut *bot_b],
        |recorder, step| {
            if let (Some(live), Some((round, exchange))) = (&live, recorder.last_exchange()) {
                let round_result = step.round_result.map(|result| RoundResultRecord {
                    winner: result.winner.into(),
                    by: result.by.into(),
                });
                live.exchange(round, exchange, round_result);
            }
        },
    );
    let replay = tokio::select! {
        replay = played => Some(replay),
        _ = lost_rx.wait_for(|lost| *lost) => None,
    };
    drop(heartbeat);
    // Bots (and their Inference credentials) go before publishing.
    drop((bot_a, bot_b));
    let Some(mut replay) = replay else {
        tracing::warn!("lease lost mid-match; abandoning it");
        return Ok(Worked::LostLease {
            match_id: game.id.clone(),
        });
    };
    // Only a worker that still holds the match publishes its replay: a stale
    // one must not replace the replay of the run that settles.
    if store
        .heartbeat(&game.id, &claim.lease_id, config.lease_ms, now_ms())
        .await
        .is_err()
    {
        tracing::warn!("lease lost before publishing; abandoning the match");
        return Ok(Worked::LostLease {
            match_id: game.id.clone(),
        });
    }
    replay.season = Some(season.name);
    duel_replays::sign(&mut replay, &config.signing_key);
    let publish_ms = config.lease_ms.saturating_mul(PUBLISH_LEASE_SHARE_PERMILLE) / 1_000;
    match tokio::time::timeout(
        Duration::from_millis(u64::try_from(publish_ms).unwrap_or(0)),
        config.replays.put(&replay),
    )
    .await
    {
        Ok(Ok(_)) => {}
        Ok(Err(error)) => return Err(error.into()),
        Err(_) => {
            return Err(LadderError::Io(format!(
                "publishing the replay to {} took more than {publish_ms} ms",
                config.replays.description()
            )));
        }
    }
    if let Some(live) = live {
        live.finish(&replay.result);
    }
    let winner = match replay.result.winner.into() {
        Winner::A => Outcome::A,
        Winner::B => Outcome::B,
        Winner::Draw => Outcome::Draw,
    };
    match store
        .complete(
            &game.id,
            &claim.lease_id,
            winner,
            &config.replays.location(&game.id),
            now_ms(),
        )
        .await
    {
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
        Err(error) => Err(error),
    }
}

/// Opens the live feed of a match, when this worker has feeds. A feed that
/// cannot open (a re-run while the last run's feed is still open) is skipped:
/// spectators are never a reason not to play.
fn start_live(
    config: &WorkerConfig,
    match_config: &MatchConfig,
    fighters: [FighterInfo; 2],
) -> Option<LivePublisher> {
    let feeds = config.live.as_ref()?;
    let start = LiveEvent::start_of_match(match_config, &fighters);
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
            Err(error) => tracing::error!(%error, "worker pass failed"),
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(WORKER_IDLE_POLL_MS)) => {}
            _ = shutdown.changed() => {}
        }
    }
}
