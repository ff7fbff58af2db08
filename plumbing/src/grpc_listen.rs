//! The connections of both binaries' gRPC listeners (tonic: `referee serve`,
//! the Inference gateway of `referee local` and of ladder workers, `ladder
//! serve`): accepted under a cap, each with a handshake deadline and an idle
//! timeout, and HTTP/2 keep-alive pings that close a peer which stopped
//! answering, so idle or silent sockets cannot hold the process's descriptors.
//!
//! - **Cap** ([`GrpcLimits::max_connections`], at most half the process's
//!   open-file limit): a connection is accepted only with a free place;
//!   beyond it new connections wait in the kernel's listen backlog.
//! - **Handshake** ([`GrpcLimits::handshake_timeout`]): a connection must
//!   send its first bytes (the HTTP/2 preface, or an HTTP/1.1 request head
//!   for the OpenAI face) in time, else it is closed.
//! - **Idle** ([`GrpcLimits::idle_timeout`]): a connection on which no byte
//!   moves either way for that long is closed. A live HTTP/2 peer answers the
//!   server's pings, so only a kept-alive HTTP/1.1 connection or a stalled
//!   one reaches it.
//! - **Keep-alive** ([`GrpcLimits::keepalive_interval`],
//!   [`GrpcLimits::keepalive_timeout`]): the server pings every HTTP/2
//!   connection, busy or idle, and closes it when a ping goes unanswered.

use std::future::Future;
use std::num::NonZeroUsize;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};
use tonic::transport::server::{Connected, TcpConnectInfo};

use crate::limits::{
    GRPC_HANDSHAKE_TIMEOUT, GRPC_IDLE_TIMEOUT, GRPC_KEEPALIVE_INTERVAL, GRPC_KEEPALIVE_TIMEOUT,
    MAX_GRPC_CONNECTIONS,
};
use crate::listen::duration_ms;

/// What a gRPC listener allows each connection, and how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrpcLimits {
    /// Time from accept to the connection's first bytes.
    pub handshake_timeout: Duration,
    /// A connection with no bytes moving either way for this long is closed.
    pub idle_timeout: Duration,
    /// How often the server pings each HTTP/2 connection.
    pub keepalive_interval: Duration,
    /// How long a ping may go unanswered before its connection is closed.
    pub keepalive_timeout: Duration,
    /// Connections served at once (before the open-file clamp); more wait to
    /// be accepted.
    pub max_connections: NonZeroUsize,
}

impl Default for GrpcLimits {
    fn default() -> GrpcLimits {
        GrpcLimits {
            handshake_timeout: GRPC_HANDSHAKE_TIMEOUT,
            idle_timeout: GRPC_IDLE_TIMEOUT,
            keepalive_interval: GRPC_KEEPALIVE_INTERVAL,
            keepalive_timeout: GRPC_KEEPALIVE_TIMEOUT,
            max_connections: NonZeroUsize::new(MAX_GRPC_CONNECTIONS).unwrap_or(NonZeroUsize::MIN),
        }
    }
}

impl GrpcLimits {
    /// A tonic server builder with these limits' HTTP/2 keep-alive, that
    /// also accepts HTTP/1.1 (the OpenAI face's clients speak it by default).
    /// Serve it with [`incoming`] under the same limits.
    pub fn server(&self) -> tonic::transport::Server {
        tonic::transport::Server::builder()
            .accept_http1(true)
            .http2_keepalive_interval(Some(self.keepalive_interval))
            .http2_keepalive_timeout(Some(self.keepalive_timeout))
    }
}

/// The flags that set a gRPC listener's [`GrpcLimits`] (`referee serve`,
/// `ladder serve`, `ladder worker`).
#[derive(Clone, Debug, clap::Args)]
pub struct GrpcLimitArgs {
    /// Milliseconds a new gRPC connection has to send its first bytes (the
    /// HTTP/2 preface or an HTTP/1.1 request); a silent socket is closed.
    #[arg(long, value_name = "MS", default_value_t = duration_ms(GRPC_HANDSHAKE_TIMEOUT),
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub grpc_handshake_timeout_ms: u64,
    /// Milliseconds with no bytes moving after which a gRPC connection is
    /// closed (HTTP/2 peers answer the server's pings every 20 s).
    #[arg(long, value_name = "MS", default_value_t = duration_ms(GRPC_IDLE_TIMEOUT),
          value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub grpc_idle_timeout_ms: u64,
    /// gRPC connections served at once (never more than half the open-file
    /// limit); more wait to be accepted.
    #[arg(long, value_name = "N", default_value_t = NonZeroUsize::new(MAX_GRPC_CONNECTIONS).unwrap_or(NonZeroUsize::MIN))]
    pub grpc_max_connections: NonZeroUsize,
}

