//! `ladder bench-site load`: a bounded load of the site's pages over loopback.
//! Each page and its JSON twin gets a fixed number of requests at a fixed
//! concurrency (after a few unmeasured warm-up requests); the report gives
//! p50/p95/p99/max latency and requests per second. The pages' addresses
//! (the busiest bot, its rival, the cursors of a deep standings page and of
//! listing page [`BENCH_SITE_DEEP_LISTING_PAGE`]) are computed in SQL from the
//! database, not by walking pages. A seed given a replay store also wrote
//! transcripts, and the newest is read as the public reads it once revealed
//! (`/matches/{id}/transcript`, the page and its twin); the newest match's
//! transcript, withheld until its season ends, is the 404 page that says when.
//! Duel TV's page (`/tv`) is measured like the others. Then [`BENCH_SITE_SSE_WATCHERS`]-style
//! concurrent watchers of Duel TV (`/tv`) with the server's RSS before and
//! after, when the server has Duel TV.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::seed::{self, LoadTargets};
use crate::error::{BenchError, Result};
use duel_ladder_site::limits::SITE_PAGE_ROWS;

use crate::limits::{
    BENCH_SITE_DEEP_LISTING_PAGE, BENCH_SITE_MAX_CONCURRENCY, BENCH_SITE_MAX_REQUESTS,
    BENCH_SITE_REQUEST_TIMEOUT, BENCH_SITE_SSE_CONNECT_TIMEOUT, BENCH_SITE_SSE_HOLD,
    BENCH_SITE_WARMUP_REQUESTS,
};

/// The p95 and p99 each page must meet, in milliseconds.
pub const TARGET_P95_MS: f64 = 50.0;
pub const TARGET_P99_MS: f64 = 100.0;

/// How a load runs.
#[derive(Clone, Debug)]
pub struct LoadConfig {
    /// The site's base URL, e.g. `http://127.0.0.1:8080`.
    pub url: String,
    /// The database the server serves (read to find the pages' addresses).
    pub db_url: String,
    pub requests: usize,
    pub concurrency: usize,
    /// The serve process, whose RSS is read around the SSE watchers.
    pub server_pid: Option<u32>,
    /// SSE watchers of `/tv` (0: skip).
    pub watchers: usize,
}

/// One page measured, in one format.
#[derive(Clone, Debug, Serialize)]
pub struct PageFigures {
    pub page: String,
    /// `html` or `json`.
    pub format: &'static str,
    pub path: String,
    /// The status every answer must have: 200, or 404 for a page that says
    /// why there is nothing yet.
    pub status: u16,
    pub requests: usize,
    /// Requests that failed or answered other than `status`.
    pub errors: usize,
    /// The first failure, if any.
    pub first_error: Option<String>,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub requests_per_s: f64,
    /// Median response body size.
    pub body_bytes: usize,
    /// p95 ≤ [`TARGET_P95_MS`] and p99 ≤ [`TARGET_P99_MS`], without errors.
    pub meets_target: bool,
}

/// The SSE watchers' measurement.
#[derive(Clone, Debug, Serialize)]
pub struct SseFigures {
    pub path: &'static str,
    /// `measured`, or why not (`/tv` missing: it needs Duel TV).
    pub status: String,
    pub watchers_requested: usize,
    pub watchers_connected: usize,
    pub rss_before_kib: Option<u64>,
    pub rss_after_kib: Option<u64>,
    pub rss_per_watcher_kib: Option<f64>,
    /// How long the slowest watcher took to get its response headers.
    pub slowest_connect_ms: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct LoadReport {
    pub url: String,
    pub backend: &'static str,
    pub requests_per_page: usize,
    pub concurrency: usize,
    pub warmup_requests: usize,
    /// What the pages are: the busiest bot, its rival, the pages' numbers.
    pub notes: Vec<String>,
    pub pages: Vec<PageFigures>,
    pub sse: Option<SseFigures>,
}

impl LoadReport {
    /// Failed requests over all pages.
    pub fn errors(&self) -> usize {
        self.pages.iter().map(|page| page.errors).sum()
    }

