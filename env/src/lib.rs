//! The training environment's engine: one match of `duel-rules` stepped by two
//! learners' actions at once, with each fighter's observation, action mask and
//! rewards as flat numbers. The Python package `duel_env` (crate
//! `duel-env-python`) is a thin binding over this crate, so the env plays the
//! referee's own rules rather than a port of them; a bot built from a trained
//! policy can encode its observation with the same [`encode`].
//!
//! Layout (docs/areas/training.md shows it as a table): [`HEADER_FIELDS`], then
//! [`TAPE_SLOTS`] tape entries of [`TAPE_FIELDS`] each, newest first.

mod lean;
mod replay;

pub use lean::LeanDuel;
pub use replay::ReplayHeader;

use duel_builtin::{BuiltinSpec, BuiltinStrategy, Strategy, strategy};
use duel_rules::{
    Action, ExchangeStep, FighterState, MatchOver, MatchState, Observation, PublicExchange,
    Ruleset, Side, Source, TapeEntry, TapeSide, WeightClass, Winner,
};

/// What the env refuses, in one line each.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    /// A replay (or a script) asked of a match not played to its end.
    #[error("the match is not over: a replay records a whole match, so play it to the end first")]
    NotOver,
    /// A seed past what a replay's JSON carries exactly.
    #[error(
        "seed {0} cannot be written into a replay: replays carry seeds up to 2^53 - 1 (9007199254740991), the largest integer their signature binds"
    )]
    Seed(u64),
    /// The tape replayed through the rules ends elsewhere: a bug in the env.
    #[error("the env's tape and the rules disagree when replayed (a bug in duel-env)")]
    TapeDisagrees,
}

/// The six actions, in the rules table's order: an action's index here is its
/// number in the action space and in the observation.
pub const ACTIONS: [Action; 6] = Action::ALL;

/// Tape entries an observation holds: a whole Ruleset 1.0.0 match (3 rounds of
/// 12 exchanges), so under 1.0.0 no exchange is ever left out of the view.
pub const TAPE_SLOTS: usize = 36;

/// The fighters' state and the match's progress, before the tape.
pub const HEADER_FIELDS: [&str; 11] = [
    "you_hp",
    "you_stamina",
    "you_staggered",
    "opponent_hp",
    "opponent_stamina",
    "opponent_staggered",
    "round",
    "exchange",
    "your_round_wins",
    "opponent_round_wins",
    "budget_left_tokens",
];

/// One tape entry from the observing fighter's side. `present` is 0 for a slot
/// the match has not reached (all its other fields are then 0 too), since 0 is
/// also JAB's action number and the bot source's.
pub const TAPE_FIELDS: [&str; 11] = [
    "present",
    "round",
    "exchange",
    "you_action",
    "you_exhausted",
    "you_source",
    "you_damage_taken",
    "opponent_action",
    "opponent_exhausted",
    "opponent_source",
    "opponent_damage_taken",
];

pub const HEADER_LEN: usize = HEADER_FIELDS.len();
pub const TAPE_ENTRY_LEN: usize = TAPE_FIELDS.len();
/// Numbers in one observation vector.
pub const OBSERVATION_LEN: usize = HEADER_LEN + TAPE_SLOTS * TAPE_ENTRY_LEN;

/// An action's number in the action space: its place in the rules table.
pub fn action_index(action: Action) -> usize {
    ACTIONS
        .iter()
        .position(|candidate| *candidate == action)
        .expect("ACTIONS lists every action")
}

/// The action with number `index`, or `None` outside 0..6.
pub fn action_from_index(index: usize) -> Option<Action> {
    ACTIONS.get(index).copied()
}

fn source_index(source: Source) -> usize {
    Source::ALL
        .iter()
        .position(|candidate| *candidate == source)
        .expect("Source::ALL lists every source")
}

fn flag(value: bool) -> f32 {
    if value { 1.0 } else { 0.0 }
}

