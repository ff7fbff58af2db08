//! Ranked matches' transcripts for everyone, once the operator's reveal
//! policy allows (`ladder serve --reveal-transcripts`, core::reveal):
//!
//! | address | what |
//! |---|---|
//! | `GET /matches/{id}/transcript` | the page: per exchange, each fighter's calls (model, tokens, the prompt folded, the completion); before the reveal a page that says when it will be public (HTTP 404) |
//! | `GET /api/matches/{id}/transcript` | its JSON twin: the kept `duel-transcript/1` file byte for byte (so `replay verify --transcript` proves it), else a 404 with a JSON error |
//! | `GET /replays/{id}/transcript` | the same JSON, where the viewer looks beside a replay |
//!
//! All three follow one rule, the API's (`MatchTranscript`): someone without
//! a token reads both sides once revealed, nothing before. A match whose
//! fighters called no model has none (404). The bots' owners read theirs at
//! once through the API (`ladder match transcript`) or the match page's form
//! (`POST /matches/{id}/transcript`), which looks the posted token up only
//! within its client's rate ([`FormRate`]: the API's per-client rate by
//! default), else answers 429 with `Retry-After`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Path, State};
use axum::http::{Extensions, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use duel_plumbing::clients::{ClientAddress, client_key};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use duel_ladder_core::model::MatchState;
use duel_ladder_core::reveal::RevealPolicy;
use duel_ladder_core::reveal::readable_sides;
use duel_ladder_store::error::LadderError;
use duel_ladder_store::kept::Kept;
use duel_ladder_store::{Reads, readable_transcript};
use duel_replays::store::ReplayStore;
use duel_replays::transcript::Transcript;

use crate::limits::{
    DEFAULT_FORM_POST_BURST, DEFAULT_FORM_POSTS_PER_SECOND, KEPT_TRANSCRIPT_PAGES,
    MAX_FORM_BODY_BYTES, MAX_FORM_RATE_LIMITED_CLIENTS, MAX_FORM_TOKEN_BYTES, SITE_PAGE_MAX_AGE_S,
};
use crate::{Format, SiteError};

#[derive(Clone)]
struct Transcripts {
    reads: Reads,
    replays: ReplayStore,
    reveal: RevealPolicy,
    tries: Arc<FormTries>,
    /// Public pages rendered, by match id.
    pages: Arc<Kept<String, (usize, Option<i64>), String>>,
}

/// How many owner-form POSTs one client may make (`ladder serve
/// --calls-per-second-per-peer`, `--call-burst-per-peer`: the API's rate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FormRate {
    pub per_second: NonZeroU32,
    pub burst: NonZeroU32,
}

impl Default for FormRate {
    fn default() -> FormRate {
        FormRate {
            per_second: NonZeroU32::new(DEFAULT_FORM_POSTS_PER_SECOND).unwrap_or(NonZeroU32::MIN),
            burst: NonZeroU32::new(DEFAULT_FORM_POST_BURST).unwrap_or(NonZeroU32::MIN),
        }
    }
}

/// The owner form's POSTs per client key (crate::limits).
struct FormTries {
    rate: FormRate,
    limiter: DefaultKeyedRateLimiter<IpAddr>,
    /// POSTs seen, to drop idle limiter entries now and then.
    posts: AtomicU64,
}

impl FormTries {
    /// Takes one try for the client of a request with `extensions`, or says
    /// how long it must wait: keyed by the address the listener read
    /// (`ClientAddress`: the forwarded one behind a trusted proxy), else the
    /// peer's; a router served without either shares one allowance.
    fn take(&self, extensions: &Extensions) -> Result<(), Duration> {
        if self
            .posts
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(4_096)
            && self.limiter.len() > MAX_FORM_RATE_LIMITED_CLIENTS
        {
            self.limiter.retain_recent();
        }
        let address = extensions
            .get::<ClientAddress>()
            .map(|ClientAddress(address)| *address)
            .or_else(|| {
                extensions
                    .get::<ConnectInfo<SocketAddr>>()
                    .map(|ConnectInfo(peer)| peer.ip())
            })
            .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        self.limiter
            .check_key(&client_key(address))
            .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }
}

