//! Conversions between `duel.v1` messages and the domain types of the rules and
//! replays. Everything coming from the wire is checked: an unknown or unspecified
//! enum value or a missing field is an error with a message, never a panic.

use std::time::Duration;

use duel_proto::v1 as pb;
use duel_replays::{
    ExchangeRecord, FighterInfo, MatchResultRecord, RoundEndName, RoundResultRecord, SideRecord,
    WinnerName,
};
use duel_rules::{Action, Observation, Source, TapeSide, WeightClass};

use crate::limits::{DECISION_WALL_CLOCK, MIN_WALL_CLOCK};
use crate::spec::BotSpec;

pub fn action_to_proto(action: Action) -> pb::Action {
    match action {
        Action::Jab => pb::Action::Jab,
        Action::Heavy => pb::Action::Heavy,
        Action::Block => pb::Action::Block,
        Action::Dodge => pb::Action::Dodge,
        Action::Feint => pb::Action::Feint,
        Action::Recover => pb::Action::Recover,
    }
}

/// A bot's answer: UNSPECIFIED and values this ruleset does not know are faults.
pub fn action_from_proto(value: i32) -> Result<Action, String> {
    match pb::Action::try_from(value) {
        Ok(pb::Action::Jab) => Ok(Action::Jab),
        Ok(pb::Action::Heavy) => Ok(Action::Heavy),
        Ok(pb::Action::Block) => Ok(Action::Block),
        Ok(pb::Action::Dodge) => Ok(Action::Dodge),
        Ok(pb::Action::Feint) => Ok(Action::Feint),
        Ok(pb::Action::Recover) => Ok(Action::Recover),
        Ok(pb::Action::Unspecified) => Err("answered ACTION_UNSPECIFIED".to_owned()),
        Err(_) => Err(format!("answered unknown action value {value}")),
    }
}

pub fn source_to_proto(source: Source) -> pb::Source {
    match source {
        Source::Bot => pb::Source::Bot,
        Source::Timeout => pb::Source::Timeout,
        Source::Budget => pb::Source::Budget,
        Source::Fault => pb::Source::Fault,
    }
}

pub fn class_to_proto(class: WeightClass) -> pb::WeightClass {
    match class {
        WeightClass::Light => pb::WeightClass::Light,
        WeightClass::Middle => pb::WeightClass::Middle,
        WeightClass::Heavy => pb::WeightClass::Heavy,
    }
}

/// A requested class; UNSPECIFIED means middle (the proto's documented default).
pub fn class_from_proto(value: i32) -> Result<WeightClass, String> {
    match pb::WeightClass::try_from(value) {
        Ok(pb::WeightClass::Light) => Ok(WeightClass::Light),
        Ok(pb::WeightClass::Middle | pb::WeightClass::Unspecified) => Ok(WeightClass::Middle),
        Ok(pb::WeightClass::Heavy) => Ok(WeightClass::Heavy),
        Err(_) => Err(format!("unknown weight class value {value}")),
    }
}

fn fighter_to_proto(fighter: duel_rules::FighterState) -> pb::Fighter {
    pb::Fighter {
        hp: fighter.hp,
        stamina: fighter.stamina,
        staggered: fighter.staggered,
    }
}

fn tape_side_to_proto(side: TapeSide) -> pb::TapeSide {
    pb::TapeSide {
        action: action_to_proto(side.action).into(),
        exhausted: side.exhausted,
        source: source_to_proto(side.source).into(),
        damage_taken: side.damage_taken,
    }
}

/// What an endpoint bot is sent: the observation from its own side.
pub fn observation_to_proto(observation: &Observation<'_>) -> pb::Observation {
    pb::Observation {
        ruleset: observation.ruleset.version().to_owned(),
        match_id: observation.match_id.to_owned(),
        class: class_to_proto(observation.class).into(),
        budget_left_tokens: observation.budget_left_tokens,
        round: u32::from(observation.round),
        exchange: u32::from(observation.exchange),
        you: Some(fighter_to_proto(observation.you)),
        opponent: Some(fighter_to_proto(observation.opponent)),
        your_round_wins: u32::from(observation.your_round_wins),
        opponent_round_wins: u32::from(observation.opponent_round_wins),
        tape: observation
            .history()
            .map(|entry| pb::TapeEntry {
                round: u32::from(entry.round),
                exchange: u32::from(entry.exchange),
                you: Some(tape_side_to_proto(entry.you)),
                opponent: Some(tape_side_to_proto(entry.opponent)),
            })
            .collect(),
    }
}

