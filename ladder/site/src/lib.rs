//! The public ladder site and Duel TV that `ladder serve --http` serves beside
//! the replay service: server-rendered pages, each with a JSON twin under
//! `/api`, and the paced broadcast of ranked matches ([`tv`]).
//!
//! Architecture invariant: the site reads the ladder through
//! [`duel_ladder_store::Reads`] only, so no page can change it; and only the
//! `ladder` binary and the bench (its page size) depend on this crate, so a
//! page's change rebuilds the site, the bench and the CLI alone.
//!
//! | page | JSON twin |
//! |---|---|
//! | `/` — Duel TV, latest ranked matches, top of each class | `/api/home` |
//! | `/seasons` | `/api/seasons` |
//! | `/seasons/{season}[?class=&cursor=&limit=]` — name or id | `/api/seasons/{season}` |
//! | `/seasons/{season}/cost[?class=&cursor=&limit=]` — what a win cost, by bot and by model | `/api/seasons/{season}/cost` |
//! | `/bots/{bot}[?cursor=&limit=]` — chart, matches, opponents | `/api/bots/{bot}` |
//! | `/bots/{a}/vs/{b}[?cursor=&limit=]` | `/api/bots/{a}/vs/{b}` |
//! | `/matches[?class=&bot=&result=&cursor=&limit=]` — settled ranked matches, filtered | `/api/matches` |
//! | `/matches/{id}` — links to the viewer and the replay | `/api/matches/{id}` |
//! | `/matches/{id}/transcript` — the model calls once public, else when they will be ([`transcripts`]) | `/api/matches/{id}/transcript` |
//!
//! Listings page by keyset: `next_cursor` of one page is the `cursor=` of the
//! next. Handlers parse, load ([`data`]), and render ([`pages`]) or serialize;
//! [`SiteError`] is the one place errors become responses.

pub mod chart;
pub mod data;
pub mod limits;
pub mod pages;
pub mod transcripts;
pub mod tv;

use axum::Router;
use std::sync::Arc;

use axum::extract::{FromRef, Path, RawQuery, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use duel_rules::WeightClass;
use maud::Markup;
use serde::{Deserialize, Serialize};

use crate::limits::{MAX_SITE_PAGE_ROWS, SITE_PAGE_MAX_AGE_S, SITE_PAGE_ROWS};
use duel_ladder_store::Reads;
use duel_ladder_store::error::LadderError;
use duel_ladder_store::site::{MatchCursor, MatchLine, MatchResult, Page, StandingCursor};

const SITE_CSS: &str = include_str!("site.css");

/// The site's and Duel TV's routes over `reads`, and Duel TV's broadcast
/// (stopped by `shutdown`), paced by `tv`. Each broadcast is also published
/// into `live`, so the replay service's `/live` lists it while it airs.
/// Transcripts are public as `reveal` says, and the owner's form takes
/// `form_rate` POSTs per client ([`transcripts`]).
pub fn mount(
    reads: Reads,
    replays: duel_replays::store::ReplayStore,
    live: duel_referee::publish::LiveFeeds,
    shutdown: tokio::sync::watch::Receiver<bool>,
    tv: tv::TvConfig,
    reveal: duel_ladder_core::reveal::RevealPolicy,
    form_rate: transcripts::FormRate,
) -> (Router, tokio::task::JoinHandle<()>) {
    let transcripts = transcripts::router(reads.clone(), replays.clone(), reveal, form_rate);
    let duel_tv = tv::DuelTv::new(reads.clone(), replays, Some(live), tv);
    let broadcast = tokio::spawn(duel_tv.clone().run(shutdown));
    let airing = duel_tv.clone();
    let on_air: OnAirNow = Arc::new(move || {
        airing
            .now()
            .filter(|on_air| !on_air.ended)
            .map(|on_air| on_air.match_id)
    });
    (
        tv::router(duel_tv)
            .merge(router(reads, Some(on_air)))
            .merge(transcripts),
        broadcast,
    )
}

/// The match Duel TV is broadcasting and has not ended yet: listings hold
/// its result back until its broadcast shows it.
pub type OnAirNow = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// What the site's handlers share.
#[derive(Clone)]
struct SiteState {
    reads: Reads,
    on_air: Option<OnAirNow>,
}

impl FromRef<SiteState> for Reads {
    fn from_ref(state: &SiteState) -> Reads {
        state.reads.clone()
    }
}

impl SiteState {
    /// Drops the match on air from `page` (its result would spoil the
    /// broadcast); the page is one row shorter meanwhile.
    fn withhold(&self, page: &mut Page<MatchLine>) {
        if let Some(match_id) = self.on_air.as_ref().and_then(|on_air| on_air()) {
            page.items.retain(|line| line.id != match_id);
        }
    }
}

/// HTML for people, or the JSON twin for scripts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Html,
    Json,
}

