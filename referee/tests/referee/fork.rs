//! `referee local --from REPLAY#rNeM --swap SIDE=BOT` and `referee replay
//! verify FORK --parent REPLAY` as an author runs them: the real binary, a
//! real WASM bot's signed match as the parent, forks at every exchange.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn referee(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_referee"))
        .args(args)
        .env_remove("DUEL_SIGNING_KEY_FILE")
        .env_remove("DUEL_REPLAY_SERVER")
        .env("NO_COLOR", "1")
        .output()
        .expect("run referee")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn arg(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

fn bot(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/bots")
        .join(format!("{name}.wasm"))
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("read")).expect("json")
}

/// Every exchange of a replay as the JSON bytes it was written with, with
/// its place (`r2e7`).
fn exchanges(replay: &Value) -> Vec<(String, Vec<u8>)> {
    let mut all = Vec::new();
    for round in replay["rounds"].as_array().expect("rounds") {
        for exchange in round["exchanges"].as_array().expect("exchanges") {
            all.push((
                format!("r{}e{}", round["number"], exchange["number"]),
                serde_json::to_vec(exchange).expect("json"),
            ));
        }
    }
    all
}

/// The parent: a WASM bot (its latencies are measured, so a fork that
/// played the prefix again instead of copying it would differ) against a
/// seeded built-in over all 36 exchanges, signed as a ranked replay is.
fn parent(folder: &Path, key: &Path) -> PathBuf {
    let path = folder.join("parent.json");
    let local = referee(&[
        "local",
        arg(&bot("pacer")),
        "builtin:random",
        "--seed",
        "3",
        "--replay",
        arg(&path),
    ]);
    assert!(local.status.success(), "{}", text(&local.stderr));
    let sign = referee(&["replay", "sign", arg(&path), "--signing-key", arg(key)]);
    assert!(sign.status.success(), "{}", text(&sign.stderr));
    path
}

fn fork(from: &str, swaps: &[&str], key: &Path, out: &Path) -> Output {
    let mut args = vec!["local", "--from", from];
    for swap in swaps {
        args.extend(["--swap", swap]);
    }
    args.extend(["--signing-key", arg(key), "--replay", arg(out)]);
    referee(&args)
}

#[test]
fn a_fork_at_every_exchange_copies_the_prefix_byte_for_byte_and_verifies() {
    let folder = tempfile::tempdir().expect("temp dir");
    let key = folder.path().join("referee.key");
    let parent_path = parent(folder.path(), &key);
    let parent = read_json(&parent_path);
    let parent_exchanges = exchanges(&parent);
    assert_eq!(
        parent_exchanges.len(),
        36,
        "the parent must go the distance to fork at every exchange"
    );
    let out = folder.path().join("fork.json");
    for (position, (point, _)) in parent_exchanges.iter().enumerate() {
        let from = format!("{}#{point}", arg(&parent_path));
        let run = fork(&from, &["a=builtin:counter"], &key, &out);
        assert!(run.status.success(), "{point}: {}", text(&run.stderr));
        let forked = read_json(&out);
        let forked_exchanges = exchanges(&forked);
        for (index, (place, bytes)) in parent_exchanges.iter().take(position).enumerate() {
            assert_eq!(
                &forked_exchanges[index],
                &(place.clone(), bytes.clone()),
                "fork at {point}: exchange {place} of the prefix differs"
            );
        }
        assert_eq!(forked["fork"]["at"], point.as_str());
        assert_eq!(forked["fork"]["swapped"], serde_json::json!(["a"]));
        assert_eq!(forked["fork"]["parent_match_id"], parent["match_id"]);
        assert_eq!(forked["seed"], parent["seed"]);
        assert_eq!(forked["fighters"][1], parent["fighters"][1]);
        assert_eq!(forked["fighters"][0]["spec"], "builtin:counter");
        assert!(forked["signature"].is_object(), "a fork is signed");
        assert!(forked.get("season").is_none(), "a fork is never ranked");
        // From the fork point on, side a is the counter puncher, and the
        // recorded fighter b's budget and state carry on: the whole fork,
        // built-in choices included, verifies against its parent.
        let verify = referee(&[
            "replay",
            "verify",
            arg(&out),
            "--parent",
            arg(&parent_path),
            "--json",
        ]);
        assert!(
            verify.status.success(),
            "{point}: {}{}",
            text(&verify.stdout),
            text(&verify.stderr)
        );
        let verdict: Value = serde_json::from_slice(&verify.stdout).expect("verdict");
        assert_eq!(verdict["fork"]["parent_checked"], true, "{verdict}");
    }
}

