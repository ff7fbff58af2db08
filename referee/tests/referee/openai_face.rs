//! The OpenAI-compatible face of the metered gateway over real HTTP on
//! loopback: whole and streamed answers counted exactly like `Complete`,
//! every refusal in OpenAI's error shape with `x-should-retry: false`, only
//! the budget refusal gassing a fighter out, HTTP/1.1 and HTTP/2 alike, and
//! what each decision's calls leave in the meter's record.

// Tests: a failed unwrap is a failed assertion.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use duel_referee::meter::{ChatMessage, count_prompt_tokens, count_tokens};
use duel_referee::models::{Catalogue, house_answer};
use duel_referee::{FighterMeter, ModelGateway};
use duel_replays::CallOutcome;
use duel_rules::Side;
use support::{Gateway, serve_gateway};

use crate::grpc_support as support;

/// Two built-in models: `house` (the default) and `echo`, the same model
/// under another name.
fn catalogue() -> ModelGateway {
    let catalogue = Catalogue::parse(
        "[[model]]\nname = \"house\"\nurl = \"builtin:house\"\ndefault = true\ninput_usd_per_mtok = 0.5\n\n\
         [[model]]\nname = \"echo\"\nurl = \"builtin:house\"\n",
    )
    .unwrap();
    ModelGateway::from_catalogue(&catalogue, &|_| None, &duel_referee::tls::Trust::system())
        .unwrap()
}

fn http1() -> reqwest::Client {
    reqwest::Client::builder().http1_only().build().unwrap()
}

fn body(messages: &[(&str, &str)], extra: serde_json::Value) -> serde_json::Value {
    let mut body = serde_json::json!({
        "messages": messages
            .iter()
            .map(|(role, content)| serde_json::json!({"role": role, "content": content}))
            .collect::<Vec<_>>(),
    });
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    body
}

async fn post(
    client: &reqwest::Client,
    gateway: &Gateway,
    token: Option<&str>,
    body: &serde_json::Value,
) -> reqwest::Response {
    let mut request = client
        .post(format!("{}/chat/completions", gateway.base))
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body).unwrap());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

async fn json(response: reqwest::Response) -> serde_json::Value {
    serde_json::from_slice(&response.bytes().await.unwrap()).unwrap()
}

/// An error answer: its status, `error.code`, `error.type`, and that it
/// tells the client not to retry.
async fn refusal(response: reqwest::Response) -> (u16, Option<String>, String) {
    let status = response.status().as_u16();
    assert_eq!(
        response
            .headers()
            .get("x-should-retry")
            .and_then(|value| value.to_str().ok()),
        Some("false"),
        "status {status}"
    );
    let json: serde_json::Value = json(response).await;
    let error = &json["error"];
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|text| !text.is_empty()),
        "{json}"
    );
    assert!(error.get("param").is_some(), "{json}");
    (
        status,
        error["code"].as_str().map(str::to_owned),
        error["type"].as_str().unwrap().to_owned(),
    )
}