/// The site's routes over `store`; merge it with the replay service's router
/// (it has no fallback of its own). With `on_air`, listings leave out the
/// match Duel TV is airing until its broadcast ends.
pub fn router(store: Reads, on_air: Option<OnAirNow>) -> Router {
    use Format::{Html, Json};
    Router::new()
        .route("/", get(|s: State<SiteState>| home(s, Html)))
        .route("/api/home", get(|s: State<SiteState>| home(s, Json)))
        .route("/seasons", get(|s: State<Reads>| seasons(s, Html)))
        .route("/api/seasons", get(|s: State<Reads>| seasons(s, Json)))
        .route(
            "/seasons/{season}",
            get(|s: State<Reads>, p: Path<String>, q: RawQuery| season(s, p, q, Html)),
        )
        .route(
            "/api/seasons/{season}",
            get(|s: State<Reads>, p: Path<String>, q: RawQuery| season(s, p, q, Json)),
        )
        .route(
            "/seasons/{season}/cost",
            get(|s: State<Reads>, p: Path<String>, q: RawQuery| cost(s, p, q, Html)),
        )
        .route(
            "/api/seasons/{season}/cost",
            get(|s: State<Reads>, p: Path<String>, q: RawQuery| cost(s, p, q, Json)),
        )
        .route(
            "/bots/{bot}",
            get(|s: State<SiteState>, p: Path<String>, q: RawQuery| bot(s, p, q, Html)),
        )
        .route(
            "/api/bots/{bot}",
            get(|s: State<SiteState>, p: Path<String>, q: RawQuery| bot(s, p, q, Json)),
        )
        .route(
            "/bots/{bot}/vs/{opponent}",
            get(
                |s: State<SiteState>, p: Path<(String, String)>, q: RawQuery| versus(s, p, q, Html),
            ),
        )
        .route(
            "/api/bots/{bot}/vs/{opponent}",
            get(
                |s: State<SiteState>, p: Path<(String, String)>, q: RawQuery| versus(s, p, q, Json),
            ),
        )
        .route(
            "/matches",
            get(|s: State<SiteState>, q: RawQuery| matches(s, q, Html)),
        )
        .route(
            "/api/matches",
            get(|s: State<SiteState>, q: RawQuery| matches(s, q, Json)),
        )
        .route(
            "/matches/{id}",
            get(|s: State<Reads>, p: Path<String>| match_page(s, p, Html)),
        )
        .route(
            "/api/matches/{id}",
            get(|s: State<Reads>, p: Path<String>| match_page(s, p, Json)),
        )
        .route("/site/site.css", get(stylesheet))
        .with_state(SiteState {
            reads: store,
            on_air,
        })
        .layer(axum::middleware::map_response(
            duel_referee::publish::security_headers,
        ))
}

/// Everything a page can fail with, as the response it becomes.
#[derive(Debug)]
pub struct SiteError {
    format: Format,
    status: StatusCode,
    message: String,
}

impl SiteError {
    pub(crate) fn new(format: Format, error: LadderError) -> SiteError {
        let (status, message) = match error {
            LadderError::NotFound(what) => (StatusCode::NOT_FOUND, format!("not found: {what}")),
            LadderError::Invalid(message) => (StatusCode::BAD_REQUEST, message),
            // The owner's transcript form: a token that is no account's, or
            // whose account owns neither bot.
            LadderError::Unauthenticated(message) => (StatusCode::UNAUTHORIZED, message),
            LadderError::PermissionDenied(message) => (StatusCode::FORBIDDEN, message),
            // The details stay in the operator's log; the page quotes an id.
            other => (
                StatusCode::INTERNAL_SERVER_ERROR,
                duel_plumbing::reply::internal("site page failed", &other),
            ),
        };
        SiteError {
            format,
            status,
            message,
        }
    }
}

impl IntoResponse for SiteError {
    fn into_response(self) -> Response {
        match self.format {
            Format::Json => duel_plumbing::reply::json_error(self.status, self.message),
            Format::Html => (
                self.status,
                axum::response::Html(
                    pages::error_page(self.status.as_u16(), &self.message).into_string(),
                ),
            )
                .into_response(),
        }
    }
}

