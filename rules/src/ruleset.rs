//! Ruleset versions and the numbers each one fixes (fighter shape, costs, classes).
//!
//! A match is adjudicated under the version in force when it was accepted, so every
//! version stays here forever; a new version is a new variant beside the old ones.

use std::fmt;
use std::str::FromStr;

use crate::action::Action;

/// A ruleset version. The engine carries it as a value: every match, observation
/// and replay names the version it is played under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Ruleset {
    /// Ruleset 1.0.0, as `RULES-1.0.0.md` reads it.
    V1_0_0,
}

impl Ruleset {
    /// The version new matches are accepted under.
    pub const CURRENT: Ruleset = Ruleset::V1_0_0;
    /// Every version this engine can adjudicate.
    pub const ALL: [Ruleset; 1] = [Ruleset::V1_0_0];

    pub const fn version(self) -> &'static str {
        match self {
            Ruleset::V1_0_0 => "1.0.0",
        }
    }

    pub fn from_version(version: &str) -> Result<Ruleset, UnknownRuleset> {
        Ruleset::ALL
            .into_iter()
            .find(|ruleset| ruleset.version() == version)
            .ok_or_else(|| UnknownRuleset {
                version: version.to_owned(),
            })
    }

    /// HP each fighter starts every round with.
    pub const fn start_hp(self) -> i32 {
        160
    }

    /// Stamina each fighter starts every round with; also the cap (D-1).
    pub const fn max_stamina(self) -> i32 {
        100
    }

    /// A round is at most this many exchanges.
    pub const fn exchanges_per_round(self) -> u8 {
        12
    }

    /// A match is best of this many rounds.
    pub const fn rounds_per_match(self) -> u8 {
        3
    }

    /// The longest possible match, in exchanges.
    pub const fn max_exchanges_per_match(self) -> u32 {
        self.exchanges_per_round() as u32 * self.rounds_per_match() as u32
    }

    /// The action the referee plays for a fighter it does not (or cannot) ask (D-9).
    pub const fn fallback_action(self) -> Action {
        Action::Block
    }

    /// The rules table's stamina column: what performing `action` adds or costs.
    pub const fn stamina_delta(self, action: Action) -> i32 {
        match action {
            Action::Jab => -4,
            Action::Heavy => -14,
            Action::Block => 6,
            Action::Dodge => -6,
            Action::Feint => -2,
            Action::Recover => 22,
        }
    }

    /// The stamina an action needs before the exchange; 0 for those always payable.
    pub const fn stamina_cost(self, action: Action) -> i32 {
        let delta = self.stamina_delta(action);
        if delta < 0 { -delta } else { 0 }
    }

    /// Whether a fighter with `stamina` can pay for `action` (else it is exhausted).
    pub const fn can_pay(self, action: Action, stamina: i32) -> bool {
        stamina >= self.stamina_cost(action)
    }

    /// The token budget per fighter per match of a weight class (D-10).
    pub const fn budget_tokens(self, class: WeightClass) -> u64 {
        match class {
            WeightClass::Light => 8_000,
            WeightClass::Middle => 64_000,
            WeightClass::Heavy => 512_000,
        }
    }
}

impl fmt::Display for Ruleset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.version())
    }
}

/// No ruleset of that version exists in this engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownRuleset {
    pub version: String,
}

impl fmt::Display for UnknownRuleset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown ruleset version {:?} (this engine knows 1.0.0)",
            self.version
        )
    }
}

impl std::error::Error for UnknownRuleset {}

/// Weight classes: the token budget a fighter has for a whole match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WeightClass {
    Light,
    Middle,
    Heavy,
}

impl WeightClass {
    pub const ALL: [WeightClass; 3] = [WeightClass::Light, WeightClass::Middle, WeightClass::Heavy];

    pub const fn name(self) -> &'static str {
        match self {
            WeightClass::Light => "light",
            WeightClass::Middle => "middle",
            WeightClass::Heavy => "heavy",
        }
    }

    pub fn from_name(name: &str) -> Option<WeightClass> {
        WeightClass::ALL
            .into_iter()
            .find(|class| class.name() == name)
    }
}

impl fmt::Display for WeightClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// The text was not `light`, `middle` or `heavy`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseClassError {
    pub text: String,
}

impl fmt::Display for ParseClassError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown weight class {:?} (expected light, middle or heavy)",
            self.text
        )
    }
}

impl std::error::Error for ParseClassError {}

impl FromStr for WeightClass {
    type Err = ParseClassError;

    fn from_str(text: &str) -> Result<WeightClass, ParseClassError> {
        WeightClass::from_name(&text.trim().to_ascii_lowercase()).ok_or_else(|| ParseClassError {
            text: text.to_owned(),
        })
    }
}
