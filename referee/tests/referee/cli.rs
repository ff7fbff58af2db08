//! Runs the real `referee` binary: full matches in text and JSON, replay files,
//! `--watch` over real HTTP, and every kind of bad input (one line on stderr,
//! non-zero exit, no panic).

use crate::watch_support;

use std::path::Path;
use std::process::{Command, Output};

use duel_replays::Replay;
use watch_support::{Watched, read_events, split_view_url};

fn referee(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_referee"))
        .args(args)
        .env_remove("NO_COLOR")
        .output()
        .expect("the referee binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn local_match_prints_a_readable_tape_without_colour_when_piped() {
    let output = referee(&[
        "local",
        "builtin:random",
        "builtin:script:JAB,HEAVY,FEINT",
        "--seed",
        "7",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("seed 7"), "{text}");
    assert!(text.contains("Round 1"), "{text}");
    assert!(text.contains("Round 1 →"), "{text}");
    assert!(text.contains("builtin:script:JAB,HEAVY,FEINT"), "{text}");
    assert!(
        text.contains("wins") || text.contains("Drawn match"),
        "{text}"
    );
    assert!(!text.contains('\u{1b}'), "no colour when piped: {text}");
    // One line per exchange: count lines that start with a right-aligned number.
    let exchange_lines = text
        .lines()
        .filter(|line| line.len() > 4 && line[..3].trim().parse::<u8>().is_ok())
        .count();
    assert!(
        (12..=36).contains(&exchange_lines),
        "{exchange_lines} exchange lines: {text}"
    );
}

#[test]
fn colour_is_forced_or_refused_on_request() {
    let coloured = referee(&[
        "local",
        "builtin:block",
        "builtin:counter",
        "--seed",
        "1",
        "--color",
        "always",
    ]);
    assert!(stdout(&coloured).contains('\u{1b}'));
    let plain = Command::new(env!("CARGO_BIN_EXE_referee"))
        .args(["local", "builtin:block", "builtin:counter", "--seed", "1"])
        .env("NO_COLOR", "1")
        .output()
        .expect("runs");
    assert!(!stdout(&plain).contains('\u{1b}'));
}

#[test]
fn json_output_is_a_replay_that_verifies() {
    let output = referee(&[
        "local",
        "builtin:random",
        "builtin:script:JAB,HEAVY,FEINT",
        "--seed",
        "7",
        "--json",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let replay = Replay::from_slice(&output.stdout).expect("stdout is a replay");
    assert_eq!(replay.format, "duel-replay/1");
    assert_eq!(replay.ruleset, "1.0.0");
    assert_eq!(replay.seed, 7);
    assert_eq!(replay.budget, 64_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("match.json");
    std::fs::write(&path, &output.stdout).expect("write");
    let verified = referee(&["replay", "verify", path.to_str().expect("utf-8")]);
    assert!(verified.status.success(), "{}", stderr(&verified));
    assert!(
        stdout(&verified).starts_with("ok: "),
        "{}",
        stdout(&verified)
    );
}

#[test]
fn replay_flag_writes_a_file_that_show_and_verify_read() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("m.json");
    let path_text = path.to_str().expect("utf-8");
    let output = referee(&[
        "local",
        "builtin:counter",
        "builtin:random",
        "--seed",
        "3",
        "--class",
        "light",
        "--replay",
        path_text,
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let replay = Replay::read(&path).expect("replay file");
    assert_eq!(replay.budget, 8_000);
    let shown = referee(&["replay", "show", path_text]);
    assert!(shown.status.success());
    assert!(stdout(&shown).contains("Round 1"));
    assert!(stdout(&shown).contains("decisions · substituted: 0 timeout, 0 budget, 0 fault"));
    let json = referee(&["replay", "verify", "--json", path_text]);
    let verdict: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json verdict");
    assert_eq!(verdict["ok"], true);
}

#[test]
fn same_seed_gives_the_same_match() {
    let run = || {
        let output = referee(&[
            "local",
            "builtin:random",
            "builtin:random",
            "--seed",
            "99",
            "--json",
        ]);
        let mut replay = Replay::from_slice(&output.stdout).expect("replay");
        replay.match_id.clear();
        replay.accepted_at.clear();
        // Latency is measured, not derived from the inputs.
        for round in &mut replay.rounds {
            for exchange in &mut round.exchanges {
                exchange.a.latency_ms = 0;
                exchange.b.latency_ms = 0;
                exchange.a.latency_us = None;
                exchange.b.latency_us = None;
            }
        }
        replay
    };
    assert_eq!(run(), run());
}

fn tamper(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).expect("read");
    assert!(text.contains(from), "{from} not in replay");
    std::fs::write(path, text.replacen(from, to, 1)).expect("write");
}

#[test]
fn verify_names_the_first_exchange_that_disagrees() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("m.json");
    let path_text = path.to_str().expect("utf-8");
    let output = referee(&[
        "local",
        "builtin:block",
        "builtin:script:JAB",
        "--seed",
        "1",
        "--replay",
        path_text,
    ]);
    assert!(output.status.success());
    // After exchange 1, A (blocking a jab) has 154 HP.
    tamper(&path, "\"hp\": 154", "\"hp\": 155");
    let verdict = referee(&["replay", "verify", path_text]);
    assert_eq!(verdict.status.code(), Some(1));
    let message = stderr(&verdict);
    assert!(
        message.contains(
            "round 1, exchange 1, fighter a: hp is 155 in the replay, the rules give 154"
        ),
        "{message}"
    );
}

#[test]
fn verify_rejects_a_built_in_bot_that_did_not_play_its_script() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("m.json");
    let path_text = path.to_str().expect("utf-8");
    referee(&[
        "local",
        "builtin:script:BLOCK",
        "builtin:script:RECOVER",
        "--seed",
        "1",
        "--replay",
        path_text,
    ]);
    // A BLOCK that became a DODGE still follows the rules (no damage either way),
    // but it is not what builtin:script:BLOCK plays.
    let text = std::fs::read_to_string(&path).expect("read");
    let tampered = text
        .replacen("\"action\": \"BLOCK\"", "\"action\": \"DODGE\"", 1)
        .replacen("\"stamina\": 100,", "\"stamina\": 94,", 1);
    std::fs::write(&path, tampered).expect("write");
    let verdict = referee(&["replay", "verify", path_text]);
    let message = stderr(&verdict);
    assert_eq!(verdict.status.code(), Some(1), "{message}");
    assert!(
        message.contains("round 1, exchange 1, fighter a"),
        "{message}"
    );
    assert!(
        message.contains("builtin:script:BLOCK plays BLOCK here, but the replay records DODGE"),
        "{message}"
    );
}

/// Bad input: exit 2, exactly one line on stderr, naming the problem, no panic.
fn assert_bad_input(args: &[&str], expected: &str) {
    let output = referee(args);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
    assert_eq!(message.lines().count(), 1, "{args:?}: {message}");
    assert!(
        message.starts_with("referee: error: "),
        "{args:?}: {message}"
    );
    assert!(
        message.contains(expected),
        "{args:?}: expected {expected:?} in {message}"
    );
    assert!(!message.contains("panicked"), "{message}");
    assert!(output.stdout.is_empty(), "{args:?}: nothing on stdout");
}

#[test]
fn bad_bot_specs_are_one_line_errors() {
    assert_bad_input(
        &["local", "builtin:nope", "builtin:block"],
        "unknown built-in bot \"nope\"",
    );
    assert_bad_input(
        &["local", "builtin:block", "builtin:script:JAB,PUNCH"],
        "unknown action \"PUNCH\"",
    );
    assert_bad_input(
        &["local", "builtin:script:", "builtin:block"],
        "empty script",
    );
    // A path that does not exist says so, and lists every form a spec may
    // take, folders included; nothing is built first.
    assert_bad_input(
        &["local", "bot.exe", "builtin:block"],
        "bot.exe does not exist",
    );
    for args in [
        &["local", "./nope", "examples/bots/jabber"][..],
        &["tournament", "./nope", "builtin:block"][..],
    ] {
        for expected in [
            "bot spec \"./nope\": ./nope does not exist",
            "a bot's source folder (a Rust crate with Cargo.toml, a Python bot with app.py",
            "a .wasm component",
            "builtin:NAME",
            "grpc://host:port",
        ] {
            assert_bad_input(args, expected);
        }
    }
    assert_bad_input(
        &["local", "counter", "builtin:block"],
        "counter does not exist (did you mean builtin:counter?)",
    );
    // A file that is neither a folder nor a component says that.
    assert_bad_input(
        &["local", "Cargo.toml", "builtin:block"],
        "Cargo.toml is not a folder nor a .wasm file",
    );
    assert_bad_input(
        &["local", "missing/bot.wasm", "builtin:block"],
        "cannot read bot missing/bot.wasm",
    );
    assert_bad_input(
        &[
            "local",
            "builtin:block",
            "builtin:block",
            "--replay",
            "no/such/folder/m.json",
        ],
        "folder no/such/folder does not exist",
    );
}

#[test]
fn bad_replay_files_are_one_line_errors() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = |name: &str, contents: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, contents).expect("write");
        path.to_str().expect("utf-8").to_owned()
    };
    let output = referee(&[
        "local",
        "builtin:random",
        "builtin:counter",
        "--seed",
        "5",
        "--json",
    ]);
    let good = String::from_utf8(output.stdout).expect("utf-8");

    assert_bad_input(
        &["replay", "show", "no-such-replay.json"],
        "cannot read replay no-such-replay.json",
    );
    let folder = dir.path().to_str().expect("utf-8").to_owned();
    assert_bad_input(&["replay", "verify", &folder], "cannot read replay");
    assert_bad_input(
        &["replay", "verify", &file("garbage.json", "not json at all")],
        "malformed replay",
    );
    assert_bad_input(
        &[
            "replay",
            "verify",
            &file("truncated.json", &good[..good.len() / 2]),
        ],
        "malformed replay: EOF while parsing",
    );
    assert_bad_input(
        &[
            "replay",
            "show",
            &file(
                "format.json",
                &good.replace("duel-replay/1", "duel-replay/9"),
            ),
        ],
        "unknown replay format \"duel-replay/9\"",
    );
    assert_bad_input(
        &[
            "replay",
            "verify",
            &file(
                "ruleset.json",
                &good.replace("\"ruleset\": \"1.0.0\"", "\"ruleset\": \"2.0.0\""),
            ),
        ],
        "unknown ruleset version \"2.0.0\"",
    );
    assert_bad_input(
        &[
            "replay",
            "verify",
            &file(
                "action.json",
                &good.replacen("\"action\": \"", "\"action\": \"X", 1),
            ),
        ],
        "at rounds[0].exchanges[0].a.action: unknown variant",
    );
    assert_bad_input(
        &["replay", "verify", &file("array.json", "[1, 2]")],
        "expected a JSON object",
    );
}

