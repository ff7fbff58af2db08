//! The cost page in real headless Chromium (issue 49, item 6: "the cost
//! page reads at a glance"). `ladder bench-site seed` fills the database with
//! a crowded season (100 bots a class, each spending model tokens), its light
//! bots' decisions are marked lost to the fallback, and `ladder serve --http`
//! serves it. At 1366 and 390 px wide: every bot's point of every chart is in
//! view, no two texts of a chart overlap, texts stay readable, only the
//! frontier is named, the chart has its legend, the table's headers break
//! only where they read well, and the Fallbacks column names its causes. On
//! SQLite and PostgreSQL; screenshots under `<target>/site-screenshots/`.

use crate::common;

use std::process::Command;

use common::TestDb;
use common::chromium::{Chromium, screenshot_folder};
use common::cli::{LADDER, start_server, terminate};
use serde_json::{Value, json};

/// The seeded season being looked at (`bench-site seed` names its two).
const SEASON: &str = "bench-running";

/// Every chart of the page as the browser lays it out: its points, how many
/// lie outside the window across, its visible texts that overlap another,
/// its bot names and the shortest visible text (CSS pixels), and its table's
/// rows and the bots the table tags as on the frontier.
const CHARTS: &str = r#"(() => [...document.querySelectorAll('svg.cost-chart')].map(svg => {
    const box = element => element.getBoundingClientRect();
    const circles = [...svg.querySelectorAll('circle')].map(box);
    const texts = [...svg.querySelectorAll('text')]
        .map(text => ({ text: text.textContent, rect: box(text) }))
        .filter(text => text.rect.width > 0 && text.rect.height > 0);
    const overlaps = [];
    texts.forEach((one, at) => texts.slice(at + 1).forEach(other => {
        const [a, b] = [one.rect, other.rect];
        if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) {
            overlaps.push(`${one.text} [${a.left},${a.top},${a.right},${a.bottom}] / ${other.text} [${b.left},${b.top},${b.right},${b.bottom}]`);
        }
    }));
    return {
        id: svg.id,
        points: circles.length,
        outside: circles.filter(r => r.left < 0 || r.right > window.innerWidth).length,
        overlaps,
        names: [...svg.querySelectorAll('g.names text')].map(text => text.textContent),
        smallest: Math.min(...texts.map(text => text.rect.height)),
        hover: [...svg.querySelectorAll('circle > title')].length,
        rows: svg.closest('section').querySelectorAll('table.cost tbody tr').length,
        frontier: [...svg.closest('section').querySelectorAll('table.cost tbody tr')]
            .filter(row => row.querySelector('.tag'))
            .map(row => row.querySelector('a').textContent),
    };
}))()"#;

/// The lines each cost table header is set on, each light and middle bot's
/// Fallbacks cell, the charts' legends and the page's width.
const TABLES: &str = r#"(() => {
    const lines = header => {
        const range = document.createRange();
        range.selectNodeContents(header);
        return new Set([...range.getClientRects()].map(rect => Math.round(rect.top))).size;
    };
    const headers = [...document.querySelectorAll('table.cost thead th')];
    const cells = klass => [...document.querySelectorAll(`#cost-${klass} table.cost tbody td.fallbacks`)]
        .map(td => [...td.querySelectorAll('.cause')].map(cause => cause.textContent).join(' | ') || td.textContent);
    return {
        header_lines: headers.map(lines),
        header: headers.map(th => th.textContent),
        light: cells('light'),
        middle: cells('middle'),
        legend: [...document.querySelectorAll('figure.chart figcaption.legend')].map(legend => legend.textContent),
        width: [document.documentElement.scrollWidth, window.innerWidth],
    };
})()"#;

