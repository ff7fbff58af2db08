//! How a failure reaches a client of either binary's services: the one JSON
//! error shape of every HTTP route (`{"error": "…"}`), and the correlation id
//! that stands in for a server's own failure, whose details stay in the log.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// `status` with the body `{"error": message}`.
pub fn json_error(status: StatusCode, message: impl Into<String>) -> Response {
    let message: String = message.into();
    (status, axum::Json(serde_json::json!({ "error": message }))).into_response()
}

/// Logs `error` (the server's own failure: paths, database or disk errors)
/// under a fresh correlation id, as `what`, and returns the one line the
/// client is shown instead, which quotes the id.
pub fn internal(what: &str, error: &dyn std::fmt::Display) -> String {
    let correlation_id = uuid::Uuid::new_v4().simple().to_string();
    tracing::error!(%correlation_id, error = %error, "{what}");
    format!("internal error (correlation id {correlation_id}); the operator's log has the details")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_sees_an_id_not_the_detail() {
        let line = internal("test failure", &"cannot write /var/lib/duel/x: disk full");
        assert!(
            line.starts_with("internal error (correlation id "),
            "{line}"
        );
        assert!(!line.contains("/var/lib"), "{line}");
        let first = internal("test failure", &"x");
        assert_ne!(first, line, "each failure gets its own id");
    }

    #[tokio::test]
    async fn errors_are_one_json_shape() {
        let response = json_error(StatusCode::NOT_FOUND, "not found: x");
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        let body = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .expect("body");
        assert_eq!(&body[..], br#"{"error":"not found: x"}"#);
    }
}
