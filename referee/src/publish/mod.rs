//! The public replay service over HTTP: download, list and watch replays, the
//! referee's public key, and live feeds of matches in progress.
//!
//! Routes ([`router`]):
//! - `GET /replays/{id}` — the replay JSON as published (zstd when the client
//!   accepts it); strong ETag and a year-long immutable cache lifetime.
//! - `GET /replays?bot=&season=&class=&cursor=&limit=` — a page of index records,
//!   newest first, with `next_cursor`; rate limited per client address.
//! - `GET /replays/{id}/view` — the viewer page; `GET /viewer/{file}` its assets.
//! - `GET /public-key` — `{"alg": "ed25519", "key": "<base64>"}`.
//! - `GET /live` — ids of live matches; `GET /live/{id}` — server-sent events
//!   (`start`, `exchange`, then `end` or `aborted`) of one match;
//!   `GET /live/{id}/view` — the viewer following that feed, then the replay.
//!
//! Handlers parse, call the store or the live registry, and format; every error
//! becomes a response in `error.rs`. Reads need no token: all of this is public.

pub mod client;
mod error;
pub mod live;
mod viewer;

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;

use axum::Router;
use axum::extract::{ConnectInfo, RawQuery, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use duel_plumbing::clients::{ClientAddress, hold_stream};
use duel_replays::store::{
    ListQuery, ReplayIndex, ReplayStore, check_query, decompress, validate_id,
};
use duel_replays::{ClassName, VerifyingKey, public_key_text};
use futures::StreamExt;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio_stream::wrappers::BroadcastStream;

pub use duel_plumbing::listen::{HttpLimits, serve_router};
pub use error::ApiError;
use error::JsonPath;
pub use live::{LiveEvent, LiveFeeds, LivePublisher, Subscription};

use crate::limits::{
    DEFAULT_PAGE_REPLAYS, LISTING_BURST, LISTINGS_PER_MINUTE, LIVE_KEEP_ALIVE,
    MAX_RATE_LIMITED_CLIENTS,
};

/// Cache lifetime of a replay: a published replay never changes (the stores
/// refuse other bytes under an id they hold).
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// The Content-Security-Policy and the other security headers of every
/// response (`duel_plumbing::headers`: [`serve_router`] adds them to every
/// answer of every listener; [`security_headers`] is the same as a layer).
pub use duel_plumbing::headers::{CONTENT_SECURITY_POLICY, security_headers};

/// How the listing rate limit is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateConfig {
    pub listings_per_minute: NonZeroU32,
    pub burst: NonZeroU32,
}

impl Default for RateConfig {
    fn default() -> RateConfig {
        RateConfig {
            listings_per_minute: NonZeroU32::new(LISTINGS_PER_MINUTE).unwrap_or(NonZeroU32::MIN),
            burst: NonZeroU32::new(LISTING_BURST).unwrap_or(NonZeroU32::MIN),
        }
    }
}

/// What the service reads: the store, the key it publishes, the live feeds.
#[derive(Clone, Debug)]
pub struct PublishState {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    store: ReplayStore,
    public_key: VerifyingKey,
    live: LiveFeeds,
    limiter: DefaultKeyedRateLimiter<IpAddr>,
    /// Answers `GET /replays` instead of the store's own index.
    index: Option<Arc<dyn ReplayIndex>>,
}

impl PublishState {
    pub fn new(
        store: ReplayStore,
        public_key: VerifyingKey,
        live: LiveFeeds,
        rate: RateConfig,
    ) -> PublishState {
        PublishState::build(store, public_key, live, rate, None)
    }

    /// Lists replays from `index` (the ladder's database) rather than the
    /// store's own index: for a store opened [`ReplayStore::without_index`].
    pub fn with_index(
        store: ReplayStore,
        public_key: VerifyingKey,
        live: LiveFeeds,
        rate: RateConfig,
        index: Arc<dyn ReplayIndex>,
    ) -> PublishState {
        PublishState::build(store, public_key, live, rate, Some(index))
    }

    fn build(
        store: ReplayStore,
        public_key: VerifyingKey,
        live: LiveFeeds,
        rate: RateConfig,
        index: Option<Arc<dyn ReplayIndex>>,
    ) -> PublishState {
        let quota = Quota::per_minute(rate.listings_per_minute).allow_burst(rate.burst);
        PublishState {
            inner: Arc::new(Inner {
                store,
                public_key,
                live,
                limiter: RateLimiter::keyed(quota),
                index,
            }),
        }
    }

