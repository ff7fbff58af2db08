//! The ladder site in real headless Chromium. A season is played
//! through the binaries: `ladder serve --http --workers 0` and a separate
//! `ladder worker` process, three owners' active bots (two WASM, one
//! built-in). The browser opens `/`, follows a standings link to a bot page
//! whose chart has one point per rated match, opens a head-to-head page, and
//! watches Duel TV advance exchange by exchange; then again at 390 px, where
//! no page is wider than the screen. Then, as a spectator sees them at 1366
//! and 390 px, home, Duel TV, a match, a bot, a head-to-head, the cost page,
//! a transcript and the viewer are each checked for overlapping text,
//! clipping and empty states (`spectator_check.js`, which measures the text's
//! boxes in the page) and photographed: `site-{page}-{width}.png` under
//! `<target>/site-screenshots/`, and into `docs/img/` as well when
//! `DUEL_UPDATE_SCREENSHOTS=1` (`scripts/screenshots.sh`). The checks read
//! the page, not pixels.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::chromium::{Chromium, screenshot_folder};
use common::cli::{Cli, init_root, start_server, terminate};
use serde_json::{Value, json};

const PLAY_DEADLINE: Duration = Duration::from_secs(90);

fn wait_for_page(chromium: &mut Chromium, url: &str) {
    chromium.navigate(url);
    chromium.wait_for(
        "document.readyState === 'complete' && document.body !== null",
        &json!(true),
    );
}

fn text(chromium: &mut Chromium, selector: &str) -> String {
    chromium
        .eval(&format!(
            "(document.querySelector('{selector}') || {{ textContent: '' }}).textContent"
        ))
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn phone(chromium: &mut Chromium) {
    chromium.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": true}),
    );
}

/// No horizontal scrolling of the page itself (wide tables scroll inside it).
/// Measured against the layout viewport: a phone zooms out to show a page
/// wider than itself whole, and then `innerWidth` is the page's width.
fn fits_the_screen(chromium: &mut Chromium, what: &str) {
    let widths = chromium
        .eval("[document.documentElement.scrollWidth, document.documentElement.clientWidth]");
    assert!(
        widths[0].as_f64() <= widths[1].as_f64(),
        "{what} is wider than the screen: {widths}"
    );
}

