//! `ladder bench-site` at a tiny scale, so the benchmark cannot rot: seed a
//! SQLite file (50 bots, 500 matches) and a replay store (8 transcripts),
//! check the seeded ladder is consistent, serve it over loopback, and load
//! every page, JSON twin and the newest transcript a few times: each answers
//! 200 and the report names every page.

use crate::common;

use std::process::Command;

use common::TestDb;
use common::cli::{LADDER, start_server, terminate};
use serde_json::Value;

async fn count(db: &sqlx::AnyPool, sql: &str) -> i64 {
    use sqlx::Row;
    let row = sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_one(db)
        .await
        .expect(sql);
    row.try_get::<i64, _>(0).expect(sql)
}

#[tokio::test]
async fn seeds_serves_and_loads_every_page() {
    let db = TestDb::sqlite().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let replays = dir.path().join("replays");
    let seed = Command::new(LADDER)
        .args([
            "bench-site",
            "seed",
            "--db",
            &db.url,
            "--bots",
            "50",
            "--matches",
            "500",
            "--json",
        ])
        .arg("--replays")
        .arg(&replays)
        .output()
        .expect("ladder bench-site seed");
    assert!(
        seed.status.success(),
        "{}",
        String::from_utf8_lossy(&seed.stderr)
    );
    let report: Value = serde_json::from_slice(&seed.stdout).expect("seed JSON");
    assert_eq!(report["bots"], 48, "{report}");
    assert_eq!(report["matches"], 500, "{report}");
    assert_eq!(report["rating_history_rows"], 1000, "{report}");
    assert_eq!(report["transcripts"], 8, "{report}");

    // A consistent ladder: same-class pairs of different owners, W/D/L that
    // add up, a frozen table for the ended season.
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&db.url)
        .await
        .expect("open the seeded file");
    assert_eq!(
        count(
            &pool,
            "SELECT COUNT(*) FROM matches WHERE state = 'settled'"
        )
        .await,
        500
    );
    assert_eq!(
        count(
            &pool,
            "SELECT COUNT(*) FROM matches m JOIN bots a ON a.id = m.bot_a JOIN bots b ON b.id = m.bot_b \
             WHERE a.class <> m.class OR b.class <> m.class OR a.owner_id = b.owner_id OR a.id = b.id"
        )
        .await,
        0
    );
    assert_eq!(count(&pool, "SELECT SUM(games) FROM ratings").await, 1000);
    assert_eq!(
        count(&pool, "SELECT SUM(wins) - SUM(losses) FROM ratings").await,
        0
    );
    assert_eq!(count(&pool, "SELECT COUNT(*) FROM standings").await, 48);
    // What the matches' rows say was spent is what the model index says,
    // and the transcripts' heavy matches spent the whole heavy budget.
    assert_eq!(
        count(
            &pool,
            "SELECT COUNT(*) FROM matches m LEFT JOIN match_models mm ON mm.match_id = m.id \
             WHERE m.tokens_a <> COALESCE(mm.tokens, 0) OR m.exchanges IS NULL \
             OR m.round_wins_a IS NULL OR m.rating_change_a IS NULL"
        )
        .await,
        0
    );
    assert_eq!(
        count(
            &pool,
            "SELECT COUNT(*) FROM match_models mm JOIN matches m ON m.id = mm.match_id \
             WHERE m.class = 'heavy' AND m.season_id = 1 AND mm.calls = 24 \
             AND mm.tokens > 500000 AND mm.tokens <= 512000"
        )
        .await,
        8
    );
    assert_eq!(
        count(
            &pool,
            "SELECT SUM(tokens) - (SELECT SUM(tokens) FROM match_models) FROM ratings"
        )
        .await,
        0,
        "the season sums count the transcripts' spend"
    );
    assert_eq!(
        count(&pool, "SELECT COUNT(*) FROM seasons WHERE ended_ms IS NULL").await,
        1
    );
    // A second seed refuses the filled database.
    let again = Command::new(LADDER)
        .args([
            "bench-site",
            "seed",
            "--db",
            &db.url,
            "--bots",
            "50",
            "--matches",
            "5",
        ])
        .output()
        .expect("ladder bench-site seed");
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("needs an empty database"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );

    pool.close().await;

    let mut server = start_server(
        &db.url,
        dir.path(),
        &["--http", "127.0.0.1:0", "--workers", "0"],
    );
    let url = server.http.clone().expect("the site runs");
    let pid = server.child.id().to_string();
    let load = Command::new(LADDER)
        .args([
            "bench-site",
            "load",
            "--url",
            &url,
            "--db",
            &db.url,
            "--requests",
            "3",
            "--concurrency",
            "2",
            "--watchers",
            "5",
            "--server-pid",
            &pid,
            "--json",
        ])
        .output()
        .expect("ladder bench-site load");
    assert!(
        load.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&load.stdout),
        String::from_utf8_lossy(&load.stderr)
    );
    let report: Value = serde_json::from_slice(&load.stdout).expect("load JSON");
    let pages = report["pages"].as_array().expect("pages");
    assert_eq!(
        pages.len(),
        24,
        "twelve pages, each in HTML and JSON: {report}"
    );
    for page in pages {
        assert_eq!(page["errors"], 0, "{page}");
        assert_eq!(page["requests"], 3, "{page}");
        assert!(page["p99_ms"].as_f64().expect("p99") > 0.0, "{page}");
        assert!(page["body_bytes"].as_u64().expect("bytes") > 0, "{page}");
    }
    let names: Vec<&str> = pages
        .iter()
        .filter_map(|page| page["page"].as_str())
        .collect();
    for expected in [
        "home",
        "standings p1",
        "bot (chart)",
        "head-to-head",
        "match",
        "matches p10",
        "matches bot won",
        "win cost (class)",
        "TV",
        "transcript (withheld)",
        "transcript (heavy)",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let formats: Vec<&str> = pages
        .iter()
        .filter_map(|page| page["format"].as_str())
        .collect();
    assert_eq!(
        formats.iter().filter(|format| **format == "json").count(),
        12
    );
    // Before its season ends a transcript is a page that says when it will
    // be public, answered 404 (and measured as such, not as an error).
    for withheld in pages
        .iter()
        .filter(|page| page["page"] == "transcript (withheld)")
    {
        assert_eq!(withheld["status"], 404, "{withheld}");
    }
    // The transcript is public (its season ended) and as large as a heavy
    // fighter's whole budget makes it.
    let transcript = pages
        .iter()
        .find(|page| page["page"] == "transcript (heavy)" && page["format"] == "json")
        .expect("transcript page");
    assert!(
        transcript["path"]
            .as_str()
            .expect("path")
            .ends_with("/transcript"),
        "{transcript}"
    );
    assert!(
        transcript["body_bytes"].as_u64().expect("bytes") > 1_500_000,
        "{transcript}"
    );
    // The bot page is the busiest bot's, with its chart.
    let bot = pages
        .iter()
        .find(|page| page["page"] == "bot (chart)" && page["format"] == "html")
        .expect("bot page");
    assert!(
        bot["path"]
            .as_str()
            .expect("path")
            .starts_with("/bots/bot-"),
        "{bot}"
    );
    // The watchers: measured once Duel TV serves /tv, else said why not.
    let sse = &report["sse"];
    let status = sse["status"].as_str().expect("sse status");
    if status == "measured" {
        assert_eq!(sse["watchers_connected"], 5, "{sse}");
        assert!(sse["rss_after_kib"].as_u64().is_some(), "{sse}");
    } else {
        assert!(status.contains("needs Duel TV"), "{sse}");
    }
    terminate(&mut server.child, "ladder serve").await;
}
