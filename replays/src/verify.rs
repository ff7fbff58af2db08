//! Re-verification: re-runs a replay's recorded actions through `duel-rules` and
//! names the first place where the record and the rules disagree.

use std::fmt;

use duel_rules::{Action, MatchResult, MatchState, Ruleset, Side, Source, WeightClass};

use crate::error::ReplayError;
use crate::format::{ActionName, Replay, SideRecord, SourceName};
use crate::limits::MAX_OPENING_EXCHANGES;

/// Where in a replay a disagreement sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// The header (class, budget, fighters).
    Header,
    /// A round as a whole (numbering, its result, where it ends).
    Round { round: u8 },
    /// One exchange; `side` when it concerns one fighter.
    Exchange {
        round: u8,
        exchange: u8,
        side: Option<Side>,
    },
    /// The match result.
    Match,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Header => f.write_str("header"),
            Location::Round { round } => write!(f, "round {round}"),
            Location::Exchange {
                round,
                exchange,
                side: None,
            } => write!(f, "round {round}, exchange {exchange}"),
            Location::Exchange {
                round,
                exchange,
                side: Some(side),
            } => write!(
                f,
                "round {round}, exchange {exchange}, fighter {}",
                side.name()
            ),
            Location::Match => f.write_str("match result"),
        }
    }
}

/// The first place a replay and the rules disagree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Disagreement {
    pub location: Location,
    /// What disagrees, e.g. "hp is 12 in the replay, the rules give 9".
    pub detail: String,
}

impl fmt::Display for Disagreement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.detail)
    }
}

impl std::error::Error for Disagreement {}

/// What a successful verification established.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VerifiedMatch {
    pub ruleset: Ruleset,
    pub result: MatchResult,
    pub exchanges: u32,
    pub substitutions: [u32; 2],
}

fn mismatch<T: fmt::Display>(
    location: Location,
    field: &str,
    recorded: T,
    rules: T,
) -> Disagreement {
    Disagreement {
        location,
        detail: format!("{field} is {recorded} in the replay, the rules give {rules}"),
    }
}

fn check<T: PartialEq + fmt::Display>(
    location: Location,
    field: &str,
    recorded: T,
    rules: T,
) -> Result<(), Disagreement> {
    if recorded == rules {
        Ok(())
    } else {
        Err(mismatch(location, field, recorded, rules))
    }
}

fn broken(location: Location, detail: impl Into<String>) -> Disagreement {
    Disagreement {
        location,
        detail: detail.into(),
    }
}

/// An exchange of the opening: played as the opening says, by both fighters,
/// without being asked (no substitution, no tokens).
fn check_opening(
    forced: [ActionName; 2],
    sides: [&SideRecord; 2],
    here: impl Fn(Option<Side>) -> Location,
) -> Result<(), Disagreement> {
    for side in Side::BOTH {
        let record = sides[side.index()];
        let opening = forced[side.index()];
        if record.action != opening {
            return Err(broken(
                here(Some(side)),
                format!(
                    "the opening plays {} here, the replay {}",
                    Action::from(opening).name(),
                    Action::from(record.action).name()
                ),
            ));
        }
        if record.source != SourceName::Bot || record.tokens != 0 || !record.calls().is_empty() {
            return Err(broken(
                here(Some(side)),
                "an opening exchange is played as forced: source bot and no tokens",
            ));
        }
    }
    Ok(())
}

/// Re-runs the replay through its ruleset. The replay must already have parsed
/// (format and ruleset known); a [`ReplayError`] is returned only for those.
pub fn verify(replay: &Replay) -> Result<Result<VerifiedMatch, Disagreement>, ReplayError> {
    let ruleset = replay.ruleset()?;
    Ok(verify_with(ruleset, replay))
}