/// Writes the observation a bot would be handed (the rules' "What the bots
/// see") as numbers, in the layout of [`HEADER_FIELDS`] and [`TAPE_FIELDS`].
/// Every value is a small integer, exact in `f32`. The ruleset version, match
/// id and weight class are not numbers of the vector: they are fixed for an
/// env and chosen when it is made.
pub fn encode(observation: &Observation<'_>, out: &mut [f32; OBSERVATION_LEN]) {
    let (header, tape) = out.split_at_mut(HEADER_LEN);
    encode_header(observation, header);
    tape.fill(0.0);
    // Newest first, so slot 0 is always the last exchange whatever the match's
    // length, which is what a policy reads most.
    for (slot, entry) in tape
        .chunks_exact_mut(TAPE_ENTRY_LEN)
        .zip(observation.history().rev())
    {
        encode_tape_slot(&entry, slot);
    }
}

/// The header of [`encode`]: [`HEADER_FIELDS`] into `header` (`HEADER_LEN`).
fn encode_header(observation: &Observation<'_>, header: &mut [f32]) {
    let fighter =
        |state: FighterState| [state.hp as f32, state.stamina as f32, flag(state.staggered)];
    header[0..3].copy_from_slice(&fighter(observation.you));
    header[3..6].copy_from_slice(&fighter(observation.opponent));
    header[6] = f32::from(observation.round);
    header[7] = f32::from(observation.exchange);
    header[8] = f32::from(observation.your_round_wins);
    header[9] = f32::from(observation.opponent_round_wins);
    // Budgets reach 512,000 tokens: exact in f32 (below 2^24).
    header[10] = observation.budget_left_tokens as f32;
}

/// One tape slot of [`encode`]: [`TAPE_FIELDS`] of `entry` into `slot`
/// (`TAPE_ENTRY_LEN`).
fn encode_tape_slot(entry: &PublicExchange, slot: &mut [f32]) {
    let side = |entry: TapeSide| {
        [
            action_index(entry.action) as f32,
            flag(entry.exhausted),
            source_index(entry.source) as f32,
            entry.damage_taken as f32,
        ]
    };
    slot[0] = 1.0;
    slot[1] = f32::from(entry.round);
    slot[2] = f32::from(entry.exchange);
    slot[3..7].copy_from_slice(&side(entry.you));
    slot[7..11].copy_from_slice(&side(entry.opponent));
}

/// The most damage one exchange can deal under `ruleset`, found by the rules
/// themselves over every pair of actions, stagger and exhaustion, so the
/// observation's bounds cannot drift from the damage table.
pub fn max_exchange_damage(ruleset: Ruleset) -> i32 {
    let mut most = 0;
    for staggered in [false, true] {
        for stamina in [0, ruleset.max_stamina()] {
            let defender = FighterState {
                hp: ruleset.start_hp(),
                stamina,
                staggered,
            };
            for mine in ACTIONS {
                for theirs in ACTIONS {
                    let outcome = ruleset
                        .resolve_exchange([defender, ruleset.fresh_fighter()], [mine, theirs]);
                    most = most.max(outcome.sides[0].damage_taken);
                }
            }
        }
    }
    most
}