    pub fn store(&self) -> &ReplayStore {
        &self.inner.store
    }

    pub fn live(&self) -> &LiveFeeds {
        &self.inner.live
    }
}

/// The service's routes, for `referee replay serve` or to mount in another
/// service. Serve it with [`serve`] (or another server that puts a
/// `ConnectInfo<SocketAddr>` into each request) so listings are limited per
/// client address (without it, all clients share one allowance). Every
/// response carries the security headers ([`CONTENT_SECURITY_POLICY`],
/// `nosniff`).
pub fn router(state: PublishState) -> Router {
    Router::new()
        .route("/replays", get(list_replays))
        .route("/replays/{id}", get(get_replay))
        .route("/replays/{id}/view", get(view_replay))
        .route("/viewer/{file}", get(viewer_asset))
        .route("/public-key", get(public_key))
        .route("/live", get(live_list))
        .route("/live/{id}", get(live_feed))
        .route("/live/{id}/view", get(view_live))
        .fallback(|| async { ApiError::NotFound("no such route".to_owned()) })
        .method_not_allowed_fallback(error::method_not_allowed)
        .with_state(state)
        .layer(axum::middleware::map_response(security_headers))
}

/// Serves [`router`] on `listener` under `limits` (connection cap,
/// header-read and idle timeouts) until `shutdown` completes; listings are
/// limited per client address.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: PublishState,
    limits: HttpLimits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_router(listener, router(state), limits, shutdown).await
}

fn accepts_zstd(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let name = parts.next().unwrap_or_default();
            let refused = parts.any(|parameter| {
                parameter
                    .strip_prefix("q=")
                    .and_then(|q| q.parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            name.eq_ignore_ascii_case("zstd") && !refused
        })
}

fn etag_matches(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|candidate| {
            let candidate = candidate.trim();
            candidate == "*" || candidate.trim_start_matches("W/") == etag
        })
}

fn header_value(text: &str) -> HeaderValue {
    HeaderValue::from_str(text).unwrap_or_else(|_| HeaderValue::from_static("invalid"))
}

async fn get_replay(
    State(state): State<PublishState>,
    JsonPath(id): JsonPath<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    validate_id(&id)?;
    let Some(compressed) = state.inner.store.get_compressed(&id).await? else {
        return Err(ApiError::NotFound(format!("no replay with id {id}")));
    };
    let zstd = accepts_zstd(&headers);
    let digest = Sha256::digest(&compressed);
    let hex: String = digest
        .iter()
        .take(16)
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let etag = if zstd {
        format!("\"{hex}.zst\"")
    } else {
        format!("\"{hex}\"")
    };
    let mut response = if etag_matches(&headers, &etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else if zstd {
        let mut response = compressed.into_response();
        response
            .headers_mut()
            .insert(header::CONTENT_ENCODING, HeaderValue::from_static("zstd"));
        response
    } else {
        decompress(&compressed)?.into_response()
    };
    let response_headers = response.headers_mut();
    response_headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response_headers.insert(header::ETAG, header_value(&etag));
    response_headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(IMMUTABLE));
    response_headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    Ok(response)
}

/// The listing query string; unknown parameters are refused.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListParams {
    bot: Option<String>,
    season: Option<String>,
    class: Option<String>,
    cursor: Option<String>,
    limit: Option<String>,
}

fn parse_list_query(raw: Option<&str>) -> Result<ListQuery, ApiError> {
    let params: ListParams = serde_urlencoded::from_str(raw.unwrap_or_default())
        .map_err(|error| ApiError::BadRequest(format!("malformed query: {error}")))?;
    let class = match params.class.as_deref() {
        None => None,
        Some(name) => Some(ClassName::from(
            duel_rules::WeightClass::from_name(name).ok_or_else(|| {
                ApiError::BadRequest(format!(
                    "class must be light, middle or heavy, not {name:?}"
                ))
            })?,
        )),
    };
    let limit = match params.limit.as_deref() {
        None => DEFAULT_PAGE_REPLAYS,
        Some(text) => text
            .parse()
            .map_err(|_| ApiError::BadRequest(format!("limit must be a number, not {text:?}")))?,
    };
    Ok(ListQuery {
        bot: params.bot,
        season: params.season,
        class,
        cursor: params.cursor,
        limit,
    })
}

