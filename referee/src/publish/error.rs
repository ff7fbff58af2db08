//! The one place where errors of the replay service become HTTP responses: a
//! status and a JSON body `{"error": "…"}`.

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use duel_plumbing::reply::json_error;
use duel_replays::ReplayError;

/// Everything a request to the replay service can fail with.
#[derive(Debug)]
pub enum ApiError {
    /// No replay, live match or route of that name.
    NotFound(String),
    /// The request itself is wrong: a malformed id, query or cursor.
    BadRequest(String),
    /// The client asked for listings too fast.
    RateLimited { retry_after_s: u64 },
    /// The client holds as many event streams as it may.
    TooManyStreams(String),
    /// The store failed; the detail is logged, not shown.
    Internal(String),
}

impl From<ReplayError> for ApiError {
    fn from(error: ReplayError) -> ApiError {
        match error {
            ReplayError::BadId(_) | ReplayError::BadQuery(_) => {
                ApiError::BadRequest(error.to_string())
            }
            ReplayError::Read { .. }
            | ReplayError::Write { .. }
            | ReplayError::TooLarge { .. }
            | ReplayError::Malformed(_)
            | ReplayError::UnknownFormat { .. }
            | ReplayError::UnknownRuleset(_)
            | ReplayError::Key(_)
            | ReplayError::Store(_)
            | ReplayError::Conflict(_)
            | ReplayError::IntegerTooLarge { .. }
            | ReplayError::File(_) => ApiError::Internal(error.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, message) = match self {
            ApiError::NotFound(message) => (StatusCode::NOT_FOUND, message),
            ApiError::BadRequest(message) => (StatusCode::BAD_REQUEST, message),
            ApiError::TooManyStreams(message) => (StatusCode::TOO_MANY_REQUESTS, message),
            ApiError::RateLimited { retry_after_s } => {
                let mut response = json_error(
                    StatusCode::TOO_MANY_REQUESTS,
                    format!("too many listing requests; retry in {retry_after_s} s"),
                );
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_s));
                return response;
            }
            ApiError::Internal(detail) => {
                tracing::error!(%detail, "replay service failure");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the replay store failed; try again later".to_owned(),
                )
            }
        };
        json_error(status, message)
    }
}

/// axum's `Path`, refusing with this service's JSON error instead of axum's
/// plain-text one (an id that is not UTF-8 once percent-decoded, say), so every
/// error the service answers has the same shape.
#[derive(Debug)]
pub struct JsonPath<T>(pub T);

impl<S, T> FromRequestParts<S> for JsonPath<T>
where
    T: serde::de::DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(JsonPath(value)),
            Err(rejection) if rejection.status().is_client_error() => {
                Err(ApiError::BadRequest(rejection.body_text()))
            }
            Err(rejection) => Err(ApiError::Internal(rejection.body_text())),
        }
    }
}

/// The answer to a known route asked with a method it does not serve.
pub async fn method_not_allowed() -> Response {
    json_error(
        StatusCode::METHOD_NOT_ALLOWED,
        "method not allowed: the replay service answers GET",
    )
}
