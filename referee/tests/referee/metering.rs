//! The metered model gateway against a fake OpenAI-compatible server: exact
//! counts, budgets running out, completion caps, and credentials that belong to
//! someone else.

// Tests: a failed unwrap is a failed assertion.
#![allow(clippy::unwrap_used)]

use crate::grpc_support as support;

use std::sync::Arc;
use std::time::Duration;

use duel_proto::v1 as pb;
use duel_referee::meter::{ChatMessage, ModelError, Spent, count_prompt_tokens, count_tokens};
use duel_replays::{CallOutcome, CallRecord, SourceName};
use support::*;

const SYSTEM: &str = "You are a careful fighter.";
const USER: &str = "Choose one action: JAB, HEAVY, BLOCK, DODGE, FEINT or RECOVER.";
const COMPLETION: &str = "JAB, then BLOCK.";
// o200k_base counts of the texts above (fixed by the encoding).
const SYSTEM_TOKENS: u64 = 6;
const USER_TOKENS: u64 = 23;
const COMPLETION_TOKENS: u64 = 6;

fn think(messages: &[(&str, &str)], max_tokens: u32) -> Behaviour {
    Behaviour::Think {
        messages: messages
            .iter()
            .map(|(role, text)| (role.to_string(), text.to_string()))
            .collect(),
        max_tokens,
    }
}

