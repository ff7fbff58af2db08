//! Hostile bots are contained: each misbehaviour ends as the right failure cause,
//! on time, and the next decision runs on a fresh instance.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use duel_rules::{Action, Side};
use duel_sandbox::{DecideFailure, FailureCause, SandboxConfig};

const SHORT_CLOCK: Duration = Duration::from_millis(200);
/// Scheduling slack on a loaded 2-core machine.
const SLACK: Duration = Duration::from_millis(400);

fn short_clock() -> SandboxConfig {
    SandboxConfig {
        decision_wall_clock: SHORT_CLOCK,
        // Plenty, so that the clock and not the fuel ends a runaway loop.
        fuel_per_decision: u64::MAX / 2,
        ..SandboxConfig::default()
    }
}

async fn first_decision(
    config: SandboxConfig,
    mode: &str,
) -> (
    Result<Action, DecideFailure>,
    Duration,
    duel_sandbox::BotInstance,
) {
    let sandbox = sandbox(config);
    let hostile = load(&sandbox, "hostile");
    let mut bot = instance(&hostile, mode, 1, Side::A);
    let bout = Bout::new(mode);
    let started = Instant::now();
    let result = bot.decide(&bout.observation(Side::A)).await;
    (result, started.elapsed(), bot)
}

fn expect_failure(result: &Result<Action, DecideFailure>, cause: FailureCause, needle: &str) {
    match result {
        Err(failure) => {
            assert_eq!(failure.cause, cause, "{failure}");
            assert!(
                failure.reason.contains(needle),
                "reason {:?} lacks {needle:?}",
                failure.reason
            );
            assert!(
                failure.reason.chars().count() <= duel_sandbox::limits::FAILURE_REASON_CHARS_MAX
            );
        }
        Ok(action) => panic!("expected {cause:?}, got {action:?}"),
    }
}

#[tokio::test]
async fn an_infinite_loop_times_out_on_time() {
    let (result, elapsed, bot) = first_decision(short_clock(), "loop").await;
    expect_failure(&result, FailureCause::Timeout, "no answer within");
    assert!(elapsed >= SHORT_CLOCK, "{elapsed:?}");
    assert!(elapsed < SHORT_CLOCK + SLACK, "cut off late: {elapsed:?}");
    assert_eq!(bot.stats().timeouts, 1);
}

#[tokio::test]
async fn a_sleep_past_the_deadline_times_out_on_time() {
    let (result, elapsed, _bot) = first_decision(short_clock(), "sleep").await;
    expect_failure(&result, FailureCause::Timeout, "no answer within");
    assert!(elapsed < SHORT_CLOCK + SLACK, "cut off late: {elapsed:?}");
}

#[tokio::test]
async fn a_loop_under_a_small_fuel_cap_is_a_fault() {
    let config = SandboxConfig {
        fuel_per_decision: 50_000_000,
        ..SandboxConfig::default()
    };
    let (result, elapsed, _bot) = first_decision(config, "loop").await;
    expect_failure(&result, FailureCause::Fault, "fuel");
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
}

#[tokio::test]
async fn burning_nearly_all_the_fuel_is_accepted_and_a_little_more_is_not() {
    // Measure what the work costs, then cap the fuel just above and just below.
    let (result, _, bot) = first_decision(SandboxConfig::default(), "spin:2000000").await;
    assert_eq!(result, Ok(Action::Jab));
    let needed = bot.stats().last_fuel_used;
    assert!(needed > 2_000_000, "{needed}");
    let generous = SandboxConfig {
        fuel_per_decision: needed + needed / 50,
        ..SandboxConfig::default()
    };
    let (result, _, _) = first_decision(generous, "spin:2000000").await;
    assert_eq!(result, Ok(Action::Jab));
    let short = SandboxConfig {
        fuel_per_decision: needed - needed / 50,
        ..SandboxConfig::default()
    };
    let (result, _, _) = first_decision(short, "spin:2000000").await;
    expect_failure(&result, FailureCause::Fault, "fuel");
}