type Reply = Result<Response, SiteError>;

fn reply<T: Serialize>(format: Format, data: &T, render: impl FnOnce(&T) -> Markup) -> Response {
    let mut response = match format {
        Format::Json => axum::Json(data).into_response(),
        Format::Html => axum::response::Html(render(data).into_string()).into_response(),
    };
    if let Ok(value) = HeaderValue::from_str(&format!("public, max-age={SITE_PAGE_MAX_AGE_S}")) {
        response.headers_mut().insert(header::CACHE_CONTROL, value);
    }
    response
}

/// The query string of listings; unknown parameters are refused.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListParams {
    class: Option<String>,
    bot: Option<String>,
    result: Option<String>,
    cursor: Option<String>,
    limit: Option<String>,
}

struct Listing {
    class: Option<WeightClass>,
    /// /matches only: a bot's matches, and its result in them.
    bot: Option<String>,
    result: Option<MatchResult>,
    cursor: Option<String>,
    limit: usize,
}

/// Which parameters a listing takes besides `cursor` and `limit`.
#[derive(Clone, Copy)]
enum Takes {
    Nothing,
    Class,
    /// `class`, `bot` and `result` (/matches).
    Filters,
}

fn listing(raw: Option<&str>, format: Format, takes: Takes) -> Result<Listing, SiteError> {
    let invalid = |message: String| SiteError::new(format, LadderError::Invalid(message));
    let params: ListParams = serde_urlencoded::from_str(raw.unwrap_or_default())
        .map_err(|error| invalid(format!("malformed query: {error}")))?;
    let quoted = |text: &str| format!("{:?}", text.chars().take(32).collect::<String>());
    let filters = matches!(takes, Takes::Filters);
    let bot = params.bot.filter(|bot| !bot.is_empty());
    let result = match params.result.as_deref() {
        None | Some("") => None,
        Some(_) if !filters => return Err(invalid("this page takes no result".to_owned())),
        Some(_) if bot.is_none() => {
            return Err(invalid(
                "result= is the result of one bot: add bot=".to_owned(),
            ));
        }
        Some(name) => Some(MatchResult::from_name(name).ok_or_else(|| {
            invalid(format!(
                "result must be {}, not {}",
                MatchResult::NAMES.join(", "),
                quoted(name)
            ))
        })?),
    };
    if bot.is_some() && !filters {
        return Err(invalid("this page takes no bot".to_owned()));
    }
    let class = match params.class.as_deref() {
        None | Some("") => None,
        Some(_) if matches!(takes, Takes::Nothing) => {
            return Err(invalid("this page takes no class".to_owned()));
        }
        Some(name) => Some(WeightClass::from_name(name).ok_or_else(|| {
            invalid(format!(
                "class must be light, middle or heavy, not {:?}",
                name.chars().take(32).collect::<String>()
            ))
        })?),
    };
    let limit = match params.limit.as_deref() {
        None | Some("") => SITE_PAGE_ROWS,
        Some(text) => match text.parse::<usize>() {
            Ok(limit) if (1..=MAX_SITE_PAGE_ROWS).contains(&limit) => limit,
            _ => {
                return Err(invalid(format!(
                    "limit must be a number from 1 to {MAX_SITE_PAGE_ROWS}"
                )));
            }
        },
    };
    Ok(Listing {
        class,
        bot,
        result,
        cursor: params.cursor.filter(|cursor| !cursor.is_empty()),
        limit,
    })
}

fn match_cursor(listing: &Listing, format: Format) -> Result<MatchCursor, SiteError> {
    listing
        .cursor
        .as_deref()
        .map_or(Ok(MatchCursor::first()), MatchCursor::parse)
        .map_err(|error| SiteError::new(format, error))
}

/// The JSON twin of the current address, query string kept.
fn json_href(path: &str, raw: Option<&str>) -> String {
    match raw {
        Some(query) if !query.is_empty() => format!("/api{path}?{query}"),
        _ => format!("/api{path}"),
    }
}

async fn home(State(site): State<SiteState>, format: Format) -> Reply {
    let mut page = data::home(&site.reads)
        .await
        .map_err(|error| SiteError::new(format, error))?;
    site.withhold(&mut page.latest);
    Ok(reply(format, &page, pages::home))
}

async fn seasons(State(store): State<Reads>, format: Format) -> Reply {
    let page = data::seasons(&store)
        .await
        .map_err(|error| SiteError::new(format, error))?;
    Ok(reply(format, &page, pages::seasons))
}

