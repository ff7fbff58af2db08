//! The HTTP listener of both binaries' services (the replay service, the
//! ladder's site, `/metrics`): HTTP/1.1 connections under a cap, each with
//! a header-read timeout and an idle timeout, so slow or idle clients cannot
//! hold the service's sockets.
//!
//! - **Cap** ([`HttpLimits::max_connections`]): a connection is accepted only
//!   with a free place; beyond the cap new connections wait in the kernel's
//!   listen backlog while the accepted ones are served.
//! - **Header read** ([`HttpLimits::header_read_timeout`], hyper's own timer):
//!   a connection waiting for a request, new or kept alive after a response,
//!   must deliver that request's whole head in time, else it is closed.
//! - **Idle** ([`HttpLimits::idle_timeout`]): a connection on which no byte
//!   moves either way for that long is closed (a stalled body, a client that
//!   stopped reading, a request stuck on the store).

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

use crate::limits::{HTTP_HEADER_READ_TIMEOUT, HTTP_IDLE_TIMEOUT, MAX_HTTP_CONNECTIONS};

/// What an HTTP listener allows each connection, and how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpLimits {
    /// Time to deliver a request's head, from when the server waits for it.
    pub header_read_timeout: Duration,
    /// A connection with no bytes moving either way for this long is closed.
    pub idle_timeout: Duration,
    /// Connections served at once; more wait to be accepted.
    pub max_connections: NonZeroUsize,
}

impl Default for HttpLimits {
    fn default() -> HttpLimits {
        HttpLimits {
            header_read_timeout: HTTP_HEADER_READ_TIMEOUT,
            idle_timeout: HTTP_IDLE_TIMEOUT,
            max_connections: NonZeroUsize::new(MAX_HTTP_CONNECTIONS).unwrap_or(NonZeroUsize::MIN),
        }
    }
}

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
    let places = Arc::new(Semaphore::new(limits.max_connections.get()));
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
        let router = router.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            serve_connection(stream, remote, router, limits, stop).await;
            drop(place);
        });
    }
    drop(listener);
    // Every place back means every connection closed.
    let all = u32::try_from(limits.max_connections.get()).unwrap_or(u32::MAX);
    let _ = places.acquire_many(all).await;
    Ok(())
}

fn is_connection_error(error: &std::io::Error) -> bool {
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
    limits: HttpLimits,
    stop: CancellationToken,
) {
    let activity = Activity::new();
    let io = TokioIo::new(Watched {
        inner: stream,
        activity: Arc::clone(&activity),
    });
    let service = hyper::service::service_fn(move |mut request: axum::extract::Request<_>| {
        request.extensions_mut().insert(ConnectInfo(remote));
        // A Router is always ready: calling it without `poll_ready` is allowed.
        router.clone().call(request)
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    let connection = builder.serve_connection(io, service);
    tokio::pin!(connection);
    let mut draining = false;
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
