//! The model gateway can never be turned against the match. Each
//! test is one finding of the probe (an endpoint bot attacking the gateway
//! during its own decisions), against the real gateway on loopback, and the
//! probe itself as a whole match under `referee serve`: what a bot sends is
//! bounded before it is recorded, nothing is counted for free, no input
//! panics the counter, and nothing reaches the model uncounted.

// Tests: a failed unwrap is a failed assertion.
#![allow(clippy::unwrap_used)]

use crate::grpc_support as support;

use std::sync::Arc;
use std::time::Duration;

use duel_proto::v1 as pb;
use duel_referee::limits::{MAX_MODEL_NAME_BYTES, MAX_RECORDED_MODEL_NAME_BYTES, MESSAGE_ROLES};
use duel_referee::meter::{
    ChatMessage, ModelError, ModelRequest, count_prompt_tokens, count_tokens,
};
use duel_referee::models::Catalogue;
use duel_referee::{FighterMeter, ModelGateway};
use duel_replays::{CallOutcome, SourceName};
use duel_rules::Side;
use support::*;

fn house() -> ModelGateway {
    let catalogue =
        Catalogue::parse("[[model]]\nname = \"house\"\nurl = \"builtin:house\"\n").unwrap();
    ModelGateway::from_catalogue(&catalogue, &|_| None, &duel_referee::tls::Trust::system())
        .unwrap()
}

async fn post(gateway: &Gateway, token: &str, body: &serde_json::Value) -> reqwest::Response {
    post_from(&reqwest::Client::new(), gateway, token, body).await
}

async fn post_from(
    client: &reqwest::Client,
    gateway: &Gateway,
    token: &str,
    body: &serde_json::Value,
) -> reqwest::Response {
    client
        .post(format!("{}/chat/completions", gateway.base))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body).unwrap())
        .send()
        .await
        .unwrap()
}

fn user(content: &str) -> serde_json::Value {
    serde_json::json!({"messages": [{"role": "user", "content": content}]})
}

/// Finding 1: a model name of a megabyte cost 0 tokens and was recorded in
/// full (replay, transcript, log line, 404 body). It is refused unread and
/// recorded by its bounded prefix and its length; a short unknown name with
/// terminal escapes is recorded inert; the 404 bodies never echo more than
/// the bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bots_model_name_is_bounded_wherever_it_goes() {
    let gateway = serve_gateway().await;
    let meter = FighterMeter::keeping(house(), 8_000, true);
    let credential = gateway.credentials.issue("m1", Side::A, meter.clone());
    let long = "m".repeat(1_000_000);
    let mut body = user("hi");
    body["model"] = serde_json::json!(long);
    let response = post(&gateway, credential.token(), &body).await;
    assert_eq!(response.status(), 400);
    let text = response.text().await.unwrap();
    assert!(text.len() < 1_024, "{} bytes", text.len());
    assert!(text.contains("1000000 bytes"), "{text}");

    let mut body = user("hi");
    body["model"] = serde_json::json!("gpt\u{1b}[2J\u{202E}-9");
    let response = post(&gateway, credential.token(), &body).await;
    assert_eq!(response.status(), 404);
    let text = response.text().await.unwrap();
    assert!(text.contains("gpt?[2J?-9"), "{text}");

    let response = reqwest::Client::new()
        .get(format!("{}/models/{}", gateway.base, "n".repeat(10_000)))
        .bearer_auth(credential.token())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    assert!(response.text().await.unwrap().len() < 1_024);

    let spent = meter.settle();
    assert_eq!(spent.tokens, 0);
    let models: Vec<String> = spent.calls.iter().map(|call| call.record().model).collect();
    assert_eq!(
        models,
        [
            format!("{}…[1000000 bytes]", "m".repeat(MAX_MODEL_NAME_BYTES)),
            "gpt?[2J?-9".to_owned(),
        ]
    );
    assert!(
        spent
            .calls
            .iter()
            .all(|call| call.outcome == CallOutcome::Invalid
                && call.note.as_ref().is_some_and(|note| note.len() < 256))
    );
}

