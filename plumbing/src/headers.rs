//! The security headers of every HTTP answer of both binaries: the replay
//! service, the ladder's site, Duel TV, transcripts, `/metrics`, the OpenAI
//! face, their errors, 404s, 405s, 413s and 429s. [`crate::listen`] puts them
//! on every response it sends (so a route added later cannot forget them);
//! [`security_headers`] is the same as a layer, for a router served by
//! another server (a test's `axum::serve`, tonic's HTTP/1.1 routes).

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::Response;

/// The Content-Security-Policy of every response. The viewer has no inline
/// script or style (its script sets element styles through the DOM, which CSP
/// allows), talks only to its own site (`fetch`, `EventSource`), submits
/// forms only to its own site (the ladder's match filters, the owner's
/// transcript form), and is never framed: not by another site, not by this one.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
    style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; \
    form-action 'self'; frame-ancestors 'none'";

/// Every security header and its value, in the order they are added.
pub const SECURITY_HEADERS: [(&str, &str); 4] = [
    ("content-security-policy", CONTENT_SECURITY_POLICY),
    ("x-content-type-options", "nosniff"),
    // For browsers that predate `frame-ancestors`.
    ("x-frame-options", "DENY"),
    ("referrer-policy", "same-origin"),
];

/// Adds every header of [`SECURITY_HEADERS`] that `headers` lacks; a route
/// that set a stricter one (`/metrics`: `default-src 'none'`) keeps it.
pub fn add_security_headers(headers: &mut HeaderMap) {
    for (name, value) in SECURITY_HEADERS {
        headers
            .entry(HeaderName::from_static(name))
            .or_insert(HeaderValue::from_static(value));
    }
}

/// [`add_security_headers`] as a response mapper:
/// `.layer(axum::middleware::map_response(security_headers))`.
pub async fn security_headers(mut response: Response) -> Response {
    add_security_headers(response.headers_mut());
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::header;

    #[test]
    fn every_header_is_added_and_a_stricter_one_kept() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("default-src 'none'"),
        );
        add_security_headers(&mut headers);
        assert_eq!(
            headers[header::CONTENT_SECURITY_POLICY],
            "default-src 'none'"
        );
        for (name, value) in &SECURITY_HEADERS[1..] {
            assert_eq!(headers[*name], *value, "{name}");
        }
        let mut empty = HeaderMap::new();
        add_security_headers(&mut empty);
        for (name, value) in SECURITY_HEADERS {
            assert_eq!(empty[name], value, "{name}");
        }
    }
}
