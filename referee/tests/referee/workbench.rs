//! The bot author's workbench through the real binary: tournaments (repeatable,
//! independent of --jobs, resumable without replaying a pairing) and SPRT verdicts.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const FOUR_BOTS: [&str; 4] = [
    "builtin:counter",
    "builtin:random",
    "builtin:block",
    "builtin:script:JAB,HEAVY,FEINT",
];

fn referee(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_referee"))
        .args(args)
        .output()
        .expect("the referee binary runs")
}

fn tournament_json(extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["tournament"];
    args.extend(FOUR_BOTS);
    args.extend(["--rounds", "3", "--seed", "11", "--json"]);
    args.extend(extra);
    let output = referee(&args);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut value: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    // Latency is measured, not derived from the seeds.
    for bot in value["standings"]["bots"].as_array_mut().expect("bots") {
        bot["latency_p50_ms"] = 0.into();
        bot["latency_p99_ms"] = 0.into();
        bot["latency_p50_us"] = 0.into();
        bot["latency_p99_us"] = 0.into();
    }
    value
}

#[test]
fn a_tournament_gives_the_same_table_twice_and_for_any_jobs() {
    let first = tournament_json(&["--jobs", "1"]);
    assert_eq!(first["standings"]["matches_played"], 36);
    assert_eq!(first["complete"], true);
    assert_eq!(
        first["standings"]["bots"].as_array().expect("bots").len(),
        4
    );
    assert_eq!(
        first["standings"]["pairs"].as_array().expect("pairs").len(),
        6
    );
    assert_eq!(first, tournament_json(&["--jobs", "1"]));
    assert_eq!(first, tournament_json(&["--jobs", "2"]));
}

#[test]
fn the_table_is_readable_and_a_gauntlet_plays_the_first_bot_only() {
    let mut args = vec!["tournament"];
    args.extend(FOUR_BOTS);
    args.extend(["--format", "gauntlet", "--rounds", "2"]);
    let output = referee(&args);
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("gauntlet"), "{text}");
    assert!(text.contains("12/12 matches"), "{text}");
    assert!(text.contains("Elo (95%)"), "{text}");
    assert!(
        text.contains("builtin:counter                 vs  builtin:random"),
        "{text}"
    );
    assert!(
        !text.contains("builtin:random                  vs  builtin:block"),
        "{text}"
    );
}

fn result_indices(dir: &Path) -> Vec<u64> {
    let text = std::fs::read_to_string(dir.join("results.jsonl")).unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|value| value["index"].as_u64())
        .collect()
}

#[test]
fn resume_plays_no_pairing_twice_and_ends_with_the_full_table() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("t");
    let out_text = out.to_str().expect("utf-8");
    let mut base = vec!["tournament"];
    base.extend(FOUR_BOTS);
    base.extend(["--rounds", "3", "--seed", "11", "--out", out_text]);

    let mut first = base.clone();
    first.extend(["--limit", "10", "--jobs", "2"]);
    let output = referee(&first);
    assert!(output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("10 of 36 matches played; continue with --resume")
    );
    assert_eq!(result_indices(&out).len(), 10);

    // Starting again without --resume must not overwrite the folder.
    let again = referee(&base);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already holds a tournament"));

    // Resuming with other settings is refused.
    let mut changed = base.clone();
    changed[5] = "builtin:counter";
    changed.push("--resume");
    let refused = referee(&changed);
    assert_eq!(
        refused.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );

    // The plan is saved: `--resume --out DIR` alone continues it.
    let bare = referee(&[
        "tournament",
        "--resume",
        "--out",
        out_text,
        "--limit",
        "5",
        "--jobs",
        "2",
    ]);
    assert!(
        bare.status.success(),
        "{}",
        String::from_utf8_lossy(&bare.stderr)
    );
    assert!(String::from_utf8_lossy(&bare.stderr).contains("15 of 36 matches played"));
    assert_eq!(result_indices(&out).len(), 15);

    let mut resume = base.clone();
    resume.extend(["--resume", "--json"]);
    let output = referee(&resume);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let indices = result_indices(&out);
    let unique: BTreeSet<u64> = indices.iter().copied().collect();
    assert_eq!(indices.len(), 36, "each match recorded once");
    assert_eq!(unique, (0..36).collect(), "every match recorded");
    let replays = std::fs::read_dir(out.join("replays"))
        .expect("replays")
        .count();
    assert_eq!(replays, 36);
    let mut resumed: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let mut whole = tournament_json(&[]);
    for value in [&mut resumed, &mut whole] {
        for bot in value["standings"]["bots"].as_array_mut().expect("bots") {
            bot["latency_p50_ms"] = 0.into();
            bot["latency_p99_ms"] = 0.into();
            bot["latency_p50_us"] = 0.into();
            bot["latency_p99_us"] = 0.into();
        }
    }
    assert_eq!(resumed["standings"], whole["standings"]);
}

