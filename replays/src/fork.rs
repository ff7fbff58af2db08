//! Forks: a match that replays a parent's recorded exchanges up to a fork
//! point and is played on from there, with one side's bot (or both) swapped.
//! Owns the `fork` member of a replay, the `rNeM` notation of a fork point,
//! the digest that names a parent, and the check of a fork against its parent
//! (the shared prefix identical, the header and the kept fighters the same).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::ReplayError;
use crate::format::{ExchangeRecord, Replay};
use crate::transcript::FighterName;
use crate::verify::{Disagreement, Location};

/// Where a fork leaves its parent: the first exchange decided anew, as
/// round `round`, exchange `exchange` (written `r2e7`). Every exchange before
/// it is the parent's, copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ForkPoint {
    pub round: u8,
    pub exchange: u8,
}

impl ForkPoint {
    /// The first exchange of the match: nothing is copied but the header.
    pub const START: ForkPoint = ForkPoint {
        round: 1,
        exchange: 1,
    };

    /// Parses `rNeM` (`r2e7`; case-insensitive, both numbers from 1).
    pub fn parse(text: &str) -> Result<ForkPoint, ReplayError> {
        let bad = || {
            ReplayError::BadQuery(format!(
                "fork point {text:?} is not rNeM (round N, exchange M, both from 1: r2e7)"
            ))
        };
        let lower = text.trim().to_ascii_lowercase();
        let rest = lower.strip_prefix('r').ok_or_else(bad)?;
        let (round, exchange) = rest.split_once('e').ok_or_else(bad)?;
        let number = |digits: &str| -> Result<u8, ReplayError> {
            if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
                return Err(bad());
            }
            match digits.parse::<u8>() {
                Ok(0) | Err(_) => Err(bad()),
                Ok(value) => Ok(value),
            }
        };
        Ok(ForkPoint {
            round: number(round)?,
            exchange: number(exchange)?,
        })
    }

    /// How many of `replay`'s exchanges come before this point (the length
    /// of the copied prefix). A point the match never reached is refused,
    /// naming where it ended.
    pub fn position_in(self, replay: &Replay) -> Result<usize, ReplayError> {
        let mut last = None;
        for (position, (round, exchange)) in replay.exchanges().enumerate() {
            if (round, exchange.number) == (self.round, self.exchange) {
                return Ok(position);
            }
            last = Some(ForkPoint {
                round,
                exchange: exchange.number,
            });
        }
        Err(ReplayError::BadQuery(match last {
            Some(last) => format!(
                "fork point {self} is not in the match: it ended at {last} (round {}, exchange {})",
                last.round, last.exchange
            ),
            None => format!("fork point {self} is not in the match: it has no exchanges"),
        }))
    }
}

impl fmt::Display for ForkPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}e{}", self.round, self.exchange)
    }
}