#[tokio::test]
async fn outrunning_the_clock_before_the_fuel_is_a_timeout() {
    let config = SandboxConfig {
        decision_wall_clock: SHORT_CLOCK,
        fuel_per_decision: 1_000_000_000_000,
        ..SandboxConfig::default()
    };
    let (result, elapsed, _) = first_decision(config, "loop").await;
    expect_failure(&result, FailureCause::Timeout, "no answer within");
    assert!(elapsed < SHORT_CLOCK + SLACK, "{elapsed:?}");
}

#[tokio::test]
async fn allocating_until_the_cap_is_a_fault() {
    let config = SandboxConfig {
        memory_bytes_max: 32 * 1024 * 1024,
        ..SandboxConfig::default()
    };
    let (result, _, _) = first_decision(config, "alloc").await;
    expect_failure(&result, FailureCause::Fault, "memory cap");
}

#[tokio::test]
async fn deep_recursion_is_a_fault() {
    let (result, elapsed, _) = first_decision(SandboxConfig::default(), "recurse").await;
    assert_eq!(
        result.as_ref().map_err(|f| f.cause),
        Err(FailureCause::Fault),
        "{result:?}"
    );
    assert!(elapsed < Duration::from_secs(5));
}

#[tokio::test]
async fn a_panic_is_a_fault_and_the_next_decision_runs_fresh() {
    let sandbox = sandbox(SandboxConfig::default());
    let hostile = load(&sandbox, "hostile");
    let mut bot = instance(&hostile, "panic-first", 1, Side::A);
    let mut bout = Bout::new("panic-first");
    let first = bot.decide(&bout.observation(Side::A)).await;
    expect_failure(&first, FailureCause::Fault, "unreachable");
    let reason = first.unwrap_err().reason;
    assert!(
        reason.contains("panicked: hostile bot panics on purpose"),
        "the panic message is kept: {reason}"
    );
    bout.play([
        (Action::Block, duel_rules::Source::Fault),
        (Action::Block, duel_rules::Source::Bot),
    ]);
    let second = bot.decide(&bout.observation(Side::A)).await;
    assert_eq!(second, Ok(Action::Jab));
    assert_eq!(bot.stats().instantiations, 2);
    assert_eq!(bot.stats().faults, 1);
}

#[tokio::test]
async fn exit_is_a_fault() {
    let (result, _, _) = first_decision(SandboxConfig::default(), "exit").await;
    // WASI 0.2 `exit` carries only success or failure: any non-zero code is 1.
    expect_failure(&result, FailureCause::Fault, "exited with code 1");
}

#[tokio::test]
async fn output_spam_is_bounded_and_harmless() {
    for mode in ["spam", "log-spam"] {
        let config = SandboxConfig {
            log_bytes_per_match: 10_000,
            ..SandboxConfig::default()
        };
        let (result, _, bot) = first_decision(config, mode).await;
        assert_eq!(result, Ok(Action::Jab), "{mode}");
        assert_eq!(bot.log_text().len(), 10_000, "{mode}");
        assert!(
            bot.log_dropped_bytes() > 10_000_000,
            "{mode}: {}",
            bot.log_dropped_bytes()
        );
    }
}

#[tokio::test]
async fn hundreds_of_hostile_decisions_leave_the_host_healthy() {
    let sandbox = sandbox(SandboxConfig {
        decision_wall_clock: Duration::from_millis(50),
        fuel_per_decision: 200_000_000,
        memory_bytes_max: 16 * 1024 * 1024,
        ..SandboxConfig::default()
    });
    let hostile = load(&sandbox, "hostile");
    let jabber = load(&sandbox, "jabber");
    for round in 0..60 {
        for mode in ["panic-first", "alloc", "exit", "recurse", "loop"] {
            let mut bot = instance(&hostile, mode, round, Side::A);
            let bout = Bout::new(mode);
            assert!(
                bot.decide(&bout.observation(Side::A)).await.is_err(),
                "{mode}"
            );
        }
        let mut good = instance(&jabber, "m", round, Side::B);
        let bout = Bout::new("m");
        assert_eq!(
            good.decide(&bout.observation(Side::B)).await,
            Ok(Action::Jab)
        );
    }
}

