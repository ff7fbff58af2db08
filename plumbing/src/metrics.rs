//! `GET /metrics` of both binaries: a registry's exposition in the
//! OpenMetrics text format (prometheus-client), as a route to merge into a
//! service's router or served alone on its own listener (`--metrics-listen`)
//! under the same connection cap and timeouts as every HTTP listener.

use std::future::Future;

use axum::http::{HeaderValue, StatusCode, header};
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use crate::listen::{HttpLimits, serve_router};

/// The content type of the exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A registry's exposition in the OpenMetrics text format.
pub fn encode(registry: &Registry) -> String {
    let mut text = String::new();
    // Writing into a `String` cannot fail; an encoder error would leave the
    // exposition cut short, which a scraper reports.
    if let Err(error) = prometheus_client::encoding::text::encode(&mut text, registry) {
        tracing::error!(%error, "cannot encode the metrics");
    }
    text
}

/// The route `GET /metrics`, answering `render()`: to serve alone
/// ([`serve_metrics`]) or to merge into another service's router. The
/// exposition is text for scrapers: browsers are told not to sniff it or run
/// anything from it.
pub fn metrics_router(render: impl Fn() -> String + Clone + Send + Sync + 'static) -> axum::Router {
    axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let render = render.clone();
            async move {
                (
                    [
                        (header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE)),
                        (
                            header::X_CONTENT_TYPE_OPTIONS,
                            HeaderValue::from_static("nosniff"),
                        ),
                        (
                            header::CONTENT_SECURITY_POLICY,
                            HeaderValue::from_static("default-src 'none'"),
                        ),
                        (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
                    ],
                    render(),
                )
            }
        }),
    )
}

/// Serves `GET /metrics` on `listener` until `shutdown` resolves, under the
/// default HTTP limits (connection cap, header and idle timeouts). `render`
/// produces the current exposition.
pub async fn serve_metrics(
    listener: TcpListener,
    render: impl Fn() -> String + Clone + Send + Sync + 'static,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    if let Ok(address) = listener.local_addr() {
        tracing::info!(metrics_address = %address, "metrics listening");
    }
    let router = metrics_router(render).fallback(|| async {
        crate::reply::json_error(
            StatusCode::NOT_FOUND,
            "not found: this listener serves /metrics",
        )
    });
    if let Err(error) = serve_router(listener, router, limits, shutdown).await {
        tracing::warn!(%error, "the metrics listener stopped");
    }
}
