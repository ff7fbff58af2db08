//! One pairing wave: a pure function over everyone waiting in a class.
//!
//! Pairs with the smallest cost go first (a greedy approximation of a
//! minimum-weight matching). A pair's cost is its rating gap plus
//! [`RECENT_MEETING_PENALTY`] for each time the two met in either bot's last
//! [`RECENT_OPPONENTS`] matches, as lichess's pools penalise recent opponents:
//! without it the nearest neighbours meet again and again, and a deterministic
//! pair replays one game. A pair whose versions had already repeated a game
//! this season when they last met (marked with [`REPEATED_MARK`] in the recent
//! opponents) costs [`REPEATED_PAIR_PENALTY`] more: its next game would most
//! likely be that game again, which settles stakes but is not rated, so it
//! meets only when no partner that would play a new game is within reach. Each
//! bot accepts a cost that widens with the waves it has waited. A bot is never
//! paired with itself, with a bot of the same owner, with the opponent it just
//! played, or with one it met
//! [`MAX_PAIR_MEETINGS_PER_SEASON`](crate::limits::MAX_PAIR_MEETINGS_PER_SEASON)
//! times this season. Candidates are the
//! [`MATCHMAKER_NEIGHBOURS`] nearest bots by rating on either side, so a wave is
//! `O(n log n)` whatever the queue length. A pair's sides alternate from one
//! meeting to the next ([`first_plays_side_a`]).

use std::collections::{BTreeSet, HashMap, HashSet};

use duel_rules::WeightClass;

use crate::error::{CoreError, Result};
use crate::limits::{
    BASE_RATING_GAP, MATCHMAKER_NEIGHBOURS, MAX_RATING_GAP, RATING_GAP_WIDEN_PER_WAVE,
    RECENT_MEETING_PENALTY, RECENT_OPPONENTS, REPEATED_PAIR_PENALTY,
};

/// One bot waiting in the queue.
#[derive(Clone, Debug, PartialEq)]
pub struct Waiting {
    pub bot_id: String,
    pub owner_id: String,
    pub rating: f64,
    /// Waves this bot sat through without a partner.
    pub waves_waited: i64,
    /// The opponents of its last matches, the latest first (at most
    /// [`crate::limits::RECENT_OPPONENTS`]), each a bot id, followed by
    /// [`REPEATED_MARK`] when the pair had already repeated a game this season
    /// as they met ([`remember_opponent`]). The first it may not meet again at
    /// once; each other meeting costs [`RECENT_MEETING_PENALTY`].
    pub recent_opponents: Vec<String>,
}

/// Follows an opponent's id in a bot's recent opponents when the pair's
/// versions had already repeated a game this season as they met. Bot ids are
/// generated without it. Carried in the list the wave reads anyway, so a wave
/// asks the store for nothing more (a set of such pairs read per wave was tens
/// of thousands of rows for a class of 10,000 deterministic bots).
pub const REPEATED_MARK: char = '!';

/// An entry of a bot's recent opponents: the opponent's id, and whether the
/// pair had repeated a game as they met.
fn recent_entry(entry: &str) -> (&str, bool) {
    match entry.strip_suffix(REPEATED_MARK) {
        Some(id) => (id, true),
        None => (entry, false),
    }
}

/// Pairs that may not meet again this season, each as (smaller bot id, larger).
pub type ExhaustedPairs = BTreeSet<(String, String)>;

/// The key of a pair in [`ExhaustedPairs`].
pub fn pair_key(a: &str, b: &str) -> (String, String) {
    if a <= b {
        (a.to_owned(), b.to_owned())
    } else {
        (b.to_owned(), a.to_owned())
    }
}

/// Whether `first` plays side A in the pair's next meeting, after it met
/// `second` `meetings_before` times this season: the bot with the smaller id
/// plays side A in the pair's 1st, 3rd, 5th… meeting and side B in the 2nd,
/// 4th…. The rules are the same for both sides, but a bot may play a side
/// differently, so a deterministic pair plays two different games, one from
/// each side; alternating rates both sides of the pair, as a double round
/// robin plays it, rather than one game and its repeats.
pub fn first_plays_side_a(first: &str, second: &str, meetings_before: i64) -> bool {
    (first <= second) == (meetings_before.rem_euclid(2) == 0)
}

/// A bot's recent opponents after it is paired with `opponent`: the new one
/// first, marked if the pair had already `repeated` a game this season, the
/// oldest forgotten past [`RECENT_OPPONENTS`].
pub fn remember_opponent(recent: &[String], opponent: &str, repeated: bool) -> Vec<String> {
    let entry = if repeated {
        format!("{opponent}{REPEATED_MARK}")
    } else {
        opponent.to_owned()
    };
    std::iter::once(entry)
        .chain(recent.iter().cloned())
        .take(RECENT_OPPONENTS)
        .collect()
}

