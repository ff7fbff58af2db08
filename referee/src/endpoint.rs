//! Endpoint bots: remote `duel.v1.Bot` servers asked over gRPC. Each decision is
//! sent with the wall clock as its deadline; a late answer is a `timeout`, and a
//! lost connection, an error status, an unknown action or a malformed reply is a
//! `fault` for that exchange only: the bot is asked again next exchange, over a
//! reconnected channel when needed.

use std::time::Duration;

use duel_proto::v1 as pb;
use duel_proto::v1::bot_client::BotClient;
use duel_replays::{FighterInfo, FighterKind};
use duel_rules::{Observation, Side};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

use crate::bot::{Bot, BotFailure, Decision, DecisionFuture};
use crate::credentials::Credentials;
use crate::error::RefereeError;
use crate::grpc::convert;
use crate::limits::{MAX_BOT_RESPONSE_BYTES, MAX_GRPC_MESSAGE_BYTES};
use crate::meter::{FighterMeter, Spent};

/// Where an endpoint bot reaches `duel.v1.Inference`, and who issues its
/// credentials there (a fresh one for each decision).
#[derive(Debug)]
pub struct InferenceGrant {
    pub url: String,
    pub credentials: Credentials,
    pub match_id: String,
    pub side: Side,
}

/// A remote bot behind the [`Bot`] seam.
pub struct EndpointBot {
    info: FighterInfo,
    endpoint: Endpoint,
    client: BotClient<Channel>,
    wall_clock: Duration,
    meter: FighterMeter,
    grant: Option<InferenceGrant>,
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
pub fn endpoint_uri(url: &str) -> Result<String, RefereeError> {
    if let Some(rest) = url.strip_prefix("grpc://") {
        return Ok(format!("http://{rest}"));
    }
    if let Some(rest) = url.strip_prefix("grpcs://") {
        return Ok(format!("https://{rest}"));
    }
    if url.starts_with("http://") || url.starts_with("https://") {
        return Ok(url.to_owned());
    }
    Err(RefereeError::Spec(format!(
        "bot {url}: expected grpc://host:port or grpcs://host:port"
    )))
}

/// TLS for an `https` endpoint: the system's roots and `DUEL_EXTRA_CA`.
fn with_tls(endpoint: Endpoint, url: &str) -> Result<Endpoint, RefereeError> {
    let mut tls = ClientTlsConfig::new().with_native_roots();
    if let Some(pem) = crate::tls::extra_ca_pem()? {
        tls = tls.ca_certificate(Certificate::from_pem(pem));
    }
    endpoint
        .tls_config(tls)
        .map_err(|error| RefereeError::Spec(format!("bot {url}: TLS: {error}")))
}

fn client(endpoint: &Endpoint) -> BotClient<Channel> {
    BotClient::new(endpoint.connect_lazy())
        .max_decoding_message_size(MAX_BOT_RESPONSE_BYTES)
        .max_encoding_message_size(MAX_GRPC_MESSAGE_BYTES)
}

impl EndpointBot {
    /// Prepares the channel (connecting lazily) and asks the bot its name with
    /// `Hello`. A bot that does not answer `Hello` still plays, named by its URL:
    /// its decisions will fault until it comes up.
    pub async fn connect(
        url: &str,
        wall_clock: Duration,
        meter: FighterMeter,
        grant: Option<InferenceGrant>,
    ) -> Result<EndpointBot, RefereeError> {
        let endpoint = endpoint_for(url, wall_clock)?;
        let mut client = client(&endpoint);
        let name = match ask_hello(&mut client, wall_clock).await {
            Ok(hello) => {
                let name: String = hello
                    .name
                    .chars()
                    .filter(|c| !c.is_control())
                    .take(64)
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
                name,
                kind: FighterKind::Endpoint,
                digest: crate::spec::sha256_digest(url.as_bytes()),
                spec: Some(url.to_owned()),
            },
            endpoint,
            client,
            wall_clock,
            meter,
            grant,
        })
    }
}

/// The channel settings of an endpoint bot: `timeout` bounds connecting and
/// every call.
fn endpoint_for(url: &str, timeout: Duration) -> Result<Endpoint, RefereeError> {
    let uri = endpoint_uri(url)?;
    let secure = uri.starts_with("https://");
    let endpoint = Endpoint::from_shared(uri)
        .map_err(|error| RefereeError::Spec(format!("bot {url}: {error}")))?
        .connect_timeout(timeout)
        .timeout(timeout)
        .tcp_nodelay(true);
    if secure {
        return with_tls(endpoint, url);
    }
    Ok(endpoint)
}

/// One `Hello` call within `timeout`; the error is one line saying why not.
async fn ask_hello(
    client: &mut BotClient<Channel>,
    timeout: Duration,
) -> Result<pb::HelloResponse, String> {
    let mut hello = tonic::Request::new(pb::HelloRequest {});
    hello.set_timeout(timeout);
    match tokio::time::timeout(timeout, client.hello(hello)).await {
        Ok(Ok(response)) => Ok(response.into_inner()),
        Ok(Err(status)) => Err(format!(
            "Hello failed ({:?}): {}",
            status.code(),
            status.message().lines().next().unwrap_or_default()
        )),
        Err(_) => Err(format!(
            "no answer to Hello within {} ms",
            timeout.as_millis()
        )),
    }
}

/// Asks the endpoint bot at `url` who it is (the ladder checks this when a bot
/// is registered). The error is one line: unreachable, an error status, or no
/// answer within `timeout`.
pub async fn hello(url: &str, timeout: Duration) -> Result<pb::HelloResponse, RefereeError> {
    let endpoint = endpoint_for(url, timeout)?;
    ask_hello(&mut client(&endpoint), timeout)
        .await
        .map_err(|why| RefereeError::Spec(format!("bot {url}: {why}")))
}

/// How a failed call counts: one that failed at or past the wall clock is a
/// timeout (tonic reports its own deadline as CANCELLED or DEADLINE_EXCEEDED);
/// anything earlier, including a dropped connection, is a fault.
fn failure_from_status(
    status: &tonic::Status,
    elapsed: Duration,
    wall_clock: Duration,
) -> BotFailure {
    if elapsed >= wall_clock {
        return BotFailure::timeout(format!("no answer within {} ms", wall_clock.as_millis()));
    }
    match status.code() {
        tonic::Code::Unavailable | tonic::Code::Cancelled | tonic::Code::Unknown => {
            BotFailure::fault(format!("connection: {}", status.message()))
        }
        code => BotFailure::fault(format!("{code:?}: {}", status.message())),
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
        };
        Box::pin(async move {
            let mut request = tonic::Request::new(request);
            request.set_timeout(self.wall_clock);
            let started = std::time::Instant::now();
            let answer = match self.client.decide(request).await {
                Ok(response) => convert::action_from_proto(response.into_inner().action)
                    .map_err(BotFailure::fault),
                Err(status) => {
                    let failure = failure_from_status(&status, started.elapsed(), self.wall_clock);
                    if status.code() == tonic::Code::Unavailable {
                        // A fresh channel for the next exchange.
                        self.client = client(&self.endpoint);
                    }
                    tracing::debug!(bot = %self.info.name, code = ?status.code(), "endpoint decision failed");
                    Err(failure)
                }
            };
            let spent = self.meter.settle();
            drop(credential);
            Decision {
                answer,
                tokens: spent.tokens,
                gassed_out: spent.gassed_out,
                // An endpoint keeps its own state; the referee cannot tell.
                restarted: false,
            }
        })
    }

    fn abandoned(&mut self) -> Spent {
        self.meter.settle()
    }
}
