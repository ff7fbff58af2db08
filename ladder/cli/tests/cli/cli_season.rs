//! A whole season through the `ladder` binary against a real `ladder serve` on
//! loopback: init, owners, credits, built-in bots, stakes, pairing, workers,
//! settlement, standings, season end (frozen), refusals and a clean ledger, then
//! a graceful SIGTERM shutdown. Runs on a SQLite file and on PostgreSQL.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::TestDb;
use common::cli::{Cli, init_root, start_server, terminate};
use serde_json::Value;

/// How long the workers get to play every queued match.
const SETTLE_DEADLINE: Duration = Duration::from_secs(40);

fn states(matches: &Value) -> Vec<String> {
    matches
        .as_array()
        .expect("matches array")
        .iter()
        .map(|game| game["state"].as_str().unwrap_or("").to_owned())
        .collect()
}

async fn season_through_cli(db: &TestDb) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = |name: &str| -> PathBuf { dir.path().join(name) };
    init_root(&db.url, dir.path(), false);
    let mut server = start_server(&db.url, dir.path(), &[]);
    let cli = Cli {
        server: &server.url.clone(),
    };
    let root = path("root.token");
    let (alice, bob) = (path("alice.token"), path("bob.token"));

    assert_eq!(cli.json(&root, &["account", "whoami"])["role"], "operator");
    for (name, token) in [("alice", &alice), ("bob", &bob)] {
        cli.ok(
            &root,
            &[
                "account",
                "create",
                name,
                "--out",
                token.to_str().expect("utf-8"),
            ],
        );
        cli.ok(
            &root,
            &[
                "credits",
                "grant",
                name,
                "1000",
                "--id",
                &format!("seed:{name}"),
            ],
        );
        // A retry of the same grant changes nothing.
        let again = cli.ok(
            &root,
            &[
                "credits",
                "grant",
                name,
                "1000",
                "--id",
                &format!("seed:{name}"),
            ],
        );
        assert!(again.contains("already applied"), "{again}");
    }
    cli.refused(
        &alice,
        &["credits", "grant", "alice", "5"],
        "permission denied",
    );
    cli.refused(&alice, &["season", "start", "mine"], "permission denied");
    cli.refused(
        &root,
        &[
            "bot",
            "register",
            "x",
            "--class",
            "light",
            "--builtin",
            "builtin:block",
        ],
        "owner accounts",
    );
    cli.refused(
        &alice,
        &[
            "bot",
            "register",
            "x",
            "--class",
            "featherweight",
            "--builtin",
            "builtin:block",
        ],
        "weight class",
    );
    // Control characters never reach the store (a NUL cannot be an argument,
    // an escape sequence can).
    cli.refused(
        &alice,
        &[
            "bot",
            "register",
            "red\u{1b}[31m",
            "--class",
            "light",
            "--builtin",
            "builtin:block",
        ],
        "control characters",
    );
    cli.ok(&root, &["rake", "set", "1000"]);
    cli.ok(&root, &["season", "start", "autumn"]);

    let bots = [
        (&alice, "a-counter", "builtin:counter"),
        (&alice, "a-random", "builtin:random"),
        (&bob, "b-block", "builtin:block"),
        (&bob, "b-random", "builtin:random"),
    ];
    for (token, name, spec) in bots {
        let bot = cli.json(
            token,
            &[
                "bot",
                "register",
                name,
                "--class",
                "light",
                "--builtin",
                spec,
            ],
        );
        assert_eq!(bot["current_version"], 1);
    }
    let shown = cli.json(
        &alice,
        &["bot", "version", "a-random", "--builtin", "builtin:counter"],
    );
    assert_eq!(shown["versions"].as_array().map(Vec::len), Some(2));
    cli.refused(&alice, &["bot", "show", "b-block"], "another owner");
    cli.refused(&alice, &["enqueue", "b-block", "--stake", "10"], "");
    assert_eq!(
        cli.json(&alice, &["bot", "list"]).as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(
        cli.json(&root, &["bot", "list"]).as_array().map(Vec::len),
        Some(4)
    );

    // Three rounds: everyone queues, waves pair them, the workers settle.
    let mut expected_matches = 0;
    for round in 0..3 {
        for (token, name, _) in bots {
            cli.ok(
                token,
                &["enqueue", name, "--stake", &(10 + round * 5).to_string()],
            );
        }
        let deadline = Instant::now() + SETTLE_DEADLINE;
        loop {
            let matches = cli.json(&bob, &["matches"]);
            let states = states(&matches);
            let done = states
                .iter()
                .filter(|state| *state == "settled" || *state == "voided")
                .count();
            if done >= expected_matches + 2 && done == states.len() {
                expected_matches = done;
                break;
            }
            assert!(Instant::now() < deadline, "round {round}: {states:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    let matches = cli.json(&alice, &["matches"]);
    assert!(states(&matches).iter().all(|state| state == "settled"));
    // People read the winner's name, scripts the side.
    let lines = cli.ok(&alice, &["matches"]);
    for (game, line) in matches
        .as_array()
        .expect("matches")
        .iter()
        .zip(lines.lines())
    {
        let expected = match game["winner"].as_str() {
            Some("draw") => " drawn".to_owned(),
            Some(side) => format!(
                " winner {} v{}",
                game[side]["bot"].as_str().expect("bot name"),
                game[side]["version"]
            ),
            None => panic!("a settled match has a winner: {game}"),
        };
        assert!(line.contains(&expected), "{expected:?} in {line}");
    }
    let first = &matches[0];
    let id = first["id"].as_str().expect("match id");
    let seen_by_owner = cli.json(&alice, &["matches", "--id", id]);
    assert_eq!(seen_by_owner["ruleset"], "1.0.0");
    assert!(seen_by_owner["replay_path"].is_null(), "{seen_by_owner}");
    let one = cli.json(&root, &["matches", "--id", id]);
    let replay = one["replay_path"].as_str().expect("replay written");
    assert!(Path::new(replay).exists(), "{replay}");

    let live = cli.json(&alice, &["standings"]);
    let standings = live["standings"].as_array().expect("standings");
    assert_eq!(standings.len(), 4);
    let games: i64 = standings
        .iter()
        .map(|row| row["games"].as_i64().unwrap_or(0))
        .sum();
    // Repeats (the same versions playing the same moves again) and a pair's
    // games past its rated ones are not rated.
    let rated = matches
        .as_array()
        .expect("matches")
        .iter()
        .filter(|game| game["not_rated"].is_null())
        .count();
    assert!(rated >= 1 && rated <= expected_matches);
    assert_eq!(games, 2 * rated as i64);
    assert!(live["season"]["ended_ms"].is_null());

    let alice_balance = cli.json(&alice, &["balance"])["available"]
        .as_i64()
        .expect("balance");
    let bob_balance = cli.json(&root, &["balance", "bob"])["available"]
        .as_i64()
        .expect("balance");
    cli.refused(&alice, &["balance", "bob"], "permission denied");
    let ledger = cli.json(&root, &["ledger", "check"]);
    assert_eq!(ledger["ok"], true, "{ledger}");
    assert_eq!(ledger["pending_unresolved"], 0);
    assert_eq!(ledger["credits_in_circulation"], 2000);
    assert_eq!(
        alice_balance + bob_balance + ledger["house_credits"].as_i64().unwrap_or(-1),
        2000
    );

    let ended = cli.ok(&root, &["season", "end"]);
    assert!(ended.contains("frozen"), "{ended}");
    let frozen = cli.json(&bob, &["standings", "--season", "1"]);
    assert!(frozen["season"]["ended_ms"].as_i64().is_some());
    // Ending refits the class from all its rated games, and serve's wave
    // timer may or may not have refitted it since `live` was read: the
    // ratings may move, the games behind them may not. Once frozen, the
    // table no longer changes.
    let tallies = |table: &Value| {
        let mut rows: Vec<(String, i64, i64, i64, i64)> = table["standings"]
            .as_array()
            .expect("standings")
            .iter()
            .map(|row| {
                let count = |field: &str| row[field].as_i64().expect("a count");
                (
                    row["bot"].as_str().expect("bot").to_string(),
                    count("games"),
                    count("wins"),
                    count("draws"),
                    count("losses"),
                )
            })
            .collect();
        rows.sort();
        rows
    };
    assert_eq!(tallies(&frozen), tallies(&live), "frozen as they stood");
    let again = cli.json(&alice, &["standings", "--season", "1"]);
    assert_eq!(frozen["standings"], again["standings"], "frozen stays");
    cli.refused(&alice, &["enqueue", "a-counter", "--stake", "5"], "season");
    assert_eq!(cli.json(&root, &["ledger", "check"])["ok"], true);

    // Graceful shutdown on SIGTERM.
    terminate(&mut server.child, "ladder serve").await;
}

both_backends!(season_through_the_cli, season_through_cli);
