//! The property the gateway's faces promise together: for random
//! conversations, whole and streamed, the `usage` each answer carries, the
//! budget left it reports, the replay's tokens, the replay's `calls` and the
//! transcript's tokens all agree exactly, through whole matches played by a
//! bot that calls the OpenAI-compatible face over HTTP as an endpoint bot
//! would (a fresh credential per decision, settled when it answers).

// Tests: a failed unwrap is a failed assertion.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use duel_referee::bot::{Decision, DecisionFuture};
use duel_referee::credentials::Credentials;
use duel_referee::models::Catalogue;
use duel_referee::{
    Bot, BotContext, BotMaker, BuiltinSpec, Fighter, FighterMeter, FighterSource, HostConfig,
    InferenceLink, MatchHost, MatchOptions, ModelGateway, Spent,
};
use duel_replays::{CallOutcome, FighterInfo, FighterKind, Transcript};
use duel_rules::{Action, Observation, WeightClass};
use proptest::prelude::*;

/// One call a bot makes: the conversation, the cap, the model named, and
/// whether it streams.
#[derive(Clone, Debug)]
struct PlannedCall {
    model: &'static str,
    messages: Vec<(&'static str, String)>,
    /// 0: no cap named (the field left out).
    max_tokens: u32,
    stream: bool,
}

/// What the bot saw of one call: tokens from `usage` (none for a refusal)
/// and the budget left the gateway reported.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    decision: usize,
    status: u16,
    usage: Option<(u64, u64)>,
    budget_left: Option<u64>,
    text: String,
    sent: Vec<(String, String)>,
}

struct CallingBot {
    plan: Arc<Vec<Vec<PlannedCall>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
    meter: FighterMeter,
    link: InferenceLink,
    match_id: String,
    side: duel_rules::Side,
    decisions: usize,
    http: reqwest::Client,
}

impl Bot for CallingBot {
    fn info(&self) -> FighterInfo {
        FighterInfo {
            name: "caller".into(),
            kind: FighterKind::Endpoint,
            digest: "sha256:caller".into(),
            spec: None,
        }
    }

    fn decide<'a>(&'a mut self, _observation: Observation<'a>) -> DecisionFuture<'a> {
        let decision = self.decisions;
        self.decisions += 1;
        let credential = self
            .link
            .credentials
            .issue(&self.match_id, self.side, self.meter.clone());
        Box::pin(async move {
            let calls = self.plan[decision % self.plan.len()].clone();
            for call in calls {
                let mut body = serde_json::json!({
                    "model": call.model,
                    "messages": call.messages.iter().map(|(role, content)| serde_json::json!({"role": role, "content": content})).collect::<Vec<_>>(),
                    "stream": call.stream,
                });
                // 0 is "no cap named": as OpenAI reads it, `max_tokens: 0`
                // is refused, so the field is left out.
                if call.max_tokens > 0 {
                    body["max_tokens"] = serde_json::json!(call.max_tokens);
                }
                if call.stream {
                    body["stream_options"] = serde_json::json!({"include_usage": true});
                }
                let response = self
                    .http
                    .post(format!("{}/v1/chat/completions", self.link.url))
                    .bearer_auth(credential.token())
                    .header("content-type", "application/json")
                    .body(body.to_string())
                    .send()
                    .await
                    .unwrap();
                let status = response.status().as_u16();
                let budget_left = response
                    .headers()
                    .get("x-duel-budget-left-tokens")
                    .map(|value| value.to_str().unwrap().parse::<u64>().unwrap());
                let bytes = response.bytes().await.unwrap();
                let (usage, text) = if status != 200 {
                    (None, String::new())
                } else if call.stream {
                    read_stream(&bytes)
                } else {
                    let whole: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
                    (
                        Some(usage_of(&whole["usage"])),
                        whole["choices"][0]["message"]["content"]
                            .as_str()
                            .unwrap()
                            .to_owned(),
                    )
                };
                self.seen.lock().unwrap().push(Seen {
                    decision,
                    status,
                    usage,
                    budget_left,
                    text,
                    sent: call
                        .messages
                        .iter()
                        .map(|(role, content)| (role.to_string(), content.clone()))
                        .collect(),
                });
            }
            let spent = self.meter.settle();
            drop(credential);
            Decision::metered(Ok(Action::Block), spent)
        })
    }

    fn abandoned(&mut self) -> Spent {
        self.meter.settle()
    }
}

fn usage_of(usage: &serde_json::Value) -> (u64, u64) {
    (
        usage["prompt_tokens"].as_u64().unwrap(),
        usage["completion_tokens"].as_u64().unwrap(),
    )
}

fn read_stream(bytes: &[u8]) -> (Option<(u64, u64)>, String) {
    let text = std::str::from_utf8(bytes).unwrap();
    let mut content = String::new();
    let mut usage = None;
    for event in text.split("\n\n").filter(|event| !event.is_empty()) {
        let data = event.strip_prefix("data: ").unwrap();
        if data == "[DONE]" {
            continue;
        }
        let chunk: serde_json::Value = serde_json::from_str(data).unwrap();
        if let Some(choice) = chunk["choices"].get(0) {
            content.push_str(choice["delta"]["content"].as_str().unwrap_or_default());
        }
        if !chunk["usage"].is_null() {
            usage = Some(usage_of(&chunk["usage"]));
        }
    }
    (usage, content)
}

fn gateway() -> ModelGateway {
    let catalogue = Catalogue::parse(
        "[[model]]\nname = \"house\"\nurl = \"builtin:house\"\ndefault = true\n\n\
         [[model]]\nname = \"echo\"\nurl = \"builtin:house\"\n",
    )
    .unwrap();
    ModelGateway::from_catalogue(&catalogue, &|_| None, &duel_referee::tls::Trust::system())
        .unwrap()
}

