//! Every limit of the shared plumbing, named and documented in one place:
//! what one HTTP listener allows ([`crate::listen`]).

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
