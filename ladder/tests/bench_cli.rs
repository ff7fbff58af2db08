//! `ladder bench` through the binary on a fresh database: it settles every
//! match it accepted, publishes one replay file per match and no index files,
//! and ends with a clean `ledger check`. On a SQLite file and on PostgreSQL.

mod common;

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
