//! `referee new NAME --lang rust|python [--llm | --from-env]`: writes a bot project that
//! builds and plays as it is, with a README and a test that plays it against
//! `builtin:counter`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::Outcome;
use crate::cli::{LangArg, NewArgs};

/// Where the SDK was when the referee was built: the last place looked, for a
/// referee that runs neither from a checkout nor in one.
const BUILT_FROM_SDK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../sdk");

/// The largest manifest read to recognise a part of the checkout (the SDK's
/// `Cargo.toml`, the env package's `pyproject.toml`).
const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;

pub fn run(args: NewArgs) -> Result<Outcome> {
    check_name(&args.name)?;
    let folder = args
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(&args.name));
    if folder.exists() {
        bail!(
            "{} exists already: choose another NAME or --dir (nothing was written)",
            folder.display()
        );
    }
    if args.llm && args.lang != LangArg::Python {
        bail!("--llm writes a Python bot: add --lang python (nothing was written)");
    }
    if args.from_env && args.lang != LangArg::Python {
        bail!("--from-env writes a Python bot: add --lang python (nothing was written)");
    }
    let mut note = None;
    let files = match (args.lang, args.llm, args.from_env) {
        (LangArg::Rust, _, _) => {
            let (dependency, sdk_note) = sdk_dependency(&args)?;
            note = sdk_note;
            rust_files(&args.name, &dependency)
        }
        (LangArg::Python, _, true) => {
            let (package, why) = default_part(ENV_PACKAGE)?;
            let package = std::fs::canonicalize(&package)
                .with_context(|| format!("cannot resolve {}", package.display()))?;
            note = Some(format!("duel_env: {} ({why})", package.display()));
            python_policy_files(&args.name, &package)
        }
        (LangArg::Python, true, false) => python_llm_files(&args.name),
        (LangArg::Python, false, false) => python_files(&args.name),
    };
    write_all(&folder, &files)?;
    let shown = folder.display();
    println!("wrote a {} bot in {shown}/:", args.lang.name());
    for (path, _) in &files {
        println!("  {shown}/{path}");
    }
    if let Some(note) = note {
        println!("{note}");
    }
    if args.from_env {
        println!(
            "\ntrain it:  python3 -m venv {shown}/.venv && {shown}/.venv/bin/pip install -r {shown}/requirements.txt"
        );
        println!(
            "           {shown}/.venv/bin/python {shown}/train.py      (about a minute; writes {shown}/policy.npz)"
        );
        println!("play it:   referee local {shown} builtin:random --logs");
        println!(
            "           (the first run sets up the bot's Python environment and builds duel_env, a minute or two)"
        );
    } else if args.llm {
        println!(
            "\nplay it:   referee local {shown} builtin:counter --model-url builtin:house --logs"
        );
        println!(
            "           (offline: builtin:house is the referee's built-in model; the first run sets up a Python environment)"
        );
    } else {
        println!("\nplay it:   referee local {shown} builtin:counter --logs");
    }
    match args.lang {
        LangArg::Rust => println!("test it:   cd {shown} && cargo test"),
        LangArg::Python => println!("test it:   python3 {shown}/test_bot.py"),
    }
    Ok(Outcome::Done)
}

/// Crates a bot project depends on: a bot of one of these names would
/// depend on itself and never build.
const TAKEN_NAMES: [&str; 4] = ["duel-bot-sdk", "duel-rules", "wit-bindgen", "serde_json"];

/// A name that is a crate name and a folder name alike.
fn check_name(name: &str) -> Result<()> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid {
        bail!("bot name {name:?}: use 1 to 64 letters, digits, '-' or '_', starting with a letter");
    }
    // Cargo reads '-' and '_' as one.
    let normal = name.to_ascii_lowercase().replace('_', "-");
    if TAKEN_NAMES
        .iter()
        .any(|taken| taken.replace('_', "-") == normal)
    {
        bail!(
            "bot name {name:?} is a crate the bot depends on: choose another (nothing was written)"
        );
    }
    Ok(())
}

