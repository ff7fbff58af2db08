//! The metered gateway's cost, paired against its bare baseline: the same
//! OpenAI-compatible upstream on loopback called directly and through the
//! gateway's OpenAI face, alternating call by call (loopback timing swings
//! between runs; only ratios within one run are stable), for prompts of 100
//! to 8,000 o200k tokens; then 256 streamed calls in flight at once and the
//! memory each holds.
//!
//! cargo bench -p duel-referee --bench gateway [-- --quick]
//!
//! Prints one table (docs/perf/grpc.md, "The OpenAI face").

#![allow(clippy::unwrap_used, missing_debug_implementations)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use duel_referee::FighterMeter;
use duel_referee::credentials::Credentials;
use duel_referee::meter::count_tokens;
use duel_rules::Side;
use tokio::runtime::Runtime;

/// The allocator of the `referee` and `ladder` binaries (src/main.rs), so that
/// these figures are theirs.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The upstream's answer: a short completion, as a bot asks for.
const COMPLETION: &str = "JAB. The opponent keeps blocking, so a feint comes next.";

/// A runtime of its own (its own threads), like another process.
fn runtime(threads: usize) -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .unwrap()
}

/// An OpenAI-compatible upstream that answers every call with [`COMPLETION`]
/// after `delay`.
fn start_upstream(runtime: &Runtime, delay: Duration) -> std::net::SocketAddr {
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |body: axum::body::Bytes| async move {
            // Read like a real server would, and answer.
            let _: serde_json::Value = serde_json::from_slice(&body).unwrap();
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            axum::Json(serde_json::json!({
                "id": "chatcmpl-bench",
                "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": COMPLETION}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }))
        }),
    );
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let address = listener.local_addr().unwrap();
    runtime.spawn(async move { axum::serve(listener, app).await });
    address
}

/// The gateway (`serve_inference`, as `referee local` and workers serve it)
/// over `upstream`, with one fighter deciding and a budget no run spends.
struct Gateway {
    base: String,
    token: String,
    meter: FighterMeter,
    credentials: Credentials,
    credential: duel_referee::credentials::Credential,
}

impl Gateway {
    /// Ends the decision and starts the next (a decision may make at most
    /// `MAX_MODEL_CALLS_PER_DECISION` calls), outside any timed call.
    fn next_decision(&mut self) {
        self.meter.settle();
        self.credential = self.credentials.issue("bench", Side::A, self.meter.clone());
        self.token = self.credential.token().to_owned();
    }
}

fn start_gateway(runtime: &Runtime, upstream: std::net::SocketAddr) -> Gateway {
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let address = listener.local_addr().unwrap();
    let credentials = Credentials::new();
    runtime.spawn(duel_referee::grpc::serve_inference(
        listener,
        credentials.clone(),
        std::future::pending(),
    ));
    let gateway = duel_referee::ModelGateway::new(duel_referee::ModelConfig::new(
        format!("http://{upstream}/v1"),
        "bench".to_owned(),
        None,
    ))
    .unwrap();
    duel_referee::meter::warm_up();
    let meter = FighterMeter::new(gateway, 1 << 50);
    let credential = credentials.issue("bench", Side::A, meter.clone());
    Gateway {
        base: format!("http://{address}/v1"),
        token: credential.token().to_owned(),
        meter,
        credentials,
        credential,
    }
}

/// A prompt of about `tokens` o200k tokens, the way a bot writes one (the
/// observation as text), and its exact count.
fn prompt(tokens: u64) -> (String, u64) {
    let line = "Round 2, exchange 7: you have 112 HP and 64 stamina, the opponent 98 HP and 40 stamina; last exchanges JAB/BLOCK, FEINT/BLOCK, HEAVY/DODGE. ";
    let mut text = String::new();
    while count_tokens(&text) < tokens {
        text.push_str(line);
    }
    let counted = count_tokens(&text);
    (text, counted)
}

fn body(prompt: &str, stream: bool) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "model": "bench",
        "messages": [{"role": "system", "content": "Answer with one action."}, {"role": "user", "content": prompt}],
        "max_tokens": 32,
        "stream": stream,
    }))
    .unwrap()
}

async fn call(client: &reqwest::Client, url: &str, token: Option<&str>, body: &[u8]) -> Duration {
    let started = Instant::now();
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_vec());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    let _ = response.bytes().await.unwrap();
    started.elapsed()
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

/// How a run's prompts vary: the same prompt every call (a bot resending its
/// system prompt: the fighter's count cache answers) or a new one each call.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Prompts {
    Repeated,
    Distinct,
}