/// The lowest and highest value of each number of the observation under
/// `ruleset` and `class` (Gymnasium's `Box` bounds). HP goes below zero on a
/// knockout, by at most one exchange's damage; the exchange number reaches
/// `exchanges_per_round + 1` only in the observation after the match's last
/// exchange (the next exchange that will never be played).
pub fn bounds(ruleset: Ruleset, class: WeightClass) -> [[f32; OBSERVATION_LEN]; 2] {
    let damage = max_exchange_damage(ruleset) as f32;
    let hp = [1.0 - damage, ruleset.start_hp() as f32];
    let stamina = [0.0, ruleset.max_stamina() as f32];
    let round = f32::from(ruleset.rounds_per_match());
    let exchanges = f32::from(ruleset.exchanges_per_round());
    let budget = ruleset.budget_tokens(class) as f32;
    let header: [[f32; 2]; HEADER_LEN] = [
        hp,
        stamina,
        [0.0, 1.0],
        hp,
        stamina,
        [0.0, 1.0],
        [1.0, round],
        [1.0, exchanges + 1.0],
        [0.0, round],
        [0.0, round],
        [0.0, budget],
    ];
    let last_action = (ACTIONS.len() - 1) as f32;
    let last_source = (Source::ALL.len() - 1) as f32;
    let side = [
        [0.0, last_action],
        [0.0, 1.0],
        [0.0, last_source],
        [0.0, damage],
    ];
    let mut entry = [[0.0, 0.0]; TAPE_ENTRY_LEN];
    entry[0] = [0.0, 1.0];
    entry[1] = [0.0, round];
    entry[2] = [0.0, exchanges];
    entry[3..7].copy_from_slice(&side);
    entry[7..11].copy_from_slice(&side);
    let mut low = [0.0; OBSERVATION_LEN];
    let mut high = [0.0; OBSERVATION_LEN];
    let all = header
        .iter()
        .chain(entry.iter().cycle().take(TAPE_SLOTS * TAPE_ENTRY_LEN));
    for (index, [lo, hi]) in all.enumerate() {
        low[index] = *lo;
        high[index] = *hi;
    }
    [low, high]
}

/// What a won round and a won match are worth. The env is zero-sum: the loser
/// gets the negative, a drawn round or match gives both 0.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rewards {
    /// Paid on the exchange that ends a round (knockout or judged).
    pub per_round: f32,
    /// Paid on the exchange that ends the match, on top of that round's reward.
    pub per_match: f32,
}

impl Default for Rewards {
    /// A match win counts for twice a round: winning rounds is how a match is
    /// won, and the match result (with its damage tie-break) is what the ladder pays.
    fn default() -> Rewards {
        Rewards {
            per_round: 0.5,
            per_match: 1.0,
        }
    }
}

impl Rewards {
    fn signed(winner: Winner, amount: f32) -> [f32; 2] {
        match winner {
            Winner::A => [amount, -amount],
            Winner::B => [-amount, amount],
            Winner::Draw => [0.0, 0.0],
        }
    }

    /// Both fighters' rewards for one exchange, fighter `a` first.
    pub fn of(&self, step: &ExchangeStep) -> [f32; 2] {
        let mut total = [0.0; 2];
        if let Some(round) = step.round_result {
            let paid = Rewards::signed(round.winner, self.per_round);
            total = [total[0] + paid[0], total[1] + paid[1]];
        }
        if let Some(result) = step.match_result {
            let paid = Rewards::signed(result.winner, self.per_match);
            total = [total[0] + paid[0], total[1] + paid[1]];
        }
        total
    }
}

/// One exchange played by [`Duel::step`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    pub exchange: ExchangeStep,
    /// Fighter `a` first.
    pub rewards: [f32; 2],
}

/// The public tape's record of an exchange a learner played.
fn tape_entry(exchange: &ExchangeStep) -> TapeEntry {
    let sides = exchange.outcome.sides.map(|side| TapeSide {
        action: side.action,
        exhausted: side.exhausted,
        // Learners always answer: no clock, no budget, no faults here.
        source: Source::Bot,
        damage_taken: side.damage_taken,
    });
    TapeEntry {
        round: exchange.round,
        exchange: exchange.exchange,
        sides,
    }
}

/// One match between two learners: both act at once, every exchange.
#[derive(Clone, Debug)]
pub struct Duel {
    class: WeightClass,
    rewards: Rewards,
    state: MatchState,
    tape: Vec<TapeEntry>,
    match_id: String,
}

impl Duel {
    pub fn new(ruleset: Ruleset, class: WeightClass, rewards: Rewards) -> Duel {
        Duel {
            class,
            rewards,
            state: MatchState::new(ruleset),
            tape: Vec::with_capacity(TAPE_SLOTS),
            match_id: String::new(),
        }
    }

    /// Starts a new match under the same settings. `match_id` is what the
    /// fighters' observations name it (the vector does not carry it).
    pub fn reset(&mut self, match_id: &str) {
        self.state = MatchState::new(self.state.ruleset());
        self.tape.clear();
        match_id.clone_into(&mut self.match_id);
    }