    /// The report as a text table, one line per page and format.
    pub fn table(&self) -> String {
        let mut out = format!(
            "{} at {}: {} requests per page at concurrency {} (after {} warm-up)\n",
            self.backend, self.url, self.requests_per_page, self.concurrency, self.warmup_requests
        );
        for note in &self.notes {
            out.push_str(&format!("  {note}\n"));
        }
        out.push_str(&format!(
            "{:<22} {:<5} {:>7} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}  target\n",
            "page",
            "fmt",
            "reqs",
            "errors",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "max ms",
            "req/s",
            "bytes"
        ));
        for page in &self.pages {
            out.push_str(&format!(
                "{:<22} {:<5} {:>7} {:>6} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.0} {:>8}  {}\n",
                page.page,
                page.format,
                page.requests,
                page.errors,
                page.p50_ms,
                page.p95_ms,
                page.p99_ms,
                page.max_ms,
                page.requests_per_s,
                page.body_bytes,
                if page.meets_target { "ok" } else { "MISS" }
            ));
            if let Some(error) = &page.first_error {
                out.push_str(&format!("    first error: {error}\n"));
            }
        }
        if let Some(sse) = &self.sse {
            out.push_str(&format!(
                "SSE {}: {} ({} of {} watchers connected)",
                sse.path, sse.status, sse.watchers_connected, sse.watchers_requested
            ));
            if let (Some(before), Some(after)) = (sse.rss_before_kib, sse.rss_after_kib) {
                out.push_str(&format!(", server RSS {before} KiB -> {after} KiB"));
            }
            if let Some(per) = sse.rss_per_watcher_kib {
                out.push_str(&format!(", {per:.1} KiB per watcher"));
            }
            if let Some(slowest) = sse.slowest_connect_ms {
                out.push_str(&format!(", slowest connect {slowest:.1} ms"));
            }
            out.push('\n');
        }
        out
    }
}

/// A page to measure: its name and its HTML path (the JSON twin is `/api…`),
/// and the status both answer with.
struct Target {
    page: String,
    path: String,
    query: Option<String>,
    /// 200, or 404 for a page whose answer is to say why there is nothing
    /// (a transcript before its reveal).
    status: reqwest::StatusCode,
    /// It reads a replay store's files (a transcript): measured only when
    /// the seed wrote them.
    needs_replays: bool,
}

impl Target {
    fn new(page: &str, path: String, query: Option<String>) -> Target {
        Target {
            page: page.to_owned(),
            path,
            query,
            status: reqwest::StatusCode::OK,
            needs_replays: false,
        }
    }

    /// The formats measured: HTML and JSON.
    fn formats(&self) -> &'static [bool] {
        &[false, true]
    }

    fn address(&self, json: bool) -> String {
        let prefix = if json && self.path == "/" {
            return self.with_query("/api/home".to_owned());
        } else if json {
            "/api"
        } else {
            ""
        };
        self.with_query(format!("{prefix}{}", self.path))
    }

    fn with_query(&self, path: String) -> String {
        match &self.query {
            Some(query) => format!("{path}?{query}"),
            None => path,
        }
    }
}