#[test]
fn bad_flags_exit_2_via_clap() {
    let output = referee(&[
        "local",
        "builtin:block",
        "builtin:block",
        "--class",
        "feather",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("invalid value 'feather'"));
    let output = referee(&["local", "builtin:block", "builtin:block", "--seed", "-1"]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn watch_streams_the_match_live_then_serves_its_replay_until_ctrl_c() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("watched.json");
    let file_arg = file.display().to_string();
    let mut watched = Watched::start(&[
        "local",
        "builtin:counter",
        "builtin:random",
        "--seed",
        "11",
        "--replay",
        &file_arg,
    ]);
    let url = watched.view_url();
    let (base, id) = split_view_url(&url);
    assert!(base.starts_with("http://127.0.0.1:"), "{url}");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let http = reqwest::Client::new();
    let events = runtime.block_on(async {
        let page = http.get(&url).send().await.expect("viewer page");
        assert_eq!(page.status(), 200);
        assert!(
            page.text()
                .await
                .expect("html")
                .contains("id=\"hp-a-value\"")
        );
        // The match waits for its first spectator: this feed sees it whole.
        let feed = http
            .get(format!("{base}/live/{id}"))
            .send()
            .await
            .expect("live feed");
        assert_eq!(feed.status(), 200);
        assert_eq!(feed.headers()["content-type"], "text/event-stream");
        read_events(feed).await
    });
    watched.line_containing("ctrl-c to stop");
    assert!(
        watched.seen.iter().any(|line| line.contains("Round 1")),
        "the tape is printed as usual: {:?}",
        watched.seen
    );

    let replay = Replay::read(&file).expect("the --replay file");
    assert_eq!(replay.match_id, id);
    let exchanges: Vec<_> = replay.exchanges().collect();
    assert_eq!(
        events.len(),
        exchanges.len() + 2,
        "start, every exchange, end"
    );
    let (name, start) = &events[0];
    assert_eq!(name, "start");
    assert_eq!(start["match_id"], id.as_str());
    assert_eq!(start["seed"], 11);
    assert_eq!(start["fighters"][0]["name"], &*replay.fighters[0].name);
    for ((name, event), (round, exchange)) in events[1..].iter().zip(&exchanges) {
        assert_eq!(name, "exchange");
        assert_eq!(event["round"], *round);
        assert_eq!(
            event["exchange"],
            serde_json::to_value(exchange).expect("JSON"),
            "exchange {round}.{} as played",
            exchange.number
        );
    }
    let (name, end) = events.last().expect("end");
    assert_eq!(name, "end");
    assert_eq!(
        end["result"],
        serde_json::to_value(&replay.result).expect("JSON")
    );

    runtime.block_on(async {
        let served = http
            .get(format!("{base}/replays/{id}"))
            .send()
            .await
            .expect("replay")
            .bytes()
            .await
            .expect("body");
        assert_eq!(Replay::from_slice(&served).expect("replay JSON"), replay);
        let key: serde_json::Value = serde_json::from_slice(
            &http
                .get(format!("{base}/public-key"))
                .send()
                .await
                .expect("key")
                .bytes()
                .await
                .expect("body"),
        )
        .expect("key JSON");
        let key = duel_replays::parse_public_key(key["key"].as_str().expect("key text"))
            .expect("public key");
        assert!(
            matches!(
                duel_replays::check_signature(&served, Some(&key)).expect("JSON"),
                Ok(duel_replays::SignatureStatus::Valid { .. })
            ),
            "signed with the session key it publishes"
        );
        let over = http
            .get(format!("{base}/live/{id}"))
            .send()
            .await
            .expect("live");
        assert_eq!(over.status(), 404, "the match is no longer live");
        let page = http.get(&url).send().await.expect("viewer page");
        assert_eq!(page.status(), 200, "the viewer stays on the replay");
    });
    let verified = referee(&["replay", "verify", &file_arg]);
    assert!(verified.status.success(), "{}", stderr(&verified));
    // Built-in bots call no model: asking for the transcript too saves nothing.
    let fetched = dir.path().join("fetched.json");
    let no_transcript = referee(&[
        "replay",
        "fetch",
        &format!("{base}/replays/{id}"),
        "--out",
        &fetched.display().to_string(),
        "--transcript",
    ]);
    assert!(!no_transcript.status.success());
    assert!(
        stderr(&no_transcript).contains("no transcript for this match"),
        "{}",
        stderr(&no_transcript)
    );
    assert!(
        !fetched.exists(),
        "nothing is saved when the transcript fails"
    );

    let status = watched.interrupt();
    assert!(status.success(), "ctrl-c ends --watch cleanly: {status:?}");
}

/// `replay fetch --transcript`: a model-using bot's match watched on loopback
/// (the session serves its author the transcript); the fetch checks every
/// decision against the signed replay's digests and saves both files.
#[test]
fn fetch_checks_a_transcript_against_the_signed_replay() {
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bots/oracle.wasm");
    assert!(oracle.is_file(), "scripts/build-bots builds the oracle bot");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut watched = Watched::start(&[
        "local",
        &oracle.display().to_string(),
        "builtin:counter",
        "--model-url",
        "builtin:house",
        "--seed",
        "5",
    ]);
    let url = watched.view_url();
    let (base, id) = split_view_url(&url);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        // The match waits for its first spectator: follow it to its end.
        let feed = reqwest::get(format!("{base}/live/{id}"))
            .await
            .expect("live feed");
        read_events(feed).await
    });
    watched.line_containing("ctrl-c to stop");
    let replay_path = dir.path().join("match.json");
    let transcript_path = dir.path().join("match.transcript.json");
    let fetched = referee(&[
        "replay",
        "fetch",
        &format!("{base}/replays/{id}"),
        "--out",
        &replay_path.display().to_string(),
        "--transcript",
        "--transcript-out",
        &transcript_path.display().to_string(),
    ]);
    assert!(fetched.status.success(), "{}", stderr(&fetched));
    let said = String::from_utf8_lossy(&fetched.stdout).into_owned();
    assert!(
        said.contains("decisions agree with the signed replay"),
        "{said}"
    );
    let replay = Replay::read(&replay_path).expect("the saved replay");
    let parsed = duel_replays::transcript::ParsedTranscript::read(&transcript_path)
        .expect("the saved transcript");
    assert!(!parsed.transcript.decisions.is_empty());
    duel_replays::verify_transcript(&replay, &parsed).expect("they agree");
    let status = watched.interrupt();
    assert!(status.success(), "{status:?}");
}