/// Finding 2: every prompt was counted before any budget check. A prompt
/// that cannot fit even if each of its tokens were the longest (128 bytes)
/// is refused uncounted (the refusal names that bound, not the count: 'a'
/// repeated counts 8 a token, 62,500 here), and a count stops once the
/// prompt cannot fit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_that_cannot_fit_is_refused_before_it_is_counted_to_its_end() {
    let meter = FighterMeter::new(house(), 1_000);
    let refused = meter
        .complete(vec![ChatMessage::new("user", "a".repeat(500_000))], 1)
        .await;
    assert_eq!(
        refused,
        Err(ModelError::BudgetExhausted {
            prompt_tokens: 500_000_u64.div_ceil(128),
            left_tokens: 1_000
        })
    );
    assert_eq!(meter.counted_bytes(), 0, "nothing was counted");
    assert!(meter.gassed_out());

    let meter = FighterMeter::new(house(), 8_000);
    let words = "word ".repeat(80_000);
    assert!(count_tokens(&words) >= 80_000);
    let refused = meter
        .complete(vec![ChatMessage::new("user", words)], 1)
        .await;
    assert_eq!(
        refused,
        Err(ModelError::BudgetExhausted {
            prompt_tokens: 8_001,
            left_tokens: 8_000
        }),
        "counted only until it could not fit"
    );
    assert!(meter.counted_bytes() > 0);
    assert_eq!(meter.tokens_used(), 0);
}

/// Distinct half-megabyte texts of many scripts: the slowest kind to count.
fn slow_prompts(count: u32) -> Vec<String> {
    (0..count)
        .map(|call| {
            (0..130_000u32)
                .map(|i| {
                    char::from_u32(0x4E00 + (i * 7919 + call * 104_729) % 20_000).unwrap_or('x')
                })
                .collect()
        })
        .collect()
}

/// Waits until `calls` of the meter's calls are in flight.
async fn until_in_flight(meter: &FighterMeter, calls: usize) {
    for _ in 0..2_000 {
        if meter.calls_in_flight() == calls {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(meter.calls_in_flight(), calls);
}

/// Finding 2 and item 7: 16 calls of half a megabyte each, in one decision,
/// from a bot that answers at once. Each call is recorded (cut, nothing
/// forwarded, nothing charged); they are counted one at a time, and once
/// the decision ends no count starts: the one running stops, the calls
/// waiting for their turn are never counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_running_when_their_decision_ends_are_recorded_and_stop_counting() {
    let gateway = serve_gateway().await;
    let meter = FighterMeter::keeping(house(), 512_000, true);
    let credential = gateway.credentials.issue("m1", Side::A, meter.clone());
    let prompts = slow_prompts(16);
    let prompt_bytes = prompts[0].len() as u64;
    assert!(
        prompt_bytes > 300_000 && prompt_bytes <= 512 * 1024,
        "{prompt_bytes}"
    );
    let calls: Vec<_> = prompts
        .iter()
        .map(|prompt| {
            let (base, token) = (gateway.base.clone(), credential.token().to_owned());
            let mut body = user(prompt);
            body["max_tokens"] = serde_json::json!(4);
            tokio::spawn(async move {
                reqwest::Client::new()
                    .post(format!("{base}/chat/completions"))
                    .bearer_auth(token)
                    .header("content-type", "application/json")
                    .body(serde_json::to_vec(&body).unwrap())
                    .send()
                    .await
                    .map(|response| response.status().as_u16())
            })
        })
        .collect();
    until_in_flight(&meter, 16).await;
    let spent = meter.settle();
    let counted_at_the_end = meter.counted_bytes();
    assert_eq!(
        spent.calls.len(),
        16,
        "every call the bot started is recorded"
    );
    assert!(
        spent
            .calls
            .iter()
            .all(|call| call.outcome == CallOutcome::Cut)
    );
    assert_eq!(spent.tokens, 0, "nothing was forwarded, nothing is charged");
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap(), 408, "decision_ended");
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let counted = meter.counted_bytes();
    // At most a count that took its turn as the decision ended started
    // after; the queue behind it never did.
    assert!(
        counted <= counted_at_the_end + prompt_bytes,
        "{counted} bytes counted, {counted_at_the_end} when the decision ended"
    );
    assert!(counted < 16 * prompt_bytes, "{counted}");
    assert_eq!(meter.calls_in_flight(), 0);
}

