//! The repeat rule: which settled matches move ratings.
//!
//! Ruleset 1.0.0 has no randomness, so two bot versions that choose the same
//! actions play the same game, whatever the seed: a deterministic pair meets
//! again and again and every meeting is the same evidence. A match is a
//! *repeat* when, in the same season, the same two bot versions already played
//! a rated match with the same actions in every exchange. A repeat settles its
//! stakes as usual but moves no rating and counts in no W/D/L; the match page
//! names the match it repeats (docs/RULES.md, "Repeats are not rated").
//!
//! Every other game is rated, however often the pair met: a pair whose games
//! differ (a random bot, a model) is measured better by each. That it meets
//! more often than a deterministic pair does not tilt the standings, since
//! the season fit weighs every pair the same
//! ([`crate::rating::season_fit`]). Matches settled before this rule may
//! carry `not_rated = "pair_rated"` (a pair's third game, when a pair was
//! rated twice a season at most); they stay as they were settled.
//!
//! The comparison goes through a [`play_key`]: a digest of both versions and
//! of every exchange's pair of actions, oriented by bot id so that it is the
//! same whichever side each bot was drawn on.

use duel_rules::Action;
use sha2::{Digest, Sha256};

/// One side of a match as the key sees it: the bot and the version it played.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeySide<'a> {
    pub bot_id: &'a str,
    pub version: i64,
}

/// The key of a played match: `sha256:` and 64 hex digits. Equal keys mean
/// the same two versions and the same action in every exchange; `actions` is
/// per exchange, side `a`'s then side `b`'s, in the order played.
pub fn play_key(sides: [KeySide<'_>; 2], actions: &[[Action; 2]]) -> String {
    // The side with the smaller bot id goes first, in the header and in each
    // exchange: swapping sides gives the same key.
    let swapped = sides[0].bot_id > sides[1].bot_id;
    let (first, second) = if swapped {
        (sides[1], sides[0])
    } else {
        (sides[0], sides[1])
    };
    let mut hasher = Sha256::new();
    for side in [first, second] {
        // Lengths first, so no two headers run together into the same bytes.
        hasher.update((side.bot_id.len() as u64).to_le_bytes());
        hasher.update(side.bot_id.as_bytes());
        hasher.update(side.version.to_le_bytes());
    }
    hasher.update((actions.len() as u64).to_le_bytes());
    for [a, b] in actions {
        let (x, y) = if swapped { (b, a) } else { (a, b) };
        hasher.update([action_byte(*x), action_byte(*y)]);
    }
    let digest = hasher.finalize();
    let mut key = String::with_capacity(7 + 64);
    key.push_str("sha256:");
    for byte in digest {
        key.push_str(&format!("{byte:02x}"));
    }
    key
}

/// The key of the pair of versions alone: `sha256:` and 64 hex digits, the
/// same whichever side each was drawn on.
pub fn pair_key(sides: [KeySide<'_>; 2]) -> String {
    play_key(sides, &[])
}

/// Why a settled match moved no rating, as its row stores it (`not_rated`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotRated {
    /// It repeats a rated match of its season move for move.
    Repeat,
    /// A pair's third game when a pair was rated twice a season at most:
    /// no longer given, read on matches settled before this rule.
    PairRated,
}

impl NotRated {
    pub fn name(self) -> &'static str {
        match self {
            NotRated::Repeat => "repeat",
            NotRated::PairRated => "pair_rated",
        }
    }

    pub fn from_name(name: &str) -> Option<NotRated> {
        [NotRated::Repeat, NotRated::PairRated]
            .into_iter()
            .find(|reason| reason.name() == name)
    }
}

/// Whether a settled match moves ratings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Rated,
    /// The same versions played the same game in this rated match.
    Repeat(String),
}

impl Verdict {
    /// Why it is not rated, as stored and shown: `None` when it is rated.
    pub fn not_rated(&self) -> Option<&'static str> {
        match self {
            Verdict::Rated => None,
            Verdict::Repeat(_) => Some(NotRated::Repeat.name()),
        }
    }

    pub fn repeat_of(&self) -> Option<&str> {
        match self {
            Verdict::Repeat(id) => Some(id),
            Verdict::Rated => None,
        }
    }
}