fn query(pairs: &[(&str, &str)]) -> Result<String> {
    serde_urlencoded::to_string(pairs).map_err(BenchError::Query)
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The pages of a seeded ladder (their addresses found in SQL).
async fn targets(db: &sqlx::AnyPool) -> Result<(Vec<Target>, Vec<String>)> {
    let page_rows = to_i64(SITE_PAGE_ROWS as u64);
    let found = seed::load_targets(db, page_rows, to_i64(BENCH_SITE_DEEP_LISTING_PAGE)).await?;
    let LoadTargets {
        season,
        class,
        in_class,
        bot,
        bot_matches,
        rival,
        rivalry,
        latest_match,
        settled,
        listing_page,
        last_page,
        ..
    } = &found;
    let listing_query = match &found.listing_cursor {
        Some(cursor) => Some(query(&[("cursor", &cursor.encode())])?),
        None => None,
    };
    let standings_query = match &found.standings_cursor {
        Some(cursor) => query(&[("class", class), ("cursor", &cursor.encode())])?,
        None => query(&[("class", class)])?,
    };
    let standings_page = found.standings_page;
    let mut notes = vec![
        format!(
            "season {season}; class {class}: {in_class} bots, deep standings page {standings_page}"
        ),
        format!("bot {bot}: {bot_matches} matches; head-to-head with {rival}: {rivalry}+ matches"),
        format!("listing: {settled} settled matches, page {listing_page} of {last_page}"),
    ];
    let season_path = format!("/seasons/{season}");
    let cost_path = format!("{season_path}/cost");
    let mut targets = vec![
        Target::new("home", "/".to_owned(), None),
        Target::new(
            "standings p1",
            season_path.clone(),
            Some(query(&[("class", class)])?),
        ),
        Target::new(
            &format!("standings p{standings_page}"),
            season_path,
            Some(standings_query),
        ),
        Target::new("bot (chart)", format!("/bots/{bot}"), None),
        Target::new("head-to-head", format!("/bots/{bot}/vs/{rival}"), None),
        Target::new("match", format!("/matches/{latest_match}"), None),
        Target::new(
            &format!("matches p{listing_page}"),
            "/matches".to_owned(),
            listing_query,
        ),
        Target::new(
            "matches bot won",
            "/matches".to_owned(),
            Some(query(&[("bot", bot.as_str()), ("result", "win")])?),
        ),
        Target::new(
            "win cost (class)",
            cost_path,
            Some(query(&[("class", class)])?),
        ),
    ];
    targets.push(Target::new("TV", "/tv".to_owned(), None));
    targets.push(Target {
        status: reqwest::StatusCode::NOT_FOUND,
        ..Target::new(
            "transcript (withheld)",
            format!("/matches/{latest_match}/transcript"),
            None,
        )
    });
    match &found.transcript_match {
        Some(id) => targets.push(Target {
            needs_replays: true,
            ..Target::new(
                "transcript (heavy)",
                format!("/matches/{id}/transcript"),
                None,
            )
        }),
        None => notes.push(
            "transcript: the ended season has no heavy match in which a model was called"
                .to_owned(),
        ),
    }
    Ok((targets, notes))
}

/// The value at quantile `q` (nearest rank) of sorted `values`.
fn quantile(sorted: &[Duration], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1].as_secs_f64() * 1_000.0
}

struct Sample {
    latency: Duration,
    bytes: usize,
    error: Option<String>,
}

/// What a request accepts: a page asks as a browser does, since `/tv` answers
/// a client that does not ask for HTML with its never-ending stream.
fn accept(json: bool) -> &'static str {
    if json {
        "application/json"
    } else {
        "text/html,application/xhtml+xml"
    }
}

async fn fetch(
    client: &reqwest::Client,
    url: &str,
    json: bool,
    expected: reqwest::StatusCode,
) -> Sample {
    let began = Instant::now();
    let outcome = async {
        let response = client
            .get(url)
            .header(reqwest::header::ACCEPT, accept(json))
            .send()
            .await
            .map_err(|error| error.to_string())?;
        let status = response.status();
        let body = response.bytes().await.map_err(|error| error.to_string())?;
        if status != expected {
            let text = String::from_utf8_lossy(&body);
            return Err(format!(
                "{status}: {}",
                text.chars().take(200).collect::<String>()
            ));
        }
        Ok(body.len())
    }
    .await;
    let latency = began.elapsed();
    match outcome {
        Ok(bytes) => Sample {
            latency,
            bytes,
            error: None,
        },
        Err(error) => Sample {
            latency,
            bytes: 0,
            error: Some(error),
        },
    }
}

