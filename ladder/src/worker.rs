//! Workers: claim a match under a lease, keep the lease alive while the referee
//! library plays it, write the replay, settle. A worker that dies simply stops
//! heartbeating; its lease expires and the next claim re-runs the match from
//! scratch (or voids it after [`crate::limits::MAX_MATCH_ATTEMPTS`]). Settlement
//! only counts for the lease holder, so a stale worker can never settle.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use duel_referee::builtin::BuiltinBot;
use duel_referee::{Bot, BotSpec, MatchConfig};
use duel_rules::{Ruleset, Side, Winner};
use tokio::sync::watch;

use crate::error::{LadderError, Result};
use crate::limits::{DEFAULT_HEARTBEAT_MS, DEFAULT_LEASE_MS, WORKER_IDLE_POLL_MS};
use crate::model::{BotKind, BotVersion, Claim, Outcome, Settlement};
use crate::store::{Store, now_ms};

/// Builds the fighter for one side of a match from the exact stored version.
pub trait BotFactory: Send + Sync + std::fmt::Debug {
    fn build(&self, version: &BotVersion, seed: u64, side: Side) -> Result<Box<dyn Bot>>;
}

/// Runs built-in bots (house bots, tests, benchmarks). WASM and endpoint bots
/// need the sandbox and the endpoint client, which plug in here; until then a
/// match with one is voided with its stakes returned.
#[derive(Clone, Copy, Debug, Default)]
pub struct BuiltinFactory;

impl BotFactory for BuiltinFactory {
    fn build(&self, version: &BotVersion, seed: u64, side: Side) -> Result<Box<dyn Bot>> {
        match version.kind {
            BotKind::Builtin => match BotSpec::parse(&version.spec) {
                Ok(BotSpec::Builtin(spec)) => Ok(Box::new(BuiltinBot::new(spec, seed, side))),
                Ok(_) | Err(_) => Err(LadderError::corrupt(format!(
                    "stored built-in spec {:?}",
                    version.spec
                ))),
            },
            BotKind::Wasm | BotKind::Endpoint => Err(LadderError::BotRejected(format!(
                "{} bots cannot run in this build of the worker",
                version.kind.name()
            ))),
        }
    }
}

#[derive(Clone, Debug)]
pub struct WorkerConfig {
    pub replays_dir: PathBuf,
    pub lease_ms: i64,
    pub heartbeat_ms: i64,
    /// Per decision; the rules fix 10 s.
    pub decision_wall_clock: Duration,
}

impl WorkerConfig {
    pub fn new(replays_dir: PathBuf) -> WorkerConfig {
        WorkerConfig {
            replays_dir,
            lease_ms: DEFAULT_LEASE_MS,
            heartbeat_ms: DEFAULT_HEARTBEAT_MS,
            decision_wall_clock: duel_referee::limits::DECISION_WALL_CLOCK,
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

async fn run_claim(
    store: &Store,
    factory: &dyn BotFactory,
    config: &WorkerConfig,
    claim: Claim,
) -> Result<Worked> {
    let game = &claim.game;
    let seed = u64::try_from(game.seed).unwrap_or_default();
    let built =
        [Side::A, Side::B].map(|side| factory.build(&claim.versions[side.index()], seed, side));
    let [bot_a, bot_b] = built;
    let (mut bot_a, mut bot_b) = match (bot_a, bot_b) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(error), _) | (_, Err(error)) => {
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
    };
    let ruleset = Ruleset::from_version(&game.ruleset)
        .map_err(|error| LadderError::corrupt(format!("match {} pins {error}", game.id)))?;
    let match_config = MatchConfig {
        ruleset,
        match_id: game.id.clone(),
        accepted_at: rfc3339(game.accepted_ms),
        class: game.class,
        seed,
        decision_wall_clock: config.decision_wall_clock,
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
    let replay = tokio::select! {
        replay = duel_referee::run_match(match_config, [&mut *bot_a, &mut *bot_b]) => Some(replay),
        _ = lost_rx.wait_for(|lost| *lost) => None,
    };
    drop(heartbeat);
    let Some(replay) = replay else {
        tracing::warn!("lease lost mid-match; abandoning it");
        return Ok(Worked::LostLease {
            match_id: game.id.clone(),
        });
    };
    std::fs::create_dir_all(&config.replays_dir).map_err(|error| {
        LadderError::Io(format!(
            "cannot create {}: {error}",
            config.replays_dir.display()
        ))
    })?;
    let path = config.replays_dir.join(format!("{}.json", game.id));
    replay.write(&path)?;
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
            &path.display().to_string(),
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
