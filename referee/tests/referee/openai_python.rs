//! The gateway against a client written elsewhere: the official `openai`
//! Python package (the environment scripts/setup/python-llm.sh makes) calls
//! the OpenAI-compatible face as a bot would: plain and streamed answers,
//! the model list, and each refusal arriving as the SDK's own exception
//! class, never retried (the gateway's `x-should-retry: false`).

// Tests: a failed unwrap is a failed assertion.
#![allow(clippy::unwrap_used)]

#[allow(dead_code)]
use crate::services;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use duel_referee::credentials::Credentials;
use duel_referee::meter::{ChatMessage, count_prompt_tokens, count_tokens};
use duel_referee::models::{Catalogue, house_answer};
use duel_referee::{FighterMeter, ModelGateway};
use duel_replays::CallOutcome;
use duel_rules::Side;

/// The Python of the environment the setup script makes.
fn python() -> Option<PathBuf> {
    let venv = std::env::var_os("DUEL_PYTHON_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/python-llm/venv")
        });
    let python = venv.join("bin/python");
    python.is_file().then_some(python)
}

fn house() -> ModelGateway {
    let catalogue =
        Catalogue::parse("[[model]]\nname = \"house\"\nurl = \"builtin:house\"\ndefault = true\n")
            .unwrap();
    ModelGateway::from_catalogue(&catalogue, &|_| None, &duel_referee::tls::Trust::system())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_openai_client_plays_through_the_gateway() {
    let Some(python) = python() else {
        services::skip(
            "the python-llm environment",
            "target/python-llm/venv is missing; scripts/setup/python-llm.sh makes it",
        );
        return;
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let credentials = Credentials::new();
    let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(duel_referee::grpc::serve_inference(
        listener,
        credentials.clone(),
        async move {
            let _ = stopped.await;
        },
    ));

    // One fighter per scenario, each deciding now.
    let plain = FighterMeter::keeping(house(), 10_000, true);
    let streamed = FighterMeter::keeping(house(), 10_000, true);
    let listing = duel_referee::FighterMeter::new(house(), 100);
    let poor = duel_referee::FighterMeter::new(house(), 5);
    let unconfigured = duel_referee::FighterMeter::new(ModelGateway::disabled(), 100);
    let naming = duel_referee::FighterMeter::new(house(), 100);
    let malformed = duel_referee::FighterMeter::new(house(), 100);
    let meters = [
        &plain,
        &streamed,
        &listing,
        &poor,
        &unconfigured,
        &naming,
        &malformed,
    ];
    let issued: Vec<_> = meters
        .iter()
        .map(|meter| credentials.issue("m", Side::A, (*meter).clone()))
        .collect();
    let token = |index: usize| issued[index].token().to_owned();
    let messages = serde_json::json!([
        {"role": "system", "content": "You are a careful fighter."},
        {"role": "user", "content": "Round 2, exchange 7. Choose one action."},
    ]);
    let request = serde_json::json!({
        "base_url": format!("http://{address}/v1"),
        "scenarios": {
            "plain": {"kind": "plain", "token": token(0), "messages": messages},
            "streamed": {"kind": "streamed", "token": token(1), "model": "house", "messages": messages, "max_tokens": 5},
            "models": {"kind": "models", "token": token(2)},
            "authentication": {"kind": "failing", "token": "sk-not-a-credential", "messages": messages},
            "budget": {"kind": "failing", "token": token(3), "messages": messages},
            "unavailable": {"kind": "failing", "token": token(4), "messages": messages},
            "not_found": {"kind": "failing", "token": token(5), "model": "gpt-9", "messages": messages},
            "bad_request": {"kind": "failing", "token": token(6), "messages": messages, "max_tokens": -1},
        },
    });
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/openai_client.py");
    let output = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(python)
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(request.to_string().as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();

    let prompt = [
        ChatMessage::new("system", "You are a careful fighter."),
        ChatMessage::new("user", "Round 2, exchange 7. Choose one action."),
    ];
    let prompt_tokens = count_prompt_tokens(&prompt);
    let answer = house_answer(&prompt);
    let answer_tokens = count_tokens(&answer);
    assert_eq!(seen["plain"]["content"], answer.as_str(), "{seen}");
    assert_eq!(seen["plain"]["model"], "house");
    assert_eq!(seen["plain"]["finish_reason"], "stop");
    assert_eq!(
        seen["plain"]["usage"],
        serde_json::json!({"prompt_tokens": prompt_tokens, "completion_tokens": answer_tokens, "total_tokens": prompt_tokens + answer_tokens})
    );
    // Streamed and capped at 5 tokens: the SDK reassembles what was counted.
    let streamed_text = seen["streamed"]["content"].as_str().unwrap();
    assert!(answer.starts_with(streamed_text), "{seen}");
    assert_eq!(count_tokens(streamed_text), 5);
    assert_eq!(seen["streamed"]["finish_reason"], "length");
    assert_eq!(seen["streamed"]["usage"]["completion_tokens"], 5);
    assert_eq!(seen["streamed"]["usage"]["prompt_tokens"], prompt_tokens);
    assert!(seen["streamed"]["chunks"].as_u64().unwrap() >= 3, "{seen}");
    assert_eq!(seen["models"]["ids"], serde_json::json!(["house"]));

    let refusal = |name: &str| {
        let one = &seen[name];
        assert_eq!(one["retry_header"], "false", "{name}: {one}");
        (
            one["exception"].as_str().unwrap_or_default().to_owned(),
            one["status"].as_u64().unwrap_or_default(),
            one["code"].as_str().map(str::to_owned),
        )
    };
    assert_eq!(
        refusal("authentication"),
        (
            "AuthenticationError".to_owned(),
            401,
            Some("invalid_api_key".to_owned())
        )
    );
    assert_eq!(
        refusal("budget"),
        (
            "RateLimitError".to_owned(),
            429,
            Some("insufficient_quota".to_owned())
        )
    );
    assert_eq!(
        refusal("unavailable"),
        (
            "InternalServerError".to_owned(),
            503,
            Some("model_unavailable".to_owned())
        )
    );
    assert_eq!(
        refusal("not_found"),
        (
            "NotFoundError".to_owned(),
            404,
            Some("model_not_found".to_owned())
        )
    );
    assert_eq!(refusal("bad_request").0, "BadRequestError");

    // What each decision recorded: exactly the calls the client made (the
    // SDK retried none of the refusals), charged exactly.
    let spent = plain.settle();
    assert_eq!(spent.tokens, prompt_tokens + answer_tokens);
    assert_eq!(spent.calls.len(), 1);
    let spent = streamed.settle();
    assert_eq!(spent.tokens, prompt_tokens + 5);
    for (meter, outcome) in [
        (&poor, CallOutcome::Refused),
        (&unconfigured, CallOutcome::Unavailable),
        (&naming, CallOutcome::Invalid),
        (&malformed, CallOutcome::Invalid),
    ] {
        let spent = meter.settle();
        let outcomes: Vec<_> = spent
            .calls
            .iter()
            .map(|call| (call.outcome, call.tokens()))
            .collect();
        assert_eq!(outcomes, vec![(outcome, 0)], "one call, not retried");
    }
    assert!(poor.gassed_out());
    assert!(!unconfigured.gassed_out() && !naming.gassed_out() && !malformed.gassed_out());
    drop(issued);
}
