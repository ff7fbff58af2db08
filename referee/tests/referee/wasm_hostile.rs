//! Hostile WASM bots through the referee: whole matches of the `hostile` example
//! component against a built-in bot. The match id picks the misbehaviour and the
//! exchanges it happens at (`MODE@N,M`, see examples/bots/hostile); at the other
//! exchanges the bot counts through the actions, so a fresh instance shows. For
//! each misbehaviour: the match completes, the replay names the cause with a short
//! reason at exactly those exchanges, the next decision is marked `restarted`
//! (and the count starts over: the bot's memory is gone), and the built-in
//! opponent plays every exchange itself, as re-running it from the tape gives.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::handmade;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use duel_referee::bot::Bot;
use duel_referee::builtin::BuiltinBot;
use duel_referee::limits::MAX_REASON_BYTES;
use duel_referee::record::{Answer, MatchRecorder};
use duel_referee::verify::verify_replay;
use duel_referee::wasm::WasmBot;
use duel_referee::{
    BotSpec, Decision, Fighter, HostConfig, MatchConfig, MatchHost, MatchOptions, ModelGateway,
    run_match,
};
use duel_replays::{FighterInfo, FighterKind, Replay, SideRecord, SourceName};
use duel_rules::{Action, Side, Source, WeightClass};
use duel_sandbox::{NoModel, Sandbox, SandboxConfig};

/// The wall clock per decision in these matches: short, so a match with two
/// timeouts takes well under a second of waiting.
const CLOCK: Duration = Duration::from_millis(300);
/// For misbehaviour that must not end as a timeout (faults, output spam): room
/// for a loaded machine, still below the rules' 10 s.
const GENEROUS_CLOCK: Duration = Duration::from_secs(5);
/// How late past the clock a cut-off may land on a loaded 2-core machine. A
/// sleeper that was not cut off would answer after 30 s.
const CUT_OFF_SLACK_MS: u64 = 1_000;
const SEED: u64 = 11;
const OPPONENT: &str = "builtin:counter";

fn bot_path(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/bots")
        .join(format!("{name}.wasm"));
    assert!(
        path.exists(),
        "{} is missing: run scripts/build-bots (scripts/test.sh does)",
        path.display()
    );
    path
}

fn match_config(match_id: &str, clock: Duration) -> MatchConfig {
    let mut config = MatchConfig::new(
        match_id.to_owned(),
        "2026-11-29T12:00:00Z".to_owned(),
        WeightClass::Middle,
        SEED,
    );
    config.decision_wall_clock = clock;
    config
}

fn opponent() -> BuiltinBot {
    let Ok(BotSpec::Builtin(spec)) = BotSpec::parse(OPPONENT) else {
        panic!("{OPPONENT} is a built-in spec");
    };
    BuiltinBot::new(spec, SEED, Side::B)
}

/// A match of the WASM bot at `path`, built as `referee local` builds it (the
/// process's sandbox, default limits, an instance pool for one match),
/// against the built-in opponent.
async fn play(path: &Path, match_id: &str, clock: Duration) -> Replay {
    let host = MatchHost::new(HostConfig::new(ModelGateway::disabled()).playing_at_once(1));
    let mut options = MatchOptions::new(WeightClass::Middle)
        .seed(SEED)
        .wall_clock(clock);
    options.match_id = Some(match_id.to_owned());
    options.accepted_at = Some("2026-11-29T12:00:00Z".to_owned());
    let session = host
        .prepare(
            [
                Fighter::from(BotSpec::Wasm(path.to_owned())),
                Fighter::from(BotSpec::parse(OPPONENT).unwrap()),
            ],
            options,
        )
        .await
        .unwrap();
    session.play(&mut |_: &_, _: &_| {}).await.replay
}

/// The same with the hostile bot in a sandbox of its own limits (fuel caps).
async fn play_limited(limits: SandboxConfig, match_id: &str) -> Replay {
    let clock = limits.decision_wall_clock;
    let sandbox = Sandbox::new(limits).unwrap();
    let path = bot_path("hostile");
    let loaded = sandbox.load(&std::fs::read(&path).unwrap()).unwrap();
    let config = match_config(match_id, clock);
    let meter = duel_referee::FighterMeter::new(ModelGateway::disabled(), config.budget_tokens());
    let context = duel_sandbox::BotContext {
        match_id: match_id.to_owned(),
        seed: SEED,
        side: Side::A,
    };
    let mut wasm = WasmBot::new(&path, loaded, context, meter);
    let mut builtin = opponent();
    run_match(config, [&mut wasm, &mut builtin]).await
}

