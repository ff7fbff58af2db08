//! Endpoint bots: remote `duel.v1.Bot` servers asked over gRPC. Each decision is
//! sent with the wall clock as its deadline; a late answer is a `timeout`, and a
//! lost connection, an error status, an unknown action or a malformed reply is a
//! `fault` for that exchange only: the bot is asked again next exchange, over a
//! reconnected channel when needed.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use duel_proto::v1 as pb;
use duel_proto::v1::bot_client::BotClient;
use duel_replays::{FighterInfo, FighterKind};
use duel_rules::{Observation, Side};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

use crate::address_policy::{self, AddressPolicy};
use crate::bot::{Bot, BotFailure, Decision, DecisionFuture};
use crate::convert;
use crate::error::{HelloFailure, MatchError};
use crate::limits::MAX_BOT_RESPONSE_BYTES;
use duel_gateway::credentials::Credentials;
use duel_gateway::limits::MAX_GRPC_MESSAGE_BYTES;
use duel_gateway::meter::{FighterMeter, Spent};
use duel_gateway::tls::Trust;

/// Where an endpoint bot reaches `duel.v1.Inference`, and who issues its
/// credentials there (a fresh one for each decision).
#[derive(Debug)]
pub struct InferenceGrant {
    pub url: String,
    pub credentials: Credentials,
    pub match_id: String,
    pub side: Side,
}

/// How endpoint bots are started and how their failures are recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndpointPolicy {
    /// An endpoint must answer `Hello` (speaking this ruleset) before the match,
    /// or the match is refused with [`MatchError::Unreachable`] (`referee
    /// local`, tournaments, ladder workers, which void it). Otherwise it plays,
    /// named by its URL, and its decisions fault until it comes up.
    pub require_hello: bool,
    /// Substitution reasons carry the peer's own error text (a local run, for
    /// the bot's author). Otherwise they name only a category (`unreachable`,
    /// `bot error`, `protocol`, `deadline`): a public, signed replay never
    /// carries what some other server answered, and the text goes to the log.
    pub peer_text_in_reasons: bool,
    /// Which addresses may be dialed ([`crate::address_policy`]). The name is
    /// resolved once per match and the match keeps that address.
    pub addresses: AddressPolicy,
}

impl EndpointPolicy {
    /// For a bot author's own runs: fail fast, full reasons, any address.
    pub const LOCAL: EndpointPolicy = EndpointPolicy {
        require_hello: true,
        peer_text_in_reasons: true,
        addresses: AddressPolicy::Any,
    };
    /// For replays others read, on a service others call: categories only,
    /// public addresses only.
    pub const PUBLIC: EndpointPolicy = EndpointPolicy {
        require_hello: false,
        peer_text_in_reasons: false,
        addresses: AddressPolicy::PublicOnly,
    };
}

/// A remote bot behind the [`Bot`] seam.
pub struct EndpointBot {
    info: FighterInfo,
    endpoint: Endpoint,
    /// Resolved and checked once; every reconnect dials exactly this.
    address: SocketAddr,
    client: BotClient<Channel>,
    wall_clock: Duration,
    meter: FighterMeter,
    grant: Option<InferenceGrant>,
    peer_text_in_reasons: bool,
}

impl std::fmt::Debug for EndpointBot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EndpointBot")
            .field("info", &self.info)
            .field("wall_clock", &self.wall_clock)
            .finish_non_exhaustive()
    }
}

/// The URI tonic dials for a spec: `grpc://` and `http://` in plain text,
/// `grpcs://` and `https://` over TLS.
pub fn endpoint_uri(url: &str) -> Result<String, MatchError> {
    if let Some(rest) = url.strip_prefix("grpc://") {
        return Ok(format!("http://{rest}"));
    }
    if let Some(rest) = url.strip_prefix("grpcs://") {
        return Ok(format!("https://{rest}"));
    }
    if url.starts_with("http://") || url.starts_with("https://") {
        return Ok(url.to_owned());
    }
    Err(MatchError::Spec(format!(
        "bot {url}: expected grpc://host:port or grpcs://host:port"
    )))
}

/// TLS for an `https` endpoint: the system's roots and the extra ones trusted.
fn with_tls(endpoint: Endpoint, url: &str, trust: &Trust) -> Result<Endpoint, MatchError> {
    let mut tls = ClientTlsConfig::new().with_native_roots();
    if let Some(pem) = trust.extra_ca_pem() {
        tls = tls.ca_certificate(Certificate::from_pem(pem));
    }
    endpoint
        .tls_config(tls)
        .map_err(|error| MatchError::Spec(format!("bot {url}: TLS: {error}")))
}