/// The widest gap a bot that waited `waves_waited` waves accepts.
pub fn allowed_gap(waves_waited: i64) -> f64 {
    let waves = waves_waited.clamp(0, 1_000) as f64;
    (BASE_RATING_GAP + RATING_GAP_WIDEN_PER_WAVE * waves).min(MAX_RATING_GAP)
}

fn just_met(a: &Waiting, b: &Waiting) -> bool {
    let last_met = |x: &Waiting, y: &Waiting| {
        x.recent_opponents
            .first()
            .is_some_and(|entry| recent_entry(entry).0 == y.bot_id)
    };
    last_met(a, b) || last_met(b, a)
}

/// The pairs of `pairs` whose bots both wait in this wave, by their indexes
/// in `waiting` (smaller first): a wave looks each candidate up by two
/// integers instead of building its key of two ids.
fn wave_pairs(waiting: &[Waiting], pairs: &ExhaustedPairs) -> HashSet<(usize, usize)> {
    if pairs.is_empty() {
        return HashSet::new();
    }
    let index: HashMap<&str, usize> = waiting
        .iter()
        .enumerate()
        .map(|(at, bot)| (bot.bot_id.as_str(), at))
        .collect();
    pairs
        .iter()
        .filter_map(|(low, high)| {
            let (x, y) = (*index.get(low.as_str())?, *index.get(high.as_str())?);
            Some((x.min(y), x.max(y)))
        })
        .collect()
}

/// One side of a ranked match as [`may_meet`] judges it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Contender<'a> {
    pub owner_id: &'a str,
    pub class: WeightClass,
}

/// Whether two bots may meet in a ranked match, whoever paired them (a wave,
/// or a caller outside the queue): bots of one class and of two owners. A
/// wave's pool is one class, and [`pair_wave`] pairs no two bots of one owner.
pub fn may_meet(a: Contender<'_>, b: Contender<'_>) -> Result<()> {
    if a.class != b.class {
        return Err(CoreError::Invalid(format!(
            "bots of classes {} and {} cannot meet",
            a.class.name(),
            b.class.name()
        )));
    }
    if one_owner(a.owner_id, b.owner_id) {
        return Err(CoreError::Invalid(
            "two bots of one owner cannot meet".to_owned(),
        ));
    }
    Ok(())
}

fn one_owner(a: &str, b: &str) -> bool {
    a == b
}

fn compatible(a: &Waiting, b: &Waiting, exhausted: bool) -> bool {
    a.bot_id != b.bot_id && !one_owner(&a.owner_id, &b.owner_id) && !just_met(a, b) && !exhausted
}

/// What meeting again costs the pair, in rating points: the penalty for each
/// recent meeting, counted in whichever bot's list holds more of them, and
/// [`REPEATED_PAIR_PENALTY`] if, at their latest meeting either list holds,
/// the pair had already repeated a game this season.
fn meeting_again_cost(a: &Waiting, b: &Waiting) -> f64 {
    // How often `x` met `y` lately, and whether their latest meeting was marked.
    let meetings = |x: &Waiting, y: &Waiting| -> (usize, bool) {
        let mut met = 0;
        let mut latest_repeated = None;
        for entry in &x.recent_opponents {
            let (opponent, repeated) = recent_entry(entry);
            if opponent == y.bot_id {
                met += 1;
                latest_repeated.get_or_insert(repeated);
            }
        }
        (met, latest_repeated.unwrap_or(false))
    };
    let (met_ab, repeated_ab) = meetings(a, b);
    let (met_ba, repeated_ba) = meetings(b, a);
    let repeated = if repeated_ab || repeated_ba {
        REPEATED_PAIR_PENALTY
    } else {
        0.0
    };
    met_ab.max(met_ba) as f64 * RECENT_MEETING_PENALTY + repeated
}

