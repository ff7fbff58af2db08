//! Table-driven tests of one exchange: every worked example of RULES-1.0.0.md and
//! every ordered pair of the six actions plus EXHAUSTED, spelled out by hand.

use duel_rules::{Action, FighterState, Ruleset};

const R: Ruleset = Ruleset::V1_0_0;

fn fighter(hp: i32, stamina: i32, staggered: bool) -> FighterState {
    FighterState {
        hp,
        stamina,
        staggered,
    }
}

/// One row: what each side does, then for `a` and for `b`: damage taken, stamina
/// after, staggered after.
struct Row {
    a: Move,
    b: Move,
    expected: [(i32, i32, bool); 2],
}

#[derive(Clone, Copy, Debug)]
enum Move {
    Do(Action),
    /// Attempts HEAVY with 3 stamina, so performs EXHAUSTED.
    Exhausted,
}

use Move::Exhausted as EXHAUSTED;
const JAB: Move = Move::Do(Action::Jab);
const HEAVY: Move = Move::Do(Action::Heavy);
const BLOCK: Move = Move::Do(Action::Block);
const DODGE: Move = Move::Do(Action::Dodge);
const FEINT: Move = Move::Do(Action::Feint);
const RECOVER: Move = Move::Do(Action::Recover);

#[allow(clippy::too_many_arguments)]
fn row(
    a: Move,
    b: Move,
    a_dmg: i32,
    a_st: i32,
    a_stag: bool,
    b_dmg: i32,
    b_st: i32,
    b_stag: bool,
) -> Row {
    Row {
        a,
        b,
        expected: [(a_dmg, a_st, a_stag), (b_dmg, b_st, b_stag)],
    }
}

fn setup(m: Move) -> (FighterState, Action) {
    match m {
        Move::Do(action) => (fighter(160, 50, false), action),
        Move::Exhausted => (fighter(160, 3, false), Action::Heavy),
    }
}

