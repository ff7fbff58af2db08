//! The SPRT A/B test: plays match pairs (same seed, sides swapped) between a new
//! bot and a base bot until the sequential probability ratio test decides, and
//! folds results in pair order so the verdict does not depend on `--jobs`.

use std::collections::BTreeMap;

use super::pool::{MatchSummary, ScheduledMatch};
use super::stats::{Pentanomial, Sprt, Verdict, Wdl};
use super::tournament::game_seed;

/// Entrant index of the bot under test; the base is 1.
pub const NEW: usize = 0;
pub const BASE: usize = 1;

/// The matches of pair `pair`: the new bot as `a`, then as `b`, on one seed.
pub fn pair_matches(seed: u64, pair: u64) -> [ScheduledMatch; 2] {
    let pair_seed = game_seed(seed, pair);
    [
        ScheduledMatch {
            index: 2 * pair,
            entrants: [NEW, BASE],
            seed: pair_seed,
        },
        ScheduledMatch {
            index: 2 * pair + 1,
            entrants: [BASE, NEW],
            seed: pair_seed,
        },
    ]
}

/// The running state of an SPRT.
#[derive(Clone, Debug)]
pub struct SprtRun {
    pub sprt: Sprt,
    pub pentanomial: Pentanomial,
    /// Game results of the new bot.
    pub wdl: Wdl,
    /// Pairs folded into the statistics so far (always a prefix of pair order).
    pub pairs_done: u64,
    pub llr: f64,
    pub verdict: Verdict,
    /// Finished matches of pairs not yet folded in, by match index.
    pending: BTreeMap<u64, MatchSummary>,
    /// Every folded match, for the per-bot report.
    pub summaries: Vec<MatchSummary>,
    /// The plays of the first pair, and whether every later pair played the
    /// very same two games (bots that ignore the seed: one pair counted many
    /// times, so the verdict means little).
    first_pair: Option<[u64; 2]>,
    all_pairs_alike: bool,
}

impl SprtRun {
    pub fn new(sprt: Sprt) -> SprtRun {
        SprtRun {
            sprt,
            pentanomial: Pentanomial::default(),
            wdl: Wdl::default(),
            pairs_done: 0,
            llr: 0.0,
            verdict: Verdict::Continue,
            pending: BTreeMap::new(),
            summaries: Vec::new(),
            first_pair: None,
            all_pairs_alike: true,
        }
    }

    /// At least two pairs were folded and every one played the same two games
    /// as the first.
    pub fn identical_pairs(&self) -> bool {
        self.pairs_done >= 2 && self.all_pairs_alike
    }

    /// Takes one finished match; folds every complete pair that is next in order.
    /// Returns the verdict after folding. Matches after a decision are ignored.
    pub fn record(&mut self, summary: MatchSummary) -> Verdict {
        if self.verdict != Verdict::Continue {
            return self.verdict;
        }
        self.pending.insert(summary.index, summary);
        loop {
            let first = 2 * self.pairs_done;
            if !(self.pending.contains_key(&first) && self.pending.contains_key(&(first + 1))) {
                break;
            }
            let (Some(one), Some(two)) = (
                self.pending.remove(&first),
                self.pending.remove(&(first + 1)),
            ) else {
                break;
            };
            let plays = [one.play, two.play];
            match self.first_pair {
                None => self.first_pair = Some(plays),
                Some(first) => self.all_pairs_alike &= first == plays,
            }
            let mut pair_points = 0;
            for summary in [one, two] {
                let points = summary.points_doubled(NEW).unwrap_or(0);
                pair_points += points;
                self.wdl.add(Wdl::of_points_doubled(points));
                self.summaries.push(summary);
            }
            self.pentanomial.add_pair(pair_points);
            self.pairs_done += 1;
            self.llr = self.pentanomial.llr(self.sprt.elo0, self.sprt.elo1);
            self.verdict = self.sprt.verdict(self.llr);
            if self.verdict != Verdict::Continue {
                self.pending.clear();
                break;
            }
        }
        self.verdict
    }
}