/// One changed byte of a copied exchange, re-signed so that only the
/// prefix check can see it, fails `verify --parent` at that exchange.
#[test]
fn one_changed_byte_of_the_prefix_fails_the_check_against_the_parent() {
    let folder = tempfile::tempdir().expect("temp dir");
    let key = folder.path().join("referee.key");
    let parent_path = parent(folder.path(), &key);
    let out = folder.path().join("fork.json");
    let from = format!("{}#r2e5", arg(&parent_path));
    let run = fork(&from, &["a=builtin:random"], &key, &out);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let mut forked = read_json(&out);
    let latency = &mut forked["rounds"][1]["exchanges"][2]["a"]["latency_ms"];
    *latency = serde_json::json!(latency.as_u64().expect("latency") + 1);
    let edited = folder.path().join("edited.json");
    std::fs::write(&edited, serde_json::to_vec_pretty(&forked).expect("json")).expect("write");
    let sign = referee(&["replay", "sign", arg(&edited), "--signing-key", arg(&key)]);
    assert!(sign.status.success(), "{}", text(&sign.stderr));
    // Alone it is a sound match: the rules do not see latencies.
    let alone = referee(&["replay", "verify", arg(&edited)]);
    assert!(alone.status.success(), "{}", text(&alone.stderr));
    assert!(
        text(&alone.stdout).contains("give --parent REPLAY to check its prefix"),
        "{}",
        text(&alone.stdout)
    );
    let against = referee(&[
        "replay",
        "verify",
        arg(&edited),
        "--parent",
        arg(&parent_path),
    ]);
    assert_eq!(against.status.code(), Some(1), "{}", text(&against.stdout));
    let said = text(&against.stderr);
    assert!(
        said.contains("fork check failed at round 2, exchange 3, fighter a")
            && said.contains("byte for byte"),
        "{said}"
    );
    // The true fork against another parent: the digest names the wrong one.
    let other = folder.path().join("other.json");
    let local = referee(&[
        "local",
        "builtin:random",
        "builtin:block",
        "--seed",
        "8",
        "--replay",
        arg(&other),
    ]);
    assert!(local.status.success(), "{}", text(&local.stderr));
    let wrong = referee(&["replay", "verify", arg(&out), "--parent", arg(&other)]);
    assert_eq!(wrong.status.code(), Some(1));
    assert!(
        text(&wrong.stderr).contains("the fork's parent is sha256:"),
        "{}",
        text(&wrong.stderr)
    );
}

/// Forked without a swap, a match of seeded built-ins plays exactly as its
/// parent did: the recorded bots were warmed through the prefix and stand
/// where they stood.
#[test]
fn a_fork_without_a_swap_replays_the_parent_exactly() {
    let folder = tempfile::tempdir().expect("temp dir");
    let key = folder.path().join("referee.key");
    let parent_path = folder.path().join("parent.json");
    let local = referee(&[
        "local",
        "builtin:random",
        "builtin:counter",
        "--seed",
        "31",
        "--replay",
        arg(&parent_path),
    ]);
    assert!(local.status.success(), "{}", text(&local.stderr));
    let parent = read_json(&parent_path);
    let out = folder.path().join("fork.json");
    for point in ["r1e1", "r1e6", "r2e1", "r3e2"] {
        let from = format!("{}#{point}", arg(&parent_path));
        let run = fork(&from, &[], &key, &out);
        if !run.status.success() && text(&run.stderr).contains("not in the match") {
            continue;
        }
        assert!(run.status.success(), "{point}: {}", text(&run.stderr));
        let tape = text(&run.stdout);
        assert!(tape.contains("fork of match"), "{tape}");
        let forked = read_json(&out);
        // Decisions are timed afresh from the fork point: all else is equal.
        let untimed = |replay: &Value| -> Vec<(String, Value)> {
            exchanges(replay)
                .into_iter()
                .map(|(place, bytes)| {
                    let mut exchange: Value = serde_json::from_slice(&bytes).expect("json");
                    for side in ["a", "b"] {
                        let side = exchange[side].as_object_mut().expect("side");
                        side.remove("latency_ms");
                        side.remove("latency_us");
                    }
                    (place, exchange)
                })
                .collect()
        };
        let (forked_untimed, parent_untimed) = (untimed(&forked), untimed(&parent));
        assert_eq!(
            forked_untimed.len(),
            parent_untimed.len(),
            "fork at {point}"
        );
        for (fork_exchange, parent_exchange) in forked_untimed.iter().zip(&parent_untimed) {
            assert!(
                fork_exchange == parent_exchange,
                "fork at {point}: {} is {} in the fork, {} in the parent",
                parent_exchange.0,
                fork_exchange.1,
                parent_exchange.1
            );
        }
        assert_eq!(forked["result"], parent["result"], "fork at {point}");
        assert_ne!(forked["match_id"], parent["match_id"]);
    }
}