/// The SDK dependency line (`--sdk PATH`, `--sdk-git URL`, or the SDK of a
/// checkout found as [`default_sdk`] says) and, when it was not given, a
/// line saying which SDK was taken and why.
fn sdk_dependency(args: &NewArgs) -> Result<(String, Option<String>)> {
    if let Some(url) = &args.sdk_git {
        return Ok((format!("{{ git = {} }}", toml_string(url)), None));
    }
    let (path, why) = match &args.sdk {
        Some(path) => {
            if !path.join("Cargo.toml").is_file() {
                bail!(
                    "cannot find duel-bot-sdk at {}: pass --sdk PATH (the sdk/ folder of a checkout) or --sdk-git URL (the project's git repository)",
                    path.display()
                );
            }
            (path.clone(), None)
        }
        None => {
            let (path, why) = default_sdk()?;
            (path, Some(why))
        }
    };
    let path = std::fs::canonicalize(&path)
        .with_context(|| format!("cannot resolve {}", path.display()))?;
    let note = why.map(|why| {
        format!(
            "duel-bot-sdk: {} ({why}; --sdk PATH or --sdk-git URL to choose another)",
            path.display()
        )
    });
    Ok((
        format!("{{ path = {} }}", toml_string(&path.to_string_lossy())),
        note,
    ))
}

/// A folder of the duel project's checkout that a new bot depends on.
#[derive(Clone, Copy, Debug)]
struct CheckoutPart {
    /// Its folder within the checkout.
    folder: &'static str,
    /// The manifest that names it, and the name line it holds (spaces removed).
    manifest: &'static str,
    name_line: &'static str,
    /// Where it was when the referee was built.
    built_from: &'static str,
    /// What it is, and how to name another, for messages.
    what: &'static str,
    how_to_name: &'static str,
}

const SDK: CheckoutPart = CheckoutPart {
    folder: "sdk",
    manifest: "Cargo.toml",
    name_line: "name=\"duel-bot-sdk\"",
    built_from: BUILT_FROM_SDK,
    what: "duel-bot-sdk",
    how_to_name: "pass --sdk PATH (the sdk/ folder of a checkout) or --sdk-git URL (the project's git repository)",
};

/// The training env's Python package (`pip install ./python`), which a
/// policy bot imports to encode its observation as the env does.
const ENV_PACKAGE: CheckoutPart = CheckoutPart {
    folder: "python",
    manifest: "pyproject.toml",
    name_line: "name=\"duel-env\"",
    built_from: BUILT_FROM_ENV_PACKAGE,
    what: "the duel_env package",
    how_to_name: "run the referee of a checkout of the duel project (target/release/referee), or run `referee new` from inside one",
};

/// Where the env package was when the referee was built.
const BUILT_FROM_ENV_PACKAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../python");

/// The SDK a new Rust bot depends on when none is named: see [`default_part`].
fn default_sdk() -> Result<(PathBuf, &'static str)> {
    default_part(SDK)
}

/// `part` of the checkout the running referee sits in (`target/release/referee`
/// of a clone), else of the current folder's checkout, else of the one the
/// binary was built from (which may have moved since: then an error says how
/// to name one).
fn default_part(part: CheckoutPart) -> Result<(PathBuf, &'static str)> {
    let running = std::env::current_exe().ok();
    if let Some(found) = running
        .as_deref()
        .and_then(Path::parent)
        .and_then(|start| part_above(part, start))
    {
        return Ok((found, "the checkout the running referee is in"));
    }
    let here = std::env::current_dir().ok();
    if let Some(found) = here.as_deref().and_then(|start| part_above(part, start)) {
        return Ok((found, "the checkout of the current folder"));
    }
    let built_from = PathBuf::from(part.built_from);
    if holds(part, &built_from) {
        return Ok((
            built_from,
            "the checkout the referee was built from: neither the referee nor the current folder is in a checkout",
        ));
    }
    bail!(
        "cannot find {}: neither the running referee ({}) nor the current folder is in a checkout of the duel project, and the checkout it was built from ({}) is gone; {} (nothing was written)",
        part.what,
        running
            .as_deref()
            .map_or_else(|| "?".into(), Path::to_string_lossy),
        built_from.display(),
        part.how_to_name,
    )
}

/// `part`'s folder in the checkout `start` is in, if any.
fn part_above(part: CheckoutPart, start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|folder| folder.join(part.folder))
        .find(|folder| holds(part, folder))
}

/// Whether `folder` holds `part` (its manifest names it).
fn holds(part: CheckoutPart, folder: &Path) -> bool {
    let manifest = folder.join(part.manifest);
    let Ok(meta) = std::fs::metadata(&manifest) else {
        return false;
    };
    if !meta.is_file() || meta.len() > MAX_MANIFEST_BYTES {
        return false;
    }
    std::fs::read_to_string(&manifest).is_ok_and(|text| {
        text.lines().any(|line| {
            let line: String = line.chars().filter(|c| !c.is_whitespace()).collect();
            line == part.name_line
        })
    })
}

/// A TOML basic string.
fn toml_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn write_all(folder: &Path, files: &[(&str, String)]) -> Result<()> {
    for (path, text) in files {
        let path = folder.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        duel_files::write_atomic(&path, text.as_bytes(), duel_files::WriteOptions::PUBLIC)
            .map_err(|error| anyhow::anyhow!("cannot write {error}"))?;
    }
    Ok(())
}

