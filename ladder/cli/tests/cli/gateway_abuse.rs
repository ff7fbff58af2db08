//! Through the real `ladder serve` and `ladder worker`: an endpoint bot that
//! names a 1,000,000-byte model in every model call cannot void the ranked
//! match it is in.
//!
//! The bot (a `duel.v1.Bot` server on loopback) sends, in every decision,
//! three `POST {openai_base_url}/chat/completions` with its decision's
//! credential, each naming a model of 1,000,000 `m`, waits for the answers,
//! then jabs. It is paired in a ranked match, with stakes, against a WASM bot;
//! a `ladder worker` process (`--model-url builtin:house`, the gateway on
//! `--inference-listen`) plays it. The match settles on its first run (no
//! failed run, no void), the stakes go as the result says, and what is kept
//! of the calls is bounded: the published replay is under 1 MiB, signed and
//! verified, each of the bot's `calls[].model` is at most
//! `MAX_RECORDED_MODEL_NAME_BYTES` and ends `…[1000000 bytes]`, the owner's
//! transcript agrees with the replay and is as small, and the worker's log
//! has no long line.
//!
//! Why this fails on 81d6bf8: there the name of a refused call (an unknown
//! model) was recorded exactly as sent, with no bound, in the replay's
//! `calls[].model`, the transcript and an INFO log line. Three 1,000,000-byte
//! names a decision add ~3 MB to the replay per decision, so after six
//! decisions the replay passes `MAX_REPLAY_BYTES` (16 MiB): the worker cannot
//! publish it, the match runs again after its lease, and the third claim
//! voids it with both stakes returned: a void the bot chose. The loop below
//! fails at the first failed run (`last_failure`, since migration 0014) or at
//! the void. Run there (this file, with the bound's value written in, both
//! backends): each run's replay was 108,049,859 bytes for 36 decisions
//! ("more than the 16777216-byte limit" in the worker's log, twice), the
//! match was voided at claim 3 after 71 s, and the worker's log was 216 MB
//! in lines of 1,000,219 bytes.
//! On a SQLite file and on PostgreSQL.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::TestDb;
use common::cli::{Cli, init_root, start_server, terminate};
use duel_proto::v1 as pb;
use duel_referee::limits::MAX_RECORDED_MODEL_NAME_BYTES;
use duel_referee::publish::client;
use duel_replays::transcript::{ParsedTranscript, verify_transcript};
use duel_replays::{CallOutcome, FighterKind, Replay, SourceName};
use serde_json::Value;

/// The length of the model name the bot sends, in bytes.
const NAME_BYTES: usize = 1_000_000;
/// Model calls the bot makes in each decision.
const CALLS_PER_DECISION: usize = 3;
/// One ranked match, its waves and its publication, with room for a slow machine.
const SETTLE_DEADLINE: Duration = Duration::from_secs(120);
/// The most this match's replay may take (it is ~66 KB, the
/// transcript ~54 KB), and the worker's whole log.
const ONE_MIB: usize = 1024 * 1024;

/// What the gateway answered one of the bot's calls.
#[derive(Debug)]
struct Answer {
    status: u16,
    body_bytes: usize,
}

/// What the bot saw and got back.
#[derive(Debug, Default)]
struct Seen {
    decisions: usize,
    /// Decisions asked without an Inference credential or OpenAI URL.
    without_gateway: usize,
    answers: Vec<Answer>,
}

/// An endpoint bot that names an enormous model in every call it makes.
#[derive(Debug, Clone)]
struct Namer {
    http: reqwest::Client,
    body: Arc<Vec<u8>>,
    seen: Arc<Mutex<Seen>>,
}

impl Namer {
    async fn call(&self, url: &str, token: &str) -> Answer {
        let response = self
            .http
            .post(url)
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(self.body.as_ref().clone())
            .send()
            .await;
        match response {
            Ok(response) => {
                let status = response.status().as_u16();
                let body_bytes = response.bytes().await.map_or(0, |body| body.len());
                Answer { status, body_bytes }
            }
            Err(_) => Answer {
                status: 0,
                body_bytes: 0,
            },
        }
    }
}

#[tonic::async_trait]
impl pb::bot_server::Bot for Namer {
    async fn hello(
        &self,
        _request: tonic::Request<pb::HelloRequest>,
    ) -> Result<tonic::Response<pb::HelloResponse>, tonic::Status> {
        Ok(tonic::Response::new(pb::HelloResponse {
            name: "namer".into(),
            version: "1".into(),
            rulesets: vec!["1.0.0".into()],
        }))
    }

    async fn decide(
        &self,
        request: tonic::Request<pb::DecideRequest>,
    ) -> Result<tonic::Response<pb::DecideResponse>, tonic::Status> {
        let request = request.into_inner();
        let gateway = !request.openai_base_url.is_empty() && !request.inference_token.is_empty();
        let mut answers = Vec::new();
        if gateway {
            let url = format!("{}/chat/completions", request.openai_base_url);
            let token = request.inference_token.as_str();
            // All three at once, each answered before the bot decides.
            let (first, second, third) = tokio::join!(
                self.call(&url, token),
                self.call(&url, token),
                self.call(&url, token)
            );
            answers = vec![first, second, third];
        }
        {
            let mut seen = self.seen.lock().expect("the bot's record");
            seen.decisions += 1;
            seen.without_gateway += usize::from(!gateway);
            seen.answers.extend(answers);
        }
        Ok(tonic::Response::new(pb::DecideResponse {
            action: pb::Action::Jab.into(),
            log: Vec::new(),
        }))
    }
}

