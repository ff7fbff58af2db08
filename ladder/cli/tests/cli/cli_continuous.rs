//! Continuous play through the `ladder` binary against a real `ladder serve`
//! (`--match-interval-ms`): three owners activate a bot each and the season
//! runs by itself; `ladder status` and `bot show` follow it; `bot deactivate`;
//! after the season's end `standings` serves its frozen table by default and
//! by name, saying how it is sorted; `balance house` for the operator only.
//! On a SQLite file and on PostgreSQL.

use crate::common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::TestDb;
use common::cli::{Cli, init_root, start_server, terminate};

/// How long the server gets to play the matches the test waits for.
const PLAY_DEADLINE: Duration = Duration::from_secs(60);

async fn continuous_through_cli(db: &TestDb) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = |name: &str| -> PathBuf { dir.path().join(name) };
    init_root(&db.url, dir.path(), false);
    let mut server = start_server(&db.url, dir.path(), &["--match-interval-ms", "100"]);
    let cli = Cli {
        server: &server.url.clone(),
    };
    let root = path("root.token");
    let status = cli.ok(&root, &["status"]);
    assert!(status.starts_with("no season yet\n"), "{status}");
    cli.refused(&root, &["standings"], "no season yet");
    // No season: FAILED_PRECONDITION, as ladder.proto documents it.
    let early = common::cli::owner_with_bot(
        &cli,
        dir.path(),
        "early",
        1000,
        "e-block",
        ["--builtin", "builtin:block"],
        None,
    );
    cli.refused(
        &early,
        &["enqueue", "e-block", "--stake", "10"],
        "failed precondition: no season is running",
    );
    cli.ok(&root, &["season", "start", "autumn"]);
    let bots = [
        ("alice", "a-counter", "builtin:counter"),
        ("bob", "b-block", "builtin:block"),
        ("carol", "c-random", "builtin:random"),
    ];
    for (owner, bot, spec) in bots {
        let token = common::cli::owner_with_bot(
            &cli,
            dir.path(),
            owner,
            1000,
            bot,
            ["--builtin", spec],
            None,
        );
        let activated = cli.ok(&token, &["bot", "activate", bot, "--stake", "10"]);
        assert_eq!(activated, format!("{bot}: active, stake 10\n"));
    }
    let alice = path("alice.token");
    cli.refused(
        &alice,
        &["bot", "activate", "b-block", "--stake", "10"],
        "belongs to bob",
    );
    cli.refused(&alice, &["status"], "permission denied");
    cli.refused(
        &alice,
        &["enqueue", "a-counter", "--stake", "10"],
        "deactivate",
    );
    let shown = cli.json(&alice, &["bot", "show", "a-counter"]);
    assert_eq!(shown["play"], "active");
    assert_eq!(shown["active_stake"], 10);

    // Nobody enqueues: the waves keep the three bots playing.
    let started = Instant::now();
    let settled = loop {
        let status = cli.json(&root, &["status"]);
        let light = &status["classes"][0];
        assert_eq!(light["class"], "light");
        assert_eq!(light["queued"], 0);
        let settled = light["matches"]["settled"].as_i64().unwrap_or(0);
        if settled >= 6 {
            break settled;
        }
        assert!(
            started.elapsed() < PLAY_DEADLINE,
            "only {settled} matches settled: {status}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(settled >= 6);
    let screen = cli.ok(&root, &["status"]);
    assert!(
        screen.starts_with("season autumn (running; id 1)\n"),
        "{screen}"
    );
    assert!(screen.contains("light"), "{screen}");
    assert!(screen.contains(" pairs from "), "{screen}");

    let deactivated = cli.ok(&alice, &["bot", "deactivate", "a-counter"]);
    assert_eq!(deactivated, "a-counter: inactive\n");
    let live = cli.ok(&alice, &["standings"]);
    assert!(
        live.starts_with(
            "season autumn (running; id 1)\nsorted by rating − 2·RD (conservative rating), per class\n"
        ),
        "{live}"
    );
    cli.ok(&root, &["season", "end"]);
    // The workers finish what was accepted before the end.
    let started = Instant::now();
    loop {
        let status = cli.json(&root, &["status"]);
        let light = &status["classes"][0];
        assert_eq!(light["active"], 0, "{status}");
        if light["matches"]["accepted"] == 0 && light["matches"]["running"] == 0 {
            break;
        }
        assert!(started.elapsed() < PLAY_DEADLINE, "{status}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let shown = cli.json(&path("bob.token"), &["bot", "show", "b-block"]);
    assert_eq!(shown["play"], "inactive");
    for args in [
        &["standings"][..],
        &["standings", "--season", "autumn"][..],
        &["standings", "--season", "1"][..],
    ] {
        let frozen = cli.ok(&alice, args);
        assert!(
            frozen.starts_with(
                "season autumn (ended, frozen; id 1)\nsorted by rating − 2·RD (conservative rating), per class\n"
            ),
            "{args:?}: {frozen}"
        );
        assert_eq!(frozen.lines().count(), 5, "{frozen}");
    }
    cli.refused(
        &alice,
        &["standings", "--season", "spring"],
        "season spring",
    );
    let house = cli.json(&root, &["balance", "house"]);
    let ledger = cli.json(&root, &["ledger", "check"]);
    assert_eq!(ledger["ok"], true, "{ledger}");
    assert_eq!(house["available"], ledger["house_credits"], "{house}");
    cli.refused(&alice, &["balance", "house"], "permission denied");
    terminate(&mut server.child, "ladder serve").await;
}

both_backends!(continuous_through_the_cli, continuous_through_cli);
