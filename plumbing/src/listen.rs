//! The HTTP listener of both binaries' services (the replay service, the
//! ladder's site, `/metrics`): HTTP/1.1 connections under a cap, each with
//! a header-read timeout and an idle timeout, so slow or idle clients cannot
//! hold the service's sockets.
//!
//! - **Cap** ([`HttpLimits::max_connections`], at most half the process's
//!   open-file limit): a connection is accepted only
//!   with a free place; beyond the cap new connections wait in the kernel's
//!   listen backlog while the accepted ones are served.
//! - **Header read** ([`HttpLimits::header_read_timeout`], hyper's own timer):
//!   a connection waiting for a request, new or kept alive after a response,
//!   must deliver that request's whole head in time, else it is closed.
//! - **Idle** ([`HttpLimits::idle_timeout`]): a connection on which no byte
//!   moves either way for that long is closed (a stalled body, a client that
//!   stopped reading, a request stuck on the store).
//! - **Per client** ([`HttpLimits::max_connections_per_client`],
//!   [`HttpLimits::max_streams_per_client`]): one address (an IPv6 /64) holds
//!   at most so many connections (one more is answered 429 and closed) and
//!   event streams ([`crate::clients::hold_stream`]), so one client cannot
//!   take the listener from the others. Connections from a trusted proxy
//!   are not counted per client (they carry many clients); their requests
//!   are, under the forwarded address ([`crate::clients`]).
//! - **Age** ([`HttpLimits::max_connection_age`]): a connection that old
//!   takes no new request; the one in flight may finish within
//!   [`HTTP_CONNECTION_AGE_GRACE`] (or the age, if shorter), then the
//!   connection is closed, so a
//!   client that trickles requests or holds a stream gives its place back.
//! - **Security headers** ([`crate::headers`]): on every response, errors and
//!   the 429 of a connection beyond its client's cap included.
//! - **PROXY protocol** ([`HttpLimits::proxy_protocol`]): a trusted proxy's
//!   connection starts with a PROXY header ([`crate::proxy_protocol`]) read
//!   within the header timeout; the client it names is the connection's
//!   client, counted per client like a direct one.

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tower_service::Service;

use crate::clients::{ClientAddress, PerClient, StreamPlaces, TrustedProxies, client_address};
use crate::headers::add_security_headers;
use crate::limits::{
    HTTP_CONNECTION_AGE_GRACE, HTTP_HEADER_READ_TIMEOUT, HTTP_IDLE_TIMEOUT,
    HTTP_MAX_CONNECTION_AGE, MAX_HTTP_CONNECTIONS, MAX_HTTP_CONNECTIONS_PER_CLIENT,
    MAX_STREAMS_PER_CLIENT,
};

/// What an HTTP listener allows each connection, and how many.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpLimits {
    /// Time to deliver a request's head, from when the server waits for it.
    pub header_read_timeout: Duration,
    /// A connection with no bytes moving either way for this long is closed.
    pub idle_timeout: Duration,
    /// Connections served at once; more wait to be accepted.
    pub max_connections: NonZeroUsize,
    /// Connections one client address holds at once; one more is refused.
    pub max_connections_per_client: NonZeroUsize,
    /// Event streams (Duel TV, live feeds) one client holds at once.
    pub max_streams_per_client: NonZeroUsize,
    /// A connection this old takes no new request and closes.
    pub max_connection_age: Duration,
    /// Proxies whose `X-Forwarded-For` names the client.
    pub trusted_proxies: TrustedProxies,
    /// Whether a trusted proxy's connections start with a PROXY protocol
    /// header naming their client (else they are closed).
    pub proxy_protocol: bool,
}

impl Default for HttpLimits {
    fn default() -> HttpLimits {
        HttpLimits {
            header_read_timeout: HTTP_HEADER_READ_TIMEOUT,
            idle_timeout: HTTP_IDLE_TIMEOUT,
            max_connections: nonzero(MAX_HTTP_CONNECTIONS),
            max_connections_per_client: nonzero(MAX_HTTP_CONNECTIONS_PER_CLIENT),
            max_streams_per_client: nonzero(MAX_STREAMS_PER_CLIENT),
            max_connection_age: HTTP_MAX_CONNECTION_AGE,
            trusted_proxies: TrustedProxies::none(),
            proxy_protocol: false,
        }
    }
}