impl GrpcLimitArgs {
    /// The limits these flags set, with the keep-alive defaults.
    pub fn limits(&self) -> GrpcLimits {
        GrpcLimits {
            handshake_timeout: Duration::from_millis(self.grpc_handshake_timeout_ms),
            idle_timeout: Duration::from_millis(self.grpc_idle_timeout_ms),
            max_connections: self.grpc_max_connections,
            ..GrpcLimits::default()
        }
    }
}

/// How long the accept loop pauses after an error that is not one
/// connection's own (out of file descriptors, say) before it tries again.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// The connections of `listener` under `limits`, for tonic's
/// `serve_with_incoming_shutdown`. Never yields an error: a failed accept is
/// logged and retried, so the server keeps serving.
pub fn incoming(
    listener: TcpListener,
    limits: GrpcLimits,
) -> impl Stream<Item = Result<LimitedStream, std::io::Error>> + Send + 'static {
    let cap = crate::listen::within_open_file_limit(limits.max_connections, "gRPC");
    let places = Arc::new(Semaphore::new(cap.get()));
    futures::stream::unfold((listener, places), move |(listener, places)| async move {
        loop {
            let Ok(place) = Arc::clone(&places).acquire_owned().await else {
                return None;
            };
            match listener.accept().await {
                Ok((stream, _remote)) => {
                    // Endpoint bots' Inference calls are small messages
                    // that Nagle would delay.
                    let _ = stream.set_nodelay(true);
                    let stream = LimitedStream::new(stream, limits, place);
                    return Some((Ok(stream), (listener, places)));
                }
                Err(error) => {
                    drop(place);
                    if !crate::listen::is_connection_error(&error) {
                        tracing::warn!(%error, "gRPC listener cannot accept a connection");
                        tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                    }
                }
            }
        }
    })
}

/// One accepted connection: its place under the cap (given back when tonic
/// drops it) and the deadline by which bytes must next move.
#[derive(Debug)]
pub struct LimitedStream {
    inner: TcpStream,
    connect_info: TcpConnectInfo,
    limits: GrpcLimits,
    /// When bytes last moved; `None` until the first bytes arrive.
    last_active: Option<Instant>,
    deadline: Pin<Box<Sleep>>,
    _place: OwnedSemaphorePermit,
}

impl LimitedStream {
    fn new(inner: TcpStream, limits: GrpcLimits, place: OwnedSemaphorePermit) -> LimitedStream {
        let connect_info = inner.connect_info();
        let deadline = Box::pin(tokio::time::sleep(limits.handshake_timeout));
        LimitedStream {
            inner,
            connect_info,
            limits,
            last_active: None,
            deadline,
            _place: place,
        }
    }

    fn touch(&mut self) {
        self.last_active = Some(Instant::now());
    }

    /// A write's bookkeeping: bytes written after the client's first bytes
    /// keep the connection alive (before them, only the client's own bytes
    /// end the handshake timeout); a write that waits is where the deadline
    /// is checked.
    fn after_write(
        &mut self,
        cx: &mut Context<'_>,
        written: Poll<std::io::Result<usize>>,
    ) -> Poll<std::io::Result<usize>> {
        match written {
            Poll::Ready(Ok(written)) => {
                if written > 0 && self.last_active.is_some() {
                    self.touch();
                }
                Poll::Ready(Ok(written))
            }
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            Poll::Pending => self.poll_expired(cx).map(Err),
        }
    }

    /// Ready with an error once the connection's deadline has passed with
    /// no bytes moving. The timer is moved lazily: bytes only record when
    /// they moved, and a timer that fires early is pushed to the real
    /// deadline.
    fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Error> {
        loop {
            if self.deadline.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            match self.last_active {
                None => {
                    return Poll::Ready(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!(
                            "no request within the {} ms handshake timeout",
                            self.limits.handshake_timeout.as_millis()
                        ),
                    ));
                }
                Some(last) => {
                    let due = last + self.limits.idle_timeout;
                    if Instant::now() >= due {
                        return Poll::Ready(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            format!(
                                "idle for the {} ms idle timeout",
                                self.limits.idle_timeout.as_millis()
                            ),
                        ));
                    }
                    self.deadline.as_mut().reset(due);
                }
            }
        }
    }
}

impl Connected for LimitedStream {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        self.connect_info.clone()
    }
}

impl AsyncRead for LimitedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    this.touch();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            Poll::Pending => this.poll_expired(cx).map(Err),
        }
    }
}

impl AsyncWrite for LimitedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.after_write(cx, written)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.after_write(cx, written)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