#[test]
fn ctrl_c_stops_a_tournament_that_resume_continues() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("t");
    let out_text = out.to_str().expect("utf-8").to_owned();
    let mut args: Vec<&str> = vec!["tournament"];
    args.extend(FOUR_BOTS);
    args.extend(["--rounds", "3000", "--jobs", "1", "--out", &out_text]);
    let child = Command::new(env!("CARGO_BIN_EXE_referee"))
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while result_indices(&out).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let output = child.wait_with_output().expect("wait");
    let played = result_indices(&out);
    let unique: BTreeSet<u64> = played.iter().copied().collect();
    assert_eq!(unique.len(), played.len(), "no match recorded twice");
    if played.len() < 36_000 {
        assert_eq!(output.status.code(), Some(130));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("continue with --resume"), "{stderr}");
        assert!(
            String::from_utf8_lossy(&output.stdout).contains("Tournament"),
            "partial table printed"
        );
    }
    let mut resume = args.clone();
    resume.extend(["--resume", "--limit", "5"]);
    let output = referee(&resume);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let after = result_indices(&out);
    let unique_after: BTreeSet<u64> = after.iter().copied().collect();
    assert_eq!(
        unique_after.len(),
        after.len(),
        "no match recorded twice after resuming"
    );
    assert_eq!(after.len(), (played.len() + 5).min(36_000));
}

#[test]
fn sprt_accepts_h1_for_a_stronger_bot_and_h0_for_copies() {
    for seed in ["1", "2", "3"] {
        let stronger = referee(&[
            "sprt",
            "builtin:counter",
            "builtin:random",
            "--elo0",
            "0",
            "--elo1",
            "10",
            "--seed",
            seed,
        ]);
        let text = String::from_utf8_lossy(&stronger.stdout);
        assert_eq!(stronger.status.code(), Some(0), "{text}");
        assert!(text.contains("H1 accepted"), "{text}");

        let copies = referee(&[
            "sprt",
            "builtin:random",
            "builtin:random",
            "--elo0",
            "0",
            "--elo1",
            "10",
            "--seed",
            seed,
            "--json",
        ]);
        assert_eq!(copies.status.code(), Some(1));
        let verdict: serde_json::Value = serde_json::from_slice(&copies.stdout).expect("json");
        assert_eq!(verdict["verdict"], "H0");
        assert!(
            verdict["llr"].as_f64().expect("llr") <= verdict["bounds"][0].as_f64().expect("bound")
        );
    }
    let weaker = referee(&[
        "sprt",
        "builtin:block",
        "builtin:counter",
        "--elo0",
        "0",
        "--elo1",
        "10",
        "--json",
    ]);
    assert_eq!(weaker.status.code(), Some(1));
}

#[test]
fn sprt_gives_up_without_a_verdict_at_max_pairs_and_rejects_bad_bounds() {
    let output = referee(&[
        "sprt",
        "builtin:counter",
        "builtin:random",
        "--elo0",
        "0",
        "--elo1",
        "10",
        "--max-pairs",
        "2",
    ]);
    assert_eq!(output.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&output.stdout).contains("no verdict within 2 pairs"));
    let output = referee(&[
        "sprt",
        "builtin:counter",
        "builtin:random",
        "--elo0",
        "10",
        "--elo1",
        "0",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("--elo0 (10) must be less than --elo1 (0)")
    );
}

#[test]
fn sprt_verdict_does_not_depend_on_jobs() {
    let run = |jobs: &str| {
        let output = referee(&[
            "sprt",
            "builtin:counter",
            "builtin:script:JAB,HEAVY,FEINT",
            "--elo0",
            "0",
            "--elo1",
            "5",
            "--jobs",
            jobs,
            "--json",
        ]);
        serde_json::from_slice::<serde_json::Value>(&output.stdout).expect("json")
    };
    assert_eq!(run("1"), run("2"));
}