/// What the WASM fighter plays when it does not misbehave.
#[derive(Clone, Copy, Debug)]
enum Plays {
    /// The hostile bot's count: JAB, HEAVY, … by decisions of its instance.
    Count,
    Always(Action),
}

/// Asserts the replay of a match where fighter A failed with `cause` at exactly
/// the exchanges `failing` picks (1-based across rounds), and B was unaffected.
fn assert_contained(
    replay: &Replay,
    failing: impl Fn(usize) -> bool,
    cause: Source,
    reason_needle: &str,
    plays: Plays,
) {
    let verified = verify_replay(replay)
        .unwrap()
        .unwrap_or_else(|disagreement| panic!("the replay verifies: {disagreement}"));
    assert_eq!(
        verified.substitutions[1], 0,
        "the built-in opponent is never substituted"
    );
    let records: Vec<&SideRecord> = replay
        .exchanges()
        .map(|(_, exchange)| &exchange.a)
        .collect();
    assert!(records.len() >= 5, "round 1 lasts five exchanges at least");
    let mut decisions_of_instance = 0;
    for (index, record) in records.iter().enumerate() {
        let n = index + 1;
        let source = Source::from(record.source);
        if failing(n) {
            assert_eq!(source, cause, "exchange {n}: {record:?}");
            assert_eq!(Action::from(record.action), Action::Block, "the fallback");
            let reason = record.reason().unwrap_or_default();
            assert!(
                reason.contains(reason_needle),
                "exchange {n}: reason {reason:?} lacks {reason_needle:?}"
            );
            assert!(reason.len() <= MAX_REASON_BYTES + '…'.len_utf8());
            assert!(!reason.contains('\n'));
            if cause == Source::Timeout {
                let clock_ms = u64::try_from(CLOCK.as_millis()).unwrap();
                assert!(
                    (clock_ms..clock_ms + CUT_OFF_SLACK_MS).contains(&record.latency_ms),
                    "exchange {n}: cut off after {} ms, clock {clock_ms} ms",
                    record.latency_ms
                );
            }
            decisions_of_instance = 0;
        } else {
            assert_eq!(source, Source::Bot, "exchange {n}: {record:?}");
            assert_eq!(record.reason(), None, "exchange {n}");
            decisions_of_instance += 1;
            let expected = match plays {
                Plays::Count => Action::ALL[(decisions_of_instance - 1) % 6],
                Plays::Always(action) => action,
            };
            assert_eq!(Action::from(record.action), expected, "exchange {n}");
        }
        let after_failure = n > 1 && failing(n - 1);
        assert_eq!(
            record.restarted, after_failure,
            "exchange {n}: restarted exactly after a failure"
        );
    }
    for (_, exchange) in replay.exchanges() {
        assert_eq!(Source::from(exchange.b.source), Source::Bot);
        assert_eq!(exchange.b.reason(), None);
        assert!(!exchange.b.restarted);
    }
    // The file says it too, and reads back the same.
    let json = replay.to_json_pretty();
    let restarts = records.iter().filter(|record| record.restarted).count();
    assert_eq!(json.matches("\"restarted\": true").count(), restarts);
    assert!(
        !json.contains("\"restarted\": false"),
        "written only when true"
    );
    assert_eq!(&Replay::from_slice(json.as_bytes()).unwrap(), replay);
}

/// Misbehaving at exchanges 2 and 5 (both in round 1, which always lasts that
/// long: no fighter can take 160 HP in five exchanges).
const AT: &str = "@2,5";
fn at_2_and_5(n: usize) -> bool {
    n == 2 || n == 5
}

/// The hostile bot misbehaving as `mode` at exchanges 2 and 5. Timeouts are
/// tested under the short clock; everything else under a generous one, so that
/// what ends the decision is the misbehaviour, not a loaded machine.
async fn hostile(mode: &str, clock: Duration) -> Replay {
    play(&bot_path("hostile"), &format!("{mode}{AT}"), clock).await
}

