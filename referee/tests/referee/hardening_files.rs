//! Files named on the command line, through the real binary: no file is
//! written through a planted link or over something that is not a regular
//! file; no file named on the command line can block a command or stream into
//! it; no string from a replay reaches the terminal as an escape sequence;
//! `referee new` refuses names that cannot build.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn referee(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_referee"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("the referee binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn arg(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// A refusal: exit 2 and one line on stderr containing `needle`.
fn refused(output: &Output, needle: &str) {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
}

fn fifo(path: &Path) {
    let made = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
}

/// `--replay` through a link planted at the target once
/// overwrote the file it pointed to and left the output a link; a FIFO or
/// any non-regular target was replaced by a regular file.
#[test]
fn replay_writes_never_follow_a_link_or_replace_a_special_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "precious").expect("victim");
    let link = dir.path().join("match.json");
    std::os::unix::fs::symlink(&victim, &link).expect("link");
    let local = referee(&[
        "local",
        "builtin:block",
        "builtin:script:JAB",
        "--seed",
        "1",
        "--replay",
        arg(&link),
    ]);
    refused(&local, "is a symbolic link, not a regular file");
    assert_eq!(
        std::fs::read_to_string(&victim).expect("victim"),
        "precious"
    );
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("link")
            .file_type()
            .is_symlink()
    );

    // The link planted where the old writer put its fixed temporary name
    // (`.NAME.partial`): the victim was overwritten through it.
    let output = dir.path().join("out.json");
    std::os::unix::fs::symlink(&victim, dir.path().join(".out.json.partial")).expect("link");
    let local = referee(&[
        "local",
        "builtin:block",
        "builtin:block",
        "--seed",
        "1",
        "--replay",
        arg(&output),
    ]);
    assert!(local.status.success(), "{}", text(&local.stderr));
    assert_eq!(
        std::fs::read_to_string(&victim).expect("victim"),
        "precious"
    );
    assert!(
        std::fs::symlink_metadata(&output)
            .expect("out")
            .file_type()
            .is_file()
    );
    std::fs::remove_file(dir.path().join(".out.json.partial")).expect("unplant");

    let pipe = dir.path().join("pipe.json");
    fifo(&pipe);
    let local = referee(&[
        "local",
        "builtin:block",
        "builtin:block",
        "--replay",
        arg(&pipe),
    ]);
    refused(&local, "is a FIFO, not a regular file");
    use std::os::unix::fs::FileTypeExt;
    assert!(
        std::fs::symlink_metadata(&pipe)
            .expect("fifo")
            .file_type()
            .is_fifo()
    );

    // `replay sign --out` and `--transcript` go through the same writer.
    let good = dir.path().join("good.json");
    let local = referee(&[
        "local",
        "builtin:block",
        "builtin:block",
        "--seed",
        "2",
        "--replay",
        arg(&good),
    ]);
    assert!(local.status.success(), "{}", text(&local.stderr));
    let key = dir.path().join("key");
    let first = referee(&["replay", "sign", arg(&good), "--signing-key", arg(&key)]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    let sign = referee(&[
        "replay",
        "sign",
        arg(&good),
        "--out",
        arg(&link),
        "--signing-key",
        arg(&key),
    ]);
    refused(&sign, "is a symbolic link");
    let transcript = referee(&[
        "local",
        "builtin:block",
        "builtin:block",
        "--transcript",
        arg(&link),
    ]);
    refused(&transcript, "is a symbolic link");
    assert_eq!(
        std::fs::read_to_string(&victim).expect("victim"),
        "precious"
    );
    // No temporary file is left behind by any of them.
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.ends_with(".tmp") || name.ends_with(".partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// A tournament's results are appended, never through a link.
#[test]
fn tournament_results_are_never_appended_through_a_link() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("t1");
    std::fs::create_dir(&out).expect("out");
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "precious").expect("victim");
    std::os::unix::fs::symlink(&victim, out.join("results.jsonl")).expect("link");
    let run = referee(&[
        "tournament",
        "builtin:block",
        "builtin:script:JAB",
        "--out",
        arg(&out),
    ]);
    refused(&run, "results.jsonl: is a symbolic link");
    assert_eq!(
        std::fs::read_to_string(&victim).expect("victim"),
        "precious"
    );
}

/// A FIFO named as a book, a replay or a transcript once
/// hung the command forever. Each is refused at once, in one line.
#[test]
fn files_that_would_block_are_refused_at_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pipe = dir.path().join("pipe");
    fifo(&pipe);
    let wasm_pipe = dir.path().join("pipe.wasm");
    fifo(&wasm_pipe);
    let good = dir.path().join("good.json");
    let local = referee(&[
        "local",
        "builtin:block",
        "builtin:block",
        "--replay",
        arg(&good),
    ]);
    assert!(local.status.success());
    let started = Instant::now();
    for (args, needle) in [
        (
            vec![
                "tournament",
                "builtin:block",
                "builtin:script:JAB",
                "--book",
                arg(&pipe),
            ],
            "is a FIFO",
        ),
        (vec!["replay", "verify", arg(&pipe)], "is a FIFO"),
        (vec!["replay", "show", arg(&pipe)], "is a FIFO"),
        (
            vec!["replay", "verify", arg(&good), "--transcript", arg(&pipe)],
            "is a FIFO",
        ),
        (
            vec![
                "local",
                "builtin:block",
                "builtin:block",
                "--models",
                arg(&pipe),
            ],
            "is a FIFO",
        ),
        (
            vec!["local", arg(&wasm_pipe), "builtin:block"],
            "not a regular file",
        ),
    ] {
        let output = referee(&args);
        refused(&output, needle);
    }
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "nothing waited on the FIFO"
    );
}

