//! Prometheus metrics of `ladder serve` and `ladder worker`: matches accepted,
//! running, settled and voided per class, settlement latency, queue size,
//! worker leases held, the wall-clock time of each step of a worker's pass
//! over a match, decision latency per bot kind, store errors and the WASM
//! instances its workers made (from the pool or on demand), in the
//! OpenMetrics text format (prometheus-client, encoded and served by
//! `duel_plumbing::metrics`). `ladder bench` reads its step times from here.
//!
//! Counters count what this process did (its waves, its workers): with several
//! worker processes, sum them across processes. `duel_ladder_store_matches`
//! is the exception: read from the database (every
//! [`crate::limits::STORE_GAUGES_REFRESH`]), it is the whole ladder's, the same
//! on every process.

use std::sync::Arc;

use duel_referee::grpc::metrics::WasmInstances;
use duel_replays::{FighterKind, Replay};
use duel_rules::WeightClass;
use duel_sandbox::SandboxStats;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::error::{LadderError, ServiceError};

/// Upper bounds of the settlement latency histogram (from a match's
/// acceptance to its settlement), in seconds.
const SETTLEMENT_BUCKETS_S: [f64; 10] = [
    1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0, 3_600.0,
];

/// Upper bounds of the decision latency histogram, in seconds: from a
/// built-in bot's microseconds to an endpoint's seconds (the wall clock is 10 s).
const DECISION_BUCKETS_S: [f64; 12] = [
    0.000_01, 0.000_05, 0.000_1, 0.000_5, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0,
];

/// Upper bounds of the worker step histogram, in seconds: from a lease read
/// beside the writer (tens of microseconds) to a slow endpoint match.
const STEP_BUCKETS_S: [f64; 12] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.05, 0.5, 5.0, 60.0,
];

/// The steps of one worker pass over a match, in order: each is timed into
/// `duel_ladder_worker_step_seconds{step}` (waits count: a queue for the
/// SQLite writer, an `fsync`, which CPU figures cannot show).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Claiming a waiting match under a lease, with its row and both versions.
    Claim,
    /// Building both fighters (WASM components, endpoint checks) and the session.
    Prepare,
    /// Playing the match.
    Play,
    /// Checking the lease is still this worker's before publishing.
    LeaseCheck,
    /// Keeping each side's logs for its owner (bots that logged only).
    Logs,
    /// Signing the replay and putting it into the replay store.
    Publish,
    /// Settling: ratings, stakes, the match row (in a shared batch when
    /// several arrive together).
    Settle,
}

impl Step {
    pub const ALL: [Step; 7] = [
        Step::Claim,
        Step::Prepare,
        Step::Play,
        Step::LeaseCheck,
        Step::Logs,
        Step::Publish,
        Step::Settle,
    ];

    /// The step's label value (`lease_check`).
    pub fn name(self) -> &'static str {
        match self {
            Step::Claim => "claim",
            Step::Prepare => "prepare",
            Step::Play => "play",
            Step::LeaseCheck => "lease_check",
            Step::Logs => "logs",
            Step::Publish => "publish",
            Step::Settle => "settle",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StepLabel {
    step: &'static str,
}

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)] // label values are written as the variants' names
enum MatchState {
    accepted,
    settled,
    voided,
}

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
enum Class {
    light,
    middle,
    heavy,
}