/// A connector that always dials one checked address, whatever the URI says:
/// the URI's host name still goes into `:authority` and TLS SNI.
#[derive(Clone, Copy, Debug)]
struct FixedAddress(SocketAddr);

impl tower_service::Service<http::Uri> for FixedAddress {
    type Response = hyper_util::rt::TokioIo<tokio::net::TcpStream>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _uri: http::Uri) -> Self::Future {
        let address = self.0;
        Box::pin(async move {
            let stream = tokio::net::TcpStream::connect(address).await?;
            stream.set_nodelay(true)?;
            Ok(hyper_util::rt::TokioIo::new(stream))
        })
    }
}

/// Resolves the endpoint's host once and checks it against `policy`.
async fn checked_address(
    url: &str,
    endpoint: &Endpoint,
    policy: AddressPolicy,
) -> Result<SocketAddr, MatchError> {
    let uri = endpoint.uri();
    let host = uri
        .host()
        .map(|host| host.trim_start_matches('[').trim_end_matches(']'))
        .ok_or_else(|| MatchError::Spec(format!("bot {url}: no host")))?;
    let port = uri
        .port_u16()
        .unwrap_or(if uri.scheme_str() == Some("https") {
            443
        } else {
            80
        });
    address_policy::resolve(host, port, policy)
        .await
        .map_err(|reason| MatchError::AddressRefused {
            url: url.to_owned(),
            reason,
        })
}

fn client(endpoint: &Endpoint, address: SocketAddr) -> BotClient<Channel> {
    BotClient::new(endpoint.connect_with_connector_lazy(FixedAddress(address)))
        .max_decoding_message_size(MAX_BOT_RESPONSE_BYTES)
        .max_encoding_message_size(MAX_GRPC_MESSAGE_BYTES)
}

impl EndpointBot {
    /// Prepares the channel (connecting lazily) and asks the bot its name with
    /// `Hello`. A bot that does not answer is refused when `policy` requires
    /// `Hello`; otherwise it still plays, named by its URL, and its decisions
    /// fault until it comes up.
    pub async fn connect(
        url: &str,
        wall_clock: Duration,
        meter: FighterMeter,
        grant: Option<InferenceGrant>,
        trust: &Trust,
        policy: EndpointPolicy,
    ) -> Result<EndpointBot, MatchError> {
        let endpoint = endpoint_for(url, wall_clock, trust)?;
        let address = checked_address(url, &endpoint, policy.addresses).await?;
        let mut client = client(&endpoint, address);
        let hello = ask_hello(&mut client, wall_clock)
            .await
            .and_then(check_ruleset);
        if policy.require_hello
            && let Err(reason) = &hello
        {
            return Err(MatchError::Unreachable {
                url: url.to_owned(),
                reason: reason.clone(),
            });
        }
        let name = match hello {
            Ok(hello) => {
                let name: String = hello
                    .name
                    .chars()
                    .filter(|c| !crate::terminal::is_hidden(*c))
                    .take(crate::limits::MAX_HELLO_NAME_CHARS)
                    .collect();
                if name.trim().is_empty() {
                    url.to_owned()
                } else {
                    name
                }
            }
            Err(why) => {
                tracing::warn!(bot = url, %why, "endpoint bot did not answer Hello");
                url.to_owned()
            }
        };
        Ok(EndpointBot {
            info: FighterInfo {
                name: name.into(),
                kind: FighterKind::Endpoint,
                digest: crate::spec::sha256_digest(url.as_bytes()).into(),
                spec: Some(url.into()),
            },
            endpoint,
            address,
            client,
            wall_clock,
            meter,
            grant,
            peer_text_in_reasons: policy.peer_text_in_reasons,
        })
    }
}

/// A `Hello` that lists a ruleset other than ours is refused: the bot would
/// play rules it does not know.
fn check_ruleset(hello: pb::HelloResponse) -> Result<pb::HelloResponse, HelloFailure> {
    let ours = duel_rules::Ruleset::CURRENT.version();
    if hello.rulesets.is_empty() || hello.rulesets.iter().any(|version| version == ours) {
        return Ok(hello);
    }
    Err(HelloFailure::OtherRuleset {
        spoken: hello.rulesets.join(", "),
        ours,
    })
}

