//! Prometheus metrics of `referee serve`: matches running and ended, decisions
//! and substitutions by cause, decision latency, model tokens, WASM instances
//! by how they were allocated (a growing `on_demand` count means the instance
//! pool is smaller than the load); served in the
//! OpenMetrics text format (prometheus-client) on a small separate HTTP
//! listener (`--metrics-listen`).

use duel_replays::{SideRecord, SourceName};
use duel_sandbox::SandboxStats;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Upper bounds of the decision latency histogram, in milliseconds.
const LATENCY_BUCKETS_MS: [f64; 10] = [
    1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 100.0, 500.0, 1_000.0, 10_000.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)] // label values are written as the variants' names
enum MatchState {
    started,
    finished,
    aborted,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabel {
    state: MatchState,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabel {
    source: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AllocationLabel {
    allocation: &'static str,
}

/// `wasm_instances_made{allocation="pool"|"on_demand"}`: the WASM instances a
/// process made so far, read from its sandboxes' own counters at each scrape.
/// The referee's and the ladder's registries both carry it.
#[derive(Clone, Debug)]
pub struct WasmInstances {
    /// From the pool, on demand.
    made: [Gauge; 2],
}

impl WasmInstances {
    /// Registers the family (both series from the start) in `registry`.
    pub fn register(registry: &mut Registry, help: &str) -> WasmInstances {
        let family = Family::<AllocationLabel, Gauge>::default();
        registry.register("wasm_instances_made", help, family.clone());
        let made = ["pool", "on_demand"].map(|allocation| {
            family
                .get_or_create(&AllocationLabel { allocation })
                .clone()
        });
        WasmInstances { made }
    }

    /// Copies the sandboxes' counts so far (`MatchHost::wasm_stats`).
    pub fn set(&self, wasm: &SandboxStats) {
        let gauge = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
        self.made[0].set(gauge(wasm.pool_instantiations));
        self.made[1].set(gauge(wasm.on_demand_instantiations));
    }
}

/// The metrics of one server process and the registry that exposes them.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    running: Gauge,
    /// The series of each family, taken once: counting a decision is then
    /// one atomic add, not a lock and a label lookup.
    matches: [Counter; 3],
    decisions: [Counter; 4],
    latency_ms: Histogram,
    model_tokens: Counter,
    wasm_instances: WasmInstances,
}

impl Default for Metrics {
    fn default() -> Metrics {
        let mut registry = Registry::with_prefix("duel");
        let running = Gauge::default();
        let matches = Family::<StateLabel, Counter>::default();
        let decisions = Family::<SourceLabel, Counter>::default();
        let latency_ms = Histogram::new(LATENCY_BUCKETS_MS);
        let model_tokens = Counter::default();
        registry.register(
            "matches_running",
            "Matches being played now",
            running.clone(),
        );
        registry.register(
            "matches",
            "Matches by how they ended (started counts all)",
            matches.clone(),
        );
        registry.register(
            "decisions",
            "Decisions by source (bot, or the substitution's cause)",
            decisions.clone(),
        );
        registry.register(
            "decision_latency_ms",
            "Time from sending an observation to the answer",
            latency_ms.clone(),
        );
        registry.register(
            "model_tokens",
            "Model tokens metered (prompt + completion)",
            model_tokens.clone(),
        );
        let wasm_instances = WasmInstances::register(
            &mut registry,
            "WASM bot instances made since start, by allocation (pool, or on demand when the pool is full)",
        );
        // Every series exists from the start, so that a scrape before the
        // first match already shows them all.
        let matches = [
            MatchState::started,
            MatchState::finished,
            MatchState::aborted,
        ]
        .map(|state| matches.get_or_create(&StateLabel { state }).clone());
        let decisions = SOURCES.map(|source| {
            decisions
                .get_or_create(&SourceLabel {
                    source: source_label(source),
                })
                .clone()
        });
        Metrics {
            registry,
            running,
            matches,
            decisions,
            latency_ms,
            model_tokens,
            wasm_instances,
        }
    }
}

/// The decision sources, in the order of `Metrics::decisions`.
const SOURCES: [SourceName; 4] = [
    SourceName::Bot,
    SourceName::Timeout,
    SourceName::Budget,
    SourceName::Fault,
];

/// The position of `source` in [`SOURCES`].
fn source_index(source: SourceName) -> usize {
    match source {
        SourceName::Bot => 0,
        SourceName::Timeout => 1,
        SourceName::Budget => 2,
        SourceName::Fault => 3,
    }
}

fn source_label(source: SourceName) -> &'static str {
    match source {
        SourceName::Bot => "bot",
        SourceName::Timeout => "timeout",
        SourceName::Budget => "budget",
        SourceName::Fault => "fault",
    }
}

impl Metrics {
    pub fn match_started(&self) {
        self.matches[0].inc();
    }

    pub fn match_finished(&self) {
        self.matches[1].inc();
    }

    pub fn match_aborted(&self) {
        self.matches[2].inc();
    }

    /// One fighter's half of an exchange.
    pub fn side(&self, side: &SideRecord) {
        self.decisions[source_index(side.source)].inc();
        self.model_tokens.inc_by(side.tokens);
        if side.source == SourceName::Budget {
            // Not asked: no latency to record.
            return;
        }
        // Microseconds where the replay has them, so fast bots do not all fall
        // in the first bucket as 0 ms.
        let latency_ms = side
            .latency_us
            .map_or(side.latency_ms as f64, |us| us as f64 / 1_000.0);
        self.latency_ms.observe(latency_ms);
    }

    /// The exposition, with `running` matches in flight now and the WASM
    /// sandboxes' counts so far.
    pub fn render(&self, running: usize, wasm: &SandboxStats) -> String {
        let gauge = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
        self.running.set(gauge(running as u64));
        self.wasm_instances.set(wasm);
        duel_plumbing::metrics::encode(&self.registry)
    }
}