#[tokio::test]
async fn an_action_out_of_range_is_a_fault_and_one_in_range_is_played() {
    let sandbox = sandbox(SandboxConfig::default());
    // The same hand-made component answering FEINT (4) is a valid bot: what
    // fails below is the value, not the way the component was made.
    let feint = sandbox.load(&handmade::component_answering(4)).unwrap();
    let mut bot = instance(&feint, "m", 1, Side::A);
    let mut bout = Bout::new("m");
    for _ in 0..3 {
        assert_eq!(
            bot.decide(&bout.observation(Side::A)).await,
            Ok(Action::Feint)
        );
        bout.play([
            (Action::Feint, duel_rules::Source::Bot),
            (Action::Jab, duel_rules::Source::Bot),
        ]);
    }
    assert_eq!(bot.stats().instantiations, 1);
    // 6 is one past RECOVER; 260 would read as FEINT if truncated to a byte.
    for discriminant in [6, 99, 260, u32::MAX] {
        let bad = sandbox
            .load(&handmade::component_answering(discriminant))
            .unwrap();
        let mut bot = instance(&bad, "m", 1, Side::A);
        let mut bout = Bout::new("m");
        for decision in 1..=2 {
            let result = bot.decide(&bout.observation(Side::A)).await;
            expect_failure(&result, FailureCause::Fault, "discriminant");
            bout.play([
                (Action::Block, duel_rules::Source::Fault),
                (Action::Jab, duel_rules::Source::Bot),
            ]);
            assert_eq!(bot.stats().faults, decision);
            assert_eq!(bot.stats().instantiations, decision, "afresh each time");
        }
    }
}

#[tokio::test]
async fn hostile_bots_overflowing_a_full_pool_are_contained_the_same_way() {
    let sandbox = sandbox(SandboxConfig {
        memory_bytes_max: 32 * 1024 * 1024,
        allocation: duel_sandbox::Allocation::Pooling { instances: 1 },
        ..short_clock()
    });
    let jabber = load(&sandbox, "jabber");
    let hostile = load(&sandbox, "hostile");
    // The pool's one slot stays taken: every hostile instance is made on demand.
    let mut holder = instance(&jabber, "held", 1, Side::A);
    let bout = Bout::new("held");
    assert_eq!(
        holder.decide(&bout.observation(Side::A)).await,
        Ok(Action::Jab)
    );
    let cases = [
        ("loop", FailureCause::Timeout, "no answer within"),
        ("alloc", FailureCause::Fault, "memory cap"),
        ("exit", FailureCause::Fault, "exited"),
        ("panic-first", FailureCause::Fault, "unreachable"),
    ];
    for (mode, cause, needle) in cases {
        let mut bot = instance(&hostile, mode, 1, Side::A);
        let mut bout = Bout::new(mode);
        let started = Instant::now();
        let result = bot.decide(&bout.observation(Side::A)).await;
        expect_failure(&result, cause, needle);
        assert!(started.elapsed() < SHORT_CLOCK + SLACK, "{mode}");
        // And the next decision (past the exchange it panics at) runs on a
        // fresh instance, again on demand.
        if mode == "panic-first" {
            bout.play([
                (Action::Block, duel_rules::Source::Fault),
                (Action::Jab, duel_rules::Source::Bot),
            ]);
            assert_eq!(
                bot.decide(&bout.observation(Side::A)).await,
                Ok(Action::Jab)
            );
        }
    }
    let stats = sandbox.stats();
    assert_eq!(stats.pool_instantiations, 1);
    assert!(stats.on_demand_instantiations >= 5, "{stats:?}");
    assert_eq!(
        holder.decide(&bout.observation(Side::A)).await,
        Ok(Action::Jab)
    );
}