async fn cost_page_reads_at_a_glance(db: &TestDb) {
    let Some(mut chromium) = Chromium::launch() else {
        return;
    };
    let backend = if db.url.starts_with("postgres") {
        "postgres"
    } else {
        "sqlite"
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let seed = Command::new(LADDER)
        .args([
            "bench-site",
            "seed",
            "--db",
            &db.url,
            "--bots",
            "300",
            "--matches",
            "4000",
        ])
        .output()
        .expect("ladder bench-site seed");
    assert!(
        seed.status.success(),
        "{}",
        String::from_utf8_lossy(&seed.stderr)
    );
    // The light bots lost 2 % of their decisions to the clock and 4 % to
    // their budget (as settlement would have summed it), none to a fault;
    // the middle bots lost none.
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&db.url)
        .await
        .expect("open the seeded database");
    let marked = sqlx::query(
        "UPDATE ratings SET fallback_timeout = decisions / 50, fallback_budget = decisions / 25, \
         fallback_fault = 0 \
         WHERE class = 'light' AND decisions >= 50 \
         AND season_id = (SELECT id FROM seasons WHERE name = $1)",
    )
    .bind(SEASON)
    .execute(&pool)
    .await
    .expect("mark fallbacks");
    assert!(marked.rows_affected() > 0);
    pool.close().await;

    let mut server = start_server(
        &db.url,
        dir.path(),
        &["--http", "127.0.0.1:0", "--workers", "0"],
    );
    let base = server.http.clone().expect("the site runs");
    let body = reqwest::get(format!("{base}/api/seasons/{SEASON}/cost?limit=200"))
        .await
        .expect("GET the cost JSON")
        .bytes()
        .await
        .expect("the cost JSON's body");
    let cost: Value = serde_json::from_slice(&body).expect("cost JSON");
    let bots_of = |class: &str| -> u64 {
        cost["classes"]
            .as_array()
            .and_then(|classes| classes.iter().find(|entry| entry["class"] == class))
            .and_then(|entry| entry["total_bots"].as_u64())
            .unwrap_or_else(|| panic!("class {class} in {cost}"))
    };
    let folder = screenshot_folder("site-screenshots");
    for (width, mobile) in [(1366, false), (390, true)] {
        chromium.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": mobile}),
        );
        chromium.navigate(&format!("{base}/seasons/{SEASON}/cost?limit=200"));
        chromium.wait_for(
            "document.readyState === 'complete' && document.body !== null",
            &json!(true),
        );
        chromium.screenshot(&folder.join(format!("site-cost-crowded-{backend}-{width}.png")));

        let charts = chromium.eval(CHARTS);
        let charts = charts.as_array().expect("charts");
        assert_eq!(charts.len(), 3, "a chart a class at {width} px: {charts:?}");
        for chart in charts {
            let class = chart["id"]
                .as_str()
                .and_then(|id| id.strip_prefix("cost-chart-"))
                .expect("a class's chart");
            let bots = bots_of(class);
            assert!(bots >= 50, "a crowded class: {bots} bots of {class}");
            // Every bot of its table is a point in view, and names itself
            // on hover.
            assert_eq!(chart["points"], json!(bots), "{width} px: {chart}");
            assert_eq!(chart["rows"], json!(bots), "{width} px: {chart}");
            assert_eq!(chart["hover"], json!(bots), "{width} px: {chart}");
            assert_eq!(chart["outside"], json!(0), "{width} px: {chart}");
            // No two texts of the chart overlap: names, ticks, axis names.
            assert_eq!(chart["overlaps"], json!([]), "{width} px: {chart}");
            // Its frontier is named (the bots the table tags), and only it.
            let frontier = chart["frontier"].as_array().expect("frontier");
            let names = chart["names"].as_array().expect("names");
            assert!(!names.is_empty(), "{width} px: {chart}");
            for name in names {
                assert!(
                    frontier.contains(name),
                    "{width} px: {name} is not on the frontier: {chart}"
                );
            }
            let smallest = chart["smallest"].as_f64().unwrap_or(0.0);
            assert!(
                smallest >= 8.0,
                "{width} px: texts {smallest} px tall: {chart}"
            );
        }

        let tables = chromium.eval(TABLES);
        let fits = &tables["width"];
        assert!(
            fits[0].as_f64() <= fits[1].as_f64(),
            "the page is wider than the screen at {width} px: {tables}"
        );
        // A header on two lines at most: "Rating" and "− 2·RD", "Tokens /"
        // and "match" (they were "Rating", "−", "2·RD").
        for (lines, header) in tables["header_lines"]
            .as_array()
            .expect("lines")
            .iter()
            .zip(tables["header"].as_array().expect("headers"))
        {
            assert!(
                lines.as_u64().is_some_and(|lines| lines <= 2),
                "{width} px: {header} on {lines} lines"
            );
        }
        // Fallbacks named by cause.
        let light = tables["light"].as_array().expect("light cells");
        assert_eq!(light.len() as u64, bots_of("light"), "{tables}");
        assert!(
            light
                .iter()
                .filter_map(Value::as_str)
                .any(|cell| cell.starts_with("timeout ")
                    && cell.contains(" | over budget ")
                    && cell.ends_with('%')
                    && !cell.contains("fault")),
            "{tables}"
        );
        let middle = tables["middle"].as_array().expect("middle cells");
        assert!(!middle.is_empty(), "{tables}");
        assert!(middle.iter().all(|cell| cell == "none"), "{tables}");
        // A legend that says what the frontier is.
        let legends = tables["legend"].as_array().expect("legends");
        assert_eq!(legends.len(), 3, "{tables}");
        for legend in legends {
            let legend = legend.as_str().unwrap_or_default();
            assert!(
                legend.contains("The frontier: the bots no other bot beats on both counts")
                    && legend.contains("hover it for its name"),
                "{legend}"
            );
        }
    }

    terminate(&mut server.child, "ladder serve").await;
}

both_backends!(cost_page_in_chromium, cost_page_reads_at_a_glance);