/// Pairs bots of one wave; returns index pairs into `waiting`, each bot at most
/// once. Deterministic: ties break on the position in `waiting`.
pub fn pair_wave(waiting: &[Waiting], exhausted: &ExhaustedPairs) -> Vec<(usize, usize)> {
    let mut order: Vec<usize> = (0..waiting.len()).collect();
    order.sort_by(|&x, &y| {
        waiting[x]
            .rating
            .total_cmp(&waiting[y].rating)
            .then(x.cmp(&y))
    });
    let exhausted = wave_pairs(waiting, exhausted);
    let mut edges: Vec<(f64, usize, usize)> =
        Vec::with_capacity(waiting.len() * MATCHMAKER_NEIGHBOURS);
    for (position, &first) in order.iter().enumerate() {
        let a = &waiting[first];
        let window_a = allowed_gap(a.waves_waited);
        for &second in order[position + 1..].iter().take(MATCHMAKER_NEIGHBOURS) {
            let b = &waiting[second];
            let gap = (b.rating - a.rating).abs();
            // Sorted by rating: every later bot is further away.
            if gap > MAX_RATING_GAP {
                break;
            }
            // Either bot's widened window suffices: the one that waited longer
            // accepts. A recent meeting, or a repeated game, counts as
            // distance, so the pair meets again only when nobody nearer is
            // free or after some waiting.
            let key = (first.min(second), first.max(second));
            let cost = gap + meeting_again_cost(a, b);
            // Most waves know no exhausted pair: an empty set is not hashed into.
            if cost <= window_a.max(allowed_gap(b.waves_waited))
                && compatible(a, b, !exhausted.is_empty() && exhausted.contains(&key))
            {
                edges.push((cost, key.0, key.1));
            }
        }
    }
    edges.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
    let mut taken = vec![false; waiting.len()];
    let mut pairs = Vec::with_capacity(waiting.len() / 2);
    for (_, first, second) in edges {
        if !taken[first] && !taken[second] {
            taken[first] = true;
            taken[second] = true;
            pairs.push((first, second));
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bot(id: &str, owner: &str, rating: f64, waves: i64, last: Option<&str>) -> Waiting {
        with_recent(id, owner, rating, waves, last.as_slice())
    }

    fn with_recent(id: &str, owner: &str, rating: f64, waves: i64, recent: &[&str]) -> Waiting {
        Waiting {
            bot_id: id.into(),
            owner_id: owner.into(),
            rating,
            waves_waited: waves,
            recent_opponents: recent
                .iter()
                .map(|opponent| (*opponent).to_owned())
                .collect(),
        }
    }

    fn pair(waiting: &[Waiting]) -> Vec<(usize, usize)> {
        pair_wave(waiting, &ExhaustedPairs::new())
    }

    #[test]
    fn bots_of_one_class_and_two_owners_may_meet() {
        let side = |owner_id, class| Contender { owner_id, class };
        assert!(
            may_meet(
                side("o1", WeightClass::Light),
                side("o2", WeightClass::Light)
            )
            .is_ok()
        );
        let error = may_meet(
            side("o1", WeightClass::Light),
            side("o2", WeightClass::Heavy),
        )
        .expect_err("classes");
        assert_eq!(
            error.to_string(),
            "invalid argument: bots of classes light and heavy cannot meet"
        );
        let error = may_meet(
            side("o1", WeightClass::Middle),
            side("o1", WeightClass::Middle),
        )
        .expect_err("owner");
        assert_eq!(
            error.to_string(),
            "invalid argument: two bots of one owner cannot meet"
        );
    }

    #[test]
    fn prefers_the_smallest_gap_over_arrival_order() {
        let waiting = [
            bot("a", "o1", 1500.0, 0, None),
            bot("b", "o2", 1590.0, 0, None),
            bot("c", "o3", 1510.0, 0, None),
            bot("d", "o4", 1600.0, 0, None),
        ];
        assert_eq!(pair(&waiting), vec![(0, 2), (1, 3)]);
    }

    #[test]
    fn never_pairs_one_owner_or_an_immediate_rematch() {
        let waiting = [
            bot("a", "o1", 1500.0, 0, Some("c")),
            bot("b", "o1", 1501.0, 0, None),
            bot("c", "o2", 1502.0, 0, Some("a")),
        ];
        assert_eq!(pair(&waiting), vec![(1, 2)]);
    }

    #[test]
    fn the_window_widens_with_waiting() {
        let fresh = [
            bot("a", "o1", 1500.0, 0, None),
            bot("b", "o2", 1800.0, 0, None),
        ];
        assert!(pair(&fresh).is_empty());
        let waited = [
            bot("a", "o1", 1500.0, 4, None),
            bot("b", "o2", 1800.0, 0, None),
        ];
        assert_eq!(pair(&waited), vec![(0, 1)]);
    }

    #[test]
    fn recent_meetings_send_a_bot_to_another_partner() {
        // a met b twice lately (not last): c, further from a by rating, is preferred.
        let waiting = [
            with_recent("a", "o1", 1500.0, 0, &["x", "b", "b"]),
            with_recent("b", "o2", 1505.0, 0, &["y", "a", "a"]),
            with_recent("c", "o3", 1490.0, 0, &[]),
        ];
        assert_eq!(pair(&waiting), vec![(0, 2)]);
        // Alone together, they wait until the window covers the penalty.
        let alone = [waiting[0].clone(), waiting[1].clone()];
        assert!(pair(&alone).is_empty());
        let waited = [
            Waiting {
                waves_waited: 2,
                ..waiting[0].clone()
            },
            waiting[1].clone(),
        ];
        assert_eq!(pair(&waited), vec![(0, 1)]);
    }

    #[test]
    fn a_pair_that_repeated_a_game_waits_for_a_new_game() {
        // a and b are nearest and met once lately, c is further and met a
        // twice: a meets b, unless a and b had repeated a game when they met
        // (b's list marks it), and then a meets c, which plays a new game.
        let waiting = |b_saw_a: &str| {
            [
                with_recent("a", "o1", 1500.0, 2, &["x", "b", "c", "c"]),
                with_recent("b", "o2", 1505.0, 2, &["y", b_saw_a]),
                // b's stablemate, so that a is the one to pair.
                with_recent("c", "o2", 1490.0, 2, &["z", "a", "a"]),
            ]
        };
        assert_eq!(pair(&waiting("a")), vec![(0, 1)]);
        assert_eq!(pair(&waiting("a!")), vec![(0, 2)]);
        // Alone together, they still meet once the window covers the penalty.
        let alone = |waves: i64| {
            waiting("a!")[..2]
                .iter()
                .map(|bot| Waiting {
                    waves_waited: waves,
                    ..bot.clone()
                })
                .collect::<Vec<_>>()
        };
        assert!(pair(&alone(2)).is_empty());
        let waves = ((REPEATED_PAIR_PENALTY + RECENT_MEETING_PENALTY + 5.0 - BASE_RATING_GAP)
            / RATING_GAP_WIDEN_PER_WAVE)
            .ceil() as i64;
        assert_eq!(pair(&alone(waves)), vec![(0, 1)]);
        // What counts is their latest meeting: a new game since (unmarked,
        // earlier in the list) lifts the surcharge.
        let renewed = [
            with_recent("a", "o1", 1500.0, 2, &["x", "b", "b!"]),
            with_recent("b", "o2", 1505.0, 2, &["y", "a", "a!"]),
        ];
        assert_eq!(
            meeting_again_cost(&renewed[0], &renewed[1]),
            2.0 * RECENT_MEETING_PENALTY
        );
        let marked = waiting("a!");
        assert_eq!(
            meeting_again_cost(&marked[0], &marked[1]),
            RECENT_MEETING_PENALTY + REPEATED_PAIR_PENALTY
        );
        // A marked last opponent is still the last opponent.
        let last = [
            with_recent("a", "o1", 1500.0, 1_000, &["b!"]),
            with_recent("b", "o2", 1500.0, 1_000, &[]),
        ];
        assert!(pair(&last).is_empty());
    }

    #[test]
    fn a_marked_meeting_is_remembered_with_its_mark() {
        let recent = remember_opponent(&["x".to_owned()], "b", true);
        assert_eq!(recent, ["b!", "x"]);
        assert_eq!(remember_opponent(&recent, "c", false), ["c", "b!", "x"]);
    }

    #[test]
    fn a_bot_remembers_its_latest_opponents_only() {
        let mut recent: Vec<String> = Vec::new();
        let opponents: Vec<String> = (0..RECENT_OPPONENTS + 3)
            .map(|index| format!("bot{index}"))
            .collect();
        for opponent in &opponents {
            recent = remember_opponent(&recent, opponent, false);
        }
        let expected: Vec<String> = opponents
            .iter()
            .rev()
            .take(RECENT_OPPONENTS)
            .cloned()
            .collect();
        assert_eq!(recent, expected);
    }

    #[test]
    fn a_pairs_sides_alternate_from_meeting_to_meeting() {
        let sides = |meetings_before| {
            if first_plays_side_a("b", "a", meetings_before) {
                ["b", "a"]
            } else {
                ["a", "b"]
            }
        };
        let played: Vec<[&str; 2]> = (0..4).map(sides).collect();
        assert_eq!(played, [["a", "b"], ["b", "a"], ["a", "b"], ["b", "a"]]);
        // Whichever order the wave found them in.
        for meetings_before in 0..4 {
            assert_ne!(
                first_plays_side_a("a", "b", meetings_before),
                first_plays_side_a("b", "a", meetings_before)
            );
        }
    }

    #[test]
    fn an_exhausted_pair_never_meets_again_this_season() {
        let waiting = [
            bot("a", "o1", 1500.0, 1_000, None),
            bot("b", "o2", 1500.0, 1_000, None),
        ];
        let exhausted = ExhaustedPairs::from([pair_key("b", "a")]);
        assert!(pair_wave(&waiting, &exhausted).is_empty());
        assert_eq!(pair(&waiting), vec![(0, 1)]);
    }
}