#[test]
fn bad_forks_get_one_clear_line() {
    let folder = tempfile::tempdir().expect("temp dir");
    let key = folder.path().join("referee.key");
    let parent_path = parent(folder.path(), &key);
    let out = folder.path().join("fork.json");
    let parent_arg = arg(&parent_path).to_owned();
    // A tampered parent: its signature fails.
    let mut tampered = read_json(&parent_path);
    let hp = &mut tampered["rounds"][0]["exchanges"][0]["b"]["latency_ms"];
    *hp = serde_json::json!(hp.as_u64().expect("latency") + 1);
    let tampered_path = folder.path().join("tampered.json");
    std::fs::write(&tampered_path, serde_json::to_vec(&tampered).expect("json")).expect("write");
    let cases: Vec<(String, Vec<&str>, &str)> = vec![
        (
            format!("{parent_arg}#r3e13"),
            vec!["a=builtin:random"],
            "fork point r3e13 is not in the match: it ended at r3e12",
        ),
        (
            format!("{parent_arg}#r4e1"),
            vec!["a=builtin:random"],
            "is not in the match",
        ),
        (
            format!("{parent_arg}#r2"),
            vec!["a=builtin:random"],
            "is not rNeM",
        ),
        (
            format!("{parent_arg}#r2e1"),
            vec!["c=builtin:random"],
            "neither a nor b",
        ),
        (
            format!("{parent_arg}#r2e1"),
            vec!["a=builtin:random", "a=builtin:block"],
            "twice",
        ),
        (
            format!("{parent_arg}#r2e1"),
            vec!["a=no-such-folder/bot.wasm"],
            "cannot read bot no-such-folder/bot.wasm",
        ),
        (
            format!("{}#r2e1", arg(&tampered_path)),
            vec!["a=builtin:random"],
            "its signature fails",
        ),
        (
            format!("{}#r2e1", arg(&folder.path().join("missing.json"))),
            vec!["a=builtin:random"],
            "cannot read replay",
        ),
    ];
    for (from, swaps, says) in cases {
        let run = fork(&from, &swaps, &key, &out);
        assert_eq!(run.status.code(), Some(2), "{from} {swaps:?}");
        let said = text(&run.stderr);
        assert!(said.contains(says), "{from} {swaps:?}: {said}");
        assert_eq!(said.trim_end().lines().count(), 1, "one line: {said}");
        assert!(!out.exists(), "{from}: nothing is written");
    }
    // --from with bots (clap refuses), or --swap without --from.
    let both = referee(&[
        "local",
        "builtin:random",
        "builtin:block",
        "--from",
        &parent_arg,
    ]);
    assert_eq!(both.status.code(), Some(2));
    let swap_alone = referee(&["local", "builtin:random", "builtin:block", "--swap", "a=x"]);
    assert_eq!(swap_alone.status.code(), Some(2));
    // --parent for a replay that is no fork.
    let no_fork = referee(&["replay", "verify", &parent_arg, "--parent", &parent_arg]);
    assert_eq!(no_fork.status.code(), Some(2));
    assert!(
        text(&no_fork.stderr).contains("is not a fork"),
        "{}",
        text(&no_fork.stderr)
    );
}

