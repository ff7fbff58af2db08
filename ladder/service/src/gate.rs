//! The gate in front of `duel.v1.Ladder`: every call is rate-limited by client
//! address, authenticated from its `authorization` header, rate-limited by
//! token and, for uploads, given one of a few upload turns — all before tonic
//! reads a byte of the body. Only then is the message decoded, at the upload
//! size for `RegisterBot`/`NewBotVersion` and at a small size for every other
//! RPC. An unauthenticated 64 MiB upload is refused from its headers alone.
//!
//! Refusals: `RESOURCE_EXHAUSTED` for a rate limit or when every upload turn is
//! taken (at once, not queued), `UNAUTHENTICATED` for a missing or unknown
//! token, `OUT_OF_RANGE` (tonic's) for a message over its RPC's size.

use std::convert::Infallible;
use std::net::IpAddr;
use std::num::{NonZeroU32, NonZeroUsize};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use duel_plumbing::clients::client_key as peer_key;
use duel_proto::v1::ladder_server::LadderServer;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use tokio::sync::Semaphore;
use tonic::Status;
use tonic::body::Body;
use tonic::codegen::http;
use tonic::server::NamedService;
use tonic::transport::server::TcpConnectInfo;

use crate::grpc::{LadderService, bearer_token_of, status_of};
use crate::ladder::Ladder;
use crate::limits::{
    DEFAULT_CALL_BURST_PER_PEER, DEFAULT_CALL_BURST_PER_TOKEN, DEFAULT_CALLS_PER_SECOND_PER_PEER,
    DEFAULT_CALLS_PER_SECOND_PER_TOKEN, DEFAULT_MAX_CONCURRENT_UPLOADS, MAX_RATE_LIMITED_KEYS,
    MAX_RPC_MESSAGE_BYTES, MAX_UPLOAD_MESSAGE_BYTES,
};

/// How hard the API may be called (`ladder serve --calls-per-second-per-peer` …).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApiLimits {
    pub calls_per_second_per_peer: NonZeroU32,
    pub call_burst_per_peer: NonZeroU32,
    pub calls_per_second_per_token: NonZeroU32,
    pub call_burst_per_token: NonZeroU32,
    /// Upload RPCs decoded at once; one more is refused at once.
    pub max_concurrent_uploads: NonZeroUsize,
}

const fn non_zero(value: u32) -> NonZeroU32 {
    match NonZeroU32::new(value) {
        Some(value) => value,
        None => panic!("a rate limit must be at least 1"),
    }
}

impl Default for ApiLimits {
    fn default() -> ApiLimits {
        ApiLimits {
            calls_per_second_per_peer: non_zero(DEFAULT_CALLS_PER_SECOND_PER_PEER),
            call_burst_per_peer: non_zero(DEFAULT_CALL_BURST_PER_PEER),
            calls_per_second_per_token: non_zero(DEFAULT_CALLS_PER_SECOND_PER_TOKEN),
            call_burst_per_token: non_zero(DEFAULT_CALL_BURST_PER_TOKEN),
            max_concurrent_uploads: match NonZeroUsize::new(DEFAULT_MAX_CONCURRENT_UPLOADS) {
                Some(uploads) => uploads,
                None => panic!("the default upload turns must be at least 1"),
            },
        }
    }
}

/// The RPCs that carry a WASM component and get the upload size.
const UPLOAD_METHODS: [&str; 2] = ["RegisterBot", "NewBotVersion"];

fn is_upload(path: &str) -> bool {
    path.rsplit('/')
        .next()
        .is_some_and(|method| UPLOAD_METHODS.contains(&method))
}

struct Shared {
    limits: ApiLimits,
    per_peer: DefaultKeyedRateLimiter<IpAddr>,
    per_token: DefaultKeyedRateLimiter<String>,
    uploads: Arc<Semaphore>,
    /// Calls seen, to drop idle limiter entries now and then.
    calls: AtomicU64,
}

/// `duel.v1.Ladder` behind the gate; add it to a tonic server as is.
#[derive(Clone)]
pub struct Gate {
    ladder: Arc<Ladder>,
    /// Decodes at most [`MAX_RPC_MESSAGE_BYTES`].
    small: LadderServer<LadderService>,
    /// Decodes up to [`MAX_UPLOAD_MESSAGE_BYTES`]; upload RPCs only.
    large: LadderServer<LadderService>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("limits", &self.shared.limits)
            .finish_non_exhaustive()
    }
}

