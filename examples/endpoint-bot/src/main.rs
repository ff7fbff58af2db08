//! An example `duel.v1.Bot` endpoint to copy: it counters the opponent's most
//! frequent recent action and, with `--think`, asks the referee's metered
//! `duel.v1.Inference` for advice using the credential each decision carries.
//!
//! Run it, then point the referee at it:
//!   endpoint-bot --listen 127.0.0.1:50071
//!   referee local grpc://127.0.0.1:50071 builtin:random

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use duel_proto::v1 as pb;
use duel_proto::v1::bot_server::{Bot, BotServer};
use duel_proto::v1::inference_client::InferenceClient;
use tonic::{Request, Response, Status};

/// An example endpoint bot for the duel referee.
#[derive(Debug, Parser)]
#[command(name = "endpoint-bot", version, about)]
struct Args {
    /// Address to serve duel.v1.Bot on.
    #[arg(long, default_value = "127.0.0.1:50071")]
    listen: SocketAddr,
    /// Name reported by Hello (shown in replays).
    #[arg(long, default_value = "example-counter")]
    name: String,
    /// Ask the model (through the referee's Inference service) before each
    /// decision, and play its advice when it names an action.
    #[arg(long)]
    think: bool,
}

#[derive(Debug)]
struct CounterBot {
    name: String,
    think: bool,
}

/// How many of the opponent's recent actions the counter weighs.
const MEMORY_EXCHANGES: usize = 8;

/// The counter to an action: what punishes it in Ruleset 1.0.0.
fn counter(action: pb::Action) -> pb::Action {
    match action {
        pb::Action::Block => pb::Action::Feint,
        pb::Action::Heavy => pb::Action::Dodge,
        pb::Action::Dodge | pb::Action::Recover => pb::Action::Jab,
        pb::Action::Feint => pb::Action::Heavy,
        pb::Action::Jab | pb::Action::Unspecified => pb::Action::Block,
    }
}

/// Stamina an action costs (0 for BLOCK and RECOVER, which gain stamina).
fn cost(action: pb::Action) -> i32 {
    match action {
        pb::Action::Jab => 4,
        pb::Action::Heavy => 14,
        pb::Action::Dodge => 6,
        pb::Action::Feint => 2,
        pb::Action::Block | pb::Action::Recover | pb::Action::Unspecified => 0,
    }
}

fn choose(observation: &pb::Observation) -> pb::Action {
    let mut counts = [0usize; 7];
    for entry in observation.tape.iter().rev().take(MEMORY_EXCHANGES) {
        if let Some(opponent) = &entry.opponent
            && let Ok(index) = usize::try_from(opponent.action)
            && index < counts.len()
        {
            counts[index] += 1;
        }
    }
    let habit = (1..counts.len())
        .max_by_key(|&index| counts[index])
        .filter(|&index| counts[index] > 0)
        .and_then(|index| pb::Action::try_from(index as i32).ok())
        .unwrap_or(pb::Action::Block);
    let stamina = observation.you.as_ref().map_or(0, |you| you.stamina);
    let answer = counter(habit);
    if cost(answer) > stamina {
        pb::Action::Recover
    } else {
        answer
    }
}

/// Asks the model for one action name; `None` when it cannot help.
async fn think(request: &pb::DecideRequest, deadline: Duration) -> Option<pb::Action> {
    if request.inference_url.is_empty() || request.inference_token.is_empty() {
        return None;
    }
    let observation = request.observation.as_ref()?;
    let mut client = InferenceClient::connect(request.inference_url.clone())
        .await
        .ok()?;
    let prompt = format!(
        "Round {}, exchange {}. My HP {} stamina {}; opponent HP {} stamina {}. Answer with one of JAB HEAVY BLOCK DODGE FEINT RECOVER.",
        observation.round,
        observation.exchange,
        observation.you.as_ref().map_or(0, |f| f.hp),
        observation.you.as_ref().map_or(0, |f| f.stamina),
        observation.opponent.as_ref().map_or(0, |f| f.hp),
        observation.opponent.as_ref().map_or(0, |f| f.stamina),
    );
    let mut call = Request::new(pb::CompleteRequest {
        messages: vec![pb::ChatMessage {
            role: "user".into(),
            content: prompt,
        }],
        max_tokens: 8,
    });
    call.set_timeout(deadline);
    let bearer = format!("Bearer {}", request.inference_token).parse().ok()?;
    call.metadata_mut().insert("authorization", bearer);
    let text = client
        .complete(call)
        .await
        .ok()?
        .into_inner()
        .text
        .to_uppercase();
    ["JAB", "HEAVY", "BLOCK", "DODGE", "FEINT", "RECOVER"]
        .into_iter()
        .find(|name| text.contains(name))
        .and_then(|name| pb::Action::from_str_name(&format!("ACTION_{name}")))
}

/// Parses a `grpc-timeout` header value ("500m", "10S"…).
fn parse_grpc_timeout(value: &str) -> Option<Duration> {
    let (digits, unit) = value.split_at(value.len().checked_sub(1)?);
    let amount: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(amount.checked_mul(3600)?),
        "M" => Duration::from_secs(amount.checked_mul(60)?),
        "S" => Duration::from_secs(amount),
        "m" => Duration::from_millis(amount),
        "u" => Duration::from_micros(amount),
        "n" => Duration::from_nanos(amount),
        _ => return None,
    })
}

#[tonic::async_trait]
impl Bot for CounterBot {
    async fn hello(
        &self,
        _request: Request<pb::HelloRequest>,
    ) -> Result<Response<pb::HelloResponse>, Status> {
        Ok(Response::new(pb::HelloResponse {
            name: self.name.clone(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            rulesets: vec!["1.0.0".to_owned()],
        }))
    }

    async fn decide(
        &self,
        request: Request<pb::DecideRequest>,
    ) -> Result<Response<pb::DecideResponse>, Status> {
        // Think for at most 80% of the referee's deadline, leaving the rest for
        // the answer's trip back.
        let deadline = request
            .metadata()
            .get("grpc-timeout")
            .and_then(|value| value.to_str().ok())
            .and_then(parse_grpc_timeout)
            .unwrap_or(Duration::from_secs(10))
            .mul_f64(0.8);
        let request = request.into_inner();
        let observation = request
            .observation
            .as_ref()
            .ok_or_else(|| Status::invalid_argument("missing observation"))?;
        let mut action = choose(observation);
        if self.think
            && let Some(advice) = think(&request, deadline).await
        {
            action = advice;
        }
        Ok(Response::new(pb::DecideResponse {
            action: action.into(),
            log: Vec::new(),
        }))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let args = Args::parse();
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    eprintln!("endpoint-bot {} listening on {}", args.name, args.listen);
    tonic::transport::Server::builder()
        .add_service(BotServer::new(CounterBot {
            name: args.name,
            think: args.think,
        }))
        .serve_with_incoming_shutdown(
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            async {
                let _ = tokio::signal::ctrl_c().await;
            },
        )
        .await
        .context("server stopped")?;
    Ok(())
}