/// The flags that set an HTTP listener's [`HttpLimits`] (`ladder serve
/// --http`, `referee serve --http`).
#[derive(Clone, Debug, clap::Args)]
pub struct HttpLimitArgs {
    /// Connections the HTTP listener serves at once (never more than half
    /// the open-file limit); more wait to be accepted.
    #[arg(long, value_name = "N", default_value_t = nonzero(MAX_HTTP_CONNECTIONS))]
    pub http_max_connections: NonZeroUsize,
    /// Milliseconds an HTTP client has to send a request's headers (also the
    /// longest a kept-alive connection waits for its next request).
    #[arg(long, value_name = "MS", default_value_t = duration_ms(HTTP_HEADER_READ_TIMEOUT),
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub http_header_timeout_ms: u64,
    /// Milliseconds with no bytes moving after which an HTTP connection is
    /// closed.
    #[arg(long, value_name = "MS", default_value_t = duration_ms(HTTP_IDLE_TIMEOUT),
          value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub http_idle_timeout_ms: u64,
    /// Connections one client address (IPv6: its /64) may hold; one more is
    /// answered 429 and closed. Not counted for --trusted-proxy peers.
    #[arg(long, value_name = "N", default_value_t = nonzero(MAX_HTTP_CONNECTIONS_PER_CLIENT))]
    pub http_max_connections_per_client: NonZeroUsize,
    /// Event streams (Duel TV, live feeds) one client may hold; one more is
    /// answered 429.
    #[arg(long, value_name = "N", default_value_t = nonzero(MAX_STREAMS_PER_CLIENT))]
    pub http_max_streams_per_client: NonZeroUsize,
    /// Milliseconds after which an HTTP connection takes no new request: the
    /// answer in flight may finish (30 s at most), then it is closed. Event
    /// streams (Duel TV, live feeds) reconnect by themselves.
    #[arg(long, value_name = "MS", default_value_t = duration_ms(HTTP_MAX_CONNECTION_AGE),
          value_parser = clap::value_parser!(u64).range(1..=604_800_000))]
    pub http_max_connection_age_ms: u64,
    /// A proxy (address or network, e.g. 10.0.0.0/8) whose X-Forwarded-For
    /// names the client; repeat for each. Without it the header is ignored.
    #[arg(long = "trusted-proxy", value_name = "CIDR", value_parser = crate::clients::parse_trusted_proxy)]
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Connections from a --trusted-proxy start with a PROXY protocol header
    /// (v1 or v2, HAProxy's `send-proxy`/`send-proxy-v2`) naming the client;
    /// one without it is closed. Other peers send plain HTTP.
    #[arg(long, requires = "trusted_proxies")]
    pub proxy_protocol: bool,
}

impl HttpLimitArgs {
    /// The limits these flags set.
    pub fn limits(&self) -> HttpLimits {
        HttpLimits {
            header_read_timeout: Duration::from_millis(self.http_header_timeout_ms),
            idle_timeout: Duration::from_millis(self.http_idle_timeout_ms),
            max_connections: self.http_max_connections,
            max_connections_per_client: self.http_max_connections_per_client,
            max_streams_per_client: self.http_max_streams_per_client,
            max_connection_age: Duration::from_millis(self.http_max_connection_age_ms),
            trusted_proxies: TrustedProxies::new(self.trusted_proxies.clone()),
            proxy_protocol: self.proxy_protocol,
        }
    }
}

pub(crate) fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn nonzero(value: usize) -> NonZeroUsize {
    NonZeroUsize::new(value).unwrap_or(NonZeroUsize::MIN)
}

/// The answer to a connection beyond its client's cap, written before it
/// is closed (without reading its request), with the security headers of
/// every answer ([`crate::headers::SECURITY_HEADERS`], checked by a test).
const TOO_MANY_CONNECTIONS: &[u8] = b"HTTP/1.1 429 Too Many Requests\r\n\
content-type: application/json\r\nretry-after: 1\r\nconnection: close\r\n\
content-security-policy: default-src 'none'; script-src 'self'; style-src 'self'; \
connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'\r\n\
x-content-type-options: nosniff\r\nx-frame-options: DENY\r\nreferrer-policy: same-origin\r\n\
content-length: 73\r\n\r\n\
{\"error\":\"this address holds too many connections: close one and retry\"}\n";

const X_FORWARDED_FOR: &str = "x-forwarded-for";