/// The request's client: as the listener resolved it (a trusted proxy's
/// forwarded address), else the peer.
fn client_address(parts: &Parts) -> IpAddr {
    if let Some(ClientAddress(client)) = parts.extensions.get::<ClientAddress>() {
        return *client;
    }
    parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(address)| address.ip())
        .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
}

fn check_rate(state: &PublishState, client: IpAddr) -> Result<(), ApiError> {
    let limiter = &state.inner.limiter;
    if limiter.len() > MAX_RATE_LIMITED_CLIENTS {
        limiter.retain_recent();
    }
    limiter.check_key(&client).map_err(|not_until| {
        let wait = not_until.wait_time_from(DefaultClock::default().now());
        ApiError::RateLimited {
            retry_after_s: wait.as_secs() + u64::from(wait.subsec_nanos() > 0),
        }
    })
}

async fn list_replays(
    State(state): State<PublishState>,
    parts: Parts,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    check_rate(&state, client_address(&parts))?;
    let query = parse_list_query(raw.as_deref())?;
    let page = match &state.inner.index {
        Some(index) => {
            check_query(&query)?;
            index.list(&query).await?
        }
        None => state.inner.store.list(&query).await?,
    };
    let mut response = axum::Json(page).into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=5"),
    );
    Ok(response)
}

fn viewer_page() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        viewer::VIEWER_HTML,
    )
        .into_response()
}

async fn view_replay(
    State(state): State<PublishState>,
    JsonPath(id): JsonPath<String>,
) -> Result<Response, ApiError> {
    validate_id(&id)?;
    if state.inner.store.get_compressed(&id).await?.is_none() {
        return Err(ApiError::NotFound(format!("no replay with id {id}")));
    }
    Ok(viewer_page())
}

/// The viewer of a live match: it follows `/live/{id}` while the match runs and
/// then loads `/replays/{id}`, so the page also works once the match is over.
async fn view_live(
    State(state): State<PublishState>,
    JsonPath(id): JsonPath<String>,
) -> Result<Response, ApiError> {
    validate_id(&id)?;
    if !state.inner.live.is_live(&id) && state.inner.store.get_compressed(&id).await?.is_none() {
        return Err(ApiError::NotFound(format!(
            "no live match or replay with id {id}"
        )));
    }
    Ok(viewer_page())
}

async fn viewer_asset(JsonPath(file): JsonPath<String>) -> Result<Response, ApiError> {
    let (body, content_type) = viewer::asset(&file)
        .ok_or_else(|| ApiError::NotFound(format!("no viewer file {file:?}")))?;
    Ok((
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        body,
    )
        .into_response())
}

async fn public_key(State(state): State<PublishState>) -> Response {
    axum::Json(serde_json::json!({
        "alg": duel_replays::SIGNATURE_ALG,
        "key": public_key_text(&state.inner.public_key),
    }))
    .into_response()
}

async fn live_list(State(state): State<PublishState>) -> Response {
    axum::Json(serde_json::json!({ "live": state.inner.live.live_ids() })).into_response()
}

fn sse_event(event: &LiveEvent) -> Event {
    let data = serde_json::to_string(event)
        .expect("a LiveEvent is plain structs with string keys, which always serialize");
    Event::default().event(event.kind()).data(data)
}

async fn live_feed(
    State(state): State<PublishState>,
    JsonPath(id): JsonPath<String>,
    parts: Parts,
) -> Result<Response, ApiError> {
    validate_id(&id)?;
    let Some(subscription) = state.inner.live.subscribe(&id) else {
        return Err(ApiError::NotFound(format!("no live match with id {id}")));
    };
    // Held for as long as the stream lives.
    let place = hold_stream(&parts.extensions)
        .map_err(|refusal| ApiError::TooManyStreams(refusal.to_string()))?;
    let history = futures::stream::iter(subscription.history);
    // A lagging spectator skips what it missed rather than stalling the match.
    let live =
        BroadcastStream::new(subscription.receiver).filter_map(|event| async move { event.ok() });
    let mut ended = false;
    let stream = history
        .chain(live)
        .take_while(move |event| {
            let go_on = !ended;
            ended = event.is_last();
            futures::future::ready(go_on)
        })
        .map(move |event| {
            let _place = &place;
            Ok::<Event, Infallible>(sse_event(&event))
        });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(LIVE_KEEP_ALIVE))
        .into_response())
}