async fn season(
    State(store): State<Reads>,
    Path(name): Path<String>,
    RawQuery(raw): RawQuery,
    format: Format,
) -> Reply {
    let listing = listing(raw.as_deref(), format, Takes::Class)?;
    let cursor = match (&listing.cursor, listing.class) {
        (None, _) => None,
        (Some(cursor), Some(_)) => {
            Some(StandingCursor::parse(cursor).map_err(|error| SiteError::new(format, error))?)
        }
        (Some(_), None) => {
            return Err(SiteError::new(
                format,
                LadderError::Invalid("a cursor pages one class: add class=".to_owned()),
            ));
        }
    };
    let page = data::season(&store, &name, listing.class, cursor.as_ref(), listing.limit)
        .await
        .map_err(|error| SiteError::new(format, error))?;
    let href = json_href(&format!("/seasons/{}", page.season.name), raw.as_deref());
    Ok(reply(format, &page, |page| pages::season(page, &href)))
}

async fn cost(
    State(store): State<Reads>,
    Path(name): Path<String>,
    RawQuery(raw): RawQuery,
    format: Format,
) -> Reply {
    let listing = listing(raw.as_deref(), format, Takes::Class)?;
    let cursor = match (&listing.cursor, listing.class) {
        (None, _) => data::CostCursor::default(),
        (Some(cursor), Some(_)) => {
            data::CostCursor::parse(cursor).map_err(|error| SiteError::new(format, error))?
        }
        (Some(_), None) => {
            return Err(SiteError::new(
                format,
                LadderError::Invalid("a cursor pages one class: add class=".to_owned()),
            ));
        }
    };
    let page = data::cost(&store, &name, listing.class, cursor, listing.limit)
        .await
        .map_err(|error| SiteError::new(format, error))?;
    let href = json_href(
        &format!("/seasons/{}/cost", page.season.name),
        raw.as_deref(),
    );
    Ok(reply(format, &page, |page| pages::cost(page, &href)))
}

async fn bot(
    State(site): State<SiteState>,
    Path(name): Path<String>,
    RawQuery(raw): RawQuery,
    format: Format,
) -> Reply {
    let listing = listing(raw.as_deref(), format, Takes::Nothing)?;
    let cursor = match_cursor(&listing, format)?;
    let mut page = data::bot(&site.reads, &name, &cursor, listing.limit)
        .await
        .map_err(|error| SiteError::new(format, error))?;
    site.withhold(&mut page.matches);
    let href = json_href(&pages::bot_href(&page.name), raw.as_deref());
    Ok(reply(format, &page, |page| pages::bot(page, &href)))
}

async fn versus(
    State(site): State<SiteState>,
    Path((name, opponent)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
    format: Format,
) -> Reply {
    let listing = listing(raw.as_deref(), format, Takes::Nothing)?;
    let cursor = match_cursor(&listing, format)?;
    let mut page = data::versus(&site.reads, &name, &opponent, &cursor, listing.limit)
        .await
        .map_err(|error| SiteError::new(format, error))?;
    site.withhold(&mut page.head_to_head.matches);
    let href = json_href(&pages::versus_href(&name, &opponent), raw.as_deref());
    Ok(reply(format, &page, |page| pages::versus(page, &href)))
}

async fn matches(State(site): State<SiteState>, RawQuery(raw): RawQuery, format: Format) -> Reply {
    let listing = listing(raw.as_deref(), format, Takes::Filters)?;
    let cursor = match_cursor(&listing, format)?;
    let query = data::MatchesQuery {
        class: listing.class,
        bot: listing.bot.clone(),
        result: listing.result,
    };
    let mut page = data::matches(&site.reads, query, &cursor, listing.limit)
        .await
        .map_err(|error| SiteError::new(format, error))?;
    site.withhold(&mut page.matches);
    let href = json_href("/matches", raw.as_deref());
    Ok(reply(format, &page, |page| pages::matches(page, &href)))
}

async fn match_page(State(store): State<Reads>, Path(id): Path<String>, format: Format) -> Reply {
    let page = data::match_page(&store, &id)
        .await
        .map_err(|error| SiteError::new(format, error))?;
    let href = json_href(&pages::match_href(&page.line.id), None);
    Ok(reply(format, &page, |page| pages::match_page(page, &href)))
}

async fn stylesheet() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        SITE_CSS,
    )
        .into_response()
}
