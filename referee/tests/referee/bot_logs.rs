//! Bots' logs through the real binary: what the example `chatter`
//! bot writes with `log`, `println!` and `eprintln!` reaches the replay beside
//! its exchange, `--logs` prints it under that exchange, the tape names the
//! cause of each substitution inline, and replays with or without logs verify.
//! Needs the example bots (`scripts/build-bots`, run by scripts/setup/bots.sh).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use duel_replays::{Replay, SourceName};

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

fn referee(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_referee"))
        .args(args)
        .output()
        .expect("runs")
}

fn ok(output: &Output) -> String {
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).expect("utf-8")
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// The lines of the tape from exchange `n`'s line of round 1 to the next
/// exchange's line (its log lines, with `--logs`).
fn exchange_block(tape: &str, n: u8) -> Vec<&str> {
    let starts = |line: &str, n: u8| line.trim_start().starts_with(&format!("{n}  "));
    let mut lines = tape.lines().skip_while(|line| !starts(line, n));
    let mut block: Vec<&str> = lines.next().into_iter().collect();
    block.extend(lines.take_while(|line| line.starts_with("       ")));
    block
}

#[test]
fn logs_reach_the_replay_the_tape_and_replay_show() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("chat.json");
    let chatter = bot("chatter");
    let tape = ok(&referee(&[
        "local",
        &chatter,
        "builtin:block",
        "--seed",
        "4",
        "--logs",
        "--color",
        "never",
        "--replay",
        path_str(&file),
    ]));

    let first = exchange_block(&tape, 1);
    assert_eq!(
        first[1..],
        [
            "       A │ log: decision 1, round 1 exchange 1",
            "       A │ stdout: hp 160 stamina 100",
            "       A │ stderr: opponent hp 160",
        ],
        "{tape}"
    );
    let second = exchange_block(&tape, 2);
    assert_eq!(second.len(), 1 + 32 + 1, "{tape}");
    assert!(second[4].ends_with("xxx…"), "{tape}");
    assert!(second[33].contains("A │ … log truncated"), "{tape}");
    // The third decision panics: the tape says why, on the exchange's line.
    let third = exchange_block(&tape, 3);
    assert!(
        third[0].contains("BLOCK (fault: panicked: index out of bounds: the len"),
        "{tape}"
    );
    assert!(third[0].contains('…'), "the reason is cut: {tape}");
    assert!(
        third
            .iter()
            .any(|line| line.contains("A │ index out of bounds")),
        "the panic message is in the log: {tape}"
    );

    let replay = Replay::read(&file).expect("replay");
    let (_, exchange) = replay.exchanges().next().expect("an exchange");
    assert_eq!(exchange.a.log().len(), 3);
    assert!(!exchange.a.log_truncated);
    assert!(exchange.b.log().is_empty(), "builtin bots log nothing");
    let faulted = replay
        .exchanges()
        .nth(2)
        .map(|(_, exchange)| exchange.a.clone())
        .expect("a third exchange");
    assert_eq!(faulted.source, SourceName::Fault);
    assert!(replay.exchanges().nth(1).expect("2nd").1.a.log_truncated);

    // The same lines from the replay file, and none without --logs.
    let shown = ok(&referee(&[
        "replay",
        "show",
        "--logs",
        "--color",
        "never",
        path_str(&file),
    ]));
    assert_eq!(exchange_block(&shown, 1), first);
    let plain = ok(&referee(&[
        "replay",
        "show",
        "--color",
        "never",
        path_str(&file),
    ]));
    assert!(!plain.contains(" │ "), "{plain}");
    assert!(plain.contains("BLOCK (fault: panicked: index out of bounds"));
}

