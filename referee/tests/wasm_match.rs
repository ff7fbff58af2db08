//! WASM bots through the real binary: the example bots built by
//! `scripts/build-bots` (run by scripts/setup/bots.sh before the suite) play a
//! full match whose replay verifies, and a file that is not a component is a
//! one-line error before the match.

use std::path::PathBuf;
use std::process::Command;

fn bot(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/bots")
        .join(format!("{name}.wasm"));
    assert!(
        path.exists(),
        "{} is missing: run scripts/build-bots (scripts/test.sh does)",
        path.display()
    );
    path.display().to_string()
}

#[test]
fn two_example_wasm_bots_play_a_match_that_verifies() {
    let dir = tempfile::tempdir().expect("temp dir");
    let replay = dir.path().join("m.json");
    let output = Command::new(env!("CARGO_BIN_EXE_referee"))
        .args([
            "local",
            &bot("counter"),
            &bot("jabber"),
            "--seed",
            "3",
            "--replay",
        ])
        .arg(&replay)
        .output()
        .expect("runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let parsed = duel_replays::Replay::read(&replay).expect("replay");
    assert_eq!(parsed.fighters[0].kind, duel_replays::FighterKind::Wasm);
    assert!(parsed.fighters[0].digest.starts_with("sha256:"));
    // Every decision is timed at microsecond resolution (a WASM decision takes
    // microseconds, which whole milliseconds would show as 0), and the summary
    // line says so.
    for (_, exchange) in parsed.exchanges() {
        for side in exchange.sides() {
            let micros = side.latency_us.expect("timed decisions carry latency_us");
            assert_eq!(micros / 1_000, side.latency_ms, "{side:?}");
        }
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary = stdout
        .lines()
        .find(|line| line.contains("latency p50"))
        .expect("a summary line per fighter");
    let p50 = summary
        .split("p50 ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .expect("p50 value");
    assert!(
        p50.ends_with(" µs") || p50.contains('.'),
        "p50 shown below whole milliseconds: {summary}"
    );
    let verified = Command::new(env!("CARGO_BIN_EXE_referee"))
        .args(["replay", "verify"])
        .arg(&replay)
        .output()
        .expect("runs");
    assert!(
        verified.status.success(),
        "{}",
        String::from_utf8_lossy(&verified.stderr)
    );
}

#[test]
fn a_file_that_is_not_a_component_is_refused_before_the_match() {
    let dir = tempfile::tempdir().expect("temp dir");
    let fake = dir.path().join("fake.wasm");
    std::fs::write(&fake, b"not wasm").expect("write");
    let output = Command::new(env!("CARGO_BIN_EXE_referee"))
        .args(["local", fake.to_str().expect("utf-8"), "builtin:block"])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("not a WebAssembly component"), "{stderr}");
    assert!(output.stdout.is_empty());
}

/// A tournament of WASM bots takes its instances from a pool sized by `--jobs`:
/// every match plays without a substitution, and the table does not depend on
/// how many matches ran at once.
#[test]
fn a_tournament_of_wasm_bots_plays_from_an_instance_pool() {
    let table = |jobs: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_referee"))
            .args([
                "tournament",
                &bot("counter"),
                &bot("jabber"),
                &bot("pacer"),
                "--rounds",
                "4",
                "--seed",
                "5",
                "--jobs",
                jobs,
                "--json",
            ])
            .output()
            .expect("runs");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let mut value: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
        for bot in value["standings"]["bots"].as_array_mut().expect("bots") {
            assert_eq!(
                bot["substituted"],
                serde_json::json!([0.0, 0.0, 0.0]),
                "{bot}"
            );
            bot["latency_p50_ms"] = 0.into();
            bot["latency_p99_ms"] = 0.into();
            bot["latency_p50_us"] = 0.into();
            bot["latency_p99_us"] = 0.into();
        }
        value
    };
    let one = table("1");
    assert_eq!(one["standings"]["matches_played"], 24);
    assert_eq!(one, table("3"));
}
