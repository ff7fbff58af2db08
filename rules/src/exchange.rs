//! One exchange of Ruleset 1.0.0, as the named steps of the rules document.

use crate::action::Action;
use crate::ruleset::Ruleset;

/// What a ruleset does with a fighter and an exchange, written here beside the
/// steps (the ruleset's numbers are in `ruleset.rs`, which knows nothing of
/// exchanges: the arrow points one way).
impl Ruleset {
    /// A fighter's state at the start of every round.
    pub const fn fresh_fighter(self) -> FighterState {
        FighterState {
            hp: self.start_hp(),
            stamina: self.max_stamina(),
            staggered: false,
        }
    }

    /// Resolves one exchange simultaneously from the same pre-exchange state.
    /// `chosen` are the actions after any substitution, fighter `a` first.
    pub fn resolve_exchange(self, pre: [FighterState; 2], chosen: [Action; 2]) -> ExchangeOutcome {
        match self {
            Ruleset::V1_0_0 => resolve_v1_0_0(self, pre, chosen),
        }
    }
}

/// A fighter's state between exchanges. `staggered` means it takes ×1.5 in the
/// next exchange. HP is not clamped below zero (a knockout can show −7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FighterState {
    pub hp: i32,
    pub stamina: i32,
    pub staggered: bool,
}

/// What one exchange did to one fighter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SideOutcome {
    /// The action attempted (after any substitution).
    pub action: Action,
    /// It could not be paid: the fighter performed EXHAUSTED instead.
    pub exhausted: bool,
    /// Damage this fighter took, after its vulnerability multiplier.
    pub damage_taken: i32,
    /// The state after the exchange.
    pub after: FighterState,
}

impl SideOutcome {
    /// The action actually performed; `None` when exhausted.
    pub const fn performed(&self) -> Option<Action> {
        if self.exhausted {
            None
        } else {
            Some(self.action)
        }
    }
}

/// Both fighters' outcomes, fighter `a` first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ExchangeOutcome {
    pub sides: [SideOutcome; 2],
}

impl ExchangeOutcome {
    /// Damage fighter `index` dealt, i.e. what its opponent took.
    pub const fn damage_dealt(&self, index: usize) -> i32 {
        self.sides[1 - index].damage_taken
    }
}

/// Vulnerability multipliers in quarters: ×1, ×1.25, ×1.5.
const QUARTERS_NORMAL: i32 = 4;
const QUARTERS_EXHAUSTED: i32 = 5;
const QUARTERS_STAGGERED: i32 = 6;
const QUARTERS_RECOVERING: i32 = 6;

const EXHAUSTED_STAMINA_GAIN: i32 = 10;
const STAGGER_STAMINA_LOSS: i32 = 10;
const GUARD_BREAK_STAMINA_LOSS: i32 = 15;

fn resolve_v1_0_0(
    ruleset: Ruleset,
    pre: [FighterState; 2],
    chosen: [Action; 2],
) -> ExchangeOutcome {
    // Step 2, exhaustion: `None` is EXHAUSTED.
    let performed = [0, 1].map(|i| {
        ruleset
            .can_pay(chosen[i], pre[i].stamina)
            .then_some(chosen[i])
    });
    let sides = [0, 1].map(|me| {
        let them = 1 - me;
        let quarters = vulnerability_quarters(pre[me], performed[me]);
        let damage_taken = damage(base_damage(performed[them], performed[me]), quarters);
        let staggered = whiffed_heavy(performed[me], performed[them]);
        let stamina = stamina_after(ruleset, pre[me].stamina, performed[me], performed[them]);
        SideOutcome {
            action: chosen[me],
            exhausted: performed[me].is_none(),
            damage_taken,
            after: FighterState {
                hp: pre[me].hp - damage_taken,
                stamina,
                staggered,
            },
        }
    });
    ExchangeOutcome { sides }
}

/// Step 3: the maximum (never the product) of the multipliers that apply.
fn vulnerability_quarters(pre: FighterState, performed: Option<Action>) -> i32 {
    let mut quarters = QUARTERS_NORMAL;
    if pre.staggered {
        quarters = quarters.max(QUARTERS_STAGGERED);
    }
    match performed {
        Some(Action::Recover) => quarters = quarters.max(QUARTERS_RECOVERING),
        None => quarters = quarters.max(QUARTERS_EXHAUSTED),
        Some(_) => {}
    }
    quarters
}

/// The rules table: base damage an attacker's performed action deals to a defender
/// performing `defender` (`None` = EXHAUSTED, which defends against nothing).
fn base_damage(attacker: Option<Action>, defender: Option<Action>) -> i32 {
    match (attacker, defender) {
        (Some(Action::Jab), Some(Action::Dodge)) => 3,
        (Some(Action::Jab), _) => 6,
        (Some(Action::Heavy), Some(Action::Block)) => 4,
        (Some(Action::Heavy), Some(Action::Dodge)) => 0,
        (Some(Action::Heavy), _) => 18,
        (Some(Action::Feint), Some(Action::Block)) => 12,
        _ => 0,
    }
}

/// Step 4 (D-4): base × multiplier, rounded half up, in integer arithmetic.
const fn damage(base: i32, quarters: i32) -> i32 {
    (base * quarters + 2) / 4
}

/// Step 6: a HEAVY that met a DODGE staggers its thrower for the next exchange.
fn whiffed_heavy(mine: Option<Action>, theirs: Option<Action>) -> bool {
    mine == Some(Action::Heavy) && theirs == Some(Action::Dodge)
}

/// Step 5: own delta, stagger and guard-break losses, then the clamp (D-1).
fn stamina_after(
    ruleset: Ruleset,
    pre_stamina: i32,
    mine: Option<Action>,
    theirs: Option<Action>,
) -> i32 {
    let delta = match mine {
        None => EXHAUSTED_STAMINA_GAIN,
        Some(action) => ruleset.stamina_delta(action),
    };
    let mut stamina = pre_stamina + delta;
    if whiffed_heavy(mine, theirs) {
        stamina -= STAGGER_STAMINA_LOSS;
    }
    if mine == Some(Action::Block) && theirs == Some(Action::Feint) {
        stamina -= GUARD_BREAK_STAMINA_LOSS;
    }
    stamina.clamp(0, ruleset.max_stamina())
}
