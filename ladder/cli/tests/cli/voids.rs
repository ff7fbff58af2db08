//! A void names its cause, through the real `ladder serve`: the
//! replay store refuses every write (its temporary folder, where each replay
//! is written first, is a file), so each run of a ranked match fails while
//! publishing its replay; the match runs again after its lease and the third
//! claim voids it. `ladder matches --json`, the match page and its JSON twin
//! then say why, in one line without the server's paths, where before they
//! said only "voided at claim 3 after 2 runs without a result".
//! On a SQLite file and on PostgreSQL.

use crate::common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::TestDb;
use common::cli::{Cli, init_root, start_server, terminate};
use serde_json::Value;

/// Two failed runs, a lease of 1 s after each, and the waves between.
const VOID_DEADLINE: Duration = Duration::from_secs(60);

async fn a_void_names_its_cause(db: &TestDb) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = |name: &str| -> PathBuf { dir.path().join(name) };
    init_root(&db.url, dir.path(), true);
    let mut server = start_server(
        &db.url,
        dir.path(),
        &["--http", "127.0.0.1:0", "--lease-ms", "1000"],
    );
    // The store opened its folders at start; from now on no replay can be
    // written (as root, a read-only folder would not stop the writes).
    let temporary = path("replays").join(".tmp");
    std::fs::remove_dir_all(&temporary).expect("the store's temporary folder");
    std::fs::write(&temporary, b"not a folder").expect("a file in its place");
    let cli = Cli {
        server: &server.url.clone(),
    };
    let root = path("root.token");
    cli.ok(&root, &["season", "start", "autumn"]);
    for (owner, bot, spec) in [
        ("alice", "a-counter", "builtin:counter"),
        ("bob", "b-block", "builtin:block"),
    ] {
        let token = common::cli::owner_with_bot(
            &cli,
            dir.path(),
            owner,
            1000,
            bot,
            ["--builtin", spec],
            None,
        );
        cli.ok(&token, &["enqueue", bot, "--stake", "10"]);
    }
    let started = Instant::now();
    let voided = loop {
        let matches = cli.json(&root, &["matches", "--state", "voided"]);
        if let Some(game) = matches.as_array().and_then(|all| all.first()) {
            break game.clone();
        }
        let all = cli.json(&root, &["matches"]);
        assert!(
            started.elapsed() < VOID_DEADLINE,
            "no match voided in {VOID_DEADLINE:?}: {all}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let cause = voided["last_failure"]
        .as_str()
        .unwrap_or_else(|| panic!("no cause: {voided}"));
    assert!(
        cause.starts_with("publishing the replay failed: ") && cause.contains("Not a directory"),
        "{cause}"
    );
    let server_path = dir.path().display().to_string();
    assert!(
        !cause.contains(&server_path) && !cause.contains('/'),
        "no server path: {cause}"
    );
    assert_eq!(
        voided["note"],
        format!("voided at claim 3 after 2 runs without a result; the last run failed: {cause}"),
        "{voided}"
    );
    assert_eq!(voided["attempts"], 2);
    // The text line says it too, and an owner sees what the operator sees.
    let id = voided["id"].as_str().expect("id").to_owned();
    let alice = path("alice.token");
    let line = cli.ok(&alice, &["matches", "--state", "voided"]);
    assert!(line.contains(cause), "{line}");
    let shown = cli.json(&alice, &["matches", "--id", &id]);
    assert_eq!(shown["note"], voided["note"]);
    assert_eq!(shown["last_failure"], cause);

    // The match page and its JSON twin.
    let base = server.http.clone().expect("the site runs");
    let client = reqwest::Client::new();
    let twin = client
        .get(format!("{base}/api/matches/{id}"))
        .send()
        .await
        .expect("GET the twin")
        .text()
        .await
        .expect("the twin");
    let twin: Value = serde_json::from_str(&twin).expect("JSON");
    assert_eq!(twin["state"], "voided");
    assert_eq!(twin["note"], voided["note"]);
    assert_eq!(twin["last_failure"], cause);
    let page = client
        .get(format!("{base}/matches/{id}"))
        .send()
        .await
        .expect("GET the page")
        .text()
        .await
        .expect("page");
    assert!(
        page.contains("the last run failed: publishing the replay failed: "),
        "{page}"
    );
    // Both stakes came back.
    let balance = cli.json(&alice, &["balance"]);
    assert_eq!(balance["available"], 1000, "{balance}");
    cli.ok(&root, &["ledger", "check"]);
    terminate(&mut server.child, "ladder serve").await;
}
both_backends!(
    a_void_through_the_binary_names_its_cause,
    a_void_names_its_cause
);