/// A replay's fighter names reached the terminal raw
/// (ESC, OSC, CSI, the one-byte C1 CSI 0x9b) in `replay show`, `verify` and
/// `put`. Every string from the replay is shown without its controls.
#[test]
fn escapes_in_a_replay_never_reach_the_terminal() {
    let dir = tempfile::tempdir().expect("temp dir");
    let clean = dir.path().join("clean.json");
    let local = referee(&[
        "local",
        "builtin:block",
        "builtin:script:JAB",
        "--seed",
        "3",
        "--replay",
        arg(&clean),
    ]);
    assert!(local.status.success());
    let mut replay: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&clean).expect("read")).expect("json");
    replay["fighters"][0]["name"] = "evil\u{1b}]0;pwned\u{7}\u{1b}[31m\u{9b}2J".into();
    replay["fighters"][1]["digest"] = "sha256:\u{1b}[2Jdead".into();
    let hostile = dir.path().join("hostile.json");
    std::fs::write(&hostile, serde_json::to_vec_pretty(&replay).expect("json")).expect("write");
    let store = dir.path().join("store");
    for args in [
        vec!["replay", "show", arg(&hostile)],
        vec!["replay", "verify", arg(&hostile)],
        vec!["replay", "put", "--store", arg(&store), arg(&hostile)],
    ] {
        let output = referee(&args);
        for stream in [&output.stdout, &output.stderr] {
            let printed = text(stream);
            assert!(
                !printed.chars().any(|c| c.is_control() && c != '\n'),
                "{args:?} printed a control character: {printed:?}"
            );
        }
        if args[1] != "verify" {
            assert!(
                text(&output.stdout).contains("evil"),
                "{args:?}: {}",
                text(&output.stdout)
            );
        }
    }
}

/// U+202E and the other bidirectional controls reached the
/// terminal from text a bot or a model controls (a name, a log line, a
/// model's name). The tape, its log lines and its calls print none of them.
#[test]
fn bidirectional_controls_in_a_replay_never_reach_the_terminal() {
    const BIDI: [char; 12] = [
        '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}',
        '\u{2068}', '\u{2069}', '\u{200E}', '\u{200F}', '\u{061C}',
    ];
    let dir = tempfile::tempdir().expect("temp dir");
    let clean = dir.path().join("clean.json");
    let local = referee(&[
        "local",
        "builtin:block",
        "builtin:script:JAB",
        "--seed",
        "3",
        "--replay",
        arg(&clean),
    ]);
    assert!(local.status.success());
    let mut replay: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&clean).expect("read")).expect("json");
    let every: String = BIDI.iter().collect();
    replay["fighters"][0]["name"] = format!("evil\u{202e}txt.exe{every}").into();
    let side = &mut replay["rounds"][0]["exchanges"][0]["a"];
    side["log"] = serde_json::json!([format!("log\u{202e}gnp.exe {every}")]);
    side["calls"] = serde_json::json!([{
        "model": format!("model\u{2067}{every}"),
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "outcome": "invalid",
    }]);
    let hostile = dir.path().join("hostile.json");
    std::fs::write(&hostile, serde_json::to_vec_pretty(&replay).expect("json")).expect("write");
    for args in [
        vec!["replay", "show", arg(&hostile)],
        vec!["replay", "show", "--logs", arg(&hostile)],
    ] {
        let output = referee(&args);
        assert!(
            output.status.success(),
            "{args:?}: {}",
            text(&output.stderr)
        );
        let printed = text(&output.stdout);
        for stream in [&output.stdout, &output.stderr] {
            let shown = text(stream);
            assert!(
                !shown.chars().any(|c| BIDI.contains(&c)),
                "{args:?} printed a bidirectional control: {shown:?}"
            );
        }
        assert!(printed.contains("evil"), "{args:?}: {printed}");
        if args.contains(&"--logs") {
            assert!(printed.contains("gnp.exe"), "{printed}");
            assert!(printed.contains("model "), "{printed}");
        }
    }
}

/// `referee new duel-bot-sdk` wrote a project depending on
/// itself, which could not build.
#[test]
fn new_refuses_the_names_of_its_own_dependencies() {
    let dir = tempfile::tempdir().expect("temp dir");
    for name in ["duel-bot-sdk", "duel_rules"] {
        let target = dir.path().join(name);
        let output = referee(&["new", name, "--dir", arg(&target)]);
        refused(&output, "is a crate the bot depends on");
        assert!(!target.exists(), "nothing was written");
    }
}