/// Two bots that play alike whatever the seed give one game pair over and over:
/// the SPRT says so, and an interval with an infinite end is printed as its two
/// ends, never as "± ∞".
#[test]
fn sprt_between_deterministic_bots_warns_that_every_pair_was_alike() {
    let output = referee(&[
        "sprt",
        "builtin:script:JAB,JAB,RECOVER",
        "builtin:block",
        "--elo0",
        "0",
        "--elo1",
        "10",
        "--max-pairs",
        "30",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("pairs played the same two games"),
        "{stdout}\n{stderr}"
    );
    assert!(!stdout.contains("± ∞"), "{stdout}");
    assert!(stdout.contains("  Elo "), "{stdout}");

    let json = referee(&[
        "sprt",
        "builtin:script:JAB,JAB,RECOVER",
        "builtin:block",
        "--elo0",
        "0",
        "--elo1",
        "10",
        "--max-pairs",
        "30",
        "--json",
    ]);
    let verdict: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(verdict["identical_pairs"], true);

    let varied = referee(&[
        "sprt",
        "builtin:random",
        "builtin:block",
        "--elo0",
        "0",
        "--elo1",
        "10",
        "--max-pairs",
        "30",
        "--json",
    ]);
    let verdict: serde_json::Value = serde_json::from_slice(&varied.stdout).expect("json");
    assert_eq!(verdict["identical_pairs"], false);
}

/// Tables print no "+0.0 ± 0.0" and no "−∞": a record with no decisive game,
/// or one all won or all lost, says so; and every minus sign is a '−'.
#[test]
fn tables_say_why_an_elo_has_no_number_and_use_one_minus_sign() {
    let output = referee(&[
        "tournament",
        "builtin:block",
        "builtin:script:BLOCK",
        "builtin:counter",
        "--rounds",
        "2",
        "--jobs",
        "1",
    ]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // block and script:BLOCK only ever draw each other.
    let drawn = text
        .lines()
        .find(|line| {
            line.contains("builtin:block")
                && line.contains(" vs ")
                && line.contains("builtin:script:BLOCK")
        })
        .expect("the block pairing");
    assert!(drawn.contains("— (all drawn)"), "{text}");
    assert!(!text.contains("± 0.0"), "{text}");
    assert!(!text.contains('∞'), "{text}");
    for line in text.lines() {
        assert!(
            !line.contains(" -") && !line.contains("(-"),
            "an ASCII minus sign: {line}"
        );
    }
    // The JSON keeps numbers: an all-drawn pairing is Elo 0 with no width.
    let json = referee(&[
        "tournament",
        "builtin:block",
        "builtin:script:BLOCK",
        "--json",
    ]);
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(value["standings"]["pairs"][0]["elo"]["elo"], 0.0, "{value}");

    let sprt = referee(&[
        "sprt",
        "builtin:counter",
        "builtin:block",
        "--elo0",
        "-5",
        "--elo1",
        "10",
        "--max-pairs",
        "20",
    ]);
    let text = String::from_utf8_lossy(&sprt.stdout);
    assert!(text.contains("  Elo (95%) "), "{text}");
    assert!(text.contains("elo0 −5"), "{text}");
    assert!(!text.contains('∞') && !text.contains("± 0.0"), "{text}");
    for line in text.lines() {
        assert!(
            !line.contains(" -") && !line.contains("(-"),
            "an ASCII minus sign: {line}"
        );
    }
}

/// Bots level on score are ranked by their head-to-head, not by name:
/// FEINT,JAB beats DODGE,JAB and both score a third.
#[test]
fn bots_level_on_score_are_ranked_by_their_head_to_head() {
    let output = referee(&[
        "tournament",
        "builtin:script:JAB",
        "builtin:script:HEAVY,RECOVER",
        "builtin:script:FEINT,JAB",
        "builtin:script:DODGE,JAB",
        "--json",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let bots = value["standings"]["bots"].as_array().expect("bots");
    let rank = |name: &str| {
        bots.iter()
            .position(|row| row["bot"] == name)
            .unwrap_or_else(|| panic!("{name} in {value}"))
    };
    let (winner, loser) = ("builtin:script:FEINT,JAB", "builtin:script:DODGE,JAB");
    assert_eq!(
        bots[rank(winner)]["score"],
        bots[rank(loser)]["score"],
        "{value}"
    );
    let pair = value["standings"]["pairs"]
        .as_array()
        .expect("pairs")
        .iter()
        .find(|pair| pair["a"] == winner && pair["b"] == loser)
        .unwrap_or_else(|| panic!("the pairing in {value}"));
    assert!(pair["wins"].as_u64() > pair["losses"].as_u64(), "{pair}");
    assert!(rank(winner) < rank(loser), "{value}");

    // The table reads the same.
    let text = referee(&[
        "tournament",
        "builtin:script:JAB",
        "builtin:script:HEAVY,RECOVER",
        "builtin:script:FEINT,JAB",
        "builtin:script:DODGE,JAB",
    ]);
    let table = String::from_utf8_lossy(&text.stdout);
    let row = |name: &str| {
        table
            .lines()
            .position(|line| line.contains(&format!("  {name} ")) && !line.contains(" vs "))
            .unwrap_or_else(|| panic!("{name} in {table}"))
    };
    assert!(row(winner) < row(loser), "{table}");
}