/// The verdict on a match from the rated matches of its season between the
/// same two versions (`(match id, accepted_ms, same game)`): a repeat of the
/// first with the same game, else rated.
pub fn verdict<'a>(rated_of_pair: impl IntoIterator<Item = (&'a str, i64, bool)>) -> Verdict {
    let same_game = rated_of_pair
        .into_iter()
        .filter(|(_, _, same)| *same)
        .map(|(id, accepted, _)| (id, accepted));
    match repeat_of(same_game) {
        Some(first) => Verdict::Repeat(first.to_owned()),
        None => Verdict::Rated,
    }
}

fn action_byte(action: Action) -> u8 {
    // The position in the rules table: stable, since rulesets only add.
    Action::ALL
        .iter()
        .position(|candidate| *candidate == action)
        .map_or(u8::MAX, |position| position as u8)
}

/// Whether a match is rated: `None` when it is, or the id of the rated match
/// of its season it repeats. `earlier` is every rated match of the season with
/// the same key, as `(match id, accepted_ms)`; the first accepted is named.
pub fn repeat_of<'a>(earlier: impl IntoIterator<Item = (&'a str, i64)>) -> Option<&'a str> {
    earlier
        .into_iter()
        .min_by(|x, y| x.1.cmp(&y.1).then(x.0.cmp(y.0)))
        .map(|(id, _)| id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Action::*;

    fn side(bot_id: &str, version: i64) -> KeySide<'_> {
        KeySide { bot_id, version }
    }

    #[test]
    fn the_same_game_from_either_side_has_one_key() {
        let played = [[Jab, Block], [Heavy, Dodge], [Recover, Jab]];
        let mirrored: Vec<[Action; 2]> = played.iter().map(|[a, b]| [*b, *a]).collect();
        assert_eq!(
            play_key([side("x", 1), side("y", 2)], &played),
            play_key([side("y", 2), side("x", 1)], &mirrored)
        );
    }

    #[test]
    fn any_difference_gives_another_key() {
        let played = [[Jab, Block], [Heavy, Dodge]];
        let base = play_key([side("x", 1), side("y", 1)], &played);
        let cases: Vec<(&str, String)> = vec![
            (
                "one action",
                play_key(
                    [side("x", 1), side("y", 1)],
                    &[[Jab, Block], [Heavy, Feint]],
                ),
            ),
            ("a version", play_key([side("x", 2), side("y", 1)], &played)),
            ("a bot", play_key([side("x", 1), side("z", 1)], &played)),
            (
                "one exchange more",
                play_key(
                    [side("x", 1), side("y", 1)],
                    &[[Jab, Block], [Heavy, Dodge], [Jab, Jab]],
                ),
            ),
            (
                "the sides' actions swapped",
                play_key(
                    [side("x", 1), side("y", 1)],
                    &[[Block, Jab], [Dodge, Heavy]],
                ),
            ),
            (
                "ids that run together",
                play_key([side("x1", 1), side("y", 1)], &played),
            ),
        ];
        for (change, key) in cases {
            assert_ne!(key, base, "{change} must change the key");
        }
        assert!(base.starts_with("sha256:") && base.len() == 71);
    }

    #[test]
    fn a_pair_is_rated_at_every_new_game_and_never_twice_for_one_game() {
        assert_eq!(verdict([]), Verdict::Rated);
        assert_eq!(verdict([("m1", 1, false)]), Verdict::Rated);
        assert_eq!(
            verdict([("m1", 1, false), ("m2", 2, false), ("m3", 3, false)]),
            Verdict::Rated
        );
        assert_eq!(
            verdict([("m1", 1, false), ("m2", 2, true)]),
            Verdict::Repeat("m2".to_owned())
        );
        assert_eq!(verdict([("m3", 3, true)]).not_rated(), Some("repeat"));
        assert_eq!(Verdict::Rated.not_rated(), None);
        for reason in [NotRated::Repeat, NotRated::PairRated] {
            assert_eq!(NotRated::from_name(reason.name()), Some(reason));
        }
        assert_eq!(NotRated::from_name(""), None);
        assert_eq!(
            pair_key([side("x", 1), side("y", 2)]),
            pair_key([side("y", 2), side("x", 1)])
        );
        assert_ne!(
            pair_key([side("x", 1), side("y", 2)]),
            pair_key([side("x", 1), side("y", 3)])
        );
    }

    #[test]
    fn a_repeat_names_the_first_rated_match() {
        assert_eq!(repeat_of([]), None);
        assert_eq!(repeat_of([("m9", 30), ("m2", 10), ("m5", 20)]), Some("m2"));
        assert_eq!(repeat_of([("mb", 10), ("ma", 10)]), Some("ma"));
    }
}