impl Gate {
    pub fn new(ladder: Arc<Ladder>, limits: ApiLimits) -> Gate {
        let service = LadderService::new(Arc::clone(&ladder));
        let small = LadderServer::new(service.clone())
            .max_decoding_message_size(MAX_RPC_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_UPLOAD_MESSAGE_BYTES);
        let large = LadderServer::new(service)
            .max_decoding_message_size(MAX_UPLOAD_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_UPLOAD_MESSAGE_BYTES);
        let per_peer = RateLimiter::keyed(
            Quota::per_second(limits.calls_per_second_per_peer)
                .allow_burst(limits.call_burst_per_peer),
        );
        let per_token = RateLimiter::keyed(
            Quota::per_second(limits.calls_per_second_per_token)
                .allow_burst(limits.call_burst_per_token),
        );
        Gate {
            ladder,
            small,
            large,
            shared: Arc::new(Shared {
                limits,
                per_peer,
                per_token,
                uploads: Arc::new(Semaphore::new(limits.max_concurrent_uploads.get())),
                calls: AtomicU64::new(0),
            }),
        }
    }

    /// Admits a call or says why not, without reading its body.
    async fn admit(
        &self,
        mut request: http::Request<Body>,
    ) -> Result<http::Response<Body>, Status> {
        let shared = &self.shared;
        if shared
            .calls
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(4_096)
            && shared.per_peer.len() + shared.per_token.len() > MAX_RATE_LIMITED_KEYS
        {
            shared.per_peer.retain_recent();
            shared.per_token.retain_recent();
        }
        let peer = request
            .extensions()
            .get::<TcpConnectInfo>()
            .and_then(TcpConnectInfo::remote_addr)
            .map(|address| peer_key(address.ip()));
        if let Some(peer) = peer
            && let Err(not_until) = shared.per_peer.check_key(&peer)
        {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            return Err(Status::resource_exhausted(format!(
                "rate limit: more than {} calls a second (burst {}) from {peer}; retry in {} ms",
                shared.limits.calls_per_second_per_peer,
                shared.limits.call_burst_per_peer,
                wait.as_millis().max(1)
            )));
        }
        let token = bearer_token_of(request.headers())?;
        let caller = self.ladder.caller(token).await.map_err(status_of)?;
        if let Err(not_until) = shared.per_token.check_key(&caller.id) {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            return Err(Status::resource_exhausted(format!(
                "rate limit: more than {} calls a second (burst {}) with {}'s token; retry in {} ms",
                shared.limits.calls_per_second_per_token,
                shared.limits.call_burst_per_token,
                caller.name,
                wait.as_millis().max(1)
            )));
        }
        request.extensions_mut().insert(caller);
        if !is_upload(request.uri().path()) {
            let mut small = self.small.clone();
            let Ok(response) = tower_service::Service::call(&mut small, request).await;
            return Ok(response);
        }
        // The turn is held until the handler answers: the body is decoded,
        // validated and stored within it.
        let _turn = Arc::clone(&shared.uploads)
            .try_acquire_owned()
            .map_err(|_| {
                Status::resource_exhausted(format!(
                    "{} uploads are being received, the server's limit; retry shortly",
                    shared.limits.max_concurrent_uploads
                ))
            })?;
        let mut large = self.large.clone();
        let Ok(response) = tower_service::Service::call(&mut large, request).await;
        Ok(response)
    }
}

impl tower_service::Service<http::Request<Body>> for Gate {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = tonic::codegen::BoxFuture<http::Response<Body>, Infallible>;

    fn poll_ready(
        &mut self,
        _context: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Infallible>> {
        // The generated servers behind the gate are always ready.
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let gate = self.clone();
        Box::pin(async move {
            Ok(gate
                .admit(request)
                .await
                .unwrap_or_else(|status| status.into_http()))
        })
    }
}

impl NamedService for Gate {
    const NAME: &'static str = <LadderServer<LadderService> as NamedService>::NAME;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_upload_rpcs_get_the_upload_size() {
        assert!(is_upload("/duel.v1.Ladder/RegisterBot"));
        assert!(is_upload("/duel.v1.Ladder/NewBotVersion"));
        for path in [
            "/duel.v1.Ladder/Whoami",
            "/duel.v1.Ladder/GrantCredits",
            "/duel.v1.Ladder/RegisterBotX",
            "/duel.v1.Ladder/",
        ] {
            assert!(!is_upload(path), "{path}");
        }
    }

    #[test]
    fn ipv6_clients_share_a_limit_per_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().expect("address");
        let b: IpAddr = "2001:db8:1:2:bbbb::2".parse().expect("address");
        let other: IpAddr = "2001:db8:1:3::1".parse().expect("address");
        assert_eq!(peer_key(a), peer_key(b));
        assert_ne!(peer_key(a), peer_key(other));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().expect("address");
        assert_eq!(
            peer_key(mapped),
            "192.0.2.7".parse::<IpAddr>().expect("address")
        );
    }
}
