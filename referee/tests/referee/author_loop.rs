//! The bot author's loop through the real binary: openings that make
//! deterministic bots play varied games and re-verify, the wall clock's real
//! minimum, bots played from their source folders and built once, and
//! `referee new` projects that build, pass their own test and play.

use crate::services;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn referee_path() -> &'static str {
    env!("CARGO_BIN_EXE_referee")
}

fn referee(args: &[&str]) -> Output {
    referee_in(args, None)
}

/// Runs the referee with its built bots kept in `bot_cache` (when given).
fn referee_in(args: &[&str], bot_cache: Option<&Path>) -> Output {
    let mut command = Command::new(referee_path());
    command.args(args);
    if let Some(cache) = bot_cache {
        command.env("DUEL_BOT_CACHE", cache);
    }
    command.output().expect("the referee binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn replays_in(dir: &Path) -> Vec<(PathBuf, serde_json::Value)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("replay folder")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let value = serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
            (path, value)
        })
        .collect()
}

/// The actions of both fighters, exchange by exchange: equal for games that
/// went alike.
fn play_of(replay: &serde_json::Value) -> String {
    let mut play = String::new();
    for round in replay["rounds"].as_array().expect("rounds") {
        for exchange in round["exchanges"].as_array().expect("exchanges") {
            play.push_str(exchange["a"]["action"].as_str().expect("action"));
            play.push(':');
            play.push_str(exchange["b"]["action"].as_str().expect("action"));
            play.push(' ');
        }
    }
    play
}

#[test]
fn an_sprt_with_openings_plays_varied_games_that_all_verify() {
    let out = tempfile::tempdir().expect("temp dir");
    let out_dir = out.path().to_str().expect("utf-8 path");
    let output = referee(&[
        "sprt",
        "builtin:script:JAB,JAB,RECOVER",
        "builtin:counter",
        "--elo0",
        "0",
        "--elo1",
        "10",
        "--max-pairs",
        "12",
        "--openings",
        "4",
        "--out",
        out_dir,
        "--json",
    ]);
    let stderr = text(&output.stderr);
    let verdict: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(verdict["identical_pairs"], false, "{stderr}");
    assert!(!stderr.contains("same two games"), "{stderr}");

    let replays = replays_in(out.path());
    assert!(replays.len() >= 2, "{} replays", replays.len());
    let mut plays = BTreeSet::new();
    for (path, replay) in &replays {
        let opening = replay["opening"]
            .as_array()
            .expect("every replay has its opening");
        assert!((1..=4).contains(&opening.len()), "{opening:?}");
        let first = &replay["rounds"][0]["exchanges"][0];
        assert_eq!(first["a"]["action"], opening[0][0], "{}", path.display());
        assert_eq!(first["b"]["action"], opening[0][1], "{}", path.display());
        assert_eq!(first["a"]["tokens"], 0);
        plays.insert(play_of(replay));
        let verified = referee(&["replay", "verify", path.to_str().expect("utf-8")]);
        assert!(
            verified.status.success(),
            "{}: {}{}",
            path.display(),
            text(&verified.stdout),
            text(&verified.stderr)
        );
    }
    assert!(
        plays.len() > replays.len() / 2,
        "{} distinct games of {}",
        plays.len(),
        replays.len()
    );

    // Both games of a pair play the same opening, sides swapped.
    assert_eq!(replays[0].1["opening"], replays[1].1["opening"]);
    assert_eq!(
        replays[0].1["fighters"][0]["name"],
        replays[1].1["fighters"][1]["name"]
    );

    // An opening that the exchanges do not follow is a disagreement.
    let (path, replay) = &replays[0];
    let mut tampered = replay.clone();
    let played = tampered["opening"][0][0]
        .as_str()
        .expect("action")
        .to_owned();
    tampered["opening"][0][0] = if played == "BLOCK" {
        "RECOVER"
    } else {
        "BLOCK"
    }
    .into();
    let tampered_path = path.with_file_name("tampered.json");
    std::fs::write(&tampered_path, serde_json::to_vec(&tampered).expect("json")).expect("write");
    let verified = referee(&["replay", "verify", tampered_path.to_str().expect("utf-8")]);
    assert!(!verified.status.success());
    let said = format!("{}{}", text(&verified.stdout), text(&verified.stderr));
    assert!(
        said.contains("round 1, exchange 1, fighter a") && said.contains("opening"),
        "{said}"
    );
}

