//! Duel TV through a real `ladder serve` (in process, its HTTP service on
//! loopback) over a database with settled ranked matches (built-in bots,
//! played by a worker before the server starts): a watcher of `/tv/events` gets each
//! match's `start`, its exchanges in order and spread over at least the pace,
//! its `end`, then the next match without end; a late watcher first gets the
//! current match's events so far, with no gap and no repeat; `/tv/now` and
//! `/live` agree with the broadcast; the page `/tv` shows the match on air
//! (fighters, ratings, class, season, why, first showing or rerun, links),
//! the queue and the playlist, and no result of the match on air before its
//! end; the widget is served with the security headers. With no settled
//! match, `/tv/now` says so and `/tv/events` stays open on keep-alives (and
//! `/tv` too for a client that does not ask for HTML). Shutdown ends every
//! watcher and the server returns.
//! Runs on a SQLite file and on PostgreSQL.

use crate::common;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::TestDb;
use duel_ladder::gate::ApiLimits;
use duel_ladder::ladder::{Ladder, Registration};
use duel_ladder::model::OwnerQuotas;
use duel_ladder::serve::{Bound, MountSite, MountedSite, ServeConfig, SiteParts};
use duel_ladder::worker::{BuiltinFactory, Worked, WorkerConfig, work_once};
use duel_ladder_site::tv::TvConfig;
use duel_referee::publish::{CONTENT_SECURITY_POLICY, HttpLimits};
use duel_rules::WeightClass;
use serde_json::Value;
use tokio::sync::{oneshot, watch};

/// The test's pace: a match of up to 36 exchanges airs in about a second.
const PACE: Duration = Duration::from_millis(30);
/// The longest wait for one event (a whole match is far shorter).
const EVENT_DEADLINE: Duration = Duration::from_secs(20);

/// A `ladder serve` running in this process.
struct Server {
    base: String,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<duel_ladder::Result<()>>,
}

async fn start_server(db: &TestDb, replays: &std::path::Path, tv: TvConfig) -> Server {
    let loopback: SocketAddr = "127.0.0.1:0".parse().expect("address");
    let config = ServeConfig {
        db_url: db.url.clone(),
        listen: loopback,
        http: Some(loopback),
        replays: replays.display().to_string(),
        signing_key: Arc::new(duel_replays::SigningKey::from_bytes(&[3; 32])),
        // Only the matches settled before: the broadcast is what is under test.
        workers: 0,
        wave_interval: Duration::from_secs(3_600),
        match_interval: Duration::ZERO,
        ranked_openings: None,
        allow_private_endpoints: true,
        host: duel_referee::HostConfig::new(duel_referee::ModelGateway::disabled()),
        public_url: None,
        api: ApiLimits::default(),
        quotas: OwnerQuotas::default(),
        max_concurrent_compiles: NonZeroUsize::MIN,
        http_limits: HttpLimits::default(),
        grpc_limits: duel_plumbing::grpc_listen::GrpcLimits::default(),
        public_site: Some(MountSite(Arc::new(move |parts: SiteParts| {
            let (router, broadcast) = duel_ladder_site::mount(
                parts.reads,
                parts.replays,
                parts.live,
                parts.shutdown,
                tv,
                duel_ladder_core::reveal::RevealPolicy::default(),
                duel_ladder_site::transcripts::FormRate::default(),
            );
            MountedSite {
                router,
                tasks: vec![broadcast],
            }
        }))),
        log_limits: Default::default(),
        transcript_limits: Default::default(),
        lease_ms: duel_ladder::limits::DEFAULT_LEASE_MS,
        reveal: duel_ladder_core::reveal::RevealPolicy::default(),
    };
    let (stop, shutdown) = watch::channel(false);
    let (bound, address) = oneshot::channel::<Bound>();
    let task = tokio::spawn(duel_ladder::serve::serve(config, shutdown, Some(bound)));
    let address = address.await.expect("serve reports its addresses");
    Server {
        base: format!("http://{}", address.http.expect("the HTTP service runs")),
        stop,
        task,
    }
}

impl Server {
    /// Stops the server; it must return promptly although watchers of the
    /// endless `/tv` are still connected.
    async fn shut_down(self) {
        self.stop.send_replace(true);
        let served = tokio::time::timeout(Duration::from_secs(30), self.task)
            .await
            .expect("serve returns promptly on shutdown, watchers of /tv included")
            .expect("serve task");
        served.expect("serve ends cleanly");
    }
}