/// Item 7: a call whose request is still arriving when its decision ends is
/// recorded (cut) and never read or counted: the gateway stops reading it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_still_arriving_when_their_decision_ends_are_recorded_and_never_counted() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let gateway = serve_gateway().await;
    let meter = FighterMeter::keeping(house(), 512_000, true);
    let credential = gateway.credentials.issue("m1", Side::A, meter.clone());
    let address = gateway
        .base
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned();
    let mut streams = Vec::new();
    for prompt in slow_prompts(8) {
        let body = serde_json::to_vec(&user(&prompt)).unwrap();
        let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
        let head = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: {address}\r\nauthorization: Bearer {}\r\n\
             content-type: application/json\r\ncontent-length: {}\r\n\r\n",
            credential.token(),
            body.len()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        // Half the body now; the rest after the decision ended.
        stream.write_all(&body[..body.len() / 2]).await.unwrap();
        streams.push((stream, body));
    }
    until_in_flight(&meter, 8).await;
    let spent = meter.settle();
    assert_eq!(spent.calls.len(), 8);
    assert!(
        spent
            .calls
            .iter()
            .all(|call| call.outcome == CallOutcome::Cut && call.tokens() == 0)
    );
    for (mut stream, body) in streams {
        let _ = stream.write_all(&body[body.len() / 2..]).await;
        let mut answer = vec![0; 64];
        let read = stream.read(&mut answer).await.unwrap();
        assert!(
            String::from_utf8_lossy(&answer[..read]).starts_with("HTTP/1.1 408"),
            "{}",
            String::from_utf8_lossy(&answer[..read])
        );
    }
    assert_eq!(meter.counted_bytes(), 0, "nothing was counted");
}

/// Finding 3: about 1,000,000 spaces panicked tiktoken-rs's pre-tokenizer
/// (fancy-regex's stack overflow, unwrapped), and the bot read a 503 "the
/// referee is shutting down". Counted now (1,000,000 / 128 tokens, in
/// slices), and refused as too large at the gateway in words that say why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_million_spaces_never_panic_the_counter() {
    let spaces = " ".repeat(1_000_000);
    assert_eq!(count_tokens(&spaces), 1_000_000_u64.div_ceil(128));
    assert_eq!(
        count_tokens(&format!("{spaces}x")),
        count_tokens(&spaces) + 1
    );
    let gateway = serve_gateway().await;
    let meter = FighterMeter::new(house(), 512_000);
    let credential = gateway.credentials.issue("m1", Side::A, meter.clone());
    let response = post(&gateway, credential.token(), &user(&spaces)).await;
    assert_eq!(response.status(), 400);
    let text = response.text().await.unwrap();
    assert!(text.contains("1000000 bytes, more than 524288"), "{text}");
    // Half a megabyte of spaces is within the bound: counted and answered.
    let response = post(&gateway, credential.token(), &user(&spaces[..500_000])).await;
    assert_eq!(response.status(), 200);
    let answer: serde_json::Value =
        serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert_eq!(answer["usage"]["prompt_tokens"], 500_000_u64.div_ceil(128));
}

/// Finding 4: roles of any 1-32 bytes were forwarded uncounted (256 of
/// them carried 7,936 bytes of free text a call). Only the documented
/// roles pass, on every face.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_outside_the_documented_set_are_refused_on_every_face() {
    let gateway = serve_gateway().await;
    let meter = FighterMeter::new(house(), 8_000);
    let credential = gateway.credentials.issue("m1", Side::A, meter.clone());
    let free_text: Vec<serde_json::Value> = (0..256)
        .map(|i| serde_json::json!({"role": format!("{i:0>32}"), "content": ""}))
        .collect();
    let response = post(
        &gateway,
        credential.token(),
        &serde_json::json!({"messages": free_text}),
    )
    .await;
    assert_eq!(response.status(), 400);
    assert!(
        response
            .text()
            .await
            .unwrap()
            .contains("role must be one of")
    );
    for role in MESSAGE_ROLES {
        let body =
            serde_json::json!({"messages": [{"role": role, "content": "hi"}], "max_tokens": 2});
        assert_eq!(
            post(&gateway, credential.token(), &body).await.status(),
            200,
            "{role}"
        );
    }
    // The in-process faces (the WASM import, `duel.v1.Inference`) go through
    // the same stage.
    let meter = FighterMeter::new(house(), 8_000);
    let refused = meter
        .complete_request(ModelRequest::new(
            vec![ChatMessage::new("narrator", "hi")],
            4,
        ))
        .await;
    assert!(
        matches!(&refused, Err(ModelError::Invalid(why)) if why.contains("role must be one of")),
        "{refused:?}"
    );
    assert_eq!(meter.tokens_used(), 0);
}