fn rust_files(name: &str, sdk: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "Cargo.toml",
            RUST_MANIFEST.replace("{name}", name).replace("{sdk}", sdk),
        ),
        ("src/lib.rs", RUST_BOT.replace("{name}", name)),
        ("tests/plays.rs", RUST_TEST.to_owned()),
        ("README.md", RUST_README.replace("{name}", name)),
        (".gitignore", "/target\n".to_owned()),
    ]
}

fn python_files(name: &str) -> Vec<(&'static str, String)> {
    vec![
        ("app.py", PYTHON_BOT.replace("{name}", name)),
        ("test_bot.py", PYTHON_TEST.to_owned()),
        ("README.md", PYTHON_README.replace("{name}", name)),
        (".gitignore", "__pycache__/\n".to_owned()),
    ]
}

/// An endpoint bot in Python that asks a model through the OpenAI face of
/// the gateway (`templates/python-llm/`).
fn python_llm_files(name: &str) -> Vec<(&'static str, String)> {
    vec![
        ("bot.py", PYTHON_LLM_BOT.replace("{name}", name)),
        ("requirements.txt", PYTHON_LLM_REQUIREMENTS.to_owned()),
        ("test_bot.py", PYTHON_LLM_TEST.to_owned()),
        ("README.md", PYTHON_LLM_README.replace("{name}", name)),
        (".gitignore", PYTHON_LLM_GITIGNORE.to_owned()),
    ]
}

/// An endpoint bot in Python that plays a policy trained in the training env
/// (`templates/python-policy/`): `train.py` learns it with `duel_env`, which
/// `requirements.txt` installs from `package` (the checkout's `python/`).
fn python_policy_files(name: &str, package: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("bot.py", PYTHON_POLICY_BOT.replace("{name}", name)),
        ("policy.py", PYTHON_POLICY_POLICY.replace("{name}", name)),
        ("train.py", PYTHON_POLICY_TRAIN.replace("{name}", name)),
        (
            "requirements.txt",
            PYTHON_POLICY_REQUIREMENTS.replace("{duel_env}", &file_url(package)),
        ),
        ("test_bot.py", PYTHON_POLICY_TEST.to_owned()),
        ("README.md", PYTHON_POLICY_README.replace("{name}", name)),
        (".gitignore", PYTHON_POLICY_GITIGNORE.to_owned()),
    ]
}

/// A `file://` URL of an absolute path, as pip's direct references take it:
/// every byte but unreserved ones and `/` percent-encoded.
fn file_url(path: &Path) -> String {
    let mut url = String::from("file://");
    for byte in path.to_string_lossy().bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            url.push(char::from(byte));
        } else {
            url.push_str(&format!("%{byte:02X}"));
        }
    }
    url
}

const PYTHON_POLICY_BOT: &str = include_str!("../../templates/python-policy/bot.py");
const PYTHON_POLICY_POLICY: &str = include_str!("../../templates/python-policy/policy.py");
const PYTHON_POLICY_TRAIN: &str = include_str!("../../templates/python-policy/train.py");
const PYTHON_POLICY_REQUIREMENTS: &str =
    include_str!("../../templates/python-policy/requirements.txt");
const PYTHON_POLICY_TEST: &str = include_str!("../../templates/python-policy/test_bot.py");
const PYTHON_POLICY_README: &str = include_str!("../../templates/python-policy/README.md");
const PYTHON_POLICY_GITIGNORE: &str = include_str!("../../templates/python-policy/gitignore");

const PYTHON_LLM_BOT: &str = include_str!("../../templates/python-llm/bot.py");
const PYTHON_LLM_REQUIREMENTS: &str = include_str!("../../templates/python-llm/requirements.txt");
const PYTHON_LLM_TEST: &str = include_str!("../../templates/python-llm/test_bot.py");
const PYTHON_LLM_README: &str = include_str!("../../templates/python-llm/README.md");
const PYTHON_LLM_GITIGNORE: &str = include_str!("../../templates/python-llm/gitignore");

const RUST_MANIFEST: &str = r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"
publish = false

[lib]
crate-type = ["cdylib"]

[dependencies]
duel-bot-sdk = {sdk}

[dev-dependencies]
serde_json = "1"

# A workspace of its own: the bot builds wherever its folder is.
[workspace]

# Small, fast components.
[profile.release]
opt-level = "s"
lto = true
codegen-units = 1
strip = true
"#;

