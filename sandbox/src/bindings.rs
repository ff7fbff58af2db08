//! Host bindings of each supported `duel:bot` world version, one module per
//! version, and conversions from `duel-rules` types. A bot's version is read from
//! its imports before it is instantiated (see [`WorldVersion::detect`]); each
//! version is a module of its own (`v1_0_0`, `v1_1_0`), never an edit of an
//! older one.

use duel_rules::{Action, Observation, Source, WeightClass};
use wasmtime::Engine;
use wasmtime::component::Component;
use wasmtime::component::types::ComponentItem;

use crate::error::SandboxError;

/// `duel:bot@1.0.0`.
pub(crate) mod v1_0_0 {
    wasmtime::component::bindgen!({
        path: "wit/v1.0.0",
        world: "duel:bot/bot@1.0.0",
        imports: { default: async },
        exports: { default: async },
    });
}

/// `duel:bot@1.1.0`: 1.0.0 plus the choice of a catalogue model.
pub(crate) mod v1_1_0 {
    wasmtime::component::bindgen!({
        path: "wit/v1.1.0",
        world: "duel:bot/bot@1.1.0",
        imports: { default: async },
        exports: { default: async },
    });
}

/// The world versions this host can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WorldVersion {
    V1_0_0,
    V1_1_0,
}

impl WorldVersion {
    pub const ALL: [WorldVersion; 2] = [WorldVersion::V1_0_0, WorldVersion::V1_1_0];

    pub const fn version(self) -> &'static str {
        match self {
            WorldVersion::V1_0_0 => "1.0.0",
            WorldVersion::V1_1_0 => "1.1.0",
        }
    }

    /// Reads the `duel:bot` version a component was built against from the names
    /// of its imports (`duel:bot/types@1.0.0` …). A component that imports no
    /// `duel:bot` interface is tried as the oldest version, whose type check then
    /// says what is missing.
    pub(crate) fn detect(
        engine: &Engine,
        component: &Component,
    ) -> Result<WorldVersion, SandboxError> {
        let ty = component.component_type();
        let mut found: Option<String> = None;
        for (name, item) in ty.imports(engine) {
            if !matches!(item.ty, ComponentItem::ComponentInstance(_)) {
                continue;
            }
            let Some(rest) = name.strip_prefix("duel:bot/") else {
                continue;
            };
            let version = rest.split_once('@').map_or("", |(_, version)| version);
            match &found {
                Some(seen) if seen != version => {
                    return Err(SandboxError::WrongWorld(format!(
                        "imports duel:bot interfaces of two versions ({seen} and {version})"
                    )));
                }
                _ => found = Some(version.to_owned()),
            }
        }
        match found {
            None => Ok(WorldVersion::V1_0_0),
            Some(version) => WorldVersion::ALL
                .into_iter()
                .find(|known| known.version() == version)
                .ok_or_else(|| {
                    SandboxError::WrongWorld(format!(
                        "built for duel:bot@{version}; this host runs duel:bot@1.0.0 and @1.1.0"
                    ))
                }),
        }
    }
}

/// The conversions between `duel-rules` types and one world version's
/// generated types (the `types` interface is the same in every version).
macro_rules! conversions {
    ($module:ident, $world:ident) => {
        pub(crate) mod $module {
            use super::$world::duel::bot::types as wit;
            use super::*;

            fn action(action: Action) -> wit::Action {
                match action {
                    Action::Jab => wit::Action::Jab,
                    Action::Heavy => wit::Action::Heavy,
                    Action::Block => wit::Action::Block,
                    Action::Dodge => wit::Action::Dodge,
                    Action::Feint => wit::Action::Feint,
                    Action::Recover => wit::Action::Recover,
                }
            }

            pub(crate) fn action_from_wit(action: wit::Action) -> Action {
                match action {
                    wit::Action::Jab => Action::Jab,
                    wit::Action::Heavy => Action::Heavy,
                    wit::Action::Block => Action::Block,
                    wit::Action::Dodge => Action::Dodge,
                    wit::Action::Feint => Action::Feint,
                    wit::Action::Recover => Action::Recover,
                }
            }

            fn source(source: Source) -> wit::Source {
                match source {
                    Source::Bot => wit::Source::Bot,
                    Source::Timeout => wit::Source::Timeout,
                    Source::Budget => wit::Source::Budget,
                    Source::Fault => wit::Source::Fault,
                }
            }

            fn class(class: WeightClass) -> wit::WeightClass {
                match class {
                    WeightClass::Light => wit::WeightClass::Light,
                    WeightClass::Middle => wit::WeightClass::Middle,
                    WeightClass::Heavy => wit::WeightClass::Heavy,
                }
            }

            fn fighter(state: duel_rules::FighterState) -> wit::Fighter {
                wit::Fighter {
                    hp: state.hp,
                    stamina: state.stamina,
                    staggered: state.staggered,
                }
            }

            fn tape_side(side: duel_rules::TapeSide) -> wit::TapeSide {
                wit::TapeSide {
                    action: action(side.action),
                    exhausted: side.exhausted,
                    source: source(side.source),
                    damage_taken: side.damage_taken,
                }
            }

            /// The observation as the bot sees it: the tape from its own side.
            pub(crate) fn observation(obs: &Observation<'_>) -> wit::Observation {
                wit::Observation {
                    ruleset: obs.ruleset.version().to_owned(),
                    match_id: obs.match_id.to_owned(),
                    class: class(obs.class),
                    budget_left_tokens: obs.budget_left_tokens,
                    round: obs.round,
                    exchange: obs.exchange,
                    you: fighter(obs.you),
                    opponent: fighter(obs.opponent),
                    your_round_wins: obs.your_round_wins,
                    opponent_round_wins: obs.opponent_round_wins,
                    tape: obs
                        .history()
                        .map(|entry| wit::TapeEntry {
                            round: entry.round,
                            exchange: entry.exchange,
                            you: tape_side(entry.you),
                            opponent: tape_side(entry.opponent),
                        })
                        .collect(),
                }
            }
        }
    };
}

conversions!(convert_v1_0_0, v1_0_0);
conversions!(convert_v1_1_0, v1_1_0);
