//! The example bots decide correctly under the real sandbox, keep their memory over
//! a match, and reach the model through the port.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use duel_rules::{Action, Side, Source};
use duel_sandbox::{
    BotContext, Message, ModelAnswer, ModelCall, ModelError, ModelFuture, ModelPort, SandboxConfig,
};

#[tokio::test]
async fn rust_bots_play_a_full_match() {
    let sandbox = sandbox(SandboxConfig::default());
    let jabber = load(&sandbox, "jabber");
    let counter = load(&sandbox, "counter");
    assert!(jabber.digest().starts_with("sha256:"));
    let mut a = instance(&jabber, "m-1", 1, Side::A);
    let mut b = instance(&counter, "m-1", 1, Side::B);
    let bout = play_match(&mut a, &mut b, "m-1").await;
    assert!(bout.state.is_over());
    assert!(
        bout.tape.len() >= 24,
        "at least two rounds of 12 exchanges, or KOs"
    );
    for entry in &bout.tape {
        assert_eq!(entry.sides[0].source, Source::Bot, "{entry:?}");
        assert_eq!(entry.sides[1].source, Source::Bot, "{entry:?}");
    }
    // The jabber jabs from full stamina.
    assert_eq!(bout.tape[0].sides[0].action, Action::Jab);
    assert_eq!(
        a.stats().instantiations,
        1,
        "one instance for the whole match"
    );
    assert_eq!(b.stats().instantiations, 1);
    assert_eq!(a.stats().faults + a.stats().timeouts, 0);
}

#[tokio::test]
async fn the_tape_reader_punishes_a_blocker_with_feint() {
    let sandbox = sandbox(SandboxConfig::default());
    let counter = load(&sandbox, "counter");
    let mut bot = instance(&counter, "m-2", 1, Side::B);
    let mut bout = Bout::new("m-2");
    // Fighter a (the other side) blocks three times.
    for _ in 0..3 {
        let mine = ask(&mut bot, &bout, Side::B).await;
        bout.play([(Action::Block, Source::Fault), mine]);
    }
    let next = bot.decide(&bout.observation(Side::B)).await.unwrap();
    assert_eq!(next, Action::Feint);
}

#[tokio::test]
async fn every_example_bot_answers() {
    let sandbox = sandbox(SandboxConfig::default());
    for name in ["jabber", "counter", "pacer", "oracle", "dice"] {
        let bot = load(&sandbox, name);
        let mut a = instance(&bot, "m-3", 3, Side::A);
        let mut b = instance(&bot, "m-3", 3, Side::B);
        let bout = play_match(&mut a, &mut b, "m-3").await;
        let substituted = bout
            .tape
            .iter()
            .flat_map(|e| e.sides)
            .filter(|s| s.source != Source::Bot)
            .count();
        assert_eq!(substituted, 0, "{name} failed some decisions");
    }
}

#[tokio::test]
async fn memory_persists_across_the_decisions_of_a_match() {
    let sandbox = sandbox(SandboxConfig::default());
    let hostile = load(&sandbox, "hostile");
    let mut bot = instance(&hostile, "count", 1, Side::A);
    let mut bout = Bout::new("count");
    for expected in Action::ALL.into_iter().chain(Action::ALL) {
        let (action, source) = ask(&mut bot, &bout, Side::A).await;
        assert_eq!((action, source), (expected, Source::Bot));
        bout.play([(action, source), (Action::Block, Source::Bot)]);
    }
    assert_eq!(bot.stats().instantiations, 1);
    assert!(bot.stats().memory_bytes > 0);
}

/// Refuses every call, as a spent budget does, and counts the calls.
#[derive(Debug, Default)]
struct Refusing {
    calls: Mutex<Vec<(Vec<Message>, u32)>>,
}

impl ModelPort for Refusing {
    fn complete(&self, call: ModelCall) -> ModelFuture<'_> {
        self.calls
            .lock()
            .unwrap()
            .push((call.messages, call.max_tokens));
        Box::pin(async { Err(ModelError::BudgetExhausted) })
    }

    fn models(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A catalogue of two models that echo their name; any other name is refused.
#[derive(Debug, Default)]
struct Catalogue {
    calls: Mutex<Vec<String>>,
}

impl ModelPort for Catalogue {
    fn complete(&self, call: ModelCall) -> ModelFuture<'_> {
        self.calls.lock().unwrap().push(call.model.clone());
        Box::pin(async move {
            match call.model.as_str() {
                "alpha" | "beta" => Ok(ModelAnswer {
                    text: format!("from {}", call.model),
                    model: call.model,
                    prompt_tokens: 1,
                    completion_tokens: 2,
                    budget_left_tokens: 97,
                }),
                other => Err(ModelError::Invalid(format!("no model `{other}`"))),
            }
        })
    }

    fn models(&self) -> Vec<String> {
        vec!["alpha".to_owned(), "beta".to_owned()]
    }
}

