//! The replay service over real HTTP on a loopback port: every route, its
//! headers, and its errors; the listener's connection cap and timeouts.

use crate::support;

use std::num::NonZeroU32;
use std::time::Duration;

use duel_referee::publish::{CONTENT_SECURITY_POLICY, HttpLimits, LiveEvent, RateConfig};
use duel_replays::public_key_text;
use duel_replays::store::{ReplayStore, decompress};
use duel_rules::WeightClass;
use reqwest::StatusCode;
use reqwest::header::{
    ACCEPT_ENCODING, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE, ETAG, IF_NONE_MATCH,
    RETRY_AFTER,
};
use support::Server;

struct Fixture {
    _folder: tempfile::TempDir,
    server: Server,
    /// The published JSON of "m-1" (older) and "m-2" (newer).
    published: Vec<Vec<u8>>,
}

fn fixture(rate: RateConfig) -> Fixture {
    fixture_with(rate, HttpLimits::default())
}

fn fixture_with(rate: RateConfig, limits: HttpLimits) -> Fixture {
    let folder = tempfile::tempdir().expect("temp dir");
    let store = ReplayStore::open(&folder.path().display().to_string()).expect("open");
    let key = support::referee_key();
    let replays = [
        support::play(
            "m-1",
            "2026-03-01T12:00:00Z",
            WeightClass::Light,
            5,
            "builtin:random",
            "builtin:counter",
        ),
        support::play(
            "m-2",
            "2026-03-02T12:00:00Z",
            WeightClass::Middle,
            6,
            "builtin:counter",
            "builtin:block",
        ),
    ];
    let mut published = Vec::new();
    let runtime = support::runtime();
    for replay in replays {
        let bytes = support::signed(replay, &key).to_json_pretty().into_bytes();
        runtime.block_on(store.put_json(&bytes)).expect("put");
        published.push(bytes);
    }
    Fixture {
        _folder: folder,
        server: Server::start_with(store, &key, rate, limits),
        published,
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client")
}

/// The headers every answer of the service carries.
fn assert_security_headers(response: &reqwest::Response) {
    let headers = response.headers();
    let csp = headers
        .get("content-security-policy")
        .unwrap_or_else(|| panic!("{} has no CSP", response.url()));
    assert_eq!(csp, CONTENT_SECURITY_POLICY);
    assert!(CONTENT_SECURITY_POLICY.contains("frame-ancestors 'none'"));
    assert!(!CONTENT_SECURITY_POLICY.contains("unsafe-inline"));
    assert_eq!(headers["x-content-type-options"], "nosniff");
}

async fn json_error(response: reqwest::Response, status: StatusCode) -> String {
    assert_eq!(response.status(), status);
    assert_security_headers(&response);
    assert_eq!(response.headers()[CONTENT_TYPE], "application/json");
    let body: serde_json::Value = response
        .bytes()
        .await
        .map(|body| serde_json::from_slice::<serde_json::Value>(&body).expect("JSON body"))
        .expect("JSON error body");
    body["error"].as_str().expect("error string").to_owned()
}

#[test]
fn replays_download_plain_or_zstd_with_etags_and_long_cache() {
    let fixture = fixture(RateConfig::default());
    let url = fixture.server.url("/replays/m-1");
    support::runtime().block_on(async {
        let http = client();
        let plain = http.get(&url).send().await.expect("get");
        assert_eq!(plain.status(), StatusCode::OK);
        assert_eq!(plain.headers()[CONTENT_TYPE], "application/json");
        assert_eq!(
            plain.headers()[CACHE_CONTROL],
            "public, max-age=31536000, immutable"
        );
        assert!(plain.headers().get(CONTENT_ENCODING).is_none());
        assert_security_headers(&plain);
        let etag = plain.headers()[ETAG].to_str().expect("etag").to_owned();
        assert_eq!(plain.bytes().await.expect("body"), fixture.published[0]);

        let zstd = http
            .get(&url)
            .header(ACCEPT_ENCODING, "gzip, zstd")
            .send()
            .await
            .expect("get");
        assert_eq!(zstd.status(), StatusCode::OK);
        assert_eq!(zstd.headers()[CONTENT_ENCODING], "zstd");
        let zstd_etag = zstd.headers()[ETAG].to_str().expect("etag").to_owned();
        assert_ne!(zstd_etag, etag, "each encoding has its own strong ETag");
        let compressed = zstd.bytes().await.expect("body");
        assert!(compressed.len() < fixture.published[0].len() / 3);
        assert_eq!(decompress(&compressed).expect("zstd"), fixture.published[0]);

        let refused = http
            .get(&url)
            .header(ACCEPT_ENCODING, "zstd;q=0")
            .send()
            .await
            .expect("get");
        assert!(
            refused.headers().get(CONTENT_ENCODING).is_none(),
            "q=0 refuses zstd"
        );

        let cached = http
            .get(&url)
            .header(IF_NONE_MATCH, &etag)
            .send()
            .await
            .expect("get");
        assert_eq!(cached.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(cached.headers()[ETAG], etag.as_str());
        assert!(cached.bytes().await.expect("body").is_empty());
        let stale = http
            .get(&url)
            .header(IF_NONE_MATCH, "\"other\"")
            .send()
            .await
            .expect("get");
        assert_eq!(stale.status(), StatusCode::OK);
    });
}

#[test]
fn unknown_and_malformed_replay_ids() {
    let fixture = fixture(RateConfig::default());
    support::runtime().block_on(async {
        let http = client();
        let missing = http
            .get(fixture.server.url("/replays/m-404"))
            .send()
            .await
            .expect("get");
        assert!(
            json_error(missing, StatusCode::NOT_FOUND)
                .await
                .contains("m-404")
        );
        let malformed = http
            .get(fixture.server.url("/replays/bad.id"))
            .send()
            .await
            .expect("get");
        assert!(
            json_error(malformed, StatusCode::BAD_REQUEST)
                .await
                .contains("not a valid replay id")
        );
        let view = http
            .get(fixture.server.url("/replays/m-404/view"))
            .send()
            .await
            .expect("get");
        json_error(view, StatusCode::NOT_FOUND).await;
        let route = http
            .get(fixture.server.url("/no/such/route"))
            .send()
            .await
            .expect("get");
        assert_eq!(
            json_error(route, StatusCode::NOT_FOUND).await,
            "no such route"
        );
    });
}

#[test]
fn listings_page_newest_first_and_filter() {
    let fixture = fixture(RateConfig::default());
    support::runtime().block_on(async {
        let http = client();
        let list = |query: &str| {
            let url = fixture.server.url(&format!("/replays{query}"));
            let http = http.clone();
            async move {
                let response = http.get(url).send().await.expect("list");
                assert_eq!(response.status(), StatusCode::OK);
                let page: serde_json::Value = response
                    .bytes()
                    .await
                    .map(|body| {
                        serde_json::from_slice::<serde_json::Value>(&body).expect("JSON body")
                    })
                    .expect("json");
                page
            }
        };
        let ids = |page: &serde_json::Value| -> Vec<String> {
            page["replays"]
                .as_array()
                .expect("replays")
                .iter()
                .map(|meta| meta["id"].as_str().expect("id").to_owned())
                .collect()
        };
        let all = list("").await;
        assert_eq!(ids(&all), ["m-2", "m-1"]);
        assert_eq!(all["next_cursor"], serde_json::Value::Null);
        assert_eq!(all["replays"][0]["signed"], true);

        let first = list("?limit=1").await;
        assert_eq!(ids(&first), ["m-2"]);
        let cursor = first["next_cursor"].as_str().expect("cursor").to_owned();
        let second = list(&format!("?limit=1&cursor={cursor}")).await;
        assert_eq!(ids(&second), ["m-1"]);

        assert_eq!(ids(&list("?bot=builtin%3Arandom").await), ["m-1"]);
        assert_eq!(ids(&list("?class=middle").await), ["m-2"]);
        assert_eq!(
            ids(&list("?bot=builtin:counter&class=light").await),
            ["m-1"]
        );
        assert!(ids(&list("?season=2026-spring").await).is_empty());

        for (query, expected) in [
            ("?class=huge", "class must be"),
            ("?limit=abc", "limit must be a number"),
            ("?limit=0", "limit must be 1 to"),
            ("?limit=101", "limit must be 1 to"),
            ("?sort=asc", "malformed query"),
            ("?cursor=..%2F..%2Fetc", "cursor"),
            ("?bot=", "bot must be"),
        ] {
            let response = http
                .get(fixture.server.url(&format!("/replays{query}")))
                .send()
                .await
                .expect("get");
            let error = json_error(response, StatusCode::BAD_REQUEST).await;
            assert!(error.contains(expected), "{query}: {error}");
        }
    });
}

#[test]
fn listings_are_rate_limited_per_client() {
    let rate = RateConfig {
        listings_per_minute: NonZeroU32::new(1).expect("non-zero"),
        burst: NonZeroU32::new(3).expect("non-zero"),
    };
    let fixture = fixture(rate);
    support::runtime().block_on(async {
        let http = client();
        for _ in 0..3 {
            let response = http
                .get(fixture.server.url("/replays"))
                .send()
                .await
                .expect("get");
            assert_eq!(response.status(), StatusCode::OK);
        }
        let limited = http
            .get(fixture.server.url("/replays"))
            .send()
            .await
            .expect("get");
        let retry_after: u64 = limited.headers()[RETRY_AFTER]
            .to_str()
            .expect("text")
            .parse()
            .expect("seconds");
        assert!((1..=60).contains(&retry_after), "{retry_after}");
        assert!(
            json_error(limited, StatusCode::TOO_MANY_REQUESTS)
                .await
                .contains("too many")
        );
        // Downloads are not listings: still served.
        let download = http
            .get(fixture.server.url("/replays/m-1"))
            .send()
            .await
            .expect("get");
        assert_eq!(download.status(), StatusCode::OK);
    });
}

#[test]
fn the_viewer_page_its_assets_and_the_public_key() {
    let fixture = fixture(RateConfig::default());
    support::runtime().block_on(async {
        let http = client();
        let page = http
            .get(fixture.server.url("/replays/m-1/view"))
            .send()
            .await
            .expect("get");
        assert_eq!(page.status(), StatusCode::OK);
        assert_eq!(page.headers()[CONTENT_TYPE], "text/html; charset=utf-8");
        assert_security_headers(&page);
        let html = page.text().await.expect("html");
        assert!(html.contains("../../viewer/viewer.js") && html.contains("id=\"hp-a-value\""));
        // Nothing inline that the CSP would block: scripts and styles are files.
        assert!(!html.contains("<script>") && !html.contains("<style") && !html.contains("style="));
        for (file, content_type) in [
            ("viewer.js", "text/javascript; charset=utf-8"),
            ("viewer.css", "text/css; charset=utf-8"),
        ] {
            let asset = http
                .get(fixture.server.url(&format!("/viewer/{file}")))
                .send()
                .await
                .expect("get");
            assert_eq!(asset.status(), StatusCode::OK);
            assert_eq!(asset.headers()[CONTENT_TYPE], content_type);
            assert_security_headers(&asset);
            assert!(!asset.bytes().await.expect("body").is_empty());
        }
        let missing = http
            .get(fixture.server.url("/viewer/secret.txt"))
            .send()
            .await
            .expect("get");
        json_error(missing, StatusCode::NOT_FOUND).await;

        let key = http
            .get(fixture.server.url("/public-key"))
            .send()
            .await
            .expect("get");
        assert_security_headers(&key);
        let key: serde_json::Value = key
            .bytes()
            .await
            .map(|body| serde_json::from_slice::<serde_json::Value>(&body).expect("JSON body"))
            .expect("json");
        assert_eq!(key["alg"], "ed25519");
        assert_eq!(
            key["key"],
            public_key_text(&support::referee_key().verifying_key())
        );
    });
}

/// Reads server-sent events until the stream ends: (event name, JSON data).
async fn read_events(response: reqwest::Response) -> Vec<(String, serde_json::Value)> {
    let text = response.text().await.expect("event stream");
    let mut events = Vec::new();
    for block in text.split("\n\n") {
        let mut name = None;
        let mut data = None;
        for line in block.lines() {
            if let Some(value) = line.strip_prefix("event: ") {
                name = Some(value.to_owned());
            } else if let Some(value) = line.strip_prefix("data: ") {
                data = Some(serde_json::from_str(value).expect("event JSON"));
            }
        }
        if let (Some(name), Some(data)) = (name, data) {
            events.push((name, data));
        }
    }
    events
}

#[test]
fn live_feeds_stream_a_match_in_progress() {
    let fixture = fixture(RateConfig::default());
    let replay = support::play(
        "live-1",
        "2026-03-03T12:00:00Z",
        WeightClass::Middle,
        9,
        "builtin:random",
        "builtin:counter",
    );
    let exchanges: Vec<_> = replay
        .exchanges()
        .map(|(round, exchange)| (round, exchange.clone()))
        .collect();
    let half = exchanges.len() / 2;
    support::runtime().block_on(async {
        let http = client();
        let missing = http
            .get(fixture.server.url("/live/live-1"))
            .send()
            .await
            .expect("get");
        assert!(
            json_error(missing, StatusCode::NOT_FOUND)
                .await
                .contains("no live match")
        );

        let publisher = fixture
            .server
            .live
            .start("live-1", LiveEvent::start_of(&replay))
            .expect("start");
        assert!(
            fixture
                .server
                .live
                .start("live-1", LiveEvent::start_of(&replay))
                .is_err(),
            "one feed per match"
        );
        for (round, exchange) in &exchanges[..half] {
            publisher.exchange(*round, exchange, None);
        }
        let live: serde_json::Value = http
            .get(fixture.server.url("/live"))
            .send()
            .await
            .expect("get")
            .bytes()
            .await
            .map(|body| serde_json::from_slice::<serde_json::Value>(&body).expect("JSON body"))
            .expect("json");
        assert_eq!(live["live"], serde_json::json!(["live-1"]));

        // A spectator joins mid-match.
        let response = http
            .get(fixture.server.url("/live/live-1"))
            .send()
            .await
            .expect("get");
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()[CONTENT_TYPE], "text/event-stream");
        // The answer's head came once the feed had subscribed this
        // spectator: what is published from here on reaches it.
        let reader = tokio::spawn(read_events(response));
        for (round, exchange) in &exchanges[half..] {
            publisher.exchange(*round, exchange, None);
        }
        publisher.finish(&replay.result);

        let events = tokio::time::timeout(Duration::from_secs(10), reader)
            .await
            .expect("the stream ends with the match")
            .expect("reader");
        assert_eq!(
            events.len(),
            exchanges.len() + 2,
            "start, every exchange once, end"
        );
        assert_eq!(events[0].0, "start");
        assert_eq!(events[0].1["match_id"], "live-1");
        for (index, (round, exchange)) in exchanges.iter().enumerate() {
            let (name, data) = &events[index + 1];
            assert_eq!(name, "exchange");
            assert_eq!(data["round"], *round);
            assert_eq!(data["exchange"]["number"], exchange.number);
            assert_eq!(data["exchange"]["a"]["hp"], exchange.a.hp);
        }
        let (name, data) = events.last().expect("end");
        assert_eq!(name, "end");
        assert_eq!(
            data["result"]["damage"],
            serde_json::json!(replay.result.damage)
        );

        let gone = http
            .get(fixture.server.url("/live/live-1"))
            .send()
            .await
            .expect("get");
        json_error(gone, StatusCode::NOT_FOUND).await;
        let bad = http
            .get(fixture.server.url("/live/bad.id"))
            .send()
            .await
            .expect("get");
        json_error(bad, StatusCode::BAD_REQUEST).await;
    });
}

/// Every error the service answers is JSON `{"error": …}`, also where axum
/// itself refuses: an id that is not UTF-8 once percent-decoded (a plain-text
/// 400 once) and a method a route does not serve (an empty 405).
#[test]
fn every_http_error_is_json() {
    let fixture = fixture(RateConfig::default());
    support::runtime().block_on(async {
        let http = client();
        let cases = [
            ("GET", "/replays/%FF%FE", StatusCode::BAD_REQUEST, "UTF-8"),
            (
                "GET",
                "/replays/%C3%28/view",
                StatusCode::BAD_REQUEST,
                "UTF-8",
            ),
            ("GET", "/live/%FF", StatusCode::BAD_REQUEST, "UTF-8"),
            ("GET", "/live/%FF/view", StatusCode::BAD_REQUEST, "UTF-8"),
            ("GET", "/viewer/%FF", StatusCode::BAD_REQUEST, "UTF-8"),
            (
                "GET",
                "/replays/bad.id",
                StatusCode::BAD_REQUEST,
                "not a valid replay id",
            ),
            ("GET", "/replays?limit=x", StatusCode::BAD_REQUEST, ""),
            (
                "GET",
                "/no/such/route",
                StatusCode::NOT_FOUND,
                "no such route",
            ),
            (
                "POST",
                "/replays",
                StatusCode::METHOD_NOT_ALLOWED,
                "method not allowed",
            ),
            (
                "DELETE",
                "/replays/m-1",
                StatusCode::METHOD_NOT_ALLOWED,
                "method not allowed",
            ),
        ];
        for (method, path, status, words) in cases {
            let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
            let response = http
                .request(method.clone(), fixture.server.url(path))
                .send()
                .await
                .expect("request");
            let message = json_error(response, status).await;
            assert!(
                message.contains(words),
                "{method} {path}: {message:?} should name {words:?}"
            );
        }
    });
}

/// Limits for the listener tests: `header` and `idle` timeouts, `cap`
/// connections, all of which one client (the test, on 127.0.0.1) may hold.
fn limits(header_ms: u64, idle_ms: u64, cap: usize) -> HttpLimits {
    let cap = std::num::NonZeroUsize::new(cap).expect("cap");
    HttpLimits {
        header_read_timeout: Duration::from_millis(header_ms),
        idle_timeout: Duration::from_millis(idle_ms),
        max_connections: cap,
        max_connections_per_client: cap,
        ..HttpLimits::default()
    }
}

/// Reads from `stream` until the server closes it (or resets it), giving up
/// after `patience`: the bytes read, and whether it was closed.
async fn read_until_closed(
    stream: &mut tokio::net::TcpStream,
    patience: Duration,
) -> (Vec<u8>, bool) {
    use tokio::io::AsyncReadExt;
    let mut received = Vec::new();
    let read = tokio::time::timeout(patience, async {
        let mut buffer = [0u8; 4096];
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => received.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await;
    (received, read.is_ok())
}

/// Sockets the idle-connection test holds: each costs the test process two
/// file descriptors (its end and the server's).
const IDLE_SOCKETS: u64 = 2_000;

#[test]
fn two_thousand_idle_connections_do_not_starve_a_fetch() {
    // Both ends live in this process: raise the soft open-file limit (up to
    // the hard one); with a lower hard limit, hold as many as fit.
    let files = rlimit::increase_nofile_limit(2 * IDLE_SOCKETS + 256).expect("open-file limit");
    let sockets = IDLE_SOCKETS.min(files.saturating_sub(256) / 2);
    assert!(
        sockets >= 500,
        "the open-file limit ({files}) is too low for this test"
    );
    // Timeouts far longer than the test: the idle sockets stay open throughout.
    let fixture = fixture_with(RateConfig::default(), limits(120_000, 120_000, 4_096));
    support::runtime().block_on(async {
        let mut idle = Vec::new();
        for _ in 0..sockets {
            idle.push(
                tokio::net::TcpStream::connect(fixture.server.address)
                    .await
                    .expect("connect"),
            );
        }
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .expect("client");
        for _ in 0..3 {
            let replay = http
                .get(fixture.server.url("/replays/m-2"))
                .send()
                .await
                .expect("a fetch is served while the idle connections are held");
            assert_eq!(replay.status(), StatusCode::OK);
            assert_eq!(replay.bytes().await.expect("body"), fixture.published[1]);
        }
        // The idle connections were accepted and are still open: the server
        // answers on the first and the last of them.
        let last = idle.len() - 1;
        for index in [0, last] {
            use tokio::io::AsyncWriteExt;
            let stream = &mut idle[index];
            stream
                .write_all(b"GET /public-key HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
                .await
                .expect("write");
            let (answer, closed) = read_until_closed(stream, Duration::from_secs(10)).await;
            assert!(
                closed && answer.starts_with(b"HTTP/1.1 200"),
                "{}",
                String::from_utf8_lossy(&answer)
            );
        }
    });
}

#[test]
fn beyond_the_cap_new_connections_wait_until_a_place_frees() {
    // Two places, both taken by clients that send nothing: cut after 1 s.
    let fixture = fixture_with(RateConfig::default(), limits(1_000, 120_000, 2));
    support::runtime().block_on(async {
        let mut idle = Vec::new();
        for _ in 0..2 {
            idle.push(
                tokio::net::TcpStream::connect(fixture.server.address)
                    .await
                    .expect("connect"),
            );
        }
        // The listener accepts in the order clients connected: both idle
        // connections take the places before the fetch's.
        let http = client();
        let fetch = http.get(fixture.server.url("/replays/m-1")).send();
        tokio::pin!(fetch);
        // No place is free before the header timeout cuts an idle client.
        assert!(
            tokio::time::timeout(Duration::from_millis(400), &mut fetch)
                .await
                .is_err(),
            "a third connection was served while two held both places"
        );
        let replay = fetch.await.expect("served once a place freed");
        assert_eq!(replay.status(), StatusCode::OK);
        for stream in &mut idle {
            let (answer, closed) = read_until_closed(stream, Duration::from_secs(10)).await;
            assert!(closed, "the idle connection was cut");
            assert!(!answer.starts_with(b"HTTP/1.1 200"));
        }
    });
}

#[test]
fn an_idle_connection_is_closed_after_the_idle_timeout() {
    // The header timeout is far off: only the idle timeout can close these.
    let fixture = fixture_with(RateConfig::default(), limits(120_000, 300, 16));
    support::runtime().block_on(async {
        use tokio::io::AsyncWriteExt;
        // Kept alive after a response, then idle.
        let mut kept = tokio::net::TcpStream::connect(fixture.server.address)
            .await
            .expect("connect");
        kept.write_all(b"GET /public-key HTTP/1.1\r\nHost: test\r\n\r\n")
            .await
            .expect("write");
        let (answer, closed) = read_until_closed(&mut kept, Duration::from_secs(20)).await;
        assert!(
            answer.starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&answer)
        );
        assert!(closed, "the kept-alive connection was closed once idle");
        // Silent from the start.
        let mut silent = tokio::net::TcpStream::connect(fixture.server.address)
            .await
            .expect("connect");
        let (answer, closed) = read_until_closed(&mut silent, Duration::from_secs(20)).await;
        assert!(
            closed && answer.is_empty(),
            "the silent connection was closed once idle"
        );
    });
}

#[test]
fn a_connection_is_closed_at_its_age_however_busy() {
    // Timeouts far off: only the age can close these. The age is also the
    // grace for the answer in flight.
    let age = Duration::from_millis(800);
    let fixture = fixture_with(
        RateConfig::default(),
        HttpLimits {
            max_connection_age: age,
            ..limits(120_000, 120_000, 16)
        },
    );
    let replay = support::play(
        "live-age",
        "2026-03-03T12:00:00Z",
        WeightClass::Middle,
        9,
        "builtin:random",
        "builtin:counter",
    );
    support::runtime().block_on(async {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // One request every 100 ms on one kept-alive connection: never idle.
        let started = std::time::Instant::now();
        let mut busy = tokio::net::TcpStream::connect(fixture.server.address)
            .await
            .expect("connect");
        let mut received = Vec::new();
        let mut buffer = [0u8; 8192];
        let closed = loop {
            if started.elapsed() > Duration::from_secs(10) {
                break false;
            }
            if busy
                .write_all(b"GET /public-key HTTP/1.1\r\nHost: test\r\n\r\n")
                .await
                .is_err()
            {
                break true;
            }
            match tokio::time::timeout(Duration::from_millis(100), busy.read(&mut buffer)).await {
                Ok(Ok(0) | Err(_)) => break true,
                Ok(Ok(n)) => received.extend_from_slice(&buffer[..n]),
                Err(_) => {}
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let lived = started.elapsed();
        let text = String::from_utf8_lossy(&received);
        let answers = text.matches("HTTP/1.1 200").count();
        assert!(closed, "a busy connection was closed at its age");
        assert!(
            lived >= age && lived < age * 3,
            "closed after {lived:?}, age {age:?}"
        );
        assert!(answers >= 3, "served until its age: {answers} answers");

        // An event stream never ends its answer: cut after age and grace.
        let _publisher = fixture
            .server
            .live
            .start("live-age", LiveEvent::start_of(&replay))
            .expect("start");
        let opened = std::time::Instant::now();
        let response = client()
            .get(fixture.server.url("/live/live-age"))
            .send()
            .await
            .expect("get");
        assert_eq!(response.status(), StatusCode::OK);
        // Cut mid-stream, the chunked body ends in an error: read to it.
        let mut response = response;
        let mut streamed = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), async {
            while let Ok(Some(chunk)) = response.chunk().await {
                streamed.extend_from_slice(&chunk);
            }
        })
        .await
        .expect("the stream was cut");
        let lived = opened.elapsed();
        assert!(
            String::from_utf8_lossy(&streamed).contains("event: start"),
            "the stream carried its history first"
        );
        assert!(
            lived >= age && lived < age * 4,
            "stream cut after {lived:?}, age {age:?}"
        );
    });
}

#[test]
fn headers_sent_slowly_are_cut_after_the_header_read_timeout() {
    // The idle timeout is far off, and bytes keep coming: only the header
    // timeout can cut this client.
    let fixture = fixture_with(RateConfig::default(), limits(500, 120_000, 16));
    support::runtime().block_on(async {
        use tokio::io::AsyncWriteExt;
        let stream = tokio::net::TcpStream::connect(fixture.server.address)
            .await
            .expect("connect");
        let (mut reader, mut writer) = stream.into_split();
        let trickle = tokio::spawn(async move {
            let _ = writer
                .write_all(b"GET /public-key HTTP/1.1\r\nHost: test\r\nX-Slow: ")
                .await;
            // One byte every 50 ms, for at most 20 s.
            for _ in 0..400 {
                if writer.write_all(b"a").await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
        let mut answer = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(20), async {
            use tokio::io::AsyncReadExt;
            let mut buffer = [0u8; 1024];
            loop {
                match reader.read(&mut buffer).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => answer.extend_from_slice(&buffer[..n]),
                }
            }
        })
        .await
        .is_ok();
        assert!(closed, "the slow client was cut");
        assert!(
            !answer.starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&answer)
        );
        assert!(!trickle.is_finished() || trickle.await.is_ok());
    });
}

#[test]
fn security_headers_on_html_json_and_errors() {
    let fixture = fixture(RateConfig::default());
    support::runtime().block_on(async {
        let http = client();
        for (path, status) in [
            ("/replays/m-1/view", StatusCode::OK),
            ("/replays/m-1", StatusCode::OK),
            ("/replays", StatusCode::OK),
            ("/live", StatusCode::OK),
            ("/public-key", StatusCode::OK),
            ("/viewer/viewer.js", StatusCode::OK),
            ("/replays/nope", StatusCode::NOT_FOUND),
            ("/replays/bad.id", StatusCode::BAD_REQUEST),
            ("/no/such/route", StatusCode::NOT_FOUND),
        ] {
            let response = http
                .get(fixture.server.url(path))
                .send()
                .await
                .expect("get");
            assert_eq!(response.status(), status, "{path}");
            assert_security_headers(&response);
        }
        let post = http
            .post(fixture.server.url("/replays"))
            .send()
            .await
            .expect("post");
        assert_eq!(post.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_security_headers(&post);
    });
}