fn test_tv() -> TvConfig {
    TvConfig {
        exchange_pace: PACE,
        pause_between_matches: PACE * 4,
        idle_poll: Duration::from_millis(50),
        keep_alive: Duration::from_millis(200),
    }
}

/// A season with four built-in light bots paired in one wave and played by
/// a worker publishing into `replays`: the settled matches' ids.
async fn settle_matches(db: &TestDb, replays: &std::path::Path) -> HashSet<String> {
    let ladder = Ladder::new(db.store.clone(), common::host(), true);
    db.store.start_season("winter").await.expect("season");
    let specs = [
        "builtin:counter",
        "builtin:random",
        "builtin:block",
        "builtin:script:HEAVY,JAB,FEINT",
    ];
    for (index, spec) in specs.iter().enumerate() {
        let (owner, _) = db.owner(&format!("owner{index}"), 1_000).await;
        let name = format!("bot{index}");
        ladder
            .register_bot(
                &owner,
                &name,
                "light",
                Registration::Builtin((*spec).to_owned()),
            )
            .await
            .expect("register");
        ladder.enqueue(&owner, &name, 10).await.expect("enqueue");
    }
    let wave = duel_ladder::wave::run_wave(&db.store, WeightClass::Light)
        .await
        .expect("wave");
    assert_eq!(wave.matches.len(), 2, "four new bots make two pairs");
    let store = duel_replays::store::ReplayStore::open(&replays.display().to_string())
        .expect("replay store");
    let key = Arc::new(duel_replays::SigningKey::from_bytes(&[3; 32]));
    let config = WorkerConfig::new(common::host(), store, key);
    loop {
        match work_once(&db.store, &BuiltinFactory, &config)
            .await
            .expect("work")
        {
            Worked::Idle => break,
            Worked::Settled(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    let settled = db
        .store
        .reads()
        .latest_settled(10)
        .await
        .expect("latest settled");
    assert_eq!(settled.len(), 2);
    assert!(
        settled.iter().all(|game| game.replay_path.is_some()
            && game.season == "winter"
            && game.class == WeightClass::Light
            && game.ratings.iter().all(Option::is_some)),
        "{settled:?}"
    );
    settled.into_iter().map(|game| game.id).collect()
}

/// One server-sent event: its name and JSON data, and when it arrived.
#[derive(Debug)]
struct SseEvent {
    kind: String,
    data: Value,
    at: Instant,
}

/// What a read of the stream gave.
#[derive(Debug)]
enum Item {
    Event(SseEvent),
    /// A comment line (a keep-alive).
    Comment,
}

/// A raw server-sent events reader over a streaming HTTP response.
struct Sse {
    response: reqwest::Response,
    buffer: String,
}

impl Sse {
    async fn open(http: &reqwest::Client, url: &str) -> Sse {
        let response = http.get(url).send().await.expect("GET /tv");
        assert_eq!(response.status(), 200, "{url}");
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        assert!(
            content_type.starts_with("text/event-stream"),
            "{content_type}"
        );
        Sse {
            response,
            buffer: String::new(),
        }
    }

    /// The next event or comment, or `None` when the stream ended.
    async fn next_item(&mut self) -> Option<Item> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let (mut kind, mut data, mut comment) = (String::new(), String::new(), false);
                for line in block.lines() {
                    if line.starts_with(':') {
                        comment = true;
                    } else if let Some(value) = line.strip_prefix("event:") {
                        kind = value.trim().to_owned();
                    } else if let Some(value) = line.strip_prefix("data:") {
                        data.push_str(value.trim_start());
                    }
                }
                if kind.is_empty() && comment {
                    return Some(Item::Comment);
                }
                if kind.is_empty() {
                    continue;
                }
                let data = serde_json::from_str(&data).expect("event data is JSON");
                return Some(Item::Event(SseEvent {
                    kind,
                    data,
                    at: Instant::now(),
                }));
            }
            let chunk = tokio::time::timeout(EVENT_DEADLINE, self.response.chunk())
                .await
                .expect("the stream moves within the deadline")
                .expect("the stream reads");
            self.buffer
                .push_str(std::str::from_utf8(&chunk?).expect("UTF-8 events"));
        }
    }

    /// Reads what is left: the stream must end (at shutdown).
    async fn drain(&mut self) {
        while self.next_item().await.is_some() {}
    }

    /// The next event, skipping keep-alives.
    async fn next_event(&mut self) -> SseEvent {
        loop {
            match self.next_item().await.expect("/tv never ends while served") {
                Item::Event(event) => return event,
                Item::Comment => {}
            }
        }
    }
}