/// `referee sprt NEW BASE --from-losses DIR`: every round BASE lost in the
/// matches it lost becomes a position, played by NEW and by BASE against the
/// recorded opponent; BASE, deterministic like its opponent, loses each
/// again; the forks written verify against their parents.
#[test]
fn sprt_from_losses_plays_each_lost_position_with_new_and_base() {
    let folder = tempfile::tempdir().expect("temp dir");
    let losses = folder.path().join("losses");
    std::fs::create_dir(&losses).expect("folder");
    let base = "builtin:script:BLOCK,BLOCK,JAB";
    // BASE on either side, against the counter puncher; and a match without
    // BASE, and a file that is no replay, which are passed over.
    let matches: [(&str, &str, &str); 4] = [
        ("m1.json", base, "builtin:counter"),
        ("m2.json", "builtin:counter", base),
        ("m3.json", base, "builtin:random"),
        ("m4.json", "builtin:random", "builtin:counter"),
    ];
    for (name, a, b) in matches {
        let local = referee(&[
            "local",
            a,
            b,
            "--seed",
            "5",
            "--replay",
            arg(&losses.join(name)),
        ]);
        assert!(local.status.success(), "{}", text(&local.stderr));
    }
    std::fs::write(losses.join("notes.json"), b"{ not a replay").expect("write");
    // The positions the test expects: each round BASE lost, in a match it lost.
    let mut expected = Vec::new();
    for (name, a, _) in matches {
        let replay = read_json(&losses.join(name));
        let base_side = if a == base { "a" } else { "b" };
        let fighters = replay["fighters"].as_array().expect("fighters");
        if !fighters.iter().any(|fighter| fighter["spec"] == base) {
            continue;
        }
        let opponent = if base_side == "a" { "b" } else { "a" };
        if replay["result"]["winner"] != opponent {
            continue;
        }
        for round in replay["rounds"].as_array().expect("rounds") {
            if round["result"]["winner"] == opponent {
                expected.push((name.to_owned(), format!("r{}e1", round["number"])));
            }
        }
    }
    assert!(!expected.is_empty(), "BASE must lose something to test");
    let out = folder.path().join("forks");
    let key = folder.path().join("referee.key");
    let run = referee(&[
        "sprt",
        "builtin:counter",
        base,
        "--from-losses",
        arg(&losses),
        "--elo0",
        "0",
        "--elo1",
        "2000",
        "--out",
        arg(&out),
        "--signing-key",
        arg(&key),
        "--json",
    ]);
    let verdict: Value = serde_json::from_slice(&run.stdout)
        .unwrap_or_else(|_| panic!("{}{}", text(&run.stdout), text(&run.stderr)));
    let code = match verdict["verdict"].as_str() {
        Some("H1") => 0,
        Some("H0") => 1,
        _ => 3,
    };
    assert_eq!(run.status.code(), Some(code), "{verdict}");
    assert!(
        text(&run.stderr).contains("notes.json"),
        "the file that is no replay is named: {}",
        text(&run.stderr)
    );
    let positions = verdict["positions"].as_array().expect("positions");
    let played: Vec<(String, String)> = positions
        .iter()
        .map(|position| {
            let file = position["replay"].as_str().expect("replay");
            let name = Path::new(file).file_name().expect("name");
            (
                name.to_string_lossy().into_owned(),
                position["at"].as_str().expect("at").to_owned(),
            )
        })
        .collect();
    // An early verdict may stop before the last position.
    assert_eq!(played[..], expected[..played.len()], "{verdict}");
    if code == 3 {
        assert_eq!(played, expected);
    }
    for position in positions {
        assert_eq!(position["base"], "loses", "{position}");
    }
    // Each position's two forks were written, signed, and check against
    // their parent.
    let written: Vec<PathBuf> = std::fs::read_dir(&out)
        .expect("out")
        .map(|entry| entry.expect("entry").path())
        .collect();
    assert_eq!(written.len(), 2 * positions.len());
    for path in written {
        let fork = read_json(&path);
        assert!(fork["signature"].is_object());
        let parent = positions
            .iter()
            .find(|position| position["match_id"] == fork["fork"]["parent_match_id"])
            .expect("a parent among the positions");
        let verify = referee(&[
            "replay",
            "verify",
            arg(&path),
            "--parent",
            parent["replay"].as_str().expect("replay"),
        ]);
        assert!(verify.status.success(), "{}", text(&verify.stderr));
    }

    // A folder where BASE lost nothing: one line, exit 2.
    let none = referee(&[
        "sprt",
        "builtin:counter",
        "builtin:script:HEAVY",
        "--from-losses",
        arg(&losses),
        "--elo0",
        "0",
        "--elo1",
        "20",
    ]);
    assert_eq!(none.status.code(), Some(2));
    let said = text(&none.stderr);
    assert!(said.contains("no lost match of BASE"), "{said}");
}