#[test]
fn the_test_texts_have_the_counts_we_state() {
    assert_eq!(count_tokens(SYSTEM), SYSTEM_TOKENS);
    assert_eq!(count_tokens(USER), USER_TOKENS);
    assert_eq!(count_tokens(COMPLETION), COMPLETION_TOKENS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_counted_exactly_per_decision_and_per_match() {
    let (model, model_log) = serve_model(COMPLETION).await;
    let (thinker, bot_log) = serve_bot(think(&[("system", SYSTEM), ("user", USER)], 16)).await;
    let referee = serve_referee(serve_config(4, gateway_for(&model))).await;
    let replay = run_match(&referee, request(&thinker.url(), "builtin:block", 2_000)).await;
    let per_decision = SYSTEM_TOKENS + USER_TOKENS + COMPLETION_TOKENS;
    let a = sides(&replay, 0);
    for side in &a {
        assert_eq!(
            (side.source, side.tokens),
            (SourceName::Bot, per_decision),
            "{side:?}"
        );
    }
    let decisions = a.len() as u64;
    assert_eq!(replay.result.tokens_used, [decisions * per_decision, 0]);
    let results = bot_log.inference.lock().unwrap().clone();
    assert_eq!(results.len() as u64, decisions);
    for (index, result) in results.iter().enumerate() {
        let response = result.as_ref().expect("metered call");
        assert_eq!(response.prompt_tokens, SYSTEM_TOKENS + USER_TOKENS);
        assert_eq!(response.completion_tokens, COMPLETION_TOKENS);
        assert_eq!(response.text, COMPLETION);
        assert_eq!(
            response.budget_left_tokens,
            8_000 - (index as u64 + 1) * per_decision
        );
    }
    // The bot sees its own budget shrink by exactly what it spent.
    let budgets = bot_log.budgets_seen.lock().unwrap().clone();
    for (index, budget) in budgets.iter().enumerate() {
        assert_eq!(*budget, 8_000 - index as u64 * per_decision);
    }
    // What reached the model: the messages as sent, the cap, the key from config.
    let requests = model_log.requests.lock().unwrap().clone();
    assert_eq!(requests.len() as u64, decisions);
    assert_eq!(requests[0]["model"], "test-model");
    assert_eq!(requests[0]["max_tokens"], 16);
    assert_eq!(requests[0]["messages"][0]["role"], "system");
    assert_eq!(requests[0]["messages"][0]["content"], SYSTEM);
    assert_eq!(requests[0]["messages"][1]["content"], USER);
    assert!(
        model_log
            .authorization
            .lock()
            .unwrap()
            .iter()
            .all(|value| value.as_deref() == Some("Bearer sk-test-key"))
    );
    referee.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_running_out_mid_round_gasses_the_fighter_out() {
    let prompt = "word ".repeat(1_000);
    let prompt_tokens = count_tokens(&prompt);
    let per_call = prompt_tokens + COMPLETION_TOKENS;
    // Calls that fit the light budget of 8,000; the next one is refused.
    let mut fitting = 0u64;
    while 8_000 - fitting * per_call >= prompt_tokens {
        fitting += 1;
    }
    assert!(fitting + 2 <= 12, "the refusal must fall inside round 1");
    let (model, _) = serve_model(COMPLETION).await;
    let prompt: &'static str = Box::leak(prompt.into_boxed_str());
    let (thinker, bot_log) = serve_bot(think(&[("user", prompt)], 0)).await;
    let referee = serve_referee(serve_config(4, gateway_for(&model))).await;
    let replay = run_match(&referee, request(&thinker.url(), "builtin:block", 2_000)).await;
    let a = sides(&replay, 0);
    let fitting = fitting as usize;
    for side in &a[..fitting] {
        assert_eq!((side.source, side.tokens), (SourceName::Bot, per_call));
    }
    // The refused call's decision still counts as the bot's answer …
    assert_eq!((a[fitting].source, a[fitting].tokens), (SourceName::Bot, 0));
    assert_eq!(a[fitting].action, duel_replays::ActionName::Jab);
    // … and from the next decision on the fallback plays, recorded as budget.
    for side in &a[fitting + 1..] {
        assert_eq!(
            (side.source, side.tokens, side.latency_ms),
            (SourceName::Budget, 0, 0)
        );
    }
    assert_eq!(
        bot_log.decisions.load(std::sync::atomic::Ordering::SeqCst),
        fitting + 1,
        "a gassed-out bot is not asked"
    );
    let results = bot_log.inference.lock().unwrap().clone();
    assert_eq!(results.last(), Some(&Err(tonic::Code::ResourceExhausted)));
    assert_eq!(replay.result.tokens_used[0], fitting as u64 * per_call);
    assert!(replay.result.tokens_used[0] <= replay.budget);
    assert!(
        duel_referee::verify::verify_replay(&replay)
            .unwrap()
            .is_ok()
    );
    referee.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_are_capped_and_a_budget_spent_to_zero_gasses_out() {
    let long = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen";
    let (model, model_log) = serve_model(long).await;
    let meter = duel_referee::FighterMeter::new(gateway_for(&model), 8_000);
    let prompt = "word ".repeat(7_990);
    let prompt_tokens = count_prompt_tokens(&[ChatMessage::new("user", prompt.clone())]);
    let cap = 8_000 - prompt_tokens;
    assert!(cap > 0 && cap < count_tokens(long));
    let completion = meter
        .complete_detailed(vec![ChatMessage::new("user", prompt)], 0)
        .await
        .unwrap();
    assert_eq!(model_log.requests.lock().unwrap()[0]["max_tokens"], cap);
    assert_eq!(completion.completion_tokens, cap);
    assert_eq!(count_tokens(&completion.text), cap);
    assert!(long.starts_with(&completion.text));
    assert_eq!(completion.budget_left_tokens, 0);
    assert_eq!(meter.tokens_used(), 8_000);
    assert!(meter.gassed_out());
    let refused = meter
        .complete(vec![ChatMessage::new("user", "hi")], 1)
        .await;
    assert!(matches!(refused, Err(ModelError::BudgetExhausted { .. })));
    assert_eq!(
        model_log.requests.lock().unwrap().len(),
        1,
        "a refused call is not forwarded"
    );
    assert_eq!(meter.take_spent(), 8_000);
    assert_eq!(meter.take_spent(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_that_does_not_fit_is_refused_without_counting() {
    let (model, model_log) = serve_model(COMPLETION).await;
    let meter = duel_referee::FighterMeter::new(gateway_for(&model), 10);
    let refused = meter
        .complete(vec![ChatMessage::new("user", "word ".repeat(11))], 1)
        .await;
    assert_eq!(
        refused,
        Err(ModelError::BudgetExhausted {
            prompt_tokens: 12,
            left_tokens: 10
        })
    );
    assert_eq!(meter.tokens_used(), 0);
    assert!(meter.gassed_out());
    assert!(model_log.requests.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_other_fighters_credential_is_refused() {
    let (model, model_log) = serve_model(COMPLETION).await;
    // One log shared by both bots: the publisher leaves its credential there.
    let log = Arc::new(BotLog::default());
    let thief = serve_bot_on(
        loopback().await,
        TestBot {
            behaviour: Behaviour::Steal {
                pause: Duration::from_millis(100),
            },
            log: Arc::clone(&log),
        },
    );
    let victim = serve_bot_on(
        loopback().await,
        TestBot {
            behaviour: Behaviour::Publish,
            log: Arc::clone(&log),
        },
    );
    let referee = serve_referee(serve_config(4, gateway_for(&model))).await;
    let replay = run_match(&referee, request(&thief.url(), &victim.url(), 1_000)).await;
    // The victim's token died with the victim's decision.
    let results = log.inference.lock().unwrap().clone();
    assert!(!results.is_empty());
    assert!(
        results
            .iter()
            .all(|result| *result == Err(tonic::Code::Unauthenticated)),
        "{results:?}"
    );
    assert_eq!(replay.result.tokens_used, [0, 0]);
    assert!(model_log.requests.lock().unwrap().is_empty());
    referee.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_matchs_credential_and_forged_ones_are_refused() {
    let (model, model_log) = serve_model(COMPLETION).await;
    let log = Arc::new(BotLog::default());
    let publisher = serve_bot_on(
        loopback().await,
        TestBot {
            behaviour: Behaviour::Publish,
            log: Arc::clone(&log),
        },
    );
    let referee = serve_referee(serve_config(4, gateway_for(&model))).await;
    run_match(&referee, request(&publisher.url(), "builtin:block", 1_000)).await;
    let (url, old_token) = log.stolen.lock().unwrap().clone().unwrap();
    // Match 2: a thinker in another match uses match 1's (expired) credential.
    let thief = serve_bot_on(
        loopback().await,
        TestBot {
            behaviour: Behaviour::Steal {
                pause: Duration::ZERO,
            },
            log: Arc::clone(&log),
        },
    );
    run_match(&referee, request(&thief.url(), "builtin:block", 1_000)).await;
    {
        let results = log.inference.lock().unwrap();
        assert!(!results.is_empty());
        assert!(
            results
                .iter()
                .all(|result| *result == Err(tonic::Code::Unauthenticated)),
            "{results:?}"
        );
    }
    // Forged and missing credentials, straight at the service.
    let mut client = duel_proto::v1::inference_client::InferenceClient::connect(url)
        .await
        .unwrap();
    for token in [Some("forged"), Some(old_token.as_str()), None] {
        let mut request = tonic::Request::new(pb::CompleteRequest {
            messages: vec![pb::ChatMessage {
                role: "user".into(),
                content: "hi".into(),
            }],
            max_tokens: 1,
        });
        if let Some(token) = token {
            request
                .metadata_mut()
                .insert("authorization", format!("Bearer {token}").parse().unwrap());
        }
        let status = client.complete(request).await.unwrap_err();
        assert_eq!(status.code(), tonic::Code::Unauthenticated, "{token:?}");
    }
    assert!(model_log.requests.lock().unwrap().is_empty());
    referee.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_model_inference_is_unavailable_and_free() {
    let (thinker, bot_log) = serve_bot(think(&[("user", USER)], 4)).await;
    let referee = serve_referee(serve_config(4, Default::default())).await;
    let replay = run_match(&referee, request(&thinker.url(), "builtin:block", 1_000)).await;
    assert_eq!(replay.result.tokens_used, [0, 0]);
    assert!(
        sides(&replay, 0)
            .iter()
            .all(|side| side.source == SourceName::Bot)
    );
    assert!(
        bot_log
            .inference
            .lock()
            .unwrap()
            .iter()
            .all(|result| *result == Err(tonic::Code::Unavailable))
    );
    referee.stop().await;
}

/// Waits until the model has received `count` requests (the calls are in flight).
async fn wait_for_requests(log: &ModelLog, count: usize) {
    while log.requests.lock().unwrap().len() < count {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settling_a_decision_cuts_its_call_in_flight_and_charges_the_prompt_to_it() {
    let (model, model_log) = serve_slow_model(COMPLETION, Duration::from_secs(600)).await;
    let meter = duel_referee::FighterMeter::new(gateway_for(&model), 8_000);
    meter.open_window();
    let messages = vec![
        ChatMessage::new("system", SYSTEM),
        ChatMessage::new("user", USER),
    ];
    let call = tokio::spawn({
        let meter = meter.clone();
        let messages = messages.clone();
        async move { meter.complete_detailed(messages, 16).await }
    });
    wait_for_requests(&model_log, 1).await;
    // The decision ends (answered or abandoned) with the call in flight: its
    // prompt, already forwarded, is this decision's; no completion is.
    let spent = meter.settle();
    assert_eq!(
        (spent.tokens, spent.gassed_out),
        (SYSTEM_TOKENS + USER_TOKENS, false)
    );
    // The call is recorded with the decision, as cut: its prompt, no completion.
    let calls: Vec<_> = spent.calls.iter().map(|call| call.record()).collect();
    assert_eq!(
        calls,
        vec![CallRecord {
            model: "test-model".to_owned(),
            prompt_tokens: SYSTEM_TOKENS + USER_TOKENS,
            completion_tokens: 0,
            outcome: CallOutcome::Cut,
        }]
    );
    let cut = tokio::time::timeout(Duration::from_secs(60), call)
        .await
        .expect("the cut call returns at once, without waiting for the model")
        .unwrap();
    assert_eq!(cut, Err(ModelError::Cut));
    assert_eq!(meter.tokens_used(), SYSTEM_TOKENS + USER_TOKENS);
    // Outside the window nothing is admitted, counted or forwarded, and the
    // next settlement reports nothing more.
    assert_eq!(
        meter.complete(messages, 16).await,
        Err(ModelError::NotDeciding)
    );
    assert_eq!(meter.settle(), Spent::default());
    assert_eq!(model_log.requests.lock().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_dropped_mid_flight_charges_its_prompt_and_frees_its_reservation() {
    let (model, model_log) = serve_slow_model(COMPLETION, Duration::from_secs(600)).await;
    let meter = duel_referee::FighterMeter::new(gateway_for(&model), 100);
    let prompt = vec![ChatMessage::new("user", "word ".repeat(10))];
    let prompt_tokens = count_prompt_tokens(&prompt);
    let call = |meter: duel_referee::FighterMeter| {
        let prompt = prompt.clone();
        // max_tokens 0: the call holds everything left of the budget.
        tokio::spawn(async move { meter.complete_detailed(prompt, 0).await })
    };
    let first = call(meter.clone());
    wait_for_requests(&model_log, 1).await;
    // A WASM decision abandoned at the clock drops its call like this.
    first.abort();
    assert!(first.await.unwrap_err().is_cancelled());
    assert_eq!(meter.tokens_used(), prompt_tokens);
    // Its reservation (the whole budget) is free again: a second call fits.
    let second = call(meter.clone());
    wait_for_requests(&model_log, 2).await;
    let spent = meter.settle();
    assert_eq!((spent.tokens, spent.gassed_out), (2 * prompt_tokens, false));
    let outcomes: Vec<_> = spent
        .calls
        .iter()
        .map(|call| (call.outcome, call.tokens()))
        .collect();
    assert_eq!(
        outcomes,
        vec![
            (CallOutcome::Cut, prompt_tokens),
            (CallOutcome::Cut, prompt_tokens)
        ]
    );
    assert_eq!(second.await.unwrap(), Err(ModelError::Cut));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_call_past_the_wall_clock_is_charged_to_the_decision_that_made_it() {
    // The model never answers within the 200 ms clock: every decision is
    // abandoned with its Inference call in flight.
    let (model, model_log) = serve_slow_model(COMPLETION, Duration::from_secs(600)).await;
    let (thinker, _) = serve_bot(think(&[("system", SYSTEM), ("user", USER)], 16)).await;
    let referee = serve_referee(serve_config(4, gateway_for(&model))).await;
    let replay = run_match(&referee, request(&thinker.url(), "builtin:counter", 200)).await;
    let prompt_tokens = SYSTEM_TOKENS + USER_TOKENS;
    let a = sides(&replay, 0);
    // Each decision is charged its own call's prompt, never a completion and
    // never an earlier decision's late call: that one's token expired with its
    // decision (0 when, on a loaded machine, the call had not been admitted
    // before the clock ran out).
    for side in &a {
        assert_eq!(side.source, SourceName::Timeout, "{side:?}");
        assert!(side.tokens == prompt_tokens || side.tokens == 0, "{side:?}");
    }
    let charged = a.iter().filter(|side| side.tokens > 0).count();
    assert!(charged > 0, "the calls were charged");
    assert!(
        model_log.requests.lock().unwrap().len() <= charged,
        "every call that reached the model was charged"
    );
    assert_eq!(replay.result.tokens_used[0], charged as u64 * prompt_tokens);
    assert!(
        duel_referee::verify::verify_replay(&replay)
            .unwrap()
            .is_ok()
    );
    referee.stop().await;
}

/// A prompt past 1 KiB from a call that names its cap is forwarded while it
/// is counted (`OVERLAP_COUNT_MAX_BYTES`): answered or cut, it is charged its
/// exact count, never the bytes it held meanwhile, and what it held is free
/// again afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_prompt_forwarded_while_counted_is_charged_its_count() {
    let prompt = vec![
        ChatMessage::new("system", SYSTEM),
        ChatMessage::new("user", "word ".repeat(4_000)),
    ];
    let prompt_tokens = count_prompt_tokens(&prompt);
    let prompt_bytes: u64 = prompt
        .iter()
        .map(|message| message.content.len() as u64)
        .sum();
    assert!(prompt_tokens < prompt_bytes / 2, "{prompt_tokens}");

    // Answered: the prompt's count and the completion's.
    let (model, _log) = serve_model(COMPLETION).await;
    let meter = duel_referee::FighterMeter::new(gateway_for(&model), 30_000);
    let answered = meter
        .complete_detailed(prompt.clone(), 16)
        .await
        .expect("answered");
    assert_eq!(
        (answered.prompt_tokens, answered.completion_tokens),
        (prompt_tokens, COMPLETION_TOKENS)
    );
    assert_eq!(
        answered.budget_left_tokens,
        30_000 - prompt_tokens - COMPLETION_TOKENS
    );
    assert_eq!(meter.budget_left_tokens(), answered.budget_left_tokens);

    // Cut in flight: its prompt's count, no completion.
    let (slow, slow_log) = serve_slow_model(COMPLETION, Duration::from_secs(600)).await;
    let meter = duel_referee::FighterMeter::new(gateway_for(&slow), 30_000);
    meter.open_window();
    let call = tokio::spawn({
        let meter = meter.clone();
        let prompt = prompt.clone();
        async move { meter.complete_detailed(prompt, 16).await }
    });
    wait_for_requests(&slow_log, 1).await;
    let spent = meter.settle();
    assert_eq!((spent.tokens, spent.gassed_out), (prompt_tokens, false));
    assert_eq!(spent.calls[0].outcome, CallOutcome::Cut);
    assert_eq!(call.await.unwrap(), Err(ModelError::Cut));
    assert_eq!(meter.budget_left_tokens(), 30_000 - prompt_tokens);
}