#[test]
fn a_book_opening_is_played_from_both_sides_and_shown_on_the_tape() {
    let dir = tempfile::tempdir().expect("temp dir");
    let book = dir.path().join("book.txt");
    std::fs::write(&book, "# one opening\nFEINT:DODGE JAB:BLOCK\n").expect("write");
    let out = dir.path().join("run");
    let output = referee(&[
        "tournament",
        "builtin:counter",
        "builtin:block",
        "--book",
        book.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
        "--json",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let replays = replays_in(&out.join("replays"));
    assert_eq!(replays.len(), 2);
    for (_, replay) in &replays {
        assert_eq!(
            replay["opening"],
            serde_json::json!([["FEINT", "DODGE"], ["JAB", "BLOCK"]])
        );
    }
    let shown = referee(&["replay", "show", replays[0].0.to_str().expect("utf-8")]);
    let tape = text(&shown.stdout);
    assert!(tape.contains("opening  FEINT:DODGE JAB:BLOCK"), "{tape}");

    // Resuming plays the saved openings without the book.
    std::fs::remove_file(&book).expect("remove");
    let resumed = referee(&[
        "tournament",
        "--resume",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));

    for (line, expected) in [
        ("JAB:KICK\n", "line 1"),
        ("\n\nHEAVY\n", "line 3"),
        ("# none\n", "no openings"),
    ] {
        std::fs::write(&book, line).expect("write");
        let refused = referee(&[
            "sprt",
            "builtin:counter",
            "builtin:block",
            "--elo0",
            "0",
            "--elo1",
            "10",
            "--book",
            book.to_str().expect("utf-8"),
        ]);
        assert_eq!(refused.status.code(), Some(2), "{line:?}");
        let stderr = text(&refused.stderr);
        assert!(stderr.contains(expected), "{line:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
}

#[test]
fn the_wall_clock_goes_down_to_one_millisecond_and_no_lower() {
    let played = referee(&[
        "local",
        "builtin:random",
        "builtin:counter",
        "--wall-clock",
        "0.001",
        "--json",
    ]);
    assert!(played.status.success(), "{}", text(&played.stderr));
    let replay: serde_json::Value = serde_json::from_slice(&played.stdout).expect("json");
    assert_eq!(replay["wall_clock_ms"], 1);

    for command in ["local", "tournament", "sprt"] {
        let mut args = vec![
            command,
            "builtin:random",
            "builtin:counter",
            "--wall-clock",
            "0.0005",
        ];
        if command == "sprt" {
            args.extend(["--elo0", "0", "--elo1", "10"]);
        }
        let refused = referee(&args);
        assert_eq!(refused.status.code(), Some(2), "{command}");
        let stderr = text(&refused.stderr);
        assert!(
            stderr.contains("0.001") && stderr.contains("--wall-clock"),
            "{command}: {stderr}"
        );
    }
}

#[test]
fn a_wasm_bot_under_a_one_millisecond_clock_plays_without_a_sandbox_error() {
    let bots = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bots");
    let bots = std::env::var_os("BOTS_OUT")
        .map(PathBuf::from)
        .unwrap_or(bots);
    let jabber = bots.join("jabber.wasm");
    if !jabber.is_file() {
        services::skip("the example WASM bots", "scripts/build-bots has not run");
        return;
    }
    let played = referee(&[
        "local",
        jabber.to_str().expect("utf-8"),
        "builtin:counter",
        "--wall-clock",
        "0.001",
        "--json",
    ]);
    assert!(played.status.success(), "{}", text(&played.stderr));
}

#[test]
fn the_top_level_help_speaks_to_a_bot_author() {
    let help = text(&referee(&["--help"]).stdout);
    assert!(!help.contains("seam"), "{help}");
    assert!(help.contains("referee new mybot"), "{help}");
    assert!(help.contains("source folder"), "{help}");
}

/// `referee new NAME --lang rust` in `dir`, depending on this checkout's SDK.
fn new_bot(dir: &Path, name: &str, lang: &str) -> PathBuf {
    let folder = dir.join(name);
    let output = referee(&[
        "new",
        name,
        "--lang",
        lang,
        "--dir",
        folder.to_str().expect("utf-8"),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("referee local"),
        "{}",
        text(&output.stdout)
    );
    folder
}

#[test]
fn a_rust_bot_from_its_folder_is_built_once_and_its_own_test_passes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = dir.path().join("cache");
    let folder = new_bot(dir.path(), "mybot", "rust");
    let bot = folder.to_str().expect("utf-8");

    let first = referee_in(
        &["local", bot, "builtin:counter", "--json", "--seed", "3"],
        Some(&cache),
    );
    let stderr = text(&first.stderr);
    assert!(first.status.success(), "{stderr}");
    // What it does, then how long it took: measured, not guessed.
    assert!(
        stderr.contains("building mybot with cargo build --release --target wasm32-wasip2"),
        "{stderr}"
    );
    assert!(!stderr.contains("first time"), "{stderr}");
    let took = stderr
        .lines()
        .find_map(|line| line.strip_prefix("built mybot in "))
        .and_then(|rest| rest.split(" s ").next())
        .and_then(|seconds| seconds.parse::<f64>().ok());
    assert!(took.is_some_and(|seconds| seconds >= 0.0), "{stderr}");
    let replay: serde_json::Value = serde_json::from_slice(&first.stdout).expect("json");
    assert_eq!(replay["fighters"][0]["name"], "mybot");
    assert_eq!(replay["fighters"][0]["spec"], bot);
    let log = &replay["rounds"][0]["exchanges"][0]["a"]["log"];
    assert!(
        log[0]
            .as_str()
            .is_some_and(|line| line.contains("round 1 exchange 1")),
        "{log}"
    );

    let second = referee_in(
        &["local", bot, "builtin:counter", "--seed", "3"],
        Some(&cache),
    );
    assert!(second.status.success(), "{}", text(&second.stderr));
    assert!(
        !text(&second.stderr).contains("building"),
        "{}",
        text(&second.stderr)
    );

    // An edit rebuilds.
    let lib = folder.join("src/lib.rs");
    let source = std::fs::read_to_string(&lib).expect("read");
    std::fs::write(&lib, source.replace("stamina >= 20", "stamina >= 30")).expect("write");
    let third = referee_in(
        &["local", bot, "builtin:counter", "--seed", "3"],
        Some(&cache),
    );
    assert!(third.status.success(), "{}", text(&third.stderr));
    assert!(
        text(&third.stderr).contains("building mybot"),
        "{}",
        text(&third.stderr)
    );

    // The project's own test plays it through this referee.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let tested = Command::new(cargo)
        .args(["test", "--quiet"])
        .current_dir(&folder)
        .env("REFEREE", referee_path())
        .env("DUEL_BOT_CACHE", &cache)
        .output()
        .expect("cargo runs");
    assert!(
        tested.status.success(),
        "{}{}",
        text(&tested.stdout),
        text(&tested.stderr)
    );

    // A folder that is no bot says what a bot folder holds.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    let refused = referee_in(
        &["local", empty.to_str().expect("utf-8"), "builtin:counter"],
        Some(&cache),
    );
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        text(&refused.stderr).contains("Cargo.toml"),
        "{}",
        text(&refused.stderr)
    );
}

#[test]
fn a_tournament_names_bots_by_file_stem_or_folder() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = dir.path().join("cache");
    let folder = new_bot(dir.path(), "stembot", "rust");
    let output = referee_in(
        &[
            "tournament",
            folder.to_str().expect("utf-8"),
            "builtin:counter",
            "--json",
        ],
        Some(&cache),
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let names: Vec<&str> = value["standings"]["bots"]
        .as_array()
        .expect("bots")
        .iter()
        .map(|bot| bot["bot"].as_str().expect("name"))
        .collect();
    assert!(names.contains(&"stembot"), "{names:?}");
    assert_eq!(value["plan"]["bots"][0], folder.to_str().expect("utf-8"));
}

#[test]
fn a_python_bot_from_its_folder_plays_logs_and_passes_its_own_test() {
    if services::program(&["componentize-py"]).is_none() {
        services::skip("componentize-py", "scripts/build-bots installs it");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = dir.path().join("cache");
    let folder = new_bot(dir.path(), "pybot", "python");
    let bot = folder.to_str().expect("utf-8");
    let played = referee_in(
        &["local", bot, "builtin:counter", "--logs", "--seed", "5"],
        Some(&cache),
    );
    let stderr = text(&played.stderr);
    assert!(played.status.success(), "{stderr}");
    assert!(
        stderr.contains("building pybot with componentize-py"),
        "{stderr}"
    );
    assert!(stderr.contains("built pybot in "), "{stderr}");
    let tape = text(&played.stdout);
    assert!(tape.contains("round 1 exchange 1: stamina"), "{tape}");
    // print() output is a log line too, under the first exchange only.
    assert_eq!(
        tape.matches("first decision made (1 so far)").count(),
        1,
        "{tape}"
    );
    assert!(!tape.contains("(fault"), "{tape}");

    let tested = Command::new("python3")
        .arg(folder.join("test_bot.py"))
        .env("REFEREE", referee_path())
        .env("DUEL_BOT_CACHE", &cache)
        .output()
        .expect("python3 runs");
    assert!(
        tested.status.success(),
        "{}{}",
        text(&tested.stdout),
        text(&tested.stderr)
    );
}

#[test]
fn referee_new_refuses_a_bad_name_and_an_existing_folder() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bad = referee(&[
        "new",
        "../escape",
        "--dir",
        dir.path().join("x").to_str().expect("utf-8"),
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains("bot name"),
        "{}",
        text(&bad.stderr)
    );
    let taken = referee(&["new", "taken", "--dir", dir.path().to_str().expect("utf-8")]);
    assert_eq!(taken.status.code(), Some(2));
    assert!(
        text(&taken.stderr).contains("exists already"),
        "{}",
        text(&taken.stderr)
    );
}

/// A Python starter's own test, run where no `referee` is on PATH, fails
/// saying how to put it there (or name it), not with a FileNotFoundError.
#[test]
fn a_python_starters_test_without_a_referee_says_how_to_get_one() {
    let Some(python) = services::program(&["python3"]) else {
        services::skip("python3", "the Python starters' tests run on it");
        return;
    };
    // The interpreter itself: `python3` on PATH may be a script that needs
    // PATH (a shim), which is emptied below.
    let found = Command::new(&python)
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    let python = text(&found.stdout).trim().to_owned();
    let dir = tempfile::tempdir().expect("temp dir");
    let nothing_on_path = dir.path().join("empty");
    std::fs::create_dir(&nothing_on_path).expect("mkdir");
    for (name, extra) in [("pystarter", None), ("llmstarter", Some("--llm"))] {
        let folder = dir.path().join(name);
        let mut args = vec![
            "new",
            name,
            "--lang",
            "python",
            "--dir",
            folder.to_str().expect("utf-8"),
        ];
        args.extend(extra);
        let written = referee(&args);
        assert!(written.status.success(), "{}", text(&written.stderr));
        for (referee_env, expected) in [
            (None, "`referee` is not on PATH: put the referee on PATH"),
            (
                Some("/no/such/referee"),
                "REFEREE=/no/such/referee is not a program that can be run",
            ),
        ] {
            let mut command = Command::new(&python);
            command
                .arg(folder.join("test_bot.py"))
                .env("PATH", &nothing_on_path)
                .env_remove("REFEREE");
            if let Some(value) = referee_env {
                command.env("REFEREE", value);
            }
            let tested = command.output().expect("python3 runs");
            let stderr = text(&tested.stderr);
            assert!(!tested.status.success(), "{name}: {stderr}");
            assert!(stderr.contains(expected), "{name}: {stderr}");
            assert!(
                stderr.contains("export PATH=") && stderr.contains("REFEREE=/path/to/referee"),
                "{name}: {stderr}"
            );
            assert!(!stderr.contains("FileNotFoundError"), "{name}: {stderr}");
        }
    }
}

/// A copy of the referee binary at `path` (a hard link when it can be): a
/// referee that runs from somewhere else than where it was built.
fn referee_copy(path: &Path) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    if std::fs::hard_link(referee_path(), path).is_err() {
        std::fs::copy(referee_path(), path).expect("copy the referee");
    }
}

/// `referee new NAME` run by `referee` from `cwd`: the SDK path its Cargo.toml
/// names, and what it printed.
fn new_rust_bot_sdk(referee: &Path, cwd: &Path, folder: &Path) -> (String, String) {
    let output = Command::new(referee)
        .args(["new", "sdkbot", "--dir", folder.to_str().expect("utf-8")])
        .current_dir(cwd)
        .output()
        .expect("the referee runs");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let manifest = std::fs::read_to_string(folder.join("Cargo.toml")).expect("Cargo.toml");
    let line = manifest
        .lines()
        .find(|line| line.starts_with("duel-bot-sdk = "))
        .expect("the SDK dependency")
        .to_owned();
    (line, text(&output.stdout))
}

/// `referee new` depends on the SDK of the checkout the running referee is
/// in, else of the current folder's checkout, and says which; only then
/// on the one it was built from.
#[test]
fn referee_new_takes_the_sdk_of_the_running_clone_and_says_which() {
    // Beside the test binaries, where a hard link to the referee works,
    // unless that is inside this checkout (its SDK would be found first).
    let target_tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = if target_tmp
        .ancestors()
        .any(|folder| folder.join("sdk/Cargo.toml").is_file())
    {
        tempfile::tempdir()
    } else {
        tempfile::tempdir_in(target_tmp)
    }
    .expect("temp dir");
    let root = std::fs::canonicalize(dir.path()).expect("canonical");
    let clone = root.join("clone");
    std::fs::create_dir_all(clone.join("sdk")).expect("mkdir");
    std::fs::write(
        clone.join("sdk/Cargo.toml"),
        "[package]\nname = \"duel-bot-sdk\"\n",
    )
    .expect("write");
    let outside = root.join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    let sdk_line = |sdk: &Path| {
        format!(
            "duel-bot-sdk = {{ path = {:?} }}",
            sdk.display().to_string()
        )
    };

    // Run from the clone's target/release, from a folder outside it.
    let in_clone = clone.join("target/release/referee");
    referee_copy(&in_clone);
    let (line, said) = new_rust_bot_sdk(&in_clone, &outside, &root.join("one"));
    assert_eq!(line, sdk_line(&clone.join("sdk")), "{said}");
    assert!(
        said.contains("the checkout the running referee is in"),
        "{said}"
    );

    // A referee outside any checkout, run in the clone: the clone's SDK.
    let loose = root.join("bin/referee");
    referee_copy(&loose);
    let (line, said) = new_rust_bot_sdk(&loose, &clone.join("sdk"), &root.join("two"));
    assert_eq!(line, sdk_line(&clone.join("sdk")), "{said}");
    assert!(
        said.contains("the checkout of the current folder"),
        "{said}"
    );

    // Neither: the checkout it was built from, said as such.
    let built_from = std::fs::canonicalize(Path::new(env!("CARGO_MANIFEST_DIR")).join("../sdk"))
        .expect("this checkout's SDK");
    let (line, said) = new_rust_bot_sdk(&loose, &outside, &root.join("three"));
    assert_eq!(line, sdk_line(&built_from), "{said}");
    assert!(
        said.contains("the checkout the referee was built from"),
        "{said}"
    );
}