/// Pre-exchange: 160 HP, 50 stamina, not staggered (EXHAUSTED: 3 stamina, HEAVY).
#[test]
fn every_ordered_pair_of_actions() {
    #[rustfmt::skip]
    let table = [
    row(JAB      , JAB      ,  6,  46, false,  6,  46, false),
    row(JAB      , HEAVY    , 18,  46, false,  6,  36, false),
    row(JAB      , BLOCK    ,  0,  46, false,  6,  56, false),
    row(JAB      , DODGE    ,  0,  46, false,  3,  44, false),
    row(JAB      , FEINT    ,  0,  46, false,  6,  48, false),
    row(JAB      , RECOVER  ,  0,  46, false,  9,  72, false),
    row(JAB      , EXHAUSTED,  0,  46, false,  8,  13, false),
    row(HEAVY    , JAB      ,  6,  36, false, 18,  46, false),
    row(HEAVY    , HEAVY    , 18,  36, false, 18,  36, false),
    row(HEAVY    , BLOCK    ,  0,  36, false,  4,  56, false),
    row(HEAVY    , DODGE    ,  0,  26, true ,  0,  44, false),
    row(HEAVY    , FEINT    ,  0,  36, false, 18,  48, false),
    row(HEAVY    , RECOVER  ,  0,  36, false, 27,  72, false),
    row(HEAVY    , EXHAUSTED,  0,  36, false, 23,  13, false),
    row(BLOCK    , JAB      ,  6,  56, false,  0,  46, false),
    row(BLOCK    , HEAVY    ,  4,  56, false,  0,  36, false),
    row(BLOCK    , BLOCK    ,  0,  56, false,  0,  56, false),
    row(BLOCK    , DODGE    ,  0,  56, false,  0,  44, false),
    row(BLOCK    , FEINT    , 12,  41, false,  0,  48, false),
    row(BLOCK    , RECOVER  ,  0,  56, false,  0,  72, false),
    row(BLOCK    , EXHAUSTED,  0,  56, false,  0,  13, false),
    row(DODGE    , JAB      ,  3,  44, false,  0,  46, false),
    row(DODGE    , HEAVY    ,  0,  44, false,  0,  26, true ),
    row(DODGE    , BLOCK    ,  0,  44, false,  0,  56, false),
    row(DODGE    , DODGE    ,  0,  44, false,  0,  44, false),
    row(DODGE    , FEINT    ,  0,  44, false,  0,  48, false),
    row(DODGE    , RECOVER  ,  0,  44, false,  0,  72, false),
    row(DODGE    , EXHAUSTED,  0,  44, false,  0,  13, false),
    row(FEINT    , JAB      ,  6,  48, false,  0,  46, false),
    row(FEINT    , HEAVY    , 18,  48, false,  0,  36, false),
    row(FEINT    , BLOCK    ,  0,  48, false, 12,  41, false),
    row(FEINT    , DODGE    ,  0,  48, false,  0,  44, false),
    row(FEINT    , FEINT    ,  0,  48, false,  0,  48, false),
    row(FEINT    , RECOVER  ,  0,  48, false,  0,  72, false),
    row(FEINT    , EXHAUSTED,  0,  48, false,  0,  13, false),
    row(RECOVER  , JAB      ,  9,  72, false,  0,  46, false),
    row(RECOVER  , HEAVY    , 27,  72, false,  0,  36, false),
    row(RECOVER  , BLOCK    ,  0,  72, false,  0,  56, false),
    row(RECOVER  , DODGE    ,  0,  72, false,  0,  44, false),
    row(RECOVER  , FEINT    ,  0,  72, false,  0,  48, false),
    row(RECOVER  , RECOVER  ,  0,  72, false,  0,  72, false),
    row(RECOVER  , EXHAUSTED,  0,  72, false,  0,  13, false),
    row(EXHAUSTED, JAB      ,  8,  13, false,  0,  46, false),
    row(EXHAUSTED, HEAVY    , 23,  13, false,  0,  36, false),
    row(EXHAUSTED, BLOCK    ,  0,  13, false,  0,  56, false),
    row(EXHAUSTED, DODGE    ,  0,  13, false,  0,  44, false),
    row(EXHAUSTED, FEINT    ,  0,  13, false,  0,  48, false),
    row(EXHAUSTED, RECOVER  ,  0,  13, false,  0,  72, false),
    row(EXHAUSTED, EXHAUSTED,  0,  13, false,  0,  13, false),
    ];
    assert_eq!(table.len(), 49);
    for Row { a, b, expected } in table {
        let (pre_a, act_a) = setup(a);
        let (pre_b, act_b) = setup(b);
        let outcome = R.resolve_exchange([pre_a, pre_b], [act_a, act_b]);
        for (index, (damage, stamina, staggered)) in expected.into_iter().enumerate() {
            let side = outcome.sides[index];
            let label = format!("{a:?} vs {b:?}, fighter {index}");
            assert_eq!(side.damage_taken, damage, "damage: {label}");
            assert_eq!(side.after.stamina, stamina, "stamina: {label}");
            assert_eq!(side.after.staggered, staggered, "stagger: {label}");
            assert_eq!(side.after.hp, 160 - damage, "hp: {label}");
            assert_eq!(
                side.exhausted,
                matches!([a, b][index], Move::Exhausted),
                "exhausted: {label}"
            );
        }
    }
}

struct Example {
    name: &'static str,
    pre: [FighterState; 2],
    chosen: [Action; 2],
    /// (damage taken, stamina after, staggered after, exhausted) per fighter.
    expected: [(i32, i32, bool, bool); 2],
}

#[test]
fn worked_examples_of_the_rules() {
    let fresh = fighter(160, 100, false);
    let examples = [
        Example {
            name: "A JAB (100 st) vs B DODGE (100 st)",
            pre: [fresh, fresh],
            chosen: [Action::Jab, Action::Dodge],
            expected: [(0, 96, false, false), (3, 94, false, false)],
        },
        Example {
            name: "A HEAVY vs B DODGE",
            pre: [fresh, fresh],
            chosen: [Action::Heavy, Action::Dodge],
            expected: [(0, 76, true, false), (0, 94, false, false)],
        },
        Example {
            name: "staggered A BLOCK vs B JAB",
            pre: [fighter(160, 76, true), fighter(160, 94, false)],
            chosen: [Action::Block, Action::Jab],
            expected: [(9, 82, false, false), (0, 90, false, false)],
        },
        Example {
            name: "A RECOVER (50 st) vs B HEAVY",
            pre: [fighter(160, 50, false), fresh],
            chosen: [Action::Recover, Action::Heavy],
            expected: [(27, 72, false, false), (0, 86, false, false)],
        },
        Example {
            name: "A JAB with 3 stamina vs B HEAVY",
            pre: [fighter(160, 3, false), fresh],
            chosen: [Action::Jab, Action::Heavy],
            expected: [(23, 13, false, true), (0, 86, false, false)],
        },
        Example {
            name: "A FEINT vs B BLOCK (20 st)",
            pre: [fresh, fighter(160, 20, false)],
            chosen: [Action::Feint, Action::Block],
            expected: [(0, 98, false, false), (12, 11, false, false)],
        },
    ];
    for Example {
        name,
        pre,
        chosen,
        expected,
    } in examples
    {
        let outcome = R.resolve_exchange(pre, chosen);
        for (index, (damage, stamina, staggered, exhausted)) in expected.into_iter().enumerate() {
            let side = outcome.sides[index];
            assert_eq!(side.damage_taken, damage, "damage: {name}, fighter {index}");
            assert_eq!(
                side.after.stamina, stamina,
                "stamina: {name}, fighter {index}"
            );
            assert_eq!(
                side.after.staggered, staggered,
                "stagger: {name}, fighter {index}"
            );
            assert_eq!(
                side.exhausted, exhausted,
                "exhausted: {name}, fighter {index}"
            );
            assert_eq!(
                side.after.hp,
                pre[index].hp - damage,
                "hp: {name}, fighter {index}"
            );
        }
    }
}