/// The transcript routes over `reads` and the `replays` store; the owner
/// form's POSTs are limited per client to `rate`.
pub fn router(reads: Reads, replays: ReplayStore, reveal: RevealPolicy, rate: FormRate) -> Router {
    let quota = Quota::per_second(rate.per_second).allow_burst(rate.burst);
    Router::new()
        .route(
            "/matches/{id}/transcript",
            get(transcript_page).post(owner_transcript),
        )
        .route("/api/matches/{id}/transcript", get(transcript_json))
        .route("/replays/{id}/transcript", get(transcript_json))
        .layer(DefaultBodyLimit::max(MAX_FORM_BODY_BYTES))
        .with_state(Transcripts {
            reads,
            replays,
            reveal,
            tries: Arc::new(FormTries {
                rate,
                limiter: RateLimiter::keyed(quota),
                posts: AtomicU64::new(0),
            }),
            pages: Arc::new(Kept::new(KEPT_TRANSCRIPT_PAGES)),
        })
}

fn cached(mut response: Response) -> Response {
    if let Ok(value) = HeaderValue::from_str(&format!("public, max-age={SITE_PAGE_MAX_AGE_S}")) {
        response.headers_mut().insert(header::CACHE_CONTROL, value);
    }
    response
}

/// The JSON twin (and the viewer's address): the kept file byte for byte.
async fn transcript_json(State(site): State<Transcripts>, Path(id): Path<String>) -> Response {
    match public_transcript(&site, &id).await {
        Ok(Public::Kept { bytes }) => {
            cached(([(header::CONTENT_TYPE, "application/json")], bytes).into_response())
        }
        Ok(withheld) => {
            SiteError::new(Format::Json, withheld.not_found(&id, site.reveal)).into_response()
        }
        Err(error) => SiteError::new(Format::Json, error).into_response(),
    }
}

/// The page: the calls once public; before, when they will be (a 404 with
/// the site around it).
async fn transcript_page(State(site): State<Transcripts>, Path(id): Path<String>) -> Response {
    let page = async {
        let public = public_transcript(&site, &id).await?;
        let (line, notes) = site.reads.match_line(&id).await?;
        let json_href = format!("/api{}/transcript", crate::pages::match_href(&line.id));
        Ok::<_, LadderError>(match public {
            Public::Kept { bytes } => {
                // The file and the settled match it renders never change once
                // public; its size and the season's end say the page holds.
                let fingerprint = (bytes.len(), notes.season_ended_ms);
                let html = site
                    .pages
                    .get_or_read(id.clone(), fingerprint, async {
                        let transcript = Transcript::from_slice(&bytes).map_err(|error| {
                            LadderError::corrupt(format!(
                                "the kept transcript of match {id}: {error}"
                            ))
                        })?;
                        Ok(
                            crate::pages::public_transcript_page(&line, &transcript, &json_href)
                                .into_string(),
                        )
                    })
                    .await?;
                // A copy of 2 MB costs a tenth of a millisecond.
                cached(axum::response::Html(String::clone(&html)).into_response())
            }
            Public::NotYet { finished_ms, .. } => {
                let when = crate::pages::RevealWhen::of(site.reveal, &line.season, finished_ms);
                cached(
                    (
                        StatusCode::NOT_FOUND,
                        axum::response::Html(
                            crate::pages::transcript_withheld_page(&line, &when, &json_href)
                                .into_string(),
                        ),
                    )
                        .into_response(),
                )
            }
            withheld => {
                SiteError::new(Format::Html, withheld.not_found(&id, site.reveal)).into_response()
            }
        })
    };
    match page.await {
        Ok(response) => response,
        Err(error) => SiteError::new(Format::Html, error).into_response(),
    }
}

/// What someone without a token may read of a match's transcript.
enum Public {
    /// Revealed: the kept file.
    Kept { bytes: Vec<u8> },
    /// Settled, not revealed yet (perhaps never), settled at `finished_ms`.
    NotYet { finished_ms: Option<i64> },
    /// Not settled: nothing is public.
    NotSettled,
    /// Revealed, but no fighter called a model.
    NoCalls,
}