#[tokio::test]
async fn an_infinite_loop_is_a_timeout_on_time_and_the_bot_restarts() {
    let replay = hostile("loop", CLOCK).await;
    assert_contained(&replay, at_2_and_5, Source::Timeout, "", Plays::Count);
    assert_eq!(replay.wall_clock_ms, Some(300));
}

#[tokio::test]
async fn sleeping_through_the_wasi_clock_is_a_timeout_on_time() {
    let replay = hostile("sleep", CLOCK).await;
    assert_contained(&replay, at_2_and_5, Source::Timeout, "", Plays::Count);
}

#[tokio::test]
async fn allocating_until_the_memory_cap_is_a_fault() {
    let replay = hostile("alloc", GENEROUS_CLOCK).await;
    assert_contained(
        &replay,
        at_2_and_5,
        Source::Fault,
        "memory cap",
        Plays::Count,
    );
}

#[tokio::test]
async fn deep_recursion_is_a_fault() {
    let replay = hostile("recurse", GENEROUS_CLOCK).await;
    assert_contained(&replay, at_2_and_5, Source::Fault, "", Plays::Count);
}

#[tokio::test]
async fn a_panic_is_a_fault_that_keeps_the_panic_message() {
    let replay = hostile("panic", GENEROUS_CLOCK).await;
    assert_contained(
        &replay,
        at_2_and_5,
        Source::Fault,
        "panicked: hostile bot panics on purpose",
        Plays::Count,
    );
    // The tape shows it: the faults, the restarts (↺) and a summary.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("panic.json");
    replay.write(&file).unwrap();
    let shown = std::process::Command::new(env!("CARGO_BIN_EXE_referee"))
        .args(["replay", "show", "--color", "never"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(shown.status.success());
    let tape = String::from_utf8(shown.stdout).unwrap();
    let line = |n: &str| {
        tape.lines()
            .find(|line| line.trim_start().starts_with(&format!("{n} ")))
            .unwrap_or_else(|| panic!("no exchange {n} in {tape}"))
            .to_owned()
    };
    assert!(
        line("2").contains("BLOCK (fault: panicked: hostile bot panics on"),
        "{tape}"
    );
    assert!(line("3").contains("JAB ↺"), "{tape}");
    assert!(!line("4").contains('↺'), "{tape}");
    assert!(line("6").contains("JAB ↺"), "{tape}");
    assert!(tape.contains("2 fault · ↺ restarted 2 times"), "{tape}");
}

#[tokio::test]
async fn exiting_is_a_fault() {
    let replay = hostile("exit", GENEROUS_CLOCK).await;
    assert_contained(&replay, at_2_and_5, Source::Fault, "exited", Plays::Count);
}

/// Misbehaviour that is no failure: the bot keeps its instance and its memory
/// (the count goes on), and every answer is its own.
/// `misbehaving` picks the exchanges where the bot answers `answer`.
fn assert_harmless(replay: &Replay, misbehaving: impl Fn(usize) -> bool, answer: Action) {
    let verified = verify_replay(replay).unwrap().unwrap();
    let substituted: Vec<_> = replay
        .exchanges()
        .flat_map(|(_, exchange)| [&exchange.a, &exchange.b])
        .filter(|side| side.source != SourceName::Bot)
        .map(|side| (side.source, side.reason().map(str::to_owned)))
        .collect();
    assert_eq!(verified.substitutions, [0, 0], "{substituted:?}");
    for (index, (_, exchange)) in replay.exchanges().enumerate() {
        let n = index + 1;
        let expected = if misbehaving(n) {
            answer
        } else {
            Action::ALL[index % 6]
        };
        assert_eq!(Action::from(exchange.a.action), expected, "exchange {n}");
        assert_eq!(Source::from(exchange.a.source), Source::Bot, "exchange {n}");
        assert!(!exchange.a.restarted);
        assert_eq!(exchange.a.tokens, 0);
    }
}

#[tokio::test]
async fn output_spam_far_beyond_the_cap_is_dropped_and_harmless() {
    // Writing megabytes through the host takes seconds on a loaded 2-core
    // machine: the rules' own 10-second clock, so only harm would fail this.
    for mode in ["spam", "log-spam"] {
        let replay = play(
            &bot_path("hostile"),
            &format!("{mode}{AT}"),
            duel_referee::limits::DECISION_WALL_CLOCK,
        )
        .await;
        assert_harmless(&replay, at_2_and_5, Action::Jab);
    }
}

#[tokio::test]
async fn calling_the_model_again_after_a_refusal_is_harmless() {
    // No model is configured: both calls of each decision are refused as
    // unavailable, cost no tokens, and the bot decides without the model.
    let replay = play(
        &bot_path("hostile"),
        &format!("model-twice{AT}"),
        GENEROUS_CLOCK,
    )
    .await;
    assert_harmless(&replay, at_2_and_5, Action::Block);
    assert_eq!(replay.result.tokens_used, [0, 0]);
}

/// The fuel the hostile bot burns at decision `n` of `match_id` against the
/// opponent. Everything is deterministic, so this is what decision `n` of the
/// real match burns.
async fn fuel_at(match_id: &str, n: usize) -> u64 {
    let sandbox = Sandbox::new(SandboxConfig::default()).unwrap();
    let loaded = sandbox
        .load(&std::fs::read(bot_path("hostile")).unwrap())
        .unwrap();
    let context = duel_sandbox::BotContext {
        match_id: match_id.to_owned(),
        seed: SEED,
        side: Side::A,
    };
    let mut bot = loaded.instantiate(context, Arc::new(NoModel));
    let fighter = |name: &str| FighterInfo {
        name: name.into(),
        kind: FighterKind::Builtin,
        digest: "".into(),
        spec: None,
    };
    let mut recorder = MatchRecorder::new(
        match_config(match_id, CLOCK),
        [fighter("hostile"), fighter("opponent")],
    );
    let mut builtin = opponent();
    for _ in 0..n {
        let action = bot.decide(&recorder.observation(Side::A)).await.unwrap();
        let answer_b = builtin.decide(recorder.observation(Side::B)).await;
        recorder.commit([
            Answer::asked(Decision::action(action), 0),
            Answer::asked(answer_b, 0),
        ]);
    }
    bot.stats().last_fuel_used
}

#[tokio::test]
async fn burning_nearly_all_the_fuel_is_accepted_and_more_than_the_cap_is_cut_off() {
    let match_id = "spin:2000000@4";
    let needed = fuel_at(match_id, 4).await;
    assert!(needed > 2_000_000, "{needed}");
    let limits = |fuel_per_decision| SandboxConfig {
        decision_wall_clock: GENEROUS_CLOCK,
        fuel_per_decision,
        ..SandboxConfig::default()
    };
    // 1% above what the decision burns: it answers (JAB), and the count goes on.
    let replay = play_limited(limits(needed + needed / 100), match_id).await;
    assert_harmless(&replay, |n| n == 4, Action::Jab);
    // 1% below: cut off as a fault, the next decision on a fresh instance.
    let replay = play_limited(limits(needed - needed / 100), match_id).await;
    assert_contained(&replay, |n| n == 4, Source::Fault, "fuel", Plays::Count);
}

#[tokio::test]
async fn outrunning_the_clock_before_the_fuel_is_a_timeout_on_time() {
    // 1e12 iterations would end, but only after minutes and far below this cap.
    let limits = SandboxConfig {
        decision_wall_clock: CLOCK,
        fuel_per_decision: 1_000_000_000_000_000,
        ..SandboxConfig::default()
    };
    let replay = play_limited(limits, &format!("spin:1000000000000{AT}")).await;
    assert_contained(&replay, at_2_and_5, Source::Timeout, "", Plays::Count);
}

#[tokio::test]
async fn an_action_out_of_range_is_a_fault_at_every_exchange() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("out-of-range.wasm");
    std::fs::write(&bad, handmade::component_answering(99)).unwrap();
    let replay = play(&bad, "m", GENEROUS_CLOCK).await;
    assert_contained(
        &replay,
        |_| true,
        Source::Fault,
        "unexpected discriminant: 99",
        Plays::Always(Action::Block),
    );
    // The same component answering FEINT plays FEINT as itself throughout.
    let good = dir.path().join("feint.wasm");
    std::fs::write(&good, handmade::component_answering(4)).unwrap();
    let replay = play(&good, "m", GENEROUS_CLOCK).await;
    assert_contained(
        &replay,
        |_| false,
        Source::Fault,
        "",
        Plays::Always(Action::Feint),
    );
}
