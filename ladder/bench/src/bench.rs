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

use duel_ladder::ServiceError;
use duel_ladder::auth::Role;
use duel_ladder::metrics::{LadderMetrics, Step};
use duel_ladder::model::{BotKind, BotSource, BotVersion};
use duel_ladder::store::{PairSide, Store};

use crate::error::{BenchError, Result};
use duel_ladder::worker::{self, BotFactory, BuiltinFactory, Worked, WorkerConfig};
use serde::Serialize;

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
    pub settlements: duel_ladder::store::SettlementStats,
    /// `ledger check` over the database after the run: `Err` names the first
    /// violation.
    pub ledger: std::result::Result<(), String>,
    /// This process's CPU while the workers settled (`None` without Linux's
    /// `/proc/self/stat`). A PostgreSQL server's own CPU is not in it.
    pub settle_cpu: Option<CpuUse>,
    /// Each step's wall-clock time per settled match, summed over the
    /// workers, in [`Step::ALL`]'s order: where a worker waits, not only where
    /// it computes.
    pub step_ms: Vec<(Step, f64)>,
    /// The settle phase cut into windows of `--window` settled matches, in
    /// the order they settled: whether a settlement costs more late in a
    /// season than early (empty without `--window`).
    pub windows: Vec<Window>,
}

/// One window of consecutive settlements (the `from`-th to the `to`-th
/// settled match of the run).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Window {
    pub from: usize,
    pub to: usize,
    pub settled_per_s: f64,
    /// This process's CPU per match over the window (`None` without Linux's
    /// `/proc/self/stat`).
    pub cpu_ms_per_match: Option<f64>,
    /// The workers' settle step (the settlement's SQL and its wait for a
    /// batch), wall clock per match, summed over the workers.
    pub settle_ms_per_match: f64,
    /// Every step's wall clock per match over the window, summed over the
    /// workers, keyed by name (`publish`, `claim`…).
    pub step_ms: std::collections::BTreeMap<String, f64>,
}

/// Where the settle phase stood at a window's edge.
#[derive(Clone, Debug)]
struct WindowMark {
    settled: usize,
    at: Instant,
    cpu: Option<(u64, u64)>,
    step_s: std::collections::BTreeMap<String, f64>,
}

/// The windows' edges, marked by whichever worker settles the match that
/// closes a window.
struct WindowMarks {
    window: usize,
    settled: std::sync::atomic::AtomicUsize,
    marks: std::sync::Mutex<Vec<WindowMark>>,
    metrics: Arc<LadderMetrics>,
    host: MatchHost,
}

impl WindowMarks {
    fn mark(&self, settled: usize) {
        let mark = WindowMark {
            settled,
            at: Instant::now(),
            cpu: process_cpu_ticks(),
            step_s: step_sums_s(&self.metrics.render(&self.host.wasm_stats())),
        };
        self.marks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(mark);
    }

    /// Counts one settled match, marking the edge of a window it closes.
    fn settled_one(&self) {
        if self.window == 0 {
            return;
        }
        let settled = self
            .settled
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        if settled.is_multiple_of(self.window) {
            self.mark(settled);
        }
    }

    fn windows(&self) -> Vec<Window> {
        let mut marks = self
            .marks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        marks.sort_by_key(|mark| mark.settled);
        marks
            .windows(2)
            .map(|pair| {
                let (start, end) = (&pair[0], &pair[1]);
                let count = end.settled - start.settled;
                let step_ms: std::collections::BTreeMap<String, f64> = end
                    .step_s
                    .iter()
                    .map(|(step, total)| {
                        let before = start.step_s.get(step).copied().unwrap_or(0.0);
                        let spent = Duration::from_secs_f64((total - before).max(0.0));
                        (step.clone(), per_match_ms(spent, count))
                    })
                    .collect();
                Window {
                    from: start.settled + 1,
                    to: end.settled,
                    settled_per_s: rate(count, end.at.saturating_duration_since(start.at)),
                    cpu_ms_per_match: cpu_use(start.cpu, end.cpu, count)
                        .map(|cpu| cpu.per_match_ms),
                    settle_ms_per_match: step_ms.get(Step::Settle.name()).copied().unwrap_or(0.0),
                    step_ms,
                }
            })
            .collect()
    }
}

/// `ladder bench --json`: the report's figures, steps keyed by name
/// (`lease_check`), `ledger` `"ok"` or the first violation. Fields are in
/// alphabetical order, the order the output has always had.
#[derive(Debug, Serialize)]
pub struct BenchJson {
    pub accepted_per_s: f64,
    pub backend: &'static str,
    pub bare_per_s: f64,
    pub ledger: String,
    pub matches: usize,
    pub settle_cpu: Option<CpuUse>,
    pub settled_per_s: f64,
    pub settlements: SettlementsJson,
    pub step_ms: std::collections::BTreeMap<&'static str, f64>,
    pub windows: Vec<Window>,
    pub workers: usize,
}

/// How settlements shared transactions, in [`BenchJson`].
#[derive(Debug, Serialize)]
pub struct SettlementsJson {
    pub alone: u64,
    pub batched: u64,
    pub batches: u64,
}