/// Finding 4: stop strings reached the upstream uncounted (4 x 1 MB). They
/// are counted with the prompt and bounded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_strings_are_counted_and_bounded() {
    let gateway = serve_gateway().await;
    let meter = FighterMeter::new(house(), 8_000);
    let credential = gateway.credentials.issue("m1", Side::A, meter.clone());
    let mut body = user("Round 1.");
    body["stop"] = serde_json::json!(["\n\n", "END OF TURN"]);
    let response = post(&gateway, credential.token(), &body).await;
    assert_eq!(response.status(), 200);
    let answer: serde_json::Value =
        serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    let expected = count_prompt_tokens(&[ChatMessage::new("user", "Round 1.")])
        + count_tokens("\n\n")
        + count_tokens("END OF TURN");
    assert_eq!(answer["usage"]["prompt_tokens"], expected);
    body["stop"] = serde_json::json!(["x".repeat(300_000)]);
    let response = post(&gateway, credential.token(), &body).await;
    assert_eq!(response.status(), 400);
    assert!(
        response
            .text()
            .await
            .unwrap()
            .contains("stop[0] is 300000 bytes")
    );
}

/// Finding 8: `max_completion_tokens: 0` beside `max_tokens: 3` gave an
/// uncapped completion. Both at once, or 0, are refused as OpenAI refuses
/// them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_caps_follow_openai() {
    let gateway = serve_gateway().await;
    let meter = FighterMeter::new(house(), 8_000);
    let credential = gateway.credentials.issue("m1", Side::A, meter.clone());
    for (caps, code) in [
        (
            serde_json::json!({"max_completion_tokens": 0, "max_tokens": 3}),
            "invalid_parameter_combination",
        ),
        (
            serde_json::json!({"max_tokens": 0}),
            "integer_below_min_value",
        ),
    ] {
        let mut body = user("hi");
        body.as_object_mut()
            .unwrap()
            .extend(caps.as_object().unwrap().clone());
        let response = post(&gateway, credential.token(), &body).await;
        assert_eq!(response.status(), 400);
        let error: serde_json::Value =
            serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        assert_eq!(error["error"]["code"], code, "{error}");
    }
    assert_eq!(meter.tokens_used(), 0);
}

/// The probe, rerun as a whole match: a heavy-class endpoint bot that, in
/// each of its decisions, sends 1 MB model names, half-megabyte prompts of
/// one letter, a million spaces, 256 free-text roles and megabyte stop
/// strings, and answers at once (its calls still running), against a
/// built-in fighter. The match is played and its replay is small and
/// verifies; the other fighter decides every exchange itself; the upstream
/// sees only documented roles and bounded stop strings.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_probe_match_is_played_published_and_small() {
    let named = |model: String| {
        let mut body = user("hi");
        body["model"] = serde_json::json!(model);
        serde_json::to_vec(&body).unwrap()
    };
    let mut bodies = vec![named("m".repeat(1_000_000)); 3];
    for _ in 0..4 {
        let mut body = user(&"a".repeat(500_000));
        body["max_tokens"] = serde_json::json!(1);
        bodies.push(serde_json::to_vec(&body).unwrap());
    }
    bodies.push(serde_json::to_vec(&user(&" ".repeat(1_000_000))).unwrap());
    bodies.push(
        serde_json::to_vec(&serde_json::json!({"messages": (0..256)
            .map(|i| serde_json::json!({"role": format!("{i:0>32}"), "content": ""}))
            .collect::<Vec<_>>()}))
        .unwrap(),
    );
    let mut stops = user("hi");
    stops["stop"] = serde_json::json!(vec!["s".repeat(200_000); 4]);
    bodies.push(serde_json::to_vec(&stops).unwrap());
    let mut fair = user("What now?");
    fair["max_tokens"] = serde_json::json!(4);
    fair["stop"] = serde_json::json!(["\n"]);
    bodies.push(serde_json::to_vec(&fair).unwrap());

    let (model, model_log) = serve_model("JAB").await;
    let (flood, flood_log) = serve_bot(Behaviour::Flood {
        bodies: Arc::new(bodies),
        wait: false,
    })
    .await;
    let referee = serve_referee(serve_config(4, gateway_for(&model))).await;
    let mut call = request(&flood.url(), "builtin:counter", 2_000);
    call.class = pb::WeightClass::Heavy as i32;
    let response = referee_client(&referee)
        .await
        .run_match(call)
        .await
        .unwrap()
        .into_inner();
    let bytes = response.replay_json.len();
    assert!(bytes < 1024 * 1024, "replay of {bytes} bytes");
    let replay = duel_replays::Replay::from_slice(response.replay_json.as_bytes()).unwrap();
    let verified = duel_referee::verify::verify_replay(&replay);
    assert!(matches!(verified, Ok(Ok(_))), "{verified:?}");
    let mut recorded = 0;
    for side in sides(&replay, 0) {
        for call in side.calls() {
            recorded += 1;
            assert!(
                call.model.len() <= MAX_RECORDED_MODEL_NAME_BYTES,
                "{}",
                call.model.len()
            );
        }
    }
    assert!(recorded > 0, "the flood's calls are in the replay");
    for side in sides(&replay, 1) {
        assert_eq!(side.source, SourceName::Bot, "{side:?}");
    }
    assert!(!flood_log.http_statuses.lock().unwrap().is_empty());
    for request in model_log.requests.lock().unwrap().iter() {
        for message in request["messages"].as_array().unwrap() {
            assert!(
                MESSAGE_ROLES.contains(&message["role"].as_str().unwrap()),
                "{message}"
            );
        }
        for stop in request["stop"].as_array().into_iter().flatten() {
            assert!(stop.as_str().unwrap().len() <= 256);
        }
    }
    referee.stop().await;
}