fn planned_call() -> impl Strategy<Value = PlannedCall> {
    let role = prop::sample::select(vec!["system", "user", "assistant"]);
    // Texts past 1 KiB take the gateway's other path: with a cap named, the
    // call is forwarded while its prompt is counted (OVERLAP_COUNT_MAX_BYTES).
    let content = prop_oneof![
        3 => "[a-zA-Z ,.!?]{0,120}",
        3 => "[\\PC]{0,40}",
        1 => Just(String::new()),
        1 => "[a-z ]{1100,2400}",
    ];
    (
        prop::sample::select(vec!["", "house", "echo"]),
        prop::collection::vec((role, content), 1..4),
        0u32..40,
        any::<bool>(),
    )
        .prop_map(|(model, messages, max_tokens, stream)| PlannedCall {
            model,
            messages,
            max_tokens,
            stream,
        })
}

/// Plays one light-class match (8,000 tokens: long plans gas out) of the
/// calling bot against `builtin:counter`; returns what the bot saw, the
/// replay and the transcript.
async fn play(plan: Vec<Vec<PlannedCall>>) -> (Vec<Seen>, duel_replays::Replay, Transcript) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let credentials = Credentials::new();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(duel_referee::grpc::serve_inference(
        listener,
        credentials.clone(),
        async move {
            let _ = stopped.await;
        },
    ));
    let mut config = HostConfig::new(gateway());
    let link = InferenceLink {
        url: format!("http://{address}"),
        credentials,
    };
    config.inference = Some(link.clone());
    let host = MatchHost::new(config);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let plan = Arc::new(plan);
    let make: BotMaker = {
        let seen = Arc::clone(&seen);
        Arc::new(move |context: &BotContext| {
            Box::new(CallingBot {
                plan: Arc::clone(&plan),
                seen: Arc::clone(&seen),
                meter: context.meter.clone(),
                link: link.clone(),
                match_id: context.match_id.clone(),
                side: context.side,
                decisions: 0,
                http: reqwest::Client::new(),
            }) as Box<dyn Bot>
        })
    };
    let fighters = [
        Fighter::new(FighterSource::Made(make)),
        Fighter::from(duel_referee::BotSpec::Builtin(BuiltinSpec::Counter)),
    ];
    let session = host
        .prepare(fighters, MatchOptions::new(WeightClass::Light).seed(7))
        .await
        .unwrap();
    let played = session.play(&mut |_: &_, _: &_| {}).await;
    drop(stop);
    let seen = seen.lock().unwrap().clone();
    (seen, played.replay, played.transcript.unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn usage_budget_replay_calls_and_transcript_agree(
        plan in prop::collection::vec(prop::collection::vec(planned_call(), 0..3), 1..6),
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (seen, replay, transcript) = runtime.block_on(play(plan));
        let sides: Vec<_> = replay.exchanges().map(|(round, exchange)| (round, exchange.number, exchange.a.clone())).collect();
        let budget = replay.budget;
        let mut spent_before = 0u64;
        let mut listed = transcript.decisions.iter();
        for (decision, (round, number, side)) in sides.iter().enumerate() {
            let mine: Vec<&Seen> = seen.iter().filter(|one| one.decision == decision).collect();
            let calls = side.calls();
            // Every call the bot made is in the replay, in order, as answered.
            prop_assert_eq!(calls.len(), mine.len(), "decision {}", decision);
            let mut decision_tokens = 0;
            for (call, one) in calls.iter().zip(&mine) {
                match one.usage {
                    Some((prompt, completion)) => {
                        prop_assert_eq!(call.outcome, CallOutcome::Ok);
                        prop_assert_eq!((call.prompt_tokens, call.completion_tokens), (prompt, completion));
                        decision_tokens += prompt + completion;
                        // The budget left is what the replay says is left.
                        prop_assert_eq!(one.budget_left, Some(budget - spent_before - decision_tokens));
                    }
                    None => {
                        prop_assert_eq!(one.status, 429, "only the budget refuses these");
                        prop_assert_eq!(call.outcome, CallOutcome::Refused);
                        prop_assert_eq!(call.tokens(), 0);
                    }
                }
            }
            prop_assert_eq!(side.tokens, decision_tokens);
            spent_before += decision_tokens;
            if calls.is_empty() {
                prop_assert!(side.transcript_sha256().is_none());
                continue;
            }
            // The transcript has this decision: what was sent, what came back,
            // the same tokens, and the digest the replay holds.
            let kept = listed.next().unwrap();
            prop_assert_eq!((kept.round, kept.exchange), (*round, *number));
            let digest = duel_replays::calls_sha256(&kept.calls);
            prop_assert_eq!(Some(digest.as_str()), side.transcript_sha256());
            for (call, one) in kept.calls.iter().zip(&mine) {
                let sent: Vec<(String, String)> = call.messages.iter().map(|message| (message.role.clone(), message.content.clone())).collect();
                prop_assert_eq!(&sent, &one.sent);
                prop_assert_eq!(&call.completion, &one.text);
                prop_assert!(!call.truncated);
            }
            let transcribed: Vec<_> = kept.calls.iter().map(|call| call.record()).collect();
            prop_assert_eq!(transcribed.as_slice(), calls);
        }
        prop_assert!(listed.next().is_none());
        prop_assert_eq!(replay.result.tokens_used[0], spent_before);
        let verified = duel_replays::verify(&replay).unwrap();
        prop_assert!(verified.is_ok(), "{:?}", verified);
        let parsed = duel_replays::transcript::ParsedTranscript::from_slice(transcript.to_json_pretty().as_bytes()).unwrap();
        prop_assert!(duel_replays::verify_transcript(&replay, &parsed).is_ok());
    }
}