/// What a spectator would see wrong on the page in front of the browser:
/// overlapping text, clipped text, an empty or unfilled page (see
/// `spectator_check.js`). `header` is the header the page must wear: `site`
/// (the site's top bar) or `viewer` (the viewer, ready, with its links to the
/// ladder).
fn spectator_problems(chromium: &mut Chromium, header: &str) -> Vec<String> {
    let found = chromium.eval(&format!(
        "({})({})",
        include_str!("spectator_check.js"),
        json!(header)
    ));
    found
        .as_array()
        .unwrap_or_else(|| panic!("the check answered {found}"))
        .iter()
        .map(|problem| problem.as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The widths a spectator's pictures are taken at: a laptop and a phone.
const SPECTATOR_WIDTHS: [u32; 2] = [1366, 390];

/// A laptop's screen (1366 × 900) or a phone's (390 × 844, mobile: the
/// viewport meta tag counts), without scroll bars: the page has the whole
/// width, as on a phone or a laptop that shows them only while scrolling.
fn screen(chromium: &mut Chromium, width: u32) {
    let phone = width < 600;
    chromium.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": width, "height": if phone { 844 } else { 900 }, "deviceScaleFactor": 1, "mobile": phone}),
    );
    chromium.call("Emulation.setScrollbarsHidden", json!({"hidden": true}));
}

/// `docs/img/`, where the documentation's pictures of the site are, when
/// `DUEL_UPDATE_SCREENSHOTS=1` asks for them to be retaken
/// (`scripts/screenshots.sh`); otherwise the tests write only under the
/// target folder.
fn docs_pictures() -> Option<PathBuf> {
    (std::env::var("DUEL_UPDATE_SCREENSHOTS").as_deref() == Ok("1"))
        .then(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/img"))
}

/// Photographs the page in front of the browser as `site-{page}-{width}.png`
/// and checks it as a spectator would see it ([`spectator_problems`]); the
/// picture goes to `docs/img/` too when asked for and the page passes.
/// Answers the problems found, each naming the page and width.
fn spectator_shot(
    chromium: &mut Chromium,
    folder: &Path,
    page: &str,
    width: u32,
    header: &str,
) -> Vec<String> {
    let name = format!("site-{page}-{width}.png");
    let picture = folder.join(&name);
    chromium.screenshot(&picture);
    let problems = spectator_problems(chromium, header);
    if let Some(docs) = docs_pictures()
        && problems.is_empty()
    {
        std::fs::copy(&picture, docs.join(&name))
            .unwrap_or_else(|error| panic!("copy {name} into {}: {error}", docs.display()));
    }
    problems
        .into_iter()
        .map(|problem| format!("{page} at {width} px: {problem}"))
        .collect()
}

/// Fails with every problem found, one a line.
fn assert_spectator_sees_no_problem(problems: &[String]) {
    assert!(
        problems.is_empty(),
        "{} problem(s) a spectator would see (pictures under <target>/site-screenshots/):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// Replaces the blank page's document with `html`.
fn write_page(chromium: &mut Chromium, html: &str) {
    chromium.eval(&format!(
        "document.open(); document.write({}); document.close(); true",
        json!(html)
    ));
}

/// A page with a defect of each kind the spectator's check looks for, at
/// 390 px: two labels on top of each other, a name cut to an ellipsis, lines
/// a short box hides, an SVG label past its chart's edge, a line too long
/// for the phone, an unfilled value, a table without rows, a chart without
/// points.
const BROKEN_PAGE: &str = r#"<!doctype html><html><head><meta name="viewport" content="width=device-width, initial-scale=1"><style>
.stack { position: relative; height: 2em; } .stack span { position: absolute; left: 0; top: 0; }
.name { width: 60px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.short { width: 60px; height: 1.2em; overflow: hidden; }
</style></head><body><header class="top"><a class="brand" href="/">duel ladder</a></header><main>
<div class="stack"><span>first label</span><span>second label</span></div>
<div class="name">a very long bot name</div>
<div class="short">a sentence that wraps in its box</div>
<svg width="100" height="30"><text x="80" y="20">past the edge</text></svg>
<p>rating: undefined</p>
<table><thead><tr><th>bot</th></tr></thead><tbody></tbody></table>
<figure><svg width="100" height="30"><text x="5" y="20">no point</text></svg></figure>
<div style="white-space: nowrap">a line far too long for the screen of a phone three hundred and ninety pixels wide</div>
</main></body></html>"#;

/// A tidy page with what the check must let be: wrapped text with links, a
/// table scrolled beneath its sticky head, text scrolled out of a scroll
/// box, a folded section, a chart with labels.
const TIDY_PAGE: &str = r#"<!doctype html><html><head><meta name="viewport" content="width=device-width, initial-scale=1"><style>
.rows { overflow: auto; height: 4.5em; } .rows th { position: sticky; top: 0; background: #fff; }
.wide { overflow-x: auto; white-space: nowrap; }
</style></head><body><header class="top"><a class="brand" href="/">duel ladder</a> <nav><a href="/tv">TV</a> <a href="/seasons">Seasons</a></nav></header><main>
<h1>A bot</h1>
<p>A paragraph long enough to wrap over several lines on a phone, with <a href="/">a link</a>, <b>bold words</b> and <code>code</code> in it.</p>
<div class="rows" id="rows"><table><thead><tr><th>#</th><th>move</th></tr></thead><tbody>
<tr><td>1</td><td>JAB</td></tr><tr><td>2</td><td>HEAVY</td></tr><tr><td>3</td><td>BLOCK</td></tr><tr><td>4</td><td>DODGE</td></tr><tr><td>5</td><td>FEINT</td></tr></tbody></table></div>
<div class="wide">a line far too long for the screen of a phone, scrolling sideways in its own box as wide tables do</div>
<details><summary>Prompt</summary><p>folded text</p></details>
<figure><svg width="200" height="60"><circle cx="10" cy="10" r="3"/><text x="20" y="20">1500</text><text x="20" y="45">1400</text></svg></figure>
</main></body></html>"#;

/// The spectator's check sees what it is for: on a page made with each
/// defect it names every one, on the JSON it names raw data and a missing
/// header, and on a tidy page it finds nothing.
#[test]
fn the_spectator_check_sees_overlaps_clipping_and_empty_states() {
    let Some(mut chromium) = Chromium::launch() else {
        return;
    };
    screen(&mut chromium, 390);
    write_page(&mut chromium, TIDY_PAGE);
    chromium.eval("document.getElementById('rows').scrollTop = 30; true");
    assert_eq!(
        spectator_problems(&mut chromium, "site"),
        Vec::<String>::new()
    );

    write_page(&mut chromium, BROKEN_PAGE);
    let problems = spectator_problems(&mut chromium, "site");
    // Each defect, by the words that name it in one problem.
    for expected in [
        &[
            r#"overlap: "first label" in span"#,
            r#""second label" in span"#,
        ][..],
        &[
            r#"clipped: "a very long bot name" in div.name"#,
            "is cut by div.name",
        ],
        &[r#"clipped: "a very long bot name" in div.name ends in an ellipsis"#],
        &[
            r#"clipped: a line of "a sentence that wraps in its box""#,
            "hidden by div.short",
        ],
        &[r#"clipped: "past the edge" in text"#, "is cut by svg"],
        &[r#"off screen: "a line far too long"#, "right edge (390 px)"],
        &["the page is", "px wide on a 390-px screen"],
        &[r#"unfilled: the page says "rating: undefined""#],
        &["empty: table table has no row"],
        &["empty: chart svg has no point"],
    ] {
        assert!(
            problems
                .iter()
                .any(|problem| expected.iter().all(|words| problem.contains(words))),
            "the check missed {expected:?}: {problems:#?}"
        );
    }
    assert_eq!(problems.len(), 10, "{problems:#?}");

    write_page(&mut chromium, r#"{"bots": [null]}"#);
    let problems = spectator_problems(&mut chromium, "site");
    for expected in [
        "empty: the page has no main text",
        "unfilled",
        "raw data",
        "no header",
    ] {
        assert!(
            problems.iter().any(|problem| problem.starts_with(expected)),
            "the check missed {expected}: {problems:#?}"
        );
    }
    let problems = spectator_problems(&mut chromium, "viewer");
    assert!(
        problems
            .iter()
            .any(|problem| problem.starts_with("no header: the viewer is")),
        "{problems:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_browses_a_running_season() {
    let Some(mut chromium) = Chromium::launch() else {
        return;
    };
    let db = common::TestDb::sqlite().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = |name: &str| -> PathBuf { dir.path().join(name) };
    init_root(&db.url, dir.path(), true);
    let mut server = start_server(
        &db.url,
        dir.path(),
        &[
            "--http",
            "127.0.0.1:0",
            "--workers",
            "0",
            "--match-interval-ms",
            "200",
            "--tv-exchange-ms",
            "150",
        ],
    );
    let mut worker = common::cli::start_worker(&db.url, dir.path(), 1, &[]);

    let base = server.http.clone().expect("the site runs");
    let cli = Cli {
        server: &server.url.clone(),
    };
    let root = path("root.token");
    cli.ok(&root, &["season", "start", "winter"]);
    for (owner, bot, flag, value) in [
        (
            "alice",
            "a-counter",
            "--wasm",
            common::bots::wasm_path("counter"),
        ),
        (
            "bob",
            "b-jabber",
            "--wasm",
            common::bots::wasm_path("jabber"),
        ),
        (
            "carol",
            "c-random",
            "--builtin",
            "builtin:random".to_owned(),
        ),
    ] {
        common::cli::owner_with_bot(&cli, dir.path(), owner, 5000, bot, [flag, &value], Some(10));
    }
    let http = reqwest::Client::new();
    let get_json = |path: String| {
        let http = http.clone();
        let url = format!("{base}{path}");
        async move {
            let body = http
                .get(&url)
                .send()
                .await
                .expect("GET")
                .bytes()
                .await
                .expect("body");
            serde_json::from_slice::<Value>(&body).expect("JSON")
        }
    };
    let started = Instant::now();
    while get_json("/api/matches".to_owned()).await["matches"]["items"]
        .as_array()
        .map_or(0, Vec::len)
        < 6
    {
        assert!(started.elapsed() < PLAY_DEADLINE, "too few matches settled");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let folder = screenshot_folder("site-screenshots");

    // Home: standings, latest matches, Duel TV; no match id typed anywhere.
    wait_for_page(&mut chromium, &format!("{base}/"));
    assert_eq!(text(&mut chromium, "h1"), "Duel ladder");
    let body = text(&mut chromium, "main");
    for expected in [
        "Latest ranked matches",
        "Top of the standings",
        "season winter",
        "a-counter",
    ] {
        assert!(body.contains(expected), "home lacks {expected}: {body}");
    }
    // Duel TV advances exchange by exchange on the home page.
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while seen.len() < 3 {
        let now = chromium.eval("(document.getElementById('tv').dataset.matchId || '') + ':' + (document.getElementById('tv').dataset.exchanges || '')");
        let now = now.as_str().unwrap_or_default().to_owned();
        if !now.ends_with(':') && seen.last() != Some(&now) {
            seen.push(now);
        }
        assert!(
            Instant::now() < deadline,
            "Duel TV did not advance: {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let tv = text(&mut chromium, "#tv");
    assert!(tv.contains("vs") || tv.contains('·'), "{tv}");
    // The standings tables fit whole, at a laptop's width and a phone's:
    // no table is cut to a scroll box.
    for (width, mobile) in [(1366, false), (390, true)] {
        chromium.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": mobile}),
        );
        let cut = chromium.eval(
            "[...document.querySelectorAll('.classes .scroll')].filter(box => box.scrollWidth > box.clientWidth).length",
        );
        assert_eq!(cut, json!(0), "a standings table is cut at {width} px");
        fits_the_screen(&mut chromium, &format!("home at {width} px"));
    }
    chromium.call("Emulation.clearDeviceMetricsOverride", json!({}));

    // A standings link to a bot page, whose chart has a point per rated match.
    // The link is clicked in the page rather than at its coordinates: Duel TV
    // above it redraws every exchange, and under load a redraw between
    // measuring and pressing moved the table away from the mouse.
    chromium.eval(
        "document.querySelector('#class-light tbody tr:first-child a[href^=\"/bots/\"]').click()",
    );
    chromium.wait_for("location.pathname.startsWith('/bots/')", &json!(true));
    chromium.wait_for("document.readyState === 'complete'", &json!(true));
    let bot = text(&mut chromium, "h1");
    let page = get_json(format!("/api/bots/{bot}")).await;
    let points = chromium.eval("document.querySelectorAll('#rating-chart circle').length");
    let shown = page["history"].as_array().map_or(0, Vec::len);
    assert!(shown > 0);
    // Matches keep being played: the page's own count is the one to match.
    let rated_on_page = chromium.eval(
        "Number((document.querySelector('figcaption') || { textContent: '' }).textContent.match(/last (\\d+) rated/)[1])",
    );
    assert_eq!(points, rated_on_page, "one point per rated match");
    assert!(text(&mut chromium, "main").contains("Opponents"));

    // Its head-to-head with an opponent.
    chromium.click("a.versus");
    chromium.wait_for("location.pathname.includes('/vs/')", &json!(true));
    chromium.wait_for("document.readyState === 'complete'", &json!(true));
    let heading = text(&mut chromium, "h1");
    assert!(heading.starts_with(&format!("{bot} vs ")), "{heading}");
    assert!(text(&mut chromium, "p.score").contains(" W · "));
    let versus_path = chromium.eval("location.pathname");
    let versus_path = versus_path.as_str().unwrap_or_default().to_owned();

    // A match page links the viewer.
    chromium.click("table.matches tbody tr:first-child a.when");
    chromium.wait_for("location.pathname.startsWith('/matches/')", &json!(true));
    chromium.wait_for("document.readyState === 'complete'", &json!(true));
    assert_eq!(
        chromium.eval("document.querySelector('a.button').getAttribute('href').endsWith('/view')"),
        json!(true)
    );
    let match_path = chromium.eval("location.pathname");
    let match_path = match_path.as_str().unwrap_or_default().to_owned();

    // The viewer leads back: to the match page, both bots and the site.
    chromium.click("a.button");
    chromium.wait_for("location.pathname.endsWith('/view')", &json!(true));
    chromium.wait_for("document.body.dataset.state", &json!("ready"));
    assert_eq!(
        chromium.eval(
            "[document.getElementById('ladder-links').hidden, \
              document.getElementById('link-match').getAttribute('href'), \
              document.getElementById('link-site').getAttribute('href')]"
        ),
        json!([false, match_path, "/"])
    );
    let bots = chromium.eval(
        "['a', 'b'].map(side => { const link = document.getElementById('link-bot-' + side); \
          return link.getAttribute('href') === '/bots/' + encodeURIComponent(link.textContent); })",
    );
    assert_eq!(bots, json!([true, true]));
    chromium.click("#link-match");
    chromium.wait_for("location.pathname", &json!(match_path));
    chromium.wait_for("document.readyState === 'complete'", &json!(true));

    // What a win cost: a chart per class with a point per bot.
    wait_for_page(&mut chromium, &format!("{base}/seasons/winter/cost"));
    let points = chromium.eval("document.querySelectorAll('#cost-chart-light circle').length");
    let rows = chromium.eval("document.querySelectorAll('#cost-light table.cost tbody tr').length");
    assert_eq!(points, rows, "a point per bot of the table");
    assert!(rows.as_u64().unwrap_or(0) >= 2, "{rows}");

    // 390 px wide: every page fits, tables scroll inside it (the pages
    // photographed below are photographed there).
    phone(&mut chromium);
    for (url, shot) in [
        (format!("{base}/"), None),
        (format!("{base}/bots/{bot}"), None),
        (
            format!("{base}/seasons/winter"),
            Some("site-season-390.png"),
        ),
        (format!("{base}/matches"), Some("site-matches-390.png")),
        (format!("{base}/seasons/winter/cost"), None),
        (format!("{base}/tv"), None),
    ] {
        wait_for_page(&mut chromium, &url);
        fits_the_screen(&mut chromium, &url);
        if let Some(shot) = shot {
            chromium.screenshot(&folder.join(shot));
        }
    }
    // A chart's labels stay readable on the phone: their boxes at least 8 px
    // tall (scaled to a 390-px screen they were under 6).
    for url in [
        format!("{base}/bots/{bot}"),
        format!("{base}/seasons/winter/cost"),
    ] {
        wait_for_page(&mut chromium, &url);
        let smallest = chromium.eval(
            "Math.min(...[...document.querySelectorAll('figure.chart svg text')] \
               .map(label => label.getBoundingClientRect().height).filter(h => h > 0))",
        );
        assert!(
            smallest.as_f64().is_some_and(|px| px >= 8.0),
            "{url}: chart labels {smallest} px tall"
        );
    }

    // Seen as a spectator, on a laptop and on a phone: each page checked
    // for overlapping and clipped text and empty states, and photographed.
    // Duel TV is caught with a match on air and its log of exchanges full
    // (scrolling in its box, so the page no longer grows while photographed).
    let match_id = match_path.trim_start_matches("/matches/").to_owned();
    let mut problems = Vec::new();
    for width in SPECTATOR_WIDTHS {
        screen(&mut chromium, width);
        for (page, path) in [
            ("home", "/".to_owned()),
            ("tv", "/tv".to_owned()),
            ("match", match_path.clone()),
            ("bot", format!("/bots/{bot}")),
            ("versus", versus_path.clone()),
            ("cost", "/seasons/winter/cost".to_owned()),
            ("viewer", format!("/replays/{match_id}/view")),
        ] {
            wait_for_page(&mut chromium, &format!("{base}{path}"));
            let header = match page {
                "viewer" => {
                    chromium.wait_for("document.body.dataset.state", &json!("ready"));
                    "viewer"
                }
                "tv" => {
                    chromium.wait_for(
                        "document.getElementById('tv').dataset.state === 'on-air' \
                         && Number(document.getElementById('tv').dataset.exchanges) >= 3 \
                         && document.querySelector('#tv .tv-log').scrollHeight \
                            > document.querySelector('#tv .tv-log').clientHeight",
                        &json!(true),
                    );
                    "site"
                }
                _ => "site",
            };
            problems.extend(spectator_shot(&mut chromium, &folder, page, width, header));
        }
    }
    assert_spectator_sees_no_problem(&problems);

    terminate(&mut worker.0, "ladder worker").await;
    terminate(&mut server.child, "ladder serve").await;
    db.cleanup().await;
}

/// A free loopback port (bound, then released for the process that takes it).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// Kills the process when the test ends, however it ends.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Every item of a paged JSON listing (`pointer` names its page object).
async fn every_item(http: &reqwest::Client, base: &str, path: &str, pointer: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut next = path.to_owned();
    for _ in 0..1_000 {
        let body = http
            .get(format!("{base}{next}"))
            .send()
            .await
            .expect("GET")
            .text()
            .await
            .expect("body");
        let page: Value = serde_json::from_str(&body).expect("JSON");
        items.extend(
            page.pointer(&format!("{pointer}/items"))
                .and_then(Value::as_array)
                .unwrap_or_else(|| panic!("{next}: {page}"))
                .iter()
                .cloned(),
        );
        match page
            .pointer(&format!("{pointer}/next_cursor"))
            .and_then(Value::as_str)
        {
            Some(cursor) => next = format!("{path}&cursor={cursor}"),
            None => return items,
        }
    }
    panic!("{path}: the listing never ends")
}

/// Transcripts in the browser: a season played through the
/// binaries with a model-using endpoint bot (the Rust example with
/// `--think`, asking the worker's built-in house model, priced in the
/// catalogue). Its owner reads its model calls on a match page through the
/// token form; a visitor gets 404 until the season ends; then everyone gets
/// the transcript, and it proves against the signed replay. The cost table's
/// tokens and dollars equal what the bot's replays say, and the match Duel TV
/// airs is never in the lists while it airs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_reads_the_reasoning_and_everyone_after_the_season() {
    let Some(mut chromium) = Chromium::launch() else {
        return;
    };
    let thinker_binary = PathBuf::from(common::cli::LADDER).with_file_name("endpoint-bot");
    assert!(
        thinker_binary.exists(),
        "{} is missing: `cargo build -p duel-endpoint-bot` (a workspace test run builds it)",
        thinker_binary.display()
    );
    let db = common::TestDb::sqlite().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = |name: &str| -> PathBuf { dir.path().join(name) };
    let models = path("models.toml");
    std::fs::write(
        &models,
        "[[model]]\nname = \"house\"\nurl = \"builtin:house\"\n\
         input_usd_per_mtok = 0.5\noutput_usd_per_mtok = 2.0\ndefault = true\n",
    )
    .expect("catalogue");
    let models = models.to_str().expect("utf-8 path").to_owned();
    let bot_port = free_port();
    let _thinker = Reaped(
        std::process::Command::new(&thinker_binary)
            .args(["--listen", &format!("127.0.0.1:{bot_port}")])
            .args(["--think", "--name", "d-thinker"])
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start the example endpoint bot"),
    );
    let listening = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", bot_port)).is_err() {
        assert!(
            listening.elapsed() < Duration::from_secs(20),
            "the endpoint bot does not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    init_root(&db.url, dir.path(), true);
    let mut server = start_server(
        &db.url,
        dir.path(),
        &[
            "--http",
            "127.0.0.1:0",
            "--workers",
            "0",
            "--match-interval-ms",
            "200",
            "--tv-exchange-ms",
            "60",
            "--allow-private-endpoints",
            "--models",
            &models,
        ],
    );
    let inference = format!("127.0.0.1:{}", free_port());
    let mut worker = common::cli::start_worker(
        &db.url,
        dir.path(),
        1,
        &[
            "--allow-private-endpoints",
            "--models",
            &models,
            "--inference-listen",
            &inference,
        ],
    );
    let base = server.http.clone().expect("the site runs");
    let cli = Cli {
        server: &server.url.clone(),
    };
    let root = path("root.token");
    cli.ok(&root, &["season", "start", "spring"]);
    let endpoint = format!("grpc://127.0.0.1:{bot_port}");
    let counter = common::bots::wasm_path("counter");
    let mut dora = PathBuf::new();
    for (owner, bot, flag, value) in [
        ("alice", "a-counter", "--wasm", counter.as_str()),
        ("carol", "c-random", "--builtin", "builtin:random"),
        ("dora", "d-thinker", "--endpoint", endpoint.as_str()),
    ] {
        let token = common::cli::owner_with_bot(
            &cli,
            dir.path(),
            owner,
            5000,
            bot,
            [flag, value],
            Some(10),
        );
        if owner == "dora" {
            dora = token;
        }
    }
    let http = reqwest::Client::new();
    let get = |path: String| {
        let http = http.clone();
        let url = format!("{base}{path}");
        async move {
            let response = http.get(&url).send().await.expect("GET");
            let status = response.status().as_u16();
            (status, response.text().await.expect("body"))
        }
    };
    let json = |path: String| async move {
        let (status, body) = get(path.clone()).await;
        assert_eq!(status, 200, "{path}: {body}");
        serde_json::from_str::<Value>(&body).expect("JSON")
    };

    // Play until the thinker has settled matches in which it called the
    // model; meanwhile, the match Duel TV airs is in no list while it airs.
    let started = Instant::now();
    let mut aired_checks = 0;
    let thought = loop {
        assert!(
            started.elapsed() < PLAY_DEADLINE,
            "the thinker settled no match with model calls"
        );
        let before = json("/tv/now".to_owned()).await;
        let latest = json("/api/home".to_owned()).await;
        let listed = json("/api/matches?limit=50".to_owned()).await;
        let after = json("/tv/now".to_owned()).await;
        let airing = |now: &Value| {
            (now["on_air"]["ended"] == false)
                .then(|| now["on_air"]["match_id"].as_str().map(str::to_owned))
                .flatten()
        };
        if let (Some(on_air), Some(still)) = (airing(&before), airing(&after))
            && on_air == still
        {
            let shown = |page: &Value, pointer: &str| {
                page.pointer(pointer)
                    .and_then(Value::as_array)
                    .is_some_and(|items| items.iter().any(|m| m["id"] == on_air.as_str()))
            };
            assert!(
                !shown(&latest, "/latest/items") && !shown(&listed, "/matches/items"),
                "{on_air} is listed while Duel TV airs it"
            );
            aired_checks += 1;
        }
        let mine = json("/api/matches?bot=d-thinker&limit=50".to_owned()).await;
        let with_calls = mine["matches"]["items"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|line| {
                let side = usize::from(line["bot_b"] == "d-thinker");
                line["tokens"][side]
                    .as_i64()
                    .is_some_and(|tokens| tokens > 0)
            })
            .cloned();
        if let Some(line) = with_calls
            && aired_checks >= 3
        {
            break line;
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    };
    let match_id = thought["id"].as_str().expect("an id").to_owned();

    // A visitor: no transcript before the season ends.
    let (status, body) = get(format!("/matches/{match_id}/transcript")).await;
    assert_eq!(status, 404, "{body}");
    assert!(
        body.contains("will be public once season <a href=\"/seasons/spring\">spring</a> ends"),
        "{body}"
    );
    let (status, body) = get(format!("/api/matches/{match_id}/transcript")).await;
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("public once its season ends"), "{body}");

    // The owner, on the match page: the token goes in the form's body.
    wait_for_page(&mut chromium, &format!("{base}/matches/{match_id}"));
    assert!(text(&mut chromium, "section.owner").contains("Your bot's reasoning"));
    let token = std::fs::read_to_string(&dora).expect("dora's token");
    chromium.eval(&format!(
        "document.querySelector('form.token input[name=token]').value = {}",
        json!(token.trim())
    ));
    chromium.eval("document.querySelector('form.token').requestSubmit()");
    chromium.wait_for(
        "document.readyState === 'complete' && document.querySelector('h1') !== null && document.querySelector('h1').textContent.startsWith('Model calls')",
        &json!(true),
    );
    assert_eq!(
        chromium.eval("location.pathname"),
        json!(format!("/matches/{match_id}/transcript")),
        "the token is not in the address"
    );
    assert_eq!(chromium.eval("location.search"), json!(""));
    let decisions = chromium.eval("document.querySelectorAll('section.decision').length");
    assert!(decisions.as_u64().unwrap_or(0) > 0, "{decisions}");
    let page = text(&mut chromium, "main");
    for expected in [
        "d-thinker",
        "house",
        "completion",
        "JAB HEAVY BLOCK DODGE FEINT RECOVER",
    ] {
        assert!(
            page.contains(expected),
            "the transcript page lacks {expected}: {page}"
        );
    }
    let folder = screenshot_folder("site-screenshots");
    chromium.screenshot(&folder.join("site-transcript.png"));

    // The season ends; once no match runs, what the cost table says of the
    // thinker is what its replays say.
    cli.ok(&root, &["season", "end"]);
    let quiet = Instant::now();
    loop {
        let home = json("/api/home".to_owned()).await;
        if home["live"].as_array().is_some_and(Vec::is_empty) {
            break;
        }
        assert!(
            quiet.elapsed() < PLAY_DEADLINE,
            "matches still running: {home}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The match on air is withheld from listings: let its broadcast end.
    while json("/tv/now".to_owned()).await["on_air"]["ended"] == false {
        assert!(
            quiet.elapsed() < PLAY_DEADLINE,
            "Duel TV never ends its match"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let played = every_item(
        &http,
        &base,
        "/api/matches?bot=d-thinker&limit=200",
        "/matches",
    )
    .await;
    let (mut tokens, mut cost_usd, mut wins) = (0u64, 0.0f64, 0);
    for line in &played {
        let id = line["id"].as_str().expect("id");
        let bytes = http
            .get(format!("{base}/replays/{id}"))
            .send()
            .await
            .expect("GET replay")
            .bytes()
            .await
            .expect("replay");
        let replay = duel_replays::Replay::from_slice(&bytes).expect("a replay");
        let side = if line["bot_a"] == "d-thinker" {
            duel_rules::Side::A
        } else {
            duel_rules::Side::B
        };
        tokens += replay.result.tokens_used[side.index()];
        for spend in replay.model_spend(side) {
            cost_usd += spend.cost_usd.expect("the house model is priced");
        }
        wins += i64::from(line["winner"] == ["a", "b"][side.index()]);
    }
    let cost = json("/api/seasons/spring/cost".to_owned()).await;
    let light = cost["classes"]
        .as_array()
        .and_then(|classes| classes.iter().find(|c| c["class"] == "light"))
        .expect("the light class");
    let line = light["bots"]
        .as_array()
        .and_then(|bots| bots.iter().find(|b| b["bot"] == "d-thinker"))
        .unwrap_or_else(|| panic!("d-thinker in {light}"));
    assert_eq!(line["matches"], json!(played.len()), "{line}");
    assert_eq!(line["wins"], json!(wins), "{line}");
    assert_eq!(line["tokens"], json!(tokens), "{line}");
    assert!(tokens > 0);
    let stated = line["cost_usd"].as_f64().expect("cost_usd");
    assert!(
        (stated - cost_usd).abs() < 1e-9,
        "{stated} vs {cost_usd} from the replays"
    );

    // After the season: the transcript is everyone's, as a page (prompts
    // folded, fitting a phone) and as its JSON twin, which proves against
    // the signed replay.
    wait_for_page(
        &mut chromium,
        &format!("{base}/matches/{match_id}/transcript"),
    );
    let folded = chromium.eval(
        "[document.querySelectorAll('section.exchange').length, \
          document.querySelectorAll('details.prompt:not([open])').length]",
    );
    assert!(
        folded[0].as_u64().unwrap_or(0) > 0 && folded[1].as_u64().unwrap_or(0) > 0,
        "{folded}"
    );
    assert!(text(&mut chromium, "main").contains("d-thinker"));
    // Seen as a spectator, on a laptop and on a phone.
    let mut problems = Vec::new();
    for width in SPECTATOR_WIDTHS {
        screen(&mut chromium, width);
        wait_for_page(
            &mut chromium,
            &format!("{base}/matches/{match_id}/transcript"),
        );
        fits_the_screen(&mut chromium, "the public transcript");
        problems.extend(spectator_shot(
            &mut chromium,
            &folder,
            "transcript",
            width,
            "site",
        ));
    }
    assert_spectator_sees_no_problem(&problems);
    let (status, body) = get(format!("/api/matches/{match_id}/transcript")).await;
    assert_eq!(status, 200, "{body}");
    let parsed = duel_replays::transcript::ParsedTranscript::from_slice(body.as_bytes())
        .expect("a transcript");
    let replay_bytes = http
        .get(format!("{base}/replays/{match_id}"))
        .send()
        .await
        .expect("GET replay")
        .bytes()
        .await
        .expect("replay");
    let replay = duel_replays::Replay::from_slice(&replay_bytes).expect("a replay");
    duel_replays::verify_transcript(&replay, &parsed).expect("the transcript proves");

    terminate(&mut worker.0, "ladder worker").await;
    terminate(&mut server.child, "ladder serve").await;
    db.cleanup().await;
}
