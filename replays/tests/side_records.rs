//! A side record's JSON is a contract: these tests hold `SideRecord`, whose
//! rare parts (`reason`, `log`) live behind one pointer, to the JSON of the
//! plain struct it replaced, field for field and byte for byte.

use duel_replays::{ActionName, SideRecord, SourceName};
use duel_rules::{Action, Source};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

/// The side record as it was declared before its rare parts moved out of
/// line: the oracle for the JSON's field order and omissions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct PlainSideRecord {
    action: ActionName,
    source: SourceName,
    exhausted: bool,
    damage_taken: i32,
    hp: i32,
    stamina: i32,
    staggered: bool,
    tokens: u64,
    latency_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    restarted: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    latency_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    log: Vec<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    log_truncated: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

impl PlainSideRecord {
    fn to_record(&self) -> SideRecord {
        let mut record = SideRecord::new(self.action.into(), self.source.into());
        record.exhausted = self.exhausted;
        record.damage_taken = self.damage_taken;
        record.hp = self.hp;
        record.stamina = self.stamina;
        record.staggered = self.staggered;
        record.tokens = self.tokens;
        record.latency_ms = self.latency_ms;
        record.restarted = self.restarted;
        record.latency_us = self.latency_us;
        record.log_truncated = self.log_truncated;
        record.set_notes(self.reason.clone(), self.log.clone());
        record
    }
}

fn plain(action: Action, source: Source) -> PlainSideRecord {
    PlainSideRecord {
        action: action.into(),
        source: source.into(),
        exhausted: false,
        damage_taken: 0,
        hp: 0,
        stamina: 0,
        staggered: false,
        tokens: 0,
        latency_ms: 0,
        reason: None,
        restarted: false,
        latency_us: None,
        log: Vec::new(),
        log_truncated: false,
    }
}

/// What a case is called, how it edits a plain record, and the JSON it adds.
type Case = (&'static str, fn(&mut PlainSideRecord), &'static str);

#[test]
fn each_rare_part_is_written_where_the_contract_puts_it() {
    let cases: [Case; 5] = [
        ("nothing rare", |_| {}, ""),
        (
            "a reason",
            |r| r.reason = Some("timeout".into()),
            r#","reason":"timeout""#,
        ),
        (
            "a log",
            |r| r.log = vec!["a".into(), "b".into()],
            r#","log":["a","b"]"#,
        ),
        (
            "both, with the flags between and after",
            |r| {
                r.reason = Some("trap".into());
                r.restarted = true;
                r.latency_us = Some(7);
                r.log = vec!["x".into()];
                r.log_truncated = true;
            },
            r#","reason":"trap","restarted":true,"latency_us":7,"log":["x"],"log_truncated":true"#,
        ),
        (
            "an empty reason is still written",
            |r| r.reason = Some(String::new()),
            r#","reason":"""#,
        ),
    ];
    let head = r#"{"action":"JAB","source":"bot","exhausted":false,"damage_taken":0,"hp":0,"stamina":0,"staggered":false,"tokens":0,"latency_ms":0"#;
    for (what, edit, tail) in cases {
        let mut oracle = plain(Action::Jab, Source::Bot);
        edit(&mut oracle);
        let written = serde_json::to_string(&oracle.to_record()).expect("serializes");
        assert_eq!(written, format!("{head}{tail}}}"), "{what}");
        let read: SideRecord = serde_json::from_str(&written).expect("parses");
        assert_eq!(read, oracle.to_record(), "{what}");
        assert_eq!(read.reason(), oracle.reason.as_deref(), "{what}");
        assert_eq!(read.log(), oracle.log.as_slice(), "{what}");
    }
}

#[test]
fn records_with_the_same_parts_compare_equal_however_built() {
    let fresh = SideRecord::new(Action::Block, Source::Fault);
    let mut emptied = fresh.clone();
    emptied.set_notes(Some("trap".into()), vec!["line".into()]);
    assert_ne!(emptied, fresh);
    assert_eq!(emptied.take_log(), vec!["line".to_owned()]);
    emptied.set_reason(None);
    assert_eq!(emptied, fresh, "no box is kept for empty parts");

    let mut reason_then_log = fresh.clone();
    reason_then_log.set_reason(Some("r".into()));
    reason_then_log.set_log(vec!["l".into()]);
    let mut log_then_reason = fresh.clone();
    log_then_reason.set_log(vec!["l".into()]);
    log_then_reason.set_reason(Some("r".into()));
    assert_eq!(reason_then_log, log_then_reason);
    assert_eq!(reason_then_log.reason(), Some("r"));
    assert_eq!(reason_then_log.log(), ["l".to_owned()]);

    let mut stripped = reason_then_log.clone();
    stripped.take_log();
    assert_eq!(
        stripped.reason(),
        Some("r"),
        "taking the log keeps the reason"
    );
    assert!(stripped.log().is_empty());
}

fn any_plain() -> impl Strategy<Value = PlainSideRecord> {
    let numbers = (
        any::<bool>(),
        any::<i32>(),
        any::<i32>(),
        any::<i32>(),
        any::<bool>(),
        any::<u64>(),
        any::<u64>(),
    );
    let rare = (
        proptest::option::of(".{0,12}"),
        any::<bool>(),
        proptest::option::of(any::<u64>()),
        proptest::collection::vec(".{0,8}", 0..3),
        any::<bool>(),
    );
    (
        proptest::sample::select(Action::ALL.to_vec()),
        proptest::sample::select(Source::ALL.to_vec()),
        numbers,
        rare,
    )
        .prop_map(|(action, source, numbers, rare)| {
            let (exhausted, damage_taken, hp, stamina, staggered, tokens, latency_ms) = numbers;
            let (reason, restarted, latency_us, log, log_truncated) = rare;
            PlainSideRecord {
                exhausted,
                damage_taken,
                hp,
                stamina,
                staggered,
                tokens,
                latency_ms,
                reason,
                restarted,
                latency_us,
                log,
                log_truncated,
                ..plain(action, source)
            }
        })
}

proptest! {
    #[test]
    fn the_json_is_the_plain_structs_both_ways(oracle in any_plain()) {
        let expected = serde_json::to_string(&oracle).expect("oracle serializes");
        let record = oracle.to_record();
        prop_assert_eq!(&serde_json::to_string(&record).expect("serializes"), &expected);
        let read: SideRecord = serde_json::from_str(&expected).expect("parses");
        prop_assert_eq!(&read, &record);
        let back: PlainSideRecord = serde_json::from_str(
            &serde_json::to_string(&read).expect("serializes"),
        )
        .expect("the oracle reads it");
        prop_assert_eq!(back, oracle);
    }
}
