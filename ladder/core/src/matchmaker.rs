//! One pairing wave: a pure function over everyone waiting in a class.
//!
//! Pairs with the smallest rating gap go first (a greedy approximation of a
//! minimum-weight matching), each bot accepting a gap that widens with the waves
//! it has waited; a bot is never paired with itself, with a bot of the same
//! owner, or with the opponent it just played. Candidates are the
//! [`MATCHMAKER_NEIGHBOURS`] nearest bots by rating on either side, so a wave is
//! `O(n log n)` whatever the queue length.

use crate::limits::{
    BASE_RATING_GAP, MATCHMAKER_NEIGHBOURS, MAX_RATING_GAP, RATING_GAP_WIDEN_PER_WAVE,
};

/// One bot waiting in the queue.
#[derive(Clone, Debug, PartialEq)]
pub struct Waiting {
    pub bot_id: String,
    pub owner_id: String,
    pub rating: f64,
    /// Waves this bot sat through without a partner.
    pub waves_waited: i64,
    /// The opponent of its last match, which it may not meet again at once.
    pub last_opponent: Option<String>,
}

/// The widest gap a bot that waited `waves_waited` waves accepts.
pub fn allowed_gap(waves_waited: i64) -> f64 {
    let waves = waves_waited.clamp(0, 1_000) as f64;
    (BASE_RATING_GAP + RATING_GAP_WIDEN_PER_WAVE * waves).min(MAX_RATING_GAP)
}

fn compatible(a: &Waiting, b: &Waiting) -> bool {
    a.bot_id != b.bot_id
        && a.owner_id != b.owner_id
        && a.last_opponent.as_deref() != Some(b.bot_id.as_str())
        && b.last_opponent.as_deref() != Some(a.bot_id.as_str())
}

/// Pairs bots of one wave; returns index pairs into `waiting`, each bot at most
/// once. Deterministic: ties break on the position in `waiting`.
pub fn pair_wave(waiting: &[Waiting]) -> Vec<(usize, usize)> {
    let mut order: Vec<usize> = (0..waiting.len()).collect();
    order.sort_by(|&x, &y| {
        waiting[x]
            .rating
            .total_cmp(&waiting[y].rating)
            .then(x.cmp(&y))
    });
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
            // Either bot's widened window suffices: the one that waited longer accepts.
            if gap <= window_a.max(allowed_gap(b.waves_waited)) && compatible(a, b) {
                edges.push((gap, first.min(second), first.max(second)));
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
        Waiting {
            bot_id: id.into(),
            owner_id: owner.into(),
            rating,
            waves_waited: waves,
            last_opponent: last.map(str::to_owned),
        }
    }

    #[test]
    fn prefers_the_smallest_gap_over_arrival_order() {
        let waiting = [
            bot("a", "o1", 1500.0, 0, None),
            bot("b", "o2", 1590.0, 0, None),
            bot("c", "o3", 1510.0, 0, None),
            bot("d", "o4", 1600.0, 0, None),
        ];
        assert_eq!(pair_wave(&waiting), vec![(0, 2), (1, 3)]);
    }

    #[test]
    fn never_pairs_one_owner_or_an_immediate_rematch() {
        let waiting = [
            bot("a", "o1", 1500.0, 0, Some("c")),
            bot("b", "o1", 1501.0, 0, None),
            bot("c", "o2", 1502.0, 0, Some("a")),
        ];
        assert_eq!(pair_wave(&waiting), vec![(1, 2)]);
    }

    #[test]
    fn the_window_widens_with_waiting() {
        let fresh = [
            bot("a", "o1", 1500.0, 0, None),
            bot("b", "o2", 1800.0, 0, None),
        ];
        assert!(pair_wave(&fresh).is_empty());
        let waited = [
            bot("a", "o1", 1500.0, 4, None),
            bot("b", "o2", 1800.0, 0, None),
        ];
        assert_eq!(pair_wave(&waited), vec![(0, 1)]);
    }
}