/// Multipliers take the maximum, never the product, and round half up.
#[test]
fn vulnerability_is_the_maximum_never_the_product() {
    // (taker staggered, taker attempts, taker stamina, attacker action, expected damage)
    let cases = [
        (false, Action::Block, 50, Action::Heavy, 4),   // ×1
        (true, Action::Block, 50, Action::Heavy, 6),    // 4 × 1.5
        (true, Action::Recover, 50, Action::Heavy, 27), // max(1.5, 1.5), not 2.25 → 41
        (true, Action::Heavy, 3, Action::Heavy, 27),    // max(1.5, 1.25), not 1.875 → 34
        (false, Action::Heavy, 3, Action::Heavy, 23),   // 18 × 1.25 = 22.5 → 23
        (false, Action::Heavy, 3, Action::Jab, 8),      // 6 × 1.25 = 7.5 → 8
        (true, Action::Dodge, 50, Action::Jab, 5),      // 3 × 1.5 = 4.5 → 5
        (true, Action::Block, 50, Action::Feint, 18),   // 12 × 1.5
        (false, Action::Recover, 50, Action::Feint, 0), // zero base stays zero
    ];
    for (staggered, attempt, stamina, attack, damage) in cases {
        let outcome = R.resolve_exchange(
            [fighter(160, stamina, staggered), fighter(160, 100, false)],
            [attempt, attack],
        );
        assert_eq!(
            outcome.sides[0].damage_taken, damage,
            "staggered {staggered}, {attempt} at {stamina} st, taking {attack}"
        );
    }
}

#[test]
fn stamina_is_clamped_and_stagger_lasts_one_exchange() {
    let outcome = R.resolve_exchange(
        [fighter(160, 90, true), fighter(160, 10, false)],
        [Action::Recover, Action::Feint],
    );
    assert_eq!(outcome.sides[0].after.stamina, 100, "clamped at the cap");
    assert!(
        !outcome.sides[0].after.staggered,
        "stagger cleared after one exchange"
    );
    let outcome = R.resolve_exchange(
        [fighter(160, 5, false), fighter(160, 100, false)],
        [Action::Block, Action::Feint],
    );
    assert_eq!(outcome.sides[0].after.stamina, 0, "5 + 6 - 15 clamps to 0");
    let outcome = R.resolve_exchange(
        [fighter(160, 14, false), fighter(160, 100, false)],
        [Action::Heavy, Action::Dodge],
    );
    assert_eq!(
        outcome.sides[0].after.stamina, 0,
        "14 - 14 - 10 clamps to 0"
    );
    assert!(outcome.sides[0].after.staggered);
    assert!(!outcome.sides[0].exhausted, "exactly enough stamina pays");
}

#[test]
fn exhausted_fighter_defends_against_nothing_and_deals_nothing() {
    // A FEINT into EXHAUSTED does nothing; a HEAVY into it lands for 18 × 1.25.
    let outcome = R.resolve_exchange(
        [fighter(160, 1, false), fighter(160, 100, false)],
        [Action::Dodge, Action::Feint],
    );
    assert_eq!(outcome.sides[0].damage_taken, 0);
    assert_eq!(outcome.sides[0].after.stamina, 11);
    assert!(outcome.sides[0].exhausted);
    assert_eq!(outcome.sides[0].performed(), None);
    let outcome = R.resolve_exchange(
        [fighter(160, 1, false), fighter(160, 100, false)],
        [Action::Dodge, Action::Heavy],
    );
    assert_eq!(
        outcome.sides[0].damage_taken, 23,
        "an exhausted DODGE negates nothing"
    );
    assert!(
        !outcome.sides[1].after.staggered,
        "no whiff into an exhausted dodge"
    );
}