/// The channel settings of an endpoint bot: `timeout` bounds connecting and
/// every call.
fn endpoint_for(url: &str, timeout: Duration, trust: &Trust) -> Result<Endpoint, MatchError> {
    let uri = endpoint_uri(url)?;
    let secure = uri.starts_with("https://");
    let endpoint = Endpoint::from_shared(uri)
        .map_err(|error| MatchError::Spec(format!("bot {url}: {error}")))?
        .connect_timeout(timeout)
        .timeout(timeout)
        .tcp_nodelay(true);
    if secure {
        return with_tls(endpoint, url, trust);
    }
    Ok(endpoint)
}

/// One `Hello` call within `timeout`; the error is one line saying why not.
async fn ask_hello(
    client: &mut BotClient<Channel>,
    timeout: Duration,
) -> Result<pb::HelloResponse, HelloFailure> {
    let mut hello = tonic::Request::new(pb::HelloRequest {});
    hello.set_timeout(timeout);
    match tokio::time::timeout(timeout, client.hello(hello)).await {
        Ok(Ok(response)) => Ok(response.into_inner()),
        Ok(Err(status)) => Err(HelloFailure::Status {
            code: status.code(),
            message: status
                .message()
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned(),
        }),
        Err(_) => Err(HelloFailure::NoAnswer {
            timeout_ms: timeout.as_millis(),
        }),
    }
}

/// Asks the endpoint bot at `url` who it is (the ladder checks this when a bot
/// is registered). The error is one line: unreachable, an error status, or no
/// answer within `timeout`.
pub async fn hello(
    url: &str,
    timeout: Duration,
    trust: &Trust,
    addresses: AddressPolicy,
) -> Result<pb::HelloResponse, MatchError> {
    let endpoint = endpoint_for(url, timeout, trust)?;
    let address = checked_address(url, &endpoint, addresses).await?;
    ask_hello(&mut client(&endpoint, address), timeout)
        .await
        .map_err(|reason| MatchError::Unreachable {
            url: url.to_owned(),
            reason,
        })
}

/// The OpenAI-compatible base URL served beside Inference at `inference_url`
/// (the same listener): `http://127.0.0.1:50051` gives `http://127.0.0.1:50051/v1`.
pub fn openai_base_url(inference_url: &str) -> String {
    format!("{}/v1", inference_url.trim_end_matches('/'))
}

/// How a failed call counts: one that failed at or past the wall clock is a
/// timeout (tonic reports its own deadline as CANCELLED or DEADLINE_EXCEEDED);
/// anything earlier, including a dropped connection, is a fault.
///
/// The reason names what happened: `unreachable` (no connection, or it broke),
/// `bot error` (the bot answered with an error status of its own, such as an
/// exception in its handler), or `protocol` (any other status). With
/// `peer_text` the peer's message follows; without, it is only logged.
fn failure_from_status(
    status: &tonic::Status,
    elapsed: Duration,
    wall_clock: Duration,
    peer_text: bool,
) -> BotFailure {
    if elapsed >= wall_clock {
        return BotFailure::timeout(duel_sandbox::timeout_reason(wall_clock));
    }
    let code = status.code();
    let category = match code {
        // Made here, not sent by the bot: its reply did not decode.
        _ if duel_proto::codec::is_malformed_message(status) => {
            "protocol (malformed reply)".to_owned()
        }
        tonic::Code::Unavailable | tonic::Code::Cancelled => "unreachable".to_owned(),
        tonic::Code::DeadlineExceeded => "deadline".to_owned(),
        tonic::Code::Unknown | tonic::Code::Internal => {
            format!("bot error ({})", code_name(code))
        }
        other => format!("protocol ({})", code_name(other)),
    };
    let message = status.message().lines().next().unwrap_or_default().trim();
    if peer_text && !message.is_empty() {
        BotFailure::fault(format!("{category}: {message}"))
    } else {
        BotFailure::fault(category)
    }
}

