//! `/metrics` of `ladder serve` (on its `--http` listener) and of `ladder
//! worker` (`--metrics-listen`), through the real binaries: after a few ranked
//! matches the expositions parse as Prometheus text, the matches the waves
//! accepted and the worker settled equal what the store says, and no lease is
//! left held. Runs on a SQLite file and on PostgreSQL.

use crate::common;

use std::time::{Duration, Instant};

use common::TestDb;
use common::cli::{Cli, init_root, start_server, terminate};
use prometheus_parse::{Scrape, Value};

const SETTLE_DEADLINE: Duration = Duration::from_secs(90);

/// A loopback port free now (the worker binds it next).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// Scrapes `url` and parses it as Prometheus text.
async fn scrape(http: &reqwest::Client, url: &str) -> Option<Scrape> {
    let response = http.get(url).send().await.ok()?;
    assert_eq!(response.status(), 200, "{url}");
    let text = response.text().await.expect("body");
    let lines = text.lines().map(|line| Ok(line.to_owned()));
    Some(Scrape::parse(lines).expect("the exposition parses as Prometheus text"))
}

/// The sum of the samples of `name` whose labels include `labels`.
fn sum(scrape: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    scrape
        .samples
        .iter()
        .filter(|sample| sample.metric == name)
        .filter(|sample| {
            labels
                .iter()
                .all(|(key, value)| sample.labels.get(key) == Some(*value))
        })
        .map(|sample| match sample.value {
            Value::Counter(value) | Value::Gauge(value) | Value::Untyped(value) => value,
            Value::Histogram(_) | Value::Summary(_) => 0.0,
        })
        .sum()
}

