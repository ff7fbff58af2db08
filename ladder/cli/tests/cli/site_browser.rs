//! The ladder site in real headless Chromium (issue 14). A season is played
//! through the binaries: `ladder serve --http --workers 0` and a separate
//! `ladder worker` process, three owners' active bots (two WASM, one
//! built-in). The browser opens `/`, follows a standings link to a bot page
//! whose chart has one point per rated match, opens a head-to-head page, and
//! watches Duel TV advance exchange by exchange; then again at 390 px, where
//! no page is wider than the screen. Screenshots (desktop and phone) are kept
//! under `<target>/site-screenshots/`; the checks read the page text, not
//! pixels.

use crate::common;

use std::path::PathBuf;
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
fn fits_the_screen(chromium: &mut Chromium, what: &str) {
    let widths = chromium.eval("[document.documentElement.scrollWidth, window.innerWidth]");
    assert!(
        widths[0].as_f64() <= widths[1].as_f64(),
        "{what} is wider than the screen: {widths}"
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
    chromium.screenshot(&folder.join("site-home.png"));
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
    chromium.screenshot(&folder.join("site-bot.png"));

    // Its head-to-head with an opponent.
    chromium.click("a.versus");
    chromium.wait_for("location.pathname.includes('/vs/')", &json!(true));
    chromium.wait_for("document.readyState === 'complete'", &json!(true));
    let heading = text(&mut chromium, "h1");
    assert!(heading.starts_with(&format!("{bot} vs ")), "{heading}");
    assert!(text(&mut chromium, "p.score").contains(" W · "));
    chromium.screenshot(&folder.join("site-versus.png"));

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
    chromium.screenshot(&folder.join("site-match.png"));

    // What a win cost: a chart per class with a point per bot.
    wait_for_page(&mut chromium, &format!("{base}/seasons/winter/cost"));
    let points = chromium.eval("document.querySelectorAll('#cost-chart-light circle').length");
    let rows = chromium.eval("document.querySelectorAll('#cost-light table.cost tbody tr').length");
    assert_eq!(points, rows, "a point per bot of the table");
    assert!(rows.as_u64().unwrap_or(0) >= 2, "{rows}");
    chromium.screenshot(&folder.join("site-cost.png"));

    // 390 px wide: every page fits, tables scroll inside it.
    phone(&mut chromium);
    for (url, shot) in [
        (format!("{base}/"), "site-home-390.png"),
        (format!("{base}/bots/{bot}"), "site-bot-390.png"),
        (format!("{base}/seasons/winter"), "site-season-390.png"),
        (format!("{base}/matches"), "site-matches-390.png"),
        (format!("{base}/seasons/winter/cost"), "site-cost-390.png"),
    ] {
        wait_for_page(&mut chromium, &url);
        fits_the_screen(&mut chromium, &url);
        chromium.screenshot(&folder.join(shot));
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

    terminate(&mut worker.0, "ladder worker").await;
    terminate(&mut server.child, "ladder serve").await;
    db.cleanup().await;
}
