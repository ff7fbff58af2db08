//! The match runners: the async one every transport uses (CLI, server, ladder
//! workers), and a bare synchronous loop for built-in bots in tournaments.

use std::time::Instant;

use duel_replays::{FighterInfo, Replay, Transcript};
use duel_rules::{Action, ExchangeStep, Side};

use crate::bot::{Bot, BotFailure, Decision};
use crate::builtin::{self, BuiltinFighter, BuiltinStrategy, Strategy};
use crate::record::{Answer, MatchConfig, MatchRecorder};

/// Plays a whole match, asking both fighters concurrently for each exchange under
/// the wall clock, and returns its replay. Bot failures never end the match:
/// they become substitutions.
pub async fn run_match(config: MatchConfig, bots: [&mut dyn Bot; 2]) -> Replay {
    run_match_observed(config, bots, |_, _| {}).await
}

/// [`run_match`], calling `on_exchange` after every exchange (live spectators).
pub async fn run_match_observed(
    config: MatchConfig,
    bots: [&mut dyn Bot; 2],
    on_exchange: impl FnMut(&MatchRecorder, &ExchangeStep),
) -> Replay {
    let fighters = [bots[0].info(), bots[1].info()];
    run_fighters(config, fighters, bots, on_exchange).await.0
}

/// [`run_match_observed`] with the fighters shown in the replay as `fighters`
/// (a ladder bot's name, say) rather than as the bots name themselves; with
/// the transcript, when the match keeps one.
pub async fn run_fighters(
    config: MatchConfig,
    fighters: [FighterInfo; 2],
    bots: [&mut dyn Bot; 2],
    mut on_exchange: impl FnMut(&MatchRecorder, &ExchangeStep),
) -> (Replay, Option<Transcript>) {
    let [bot_a, bot_b] = bots;
    let fork = config.fork.clone();
    let mut recorder = MatchRecorder::new(config, fighters);
    if let Some(fork) = fork {
        for (_, exchange) in fork.prefix() {
            warm_up(&recorder, [&mut *bot_a, &mut *bot_b]);
            let step = recorder.commit_recorded(exchange, &fork.parent().models);
            on_exchange(&recorder, &step);
        }
    }
    while !recorder.is_over() {
        let (answer_a, answer_b) = tokio::join!(
            ask(&recorder, Side::A, &mut *bot_a),
            ask(&recorder, Side::B, &mut *bot_b)
        );
        let step = recorder.commit([answer_a, answer_b]);
        on_exchange(&recorder, &step);
    }
    recorder.finish_with_transcript()
}

/// Shows each bot that decides at once (the built-ins) an exchange of a
/// fork's copied prefix, its answer dropped: a seeded built-in then stands
/// where it stood in the parent when the fork point comes. Bots that must be
/// awaited (WASM, endpoints) are not asked: their first observation, at the
/// fork point, carries the whole tape, and asking them would spend their
/// clock and budget on decisions that are not played.
fn warm_up(recorder: &MatchRecorder, bots: [&mut dyn Bot; 2]) {
    if recorder.in_opening() {
        return;
    }
    for (side, bot) in Side::BOTH.into_iter().zip(bots) {
        let _ = bot.decide_now(recorder.observation(side));
    }
}

async fn ask(recorder: &MatchRecorder, side: Side, bot: &mut dyn Bot) -> Answer {
    if !recorder.must_ask(side) {
        return Answer::not_asked();
    }
    let wall_clock = recorder.config().decision_wall_clock;
    let observation = recorder.observation(side);
    let started = Instant::now();
    if let Some(decision) = bot.decide_now(observation) {
        return Answer::timed(decision, started.elapsed());
    }
    // Bound first, so the decision's future is dropped before `abandoned`.
    let answered = tokio::time::timeout(wall_clock, bot.decide(observation)).await;
    let decision = match answered {
        Ok(decision) => decision,
        Err(_elapsed) => Decision::metered(
            Err(BotFailure::timeout(duel_sandbox::timeout_reason(
                wall_clock,
            ))),
            bot.abandoned(),
        ),
    };
    Answer::timed(decision, started.elapsed())
}

/// Plays a match between two built-in bots without async, boxing or clocks: the
/// path tournaments take. Produces the same replay as [`run_match`] would.
pub fn run_bare_match(config: MatchConfig, fighters: [&BuiltinFighter; 2]) -> Replay {
    let mut strategy_a = builtin::strategy(&fighters[0].spec, config.seed, Side::A);
    let mut strategy_b = builtin::strategy(&fighters[1].spec, config.seed, Side::B);
    let fighters = [fighters[0].info.clone(), fighters[1].info.clone()];
    let mut recorder = MatchRecorder::new(config, fighters);
    while !recorder.is_over() {
        let actions = [
            decide_bare(&recorder, Side::A, &mut strategy_a),
            decide_bare(&recorder, Side::B, &mut strategy_b),
        ];
        recorder.commit_actions(actions);
    }
    recorder.finish()
}

/// A built-in strategy's action for `side`, or `None` when the recorder does
/// not ask it.
fn decide_bare(
    recorder: &MatchRecorder,
    side: Side,
    strategy: &mut BuiltinStrategy,
) -> Option<Action> {
    if !recorder.must_ask(side) {
        return None;
    }
    Some(strategy.decide(&recorder.observation(side)))
}
