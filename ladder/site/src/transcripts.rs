//! Ranked matches' transcripts for everyone, once the operator's reveal
//! policy allows (`ladder serve --reveal-transcripts`, core::reveal): `GET
//! /matches/{id}/transcript`, and the same at `/replays/{id}/transcript`,
//! where the viewer looks beside a replay. Until then, and for a match whose
//! fighters called no model, a 404 with a JSON error. The bots' owners read
//! theirs at once through the API (`ladder match transcript`).

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use duel_ladder_core::model::MatchState;
use duel_ladder_core::reveal::RevealPolicy;
use duel_ladder_core::reveal::readable_sides;
use duel_ladder_store::error::LadderError;
use duel_ladder_store::{Reads, readable_transcript};
use duel_replays::store::ReplayStore;

use crate::limits::{MAX_FORM_BODY_BYTES, MAX_FORM_TOKEN_BYTES, SITE_PAGE_MAX_AGE_S};
use crate::{Format, SiteError};

#[derive(Clone)]
struct Transcripts {
    reads: Reads,
    replays: ReplayStore,
    reveal: RevealPolicy,
}

/// The transcript routes over `reads` and the `replays` store.
pub fn router(reads: Reads, replays: ReplayStore, reveal: RevealPolicy) -> Router {
    Router::new()
        .route(
            "/matches/{id}/transcript",
            get(transcript).post(owner_transcript),
        )
        .route("/replays/{id}/transcript", get(transcript))
        .layer(DefaultBodyLimit::max(MAX_FORM_BODY_BYTES))
        .with_state(Transcripts {
            reads,
            replays,
            reveal,
        })
}

async fn transcript(State(site): State<Transcripts>, Path(id): Path<String>) -> Response {
    match revealed_transcript(&site, &id).await {
        Ok(bytes) => {
            let mut response =
                ([(header::CONTENT_TYPE, "application/json")], bytes).into_response();
            if let Ok(value) =
                HeaderValue::from_str(&format!("public, max-age={SITE_PAGE_MAX_AGE_S}"))
            {
                response.headers_mut().insert(header::CACHE_CONTROL, value);
            }
            response
        }
        Err(error) => SiteError::new(Format::Json, error).into_response(),
    }
}

async fn revealed_transcript(site: &Transcripts, id: &str) -> Result<Vec<u8>, LadderError> {
    duel_replays::store::validate_id(id)
        .map_err(|_| LadderError::Invalid("not a match id".to_owned()))?;
    let game = site.reads.game(id).await?;
    let not_public =
        |why: String| LadderError::NotFound(format!("the transcript of match {id} {why}"));
    if game.state != MatchState::Settled {
        return Err(not_public(
            "is not public: the match is not settled".to_owned(),
        ));
    }
    // The rule `MatchTranscript` follows too: someone without a token reads
    // both sides once revealed, nothing before.
    let revealed = site
        .reads
        .transcript_revealed(site.reveal, &game, duel_ladder_core::clock::now_ms())
        .await?;
    let [a, b] = &game.sides;
    if readable_sides(None, [&a.owner_id, &b.owner_id], revealed).is_empty() {
        return Err(not_public(format!(
            "is not public yet: transcripts are {}",
            site.reveal.describe()
        )));
    }
    site.replays
        .get_transcript(id)
        .await?
        .ok_or_else(|| not_public("does not exist: no fighter called a model".to_owned()))
}

/// The match page's owner form.
#[derive(serde::Deserialize)]
struct TokenForm {
    token: String,
}

/// The transcript of the poster's bots in match `id`, as a page nobody caches.
async fn owner_transcript(
    State(site): State<Transcripts>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    // The form's body (`token=…`), parsed here: the one form of the site.
    let token = serde_urlencoded::from_bytes::<TokenForm>(&body)
        .map(|form| form.token)
        .unwrap_or_default();
    let mut response = match owner_view(&site, &id, token.trim()).await {
        Ok(page) => axum::response::Html(page).into_response(),
        Err(error) => SiteError::new(Format::Html, error).into_response(),
    };
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
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