fn verify_with(ruleset: Ruleset, replay: &Replay) -> Result<VerifiedMatch, Disagreement> {
    let class = WeightClass::from(replay.class);
    check(
        Location::Header,
        "budget",
        replay.budget,
        ruleset.budget_tokens(class),
    )?;
    if replay.opening.len() > MAX_OPENING_EXCHANGES {
        return Err(broken(
            Location::Header,
            format!(
                "the opening has {} exchanges, more than {MAX_OPENING_EXCHANGES}",
                replay.opening.len()
            ),
        ));
    }
    let recorded: usize = replay
        .rounds
        .iter()
        .map(|round| round.exchanges.len())
        .sum();
    if replay.opening.len() > recorded {
        return Err(broken(
            Location::Header,
            format!(
                "the opening has {} exchanges, the match only {recorded}",
                replay.opening.len()
            ),
        ));
    }
    let records_calls = check_models(replay)?;
    let mut state = MatchState::new(ruleset);
    let mut gassed_out = [false; 2];
    let mut tokens_used = [0u64; 2];
    let mut substitutions = [0u32; 2];
    let mut exchanges = 0u32;
    for round in &replay.rounds {
        let round_location = Location::Round {
            round: round.number,
        };
        if state.is_over() {
            return Err(broken(round_location, "is recorded after the match ended"));
        }
        check(round_location, "round number", round.number, state.round())?;
        if round.exchanges.is_empty() {
            return Err(broken(round_location, "has no exchanges"));
        }
        let mut round_result = None;
        for exchange in &round.exchanges {
            let here = |side: Option<Side>| Location::Exchange {
                round: round.number,
                exchange: exchange.number,
                side,
            };
            if round_result.is_some() {
                return Err(broken(here(None), "is recorded after its round ended"));
            }
            check(
                here(None),
                "exchange number",
                exchange.number,
                state.next_exchange(),
            )?;
            let sides = exchange.sides();
            if let Some(forced) = replay.opening.get(exchanges as usize) {
                check_opening(*forced, sides, here)?;
            }
            for side in Side::BOTH {
                let record = sides[side.index()];
                check_source(
                    ruleset,
                    record,
                    &mut gassed_out[side.index()],
                    here(Some(side)),
                )?;
                if records_calls {
                    check_calls(replay, record, here(Some(side)))?;
                }
                tokens_used[side.index()] =
                    add_tokens(tokens_used[side.index()], record.tokens, here(Some(side)))?;
                if Source::from(record.source).is_substitution() {
                    substitutions[side.index()] += 1;
                }
            }
            let chosen: [Action; 2] = [sides[0].action.into(), sides[1].action.into()];
            let step = state
                .play_exchange(chosen)
                .map_err(|over| broken(here(None), over.to_string()))?;
            exchanges += 1;
            for side in Side::BOTH {
                let record = sides[side.index()];
                let rules = step.outcome.sides[side.index()];
                let at = here(Some(side));
                check(at, "exhausted", record.exhausted, rules.exhausted)?;
                check(at, "damage_taken", record.damage_taken, rules.damage_taken)?;
                check(at, "hp", record.hp, rules.after.hp)?;
                check(at, "stamina", record.stamina, rules.after.stamina)?;
                check(at, "staggered", record.staggered, rules.after.staggered)?;
            }
            round_result = step.round_result;
        }
        let Some(rules_result) = round_result else {
            return Err(broken(
                round_location,
                format!(
                    "ends after exchange {} but the rules play on",
                    state.next_exchange() - 1
                ),
            ));
        };
        check(
            round_location,
            "winner",
            round.result.winner.into(),
            rules_result.winner,
        )?;
        check(
            round_location,
            "by",
            round.result.by.into(),
            rules_result.by,
        )?;
    }
    let Some(result) = state.result() else {
        return Err(broken(
            Location::Match,
            format!(
                "the replay stops in round {} but the rules play on",
                state.round()
            ),
        ));
    };
    let recorded = &replay.result;
    check(
        Location::Match,
        "winner",
        recorded.winner.into(),
        result.winner,
    )?;
    for side in Side::BOTH {
        let index = side.index();
        let name = side.name();
        check(
            Location::Match,
            &format!("round_wins of {name}"),
            recorded.round_wins[index],
            result.round_wins[index],
        )?;
        check(
            Location::Match,
            &format!("damage of {name}"),
            recorded.damage[index],
            result.damage[index],
        )?;
        check(
            Location::Match,
            &format!("tokens_used of {name}"),
            recorded.tokens_used[index],
            tokens_used[index],
        )?;
        if tokens_used[index] > replay.budget {
            return Err(broken(
                Location::Match,
                format!(
                    "fighter {name} used {} tokens, over its budget of {}",
                    tokens_used[index], replay.budget
                ),
            ));
        }
    }
    Ok(VerifiedMatch {
        ruleset,
        result,
        exchanges,
        substitutions,
    })
}