/// The bot served on loopback from a runtime of its own (the test's threads
/// block on the CLI), stopped when dropped.
struct ServedBot {
    url: String,
    seen: Arc<Mutex<Seen>>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for ServedBot {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

fn serve_namer() -> ServedBot {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("the bot's runtime");
    let model = "m".repeat(NAME_BYTES);
    let body =
        format!(r#"{{"model": "{model}", "messages": [{{"role": "user", "content": "hi"}}]}}"#);
    let seen = Arc::new(Mutex::new(Seen::default()));
    let bot = Namer {
        // Straight to the loopback gateway, never through a proxy.
        http: reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(20))
            .build()
            .expect("http client"),
        body: Arc::new(body.into_bytes()),
        seen: Arc::clone(&seen),
    };
    // Bound here, served from the bot's runtime (the test's own runtime
    // cannot block on another).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the bot");
    listener.set_nonblocking(true).expect("nonblocking");
    let url = format!(
        "grpc://{}",
        listener.local_addr().expect("the bot's address")
    );
    runtime.spawn(async move {
        let listener = tokio::net::TcpListener::from_std(listener).expect("the bot's listener");
        tonic::transport::Server::builder()
            .add_service(pb::bot_server::BotServer::new(bot))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
            .await
    });
    ServedBot {
        url,
        seen,
        runtime: Some(runtime),
    }
}

async fn enormous_model_names_cannot_void(db: &TestDb) {
    let started = Instant::now();
    let bot = serve_namer();
    let dir = tempfile::tempdir().expect("temp dir");
    let path = |name: &str| dir.path().join(name);
    init_root(&db.url, dir.path(), true);
    let mut server = start_server(
        &db.url,
        dir.path(),
        &[
            "--http",
            "127.0.0.1:0",
            "--workers",
            "0",
            "--allow-private-endpoints",
        ],
    );
    let mut worker = common::cli::start_worker(
        &db.url,
        dir.path(),
        1,
        &[
            "--allow-private-endpoints",
            "--model-url",
            "builtin:house",
            "--inference-listen",
            "127.0.0.1:0",
        ],
    );
    let base = server.http.clone().expect("the replay service runs");
    let cli = Cli {
        server: &server.url.clone(),
    };
    let root = path("root.token");
    cli.ok(&root, &["season", "start", "winter"]);
    let jabber = common::bots::wasm_path("jabber");
    let alice = common::cli::owner_with_bot(
        &cli,
        dir.path(),
        "alice",
        1000,
        "e-namer",
        ["--endpoint", &bot.url],
        None,
    );
    let bob = common::cli::owner_with_bot(
        &cli,
        dir.path(),
        "bob",
        1000,
        "w-jabber",
        ["--wasm", &jabber],
        None,
    );
    cli.ok(&alice, &["enqueue", "e-namer", "--stake", "10"]);
    cli.ok(&bob, &["enqueue", "w-jabber", "--stake", "10"]);

    // Settled on its first run: any failed run (on 81d6bf8, the replay too
    // large to publish) fails the test at once with its cause.
    let deadline = Instant::now() + SETTLE_DEADLINE;
    let game = loop {
        let matches = cli.json(&root, &["matches"]);
        if let Some(game) = matches.as_array().and_then(|all| all.first()) {
            assert!(
                game["last_failure"].is_null(),
                "a run of the match failed: {game}"
            );
            assert_ne!(game["state"], "voided", "{game}");
            if game["state"] == "settled" {
                break game.clone();
            }
        }
        assert!(
            Instant::now() < deadline,
            "no match settled in {SETTLE_DEADLINE:?}: {matches}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let id = game["id"].as_str().expect("match id").to_owned();
    assert_eq!(game["attempts"], 1, "{game}");
    assert!(game["note"].is_null(), "{game}");
    assert_eq!(
        cli.json(&root, &["matches", "--state", "voided"]),
        Value::Array(Vec::new())
    );

    // The replay: published, small, signed by the ladder's key, and it
    // obeys the rules.
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("http client");
    let json = client::fetch_replay(&http, &client::replay_url(&base, &id))
        .await
        .expect("the replay is published");
    assert!(json.len() < ONE_MIB, "the replay is {} bytes", json.len());
    let published = client::fetch_public_key(&http, &base)
        .await
        .expect("public key");
    let signature = duel_replays::check_signature(&json, Some(&published)).expect("parses");
    assert!(signature.is_ok(), "{signature:?}");
    let replay = Replay::from_slice(&json).expect("replay");
    let verdict = duel_referee::verify::verify_replay(&replay).expect("verifiable");
    assert!(verdict.is_ok(), "{verdict:?}");
    assert_eq!(
        game["winner"],
        duel_rules::Winner::from(replay.result.winner).name(),
        "settled as the replay says"
    );

    // Every decision of the endpoint bot is its own, with its three calls
    // recorded by their bounded names, refused and charged nothing.
    let side = replay
        .fighters
        .iter()
        .position(|fighter| fighter.kind == FighterKind::Endpoint)
        .expect("the endpoint bot fought");
    assert_eq!(&*replay.fighters[side].name, "e-namer");
    let suffix = format!("…[{NAME_BYTES} bytes]");
    let mut decisions = 0;
    // The ranked opening's exchanges were forced: the bot was not asked.
    for (round, exchange) in replay.exchanges().skip(replay.opening.len()) {
        let record = exchange.sides()[side];
        let at = format!("round {round} exchange {}", exchange.number);
        assert_eq!(record.source, SourceName::Bot, "{at}: {record:?}");
        assert_eq!(record.tokens, 0, "{at}");
        assert_eq!(record.calls().len(), CALLS_PER_DECISION, "{at}");
        for call in record.calls() {
            assert!(
                call.model.len() <= MAX_RECORDED_MODEL_NAME_BYTES,
                "{at}: a recorded name of {} bytes",
                call.model.len()
            );
            assert!(call.model.ends_with(&suffix), "{at}: {}", call.model);
            assert!(call.model.starts_with("mmmm"), "{at}: {}", call.model);
            assert_eq!(call.outcome, CallOutcome::Invalid, "{at}");
            assert_eq!(call.prompt_tokens + call.completion_tokens, 0, "{at}");
        }
        decisions += 1;
    }
    assert!(decisions > 0);

    // The bot made those calls: every decision had its credential, and the
    // gateway refused every call at once with a short 400 (on 81d6bf8: a
    // 404 echoing the whole name).
    {
        let seen = bot.seen.lock().expect("the bot's record");
        assert_eq!(seen.decisions, decisions, "{seen:?}");
        assert_eq!(seen.without_gateway, 0, "{seen:?}");
        assert_eq!(seen.answers.len(), CALLS_PER_DECISION * decisions);
        for answer in &seen.answers {
            assert_eq!(answer.status, 400, "{answer:?}");
            assert!(answer.body_bytes < 1024, "{answer:?}");
        }
    }

    // The owner's transcript keeps the same bounded names and agrees with
    // the signed replay.
    let transcript_path = path("e-namer.transcript.json");
    let written = cli.json(
        &alice,
        &[
            "match",
            "transcript",
            &id,
            "--bot",
            "e-namer",
            "--out",
            transcript_path.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(written["decisions"], decisions, "{written}");
    let transcript_bytes = std::fs::read(&transcript_path).expect("the transcript");
    assert!(
        transcript_bytes.len() < ONE_MIB,
        "the transcript is {} bytes",
        transcript_bytes.len()
    );
    let transcript = ParsedTranscript::from_slice(&transcript_bytes).expect("a transcript");
    for decision in &transcript.transcript.decisions {
        for call in &decision.calls {
            assert!(call.model.len() <= MAX_RECORDED_MODEL_NAME_BYTES);
            assert!(call.model.ends_with(&suffix), "{}", call.model);
        }
    }
    verify_transcript(&replay, &transcript).expect("the transcript agrees with the replay");

    // Stakes: the pot less the 5% rake to the winner, or both returned on a draw.
    let winner = game["winner"].as_str().expect("winner");
    let endpoint_side = if side == 0 { "a" } else { "b" };
    let (alice_expected, bob_expected) = match winner {
        "draw" => (1000, 1000),
        won if won == endpoint_side => (1009, 990),
        _ => (990, 1009),
    };
    assert_eq!(
        cli.json(&alice, &["balance"])["available"],
        alice_expected,
        "{game}"
    );
    assert_eq!(
        cli.json(&bob, &["balance"])["available"],
        bob_expected,
        "{game}"
    );
    let ledger = cli.json(&root, &["ledger", "check"]);
    assert_eq!(ledger["ok"], true, "{ledger}");
    assert_eq!(ledger["pending_unresolved"], 0, "{ledger}");

    terminate(&mut worker.0, "ladder worker").await;
    terminate(&mut server.child, "ladder serve").await;
    // Nor does the operator's log carry the names (on 81d6bf8: an INFO line
    // of each name in full, megabytes a decision).
    let log = std::fs::read_to_string(path("worker.log")).expect("the worker's log");
    assert!(log.len() < ONE_MIB, "the worker logged {} bytes", log.len());
    let longest = log.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 4096, "a log line of {longest} bytes");
    assert!(log.contains("ladder worker started"), "{log}");
    eprintln!(
        "{decisions} decisions, replay {} bytes, transcript {} bytes, in {:?}",
        json.len(),
        transcript_bytes.len(),
        started.elapsed()
    );
}
both_backends!(
    enormous_model_names_cannot_void_a_ranked_match,
    enormous_model_names_cannot_void
);