async fn measure(
    client: &reqwest::Client,
    base: &str,
    target: &Target,
    json: bool,
    config: &LoadConfig,
) -> PageFigures {
    let url = format!("{base}{}", target.address(json));
    for _ in 0..BENCH_SITE_WARMUP_REQUESTS.min(config.requests) {
        let _ = fetch(client, &url, json, target.status).await;
    }
    let next = Arc::new(AtomicUsize::new(0));
    let began = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..config.concurrency.min(config.requests).max(1) {
        let client = client.clone();
        let url = url.clone();
        let expected = target.status;
        let next = Arc::clone(&next);
        let total = config.requests;
        tasks.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < total {
                samples.push(fetch(&client, &url, json, expected).await);
            }
            samples
        }));
    }
    let mut samples = Vec::new();
    for task in tasks {
        match task.await {
            Ok(mut done) => samples.append(&mut done),
            Err(error) => samples.push(Sample {
                latency: Duration::ZERO,
                bytes: 0,
                error: Some(format!("load task failed: {error}")),
            }),
        }
    }
    let wall = began.elapsed();
    let errors = samples
        .iter()
        .filter(|sample| sample.error.is_some())
        .count();
    let first_error = samples.iter().find_map(|sample| sample.error.clone());
    let mut latencies: Vec<Duration> = samples.iter().map(|sample| sample.latency).collect();
    latencies.sort();
    let mut sizes: Vec<usize> = samples.iter().map(|sample| sample.bytes).collect();
    sizes.sort_unstable();
    let p95_ms = quantile(&latencies, 0.95);
    let p99_ms = quantile(&latencies, 0.99);
    PageFigures {
        page: target.page.clone(),
        format: if json { "json" } else { "html" },
        path: target.address(json),
        status: target.status.as_u16(),
        requests: samples.len(),
        errors,
        first_error,
        p50_ms: quantile(&latencies, 0.50),
        p95_ms,
        p99_ms,
        max_ms: quantile(&latencies, 1.0),
        requests_per_s: samples.len() as f64 / wall.as_secs_f64().max(1e-9),
        body_bytes: sizes.get(sizes.len() / 2).copied().unwrap_or(0),
        meets_target: errors == 0 && p95_ms <= TARGET_P95_MS && p99_ms <= TARGET_P99_MS,
    }
}

/// The resident set of process `pid`, in KiB (Linux `/proc`).
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
}