/// Item 6: the gateway looks tokens up, so it is rate limited as the
/// ladder's API is: past a burst of 100 unknown tokens from one address,
/// that address gets 429 (with Retry-After) and none of its tokens is
/// looked up, right or wrong, until then; another address is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_credentials_are_rate_limited_per_address() {
    // The limits' burst, then one a minute (the default is 50 a second): a
    // loaded machine cannot refill the allowance between two requests.
    let quota = governor::Quota::per_minute(std::num::NonZeroU32::new(1).unwrap()).allow_burst(
        std::num::NonZeroU32::new(duel_referee::limits::BAD_CREDENTIALS_BURST_PER_CLIENT).unwrap(),
    );
    let gateway = serve_gateway_with(
        duel_referee::credentials::Credentials::with_bad_credentials_quota(quota),
    )
    .await;
    let meter = FighterMeter::new(house(), 8_000);
    let credential = gateway.credentials.issue("m1", Side::A, meter.clone());
    let from = |address: [u8; 4]| {
        reqwest::Client::builder()
            .local_address(std::net::IpAddr::from(address))
            .build()
            .unwrap()
    };
    let guesser = from([127, 0, 0, 1]);
    let mut statuses = Vec::new();
    for guess in 0..120 {
        let response = post_from(&guesser, &gateway, &format!("{guess:064x}"), &user("hi")).await;
        if response.status() == 429 {
            assert!(response.headers().contains_key("retry-after"));
        }
        statuses.push(response.status().as_u16());
    }
    let refused = statuses.iter().filter(|status| **status == 429).count();
    assert!(
        statuses[..100].iter().all(|status| *status == 401),
        "{statuses:?}"
    );
    assert!(refused >= 15, "{statuses:?}");
    // Its own valid token is not looked up either while it waits.
    let response = post_from(&guesser, &gateway, credential.token(), &user("hi")).await;
    assert_eq!(response.status(), 429);
    // Another address is served.
    let response = post_from(
        &from([127, 0, 0, 2]),
        &gateway,
        credential.token(),
        &user("hi"),
    )
    .await;
    assert_eq!(response.status(), 200);
    // The gRPC face shares the allowance: RESOURCE_EXHAUSTED for the guesser.
    let mut client = duel_proto::v1::inference_client::InferenceClient::connect(
        gateway.base.trim_end_matches("/v1").to_owned(),
    )
    .await
    .unwrap();
    let mut codes = Vec::new();
    for _ in 0..5 {
        let mut request = tonic::Request::new(pb::CompleteRequest {
            messages: vec![pb::ChatMessage {
                role: "user".into(),
                content: "hi".into(),
            }],
            max_tokens: 1,
        });
        request.metadata_mut().insert(
            "authorization",
            format!("Bearer {}", "0".repeat(64)).parse().unwrap(),
        );
        codes.push(client.complete(request).await.unwrap_err().code());
    }
    // 50 a second pass once the burst is spent; faster than that, refused.
    assert!(codes.contains(&tonic::Code::ResourceExhausted), "{codes:?}");
    assert!(
        codes.iter().all(|code| matches!(
            code,
            tonic::Code::ResourceExhausted | tonic::Code::Unauthenticated
        )),
        "{codes:?}"
    );
}