/// The match ids the home page's and `/matches`' twins list.
async fn listed_ids(http: &reqwest::Client, base: &str) -> HashSet<String> {
    let home = get_json(http, &format!("{base}/api/home")).await;
    let matches = get_json(http, &format!("{base}/api/matches")).await;
    [&home["latest"]["items"], &matches["matches"]["items"]]
        .into_iter()
        .flat_map(|items| items.as_array().cloned().unwrap_or_default())
        .filter_map(|line| line["id"].as_str().map(str::to_owned))
        .collect()
}

async fn get_json(http: &reqwest::Client, url: &str) -> Value {
    let response = http.get(url).send().await.expect("GET");
    assert_eq!(response.status(), 200, "{url}");
    serde_json::from_slice(&response.bytes().await.expect("body")).expect("JSON")
}

/// The `(round, exchange)` numbers of a replay, in order.
async fn replay_exchanges(http: &reqwest::Client, base: &str, id: &str) -> Vec<(u64, u64)> {
    let replay = get_json(http, &format!("{base}/replays/{id}")).await;
    let mut numbers = Vec::new();
    for round in replay["rounds"].as_array().expect("rounds") {
        for exchange in round["exchanges"].as_array().expect("exchanges") {
            numbers.push((
                round["number"].as_u64().expect("round number"),
                exchange["number"].as_u64().expect("exchange number"),
            ));
        }
    }
    numbers
}

fn numbers(event: &SseEvent) -> (u64, u64) {
    (
        event.data["round"].as_u64().expect("round"),
        event.data["exchange"]["number"]
            .as_u64()
            .expect("exchange number"),
    )
}

/// One match as a watcher saw it from its `start`: its exchanges and end.
struct Watched {
    id: String,
    start: SseEvent,
    exchanges: Vec<SseEvent>,
    end: SseEvent,
}

/// Reads one whole match, `start` included (the next event must be one).
async fn watch_match(sse: &mut Sse) -> Watched {
    let start = sse.next_event().await;
    assert_eq!(start.kind, "start", "{:?}", start.data);
    let id = start.data["match_id"]
        .as_str()
        .expect("match id")
        .to_owned();
    let mut exchanges = Vec::new();
    loop {
        let event = sse.next_event().await;
        match event.kind.as_str() {
            "exchange" => exchanges.push(event),
            "end" => {
                return Watched {
                    id,
                    start,
                    exchanges,
                    end: event,
                };
            }
            other => panic!("unexpected {other} within match {id}"),
        }
    }
}