#[test]
fn watch_flags_need_watch() {
    let output = referee(&[
        "local",
        "builtin:block",
        "builtin:block",
        "--watch-addr",
        "127.0.0.1:0",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--watch"), "{}", stderr(&output));
}

/// The long flags `referee ARGS --help` lists (one per option line).
fn flags_in_help(args: &[&str]) -> Vec<String> {
    let output = referee(args);
    assert!(output.status.success(), "{args:?}: {}", stderr(&output));
    stdout(&output)
        .lines()
        .map(str::trim_start)
        .filter(|line| line.starts_with('-'))
        .filter_map(|line| {
            line.split([' ', ',', '=', '<', '['])
                .find(|word| word.starts_with("--") && word.len() > 2)
                .map(str::to_owned)
        })
        .filter(|flag| flag != "--help")
        .collect()
}

/// The README's synopsis of `local` and `replay show` names every flag
/// their --help lists (`--logs` was missing), and the docs' examples give a
/// model server another port than the referee's and the ladder's HTTP.
#[test]
fn the_readme_synopsis_names_every_flag_and_each_server_has_its_own_port() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README");
    for (args, starts) in [
        (
            &["local", "--help"][..],
            &["referee local A B", "referee local --from"][..],
        ),
        (
            &["replay", "show", "--help"][..],
            &["referee replay show"][..],
        ),
    ] {
        let start = starts.join(" | ");
        let synopsis = readme
            .lines()
            .filter(|line| starts.iter().any(|start| line.starts_with(start)))
            .collect::<Vec<_>>()
            .join(" ");
        assert!(!synopsis.is_empty(), "no synopsis for {start}");
        let flags = flags_in_help(args);
        assert!(flags.contains(&"--logs".to_owned()), "{flags:?}");
        for flag in flags {
            assert!(
                synopsis.contains(&flag),
                "README's synopsis of {start} lacks {flag}: {synopsis}"
            );
        }
    }
    let mut docs = vec![
        root.join("README.md"),
        root.join("referee/templates/python-llm/README.md"),
    ];
    for entry in std::fs::read_dir(root.join("docs/areas")).expect("docs/areas") {
        docs.push(entry.expect("entry").path());
    }
    for path in docs {
        let text = std::fs::read_to_string(&path).expect("doc");
        for model_on_8080 in [
            "--model-url http://127.0.0.1:8080",
            "--port 8080",
            "url = \"http://127.0.0.1:8080",
        ] {
            assert!(
                !text.contains(model_on_8080),
                "{}: a model server on 8080, the port of the referee's and ladder's HTTP: {model_on_8080}",
                path.display()
            );
        }
    }
}
