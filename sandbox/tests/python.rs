//! The Python example bot (componentize-py) under the real sandbox.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use duel_rules::{Action, Side, Source};
use duel_sandbox::{FailureCause, SandboxConfig};

#[tokio::test]
async fn the_python_bot_plays_a_match() {
    let sandbox = sandbox(SandboxConfig::default());
    let python = load(&sandbox, "python-bot");
    let jabber = load(&sandbox, "jabber");
    let mut a = instance(&python, "py-1", 5, Side::A);
    let mut b = instance(&jabber, "py-1", 5, Side::B);
    let bout = play_match(&mut a, &mut b, "py-1").await;
    assert!(bout.state.is_over());
    assert!(
        bout.tape.iter().all(|e| e.sides[0].source == Source::Bot),
        "{:?}",
        a.log_text()
    );
    assert_eq!(a.stats().instantiations, 1);
    let log = a.log_text();
    assert!(
        log.contains("model refused: ModelError_Unavailable"),
        "{log}"
    );
    assert!(log.contains("decision 1 draw="), "{log}");
}

#[tokio::test]
async fn the_python_bot_is_deterministic() {
    let sandbox = sandbox(SandboxConfig::default());
    let python = load(&sandbox, "python-bot");
    let mut logs = Vec::new();
    for _ in 0..2 {
        let mut a = instance(&python, "py-2", 9, Side::A);
        let mut b = instance(&python, "py-2", 9, Side::B);
        let bout = play_match(&mut a, &mut b, "py-2").await;
        logs.push((a.log_text(), b.log_text(), bout.tape));
    }
    assert_eq!(logs[0], logs[1]);
    assert_ne!(logs[0].0, logs[0].1, "the sides draw differently");
}

#[tokio::test]
async fn stdout_spam_does_not_kill_a_python_bot() {
    let sandbox = sandbox(SandboxConfig {
        log_bytes_per_match: 4096,
        ..SandboxConfig::default()
    });
    let python = load(&sandbox, "python-bot");
    let mut bot = instance(&python, "spam", 1, Side::A);
    let bout = Bout::new("spam");
    let action = bot.decide(&bout.observation(Side::A)).await;
    assert!(action.is_ok(), "{action:?}");
    assert_eq!(bot.log_text().len(), 4096);
    assert!(bot.log_dropped_bytes() > 1_000_000);
}

#[tokio::test]
async fn a_python_exception_is_a_fault_with_its_message() {
    let sandbox = sandbox(SandboxConfig::default());
    let python = load(&sandbox, "python-bot");
    let mut bot = instance(&python, "raise", 1, Side::A);
    let bout = Bout::new("raise");
    let failure = bot.decide(&bout.observation(Side::A)).await.unwrap_err();
    assert_eq!(failure.cause, FailureCause::Fault);
    assert!(
        failure.reason.contains("python bot raises on purpose"),
        "{failure}\n{}",
        bot.log_text()
    );
}

#[tokio::test]
async fn the_python_bot_fits_the_default_memory_cap() {
    let sandbox = sandbox(SandboxConfig::default());
    let python = load(&sandbox, "python-bot");
    let mut bot = instance(&python, "bigdict", 1, Side::A);
    let bout = Bout::new("bigdict");
    let action = bot.decide(&bout.observation(Side::A)).await;
    assert!(
        matches!(action, Ok(Action::Jab | Action::Dodge)),
        "{action:?}"
    );
    let peak = bot.stats().memory_bytes;
    eprintln!(
        "python bot memory after a 100k-entry dict: {} MiB",
        peak / (1024 * 1024)
    );
    assert!(
        peak < SandboxConfig::default().memory_bytes_max / 2,
        "{peak}"
    );
}
