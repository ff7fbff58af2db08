//! The six actions, the two sides of a match and where a performed action came from.

use std::fmt;
use std::str::FromStr;

/// An action a fighter attempts in one exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    Jab,
    Heavy,
    Block,
    Dodge,
    Feint,
    Recover,
}

impl Action {
    /// All six actions in the order of the rules table.
    pub const ALL: [Action; 6] = [
        Action::Jab,
        Action::Heavy,
        Action::Block,
        Action::Dodge,
        Action::Feint,
        Action::Recover,
    ];

    /// The contract name used in replays, scripts, WIT and protos (`"JAB"` …).
    pub const fn name(self) -> &'static str {
        match self {
            Action::Jab => "JAB",
            Action::Heavy => "HEAVY",
            Action::Block => "BLOCK",
            Action::Dodge => "DODGE",
            Action::Feint => "FEINT",
            Action::Recover => "RECOVER",
        }
    }

    /// Parses a contract name exactly (upper case), as stored in replays.
    pub fn from_name(name: &str) -> Option<Action> {
        Action::ALL.into_iter().find(|action| action.name() == name)
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// The text was not one of the six action names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseActionError {
    pub text: String,
}

impl fmt::Display for ParseActionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown action {:?} (expected one of JAB, HEAVY, BLOCK, DODGE, FEINT, RECOVER)",
            self.text
        )
    }
}

impl std::error::Error for ParseActionError {}

/// Case-insensitive, for people typing scripts; replays use [`Action::from_name`].
impl FromStr for Action {
    type Err = ParseActionError;

    fn from_str(text: &str) -> Result<Action, ParseActionError> {
        let trimmed = text.trim();
        Action::ALL
            .into_iter()
            .find(|action| action.name().eq_ignore_ascii_case(trimmed))
            .ok_or_else(|| ParseActionError {
                text: text.to_owned(),
            })
    }
}

/// Fighter `a` is the first bot spec given, `b` the second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    A,
    B,
}

impl Side {
    pub const BOTH: [Side; 2] = [Side::A, Side::B];

    pub const fn index(self) -> usize {
        match self {
            Side::A => 0,
            Side::B => 1,
        }
    }

    pub const fn other(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            Side::A => "a",
            Side::B => "b",
        }
    }
}

/// Who chose the action a fighter attempted: its bot, or the fallback policy
/// substituted for one of the three causes of the rules' "Substitution" section.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    Bot,
    /// The bot answered after the wall clock ran out; the answer was discarded.
    Timeout,
    /// The fighter is gassed out: its token budget is spent or a call was refused.
    Budget,
    /// A crash, trap, malformed or illegal answer, or a lost connection.
    Fault,
}

impl Source {
    pub const ALL: [Source; 4] = [Source::Bot, Source::Timeout, Source::Budget, Source::Fault];

    pub const fn name(self) -> &'static str {
        match self {
            Source::Bot => "bot",
            Source::Timeout => "timeout",
            Source::Budget => "budget",
            Source::Fault => "fault",
        }
    }

    pub fn from_name(name: &str) -> Option<Source> {
        Source::ALL.into_iter().find(|source| source.name() == name)
    }

    pub const fn is_substitution(self) -> bool {
        !matches!(self, Source::Bot)
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for action in Action::ALL {
            assert_eq!(Action::from_name(action.name()), Some(action));
            assert_eq!(action.name().to_lowercase().parse::<Action>(), Ok(action));
        }
        for source in Source::ALL {
            assert_eq!(Source::from_name(source.name()), Some(source));
        }
        assert!("PUNCH".parse::<Action>().is_err());
        assert_eq!(Action::from_name("jab"), None);
    }
}