impl Public {
    /// Why a transcript is not public, as the JSON twin says it.
    fn not_found(&self, id: &str, reveal: RevealPolicy) -> LadderError {
        let why = match self {
            Public::Kept { .. } => "is public".to_owned(),
            Public::NotYet { .. } => {
                format!("is not public yet: transcripts are {}", reveal.describe())
            }
            Public::NotSettled => "is not public: the match is not settled".to_owned(),
            Public::NoCalls => "does not exist: no fighter called a model".to_owned(),
        };
        LadderError::NotFound(format!("the transcript of match {id} {why}"))
    }
}

async fn public_transcript(site: &Transcripts, id: &str) -> Result<Public, LadderError> {
    duel_replays::store::validate_id(id)
        .map_err(|_| LadderError::Invalid("not a match id".to_owned()))?;
    let game = site.reads.game(id).await?;
    if game.state != MatchState::Settled {
        return Ok(Public::NotSettled);
    }
    // The rule `MatchTranscript` follows too: someone without a token reads
    // both sides once revealed, nothing before.
    let revealed = site
        .reads
        .transcript_revealed(site.reveal, &game, duel_ladder_core::clock::now_ms())
        .await?;
    let [a, b] = &game.sides;
    if readable_sides(None, [&a.owner_id, &b.owner_id], revealed).is_empty() {
        return Ok(Public::NotYet {
            finished_ms: game.finished_ms,
        });
    }
    Ok(match site.replays.get_transcript(id).await? {
        Some(bytes) => Public::Kept { bytes },
        None => Public::NoCalls,
    })
}

/// The match page's owner form.
#[derive(serde::Deserialize)]
struct TokenForm {
    token: String,
}

/// The transcript of the poster's bots in match `id`, as a page nobody caches.
/// A client over its rate is refused before its token is looked up.
async fn owner_transcript(
    State(site): State<Transcripts>,
    Path(id): Path<String>,
    extensions: Extensions,
    body: Bytes,
) -> Response {
    let mut response = match site.tries.take(&extensions) {
        Err(wait) => too_many_tries(site.tries.rate, wait),
        Ok(()) => {
            // The form's body (`token=…`), parsed here: the one form of the site.
            let token = serde_urlencoded::from_bytes::<TokenForm>(&body)
                .map(|form| form.token)
                .unwrap_or_default();
            match owner_view(&site, &id, token.trim()).await {
                Ok(page) => axum::response::Html(page).into_response(),
                Err(error) => SiteError::new(Format::Html, error).into_response(),
            }
        }
    };
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// HTTP 429: the page says how many tries a second this address has and
/// when to try again; `Retry-After` says it in whole seconds.
fn too_many_tries(rate: FormRate, wait: Duration) -> Response {
    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let message = format!(
        "too many tries from your address: more than {} a second (burst {}); retry in {} ms",
        rate.per_second,
        rate.burst,
        wait.as_millis().max(1)
    );
    let mut response = (
        StatusCode::TOO_MANY_REQUESTS,
        axum::response::Html(crate::pages::error_page(429, &message).into_string()),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(seconds.max(1)));
    response
}

async fn owner_view(site: &Transcripts, id: &str, token: &str) -> Result<String, LadderError> {
    duel_replays::store::validate_id(id)
        .map_err(|_| LadderError::Invalid("not a match id".to_owned()))?;
    if token.is_empty() || token.len() > MAX_FORM_TOKEN_BYTES {
        return Err(LadderError::Unauthenticated(
            "give the token of an owner of one of the match's bots".to_owned(),
        ));
    }
    let user = site.reads.authenticate(token).await?;
    let game = site.reads.game(id).await?;
    let revealed = site
        .reads
        .transcript_revealed(site.reveal, &game, duel_ladder_core::clock::now_ms())
        .await?;
    let transcript = readable_transcript(&site.replays, &game, &user, None, revealed).await?;
    let (line, _) = site.reads.match_line(id).await?;
    Ok(crate::pages::transcript_page(&line, &transcript, &user.name).into_string())
}