impl Serialize for ForkPoint {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ForkPoint {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<ForkPoint, D::Error> {
        let text = String::deserialize(deserializer)?;
        ForkPoint::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// The `fork` member of a replay: which match it was forked from and where.
/// A fork is never ranked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkRecord {
    /// The parent replay's [`replay_sha256`]: what its signature covers, so
    /// the same match however its file is spaced or whoever signed it.
    pub parent: String,
    pub parent_match_id: String,
    /// The first exchange played anew.
    pub at: ForkPoint,
    /// The sides whose bot was replaced at the fork point (`a`, `b`, both,
    /// or neither: the same bots asked again from there).
    pub swapped: Vec<FighterName>,
}

impl ForkRecord {
    pub fn swapped(&self, side: duel_rules::Side) -> bool {
        self.swapped.contains(&FighterName::from(side))
    }
}

/// `sha256:` of the replay's canonical bytes (RFC 8785, without its
/// signature): the digest a fork names its parent by.
pub fn replay_sha256(replay: &Replay) -> Result<String, ReplayError> {
    replay.check_integers()?;
    let mut unsigned = replay.clone();
    unsigned.signature = None;
    let canonical = serde_json_canonicalizer::to_vec(&unsigned)
        .map_err(|error| ReplayError::Malformed(format!("cannot canonicalise: {error}")))?;
    Ok(crate::format::sha256_digest(&canonical))
}

/// Checks `fork` against `parent`: the parent is the one it names, the header
/// fixed at acceptance is the parent's (ruleset, class, budget, seed,
/// opening), each side that was not swapped is the parent's fighter, and
/// every exchange before the fork point is the parent's, identical in every
/// field. The rules and the fork's own exchanges are checked by
/// [`verify`](crate::verify) as for any replay.
pub fn check_fork(fork: &Replay, parent: &Replay) -> Result<(), Disagreement> {
    let header = |detail: String| Disagreement {
        location: Location::Header,
        detail,
    };
    let Some(record) = &fork.fork else {
        return Err(header(
            "the replay is not a fork (it has no fork member)".to_owned(),
        ));
    };
    let digest = replay_sha256(parent).map_err(|error| header(error.to_string()))?;
    if record.parent != digest {
        return Err(header(format!(
            "the fork's parent is {}, but the replay given as its parent is {digest}",
            record.parent
        )));
    }
    if record.parent_match_id != parent.match_id {
        return Err(header(format!(
            "the fork names parent match {:?}, the parent is match {:?}",
            record.parent_match_id, parent.match_id
        )));
    }
    let same = |field: &str, equal: bool| {
        if equal {
            Ok(())
        } else {
            Err(header(format!(
                "{field} differs from the parent's: a fork keeps what was fixed when its parent was accepted"
            )))
        }
    };
    same("ruleset", fork.ruleset == parent.ruleset)?;
    same("class", fork.class == parent.class)?;
    same("budget", fork.budget == parent.budget)?;
    same("seed", fork.seed == parent.seed)?;
    same("opening", fork.opening == parent.opening)?;
    for side in duel_rules::Side::BOTH {
        if !record.swapped(side) && fork.fighters[side.index()] != parent.fighters[side.index()] {
            return Err(header(format!(
                "fighter {} was not swapped but is not the parent's {}",
                side.name(),
                parent.fighters[side.index()].name
            )));
        }
    }
    let position = record
        .at
        .position_in(parent)
        .map_err(|error| header(format!("in the parent: {error}")))?;
    let mut fork_exchanges = fork.exchanges();
    for (round, parent_exchange) in parent.exchanges().take(position) {
        let here = |side| Location::Exchange {
            round,
            exchange: parent_exchange.number,
            side,
        };
        let Some((fork_round, fork_exchange)) = fork_exchanges.next() else {
            return Err(Disagreement {
                location: here(None),
                detail: format!(
                    "the fork ends before its fork point {}: this exchange of the parent is missing",
                    record.at
                ),
            });
        };
        if (fork_round, fork_exchange.number) != (round, parent_exchange.number) {
            return Err(Disagreement {
                location: here(None),
                detail: format!(
                    "the fork has round {fork_round}, exchange {} here instead",
                    fork_exchange.number
                ),
            });
        }
        if let Some(side) = first_differing_side(fork_exchange, parent_exchange) {
            return Err(Disagreement {
                location: here(side),
                detail: format!(
                    "differs from the parent's before the fork point {}: the prefix must be copied byte for byte",
                    record.at
                ),
            });
        }
    }
    // The rounds the prefix closed keep the parent's results.
    for (fork_round, parent_round) in fork.rounds.iter().zip(&parent.rounds) {
        let closed_before_fork = parent_round.number < record.at.round;
        if closed_before_fork && fork_round.result != parent_round.result {
            return Err(Disagreement {
                location: Location::Round {
                    round: parent_round.number,
                },
                detail: "ended before the fork point but its result differs from the parent's"
                    .to_owned(),
            });
        }
    }
    Ok(())
}

/// The side whose record differs, compared as the JSON each writes (every
/// field, in the contract's form); `Some(None)` for the exchange's number.
fn first_differing_side(
    fork: &ExchangeRecord,
    parent: &ExchangeRecord,
) -> Option<Option<duel_rules::Side>> {
    if fork.number != parent.number {
        return Some(None);
    }
    for side in duel_rules::Side::BOTH {
        let json = |record: &ExchangeRecord| serde_json::to_vec(record.sides()[side.index()]).ok();
        match (json(fork), json(parent)) {
            (Some(fork_json), Some(parent_json)) if fork_json == parent_json => {}
            _ => return Some(Some(side)),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any text parses or is refused with the notation named; never a
        /// panic. Every point prints as it parses.
        #[test]
        fn any_text_parses_or_is_refused(text in ".{0,12}", round in 1u8.., exchange in 1u8..) {
            if let Err(error) = ForkPoint::parse(&text) {
                prop_assert!(error.to_string().contains("rNeM"));
            }
            let point = ForkPoint { round, exchange };
            prop_assert_eq!(ForkPoint::parse(&point.to_string()).ok(), Some(point));
        }
    }

    #[test]
    fn fork_points_parse_and_print() {
        for (text, round, exchange) in [("r2e7", 2, 7), ("R1E1", 1, 1), (" r3e12 ", 3, 12)] {
            let point = ForkPoint::parse(text).expect(text);
            assert_eq!((point.round, point.exchange), (round, exchange));
        }
        assert_eq!(
            ForkPoint::parse("r2e7").expect("parses").to_string(),
            "r2e7"
        );
        for bad in [
            "", "r", "2e7", "r2", "re7", "r2e", "r0e1", "r1e0", "r256e1", "r-1e2", "r+1e2",
            "r2e7x", "r2 e7",
        ] {
            let error = ForkPoint::parse(bad).expect_err(bad).to_string();
            assert!(error.contains("rNeM"), "{bad}: {error}");
        }
    }
}