impl From<WeightClass> for Class {
    fn from(class: WeightClass) -> Class {
        match class {
            WeightClass::Light => Class::light,
            WeightClass::Middle => Class::middle,
            WeightClass::Heavy => Class::heavy,
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MatchLabels {
    class: Class,
    state: MatchState,
}

/// A match's state as the database holds it.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
enum StoredState {
    queued,
    running,
    settled,
    voided,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StoredLabels {
    class: Class,
    state: StoredState,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClassLabel {
    class: Class,
}

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
enum Kind {
    builtin,
    wasm,
    endpoint,
}

impl From<FighterKind> for Kind {
    fn from(kind: FighterKind) -> Kind {
        match kind {
            FighterKind::Builtin => Kind::builtin,
            FighterKind::Wasm => Kind::wasm,
            FighterKind::Endpoint => Kind::endpoint,
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: Kind,
}

/// The metrics of one ladder process and the registry that exposes them.
#[derive(Debug)]
pub struct LadderMetrics {
    registry: Registry,
    matches: Family<MatchLabels, Counter>,
    running: Family<ClassLabel, Gauge>,
    queue: Family<ClassLabel, Gauge>,
    leases: Gauge,
    settlement_latency_s: Histogram,
    decision_latency_s: Family<KindLabel, Histogram>,
    step_s: Family<StepLabel, Histogram>,
    store_errors: Counter,
    store_matches: Family<StoredLabels, Gauge>,
    wasm_instances: WasmInstances,
}

impl Default for LadderMetrics {
    fn default() -> LadderMetrics {
        let mut registry = Registry::with_prefix("duel_ladder");
        let metrics = LadderMetrics {
            registry: Registry::default(),
            matches: Family::default(),
            running: Family::default(),
            queue: Family::default(),
            leases: Gauge::default(),
            settlement_latency_s: Histogram::new(SETTLEMENT_BUCKETS_S),
            decision_latency_s: Family::new_with_constructor(|| Histogram::new(DECISION_BUCKETS_S)),
            step_s: Family::new_with_constructor(|| Histogram::new(STEP_BUCKETS_S)),
            store_errors: Counter::default(),
            store_matches: Family::default(),
            wasm_instances: WasmInstances::register(
                &mut registry,
                "WASM bot instances this process made since start, by allocation (its pool, or on demand when every slot was taken)",
            ),
        };
        registry.register(
            "matches",
            "Matches by class and state: accepted (paired by this process's waves), settled and voided (by its workers)",
            metrics.matches.clone(),
        );
        registry.register(
            "matches_running",
            "Matches this process's workers are playing now, by class",
            metrics.running.clone(),
        );
        registry.register(
            "queue_size",
            "Bots left unpaired after the last pairing wave (queued and ready active bots), by class",
            metrics.queue.clone(),
        );
        registry.register(
            "worker_leases",
            "Match leases this process's workers hold now",
            metrics.leases.clone(),
        );
        registry.register(
            "settlement_latency_seconds",
            "Time from a match's acceptance to its settlement",
            metrics.settlement_latency_s.clone(),
        );
        registry.register(
            "decision_latency_seconds",
            "How long bots took to decide, per decision of the matches this process's workers played, by bot kind",
            metrics.decision_latency_s.clone(),
        );
        registry.register(
            "worker_step_seconds",
            "Wall-clock time of each step of this process's workers' passes over a match (claim, prepare, play, lease_check, logs, publish, settle)",
            metrics.step_s.clone(),
        );
        registry.register(
            "store_errors",
            "Worker passes and pairing waves that failed on the database",
            metrics.store_errors.clone(),
        );
        registry.register(
            "store_matches",
            "Matches of the running season (else the last ended) by class and state, read from the database: the whole ladder's, the same on every process (the counters above are this process's own)",
            metrics.store_matches.clone(),
        );
        // Every series exists from the start: a scrape before the first match
        // already shows them all.
        for class in WeightClass::ALL.map(Class::from) {
            for state in [
                MatchState::accepted,
                MatchState::settled,
                MatchState::voided,
            ] {
                let _ = metrics.matches.get_or_create(&MatchLabels { class, state });
            }
            for state in [
                StoredState::queued,
                StoredState::running,
                StoredState::settled,
                StoredState::voided,
            ] {
                let _ = metrics
                    .store_matches
                    .get_or_create(&StoredLabels { class, state });
            }
            let _ = metrics.running.get_or_create(&ClassLabel { class });
            let _ = metrics.queue.get_or_create(&ClassLabel { class });
        }
        for step in Step::ALL {
            let _ = metrics
                .step_s
                .get_or_create(&StepLabel { step: step.name() });
        }
        for kind in [Kind::builtin, Kind::wasm, Kind::endpoint] {
            let _ = metrics
                .decision_latency_s
                .get_or_create(&KindLabel { kind });
        }
        LadderMetrics {
            registry,
            ..metrics
        }
    }
}

impl LadderMetrics {
    pub fn new() -> Arc<LadderMetrics> {
        Arc::new(LadderMetrics::default())
    }

    fn count(&self, class: WeightClass, state: MatchState, by: u64) {
        self.matches
            .get_or_create(&MatchLabels {
                class: class.into(),
                state,
            })
            .inc_by(by);
    }

    /// A pairing wave of `class`: `accepted` matches made, `waiting` bots left.
    pub fn wave(&self, class: WeightClass, accepted: usize, waiting: usize) {
        self.count(class, MatchState::accepted, accepted as u64);
        self.queue
            .get_or_create(&ClassLabel {
                class: class.into(),
            })
            .set(i64::try_from(waiting).unwrap_or(i64::MAX));
    }

    /// A worker claimed a match of `class`: running (and its lease held)
    /// until the returned guard drops.
    pub fn claimed(self: &Arc<Self>, class: WeightClass) -> Running {
        self.leases.inc();
        self.running
            .get_or_create(&ClassLabel {
                class: class.into(),
            })
            .inc();
        Running {
            metrics: Arc::clone(self),
            class,
        }
    }

    /// A match of `class` settled, `latency_ms` after its acceptance.
    pub fn settled(&self, class: WeightClass, latency_ms: i64) {
        self.count(class, MatchState::settled, 1);
        self.settlement_latency_s
            .observe(latency_ms.max(0) as f64 / 1_000.0);
    }

    /// A match of `class` was voided (stakes returned).
    pub fn voided(&self, class: WeightClass) {
        self.count(class, MatchState::voided, 1);
    }

    /// A worker spent `elapsed` in `step`.
    pub fn step(&self, step: Step, elapsed: std::time::Duration) {
        self.step_s
            .get_or_create(&StepLabel { step: step.name() })
            .observe(elapsed.as_secs_f64());
    }

    /// Every timed decision of a played match, by the kind of bot that made it.
    pub fn decisions(&self, replay: &Replay) {
        let kinds = replay.fighters.each_ref().map(|fighter| KindLabel {
            kind: fighter.kind.into(),
        });
        let [a, b] = kinds
            .each_ref()
            .map(|kind| self.decision_latency_s.get_or_create(kind).clone());
        for exchange in replay.rounds.iter().flat_map(|round| &round.exchanges) {
            for (side, histogram) in [(&exchange.a, &a), (&exchange.b, &b)] {
                if let Some(latency_us) = side.latency_us {
                    histogram.observe(latency_us as f64 / 1_000_000.0);
                }
            }
        }
    }

    /// The database's match counts (`ladder status`'s classes) into
    /// `duel_ladder_store_matches`.
    pub fn store_counts(&self, classes: &[duel_ladder_core::model::ClassStatus]) {
        for status in classes {
            let class = Class::from(status.class);
            for (state, count) in [
                (StoredState::queued, status.accepted),
                (StoredState::running, status.running),
                (StoredState::settled, status.settled),
                (StoredState::voided, status.voided),
            ] {
                self.store_matches
                    .get_or_create(&StoredLabels { class, state })
                    .set(count);
            }
        }
    }

    /// An error from a worker pass or a wave: counted when the database failed.
    pub fn error(&self, error: &ServiceError) {
        if matches!(error, ServiceError::Ladder(LadderError::Database(_))) {
            self.store_errors.inc();
        }
    }

    /// The exposition, with the WASM sandboxes' counts so far (`wasm`, from
    /// the process's `MatchHost::wasm_stats`).
    pub fn render(&self, wasm: &SandboxStats) -> String {
        self.wasm_instances.set(wasm);
        duel_plumbing::metrics::encode(&self.registry)
    }
}

/// A match being played; dropping it ends it in the gauges.
#[derive(Debug)]
pub struct Running {
    metrics: Arc<LadderMetrics>,
    class: WeightClass,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.metrics.leases.dec();
        self.metrics
            .running
            .get_or_create(&ClassLabel {
                class: self.class.into(),
            })
            .dec();
    }
}