/// A status code as the gRPC specification spells it.
fn code_name(code: tonic::Code) -> &'static str {
    match code {
        tonic::Code::Ok => "OK",
        tonic::Code::Cancelled => "CANCELLED",
        tonic::Code::Unknown => "UNKNOWN",
        tonic::Code::InvalidArgument => "INVALID_ARGUMENT",
        tonic::Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        tonic::Code::NotFound => "NOT_FOUND",
        tonic::Code::AlreadyExists => "ALREADY_EXISTS",
        tonic::Code::PermissionDenied => "PERMISSION_DENIED",
        tonic::Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        tonic::Code::FailedPrecondition => "FAILED_PRECONDITION",
        tonic::Code::Aborted => "ABORTED",
        tonic::Code::OutOfRange => "OUT_OF_RANGE",
        tonic::Code::Unimplemented => "UNIMPLEMENTED",
        tonic::Code::Internal => "INTERNAL",
        tonic::Code::Unavailable => "UNAVAILABLE",
        tonic::Code::DataLoss => "DATA_LOSS",
        tonic::Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

impl Bot for EndpointBot {
    fn info(&self) -> FighterInfo {
        self.info.clone()
    }

    fn decide<'a>(&'a mut self, observation: Observation<'a>) -> DecisionFuture<'a> {
        // This decision's credential: it opens the meter's decision window and
        // is revoked when the future ends, answered or dropped at the clock.
        let credential = self.grant.as_ref().map(|grant| {
            grant
                .credentials
                .issue(&grant.match_id, grant.side, self.meter.clone())
        });
        let request = pb::DecideRequest {
            observation: Some(convert::observation_to_proto(&observation)),
            inference_token: credential
                .as_ref()
                .map(|credential| credential.token().to_owned())
                .unwrap_or_default(),
            inference_url: self
                .grant
                .as_ref()
                .map(|grant| grant.url.clone())
                .unwrap_or_default(),
            openai_base_url: self
                .grant
                .as_ref()
                .map(|grant| openai_base_url(&grant.url))
                .unwrap_or_default(),
        };
        Box::pin(async move {
            let mut request = tonic::Request::new(request);
            request.set_timeout(self.wall_clock);
            let started = std::time::Instant::now();
            let mut log = Vec::new();
            let answer = match self.client.decide(request).await {
                Ok(response) => {
                    let response = response.into_inner();
                    log = response.log;
                    convert::action_from_proto(response.action)
                }
                // The referee's own words about a value it checked (an
                // integer), never the peer's text: safe in public replays.
                .map_err(|reason| BotFailure::fault(format!("protocol: {reason}"))),
                Err(status) => {
                    let failure = failure_from_status(
                        &status,
                        started.elapsed(),
                        self.wall_clock,
                        self.peer_text_in_reasons,
                    );
                    if !self.peer_text_in_reasons {
                        tracing::info!(
                            bot = %self.info.name,
                            code = ?status.code(),
                            message = status.message(),
                            "endpoint decision failed"
                        );
                    }
                    if status.code() == tonic::Code::Unavailable {
                        // A fresh channel for the next exchange.
                        self.client = client(&self.endpoint, self.address);
                    }
                    tracing::debug!(bot = %self.info.name, code = ?status.code(), "endpoint decision failed");
                    Err(failure)
                }
            };
            let spent = self.meter.settle();
            drop(credential);
            // An endpoint keeps its own state (never `restarted`: the referee
            // cannot tell); the recorder bounds the log it sent, whose size
            // MAX_BOT_RESPONSE_BYTES bounds before that.
            Decision {
                log,
                ..Decision::metered(answer, spent)
            }
        })
    }

    fn abandoned(&mut self) -> Spent {
        self.meter.settle()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    const CLOCK: Duration = Duration::from_millis(100);

    fn reason(status: &tonic::Status, peer_text: bool) -> String {
        failure_from_status(status, Duration::ZERO, CLOCK, peer_text).reason
    }

    /// A reply that did not decode is named as such, not blamed on the bot's
    /// status; a status the bot sent keeps its code.
    #[test]
    fn failures_are_categorised() {
        let error =
            pb::DecideResponse::decode(&[0xff_u8, 0xff][..]).expect_err("tag 0 never decodes");
        let malformed = duel_proto::codec::malformed_message(&error);
        assert_eq!(reason(&malformed, false), "protocol (malformed reply)");
        let sent = tonic::Status::invalid_argument("no such move");
        assert_eq!(reason(&sent, false), "protocol (INVALID_ARGUMENT)");
        assert_eq!(
            reason(&sent, true),
            "protocol (INVALID_ARGUMENT): no such move"
        );
        let internal = tonic::Status::internal("boom\nstack");
        assert_eq!(reason(&internal, true), "bot error (INTERNAL): boom");
        assert_eq!(
            reason(&tonic::Status::unavailable("refused"), false),
            "unreachable"
        );
        let late = failure_from_status(&sent, CLOCK, CLOCK, false);
        assert_eq!(late.cause, crate::bot::FailureCause::Timeout);
    }
}
