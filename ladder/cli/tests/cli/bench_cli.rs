//! `ladder bench` through the binary on a fresh database: it settles every
//! match it accepted, publishes one replay file per match and no index files,
//! and ends with a clean `ledger check`. On a SQLite file and on PostgreSQL.

use crate::common;

use std::process::Command;

use common::TestDb;
use common::cli::LADDER;

const MATCHES: usize = 30;

async fn bench_settles_and_keeps_the_books(db: &TestDb) {
    let dir = tempfile::tempdir().expect("temp dir");
    let replays = dir.path().join("replays");
    let output = Command::new(LADDER)
        .args(["bench", "--db", &db.url, "--matches", &MATCHES.to_string()])
        .args(["--workers", "2", "--replays-dir"])
        .arg(&replays)
        .output()
        .expect("run ladder bench");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains(&format!("{MATCHES} matches, 2 workers: accepted ")),
        "{stdout}"
    );
    assert!(stdout.contains("settled "), "{stdout}");
    // Linux: the settle phase's CPU per match, and the kernel's share of it.
    assert!(
        stdout.contains(" ms of CPU per match (this process, user + system), ")
            && stdout.contains("% of it in the kernel\n"),
        "{stdout}"
    );
    // Where the workers' wall clock went, step by step: the I/O steps take
    // time, and the steps of all workers fit in the workers' time.
    let steps_line = stdout
        .lines()
        .find_map(|line| line.strip_prefix("worker time per match, in ms of wall clock: "))
        .unwrap_or_else(|| panic!("no step line in {stdout}"));
    let (steps, totals) = steps_line.split_once(" (sum ").expect("a sum");
    let step_ms = |name: &str| -> f64 {
        steps
            .split(", ")
            .find_map(|step| step.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {steps_line}"))
    };
    for step in ["claim", "lease check", "publish", "settle"] {
        assert!(step_ms(step) > 0.0, "{step}: {steps_line}");
    }
    let number = |text: &str| -> f64 { text.parse().unwrap_or_else(|_| panic!("{text:?}")) };
    let (sum, rest) = totals.split_once(';').expect("sum; have");
    let have = rest
        .trim_end_matches(')')
        .rsplit(' ')
        .next()
        .expect("workers' time");
    assert!(
        number(sum) <= number(have) + 0.02,
        "the steps add up to more than the workers had: {steps_line}"
    );
    // Every settlement went through the batched path (none fell back).
    assert!(
        stdout.contains(&format!("settlements: {MATCHES} in ")) && stdout.contains(", 0 alone\n"),
        "{stdout}"
    );
    assert!(stdout.ends_with("ledger check: ok\n"), "{stdout}");
    let files = std::fs::read_dir(replays.join("replays"))
        .expect("replay folder")
        .count();
    assert_eq!(files, MATCHES, "one file per settled match");
    assert!(!replays.join("index").exists(), "no index files");
    let settled = db
        .store
        .match_counts()
        .await
        .expect("counts")
        .into_iter()
        .find(|(state, _)| state.name() == "settled")
        .map_or(0, |(_, count)| count);
    assert_eq!(settled, MATCHES as i64);
}

both_backends!(bench_through_the_binary, bench_settles_and_keeps_the_books);

/// `--json`: one object a script can read, with the same figures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_json_is_one_object_with_every_figure() {
    let db = TestDb::sqlite().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let output = Command::new(LADDER)
        .args(["bench", "--db", &db.url, "--matches", "12", "--json"])
        .arg("--replays-dir")
        .arg(dir.path().join("replays"))
        .output()
        .expect("run ladder bench --json");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
    assert_eq!(report["backend"], "sqlite");
    assert_eq!(report["matches"], 12);
    assert_eq!(report["workers"], 2);
    assert_eq!(report["ledger"], "ok");
    assert_eq!(report["settlements"]["batched"], 12);
    assert_eq!(report["settlements"]["alone"], 0);
    assert!(
        report["settled_per_s"]
            .as_f64()
            .is_some_and(|rate| rate > 0.0)
    );
    for step in [
        "claim",
        "prepare",
        "play",
        "lease_check",
        "logs",
        "publish",
        "settle",
    ] {
        assert!(
            report["step_ms"][step].as_f64().is_some(),
            "{step} in {report}"
        );
    }
    assert!(
        report["step_ms"]["settle"]
            .as_f64()
            .is_some_and(|ms| ms > 0.0)
    );
    if cfg!(target_os = "linux") {
        assert!(
            report["settle_cpu"]["per_match_ms"]
                .as_f64()
                .is_some_and(|ms| ms > 0.0)
        );
    }
    db.cleanup().await;
}

/// A reader that goes away early (`ladder bench | head -1`) ends the output,
/// not the program: no panic, exit 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_pipe_is_not_a_panic() {
    let db = TestDb::sqlite().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut child = Command::new(LADDER)
        .args(["bench", "--db", &db.url, "--matches", "5", "--replays-dir"])
        .arg(dir.path().join("replays"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run ladder bench");
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{:?}: {stderr}", output.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
    db.cleanup().await;
}