/// A fighter's running token total plus one exchange's tokens. The sum of
/// recorded `u64`s can exceed `u64::MAX`; wrapping would let a replay whose
/// tokens are 2^64−1 and 2 claim a total of 1, so an overflow is a disagreement
/// at the exchange that causes it.
fn add_tokens(total: u64, tokens: u64, at: Location) -> Result<u64, Disagreement> {
    total.checked_add(tokens).ok_or_else(|| {
        broken(
            at,
            format!(
                "tokens {tokens} bring the fighter's total past {} (it was {total})",
                u64::MAX
            ),
        )
    })
}

/// The header's `models` name each model once; returns whether the replay
/// records model calls at all (a replay written before calls were recorded
/// has neither calls nor models, and its tokens are taken as they are).
fn check_models(replay: &Replay) -> Result<bool, Disagreement> {
    let mut names = std::collections::HashSet::new();
    for model in &replay.models {
        if !names.insert(model.name.as_str()) {
            return Err(broken(
                Location::Header,
                format!("models lists {:?} twice", model.name),
            ));
        }
    }
    Ok(!replay.models.is_empty()
        || replay
            .exchanges()
            .any(|(_, exchange)| exchange.sides().iter().any(|side| !side.calls().is_empty())))
}

/// A decision's calls add up to its tokens, and each call that reached a
/// model names one the header lists.
fn check_calls(replay: &Replay, record: &SideRecord, at: Location) -> Result<(), Disagreement> {
    let mut sum = 0u64;
    for call in record.calls() {
        if !call.outcome.reached_model() && call.tokens() != 0 {
            return Err(broken(
                at,
                format!(
                    "a {} call is charged {} tokens; only ok and cut calls are charged",
                    call.outcome,
                    call.tokens()
                ),
            ));
        }
        if call.outcome == crate::format::CallOutcome::Cut && call.completion_tokens != 0 {
            return Err(broken(at, "a cut call is charged completion tokens"));
        }
        // A cut call charged nothing may not have reached a model (its
        // request was still arriving, or its prompt waiting to be counted):
        // it may name one the header does not list, as refusals do.
        let charged_or_answered =
            call.outcome == crate::format::CallOutcome::Ok || call.tokens() > 0;
        if call.outcome.reached_model()
            && charged_or_answered
            && !replay.models.iter().any(|model| model.name == call.model)
        {
            return Err(broken(
                at,
                format!(
                    "a call names model {:?}, which the header does not list",
                    call.model
                ),
            ));
        }
        sum = sum
            .checked_add(call.tokens())
            .ok_or_else(|| broken(at, "the calls' tokens add up past the largest integer"))?;
    }
    if sum != record.tokens {
        return Err(broken(
            at,
            format!(
                "the calls add up to {sum} tokens, the replay records {}",
                record.tokens
            ),
        ));
    }
    Ok(())
}

/// A substituted action is always the fallback, and a gassed-out fighter stays on
/// the fallback (recorded as `budget`) for the rest of the match.
fn check_source(
    ruleset: Ruleset,
    record: &SideRecord,
    gassed_out: &mut bool,
    at: Location,
) -> Result<(), Disagreement> {
    let source = Source::from(record.source);
    let action = Action::from(record.action);
    if *gassed_out && source != Source::Budget {
        return Err(broken(
            at,
            format!("source is {source} but the fighter had gassed out, so it must be budget"),
        ));
    }
    if source.is_substitution() && action != ruleset.fallback_action() {
        return Err(broken(
            at,
            format!(
                "a {source} substitution plays {}, but the replay records {action}",
                ruleset.fallback_action()
            ),
        ));
    }
    if source == Source::Budget {
        *gassed_out = true;
    }
    Ok(())
}
