//! Full verification of a replay: the rules (by `duel-replays`) and, for built-in
//! fighters, their own choices, re-run from the seed and the public tape.

use duel_replays::{Disagreement, FighterKind, Location, Replay, VerifiedMatch};
use duel_rules::{Action, MatchState, Observation, Side, Source, TapeEntry, WeightClass};

use crate::builtin::{self, BuiltinStrategy, Strategy};
use crate::error::MatchError;
use crate::spec::BotSpec;

/// Verifies the rules and every built-in fighter's choices. The outer error is
/// for a replay that cannot be checked at all; the inner one names the first
/// disagreement.
pub fn verify_replay(replay: &Replay) -> Result<Result<VerifiedMatch, Disagreement>, MatchError> {
    let verified = match duel_replays::verify(replay)? {
        Ok(verified) => verified,
        Err(disagreement) => return Ok(Err(disagreement)),
    };
    Ok(verify_builtin_choices(replay).map(|()| verified))
}

/// Re-runs each built-in fighter on the observations it was shown. Assumes the
/// rules part already verified, so the recorded states are the rules' states.
fn verify_builtin_choices(replay: &Replay) -> Result<(), Disagreement> {
    let mut strategies: [Option<BuiltinStrategy>; 2] = [None, None];
    for side in Side::BOTH {
        let fighter = &replay.fighters[side.index()];
        if fighter.kind != FighterKind::Builtin {
            continue;
        }
        let spec_text = fighter.spec.as_deref().unwrap_or(&fighter.name);
        match BotSpec::parse(spec_text) {
            Ok(BotSpec::Builtin(spec)) => {
                strategies[side.index()] = Some(builtin::strategy(&spec, replay.seed, side));
            }
            _ => {
                return Err(Disagreement {
                    location: Location::Header,
                    detail: format!(
                        "fighter {} is built-in but {spec_text:?} is not a built-in bot spec",
                        side.name()
                    ),
                });
            }
        }
    }
    if strategies.iter().all(Option::is_none) {
        return Ok(());
    }
    let ruleset = match replay.ruleset() {
        Ok(ruleset) => ruleset,
        Err(error) => {
            return Err(Disagreement {
                location: Location::Header,
                detail: error.to_string(),
            });
        }
    };
    let class = WeightClass::from(replay.class);
    // A fork's swapped sides were played, before the fork point, by the
    // parent's bot: their built-in only looked on (the runner's warm-up),
    // so its choices there are not its own.
    let fork_position = match &replay.fork {
        Some(fork) => match fork.at.position_in(replay) {
            Ok(position) => position,
            Err(error) => {
                return Err(Disagreement {
                    location: Location::Header,
                    detail: format!("the fork point is not in this replay: {error}"),
                });
            }
        },
        None => 0,
    };
    let looked_on = |side: Side, position: usize| {
        position < fork_position && replay.fork.as_ref().is_some_and(|fork| fork.swapped(side))
    };
    let mut state = MatchState::new(ruleset);
    let mut tape: Vec<TapeEntry> = Vec::new();
    let mut tokens_used = [0u64; 2];
    for (position, (round, exchange)) in replay.exchanges().enumerate() {
        let sides = exchange.sides();
        // The opening's exchanges were forced, not asked (duel-replays checks
        // that they follow the opening); a built-in bot decides from the next.
        let forced = position < replay.opening.len();
        for side in Side::BOTH {
            let Some(strategy) = strategies[side.index()].as_mut() else {
                continue;
            };
            if forced {
                continue;
            }
            let record = sides[side.index()];
            if looked_on(side, position) {
                let budget_left = replay.budget.saturating_sub(tokens_used[side.index()]);
                let observation =
                    Observation::new(&state, side, &replay.match_id, class, budget_left, &tape);
                let _ = strategy.decide(&observation);
                continue;
            }
            let at = Location::Exchange {
                round,
                exchange: exchange.number,
                side: Some(side),
            };
            if Source::from(record.source) != Source::Bot {
                return Err(Disagreement {
                    location: at,
                    detail: format!(
                        "a built-in bot never needs a substitution, but the replay records {}",
                        Source::from(record.source)
                    ),
                });
            }
            let budget_left = replay.budget.saturating_sub(tokens_used[side.index()]);
            let observation =
                Observation::new(&state, side, &replay.match_id, class, budget_left, &tape);
            let expected = strategy.decide(&observation);
            let recorded = Action::from(record.action);
            if expected != recorded {
                return Err(Disagreement {
                    location: at,
                    detail: format!(
                        "{} plays {expected} here, but the replay records {recorded}",
                        replay.fighters[side.index()].name
                    ),
                });
            }
        }
        for side in Side::BOTH {
            // Saturating: the rules check already refused a sum past u64::MAX.
            tokens_used[side.index()] =
                tokens_used[side.index()].saturating_add(sides[side.index()].tokens);
        }
        let chosen = [Action::from(sides[0].action), Action::from(sides[1].action)];
        if state.play_exchange(chosen).is_err() {
            // The rules check already rejected exchanges after the end.
            break;
        }
        tape.push(TapeEntry {
            round,
            exchange: exchange.number,
            sides: sides.map(|side| side.tape_side()),
        });
    }
    Ok(())
}