/// The text of a streamed answer, its usage chunk if any, and whether it
/// ended with `[DONE]`.
fn read_stream(text: &str) -> (String, Option<serde_json::Value>, String, bool) {
    let mut content = String::new();
    let mut usage = None;
    let mut finish = String::new();
    let mut done = false;
    for event in text.split("\n\n").filter(|event| !event.is_empty()) {
        let data = event.strip_prefix("data: ").expect("every event is data");
        if data == "[DONE]" {
            done = true;
            continue;
        }
        assert!(!done, "nothing after [DONE]");
        let chunk: serde_json::Value = serde_json::from_str(data).unwrap();
        assert_eq!(chunk["object"], "chat.completion.chunk");
        if let Some(choice) = chunk["choices"].get(0) {
            content.push_str(choice["delta"]["content"].as_str().unwrap_or_default());
            if let Some(reason) = choice["finish_reason"].as_str() {
                finish = reason.to_owned();
            }
        } else if !chunk["usage"].is_null() {
            usage = Some(chunk["usage"].clone());
        }
    }
    (content, usage, finish, done)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_and_streamed_answers_are_metered_exactly() {
    let gateway = serve_gateway().await;
    let meter = FighterMeter::keeping(catalogue(), 10_000, true);
    let credential = gateway.credentials.issue("m1", Side::A, meter.clone());
    let client = http1();
    let messages = [("system", "You fight."), ("user", "Round 1, exchange 1.")];
    let prompt_tokens = count_prompt_tokens(&[
        ChatMessage::new("system", "You fight."),
        ChatMessage::new("user", "Round 1, exchange 1."),
    ]);
    let expected = house_answer(&[
        ChatMessage::new("system", "You fight."),
        ChatMessage::new("user", "Round 1, exchange 1."),
    ]);

    // Whole: the answer, the referee's own usage, the budget left.
    let response = post(
        &client,
        &gateway,
        Some(credential.token()),
        &body(&messages, serde_json::json!({"model": "house"})),
    )
    .await;
    assert_eq!(response.status(), 200);
    let left: u64 = response.headers()["x-duel-budget-left-tokens"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let whole: serde_json::Value = json(response).await;
    assert_eq!(whole["object"], "chat.completion");
    assert_eq!(whole["model"], "house");
    assert_eq!(whole["choices"][0]["message"]["content"], expected.as_str());
    assert_eq!(whole["choices"][0]["finish_reason"], "stop");
    let completion_tokens = count_tokens(&expected);
    assert_eq!(whole["usage"]["prompt_tokens"], prompt_tokens);
    assert_eq!(whole["usage"]["completion_tokens"], completion_tokens);
    assert_eq!(
        whole["usage"]["total_tokens"],
        prompt_tokens + completion_tokens
    );
    assert_eq!(left, 10_000 - prompt_tokens - completion_tokens);

    // Streamed, with the usage chunk: the same text, the same counts.
    let response = post(
        &client,
        &gateway,
        Some(credential.token()),
        &body(&messages, serde_json::json!({"model": "echo", "stream": true, "stream_options": {"include_usage": true}})),
    )
    .await;
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let (text, usage, finish, done) = read_stream(&response.text().await.unwrap());
    assert!(done);
    assert_eq!(text, expected);
    assert_eq!(finish, "stop");
    let usage = usage.expect("the usage chunk");
    assert_eq!(usage["prompt_tokens"], prompt_tokens);
    assert_eq!(usage["completion_tokens"], completion_tokens);

    // Capped by max_completion_tokens: cut, and said so.
    let response = post(
        &client,
        &gateway,
        Some(credential.token()),
        &body(
            &messages,
            serde_json::json!({"max_completion_tokens": 2, "stream": true}),
        ),
    )
    .await;
    let (text, usage, finish, _) = read_stream(&response.text().await.unwrap());
    assert!(usage.is_none(), "no usage chunk unless asked");
    assert_eq!(finish, "length");
    assert_eq!(count_tokens(&text), 2);
    assert!(expected.starts_with(&text));

    // The decision's record: three calls, in order, each charged exactly.
    let spent = meter.settle();
    drop(credential);
    let records: Vec<_> = spent.calls.iter().map(|call| call.record()).collect();
    let tokens: Vec<_> = records
        .iter()
        .map(|call| (call.model.as_str(), call.tokens(), call.outcome))
        .collect();
    assert_eq!(
        tokens,
        vec![
            ("house", prompt_tokens + completion_tokens, CallOutcome::Ok),
            ("echo", prompt_tokens + completion_tokens, CallOutcome::Ok),
            ("house", prompt_tokens + 2, CallOutcome::Ok),
        ]
    );
    assert_eq!(
        spent.tokens,
        records.iter().map(|call| call.tokens()).sum::<u64>()
    );
    assert_eq!(spent.calls[2].text.as_ref().unwrap().completion, text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_are_listed_over_http1_and_http2() {
    let gateway = serve_gateway().await;
    let meter = duel_referee::FighterMeter::new(catalogue(), 100);
    let credential = gateway.credentials.issue("m1", Side::B, meter);
    for client in [
        http1(),
        reqwest::Client::builder()
            .http2_prior_knowledge()
            .build()
            .unwrap(),
    ] {
        let response = client
            .get(format!("{}/models", gateway.base))
            .bearer_auth(credential.token())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let list: serde_json::Value = json(response).await;
        let names: Vec<&str> = list["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|model| model["id"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["house", "echo"]);
        let one = client
            .get(format!("{}/models/echo", gateway.base))
            .bearer_auth(credential.token())
            .send()
            .await
            .unwrap();
        assert_eq!(one.status(), 200);
        let missing = client
            .get(format!("{}/models/gpt-9", gateway.base))
            .bearer_auth(credential.token())
            .send()
            .await
            .unwrap();
        assert_eq!(refusal(missing).await.0, 404);
    }
}

/// Each refusal: its status and code, whether it was recorded, and that
/// only the budget refusal gasses the fighter out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_have_openais_shape_and_only_the_budget_gasses_out() {
    let gateway = serve_gateway().await;
    let client = http1();
    let hello = body(&[("user", "hello")], serde_json::json!({}));

    // 401: no key, an unknown key, the previous decision's key.
    let meter = duel_referee::FighterMeter::new(catalogue(), 1_000);
    assert_eq!(
        refusal(post(&client, &gateway, None, &hello).await).await.0,
        401
    );
    let (status, code, _) = refusal(post(&client, &gateway, Some("sk-forged"), &hello).await).await;
    assert_eq!((status, code.as_deref()), (401, Some("invalid_api_key")));
    let expired = gateway.credentials.issue("m1", Side::A, meter.clone());
    let token = expired.token().to_owned();
    meter.settle();
    drop(expired);
    assert_eq!(
        refusal(post(&client, &gateway, Some(&token), &hello).await)
            .await
            .0,
        401
    );

    // 403: a live credential whose decision has ended (its fighter is not
    // being asked now).
    let lingering = gateway.credentials.issue("m1", Side::A, meter.clone());
    meter.settle();
    let (status, code, _) =
        refusal(post(&client, &gateway, Some(lingering.token()), &hello).await).await;
    assert_eq!((status, code.as_deref()), (403, Some("not_deciding")));
    drop(lingering);

    // 404, 400, 429 in one decision; each recorded, only the last gasses out.
    let credential = gateway.credentials.issue("m1", Side::A, meter.clone());
    let token = credential.token().to_owned();
    let (status, code, _) = refusal(
        post(
            &client,
            &gateway,
            Some(&token),
            &body(&[("user", "hi")], serde_json::json!({"model": "gpt-9"})),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_deref()), (404, Some("model_not_found")));
    for invalid in [
        serde_json::json!({"messages": []}),
        serde_json::json!({"messages": [{"role": "user", "content": "x"}], "n": 3}),
        serde_json::json!({"messages": "not a list"}),
    ] {
        let (status, _, kind) =
            refusal(post(&client, &gateway, Some(&token), &invalid).await).await;
        assert_eq!(
            (status, kind.as_str()),
            (400, "invalid_request_error"),
            "{invalid}"
        );
    }
    let not_json = client
        .post(format!("{}/chat/completions", gateway.base))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body("{\"messages\": [")
        .send()
        .await
        .unwrap();
    assert_eq!(refusal(not_json).await.0, 400);
    assert!(
        !meter.gassed_out(),
        "400 and 404 cost nothing and change nothing"
    );
    let too_long = "word ".repeat(2_000);
    let (status, code, kind) = refusal(
        post(
            &client,
            &gateway,
            Some(&token),
            &body(&[("user", &too_long)], serde_json::json!({})),
        )
        .await,
    )
    .await;
    assert_eq!(
        (status, code.as_deref(), kind.as_str()),
        (429, Some("insufficient_quota"), "insufficient_quota")
    );
    assert!(meter.gassed_out());
    let spent = meter.settle();
    drop(credential);
    let outcomes: Vec<_> = spent
        .calls
        .iter()
        .map(|call| (call.outcome, call.tokens()))
        .collect();
    assert_eq!(
        outcomes,
        vec![
            (CallOutcome::Invalid, 0),
            (CallOutcome::Invalid, 0),
            (CallOutcome::Invalid, 0),
            (CallOutcome::Invalid, 0),
            (CallOutcome::Invalid, 0),
            (CallOutcome::Refused, 0),
        ]
    );
    assert_eq!(&*spent.calls[0].model, "gpt-9");

    // 503: no model configured, or the upstream down; free, not gassed out.
    let unconfigured = duel_referee::FighterMeter::new(ModelGateway::disabled(), 1_000);
    let credential = gateway
        .credentials
        .issue("m2", Side::B, unconfigured.clone());
    let (status, code, _) =
        refusal(post(&client, &gateway, Some(credential.token()), &hello).await).await;
    assert_eq!((status, code.as_deref()), (503, Some("model_unavailable")));
    assert!(!unconfigured.gassed_out());
    let spent = unconfigured.settle();
    assert_eq!(spent.calls[0].outcome, CallOutcome::Unavailable);
    drop(credential);
    let down = FighterMeter::new(
        ModelGateway::new(duel_referee::ModelConfig::new(
            // Nothing listens on port 9 of loopback (discard): the upstream is down.
            "http://127.0.0.1:9/v1".to_owned(),
            "m".to_owned(),
            None,
        ))
        .unwrap(),
        1_000,
    );
    let credential = gateway.credentials.issue("m3", Side::A, down.clone());
    let response = tokio::time::timeout(
        Duration::from_secs(30),
        post(&client, &gateway, Some(credential.token()), &hello),
    )
    .await
    .unwrap();
    assert_eq!(refusal(response).await.0, 503);
    assert!(!down.gassed_out());
    assert_eq!(down.settle().tokens, 0);
}

/// The referee's counts, never an upstream's: a fake upstream that claims a
/// huge usage changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_is_the_referees_count_not_the_upstreams() {
    let upstream = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(|| async {
            axum::Json(serde_json::json!({
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "JAB now"}}],
                "usage": {"prompt_tokens": 99999, "completion_tokens": 99999, "total_tokens": 199998},
            }))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, upstream).await });
    let gateway = serve_gateway().await;
    let meter = FighterMeter::new(
        ModelGateway::new(duel_referee::ModelConfig::new(
            format!("http://{address}/v1"),
            "m".to_owned(),
            None,
        ))
        .unwrap(),
        1_000,
    );
    let credential = gateway.credentials.issue("m1", Side::A, meter.clone());
    let response = post(
        &http1(),
        &gateway,
        Some(credential.token()),
        &body(&[("user", "hi")], serde_json::json!({})),
    )
    .await;
    let whole: serde_json::Value = json(response).await;
    assert_eq!(whole["usage"]["prompt_tokens"], count_tokens("hi"));
    assert_eq!(whole["usage"]["completion_tokens"], count_tokens("JAB now"));
    assert_eq!(
        meter.settle().tokens,
        count_tokens("hi") + count_tokens("JAB now")
    );
}