/// How long the accept loop pauses after an error that is not one
/// connection's own (out of file descriptors, say) before it tries again.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// Serves `router` on `listener` under `limits` until `shutdown` completes;
/// then stops accepting, lets requests in flight finish (idle connections
/// close at once) and returns once every connection has closed.
pub async fn serve_router(
    listener: TcpListener,
    router: Router,
    limits: HttpLimits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let cap = within_open_file_limit(limits.max_connections, "HTTP");
    let places = Arc::new(Semaphore::new(cap.get()));
    let per_client = PerClient::new(limits.max_connections_per_client.get());
    let streams = StreamPlaces(PerClient::new(limits.max_streams_per_client.get()));
    let stop = CancellationToken::new();
    let stopping = stop.clone();
    tokio::spawn(async move {
        shutdown.await;
        stopping.cancel();
    });
    loop {
        let place = tokio::select! {
            place = Arc::clone(&places).acquire_owned() => place,
            () = stop.cancelled() => break,
        };
        let Ok(place) = place else { break };
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    if !is_connection_error(&error) {
                        tracing::warn!(%error, "replay service cannot accept a connection");
                        tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                    }
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        let from_proxy = limits.trusted_proxies.contains(remote.ip());
        if from_proxy && limits.proxy_protocol {
            // The header is read on the connection's own task, so a slow
            // proxy never holds up the accept loop.
            let (router, stop, limits) = (router.clone(), stop.clone(), limits.clone());
            let (streams, per_client) = (streams.clone(), Arc::clone(&per_client));
            tokio::spawn(async move {
                serve_proxied(stream, remote, router, &limits, streams, per_client, stop).await;
                drop(place);
            });
            continue;
        }
        let Some(held) = hold_unless_trusted(&limits, &per_client, &stream, remote) else {
            continue;
        };
        let router = router.clone();
        let stop = stop.clone();
        let limits = limits.clone();
        let streams = streams.clone();
        tokio::spawn(async move {
            serve_connection(stream, remote, router, &limits, streams, stop).await;
            drop(held);
            drop(place);
        });
    }
    drop(listener);
    // Every place back means every connection closed.
    let all = u32::try_from(cap.get()).unwrap_or(u32::MAX);
    let _ = places.acquire_many(all).await;
    Ok(())
}

/// Whether a connection of `client` is served: a trusted proxy carries many
/// clients, so it is never counted (`Some(None)`); any other client takes one
/// of its places (`Some(Some(_))`) or, once it holds its cap, is refused
/// (`None`, see [`hold_or_refuse`]).
fn hold_unless_trusted(
    limits: &HttpLimits,
    per_client: &Arc<PerClient>,
    stream: &TcpStream,
    client: SocketAddr,
) -> Option<Option<crate::clients::Held>> {
    if limits.trusted_proxies.contains(client.ip()) {
        return Some(None);
    }
    hold_or_refuse(per_client, stream, client).map(Some)
}

/// A place for one more connection of `client`, or `None` once it holds its
/// cap: the connection is then answered 429 (best effort) to be closed.
fn hold_or_refuse(
    per_client: &Arc<PerClient>,
    stream: &TcpStream,
    client: SocketAddr,
) -> Option<crate::clients::Held> {
    let held = per_client.try_hold(client.ip());
    if held.is_none() {
        // Best effort: the client may not read it before the close.
        let _ = stream.try_write(TOO_MANY_CONNECTIONS);
        tracing::debug!(%client, "over the connections per client: refused");
    }
    held
}

/// A trusted proxy's connection under `--proxy-protocol`: its header is read
/// within the header timeout, then it is served as the client the header
/// names (counted per client), or as the proxy's own when it names none.
async fn serve_proxied(
    mut stream: TcpStream,
    proxy: SocketAddr,
    router: Router,
    limits: &HttpLimits,
    streams: StreamPlaces,
    per_client: Arc<PerClient>,
    stop: CancellationToken,
) {
    let header = tokio::time::timeout(
        limits.header_read_timeout,
        crate::proxy_protocol::read_proxy_header(&mut stream),
    );
    let client = match header.await {
        Ok(Ok(client)) => client,
        Ok(Err(error)) => {
            tracing::debug!(%proxy, %error, "PROXY header refused: closed");
            return;
        }
        Err(_) => {
            tracing::debug!(%proxy, "no PROXY header in time: closed");
            return;
        }
    };
    let Some(client) = client else {
        serve_connection(stream, proxy, router, limits, streams, stop).await;
        return;
    };
    let Some(held) = hold_unless_trusted(limits, &per_client, &stream, client) else {
        return;
    };
    serve_connection(stream, client, router, limits, streams, stop).await;
    drop(held);
}