/// Direct and via the gateway, alternating which goes first, `rounds` times.
fn paired(
    client_runtime: &Runtime,
    gateway: &mut Gateway,
    (upstream, delay_ms): (std::net::SocketAddr, u64),
    (tokens, prompts): (u64, Prompts),
    rounds: usize,
) {
    let (text, counted) = prompt(tokens);
    let client = reqwest::Client::builder().http1_only().build().unwrap();
    let direct_url = format!("http://{upstream}/v1/chat/completions");
    let gateway_url = format!("{}/chat/completions", gateway.base);
    let (mut direct, mut via, mut added) = (Vec::new(), Vec::new(), Vec::new());
    client_runtime.block_on(async {
        for round in 0..rounds + 20 {
            if round % 16 == 0 {
                gateway.next_decision();
            }
            // A distinct prompt starts differently each call (the count cache
            // misses); the upstream reads both alike.
            let body = match prompts {
                Prompts::Repeated => body(&text, false),
                Prompts::Distinct => body(&format!("Call {round}. {text}"), false),
            };
            let (d, g) = if round % 2 == 0 {
                let d = call(&client, &direct_url, None, &body).await;
                (
                    d,
                    call(&client, &gateway_url, Some(&gateway.token), &body).await,
                )
            } else {
                let g = call(&client, &gateway_url, Some(&gateway.token), &body).await;
                (call(&client, &direct_url, None, &body).await, g)
            };
            // The first calls warm connections and caches.
            if round >= 20 {
                direct.push(d);
                via.push(g);
                added.push(g.saturating_sub(d));
            }
        }
    });
    for list in [&mut direct, &mut via, &mut added] {
        list.sort_unstable();
    }
    let (d50, g50, a50) = (
        percentile(&direct, 50),
        percentile(&via, 50),
        percentile(&added, 50),
    );
    let prompts = match prompts {
        Prompts::Repeated => "repeated",
        Prompts::Distinct => "distinct",
    };
    println!(
        "| {delay_ms:>3} | {prompts} | {counted:>5} | {:>8.0} | {:>8.0} | {:>8.0} | {:>8.0} | {:>6.0} | {:>5.2}x |",
        micros(d50),
        micros(percentile(&direct, 99)),
        micros(g50),
        micros(percentile(&via, 99)),
        micros(a50),
        micros(g50) / micros(d50),
    );
}

/// Resident memory of this process, in KiB (Linux: /proc/self/statm).
fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|field| field.parse().ok())
        .unwrap_or(0);
    pages * 4
}

/// `streams` streamed calls in flight at once against a slow upstream, each
/// from a fighter of its own (as 128 matches of two thinking bots would make
/// them): the process's memory while they wait, against before.
fn streams_in_flight(streams: usize) {
    let upstream_runtime = runtime(1);
    let upstream = start_upstream(&upstream_runtime, Duration::from_millis(1_500));
    let gateway_runtime = runtime(1);
    let gateway = start_gateway(&gateway_runtime, upstream);
    let fighters: Vec<_> = (0..streams)
        .map(|index| {
            let meter = FighterMeter::new(gateway.meter.gateway().clone(), 1 << 40);
            let credential =
                gateway
                    .credentials
                    .issue(&format!("bench-{index}"), Side::A, meter.clone());
            (meter, credential)
        })
        .collect();
    let client_runtime = runtime(1);
    let (text, _) = prompt(1_000);
    let body = Arc::new(body(&text, true));
    let url = format!("{}/chat/completions", gateway.base);
    // One warm call first: connection pools, tokenizer, allocator arenas.
    client_runtime.block_on(async {
        let client = reqwest::Client::builder().http1_only().build().unwrap();
        call(&client, &url, Some(&gateway.token), &body).await;
    });
    let before = rss_kib();
    let peak = Arc::new(std::sync::atomic::AtomicU64::new(before));
    let sampler = {
        let peak = Arc::clone(&peak);
        std::thread::spawn(move || {
            for _ in 0..40 {
                peak.fetch_max(rss_kib(), std::sync::atomic::Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let started = Instant::now();
    client_runtime.block_on(async {
        let client = reqwest::Client::builder()
            .http1_only()
            .pool_max_idle_per_host(streams)
            .build()
            .unwrap();
        let mut calls = tokio::task::JoinSet::new();
        for (_, credential) in &fighters {
            let client = client.clone();
            let url = url.clone();
            let token = credential.token().to_owned();
            let body = Arc::clone(&body);
            calls.spawn(async move { call(&client, &url, Some(&token), &body).await });
        }
        while let Some(done) = calls.join_next().await {
            done.unwrap();
        }
    });
    let elapsed = started.elapsed();
    sampler.join().unwrap();
    let peak = peak.load(std::sync::atomic::Ordering::Relaxed);
    let recorded: usize = fighters
        .iter()
        .map(|(meter, _)| meter.settle().calls.len())
        .sum();
    println!(
        "{streams} streamed calls at once (upstream answers in 1.5 s): all done in {:.2} s; \
         process RSS {before} KiB before, {peak} KiB at peak: {:.1} KiB per stream \
         (client, gateway and upstream in one process); {recorded} calls recorded",
        elapsed.as_secs_f64(),
        peak.saturating_sub(before) as f64 / streams as f64,
    );
}

fn main() {
    let quick = std::env::args().any(|arg| arg == "--quick");
    // `cargo bench` passes `--bench`; a filter word is not supported.
    let rounds = if quick { 100 } else { 600 };
    let client_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    println!("gateway overhead, paired: calls each way per row, alternating order (µs)");
    println!(
        "| upstream ms | prompts | prompt tokens | direct p50 | direct p99 | gateway p50 | gateway p99 | added p50 | ratio p50 |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    // An instant upstream shows the gateway's own cost; one answering in
    // 20 ms (a small local model's time to a few tokens) the share of it a
    // bot notices.
    for (delay_ms, runs) in [(0, rounds), (20, rounds / 6)] {
        let upstream_runtime = runtime(1);
        let upstream = start_upstream(&upstream_runtime, Duration::from_millis(delay_ms));
        let gateway_runtime = runtime(1);
        let mut gateway = start_gateway(&gateway_runtime, upstream);
        for prompts in [Prompts::Repeated, Prompts::Distinct] {
            if delay_ms > 0 && prompts == Prompts::Repeated {
                continue;
            }
            for tokens in [100, 1_000, 4_000, 8_000] {
                paired(
                    &client_runtime,
                    &mut gateway,
                    (upstream, delay_ms),
                    (tokens, prompts),
                    runs,
                );
            }
        }
    }
    streams_in_flight(256);
}
