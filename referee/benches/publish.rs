//! Figures of public replays (docs/perf/replays.md): bytes per replay, replays
//! served per second from the local store, verification time per replay, each
//! beside a bare baseline measured in the same run.
//!
//! Run: `cargo bench -p duel-referee --bench publish`

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use duel_referee::builtin::BuiltinFighter;
use duel_referee::publish::{self, LiveFeeds, PublishState, RateConfig};
use duel_referee::verify::verify_replay;
use duel_referee::{BotSpec, BuiltinSpec, MatchConfig, run_bare_match};
use duel_replays::store::{ReplayStore, compress};
use duel_replays::{Replay, SigningKey, check_signature};
use duel_rules::WeightClass;

fn builtin(text: &str) -> BuiltinSpec {
    match BotSpec::parse(text) {
        Ok(BotSpec::Builtin(spec)) => spec,
        other => panic!("{text}: {other:?}"),
    }
}

fn config(id: &str, seed: u64) -> MatchConfig {
    MatchConfig::new(
        id.to_owned(),
        "2026-06-01T12:00:00Z".to_owned(),
        WeightClass::Middle,
        seed,
    )
}

/// A typical match (two rounds of mixed play) and the longest one (three full
/// rounds of 12 exchanges), both signed.
fn matches() -> [(&'static str, Replay, [BuiltinFighter; 2]); 2] {
    let key = SigningKey::from_bytes(&[42; 32]);
    let typical_specs =
        [builtin("builtin:counter"), builtin("builtin:random")].map(BuiltinFighter::new);
    let longest_specs =
        [builtin("builtin:block"), builtin("builtin:block")].map(BuiltinFighter::new);
    let mut typical = run_bare_match(
        config("typical", 21),
        [&typical_specs[0], &typical_specs[1]],
    );
    let mut longest = run_bare_match(config("longest", 1), [&longest_specs[0], &longest_specs[1]]);
    duel_replays::sign(&mut typical, &key).expect("signs");
    duel_replays::sign(&mut longest, &key).expect("signs");
    [
        ("typical", typical, typical_specs),
        ("longest", longest, longest_specs),
    ]
}

fn sizes() {
    for (name, replay, _) in matches() {
        let pretty = replay.to_json_pretty();
        let compact = serde_json::to_vec(&replay).expect("json");
        let zstd = compress(pretty.as_bytes()).expect("zstd");
        println!(
            "replay size {name}: {} exchanges; pretty JSON {} B, compact JSON {} B, zstd (as stored) {} B ({:.1}x)",
            replay.exchanges().count(),
            pretty.len(),
            compact.len(),
            zstd.len(),
            pretty.len() as f64 / zstd.len() as f64
        );
    }
}

fn verification(c: &mut Criterion) {
    sizes();
    let mut group = c.benchmark_group("verify");
    for (name, replay, specs) in matches() {
        let bytes = replay.to_json_pretty().into_bytes();
        group.bench_function(format!("{name}/bare-match (baseline)"), |b| {
            b.iter(|| run_bare_match(config(name, replay.seed), [&specs[0], &specs[1]]))
        });
        group.bench_function(format!("{name}/parse"), |b| {
            b.iter(|| Replay::from_slice(black_box(&bytes)).expect("parses"))
        });
        group.bench_function(format!("{name}/signature"), |b| {
            b.iter(|| {
                check_signature(black_box(&bytes), None)
                    .expect("parses")
                    .expect("valid")
            })
        });
        group.bench_function(format!("{name}/rules+bots"), |b| {
            b.iter(|| {
                verify_replay(black_box(&replay))
                    .expect("checkable")
                    .expect("verifies")
            })
        });
        group.bench_function(format!("{name}/full (parse+signature+rules+bots)"), |b| {
            b.iter(|| {
                let parsed = Replay::from_slice(black_box(&bytes)).expect("parses");
                check_signature(&bytes, None)
                    .expect("parses")
                    .expect("valid");
                verify_replay(&parsed)
                    .expect("checkable")
                    .expect("verifies")
            })
        });
    }
    group.finish();
}

/// Requests per measured batch, and how many are in flight at once.
const BATCH_REQUESTS: u64 = 512;
const IN_FLIGHT: usize = 16;

async fn fetch_batch(client: &reqwest::Client, urls: &Arc<Vec<String>>, accept_zstd: bool) {
    let per_task = BATCH_REQUESTS as usize / IN_FLIGHT;
    let mut tasks = Vec::new();
    for task in 0..IN_FLIGHT {
        let client = client.clone();
        let urls = Arc::clone(urls);
        tasks.push(tokio::spawn(async move {
            for index in 0..per_task {
                let url = &urls[(task * per_task + index) % urls.len()];
                let mut request = client.get(url);
                if accept_zstd {
                    request = request.header("accept-encoding", "zstd");
                }
                let response = request.send().await.expect("request");
                assert!(response.status().is_success());
                black_box(response.bytes().await.expect("body"));
            }
        }));
    }
    for task in tasks {
        task.await.expect("task");
    }
}

fn serving(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let folder = tempfile::tempdir().expect("temp dir");
    let store = ReplayStore::open(&folder.path().display().to_string()).expect("store");
    let [(_, typical, _), _] = matches();
    let typical_json = typical.to_json_pretty();
    // 64 distinct replays so the page cache, not one hot file, is measured.
    let ids: Vec<String> = (0..64).map(|index| format!("serve-{index}")).collect();
    runtime.block_on(async {
        for id in &ids {
            let mut replay = typical.clone();
            replay.match_id = id.clone();
            store.put(&replay).await.expect("put");
        }
    });
    let key = SigningKey::from_bytes(&[42; 32]);
    let state = PublishState::new(
        store,
        key.verifying_key(),
        LiveFeeds::new(),
        RateConfig::default(),
    );
    let bare_body: &'static str = Box::leak(typical_json.into_boxed_str());
    let app = publish::router(state).route(
        "/bare",
        axum::routing::get(
            move || async move { ([("content-type", "application/json")], bare_body) },
        ),
    );
    let address = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        tokio::spawn(async move {
            axum::serve(
                listener,
                app.into_make_service_with_connect_info::<std::net::SocketAddr>(),
            )
            .await
            .expect("serve")
        });
        address
    });
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(IN_FLIGHT)
        .build()
        .expect("client");
    let replay_urls = Arc::new(
        ids.iter()
            .map(|id| format!("http://{address}/replays/{id}"))
            .collect::<Vec<_>>(),
    );
    let bare_urls = Arc::new(vec![format!("http://{address}/bare")]);

    let mut group = c.benchmark_group("serve");
    group.throughput(Throughput::Elements(BATCH_REQUESTS));
    group.measurement_time(Duration::from_secs(8));
    group.sample_size(20);
    for (name, urls, zstd) in [
        ("bare-static-json (baseline)", &bare_urls, false),
        ("local-store/zstd", &replay_urls, true),
        ("local-store/plain", &replay_urls, false),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                let start = Instant::now();
                for _ in 0..iterations {
                    runtime.block_on(fetch_batch(&client, urls, zstd));
                }
                start.elapsed()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, verification, serving);
criterion_main!(benches);