async fn metrics_count_what_the_store_says(db: &TestDb) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = |name: &str| dir.path().join(name);
    init_root(&db.url, dir.path(), true);
    let mut server = start_server(
        &db.url,
        dir.path(),
        &["--http", "127.0.0.1:0", "--workers", "0"],
    );
    let metrics_port = free_port();
    let metrics_listen = format!("127.0.0.1:{metrics_port}");
    let mut worker = common::cli::start_worker(
        &db.url,
        dir.path(),
        2,
        &["--metrics-listen", &metrics_listen],
    );

    let base = server.http.clone().expect("the replay service runs");
    let cli = Cli {
        server: &server.url.clone(),
    };
    let root = path("root.token");
    let (alice, bob) = (path("alice.token"), path("bob.token"));
    for (name, token) in [("alice", &alice), ("bob", &bob)] {
        let token = token.to_str().expect("utf-8");
        cli.ok(&root, &["account", "create", name, "--out", token]);
        cli.ok(&root, &["credits", "grant", name, "500", "--id", name]);
    }
    cli.ok(&root, &["season", "start", "winter"]);
    // Four bots: two matches in the first wave.
    for (token, name, file) in [
        (&alice, "a-counter", "counter"),
        (&alice, "a-pacer", "pacer"),
        (&bob, "b-jabber", "jabber"),
        (&bob, "b-dice", "dice"),
    ] {
        cli.json(
            token,
            &[
                "bot",
                "register",
                name,
                "--class",
                "light",
                "--wasm",
                &common::bots::wasm_path(file),
            ],
        );
        cli.ok(token, &["enqueue", name, "--stake", "10"]);
    }
    let http = reqwest::Client::new();
    let worker_url = format!("http://127.0.0.1:{metrics_port}/metrics");
    let serve_url = format!("{base}/metrics");
    let deadline = Instant::now() + SETTLE_DEADLINE;
    // Until every accepted match is settled and the worker has counted it.
    let (settled, worker_scrape) = loop {
        let accepted = cli.json(&root, &["matches"]);
        let accepted = accepted.as_array().map_or(0, Vec::len);
        let settled = cli.json(&root, &["matches", "--state", "settled"]);
        let settled = settled.as_array().map_or(0, Vec::len);
        if accepted >= 2
            && settled == accepted
            && let Some(scrape) = scrape(&http, &worker_url).await
            && sum(
                &scrape,
                "duel_ladder_matches_total",
                &[("state", "settled")],
            ) == settled as f64
        {
            break (settled, scrape);
        }
        assert!(
            Instant::now() < deadline,
            "matches not settled and counted in time"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // The worker: what it settled, per class too, and nothing still held.
    assert_eq!(
        sum(
            &worker_scrape,
            "duel_ladder_matches_total",
            &[("state", "settled"), ("class", "light")]
        ),
        settled as f64
    );
    assert_eq!(
        sum(
            &worker_scrape,
            "duel_ladder_matches_total",
            &[("state", "voided")]
        ),
        0.0
    );
    assert_eq!(sum(&worker_scrape, "duel_ladder_worker_leases", &[]), 0.0);
    assert_eq!(sum(&worker_scrape, "duel_ladder_matches_running", &[]), 0.0);
    assert_eq!(
        sum(&worker_scrape, "duel_ladder_store_errors_total", &[]),
        0.0
    );
    assert!(
        worker_scrape.samples.iter().any(|sample| sample
            .metric
            .starts_with("duel_ladder_settlement_latency_seconds")),
        "the settlement latency histogram is exposed"
    );
    // Decision latency by bot kind: one observation per timed decision of
    // the matches played, all by WASM bots.
    let mut timed = 0;
    for game in cli
        .json(&root, &["matches", "--state", "settled"])
        .as_array()
        .expect("matches")
    {
        let id = game["id"].as_str().expect("id");
        let body = http
            .get(format!("{base}/replays/{id}"))
            .send()
            .await
            .expect("replay")
            .bytes()
            .await
            .expect("replay body");
        let replay: serde_json::Value = serde_json::from_slice(&body).expect("replay JSON");
        for round in replay["rounds"].as_array().expect("rounds") {
            for exchange in round["exchanges"].as_array().expect("exchanges") {
                timed += ["a", "b"]
                    .iter()
                    .filter(|side| exchange[**side]["latency_us"].is_u64())
                    .count();
            }
        }
    }
    assert!(timed > 0);
    let decisions = |kind: &str| {
        worker_scrape
            .samples
            .iter()
            .filter(|sample| sample.metric == "duel_ladder_decision_latency_seconds")
            .filter(|sample| sample.labels.get("kind") == Some(kind))
            .find_map(|sample| match &sample.value {
                Value::Histogram(buckets) => buckets
                    .iter()
                    .find(|bucket| bucket.less_than.is_infinite())
                    .map(|bucket| bucket.count),
                _ => None,
            })
    };
    assert_eq!(decisions("wasm"), Some(timed as f64));
    assert_eq!(decisions("endpoint"), Some(0.0));
    // Two WASM instances per match, all from the pool sized for the worker's
    // two matches at once.
    assert_eq!(
        sum(
            &worker_scrape,
            "duel_ladder_wasm_instances_made",
            &[("allocation", "pool")]
        ),
        2.0 * settled as f64
    );
    assert_eq!(
        sum(
            &worker_scrape,
            "duel_ladder_wasm_instances_made",
            &[("allocation", "on_demand")]
        ),
        0.0
    );
    // The server: the matches its waves accepted, and the queue left.
    let serve_scrape = scrape(&http, &serve_url).await.expect("serve's /metrics");
    assert_eq!(
        sum(
            &serve_scrape,
            "duel_ladder_matches_total",
            &[("state", "accepted")]
        ),
        settled as f64
    );
    assert_eq!(
        sum(
            &serve_scrape,
            "duel_ladder_queue_size",
            &[("class", "light")]
        ),
        0.0
    );

    // The worker said how it started.
    let log = std::fs::read_to_string(dir.path().join("worker.log")).expect("worker log");
    let started = log
        .lines()
        .find(|line| line.contains("ladder worker started"))
        .unwrap_or_else(|| panic!("no start line in the worker's log:\n{log}"));
    assert!(
        started.contains("workers=2")
            && started.contains("replays=")
            && started.contains("models="),
        "{started}"
    );
    // The store's gauges: the whole ladder's counts on both processes, once
    // each has refreshed them (every 5 s), whoever settled the matches.
    let deadline = Instant::now() + SETTLE_DEADLINE;
    for url in [&serve_url, &worker_url] {
        loop {
            let scrape = scrape(&http, url).await.expect("/metrics");
            let stored = |state: &str| {
                sum(
                    &scrape,
                    "duel_ladder_store_matches",
                    &[("class", "light"), ("state", state)],
                )
            };
            if stored("settled") == settled as f64 {
                assert_eq!(stored("voided"), 0.0, "{url}");
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{url}: the store's gauges never showed {settled} settled"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    terminate(&mut worker.0, "ladder worker").await;
    terminate(&mut server.child, "ladder serve").await;
}
both_backends!(
    metrics_of_serve_and_worker,
    metrics_count_what_the_store_says
);