    pub fn ruleset(&self) -> Ruleset {
        self.state.ruleset()
    }

    pub fn class(&self) -> WeightClass {
        self.class
    }

    pub fn rewards(&self) -> Rewards {
        self.rewards
    }

    pub fn state(&self) -> &MatchState {
        &self.state
    }

    pub fn tape(&self) -> &[TapeEntry] {
        &self.tape
    }

    /// The id the last `reset` gave the match.
    pub fn match_id(&self) -> &str {
        &self.match_id
    }

    pub fn is_over(&self) -> bool {
        self.state.is_over()
    }

    /// Plays one exchange with both fighters' actions, fighter `a` first. An
    /// action the fighter cannot pay for is played as the rules play it:
    /// EXHAUSTED, exactly as in the referee.
    pub fn step(&mut self, actions: [Action; 2]) -> Result<Step, MatchOver> {
        let exchange = self.state.play_exchange(actions)?;
        self.tape.push(tape_entry(&exchange));
        Ok(Step {
            rewards: self.rewards.of(&exchange),
            exchange,
        })
    }

    /// What fighter `side` would be handed by the referee now. Its budget is
    /// the class's whole budget: a learner in the env spends no tokens.
    pub fn observation(&self, side: Side) -> Observation<'_> {
        Observation::new(
            &self.state,
            side,
            &self.match_id,
            self.class,
            self.ruleset().budget_tokens(self.class),
            &self.tape,
        )
    }

    pub fn observe(&self, side: Side, out: &mut [f32; OBSERVATION_LEN]) {
        encode(&self.observation(side), out);
    }

    /// Which actions `side` can pay for from its stamina now. The others are
    /// still playable: the rules perform EXHAUSTED instead.
    pub fn affordable(&self, side: Side) -> [bool; 6] {
        affordable(&self.state, side)
    }
}

/// Which actions `side` of `state` can pay for from its stamina now.
fn affordable(state: &MatchState, side: Side) -> [bool; 6] {
    let stamina = state.fighter(side).stamina;
    ACTIONS.map(|action| state.ruleset().can_pay(action, stamina))
}

/// A match between one learner and a built-in fighter of the referee
/// (`duel-builtin`, the code `referee local` plays): the single-agent env.
#[derive(Clone, Debug)]
pub struct Solo {
    duel: Duel,
    spec: BuiltinSpec,
    opponent: BuiltinStrategy,
    learner: Side,
    /// The match seed of the last `reset` (the built-in was made from it).
    seed: u64,
}

impl Solo {
    /// `learner` is the side the learner plays; the built-in plays the other.
    pub fn new(duel: Duel, spec: BuiltinSpec, learner: Side) -> Solo {
        let opponent = strategy(&spec, 0, learner.other());
        Solo {
            duel,
            spec,
            opponent,
            learner,
            seed: 0,
        }
    }

    /// Starts a new match. `seed` is the match seed: the built-in is made from
    /// it exactly as the referee makes it for a match played with that seed
    /// (only `builtin:random` draws from it).
    pub fn reset(&mut self, match_id: &str, seed: u64) {
        self.duel.reset(match_id);
        self.opponent = strategy(&self.spec, seed, self.learner.other());
        self.seed = seed;
    }

    /// The match seed of the last `reset`.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn duel(&self) -> &Duel {
        &self.duel
    }

    pub fn learner(&self) -> Side {
        self.learner
    }

    pub fn spec(&self) -> &BuiltinSpec {
        &self.spec
    }

    /// Plays one exchange: the learner's `action` against the built-in's
    /// decision on its own observation (made before the exchange, as the
    /// referee asks both fighters before resolving).
    pub fn step(&mut self, action: Action) -> Result<Step, MatchOver> {
        if self.duel.is_over() {
            return Err(MatchOver);
        }
        let theirs = self
            .opponent
            .decide(&self.duel.observation(self.learner.other()));
        let mut actions = [action; 2];
        actions[self.learner.other().index()] = theirs;
        self.duel.step(actions)
    }
}
