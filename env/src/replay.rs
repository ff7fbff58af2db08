//! The env's finished matches as the referee's replays (`duel-replay/1`), so
//! `referee replay verify`, `referee replay show` and the viewer take a match
//! a learner played. Each learner is recorded as the built-in script of the
//! actions it attempted (`builtin:script:JAB,HEAVY,…`): the replay names
//! fighters `referee local` can play again, with the same seed, to the same
//! exchanges.

use std::sync::Arc;

use duel_builtin::BuiltinSpec;
use duel_replays::{
    ExchangeRecord, FORMAT, FighterInfo, JSON_INTEGER_MAX, MatchResultRecord, Replay, RoundRecord,
    RoundResultRecord, SideRecord,
};
use duel_rules::{Action, MatchState, Side, Source};

use crate::{Duel, EnvError, Solo};

/// What a replay says beyond the match itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayHeader<'a> {
    /// RFC 3339 time the match was accepted (the env passes when it ended).
    pub accepted_at: &'a str,
    /// The match seed: what the built-in opponents of `Solo` drew from, and
    /// what `referee local --seed` takes to play the match again.
    pub seed: u64,
}

impl Duel {
    /// The built-in script of what `side` attempted, exchange by exchange: a
    /// fighter `referee local` can play to the same match.
    pub fn script(&self, side: Side) -> Result<BuiltinSpec, EnvError> {
        let actions: Arc<[Action]> = self
            .tape()
            .iter()
            .map(|entry| entry.sides[side.index()].action)
            .collect();
        if actions.is_empty() {
            return Err(EnvError::NotOver);
        }
        Ok(BuiltinSpec::Script(actions))
    }

    /// The finished match as a replay, both learners recorded as the scripts
    /// of what they played ([`Duel::script`]). Unsigned: sign it with
    /// `duel_replays::sign` (or `referee replay sign`).
    pub fn replay(&self, header: ReplayHeader<'_>) -> Result<Replay, EnvError> {
        let fighters = [
            FighterInfo::builtin(&self.script(Side::A)?.to_string()),
            FighterInfo::builtin(&self.script(Side::B)?.to_string()),
        ];
        self.replay_of(header, fighters)
    }

    /// The finished match as a replay headed by `fighters` (`a` first): the
    /// tape played again through the rules, every exchange recorded as the
    /// referee's runner records a decision made in time for no tokens.
    fn replay_of(
        &self,
        header: ReplayHeader<'_>,
        fighters: [FighterInfo; 2],
    ) -> Result<Replay, EnvError> {
        if !self.is_over() {
            return Err(EnvError::NotOver);
        }
        if header.seed > JSON_INTEGER_MAX {
            return Err(EnvError::Seed(header.seed));
        }
        let ruleset = self.ruleset();
        let mut state = MatchState::new(ruleset);
        let mut rounds = Vec::with_capacity(usize::from(ruleset.rounds_per_match()));
        let mut exchanges = Vec::new();
        for entry in self.tape() {
            let step = state
                .play_exchange(entry.sides.map(|side| side.action))
                .map_err(|_| EnvError::TapeDisagrees)?;
            let [a, b] = step
                .outcome
                .sides
                .map(|outcome| SideRecord::new(outcome.action, Source::Bot).with_outcome(&outcome));
            exchanges.push(ExchangeRecord {
                number: step.exchange,
                a,
                b,
            });
            if let Some(result) = step.round_result {
                rounds.push(RoundRecord {
                    number: step.round,
                    exchanges: std::mem::take(&mut exchanges),
                    result: RoundResultRecord {
                        winner: result.winner.into(),
                        by: result.by.into(),
                    },
                });
            }
        }
        let result = state.result().ok_or(EnvError::TapeDisagrees)?;
        if Some(result) != self.state().result() {
            return Err(EnvError::TapeDisagrees);
        }
        Ok(Replay {
            format: FORMAT.into(),
            ruleset: ruleset.version().into(),
            match_id: self.match_id().to_owned(),
            accepted_at: header.accepted_at.to_owned(),
            class: self.class().into(),
            budget: ruleset.budget_tokens(self.class()),
            seed: header.seed,
            // No clock runs in the env: a learner is never cut off.
            wall_clock_ms: None,
            season: None,
            fork: None,
            opening: Vec::new(),
            fighters,
            models: Vec::new(),
            rounds,
            result: MatchResultRecord {
                winner: result.winner.into(),
                round_wins: result.round_wins,
                damage: result.damage,
                tokens_used: [0, 0],
            },
            signature: None,
        })
    }
}

impl Solo {
    /// The finished match as a replay: the learner as the script of what it
    /// played, the built-in by its own spec, and the match seed the built-in
    /// was made from, so `referee local` with both specs and `--seed` plays it
    /// again exchange for exchange.
    pub fn replay(&self, accepted_at: &str) -> Result<Replay, EnvError> {
        let learner = FighterInfo::builtin(&self.duel().script(self.learner())?.to_string());
        let opponent = FighterInfo::builtin(&self.spec().to_string());
        let fighters = match self.learner() {
            Side::A => [learner, opponent],
            Side::B => [opponent, learner],
        };
        let header = ReplayHeader {
            accepted_at,
            seed: self.seed(),
        };
        self.duel().replay_of(header, fighters)
    }
}