impl BenchReport {
    /// The report as `ladder bench --json` prints it.
    pub fn json(&self) -> BenchJson {
        BenchJson {
            accepted_per_s: self.accepted_per_s,
            backend: self.backend,
            bare_per_s: self.bare_per_s,
            ledger: match &self.ledger {
                Ok(()) => "ok".to_owned(),
                Err(violation) => violation.clone(),
            },
            matches: self.matches,
            settle_cpu: self.settle_cpu,
            settled_per_s: self.settled_per_s,
            settlements: SettlementsJson {
                alone: self.settlements.alone,
                batched: self.settlements.batched,
                batches: self.settlements.batches,
            },
            step_ms: self
                .step_ms
                .iter()
                .map(|(step, ms)| (step.name(), *ms))
                .collect(),
            windows: self.windows.clone(),
            workers: self.workers,
        }
    }
}

/// CPU a process used over a span of work.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CpuUse {
    /// User plus system CPU per settled match, in milliseconds.
    pub per_match_ms: f64,
    /// The kernel's share of that CPU, 0 to 1.
    pub system_share: f64,
}

/// The unit of `/proc/<pid>/stat`'s CPU times: Linux reports them in USER_HZ,
/// 100 per second on every architecture this project builds for.
const PROC_STAT_TICKS_PER_S: f64 = 100.0;

/// CPU ticks (user, system) this process has used so far, every thread
/// counted, living or exited; `None` where `/proc/self/stat` cannot be read.
fn process_cpu_ticks() -> Option<(u64, u64)> {
    parse_cpu_ticks(&std::fs::read_to_string("/proc/self/stat").ok()?)
}

/// `utime` and `stime` (fields 14 and 15) of a `/proc/<pid>/stat` line. The
/// command name (field 2) is in parentheses and may hold spaces and
/// parentheses itself, so fields are counted after its last `)`.
fn parse_cpu_ticks(stat: &str) -> Option<(u64, u64)> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_ascii_whitespace().skip(11);
    let user = fields.next()?.parse().ok()?;
    let system = fields.next()?.parse().ok()?;
    Some((user, system))
}

/// The CPU used between two readings of [`process_cpu_ticks`], per match.
fn cpu_use(
    before: Option<(u64, u64)>,
    after: Option<(u64, u64)>,
    matches: usize,
) -> Option<CpuUse> {
    let (user_before, system_before) = before?;
    let (user_after, system_after) = after?;
    let user = user_after.checked_sub(user_before)?;
    let system = system_after.checked_sub(system_before)?;
    let total = user + system;
    Some(CpuUse {
        per_match_ms: total as f64 * 1_000.0 / PROC_STAT_TICKS_PER_S / matches.max(1) as f64,
        system_share: if total == 0 {
            0.0
        } else {
            system as f64 / total as f64
        },
    })
}

/// The prefix of each step's summed seconds in the metrics' exposition.
const STEP_SUM_PREFIX: &str = "duel_ladder_worker_step_seconds_sum{step=\"";

/// Each step's summed seconds from an OpenMetrics exposition
/// (`duel_ladder_worker_step_seconds_sum{step="claim"} 0.0123`).
fn step_sums_s(exposition: &str) -> std::collections::BTreeMap<String, f64> {
    exposition
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix(STEP_SUM_PREFIX)?;
            let (step, value) = rest.split_once("\"} ")?;
            Some((step.to_owned(), value.trim().parse().ok()?))
        })
        .collect()
}

/// `total` spread over `matches`, in milliseconds (0 for no match).
fn per_match_ms(total: Duration, matches: usize) -> f64 {
    if matches == 0 {
        return 0.0;
    }
    total.as_secs_f64() * 1_000.0 / matches as f64
}

fn rate(count: usize, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64().max(1e-9)
}

