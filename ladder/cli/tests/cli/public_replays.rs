//! A ranked match's replay is public, end to end through the `ladder` binary:
//! `ladder init` creates the signing key, `ladder serve --http --workers 0`
//! runs the season (two WASM bots registered with `--wasm`) and a separate
//! `ladder worker` process plays the match, then over real HTTP the replay is listed by
//! season, bot and class, downloaded, its signature checked against the
//! published key and its rules re-simulated, and its viewer page served.
//! Runs on a SQLite file and on PostgreSQL.

use crate::common;

use std::time::{Duration, Instant};

use common::TestDb;
use common::cli::{Cli, init_root, start_server, terminate};
use duel_referee::publish::client;
use duel_replays::{FighterKind, Replay};
use serde_json::Value;

const SETTLE_DEADLINE: Duration = Duration::from_secs(60);

async fn get(http: &reqwest::Client, url: &str) -> (u16, String, Vec<u8>) {
    let response = http.get(url).send().await.expect("GET");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = response.bytes().await.expect("body").to_vec();
    (status, content_type, body)
}

async fn list(http: &reqwest::Client, base: &str, query: &str) -> Vec<String> {
    let (status, _, body) = get(http, &format!("{base}/replays?{query}")).await;
    assert_eq!(status, 200, "{query}: {}", String::from_utf8_lossy(&body));
    let page: Value = serde_json::from_slice(&body).expect("listing JSON");
    page["replays"]
        .as_array()
        .expect("replays")
        .iter()
        .map(|meta| meta["id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

async fn ranked_replay_is_public(db: &TestDb) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = |name: &str| dir.path().join(name);
    // init creates the signing key that serve (and any worker) then loads.
    let said = init_root(&db.url, dir.path(), true);
    assert!(said.contains("created (public key"), "{said}");
    // The match is played by a separate `ladder worker` process sharing the
    // database, the replay store and the key; serve only serves.
    let mut server = start_server(
        &db.url,
        dir.path(),
        &["--http", "127.0.0.1:0", "--workers", "0"],
    );
    let mut worker = common::cli::start_worker(&db.url, dir.path(), 1, &[]);

    let base = server.http.clone().expect("the replay service runs");
    let cli = Cli {
        server: &server.url.clone(),
    };
    let (root, alice, bob) = (path("root.token"), path("alice.token"), path("bob.token"));
    for (name, token) in [("alice", &alice), ("bob", &bob)] {
        let token = token.to_str().expect("utf-8");
        cli.ok(&root, &["account", "create", name, "--out", token]);
        cli.ok(&root, &["credits", "grant", name, "500", "--id", name]);
    }
    cli.ok(&root, &["season", "start", "winter"]);
    // An upload over tonic's default 4 MiB message limit reaches the sandbox,
    // which refuses it with its own one-line reason.
    let big = path("big.wasm");
    let mut bytes = vec![0, 0x61, 0x73, 0x6d, 1, 0, 0, 0];
    bytes.resize(5 * 1024 * 1024, 0);
    std::fs::write(&big, bytes).expect("write");
    cli.refused(
        &alice,
        &[
            "bot",
            "register",
            "big",
            "--class",
            "light",
            "--wasm",
            big.to_str().expect("utf-8"),
        ],
        "this is a core wasm module",
    );
    for (token, name, file) in [
        (&alice, "w-counter", "counter"),
        (&bob, "w-jabber", "jabber"),
    ] {
        let bot = cli.json(
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
        assert_eq!(bot["versions"][0]["kind"], "wasm", "{bot}");
        cli.ok(token, &["enqueue", name, "--stake", "25"]);
    }
    let deadline = Instant::now() + SETTLE_DEADLINE;
    let game = loop {
        let matches = cli.json(&alice, &["matches", "--state", "settled"]);
        if let Some(game) = matches.as_array().and_then(|all| all.first()) {
            break game.clone();
        }
        assert!(Instant::now() < deadline, "no match settled in time");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let id = game["id"].as_str().expect("match id").to_owned();
    // Where the replay is stored is the operator's to know.
    let seen_by_owner = cli.json(&alice, &["matches", "--id", &id]);
    assert!(seen_by_owner["replay_path"].is_null(), "{seen_by_owner}");
    let one = cli.json(&root, &["matches", "--id", &id]);
    let location = one["replay_path"].as_str().expect("replay location");
    assert!(std::path::Path::new(location).exists(), "{location}");
    // One file per replay: the listing below comes from the database.
    assert!(!path("replays").join("index").exists(), "no index files");

    let http = client::http_client().expect("http client");
    // The published key is the one init created.
    let published = client::fetch_public_key(&http, &base)
        .await
        .expect("public key");
    let (key, created) =
        duel_replays::load_or_create_signing_key(&path("signing.key")).expect("key file");
    assert!(!created, "init created the key");
    assert_eq!(published, key.verifying_key());

    // Listed by season and bot, by class, and not under another season or class.
    for query in [
        "season=winter&bot=w-counter",
        "bot=w-jabber",
        "season=winter&class=light",
    ] {
        assert_eq!(
            list(&http, &base, query).await,
            std::slice::from_ref(&id),
            "{query}"
        );
    }
    for query in ["season=spring", "class=heavy", "bot=w-nobody"] {
        assert!(list(&http, &base, query).await.is_empty(), "{query}");
    }

    // Downloaded, signed by the published key, and it obeys the rules.
    let json = client::fetch_replay(&http, &client::replay_url(&base, &id))
        .await
        .expect("download");
    let signature = duel_replays::check_signature(&json, Some(&published)).expect("parses");
    assert!(signature.is_ok(), "{signature:?}");
    let replay = Replay::from_slice(&json).expect("replay");
    let verdict = duel_referee::verify::verify_replay(&replay).expect("verifiable");
    assert!(verdict.is_ok(), "{verdict:?}");
    assert_eq!(replay.season.as_deref(), Some("winter"));
    let mut names: Vec<&str> = replay.fighters.iter().map(|f| &*f.name).collect();
    names.sort_unstable();
    assert_eq!(names, ["w-counter", "w-jabber"]);
    assert!(replay.fighters.iter().all(|f| f.kind == FighterKind::Wasm));
    let winner = game["winner"].as_str().expect("winner");
    assert_eq!(
        winner,
        duel_rules::Winner::from(replay.result.winner).name(),
        "settled as the replay says"
    );

    // The viewer page.
    let (status, content_type, body) = get(&http, &format!("{base}/replays/{id}/view")).await;
    assert_eq!(status, 200);
    assert!(content_type.starts_with("text/html"), "{content_type}");
    assert!(!body.is_empty());
    let (status, _, _) = get(&http, &format!("{base}/replays/no-such-match")).await;
    assert_eq!(status, 404);

    terminate(&mut worker.0, "ladder worker").await;
    terminate(&mut server.child, "ladder serve").await;
}
both_backends!(public_replay_of_a_ranked_match, ranked_replay_is_public);