fn winner_to_proto(winner: WinnerName) -> pb::Winner {
    match winner {
        WinnerName::A => pb::Winner::A,
        WinnerName::B => pb::Winner::B,
        WinnerName::Draw => pb::Winner::Draw,
    }
}

fn round_end_to_proto(by: RoundEndName) -> pb::RoundEnd {
    match by {
        RoundEndName::Ko => pb::RoundEnd::Ko,
        RoundEndName::Hp => pb::RoundEnd::Hp,
        RoundEndName::Stamina => pb::RoundEnd::Stamina,
        RoundEndName::Damage => pb::RoundEnd::Damage,
        RoundEndName::Draw => pb::RoundEnd::Draw,
    }
}

fn side_record_to_proto(side: &SideRecord) -> pb::ExchangeSide {
    pb::ExchangeSide {
        action: action_to_proto(side.action.into()).into(),
        source: source_to_proto(side.source.into()).into(),
        exhausted: side.exhausted,
        damage_taken: side.damage_taken,
        hp: side.hp,
        stamina: side.stamina,
        staggered: side.staggered,
        tokens: side.tokens,
        latency_ms: side.latency_ms,
        reason: side.reason().unwrap_or_default().to_owned(),
        latency_us: side.latency_us,
    }
}

/// One resolved exchange of a replay, for spectators.
pub fn exchange_to_proto(
    round: u8,
    exchange: &ExchangeRecord,
    round_result: Option<RoundResultRecord>,
) -> pb::ExchangeEvent {
    pb::ExchangeEvent {
        round: u32::from(round),
        exchange: u32::from(exchange.number),
        a: Some(side_record_to_proto(&exchange.a)),
        b: Some(side_record_to_proto(&exchange.b)),
        round_result: round_result.map(|result| pb::RoundResult {
            winner: winner_to_proto(result.winner).into(),
            by: round_end_to_proto(result.by).into(),
        }),
    }
}

pub fn match_result_to_proto(result: &MatchResultRecord) -> pb::MatchResult {
    pb::MatchResult {
        winner: winner_to_proto(result.winner).into(),
        round_wins: result
            .round_wins
            .iter()
            .map(|&wins| u32::from(wins))
            .collect(),
        damage: result.damage.to_vec(),
        tokens_used: result.tokens_used.to_vec(),
    }
}

pub fn fighter_info_to_proto(info: &FighterInfo) -> pb::FighterInfo {
    pb::FighterInfo {
        name: info.name.to_string(),
        kind: match info.kind {
            duel_replays::FighterKind::Builtin => "builtin",
            duel_replays::FighterKind::Endpoint => "endpoint",
            duel_replays::FighterKind::Wasm => "wasm",
        }
        .to_owned(),
        digest: info.digest.to_string(),
    }
}

/// A validated `RunMatch` request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchRequest {
    pub specs: [BotSpec; 2],
    pub class: WeightClass,
    pub seed: Option<u64>,
    pub wall_clock: Duration,
    pub detach: bool,
}

/// The wall clock a request asks for: 0 is the rules' 10 s; otherwise
/// [`MIN_WALL_CLOCK`]..=[`DECISION_WALL_CLOCK`].
pub fn wall_clock_from_ms(wall_clock_ms: u32) -> Result<Duration, String> {
    if wall_clock_ms == 0 {
        return Ok(DECISION_WALL_CLOCK);
    }
    let wall_clock = Duration::from_millis(u64::from(wall_clock_ms));
    if wall_clock < MIN_WALL_CLOCK || wall_clock > DECISION_WALL_CLOCK {
        return Err(format!(
            "wall_clock_ms {wall_clock_ms} is outside 1..={}",
            DECISION_WALL_CLOCK.as_millis()
        ));
    }
    Ok(wall_clock)
}

impl TryFrom<pb::RunMatchRequest> for MatchRequest {
    type Error = String;

