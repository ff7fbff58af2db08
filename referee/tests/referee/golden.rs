//! Golden files: the replay JSON and the tape of one fixed match. Regenerate with
//! `UPDATE_GOLDEN=1 cargo test -p duel-referee --test golden` and review the diff.

use std::path::PathBuf;
use std::process::Command;

use duel_referee::builtin::BuiltinFighter;
use duel_referee::{BuiltinSpec, MatchConfig, run_bare_match};
use duel_rules::{Action, WeightClass};

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

fn check(name: &str, actual: &str) {
    let path = golden_path(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).expect("write golden");
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error} (run with UPDATE_GOLDEN=1)", path.display()));
    assert!(
        expected == actual,
        "{name} differs from its golden file; rerun with UPDATE_GOLDEN=1 and review the diff\n--- actual ---\n{actual}"
    );
}

fn golden_match() -> duel_replays::Replay {
    let config = MatchConfig::new(
        "00000000-0000-4000-8000-000000000007".to_owned(),
        "2026-11-29T12:00:00Z".to_owned(),
        WeightClass::Middle,
        7,
    );
    let script = BuiltinSpec::Script(vec![Action::Jab, Action::Heavy, Action::Feint].into());
    run_bare_match(
        config,
        [
            &BuiltinFighter::new(BuiltinSpec::Random),
            &BuiltinFighter::new(script),
        ],
    )
}

#[test]
fn replay_json_is_stable() {
    check(
        "random-vs-script-seed7.json",
        &golden_match().to_json_pretty(),
    );
}

/// A replay the runner writes (headers shared, format and ruleset borrowed)
/// reads back equal to itself, and writes the same bytes again.
#[test]
fn a_written_replay_reads_back_equal() {
    let replay = golden_match();
    let json = replay.to_json_pretty();
    let read = duel_replays::Replay::from_slice(json.as_bytes()).expect("parse");
    assert_eq!(read, replay);
    assert_eq!(read.to_json_pretty(), json);
}

#[test]
fn tape_is_stable() {
    let path = golden_path("random-vs-script-seed7.json");
    let output = Command::new(env!("CARGO_BIN_EXE_referee"))
        .args([
            "replay",
            "show",
            path.to_str().expect("utf-8"),
            "--color",
            "never",
        ])
        .output()
        .expect("runs");
    assert!(output.status.success());
    check(
        "random-vs-script-seed7.tape",
        &String::from_utf8_lossy(&output.stdout),
    );
}
