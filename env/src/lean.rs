//! A match of the batched env that keeps no tape. The batch holds both
//! fighters' observation vectors anyway, and they carry the whole tape
//! (newest first): each exchange shifts the slots by one and writes the new
//! exchange into slot 0, rather than encoding every slot again from a kept
//! tape. A match is then its rules state alone.

use duel_rules::{Action, MatchOver, MatchState, Observation, Ruleset, Side, WeightClass};

use crate::{
    HEADER_LEN, OBSERVATION_LEN, Rewards, Step, TAPE_ENTRY_LEN, TAPE_SLOTS, encode_header,
    encode_tape_slot, tape_entry,
};

/// One match between two learners whose observations live in the caller's
/// array: `out` is always both fighters' vectors, `a` then `b`
/// (2 * [`OBSERVATION_LEN`]), as this match last wrote them. The numbers equal
/// [`crate::Duel::observe`]'s for the same actions (tested).
#[derive(Clone, Debug)]
pub struct LeanDuel {
    state: MatchState,
}

impl LeanDuel {
    pub fn new(ruleset: Ruleset) -> LeanDuel {
        LeanDuel {
            state: MatchState::new(ruleset),
        }
    }

    pub fn state(&self) -> &MatchState {
        &self.state
    }

    /// Starts a new match and writes both fighters' first observations.
    pub fn reset(&mut self, class: WeightClass, out: &mut [f32]) {
        self.state = MatchState::new(self.state.ruleset());
        for (side, half) in Side::BOTH
            .into_iter()
            .zip(out.chunks_exact_mut(OBSERVATION_LEN))
        {
            half[HEADER_LEN..].fill(0.0);
            self.write_header(side, class, half);
        }
    }

    /// Plays one exchange (fighter `a`'s action first) and brings `out` to
    /// the observations after it. Rewards as [`crate::Duel::step`]'s.
    pub fn step(
        &mut self,
        actions: [Action; 2],
        rewards: &Rewards,
        class: WeightClass,
        out: &mut [f32],
    ) -> Result<Step, MatchOver> {
        let exchange = self.state.play_exchange(actions)?;
        let entry = tape_entry(&exchange);
        let one_tape = [entry];
        for (side, half) in Side::BOTH
            .into_iter()
            .zip(out.chunks_exact_mut(OBSERVATION_LEN))
        {
            let tape = &mut half[HEADER_LEN..];
            // The oldest slot falls off the end, as `encode` keeps the newest
            // TAPE_SLOTS (a 1.0.0 match never has more).
            tape.copy_within(..(TAPE_SLOTS - 1) * TAPE_ENTRY_LEN, TAPE_ENTRY_LEN);
            let seen = Observation::new(&self.state, side, "", class, 0, &one_tape);
            if let Some(newest) = seen.history().next() {
                encode_tape_slot(&newest, &mut tape[..TAPE_ENTRY_LEN]);
            }
            self.write_header(side, class, half);
        }
        Ok(Step {
            rewards: rewards.of(&exchange),
            exchange,
        })
    }

    /// The header of `side`'s vector from the match state now, with the
    /// class's whole budget (a learner spends no tokens).
    fn write_header(&self, side: Side, class: WeightClass, half: &mut [f32]) {
        let budget = self.state.ruleset().budget_tokens(class);
        let seen = Observation::new(&self.state, side, "", class, budget, &[]);
        encode_header(&seen, &mut half[..HEADER_LEN]);
    }

    /// Which actions `side` can pay for from its stamina now.
    pub fn affordable(&self, side: Side) -> [bool; 6] {
        crate::affordable(&self.state, side)
    }
}