    fn try_from(request: pb::RunMatchRequest) -> Result<MatchRequest, String> {
        let parse = |field: &str, text: &str| {
            if text.is_empty() {
                return Err(format!("{field} is missing: give a bot spec"));
            }
            BotSpec::parse(text).map_err(|error| format!("{field}: {error}"))
        };
        Ok(MatchRequest {
            specs: [
                parse("bot_a", &request.bot_a)?,
                parse("bot_b", &request.bot_b)?,
            ],
            class: class_from_proto(request.class)?,
            seed: match request.seed {
                Some(seed) if seed > crate::limits::SEED_MAX => {
                    return Err(format!(
                        "seed {seed} is over {}: a replay's signature binds integers up to 2^53 - 1",
                        crate::limits::SEED_MAX
                    ));
                }
                seed => seed,
            },
            wall_clock: wall_clock_from_ms(request.wall_clock_ms)?,
            detach: request.detach,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use duel_rules::{MatchState, Ruleset, Side};
    use proptest::prelude::*;
    use prost::Message;

    #[test]
    fn every_action_round_trips() {
        for action in Action::ALL {
            assert_eq!(
                action_from_proto(action_to_proto(action).into()),
                Ok(action)
            );
        }
        assert!(action_from_proto(0).is_err());
        assert!(action_from_proto(7).is_err());
        assert!(action_from_proto(-1).is_err());
    }

    #[test]
    fn observation_carries_the_asking_side() {
        let state = MatchState::new(Ruleset::CURRENT);
        let tape = [duel_rules::TapeEntry {
            round: 1,
            exchange: 1,
            sides: [
                TapeSide {
                    action: Action::Jab,
                    exhausted: false,
                    source: Source::Bot,
                    damage_taken: 0,
                },
                TapeSide {
                    action: Action::Block,
                    exhausted: false,
                    source: Source::Timeout,
                    damage_taken: 6,
                },
            ],
        }];
        let observation = Observation::new(&state, Side::B, "m", WeightClass::Light, 77, &tape);
        let proto = observation_to_proto(&observation);
        assert_eq!(proto.class, pb::WeightClass::Light as i32);
        assert_eq!(proto.budget_left_tokens, 77);
        let entry = &proto.tape[0];
        let you = entry.you.as_ref().expect("you");
        assert_eq!(you.action, pb::Action::Block as i32);
        assert_eq!(you.source, pb::Source::Timeout as i32);
        assert_eq!(you.damage_taken, 6);
    }

    #[test]
    fn run_match_requests_are_checked() {
        let good = pb::RunMatchRequest {
            bot_a: "builtin:block".into(),
            bot_b: "builtin:random".into(),
            ..Default::default()
        };
        let request = MatchRequest::try_from(good.clone()).expect("valid");
        assert_eq!(request.class, WeightClass::Middle);
        assert_eq!(request.wall_clock, DECISION_WALL_CLOCK);
        let cases = [
            (
                pb::RunMatchRequest {
                    bot_a: String::new(),
                    ..good.clone()
                },
                "bot_a is missing",
            ),
            (
                pb::RunMatchRequest {
                    bot_b: "nope".into(),
                    ..good.clone()
                },
                "bot_b",
            ),
            (
                pb::RunMatchRequest {
                    class: 9,
                    ..good.clone()
                },
                "weight class",
            ),
            (
                pb::RunMatchRequest {
                    wall_clock_ms: 10_001,
                    ..good.clone()
                },
                "wall_clock_ms",
            ),
        ];
        for (request, expected) in cases {
            let message = MatchRequest::try_from(request).expect_err(expected);
            assert!(message.contains(expected), "{message}");
        }
    }

    proptest! {
        /// Conversions never panic on arbitrary bytes off the wire.
        #[test]
        fn conversions_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            if let Ok(request) = pb::RunMatchRequest::decode(bytes.as_slice()) {
                let _ = MatchRequest::try_from(request);
            }
            if let Ok(response) = pb::DecideResponse::decode(bytes.as_slice()) {
                let _ = action_from_proto(response.action);
            }
            if let Ok(request) = pb::CompleteRequest::decode(bytes.as_slice()) {
                let _ = duel_gateway::inference::messages_from_proto(request.messages);
            }
        }

        #[test]
        fn enum_values_never_panic(value in any::<i32>(), ms in any::<u32>()) {
            let _ = action_from_proto(value);
            let _ = class_from_proto(value);
            let _ = wall_clock_from_ms(ms);
        }
    }
}
