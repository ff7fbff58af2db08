//! Ranked matches' transcripts for everyone, once the operator's reveal
//! policy allows (`ladder serve --reveal-transcripts`, core::reveal): `GET
//! /matches/{id}/transcript`, and the same at `/replays/{id}/transcript`,
//! where the viewer looks beside a replay. Until then, and for a match whose
//! fighters called no model, a 404 with a JSON error. The bots' owners read
//! theirs at once through the API (`ladder match transcript`).

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use duel_ladder_core::model::MatchState;
use duel_ladder_core::reveal::RevealPolicy;
use duel_ladder_store::error::LadderError;
use duel_ladder_store::{Reads, SeasonChoice};
use duel_plumbing::reply::json_error;
use duel_replays::store::ReplayStore;

use crate::limits::SITE_PAGE_MAX_AGE_S;

#[derive(Clone)]
struct Transcripts {
    reads: Reads,
    replays: ReplayStore,
    reveal: RevealPolicy,
}

/// The transcript routes over `reads` and the `replays` store.
pub fn router(reads: Reads, replays: ReplayStore, reveal: RevealPolicy) -> Router {
    Router::new()
        .route("/matches/{id}/transcript", get(transcript))
        .route("/replays/{id}/transcript", get(transcript))
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
        Err(LadderError::NotFound(message)) => json_error(StatusCode::NOT_FOUND, message),
        Err(LadderError::Invalid(message)) => json_error(StatusCode::BAD_REQUEST, message),
        Err(other) => json_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            duel_plumbing::reply::internal("transcript failed", &other),
        ),
    }
}

async fn revealed_transcript(site: &Transcripts, id: &str) -> Result<Vec<u8>, LadderError> {
    duel_replays::store::validate_id(id)
        .map_err(|_| LadderError::Invalid("not a match id".to_owned()))?;
    let (line, _) = site.reads.match_line(id).await?;
    let not_public =
        |why: String| LadderError::NotFound(format!("the transcript of match {id} {why}"));
    if line.state != MatchState::Settled {
        return Err(not_public(
            "is not public: the match is not settled".to_owned(),
        ));
    }
    let season = site
        .reads
        .chosen_season(&SeasonChoice::parse(&line.season))
        .await?;
    if !site.reveal.revealed(
        line.finished_ms,
        season.ended_ms,
        duel_ladder_core::clock::now_ms(),
    ) {
        return Err(not_public(format!(
            "is not public yet: transcripts are {}",
            site.reveal.describe()
        )));
    }
    site.replays
        .get_transcript(id)
        .await
        .map_err(|error| LadderError::Io(format!("cannot read the transcript: {error}")))?
        .ok_or_else(|| not_public("does not exist: no fighter called a model".to_owned()))
}