async fn duel_tv_broadcasts(db: &TestDb) {
    let dir = tempfile::tempdir().expect("temp dir");
    let replays = dir.path().join("replays");
    let settled = settle_matches(db, &replays).await;
    let server = start_server(db, &replays, test_tv()).await;
    let base = server.base.clone();
    let http = reqwest::Client::new();

    // The first watcher: whatever it joins in the middle of, it reads on to
    // an `end`; from there every match is seen live, from its start.
    let mut first = Sse::open(&http, &format!("{base}/tv/events")).await;
    while first.next_event().await.kind != "end" {}
    let mut previous: Option<String> = None;
    for _ in 0..3 {
        let watched = watch_match(&mut first).await;
        assert!(settled.contains(&watched.id), "{} is settled", watched.id);
        assert_ne!(
            previous.as_deref(),
            Some(watched.id.as_str()),
            "the match just shown is not repeated while another exists"
        );
        // Exactly the replay's exchanges, in order, with a round result on
        // each round's last one only.
        let expected = replay_exchanges(&http, &base, &watched.id).await;
        let seen: Vec<(u64, u64)> = watched.exchanges.iter().map(numbers).collect();
        assert_eq!(seen, expected, "match {}", watched.id);
        for (index, event) in watched.exchanges.iter().enumerate() {
            let last_of_round = expected
                .get(index + 1)
                .is_none_or(|next| next.0 != expected[index].0);
            assert_eq!(
                event.data.get("round_result").is_some(),
                last_of_round,
                "{:?}",
                event.data
            );
        }
        assert!(watched.end.data["result"]["round_wins"].is_array());
        // Paced: spread over at least the pace between each (a lower bound
        // only: a slow machine only spreads them more).
        let spread = watched.end.at - watched.start.at;
        let steps = u32::try_from(expected.len()).expect("few exchanges");
        assert!(
            spread >= PACE * steps,
            "{steps} exchanges and the end arrived within {spread:?}, under {:?}",
            PACE * steps
        );
        let names: Vec<&str> = watched.start.data["fighters"]
            .as_array()
            .expect("fighters")
            .iter()
            .map(|fighter| fighter["name"].as_str().expect("name"))
            .collect();
        assert_eq!(names.len(), 2);
        previous = Some(watched.id);
    }
    // The match just shown ended on air: the lists show it again.
    let shown = previous.clone().expect("a match was shown");
    assert!(
        listed_ids(&http, &base).await.contains(&shown),
        "{shown} ended on air but the lists leave it out"
    );

    // `/tv/now` agrees with the broadcast, and `/live` lists the match on air.
    let deadline = Instant::now() + EVENT_DEADLINE;
    let mut listed = false;
    while !listed {
        assert!(
            Instant::now() < deadline,
            "/live never listed the match on air"
        );
        tokio::time::sleep(PACE / 3).await;
        let now = get_json(&http, &format!("{base}/tv/now")).await;
        let on_air = &now["on_air"];
        let Some(id) = on_air["match_id"].as_str() else {
            continue;
        };
        assert!(settled.contains(id), "{now}");
        assert_eq!(on_air["class"], "light", "{now}");
        assert_eq!(on_air["season"], "winter", "{now}");
        assert_eq!(
            on_air["fighters"].as_array().map(Vec::len),
            Some(2),
            "{now}"
        );
        let total = replay_exchanges(&http, &base, id).await.len();
        assert_eq!(on_air["exchanges"].as_u64(), Some(total as u64), "{now}");
        assert!(on_air["exchange"].as_u64().expect("exchange") <= total as u64);
        if on_air["ended"] == false {
            // No list shows the result of the match on air before its end.
            let lists = listed_ids(&http, &base).await;
            let still = get_json(&http, &format!("{base}/tv/now")).await;
            if still["on_air"]["match_id"].as_str() == Some(id) && still["on_air"]["ended"] == false
            {
                assert!(!lists.contains(id), "{id} is listed while on air");
            }
            let live = get_json(&http, &format!("{base}/live")).await;
            listed = live["live"]
                .as_array()
                .expect("live ids")
                .iter()
                .any(|live_id| live_id.as_str() == Some(id));
        }
    }

    // A late watcher joins a match in its middle: it first gets that match's
    // start and exchanges so far, then the rest, with no gap or repeat.
    let deadline = Instant::now() + EVENT_DEADLINE;
    loop {
        assert!(
            Instant::now() < deadline,
            "never joined a match in its middle"
        );
        let now = get_json(&http, &format!("{base}/tv/now")).await;
        let on_air = &now["on_air"];
        let shown = on_air["exchange"].as_u64().unwrap_or(0);
        if on_air["ended"] != false || shown < 2 {
            tokio::time::sleep(PACE / 3).await;
            continue;
        }
        let id = on_air["match_id"].as_str().expect("match id").to_owned();
        let mut late = Sse::open(&http, &format!("{base}/tv/events")).await;
        let watched = watch_match(&mut late).await;
        if watched.id != id {
            // The match ended between the two requests: try the next one.
            continue;
        }
        // The exchanges shown before it joined (at least `shown`) can only
        // have come from the history; the rest live; none missed or twice.
        let expected = replay_exchanges(&http, &base, &id).await;
        let seen: Vec<(u64, u64)> = watched.exchanges.iter().map(numbers).collect();
        assert_eq!(
            seen, expected,
            "the late watcher's match {id} ({shown} shown before)"
        );
        // And it goes on to the next match.
        let next = late.next_event().await;
        assert_eq!(next.kind, "start");
        assert_ne!(next.data["match_id"], id.as_str());
        break;
    }

    // The page, while a match airs (two matches alternate: from the third
    // broadcast on each is a rerun, and is in the playlist too).
    tv_page_while_on_air(&http, &base).await;
    let home = get_json(&http, &format!("{base}/api/home")).await;
    assert_eq!(home["tv"]["page"], "/tv");
    assert_eq!(home["tv"]["events"], "/tv/events");

    // The widget, with the replay service's security headers.
    for (path, content_type) in [
        ("/tv/tv.js", "text/javascript"),
        ("/tv/tv.css", "text/css"),
        ("/tv/now", "application/json"),
    ] {
        let response = http.get(format!("{base}{path}")).send().await.expect("GET");
        assert_eq!(response.status(), 200, "{path}");
        let headers = response.headers();
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        };
        assert!(header("content-type").starts_with(content_type), "{path}");
        assert_eq!(header("content-security-policy"), CONTENT_SECURITY_POLICY);
        assert_eq!(header("x-content-type-options"), "nosniff");
        let body = response.text().await.expect("body");
        assert!(!body.is_empty(), "{path}");
        if path == "/tv/tv.js" {
            assert!(
                body.contains("EventSource(root.dataset.events || \"/tv/events\")"),
                "the widget follows /tv/events"
            );
            assert!(!body.contains("innerHTML"), "no HTML from data");
        }
    }

    // Shutdown ends the watchers still connected and the server returns. The
    // first watcher reads on meanwhile (what it left unread included).
    let first = tokio::spawn(async move { first.drain().await });
    server.shut_down().await;
    first
        .await
        .expect("the first watcher's stream ends at shutdown");
}
both_backends!(duel_tv_broadcasts_settled_matches, duel_tv_broadcasts);