const RUST_BOT: &str = r#"//! {name}: a duel bot. Play it with `referee local . builtin:counter --logs`.

use duel_bot_sdk::{Action, Bot, Observation};

/// One value per match: fields last from decision to decision.
#[derive(Default)]
struct MyBot {
    decisions: u32,
}

impl Bot for MyBot {
    fn decide(&mut self, obs: &Observation) -> Action {
        self.decisions += 1;
        let action = if obs.opponent.staggered && obs.can_pay(Action::Heavy) {
            Action::Heavy
        } else if obs.you.stamina >= 20 && obs.can_pay(Action::Jab) {
            Action::Jab
        } else {
            Action::Recover
        };
        // Shown by `referee local --logs` and in the viewer, never in ranked replays.
        duel_bot_sdk::log(&format!(
            "round {} exchange {}: stamina {}, playing {}",
            obs.round,
            obs.exchange,
            obs.you.stamina,
            action.name()
        ));
        action
    }
}

duel_bot_sdk::export_bot!(MyBot);
"#;

const RUST_TEST: &str = r#"//! Plays this bot against `builtin:counter` with the referee (on PATH, or named
//! by $REFEREE) and checks that every decision was its own.

use std::process::Command;

#[test]
fn plays_a_whole_match_against_counter() {
    let referee = std::env::var("REFEREE").unwrap_or_else(|_| "referee".to_owned());
    let output = Command::new(&referee)
        .args(["local", env!("CARGO_MANIFEST_DIR"), "builtin:counter", "--json", "--seed", "1"])
        .output()
        .unwrap_or_else(|error| {
            panic!(
                "cannot run {referee} ({error}): put the referee on PATH (in a clone of the duel project: \
                 cargo build --release -p duel-referee && export PATH=\"$PWD/target/release:$PATH\", \
                 or cargo install --path referee), or name it: REFEREE=/path/to/referee cargo test"
            )
        });
    assert!(
        output.status.success(),
        "referee failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let replay: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("the replay is JSON");
    let rounds = replay["rounds"].as_array().expect("rounds");
    assert!(!rounds.is_empty(), "no round was played");
    for round in rounds {
        for exchange in round["exchanges"].as_array().expect("exchanges") {
            let source = &exchange["a"]["source"];
            assert_eq!(source, "bot", "a decision was substituted: {exchange}");
        }
    }
}
"#;

const RUST_README: &str = r#"# {name}

A duel bot in Rust (Ruleset 1.0.0), built into a WebAssembly component of the
`duel:bot@1.1.0` world.

    referee local . builtin:counter --logs     # build (once per edit) and play
    referee local . builtin:counter --watch    # the same, in the browser viewer
    cargo test                                 # plays a match (needs `referee` on PATH or $REFEREE)

The referee builds this folder itself (`cargo build --release --target
wasm32-wasip2`) and keeps the component in its cache, keyed by the digest of
the sources: an edit rebuilds, a rerun does not.

`src/lib.rs` is the bot: `decide` is asked once per exchange; `duel_bot_sdk::log`
lines show under their exchange with `--logs`. A panic is a fault: the referee
plays BLOCK for that exchange, starts the bot afresh and shows the reason.

The SDK dependency in `Cargo.toml` is a path to a checkout of the duel project
(or a `git = "…"` URL): duel-bot-sdk is not on crates.io.
"#;

const PYTHON_BOT: &str = r#""""{name}: a duel bot in Python. Play it with `referee local . builtin:counter --logs`.

componentize-py builds this module (`app`) into a component of the duel:bot
world; `wit_world` is generated from the WIT at build time. Import everything at
top level: a bot has no filesystem at run time.
"""
from wit_world import WitWorld as _World
from wit_world.imports import log
from wit_world.imports.types import Action, Observation

COST = {
    Action.JAB: 4,
    Action.HEAVY: 14,
    Action.BLOCK: 0,
    Action.DODGE: 6,
    Action.FEINT: 2,
    Action.RECOVER: 0,
}


class WitWorld(_World):
    """One instance per match: attributes last from decision to decision."""

    def __init__(self) -> None:
        self.decisions = 0

    def decide(self, observation: Observation) -> Action:
        self.decisions += 1
        stamina = observation.you.stamina
        if observation.opponent.staggered and stamina >= COST[Action.HEAVY]:
            action = Action.HEAVY
        elif stamina >= 20:
            action = Action.JAB
        else:
            action = Action.RECOVER
        # Shown by `referee local --logs` and in the viewer; print() is kept the
        # same way (WASI stdout and stderr), under the exchange it belongs to.
        log.log(f"round {observation.round} exchange {observation.exchange}: "
                f"stamina {stamina}, playing {action.name}")
        if self.decisions == 1:
            print(f"first decision made ({self.decisions} so far)")
        return action
"#;

const PYTHON_TEST: &str = r#""""Plays this bot against builtin:counter with the referee (on PATH, or named by
$REFEREE) and checks that every decision was its own: python3 test_bot.py"""
import json
import os
import shutil
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))

HOW_TO_GET_REFEREE = (
    "put the referee on PATH (in a clone of the duel project: "
    "cargo build --release -p duel-referee && export PATH=\"$PWD/target/release:$PATH\", "
    "or cargo install --path referee), or name it: REFEREE=/path/to/referee python3 test_bot.py")


def find_referee():
    """The referee to run ($REFEREE, else `referee` on PATH), or why there is none."""
    named = os.environ.get("REFEREE")
    if named:
        found = shutil.which(named)
        if found is None:
            return None, f"REFEREE={named} is not a program that can be run: {HOW_TO_GET_REFEREE}"
        return found, None
    found = shutil.which("referee")
    if found is None:
        return None, f"`referee` is not on PATH: {HOW_TO_GET_REFEREE}"
    return found, None


class PlaysTest(unittest.TestCase):
    def test_plays_a_whole_match_against_counter(self):
        referee, missing = find_referee()
        if referee is None:
            self.fail(missing)
        done = subprocess.run(
            [referee, "local", HERE, "builtin:counter", "--json", "--seed", "1"],
            capture_output=True, text=True, check=False)
        self.assertEqual(done.returncode, 0, done.stderr)
        replay = json.loads(done.stdout)
        self.assertTrue(replay["rounds"], "no round was played")
        for round_ in replay["rounds"]:
            for exchange in round_["exchanges"]:
                self.assertEqual(exchange["a"]["source"], "bot", exchange)


if __name__ == "__main__":
    sys.exit(unittest.main())
"#;

const PYTHON_README: &str = r#"# {name}

A duel bot in Python (Ruleset 1.0.0), built into a WebAssembly component of
the `duel:bot@1.1.0` world by componentize-py.

    python3 -m pip install componentize-py==0.25.1
    referee local . builtin:counter --logs     # build (once per edit) and play
    python3 test_bot.py                        # plays a match (needs `referee` on PATH or $REFEREE)

The referee builds this folder itself and keeps the component in its cache,
keyed by the digest of the sources: an edit rebuilds, a rerun does not.

`app.py` is the bot: `decide` is asked once per exchange. `log.log(...)` and
`print(...)` lines show under their exchange with `--logs`. An exception is a
fault: the referee plays BLOCK for that exchange, starts the bot afresh and
shows the reason. See docs/areas/python-bots.md in the duel project.
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_crate_and_folder_names() {
        for good in ["mybot", "my-bot_2", "B"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "2bot",
            "my bot",
            "../x",
            "bot/x",
            "bøt",
            "duel-bot-sdk",
            "duel_bot_sdk",
            "Duel-Rules",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_checkout_path_becomes_a_file_url_pip_reads() {
        assert_eq!(
            file_url(Path::new("/home/ana/duel/python")),
            "file:///home/ana/duel/python"
        );
        assert_eq!(
            file_url(Path::new("/home/ana/my duel#1/python")),
            "file:///home/ana/my%20duel%231/python"
        );
        assert_eq!(file_url(Path::new("/tmp/é")), "file:///tmp/%C3%A9");
    }

    #[test]
    fn the_env_package_is_found_in_a_checkout_and_not_elsewhere() {
        let checkout = tempfile::tempdir().expect("folder");
        let python = checkout.path().join("python");
        std::fs::create_dir_all(python.join("duel_env")).expect("package folder");
        let deep = checkout.path().join("target/release");
        std::fs::create_dir_all(&deep).expect("target");
        assert_eq!(part_above(ENV_PACKAGE, &deep), None, "no pyproject yet");
        std::fs::write(
            python.join("pyproject.toml"),
            "[project]\nname = \"duel-env\"\n",
        )
        .expect("pyproject");
        assert_eq!(part_above(ENV_PACKAGE, &deep), Some(python.clone()));
        // Another project's pyproject.toml is not the env package.
        std::fs::write(
            python.join("pyproject.toml"),
            "[project]\nname = \"other\"\n",
        )
        .expect("pyproject");
        assert_eq!(part_above(ENV_PACKAGE, &deep), None);
    }

    #[test]
    fn toml_strings_escape_quotes_backslashes_and_controls() {
        assert_eq!(toml_string(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(toml_string("a\nb"), "\"a\\u000Ab\"");
    }
}
