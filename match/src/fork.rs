//! Starting a match from a recorded one: a [`ForkStart`] holds the parent
//! replay and the fork point, checks that the parent can be forked there, and
//! gives the runner the prefix to copy. The runner replays that prefix into
//! the recorder (state, tape, each side's spent budget, as they stood) and
//! asks the bots from the fork point on.

use duel_replays::{
    ExchangeRecord, FighterName, ForkPoint, ForkRecord, Replay, SourceName, replay_sha256,
};
use duel_rules::{Ruleset, Side};

use crate::error::MatchError;
use crate::host::MatchOptions;
use crate::opening::Opening;
use crate::record::{MatchConfig, MatchRecorder};

/// A fork about to be played: the parent (verified), where it leaves it, and
/// which sides get a new bot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForkStart {
    parent: Replay,
    /// How many of the parent's exchanges are copied.
    position: usize,
    record: ForkRecord,
}

impl ForkStart {
    /// Checks that `parent` can be forked at `at` with `swapped` replaced:
    /// it verifies (rules and built-in choices), it is of this referee's
    /// ruleset, the point is in the match, and no swapped side had already
    /// spent its budget there (its new bot would never be asked).
    pub fn new(parent: Replay, at: ForkPoint, swapped: &[Side]) -> Result<ForkStart, MatchError> {
        let ruleset = parent.ruleset()?;
        if ruleset != Ruleset::CURRENT {
            return Err(MatchError::Config(format!(
                "the replay is of ruleset {}; this referee plays {} and forks only its matches",
                ruleset.version(),
                Ruleset::CURRENT.version()
            )));
        }
        if let Err(disagreement) = crate::verify::verify_replay(&parent)? {
            return Err(MatchError::Config(format!(
                "the replay does not verify, so it cannot be forked: {disagreement}"
            )));
        }
        let position = at.position_in(&parent)?;
        let spent = gassed_out_at(&parent, position);
        for side in swapped {
            if spent(*side) {
                return Err(MatchError::Config(format!(
                    "fighter {} had gassed out (its budget spent) before {at}: a bot swapped in there would never be asked; fork at an earlier exchange",
                    side.name()
                )));
            }
        }
        let record = ForkRecord {
            parent: replay_sha256(&parent)?,
            parent_match_id: parent.match_id.clone(),
            at,
            swapped: Side::BOTH
                .into_iter()
                .filter(|side| swapped.contains(side))
                .map(FighterName::from)
                .collect(),
        };
        Ok(ForkStart {
            parent,
            position,
            record,
        })
    }

    pub fn parent(&self) -> &Replay {
        &self.parent
    }

    pub fn record(&self) -> &ForkRecord {
        &self.record
    }

    /// The number of exchanges copied from the parent.
    pub fn prefix_len(&self) -> usize {
        self.position
    }

    /// The parent's exchanges before the fork point, with their rounds.
    pub fn prefix(&self) -> impl Iterator<Item = (u8, &ExchangeRecord)> {
        self.parent.exchanges().take(self.position)
    }

    /// The options the fork is played under: the parent's class, seed and
    /// opening (a fork keeps what was fixed when its parent was accepted);
    /// a new match id and acceptance time; the given wall clock.
    pub fn options(self, wall_clock: std::time::Duration) -> MatchOptions {
        let mut options = MatchOptions::new(self.parent.class.into())
            .seed(self.parent.seed)
            .opening(Opening::of_replay(&self.parent))
            .wall_clock(wall_clock);
        options.fork = Some(std::sync::Arc::new(self));
        options
    }
}

/// Whether a side was gassed out when the exchange at `position` was
/// played: as the recorder counts it, replaying the prefix the fork copies
/// (its budget spent, a call refused, a budget substitution), or as the
/// parent shows it there (played on the budget).
fn gassed_out_at(parent: &Replay, position: usize) -> impl Fn(Side) -> bool + use<> {
    let mut config = MatchConfig::new(
        parent.match_id.clone(),
        parent.accepted_at.clone(),
        parent.class.into(),
        parent.seed,
    );
    config.opening = Opening::of_replay(parent);
    let mut recorder = MatchRecorder::new(config, parent.fighters.clone());
    for (_, exchange) in parent.exchanges().take(position) {
        recorder.commit_recorded(exchange, &parent.models);
    }
    let at = parent
        .exchanges()
        .nth(position)
        .map(|(_, exchange)| exchange.clone());
    move |side: Side| {
        recorder.gassed_out(side)
            || at
                .as_ref()
                .is_some_and(|exchange| exchange.sides()[side.index()].source == SourceName::Budget)
    }
}