/// `url` as a browser asks for it: an HTML page of the site.
async fn get_page(http: &reqwest::Client, url: &str) -> String {
    let response = http
        .get(url)
        .header("accept", "text/html,application/xhtml+xml,*/*;q=0.8")
        .send()
        .await
        .expect("GET");
    assert_eq!(response.status(), 200, "{url}");
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(
        content_type.starts_with("text/html"),
        "{url}: {content_type}"
    );
    let body = response.text().await.expect("body");
    assert!(body.starts_with("<!DOCTYPE html>"), "{body}");
    body
}

/// What a page's `<section id="tv" …>…</section>` holds (it holds no section).
fn tv_section(page: &str) -> &str {
    let start = page.find("<section id=\"tv\"").expect("section#tv");
    let end = page[start..].find("</section>").expect("its end");
    &page[start..start + end]
}

/// `/tv` and `/api/tv` while a match airs and has not ended (read again
/// until one page is taken within one broadcast).
async fn tv_page_while_on_air(http: &reqwest::Client, base: &str) {
    let deadline = Instant::now() + EVENT_DEADLINE;
    loop {
        assert!(
            Instant::now() < deadline,
            "never read /tv during a broadcast"
        );
        let before = get_json(http, &format!("{base}/tv/now")).await;
        let page = get_page(http, &format!("{base}/tv")).await;
        let twin = get_json(http, &format!("{base}/api/tv")).await;
        let after = get_json(http, &format!("{base}/tv/now")).await;
        let on_air = &before["on_air"];
        let airing = on_air["ended"] == false
            && after["on_air"]["ended"] == false
            && after["on_air"]["match_id"] == on_air["match_id"]
            && twin["on_air"]["match_id"] == on_air["match_id"];
        if !airing {
            tokio::time::sleep(PACE / 3).await;
            continue;
        }
        let id = on_air["match_id"].as_str().expect("match id");
        let section = tv_section(&page);
        for fighter in on_air["fighters"].as_array().expect("fighters") {
            let name = fighter.as_str().expect("name");
            assert!(
                section.contains(&format!("<a href=\"/bots/{name}\">{name}</a>")),
                "{section}"
            );
        }
        let why = on_air["why_text"].as_str().expect("why");
        assert!(
            [
                "a top-3 bot",
                "close ratings",
                "a long rivalry",
                "the latest match"
            ]
            .contains(&why),
            "{why}"
        );
        assert!(
            section.contains(&format!("light · season winter · {why}")),
            "{section}"
        );
        let label = if on_air["rerun"] == true {
            "rerun"
        } else {
            "first showing"
        };
        assert!(
            section.contains(&format!("<span class=\"tv-label\">{label}</span>")),
            "{section}"
        );
        assert!(section.contains("tv-rating"), "{section}");
        assert!(
            section.contains(" ± ") || section.contains("new this season"),
            "{section}"
        );
        assert!(
            section.contains(&format!("href=\"/live/{id}/view\"")),
            "{section}"
        );
        assert!(
            section.contains(&format!("href=\"/matches/{id}\"")),
            "{section}"
        );
        // Nothing gives the result away or calls it live.
        for spoiler in [
            "upset",
            "comeback",
            "close one",
            " won",
            "wins",
            "Live",
            " live",
        ] {
            assert!(!section.contains(spoiler), "{spoiler}: {section}");
        }
        assert!(page.contains("id=\"tv-queue\""), "{page}");
        assert!(page.contains("id=\"tv-playlist\""), "{page}");
        assert!(page.contains("src=\"/tv/tv.js\""), "{page}");
        assert!(page.contains("data-events=\"/tv/events\""), "{page}");
        // The playlist: ended broadcasts with their results, but not the one
        // on air again.
        let playlist = twin["playlist"].as_array().expect("playlist");
        assert!(!playlist.is_empty(), "{twin}");
        for aired in playlist {
            if aired["match_id"] == id {
                assert_eq!(aired["result"], Value::Null, "{twin}");
            } else {
                assert!(aired["result"]["round_wins"].is_array(), "{twin}");
            }
        }
        if on_air["rerun"] == true {
            assert!(
                playlist.iter().any(|aired| aired["match_id"] == id),
                "a rerun aired before: {twin}"
            );
            assert!(
                page.contains("on air again: result after it ends"),
                "{page}"
            );
        }
        assert!(
            page.contains(" won</span>") || page.contains(">draw</span>"),
            "the playlist says how ended broadcasts ended: {page}"
        );
        assert!(twin["queue"].is_array(), "{twin}");
        assert_eq!(twin["events"], "/tv/events");
        return;
    }
}