/// A `duel:bot@1.1.0` bot lists the catalogue, names each model, and sees an
/// unknown one refused as `invalid`.
#[tokio::test]
async fn a_1_1_0_bot_chooses_its_models() {
    let sandbox = sandbox(SandboxConfig::default());
    let hostile = load(&sandbox, "hostile");
    assert_eq!(hostile.world(), duel_sandbox::WorldVersion::V1_1_0);
    let port = Arc::new(Catalogue::default());
    let context = BotContext {
        match_id: "model-choice".into(),
        seed: 1,
        side: Side::A,
    };
    let mut bot = hostile.instantiate(context, port.clone());
    let bout = Bout::new("model-choice");
    assert_eq!(
        bot.decide(&bout.observation(Side::A)).await,
        Ok(Action::Block)
    );
    assert_eq!(
        *port.calls.lock().unwrap(),
        vec![
            "alpha".to_owned(),
            "beta".to_owned(),
            "no-such-model".to_owned()
        ]
    );
    let log = bot.log_text();
    assert!(log.contains("alpha=Ok(Completion { text: \"from alpha\", model: \"alpha\", prompt_tokens: 1, completion_tokens: 2, budget_left_tokens: 97 })"), "{log}");
    assert!(
        log.contains(
            "models=[\"alpha\", \"beta\"] missing=Err(Invalid(\"no model `no-such-model`\"))"
        ),
        "{log}"
    );
}

#[tokio::test]
async fn model_calls_reach_the_port_and_refusals_reach_the_bot() {
    let sandbox = sandbox(SandboxConfig::default());
    let hostile = load(&sandbox, "hostile");
    let port = Arc::new(Refusing::default());
    let context = BotContext {
        match_id: "model-twice".into(),
        seed: 1,
        side: Side::A,
    };
    let mut bot = hostile.instantiate(context, port.clone());
    let bout = Bout::new("model-twice");
    assert_eq!(
        bot.decide(&bout.observation(Side::A)).await,
        Ok(Action::Block)
    );
    let calls = port.calls.lock().unwrap().clone();
    assert_eq!(
        calls.len(),
        2,
        "calling again after a refusal is allowed and refused again"
    );
    assert_eq!(calls[0].0[0].content, "hi");
    assert_eq!(calls[0].1, 4);
    assert_eq!(bot.stats().model_calls, 2);
    assert!(
        bot.log_text()
            .contains("first=Err(BudgetExhausted) second=Err(BudgetExhausted)"),
        "{}",
        bot.log_text()
    );
}

#[tokio::test]
async fn without_a_model_the_oracle_plays_on_alone() {
    let sandbox = sandbox(SandboxConfig::default());
    let oracle = load(&sandbox, "oracle");
    let jabber = load(&sandbox, "jabber");
    let mut a = instance(&oracle, "m-4", 1, Side::A);
    let mut b = instance(&jabber, "m-4", 1, Side::B);
    let bout = play_match(&mut a, &mut b, "m-4").await;
    assert!(bout.tape.iter().all(|e| e.sides[0].source == Source::Bot));
    assert_eq!(
        a.stats().model_calls,
        1,
        "asks once, is refused, never asks again"
    );
    assert!(a.log_text().contains("model refused"));
}

/// The chatter bot writes with `log`, `println!` and `eprintln!`: each decision
/// hands back its own lines in the order written, bounded per decision, and a
/// panic's message is among the lines of the decision that faulted.
#[tokio::test]
async fn each_decision_hands_back_what_the_bot_wrote_during_it() {
    let sandbox = sandbox(SandboxConfig::default());
    let chatter = load(&sandbox, "chatter");
    let mut bot = instance(&chatter, "chat", 1, Side::A);
    let mut bout = Bout::new("chat");

    let first = ask(&mut bot, &bout, Side::A).await;
    assert_eq!(first, (Action::Jab, Source::Bot));
    let log = bot.take_decision_log();
    assert_eq!(
        log.lines,
        [
            "log: decision 1, round 1 exchange 1",
            "stdout: hp 160 stamina 100",
            "stderr: opponent hp 160",
        ],
        "{log:?}"
    );
    assert!(!log.truncated);
    assert_eq!(
        bot.take_decision_log(),
        duel_sandbox::DecisionLog::default(),
        "taken once"
    );
    bout.play([first, (Action::Block, Source::Bot)]);

    let second = ask(&mut bot, &bout, Side::A).await;
    bout.play([second, (Action::Block, Source::Bot)]);
    let log = bot.take_decision_log();
    let limits = SandboxConfig::default();
    assert!(log.truncated, "{log:?}");
    assert_eq!(log.lines.len(), limits.log_lines_per_decision);
    assert_eq!(log.lines[0], "log: decision 2, round 1 exchange 2");
    let long = &log.lines[3];
    assert!(
        long.len() <= limits.log_line_bytes && long.ends_with("x…"),
        "{long}"
    );
    assert_eq!(log.lines[4], "line 0");

    let third = bot.decide(&bout.observation(Side::A)).await;
    let failure = third.unwrap_err();
    assert!(
        failure.reason.contains("panicked: index out of bounds"),
        "{failure}"
    );
    let log = bot.take_decision_log();
    assert_eq!(log.lines[0], "log: decision 3, round 1 exchange 3");
    assert!(
        log.lines
            .iter()
            .any(|line| line.contains("index out of bounds")),
        "{log:?}"
    );
}
