//! `ladder bench`: matches settled per second on a fresh database with built-in
//! bots (so the store and the ledger are what is measured), against the bare
//! baseline of running the same matches through the referee alone.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use duel_referee::builtin::SplitMix64;
use duel_referee::{HostConfig, MatchHost, MatchOptions, ModelGateway};
use duel_replays::store::ReplayStore;
use duel_rules::WeightClass;

use crate::auth::Role;
use crate::error::{LadderError, Result};
use crate::model::{BotKind, BotSource, BotVersion};
use crate::store::{PairSide, Store};
use crate::worker::{self, BotFactory, BuiltinFactory, Worked, WorkerConfig};

/// Owners (each with two bots) the benchmark registers.
pub const BENCH_OWNERS: usize = 8;
const BENCH_SPECS: [&str; 3] = ["builtin:counter", "builtin:random", "builtin:block"];

#[derive(Clone, Debug)]
pub struct BenchReport {
    pub backend: &'static str,
    pub matches: usize,
    pub workers: usize,
    /// Pairs accepted (stakes into escrow) per second, one after another.
    pub accepted_per_s: f64,
    /// Claimed, run, replay signed and published, and settled per second over all workers.
    pub settled_per_s: f64,
    /// The same matches run by the referee alone with the same concurrency.
    pub bare_per_s: f64,
    /// How the settlements were written: transactions of several (group
    /// commit) or one at a time.
    pub settlements: crate::store::SettlementStats,
    /// `ledger check` over the database after the run: `Err` names the first
    /// violation.
    pub ledger: std::result::Result<(), String>,
}

fn rate(count: usize, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64().max(1e-9)
}

/// Runs the benchmark on `db_url`, which must hold no running season.
pub async fn settle_bench(
    db_url: &str,
    matches: usize,
    workers: usize,
    replays_dir: PathBuf,
) -> Result<BenchReport> {
    let store = Store::connect(db_url).await?;
    if store.active_season().await?.is_some() {
        return Err(LadderError::Invalid(
            "ladder bench needs a fresh database (a season is running)".to_owned(),
        ));
    }
    let replays = ReplayStore::open(&replays_dir.display().to_string())?.without_index();
    // A throwaway key: signing costs the same with any key.
    let signing_key = Arc::new(duel_replays::generate_signing_key()?);
    let run = uuid::Uuid::new_v4().simple().to_string();
    let run = &run[..8];
    store.start_season(&format!("bench-{run}")).await?;
    let mut bots = Vec::new();
    for owner_index in 0..BENCH_OWNERS {
        let (owner, _) = store
            .create_user(&format!("bench-{run}-{owner_index}"), Role::Owner)
            .await?;
        store
            .grant_credits(&owner, 1_000_000_000, &format!("bench:{run}:{owner_index}"))
            .await?;
        for bot_index in 0..2 {
            let spec = BENCH_SPECS[(owner_index + bot_index) % BENCH_SPECS.len()].to_owned();
            let source = BotSource::builtin(spec);
            let bot = store
                .register_bot(
                    &owner,
                    &format!("bench-{run}-{owner_index}-{bot_index}"),
                    "light",
                    &source,
                )
                .await?;
            bots.push((bot.id, owner_index));
        }
    }
    let mut rng = SplitMix64::new(0x5eed);
    let started = Instant::now();
    for _ in 0..matches {
        let first = rng.below(bots.len() as u64) as usize;
        let mut second = rng.below(bots.len() as u64) as usize;
        while bots[second].1 == bots[first].1 {
            second = rng.below(bots.len() as u64) as usize;
        }
        store
            .accept_pair([
                PairSide {
                    bot_id: bots[first].0.clone(),
                    stake: 10,
                },
                PairSide {
                    bot_id: bots[second].0.clone(),
                    stake: 10,
                },
            ])
            .await?;
    }
    let accepted_per_s = rate(matches, started.elapsed());

    let factory: Arc<dyn BotFactory> = Arc::new(BuiltinFactory);
    let host = MatchHost::new(HostConfig::new(ModelGateway::disabled()));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..workers.max(1) {
        let store = store.clone();
        let factory = Arc::clone(&factory);
        let config = WorkerConfig::new(host.clone(), replays.clone(), Arc::clone(&signing_key));
        tasks.push(tokio::spawn(async move {
            let mut settled = 0usize;
            loop {
                match worker::work_once(&store, &*factory, &config).await? {
                    Worked::Idle => return Ok::<usize, LadderError>(settled),
                    Worked::Settled(_) => settled += 1,
                    _ => {}
                }
            }
        }));
    }
    let mut settled = 0;
    for task in tasks {
        settled += task
            .await
            .map_err(|error| LadderError::Io(format!("bench worker: {error}")))??;
    }
    let settled_per_s = rate(settled, started.elapsed());

    let started = Instant::now();
    let per_task = matches.div_ceil(workers.max(1));
    let mut tasks = Vec::new();
    for task in 0..workers.max(1) {
        let factory = Arc::clone(&factory);
        let host = host.clone();
        tasks.push(tokio::spawn(async move {
            for index in 0..per_task {
                let version = |spec: &str| BotVersion {
                    version: 1,
                    kind: BotKind::Builtin,
                    spec: spec.to_owned(),
                    digest: String::new(),
                    created_ms: 0,
                };
                let seed = (task * per_task + index) as u64;
                let mut options = MatchOptions::new(WeightClass::Light).seed(seed);
                options.match_id = Some(format!("bare-{seed}"));
                options.accepted_at = Some("2026-01-01T00:00:00Z".to_owned());
                let a = factory.fighter(&version(BENCH_SPECS[index % 3])).await?;
                let b = factory
                    .fighter(&version(BENCH_SPECS[(index + 1) % 3]))
                    .await?;
                let session = host
                    .prepare([a, b], options)
                    .await
                    .map_err(|error| LadderError::Io(error.to_string()))?;
                let replay = session.play(&mut |_: &_, _: &_| {}).await;
                std::hint::black_box(replay);
            }
            Ok::<(), LadderError>(())
        }));
    }
    for task in tasks {
        task.await
            .map_err(|error| LadderError::Io(format!("bench baseline: {error}")))??;
    }
    let bare_per_s = rate(per_task * workers.max(1), started.elapsed());
    // A faster ladder that breaks the books is no faster ladder.
    let ledger = store.ledger_check().await?.map(|_| ());
    let report = BenchReport {
        backend: store.backend(),
        matches,
        workers: workers.max(1),
        accepted_per_s,
        settled_per_s,
        bare_per_s,
        settlements: store.settlement_stats(),
        ledger,
    };
    store.close().await;
    Ok(report)
}
