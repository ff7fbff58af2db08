//! Prometheus metrics of `referee serve`: matches running and ended, decisions
//! and substitutions by cause, decision latency, model tokens; served as text on
//! a small separate HTTP listener (`--metrics-listen`).

use std::fmt::Write as _;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use duel_replays::{SideRecord, SourceName};
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// Upper bounds of the decision latency histogram, in milliseconds.
const LATENCY_BUCKETS_MS: [u64; 10] = [1, 2, 5, 10, 25, 50, 100, 500, 1_000, 10_000];

/// Counters of one server process.
#[derive(Debug, Default)]
pub struct Metrics {
    matches_started: AtomicU64,
    matches_finished: AtomicU64,
    matches_aborted: AtomicU64,
    /// By source: bot, timeout, budget, fault.
    decisions: [AtomicU64; 4],
    latency_buckets: [AtomicU64; LATENCY_BUCKETS_MS.len()],
    latency_count: AtomicU64,
    latency_sum_ms: AtomicU64,
    model_tokens: AtomicU64,
}

fn source_index(source: SourceName) -> usize {
    match source {
        SourceName::Bot => 0,
        SourceName::Timeout => 1,
        SourceName::Budget => 2,
        SourceName::Fault => 3,
    }
}

const SOURCE_NAMES: [&str; 4] = ["bot", "timeout", "budget", "fault"];

impl Metrics {
    pub fn match_started(&self) {
        self.matches_started.fetch_add(1, Ordering::Relaxed);
    }

    pub fn match_finished(&self) {
        self.matches_finished.fetch_add(1, Ordering::Relaxed);
    }

    pub fn match_aborted(&self) {
        self.matches_aborted.fetch_add(1, Ordering::Relaxed);
    }

    /// One fighter's half of an exchange.
    pub fn side(&self, side: &SideRecord) {
        self.decisions[source_index(side.source)].fetch_add(1, Ordering::Relaxed);
        self.model_tokens.fetch_add(side.tokens, Ordering::Relaxed);
        if side.source == SourceName::Budget {
            // Not asked: no latency to record.
            return;
        }
        for (bucket, bound) in self.latency_buckets.iter().zip(LATENCY_BUCKETS_MS) {
            if side.latency_ms <= bound {
                bucket.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.latency_count.fetch_add(1, Ordering::Relaxed);
        self.latency_sum_ms
            .fetch_add(side.latency_ms, Ordering::Relaxed);
    }

    /// The Prometheus text exposition.
    pub fn render(&self, running: usize) -> String {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let mut text = String::new();
        let _ = writeln!(
            text,
            "# HELP duel_matches_running Matches being played now."
        );
        let _ = writeln!(text, "# TYPE duel_matches_running gauge");
        let _ = writeln!(text, "duel_matches_running {running}");
        let _ = writeln!(
            text,
            "# HELP duel_matches_total Matches by how they ended (started counts all)."
        );
        let _ = writeln!(text, "# TYPE duel_matches_total counter");
        let _ = writeln!(
            text,
            "duel_matches_total{{state=\"started\"}} {}",
            get(&self.matches_started)
        );
        let _ = writeln!(
            text,
            "duel_matches_total{{state=\"finished\"}} {}",
            get(&self.matches_finished)
        );
        let _ = writeln!(
            text,
            "duel_matches_total{{state=\"aborted\"}} {}",
            get(&self.matches_aborted)
        );
        let _ = writeln!(
            text,
            "# HELP duel_decisions_total Decisions by source (bot, or the substitution's cause)."
        );
        let _ = writeln!(text, "# TYPE duel_decisions_total counter");
        for (name, counter) in SOURCE_NAMES.iter().zip(&self.decisions) {
            let _ = writeln!(
                text,
                "duel_decisions_total{{source=\"{name}\"}} {}",
                get(counter)
            );
        }
        let _ = writeln!(
            text,
            "# HELP duel_decision_latency_ms Time from sending an observation to the answer."
        );
        let _ = writeln!(text, "# TYPE duel_decision_latency_ms histogram");
        for (bound, bucket) in LATENCY_BUCKETS_MS.iter().zip(&self.latency_buckets) {
            let _ = writeln!(
                text,
                "duel_decision_latency_ms_bucket{{le=\"{bound}\"}} {}",
                get(bucket)
            );
        }
        let count = get(&self.latency_count);
        let _ = writeln!(
            text,
            "duel_decision_latency_ms_bucket{{le=\"+Inf\"}} {count}"
        );
        let _ = writeln!(
            text,
            "duel_decision_latency_ms_sum {}",
            get(&self.latency_sum_ms)
        );
        let _ = writeln!(text, "duel_decision_latency_ms_count {count}");
        let _ = writeln!(
            text,
            "# HELP duel_model_tokens_total Model tokens metered (prompt + completion)."
        );
        let _ = writeln!(text, "# TYPE duel_model_tokens_total counter");
        let _ = writeln!(text, "duel_model_tokens_total {}", get(&self.model_tokens));
        text
    }
}

/// Serves `GET /metrics` on `listener` until `shutdown` resolves. `render`
/// produces the current text.
pub async fn serve_metrics(
    listener: TcpListener,
    render: impl Fn() -> String + Clone + Send + Sync + 'static,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "metrics listener cannot accept");
                    continue;
                }
            },
            () = &mut shutdown => return,
        };
        let render = render.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let render = render.clone();
                async move {
                    if request.uri().path() == "/metrics" {
                        hyper::Response::builder()
                            .header("content-type", "text/plain; version=0.0.4")
                            .body(Full::new(Bytes::from(render())))
                    } else {
                        hyper::Response::builder()
                            .status(404)
                            .body(Full::new(Bytes::from_static(b"see /metrics\n")))
                    }
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
