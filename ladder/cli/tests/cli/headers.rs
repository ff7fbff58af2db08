//! Every answer of `ladder serve` over HTTP carries the security headers:
//! every route of the router its `--http` listener serves (the
//! replay service, `/metrics`, the site and its JSON twins, Duel TV,
//! transcripts and the owner's form), walked from a table that is checked
//! complete against the `.route(` calls in the sources, and its error
//! answers: 400, 401, 404, 405, 413 and 429. Before, the transcript routes,
//! the owner form's page and its 413 had none. The OpenAI face on the gRPC
//! listener has them too. On a SQLite file.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::TestDb;
use common::cli::{Cli, init_root, start_server, terminate};
use duel_plumbing::headers::SECURITY_HEADERS;

const PLAY_DEADLINE: Duration = Duration::from_secs(60);

/// Every route `ladder serve --http` serves, as its source names it, and
/// the methods it answers.
const ROUTES: &[(&str, &[&str])] = &[
    // The replay service (referee/src/publish).
    ("/replays", &["GET"]),
    ("/replays/{id}", &["GET"]),
    ("/replays/{id}/view", &["GET"]),
    ("/viewer/{file}", &["GET"]),
    ("/public-key", &["GET"]),
    ("/live", &["GET"]),
    ("/live/{id}", &["GET"]),
    ("/live/{id}/view", &["GET"]),
    // `/metrics` (plumbing).
    ("/metrics", &["GET"]),
    // The site (ladder/site/src/lib.rs).
    ("/", &["GET"]),
    ("/api/home", &["GET"]),
    ("/seasons", &["GET"]),
    ("/api/seasons", &["GET"]),
    ("/seasons/{season}", &["GET"]),
    ("/api/seasons/{season}", &["GET"]),
    ("/seasons/{season}/cost", &["GET"]),
    ("/api/seasons/{season}/cost", &["GET"]),
    ("/bots/{bot}", &["GET"]),
    ("/api/bots/{bot}", &["GET"]),
    ("/bots/{bot}/vs/{opponent}", &["GET"]),
    ("/api/bots/{bot}/vs/{opponent}", &["GET"]),
    ("/matches", &["GET"]),
    ("/api/matches", &["GET"]),
    ("/matches/{id}", &["GET"]),
    ("/api/matches/{id}", &["GET"]),
    ("/site/site.css", &["GET"]),
    // Duel TV (ladder/site/src/tv.rs).
    ("/tv", &["GET"]),
    ("/api/tv", &["GET"]),
    ("/tv/events", &["GET"]),
    ("/tv/now", &["GET"]),
    ("/tv/tv.js", &["GET"]),
    ("/tv/tv.css", &["GET"]),
    // Transcripts and the owner's form (ladder/site/src/transcripts.rs).
    ("/matches/{id}/transcript", &["GET", "POST"]),
    ("/api/matches/{id}/transcript", &["GET"]),
    ("/replays/{id}/transcript", &["GET"]),
];

/// The routes the sources of the HTTP listener's routers declare: every
/// `.route("…"` in the replay service, the site, the ladder service and the
/// plumbing (the OpenAI face is on the gRPC listener, checked apart).
fn declared_routes() -> BTreeSet<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut routes = BTreeSet::new();
    for folder in [
        "referee/src/publish",
        "ladder/site/src",
        "ladder/service/src",
        "plumbing/src",
    ] {
        collect_routes(&root.join(folder), &mut routes);
    }
    routes
}

fn collect_routes(folder: &Path, routes: &mut BTreeSet<String>) {
    let entries =
        std::fs::read_dir(folder).unwrap_or_else(|error| panic!("{}: {error}", folder.display()));
    for entry in entries {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            collect_routes(&path, routes);
            continue;
        }
        if path.extension().is_none_or(|extension| extension != "rs") {
            continue;
        }
        let source = std::fs::read_to_string(&path).expect("source");
        for (at, _) in source.match_indices(".route(") {
            let rest = source[at + ".route(".len()..].trim_start();
            let literal = rest
                .strip_prefix('"')
                .and_then(|rest| rest.split_once('"'))
                .map(|(route, _)| route.to_owned())
                .unwrap_or_else(|| panic!("{}: a route that is not a literal", path.display()));
            routes.insert(literal);
        }
    }
}

#[test]
fn the_table_names_every_route() {
    let table: BTreeSet<String> = ROUTES
        .iter()
        .map(|(route, _)| (*route).to_owned())
        .collect();
    assert_eq!(
        declared_routes(),
        table,
        "a route was added or removed: the table of tests/cli/headers.rs must list it"
    );
}