async fn watchers(base: &str, config: &LoadConfig) -> SseFigures {
    // Duel TV's stream (issue 49 moved it from /tv, now the page).
    const PATH: &str = "/tv/events";
    let mut figures = SseFigures {
        path: PATH,
        status: String::new(),
        watchers_requested: config.watchers,
        watchers_connected: 0,
        rss_before_kib: None,
        rss_after_kib: None,
        rss_per_watcher_kib: None,
        slowest_connect_ms: None,
    };
    let url = format!("{base}{PATH}");
    // A client without a total timeout: the streams stay open.
    let client = match reqwest::Client::builder()
        .connect_timeout(BENCH_SITE_SSE_CONNECT_TIMEOUT)
        .build()
    {
        Ok(client) => client,
        Err(error) => {
            figures.status = format!("no HTTP client: {error}");
            return figures;
        }
    };
    let probe = tokio::time::timeout(BENCH_SITE_SSE_CONNECT_TIMEOUT, client.get(&url).send()).await;
    match probe {
        Ok(Ok(response)) if response.status() == reqwest::StatusCode::OK => drop(response),
        Ok(Ok(response)) => {
            figures.status = format!(
                "not measured: {PATH} answered {} (the measurement needs Duel TV)",
                response.status()
            );
            return figures;
        }
        Ok(Err(error)) => {
            figures.status = format!("not measured: {PATH}: {error}");
            return figures;
        }
        Err(_) => {
            figures.status = format!("not measured: {PATH} sent no headers in time");
            return figures;
        }
    }
    figures.rss_before_kib = config.server_pid.and_then(rss_kib);
    let mut tasks = Vec::new();
    for _ in 0..config.watchers {
        let client = client.clone();
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            let began = Instant::now();
            let response =
                tokio::time::timeout(BENCH_SITE_SSE_CONNECT_TIMEOUT, client.get(&url).send())
                    .await
                    .ok()?
                    .ok()?;
            (response.status() == reqwest::StatusCode::OK).then(|| (response, began.elapsed()))
        }));
    }
    let mut held = Vec::new();
    let mut slowest = Duration::ZERO;
    for task in tasks {
        if let Ok(Some((response, took))) = task.await {
            slowest = slowest.max(took);
            held.push(response);
        }
    }
    tokio::time::sleep(BENCH_SITE_SSE_HOLD).await;
    figures.watchers_connected = held.len();
    figures.slowest_connect_ms = Some(slowest.as_secs_f64() * 1_000.0);
    figures.rss_after_kib = config.server_pid.and_then(rss_kib);
    if let (Some(before), Some(after)) = (figures.rss_before_kib, figures.rss_after_kib)
        && !held.is_empty()
    {
        figures.rss_per_watcher_kib = Some((after as f64 - before as f64) / held.len() as f64);
    }
    figures.status = "measured".to_owned();
    drop(held);
    figures
}

/// Runs the load against a running `ladder serve --http` over `config.db_url`.
pub async fn load(config: &LoadConfig) -> Result<LoadReport> {
    if config.requests == 0 || config.requests > BENCH_SITE_MAX_REQUESTS {
        return Err(BenchError::Invalid(format!(
            "--requests must be 1 to {BENCH_SITE_MAX_REQUESTS}"
        )));
    }
    if config.concurrency == 0 || config.concurrency > BENCH_SITE_MAX_CONCURRENCY {
        return Err(BenchError::Invalid(format!(
            "--concurrency must be 1 to {BENCH_SITE_MAX_CONCURRENCY}"
        )));
    }
    let base = config.url.trim_end_matches('/').to_owned();
    let store = duel_ladder_store::Store::connect(&config.db_url).await?;
    let backend = store.backend();
    store.close().await;
    let db = seed::open(&config.db_url).await?;
    let (targets, mut notes) = targets(&db).await?;
    db.close().await;
    let client = reqwest::Client::builder()
        .timeout(BENCH_SITE_REQUEST_TIMEOUT)
        .pool_max_idle_per_host(config.concurrency)
        .build()
        .map_err(BenchError::HttpClient)?;
    let mut pages = Vec::new();
    for target in &targets {
        if target.needs_replays {
            // A transcript exists only when the seed was given the replay
            // store the server reads; without one, say so and skip it.
            let url = format!("{base}{}", target.address(true));
            if let Some(error) = fetch(&client, &url, true, target.status).await.error {
                notes.push(format!(
                    "{}: not measured, {} answered {error} (seed with --replays, the store \
                     `ladder serve --replays` reads)",
                    target.page,
                    target.address(true)
                ));
                continue;
            }
        }
        for &json in target.formats() {
            let figures = measure(&client, &base, target, json, config).await;
            tracing::info!(page = %figures.page, format = figures.format, p95_ms = figures.p95_ms, "measured");
            pages.push(figures);
        }
    }
    let sse = if config.watchers > 0 {
        Some(watchers(&base, config).await)
    } else {
        None
    };
    Ok(LoadReport {
        url: base,
        backend,
        requests_per_page: config.requests,
        concurrency: config.concurrency,
        warmup_requests: BENCH_SITE_WARMUP_REQUESTS.min(config.requests),
        notes,
        pages,
        sse,
    })
}
