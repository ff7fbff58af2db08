//! Every limit of the shared plumbing, named and documented in one place:
//! what one HTTP listener allows ([`crate::listen`]) and what one gRPC
//! listener allows ([`crate::grpc_listen`]).

use std::time::Duration;

/// How long a client of the replay service has to send a request's head
/// (request line and headers), counted from when the server starts waiting
/// for one: at accept, and again after each response on a kept-alive
/// connection, so it is also the longest a kept-alive connection waits idle
/// for its next request. A slower client is cut (hyper's header read timeout).
/// Configurable per listener (`listen::HttpLimits`, `ladder serve
/// --http-header-timeout-ms`).
pub const HTTP_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A replay service connection on which no byte moves either way for this long
/// is closed: a stalled request body, a client that stopped reading its
/// response, a request stuck on the store. Longer than the live feeds' keep-alive (`duel_referee::limits::LIVE_KEEP_ALIVE`, checked there), so
/// a live feed's keep-alive comments hold a spectator's connection open.
/// Configurable per listener (`ladder serve --http-idle-timeout-ms`).
pub const HTTP_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Connections one replay service listener serves at once; beyond it new
/// connections wait in the kernel's listen backlog until one closes. Each
/// costs a file descriptor and a few KiB of buffers (~64 MiB at the cap): keep
/// it below the process's open-file limit. Configurable per listener
/// (`ladder serve --http-max-connections`).
pub const MAX_HTTP_CONNECTIONS: usize = 4_096;

/// Connections one client address (an IPv6 /64) may hold on one HTTP
/// listener; one more is answered 429 and closed. A browser opens at most 6
/// per site; this leaves room for many people behind one NAT. Connections
/// from a trusted proxy are not counted. Configurable
/// (`--http-max-connections-per-client`).
pub const MAX_HTTP_CONNECTIONS_PER_CLIENT: usize = 128;

/// Event streams (Duel TV, `/live/{id}`) one client address may hold on one
/// HTTP listener; one more is answered 429. Counted by the forwarded
/// address behind a trusted proxy. Configurable
/// (`--http-max-streams-per-client`).
pub const MAX_STREAMS_PER_CLIENT: usize = 32;

/// The longest life of one HTTP connection: at this age the listener stops
/// taking requests on it (one in flight finishes, then it closes), so no
/// client keeps a place for ever by trickling requests or holding a stream.
/// Browsers open a new connection for their next request, and Duel TV's and
/// the live feeds' `EventSource` reconnects and is sent the history again.
/// Configurable (`--http-max-connection-age-ms`).
pub const HTTP_MAX_CONNECTION_AGE: Duration = Duration::from_secs(15 * 60);

/// How long a connection past [`HTTP_MAX_CONNECTION_AGE`] may take to finish
/// the answer in flight (an event stream never does) before it is cut; an
/// age shorter than this is also its grace.
pub const HTTP_CONNECTION_AGE_GRACE: Duration = Duration::from_secs(30);

/// `X-Forwarded-For` entries read from the right before giving up: more
/// proxies than anyone chains.
pub const MAX_FORWARDED_HOPS: usize = 16;

/// The longest PROXY protocol header read from a trusted proxy
/// (`--proxy-protocol`): version 1 is at most 107 bytes by its spec; version
/// 2 is 16 bytes plus its addresses and TLVs, and its spec asks receivers to
/// take 536 bytes at least. A longer header closes the connection.
pub const PROXY_HEADER_MAX_BYTES: usize = 536;

const _: () = assert!(MAX_HTTP_CONNECTIONS_PER_CLIENT < MAX_HTTP_CONNECTIONS);
const _: () = assert!(MAX_STREAMS_PER_CLIENT <= MAX_HTTP_CONNECTIONS_PER_CLIENT);
const _: () = assert!(HTTP_MAX_CONNECTION_AGE.as_secs() > 2 * HTTP_IDLE_TIMEOUT.as_secs());

/// How long a new connection to a gRPC listener has to send its first bytes
/// (the HTTP/2 preface, or an HTTP/1.1 request head for the OpenAI face).
/// A client library sends them at once; a socket that stays silent is
/// closed. Configurable (`--grpc-handshake-timeout-ms` on `referee serve`,
/// `ladder serve` and `ladder worker`).
pub const GRPC_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A gRPC listener's connection on which no byte moves either way for this
/// long is closed. Live HTTP/2 peers answer [`GRPC_KEEPALIVE_INTERVAL`]'s
/// pings, so this reaches only kept-alive HTTP/1.1 connections (the OpenAI
/// face) and stalled ones. Longer than the 10 s decision clock, so no call
/// that a decision may make is cut. Configurable (`--grpc-idle-timeout-ms`).
pub const GRPC_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How often a gRPC listener pings each HTTP/2 connection, busy or idle.
pub const GRPC_KEEPALIVE_INTERVAL: Duration = Duration::from_secs(20);

/// How long a ping may go unanswered before its connection is closed.
pub const GRPC_KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// Connections one gRPC listener serves at once (and never more than half
/// the process's open-file limit); beyond it new connections wait in the
/// kernel's listen backlog. Configurable (`--grpc-max-connections`).
pub const MAX_GRPC_CONNECTIONS: usize = 1_024;

const _: () = assert!(
    GRPC_KEEPALIVE_INTERVAL.as_secs() + GRPC_KEEPALIVE_TIMEOUT.as_secs()
        < GRPC_IDLE_TIMEOUT.as_secs()
);