#[test]
fn replays_verify_with_and_without_their_logs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("chat.json");
    ok(&referee(&[
        "local",
        &bot("chatter"),
        &bot("jabber"),
        "--seed",
        "9",
        "--replay",
        path_str(&file),
    ]));
    let verified = ok(&referee(&["replay", "verify", path_str(&file)]));
    assert!(!verified.is_empty());

    let mut replay = Replay::read(&file).expect("replay");
    assert!(replay.exchanges().any(|(_, e)| !e.a.log().is_empty()));
    for round in &mut replay.rounds {
        for exchange in &mut round.exchanges {
            for side in [&mut exchange.a, &mut exchange.b] {
                side.take_log();
                side.log_truncated = false;
            }
        }
    }
    let stripped = dir.path().join("stripped.json");
    replay.write(&stripped).expect("write");
    let json = std::fs::read_to_string(&stripped).expect("read");
    assert!(!json.contains("\"log\""), "no empty log fields are written");
    ok(&referee(&["replay", "verify", path_str(&stripped)]));

    // Logs are not re-played: different log lines still verify.
    let mut edited = Replay::read(&file).expect("replay");
    edited.rounds[0].exchanges[0]
        .a
        .set_log(vec!["a line the bot never wrote".to_owned()]);
    let edited_file = dir.path().join("edited.json");
    edited.write(&edited_file).expect("write");
    ok(&referee(&["replay", "verify", path_str(&edited_file)]));
}

/// Every `*.json` replay under `dir` (any depth).
fn replays_under(dir: &Path) -> Vec<Replay> {
    let mut found = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|ext| ext == "json")
                && let Ok(replay) = Replay::read(&path)
            {
                found.push(replay);
            }
        }
    }
    found
}

fn chatter_logged(replays: &[Replay]) -> bool {
    replays.iter().any(|replay| {
        replay
            .exchanges()
            .flat_map(|(_, exchange)| exchange.sides())
            .any(|side| {
                side.log()
                    .iter()
                    .any(|line| line.starts_with("log: decision"))
            })
    })
}

#[test]
fn tournament_and_sprt_replays_keep_logs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let tournament = dir.path().join("tournament");
    ok(&referee(&[
        "tournament",
        &bot("chatter"),
        "builtin:block",
        "--jobs",
        "1",
        "--out",
        path_str(&tournament),
    ]));
    let replays = replays_under(&tournament);
    assert_eq!(replays.len(), 2, "one match from each side");
    assert!(chatter_logged(&replays));

    let sprt = dir.path().join("sprt");
    let output = referee(&[
        "sprt",
        &bot("chatter"),
        "builtin:block",
        "--elo0",
        "0",
        "--elo1",
        "10",
        "--max-pairs",
        "1",
        "--jobs",
        "1",
        "--out",
        path_str(&sprt),
    ]);
    assert_eq!(
        output.status.code(),
        Some(3),
        "no verdict after one pair: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let replays = replays_under(&sprt);
    assert_eq!(replays.len(), 2, "one pair");
    assert!(chatter_logged(&replays));
}

/// The tournament table explains a fault rate: chatter faults on every third
/// decision on purpose, and the table says so with its first fault's reason.
#[test]
fn a_tournament_names_the_first_fault_of_a_bot_that_faults() {
    let output = referee(&[
        "tournament",
        &bot("chatter"),
        "builtin:block",
        "builtin:counter",
        "--jobs",
        "1",
    ]);
    let table = ok(&output);
    assert!(table.contains("\n Faults ("), "{table}");
    let line = table
        .lines()
        .find(|line| line.starts_with("  chatter: "))
        .unwrap_or_else(|| panic!("no fault line for chatter: {table}"));
    assert!(
        line.contains("of its decisions · first: panicked: index out of bounds"),
        "{line}"
    );
    let share: f64 = line["  chatter: ".len()..]
        .split('%')
        .next()
        .and_then(|number| number.parse().ok())
        .unwrap_or_else(|| panic!("a percentage: {line}"));
    assert!((30.0..=33.4).contains(&share), "{line}");
    // Bots that never fault get no line.
    assert!(!table.contains("  builtin:block: "), "{table}");
}