/// Asserts the security headers on one answer.
fn assert_headers(what: &str, headers: &reqwest::header::HeaderMap) {
    for (name, value) in SECURITY_HEADERS {
        let got = headers.get(name).and_then(|got| got.to_str().ok());
        // `/metrics` keeps its stricter policy.
        if name == "content-security-policy" && got == Some("default-src 'none'") {
            continue;
        }
        assert_eq!(got, Some(value), "{what}: {name}");
    }
}

async fn every_answer_has_its_headers(db: &TestDb) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = |name: &str| -> PathBuf { dir.path().join(name) };
    init_root(&db.url, dir.path(), true);
    let mut server = start_server(
        &db.url,
        dir.path(),
        &[
            "--http",
            "127.0.0.1:0",
            "--match-interval-ms",
            "50",
            "--calls-per-second-per-peer",
            "1",
            "--call-burst-per-peer",
            "20",
        ],
    );
    let cli = Cli {
        server: &server.url.clone(),
    };
    let root = path("root.token");
    cli.ok(&root, &["season", "start", "autumn"]);
    for (owner, bot, spec) in [
        ("alice", "a-counter", "builtin:counter"),
        ("bob", "b-block", "builtin:block"),
    ] {
        common::cli::owner_with_bot(
            &cli,
            dir.path(),
            owner,
            1000,
            bot,
            ["--builtin", spec],
            Some(10),
        );
    }
    let started = Instant::now();
    let id = loop {
        let settled = cli.json(&root, &["matches", "--state", "settled"]);
        if let Some(id) = settled
            .as_array()
            .and_then(|all| all.first())
            .and_then(|game| game["id"].as_str())
        {
            break id.to_owned();
        }
        assert!(started.elapsed() < PLAY_DEADLINE, "no match settled");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let base = server.http.clone().expect("the site runs");
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client");

    // Every route, every method it answers, with real values.
    let mut walked = 0;
    for (route, methods) in ROUTES {
        let url = format!(
            "{base}{}",
            route
                .replace("{id}", &id)
                .replace("{file}", "viewer.js")
                .replace("{season}", "autumn")
                .replace("{bot}", "a-counter")
                .replace("{opponent}", "b-block")
        );
        for method in *methods {
            let request = match *method {
                "POST" => client
                    .post(&url)
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body("token="),
                _ => client.get(&url),
            };
            // Event streams answer their head at once; the body is not read.
            let response = request.send().await.expect("answer");
            let status = response.status().as_u16();
            assert!(status < 500, "{method} {url}: {status}");
            assert_headers(&format!("{method} {route} ({status})"), response.headers());
            walked += 1;
        }
    }
    assert!(walked > ROUTES.len());

    // Error answers: 400, 401, 404, 405, 413 and, past the form's rate, 429.
    let form = format!("{base}/matches/{id}/transcript");
    let post = |body: String| {
        client
            .post(&form)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
    };
    let mut expected = vec![
        (
            400,
            client
                .get(format!("{base}/api/matches?limit=0"))
                .send()
                .await,
        ),
        (
            404,
            client.get(format!("{base}/no/such/route")).send().await,
        ),
        (
            404,
            client
                .get(format!("{base}/matches/no-such-match"))
                .send()
                .await,
        ),
        (
            404,
            client
                .get(format!("{base}/replays/no-such-match"))
                .send()
                .await,
        ),
        (405, client.delete(format!("{base}/matches")).send().await),
        (405, client.post(format!("{base}/replays")).send().await),
        (
            405,
            client
                .put(format!("{base}/matches/{id}/transcript"))
                .send()
                .await,
        ),
        (413, post(format!("token={}", "x".repeat(8 * 1024))).await),
        (401, post("token=dlt_not-a-token".to_owned()).await),
    ];
    // The walk and the answers above spent some of the burst of 20; the rate
    // is one a second.
    let mut refused = None;
    for _ in 0..40 {
        let answer = post("token=dlt_not-a-token".to_owned()).await;
        if answer.as_ref().map(|answer| answer.status().as_u16()).ok() == Some(429) {
            refused = Some(answer);
            break;
        }
    }
    expected.push((429, refused.expect("a 429 after the burst")));
    for (status, answer) in expected {
        let answer = answer.expect("answer");
        let url = answer.url().to_string();
        assert_eq!(answer.status().as_u16(), status, "{url}");
        assert_headers(&format!("{url} ({status})"), answer.headers());
    }

    // The OpenAI face beside the gRPC API: a call without a credential.
    let models = client
        .get(format!("{}/v1/models", server.url))
        .send()
        .await
        .expect("answer");
    assert_eq!(models.status().as_u16(), 401);
    assert_headers("GET /v1/models on the gRPC listener", models.headers());
    terminate(&mut server.child, "ladder serve").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_of_ladder_serve_has_the_security_headers() {
    let db = TestDb::sqlite().await;
    every_answer_has_its_headers(&db).await;
    db.cleanup().await;
}