async fn duel_tv_waits_for_a_match(db: &TestDb) {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = start_server(db, &dir.path().join("replays"), test_tv()).await;
    let http = reqwest::Client::new();
    let now = get_json(&http, &format!("{}/tv/now", server.base)).await;
    assert_eq!(now, serde_json::json!({ "on_air": null }));
    // The page says it waits.
    let page = get_page(&http, &format!("{}/tv", server.base)).await;
    assert!(page.contains("Waiting for a ranked match"), "{page}");
    assert!(page.contains("No broadcast has ended yet."), "{page}");
    // A client that does not ask for HTML still gets the stream at /tv.
    let old = Sse::open(&http, &format!("{}/tv", server.base)).await;
    drop(old);
    // The stream stays open and says it is alive (keep-alive every 200 ms).
    let mut sse = Sse::open(&http, &format!("{}/tv/events", server.base)).await;
    let opened = Instant::now();
    for _ in 0..3 {
        match sse.next_item().await {
            Some(Item::Comment) => {}
            other => panic!("expected a keep-alive, got {other:?}"),
        }
    }
    assert!(opened.elapsed() >= Duration::from_millis(400));
    let now = get_json(&http, &format!("{}/tv/now", server.base)).await;
    assert_eq!(now["on_air"], Value::Null);
    server.shut_down().await;
    sse.drain().await;
}
both_backends!(duel_tv_with_no_settled_match, duel_tv_waits_for_a_match);