/// Runs the benchmark on `db_url`, which must hold no running season;
/// `window` (0: none) cuts the settle phase into windows of that many
/// settled matches ([`BenchReport::windows`]).
pub async fn settle_bench(
    db_url: &str,
    matches: usize,
    workers: usize,
    replays_dir: PathBuf,
    window: usize,
) -> Result<BenchReport> {
    let store = Store::connect(db_url).await?;
    if store.reads().active_season().await?.is_some() {
        return Err(BenchError::Invalid(
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
        duel_ladder::wave::accept_pair(
            &store,
            [
                PairSide {
                    bot_id: bots[first].0.clone(),
                    stake: 10,
                },
                PairSide {
                    bot_id: bots[second].0.clone(),
                    stake: 10,
                },
            ],
        )
        .await?;
    }
    let accepted_per_s = rate(matches, started.elapsed());

    let factory: Arc<dyn BotFactory> = Arc::new(BuiltinFactory);
    let host = MatchHost::new(HostConfig::new(ModelGateway::disabled()));
    // The workers time each step into their metrics, as in production; the
    // report reads the sums from the exposition a scraper would read.
    let metrics = LadderMetrics::new();
    let marks = Arc::new(WindowMarks {
        window,
        settled: std::sync::atomic::AtomicUsize::new(0),
        marks: std::sync::Mutex::new(Vec::new()),
        metrics: Arc::clone(&metrics),
        host: host.clone(),
    });
    let cpu_before = process_cpu_ticks();
    let started = Instant::now();
    if window > 0 {
        marks.mark(0);
    }
    let mut tasks = Vec::new();
    for _ in 0..workers.max(1) {
        let store = store.clone();
        let factory = Arc::clone(&factory);
        let marks = Arc::clone(&marks);
        let mut config = WorkerConfig::new(host.clone(), replays.clone(), Arc::clone(&signing_key));
        config.metrics = Some(Arc::clone(&metrics));
        tasks.push(tokio::spawn(async move {
            let mut settled = 0usize;
            loop {
                match worker::work_once(&store, &*factory, &config).await? {
                    Worked::Idle => return Ok::<usize, ServiceError>(settled),
                    Worked::Settled(_) => {
                        settled += 1;
                        marks.settled_one();
                    }
                    _ => {}
                }
            }
        }));
    }
    let mut settled = 0;
    for task in tasks {
        settled += task.await.map_err(|source| BenchError::Task {
            task: "bench worker",
            source,
        })??;
    }
    let settled_per_s = rate(settled, started.elapsed());
    let settle_cpu = cpu_use(cpu_before, process_cpu_ticks(), settled);
    let sums = step_sums_s(&metrics.render(&host.wasm_stats()));
    let step_ms = Step::ALL
        .into_iter()
        .map(|step| {
            let total = sums.get(step.name()).copied().unwrap_or(0.0);
            (
                step,
                per_match_ms(Duration::from_secs_f64(total.max(0.0)), settled),
            )
        })
        .collect();

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
                    .map_err(ServiceError::from)?;
                let played = session.play(&mut |_: &_, _: &_| {}).await;
                std::hint::black_box(played);
            }
            Ok::<(), ServiceError>(())
        }));
    }
    for task in tasks {
        task.await.map_err(|source| BenchError::Task {
            task: "bench baseline",
            source,
        })??;
    }
    let bare_per_s = rate(per_task * workers.max(1), started.elapsed());
    // A faster ladder that breaks the books is no faster ladder.
    let ledger = store
        .ledger_check()
        .await?
        .map(|_| ())
        .map_err(|violation| violation.to_string());
    let report = BenchReport {
        backend: store.backend(),
        matches,
        workers: workers.max(1),
        accepted_per_s,
        settled_per_s,
        bare_per_s,
        settlements: store.settlement_stats(),
        ledger,
        settle_cpu,
        step_ms,
        windows: marks.windows(),
    };
    store.close().await;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ticks_are_read_after_the_command_name() {
        let table = [
            // A name with a space and a parenthesis of its own.
            (
                "4242 (ladder (x) y) S 1 2 3 4 5 6 7 8 9 10 250 40 0 0 20",
                Some((250, 40)),
            ),
            (
                "1 (init) S 0 1 1 0 -1 4194560 9 0 0 0 7 3 0 0",
                Some((7, 3)),
            ),
            ("1 (init) S 0 1", None),
            ("no name here", None),
            ("1 (init) S 0 1 1 0 -1 4194560 9 0 0 0 seven 3", None),
        ];
        for (stat, want) in table {
            assert_eq!(parse_cpu_ticks(stat), want, "{stat}");
        }
    }

    #[test]
    fn cpu_use_is_per_match_with_the_kernel_share() {
        let used = cpu_use(Some((100, 50)), Some((400, 150)), 200).expect("both readings");
        // 300 + 100 ticks = 4 s over 200 matches.
        assert!((used.per_match_ms - 20.0).abs() < 1e-9, "{used:?}");
        assert!((used.system_share - 0.25).abs() < 1e-9, "{used:?}");
        assert_eq!(cpu_use(None, Some((1, 1)), 1), None);
        // A reading that went backwards is no reading.
        assert_eq!(cpu_use(Some((5, 5)), Some((4, 5)), 1), None);
    }

    #[test]
    fn step_times_are_read_from_the_exposition_per_settled_match() {
        let metrics = LadderMetrics::default();
        metrics.step(Step::Publish, Duration::from_millis(3));
        metrics.step(Step::Publish, Duration::from_millis(5));
        metrics.step(Step::Settle, Duration::from_micros(500));
        let sums = step_sums_s(&metrics.render(&Default::default()));
        assert!((sums["publish"] - 0.008).abs() < 1e-9, "{sums:?}");
        assert!((sums["settle"] - 0.000_5).abs() < 1e-9, "{sums:?}");
        assert_eq!(sums["claim"], 0.0, "every step is exposed from the start");
        assert_eq!(sums.len(), Step::ALL.len(), "{sums:?}");
        assert!((per_match_ms(Duration::from_secs_f64(sums["publish"]), 4) - 2.0).abs() < 1e-9);
        assert_eq!(per_match_ms(Duration::from_secs(1), 0), 0.0);
    }

    #[test]
    fn this_process_has_cpu_ticks_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(process_cpu_ticks().is_some());
        }
    }
}
