//! The replay viewer's static files (`web/`), compiled into the binary so the
//! service needs no folder beside it.

pub const VIEWER_HTML: &str = include_str!("../../../web/viewer.html");
pub const VIEWER_JS: &str = include_str!("../../../web/viewer.js");
pub const VIEWER_CSS: &str = include_str!("../../../web/viewer.css");

/// A viewer asset by file name: its bytes and content type.
pub fn asset(name: &str) -> Option<(&'static str, &'static str)> {
    match name {
        "viewer.js" => Some((VIEWER_JS, "text/javascript; charset=utf-8")),
        "viewer.css" => Some((VIEWER_CSS, "text/css; charset=utf-8")),
        "viewer.html" => Some((VIEWER_HTML, "text/html; charset=utf-8")),
        _ => None,
    }
}