/// Duel TV (its broadcaster and routes) beside the replay service and the
/// site's pages, under the site's CSP.
async fn serve_widget(db: &TestDb, replays: &std::path::Path) -> (String, watch::Sender<bool>) {
    use duel_ladder_site::tv::{self, DuelTv};
    use duel_referee::publish::{self, LiveFeeds, PublishState, RateConfig};

    let store = duel_replays::store::ReplayStore::open(&replays.display().to_string())
        .expect("replay store");
    let live = LiveFeeds::new();
    let mut config = test_tv();
    // Slow enough to see each exchange in the page.
    config.exchange_pace = Duration::from_millis(150);
    let duel_tv = DuelTv::new(db.store.reads(), store.clone(), Some(live.clone()), config);
    let (stop, shutdown) = watch::channel(false);
    tokio::spawn(duel_tv.clone().run(shutdown.clone()));
    // The lists hold back the match on air, as `duel_ladder_site::mount` does.
    let airing = duel_tv.clone();
    let on_air: duel_ladder_site::OnAirNow = Arc::new(move || {
        airing
            .now()
            .filter(|on_air| !on_air.ended)
            .map(|on_air| on_air.match_id)
    });
    let key = duel_replays::SigningKey::from_bytes(&[3; 32]);
    let state = PublishState::new(store, key.verifying_key(), live, RateConfig::default());
    // The site's pages (the home page with the widget, /site/site.css)
    // beside Duel TV's, as `ladder serve --http` merges them.
    let router = publish::router(state)
        .merge(tv::router(duel_tv))
        .merge(duel_ladder_site::router(db.store.reads(), Some(on_air)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    let mut stopped = shutdown;
    tokio::spawn(publish::serve_router(
        listener,
        router,
        HttpLimits::default(),
        async move {
            let _ = stopped.wait_for(|stopped| *stopped).await;
        },
    ));
    (format!("http://{address}"), stop)
}

/// The widget in real headless Chromium: it shows the match on air and
/// advances exchange by exchange (names, round and exchange, HP bars as wide
/// as the HP left), links the live viewer then the replay, goes on to the
/// next match, breaks no CSP rule and fits 390 px. Screenshots are kept
/// under the target folder (`tv-screenshots/`).
#[test]
fn the_widget_follows_duel_tv_in_chromium() {
    use common::chromium::{Chromium, screenshot_folder};
    use serde_json::json;

    let Some(mut chromium) = Chromium::launch() else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let replays = dir.path().join("replays");
    let (db, settled, base, stop) = runtime.block_on(async {
        let db = TestDb::sqlite().await;
        let settled = settle_matches(&db, &replays).await;
        let (base, stop) = serve_widget(&db, &replays).await;
        (db, settled, base, stop)
    });
    // Every CSP violation of the page, recorded before its scripts run.
    chromium.call("Page.enable", json!({}));
    chromium.call(
        "Page.addScriptToEvaluateOnNewDocument",
        json!({"source": "window.cspViolations = []; document.addEventListener(\
            'securitypolicyviolation', (e) => window.cspViolations.push(e.violatedDirective));"}),
    );
    chromium.navigate(&format!("{base}/"));
    chromium.wait_for(
        "document.getElementById('tv').dataset.state === 'on-air' \
         && Number(document.getElementById('tv').dataset.exchanges) >= 1",
        &json!(true),
    );
    let id = chromium.eval("document.getElementById('tv').dataset.matchId");
    let id = id.as_str().expect("match id on air").to_owned();
    assert!(settled.contains(&id), "{id}");
    let names =
        chromium.eval("[...document.querySelectorAll('#tv .tv-name')].map((e) => e.textContent)");
    let names: Vec<&str> = names
        .as_array()
        .expect("names")
        .iter()
        .map(|name| name.as_str().expect("name"))
        .collect();
    assert_eq!(names.len(), 2);
    assert!(
        names.iter().all(|name| name.starts_with("bot")),
        "{names:?}"
    );
    assert_eq!(
        chromium.eval("document.querySelector('#tv .tv-link').getAttribute('href')"),
        json!(format!("/live/{id}/view"))
    );
    // Exchange by exchange: the count and the progress line move on, and
    // each HP bar is as wide as the HP left (set through element.style).
    let mut seen = std::collections::BTreeSet::new();
    let deadline = Instant::now() + EVENT_DEADLINE;
    while seen.len() < 3 {
        assert!(
            Instant::now() < deadline,
            "the widget did not advance: {seen:?}"
        );
        let state = chromium.eval(
            "(() => { const tv = document.getElementById('tv'); \
             const hp = [...tv.querySelectorAll('.tv-hp')].map((m) => \
               [Number(m.querySelector('.tv-value').textContent), m.querySelector('.tv-fill').style.width]); \
             return { id: tv.dataset.matchId, state: tv.dataset.state, n: Number(tv.dataset.exchanges), \
               progress: tv.querySelector('.tv-progress').textContent, hp: hp }; })()",
        );
        if state["id"] == id.as_str() && state["state"] == "on-air" {
            let progress = state["progress"].as_str().expect("progress");
            assert!(progress.starts_with("Round "), "{state}");
            assert!(progress.contains(" · exchange "), "{state}");
            for side in state["hp"].as_array().expect("hp") {
                let hp = side[0].as_f64().expect("hp value");
                let width = side[1].as_str().expect("width");
                let percent: f64 = width
                    .trim_end_matches('%')
                    .parse()
                    .unwrap_or_else(|_| panic!("bar width {width:?}"));
                assert!(
                    (percent - (hp / 160.0 * 100.0).clamp(0.0, 100.0)).abs() < 0.5,
                    "{state}"
                );
            }
            seen.insert(state["n"].as_u64().expect("count"));
        }
        std::thread::sleep(Duration::from_millis(40));
    }
    let folder = screenshot_folder("tv-screenshots");
    chromium.screenshot(&folder.join("tv-desktop.png"));
    chromium.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": true}),
    );
    assert_eq!(
        chromium.eval("document.documentElement.scrollWidth <= 390"),
        json!(true),
        "the widget fits 390 px"
    );
    chromium.screenshot(&folder.join("tv-phone.png"));
    // The /tv page on the phone: the match on air with its exchanges, the
    // tokens and fallbacks burnt, first showing or rerun, never live, no
    // result before the end; the queue and the playlist.
    chromium.navigate(&format!("{base}/tv"));
    chromium.wait_for(
        "document.getElementById('tv') !== null \
         && document.getElementById('tv').dataset.state === 'on-air' \
         && Number(document.getElementById('tv').dataset.exchanges) >= 2 \
         && !document.querySelector('#tv .tv-label').hidden",
        &json!(true),
    );
    let page = chromium.eval(
        "(() => { const tv = document.getElementById('tv'); return { \
           state: tv.dataset.state, text: tv.textContent, \
           log: tv.querySelectorAll('.tv-log li').length, \
           burn: [...tv.querySelectorAll('.tv-burn')].map((e) => e.textContent), \
           label: tv.querySelector('.tv-label').textContent, \
           queue: document.getElementById('tv-queue') !== null, \
           playlist: document.getElementById('tv-playlist') !== null, \
           wide: document.documentElement.scrollWidth }; })()",
    );
    assert!(page["log"].as_u64().unwrap_or(0) >= 2, "{page}");
    for burn in page["burn"].as_array().expect("burn") {
        assert!(
            burn.as_str()
                .is_some_and(|text| text.contains(" tokens · ")),
            "{page}"
        );
    }
    assert!(
        page["label"] == "first showing" || page["label"] == "rerun",
        "{page}"
    );
    assert_eq!(
        (page["queue"].clone(), page["playlist"].clone()),
        (json!(true), json!(true))
    );
    let text = page["text"].as_str().expect("text");
    if page["state"] == "on-air" {
        for spoiler in ["Live", "upset", "comeback", "wins the match"] {
            assert!(!text.contains(spoiler), "{spoiler}: {text}");
        }
    }
    assert!(
        page["wide"].as_u64().is_some_and(|wide| wide <= 390),
        "{page}"
    );
    chromium.screenshot(&folder.join("tv-page-phone.png"));
    chromium.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 1366, "height": 900, "deviceScaleFactor": 1, "mobile": false}),
    );
    chromium.screenshot(&folder.join("tv-page-desktop.png"));
    assert_eq!(chromium.eval("window.cspViolations"), json!([]), "/tv");
    chromium.navigate(&format!("{base}/"));
    // The end: the result and the replay's viewer; then the next match. The
    // widget of a freshly loaded page has no match yet: that is not "another
    // match".
    chromium.wait_for(
        &format!(
            "(() => {{ const tv = document.getElementById('tv'); \
             return (!!tv.dataset.matchId && tv.dataset.matchId !== '{id}') \
             || (tv.dataset.matchId === '{id}' && tv.dataset.state === 'ended'); }})()"
        ),
        &json!(true),
    );
    let ended = chromium.eval(
        "(() => { const tv = document.getElementById('tv'); return [tv.dataset.matchId, \
         tv.dataset.state, tv.querySelector('.tv-result').textContent, \
         tv.querySelector('.tv-link').getAttribute('href')]; })()",
    );
    if ended[0] == id.as_str() {
        let result = ended[2].as_str().expect("result");
        assert!(
            result.contains("wins the match") || result.contains("is a draw"),
            "{ended}"
        );
        assert_eq!(ended[3], json!(format!("/replays/{id}/view")));
    }
    chromium.wait_for(
        &format!(
            "document.getElementById('tv').dataset.matchId !== '{id}' \
             && document.getElementById('tv').dataset.state === 'on-air'"
        ),
        &json!(true),
    );
    assert_eq!(chromium.eval("window.cspViolations"), json!([]));
    eprintln!("Duel TV screenshots in {}", folder.display());
    stop.send_replace(true);
    drop(chromium);
    runtime.block_on(db.cleanup());
}