/// `cap`, or half the process's open-file limit if that is lower, so a
/// listener full of connections leaves descriptors for the process's own
/// work (databases, replay files, bots' endpoints) and for its other
/// listeners. Logged when it lowers the cap.
pub fn within_open_file_limit(cap: NonZeroUsize, listener: &str) -> NonZeroUsize {
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
    let Some(soft) = soft.and_then(|soft| usize::try_from(soft).ok()) else {
        return cap;
    };
    let half = NonZeroUsize::new(soft / 2).unwrap_or(NonZeroUsize::MIN);
    if half < cap {
        tracing::info!(
            configured = cap.get(),
            open_file_limit = soft,
            cap = half.get(),
            "{listener} connection cap lowered to half the open-file limit"
        );
        return half;
    }
    cap
}

pub(crate) fn is_connection_error(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

async fn serve_connection(
    stream: TcpStream,
    remote: SocketAddr,
    router: Router,
    limits: &HttpLimits,
    streams: StreamPlaces,
    stop: CancellationToken,
) {
    let activity = Activity::new();
    let io = TokioIo::new(Watched {
        inner: stream,
        activity: Arc::clone(&activity),
    });
    let trusted = limits.trusted_proxies.clone();
    let service = hyper::service::service_fn(move |mut request: axum::extract::Request<_>| {
        let client = client_address(
            remote.ip(),
            request
                .headers()
                .get_all(X_FORWARDED_FOR)
                .iter()
                .map(http::HeaderValue::as_bytes),
            &trusted,
        );
        let extensions = request.extensions_mut();
        extensions.insert(ConnectInfo(remote));
        extensions.insert(ClientAddress(client));
        extensions.insert(streams.clone());
        // A Router is always ready: calling it without `poll_ready` is allowed.
        let answer = router.clone().call(request);
        // Every answer, whatever route, fallback or layer made it, carries
        // the security headers: a route added later cannot forget them.
        async move {
            let mut response = answer.await?;
            add_security_headers(response.headers_mut());
            Ok::<_, std::convert::Infallible>(response)
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    let connection = builder.serve_connection(io, service);
    tokio::pin!(connection);
    let mut draining = false;
    let old = tokio::time::sleep(limits.max_connection_age);
    tokio::pin!(old);
    let mut aged = false;
    loop {
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%error, %remote, "replay service connection ended");
                }
                return;
            }
            () = activity.idle_for(limits.idle_timeout) => {
                tracing::debug!(%remote, "replay service connection idle: closed");
                return;
            }
            () = stop.cancelled(), if !draining => {
                connection.as_mut().graceful_shutdown();
                draining = true;
            }
            () = old.as_mut() => {
                if aged {
                    tracing::debug!(%remote, "replay service connection past its age and grace: cut");
                    return;
                }
                tracing::debug!(%remote, "replay service connection at its age: closing");
                if !draining {
                    connection.as_mut().graceful_shutdown();
                    draining = true;
                }
                aged = true;
                // A short age (a test's) gets as short a grace.
                let grace = HTTP_CONNECTION_AGE_GRACE.min(limits.max_connection_age);
                old.as_mut().reset(Instant::now() + grace);
            }
        }
    }
}

/// When bytes last moved on a connection, in milliseconds since `start`.
#[derive(Debug)]
struct Activity {
    start: Instant,
    last_ms: AtomicU64,
}

impl Activity {
    fn new() -> Arc<Activity> {
        Arc::new(Activity {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
        })
    }

    fn touch(&self) {
        let now_ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(now_ms, Ordering::Relaxed);
    }

    /// Resolves once no byte has moved for `timeout`.
    async fn idle_for(&self, timeout: Duration) {
        loop {
            let last = self.start + Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
            let deadline = last + timeout;
            if Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep_until(deadline).await;
        }
    }
}

/// A stream that records when bytes last moved through it.
#[derive(Debug)]
struct Watched {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.touch();
        }
        result
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(result, Poll::Ready(Ok(written)) if written > 0) {
            self.activity.touch();
        }
        result
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(result, Poll::Ready(Ok(written)) if written > 0) {
            self.activity.touch();
        }
        result
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_written_by_hand_carries_every_security_header() {
        let text = std::str::from_utf8(TOO_MANY_CONNECTIONS).expect("ASCII");
        let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
        for (name, value) in crate::headers::SECURITY_HEADERS {
            assert!(
                head.lines().any(|line| line == format!("{name}: {value}")),
                "{name} missing from {head}"
            );
        }
        assert!(
            head.lines()
                .any(|line| line == format!("content-length: {}", body.len()))
        );
    }
}
