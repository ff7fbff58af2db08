//! Model-driven fighters end to end: the bot `referee new --lang python
//! --llm` writes (the official `openai` package through `openai_base_url`)
//! plays offline against the built-in model with one command, its
//! transcript verifies against the replay's signed digests and an edit is
//! named; `referee serve` meters it exactly and keeps its transcript apart
//! from the public replay; with no model configured its calls are never
//! silent.

// Tests: a failed unwrap is a failed assertion.
#![allow(clippy::unwrap_used)]

#[allow(dead_code)]
use crate::services;

#[allow(dead_code)]
use crate::python_llm;

use crate::grpc_support as grpc;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use duel_replays::{CallOutcome, Replay, SourceName};

/// The bot's system prompt opens with this: it must never be in a public replay.
const PROMPT_MARK: &str = "You are a fighter in a duel";

fn referee(args: &[&str], venv: &Path, cache: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_referee"))
        .args(args)
        .env("DUEL_PYTHON_VENV", venv)
        .env("DUEL_BOT_CACHE", cache)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn house_catalogue() -> duel_referee::ModelGateway {
    let catalogue = duel_referee::Catalogue::single(duel_referee::models::HOUSE_URL, None).unwrap();
    duel_referee::ModelGateway::from_catalogue(
        &catalogue,
        &|_| None,
        &duel_referee::tls::Trust::system(),
    )
    .unwrap()
}

/// The calls fighter `side` made, per decision, and its tokens.
fn calls_of(replay: &Replay, side: usize) -> Vec<(u64, Vec<duel_replays::CallRecord>)> {
    replay
        .exchanges()
        .map(|(_, exchange)| {
            let record = exchange.sides()[side];
            (record.tokens, record.calls().to_vec())
        })
        .collect()
}

#[test]
fn a_new_llm_bot_plays_offline_and_its_transcript_verifies() {
    let Some(venv) = python_llm::venv() else {
        services::skip(
            "the python-llm environment",
            "scripts/setup/python-llm.sh makes it",
        );
        return;
    };
    let folder = tempfile::tempdir().unwrap();
    let cache = folder.path().join("cache");
    let bot = folder.path().join("mybot");
    let made = referee(
        &[
            "new",
            "mybot",
            "--lang",
            "python",
            "--llm",
            "--dir",
            bot.to_str().unwrap(),
        ],
        &venv,
        &cache,
    );
    assert!(made.status.success(), "{}", text(&made.stderr));
    assert!(text(&made.stdout).contains("--model-url builtin:house"));
    let replay_path = folder.path().join("match.json");
    let transcript_path = folder.path().join("t.json");
    let played = referee(
        &[
            "local",
            bot.to_str().unwrap(),
            "builtin:counter",
            "--model-url",
            "builtin:house",
            "--seed",
            "11",
            "--logs",
            "--transcript",
            transcript_path.to_str().unwrap(),
            "--replay",
            replay_path.to_str().unwrap(),
        ],
        &venv,
        &cache,
    );
    assert!(played.status.success(), "{}", text(&played.stderr));
    let tape = text(&played.stdout);
    // What the model said, under each exchange.
    assert!(tape.contains("model house ·"), "{tape}");
    assert!(tape.contains("The house model plays"), "{tape}");
    assert!(tape.contains("models: house"), "{tape}");
    let replay = Replay::read(&replay_path).unwrap();
    let decisions = calls_of(&replay, 0);
    assert!(!decisions.is_empty());
    for (tokens, calls) in &decisions {
        assert_eq!(calls.len(), 1, "one call per decision");
        assert_eq!(calls[0].outcome, CallOutcome::Ok);
        assert_eq!(calls[0].model, "house");
        assert_eq!(*tokens, calls[0].tokens());
    }
    assert_eq!(replay.models[0].name, "house");
    let json = std::fs::read_to_string(&replay_path).unwrap();
    assert!(
        !json.contains(PROMPT_MARK),
        "the public replay holds no prompt"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&transcript_path)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "the transcript is its author's only");

    let verify = referee(
        &[
            "replay",
            "verify",
            replay_path.to_str().unwrap(),
            "--transcript",
            transcript_path.to_str().unwrap(),
        ],
        &venv,
        &cache,
    );
    assert!(verify.status.success(), "{}", text(&verify.stderr));
    // One word of one answer edited: the verdict names the decision.
    let mut transcript: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&transcript_path).unwrap()).unwrap();
    let edited = transcript["decisions"][2]["calls"][0]["completion"]
        .as_str()
        .unwrap()
        .replacen("The", "A", 1);
    transcript["decisions"][2]["calls"][0]["completion"] = edited.into();
    let round = transcript["decisions"][2]["round"].as_u64().unwrap();
    let exchange = transcript["decisions"][2]["exchange"].as_u64().unwrap();
    let edited_path = folder.path().join("edited.json");
    std::fs::write(&edited_path, transcript.to_string()).unwrap();
    let verify = referee(
        &[
            "replay",
            "verify",
            replay_path.to_str().unwrap(),
            "--transcript",
            edited_path.to_str().unwrap(),
        ],
        &venv,
        &cache,
    );
    assert_eq!(verify.status.code(), Some(1));
    let stderr = text(&verify.stderr);
    assert!(
        stderr.contains(&format!(
            "transcript check failed at round {round}, exchange {exchange}, fighter a:"
        )),
        "{stderr}"
    );
}

#[test]
fn with_no_model_the_bots_calls_are_never_silent() {
    let Some(venv) = python_llm::venv() else {
        services::skip(
            "the python-llm environment",
            "scripts/setup/python-llm.sh makes it",
        );
        return;
    };
    let folder = tempfile::tempdir().unwrap();
    let cache = folder.path().join("cache");
    let bot = folder.path().join("quiet");
    let made = referee(
        &[
            "new",
            "quiet",
            "--lang",
            "python",
            "--llm",
            "--dir",
            bot.to_str().unwrap(),
        ],
        &venv,
        &cache,
    );
    assert!(made.status.success());
    let played = referee(
        &[
            "local",
            bot.to_str().unwrap(),
            "builtin:block",
            "--seed",
            "2",
        ],
        &venv,
        &cache,
    );
    assert!(played.status.success(), "{}", text(&played.stderr));
    let stderr = text(&played.stderr);
    assert_eq!(
        stderr
            .matches("a bot called a model, but none is configured")
            .count(),
        1,
        "warned once: {stderr}"
    );
    let tape = text(&played.stdout);
    assert!(
        tape.contains("model: unavailable (no model is configured (--model-url or --models))"),
        "{tape}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn referee_serve_meters_an_openai_bot_and_keeps_its_transcript_apart() {
    let Some(python) = python_llm::python() else {
        services::skip(
            "the python-llm environment",
            "scripts/setup/python-llm.sh makes it",
        );
        return;
    };
    let folder = tempfile::tempdir().unwrap();
    let bot = python_llm::start(&python, folder.path(), "thinker");
    let store =
        duel_replays::store::ReplayStore::open(&folder.path().join("store").display().to_string())
            .unwrap();
    let mut config = grpc::serve_config(4, house_catalogue());
    config.publishing = Some(duel_referee::grpc::Publishing {
        live: duel_referee::publish::LiveFeeds::new(),
        store: store.clone(),
        signing_key: Arc::new(duel_replays::SigningKey::from_bytes(&[5; 32])),
    });
    let (server, http) = grpc::serve_referee_with_http(config).await;
    let mut request = grpc::request(&bot.url, "builtin:counter", 10_000);
    request.class = duel_proto::v1::WeightClass::Middle as i32;
    let replay = grpc::run_match(&server, request).await;
    let decisions = calls_of(&replay, 0);
    let mut total = 0;
    for (index, (tokens, calls)) in decisions.iter().enumerate() {
        assert_eq!(calls.len(), 1, "decision {index}: {calls:?}");
        assert_eq!(calls[0].outcome, CallOutcome::Ok);
        assert_eq!(*tokens, calls[0].tokens());
        total += tokens;
    }
    assert_eq!(replay.result.tokens_used[0], total);
    assert!(
        grpc::sides(&replay, 0)
            .iter()
            .all(|side| side.source == SourceName::Bot)
    );

    // The transcript is in the store, apart from the replay, and proves
    // against it; the replay service serves the replay, never the transcript.
    let kept = store
        .get_transcript(&replay.match_id)
        .await
        .unwrap()
        .expect("kept");
    let parsed = duel_replays::transcript::ParsedTranscript::from_slice(&kept).unwrap();
    assert_eq!(parsed.transcript.decisions.len(), decisions.len());
    duel_replays::verify_transcript(&replay, &parsed).unwrap();
    assert!(String::from_utf8_lossy(&kept).contains(PROMPT_MARK));
    let http_client = reqwest::Client::new();
    let public = http_client
        .get(format!("http://{http}/replays/{}", replay.match_id))
        .send()
        .await
        .unwrap();
    assert_eq!(public.status(), 200);
    let public = public.text().await.unwrap();
    assert!(!public.contains(PROMPT_MARK));
    for guess in [
        format!("http://{http}/transcripts/{}", replay.match_id),
        format!("http://{http}/replays/{}/transcript", replay.match_id),
        format!("http://{http}/replays?bot=thinker"),
    ] {
        let answer = http_client.get(&guess).send().await.unwrap();
        let body = answer.text().await.unwrap();
        assert!(!body.contains(PROMPT_MARK), "{guess}: {body}");
    }
    drop(bot);
}

/// Tournaments and SPRT show what each bot's model calls cost, per model,
/// at the catalogue's prices the replays recorded.
#[test]
fn tournament_and_sprt_show_tokens_and_cost_per_model() {
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bots/oracle.wasm");
    assert!(oracle.is_file(), "scripts/build-bots builds the oracle bot");
    let folder = tempfile::tempdir().unwrap();
    let catalogue = folder.path().join("models.toml");
    std::fs::write(
        &catalogue,
        "[[model]]\nname = \"house\"\nurl = \"builtin:house\"\ninput_usd_per_mtok = 2.5\noutput_usd_per_mtok = 10.0\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_referee"))
            .args(args)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        assert!(
            output.status.code().is_some_and(|code| code != 2),
            "{}",
            text(&output.stderr)
        );
        output
    };
    let oracle = oracle.to_str().unwrap();
    let catalogue = catalogue.to_str().unwrap();
    let json = run(&[
        "tournament",
        oracle,
        "builtin:counter",
        "--models",
        catalogue,
        "--json",
        "--jobs",
        "1",
    ]);
    let standings: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let row = standings["standings"]["bots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["bot"] == "oracle")
        .unwrap();
    let model = &row["models"][0];
    assert_eq!(model["model"], "house", "{row}");
    let (calls, tokens) = (
        model["calls"].as_u64().unwrap(),
        model["tokens"].as_u64().unwrap(),
    );
    assert!(calls > 0 && tokens > 0, "{row}");
    let cost = model["cost_usd"].as_f64().unwrap();
    assert!(cost > 0.0 && cost <= tokens as f64 * 10.0 / 1e6, "{row}");
    let per_match = row["cost_per_match_usd"].as_f64().unwrap();
    assert!(
        (per_match * row["games"].as_f64().unwrap() - cost).abs() < 1e-9,
        "{row}"
    );
    let table = text(
        &run(&[
            "tournament",
            oracle,
            "builtin:counter",
            "--models",
            catalogue,
            "--jobs",
            "1",
        ])
        .stdout,
    );
    assert!(table.contains("Models (tokens and cost"), "{table}");
    assert!(
        table.contains("oracle: ") && table.contains("house "),
        "{table}"
    );

    let sprt = run(&[
        "sprt",
        oracle,
        "builtin:counter",
        "--elo0",
        "0",
        "--elo1",
        "20",
        "--max-pairs",
        "2",
        "--models",
        catalogue,
        "--json",
        "--jobs",
        "1",
    ]);
    let verdict: serde_json::Value = serde_json::from_slice(&sprt.stdout).unwrap();
    assert_eq!(
        verdict["spending"]["new"]["models"][0]["model"], "house",
        "{verdict}"
    );
    assert!(
        verdict["spending"]["new"]["cost_per_match_usd"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert_eq!(verdict["spending"]["base"]["models"], serde_json::json!([]));
}

/// A tournament (and an SPRT) in which a bot calls a model while none is
/// configured warns once per such bot on stderr, naming it and how to
/// configure one; with a model, or with bots that never call one, nothing.
#[test]
fn a_tournament_warns_once_per_bot_that_calls_a_model_when_none_is_configured() {
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bots/oracle.wasm");
    assert!(oracle.is_file(), "scripts/build-bots builds the oracle bot");
    let oracle = oracle.to_str().unwrap();
    let run = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_referee"))
            .args(args)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        assert!(
            output.status.code().is_some_and(|code| code != 2),
            "{}",
            text(&output.stderr)
        );
        output
    };
    let warning = "warning: oracle called a model, but none is configured";
    let bare = run(&[
        "tournament",
        oracle,
        "builtin:counter",
        "builtin:block",
        "--rounds",
        "2",
        "--jobs",
        "2",
        "--json",
    ]);
    let stderr = text(&bare.stderr);
    assert_eq!(stderr.matches(warning).count(), 1, "{stderr}");
    assert!(
        stderr.contains("--model-url builtin:house") && stderr.contains("--models FILE"),
        "{stderr}"
    );
    assert!(!stderr.contains("counter called"), "{stderr}");
    // The JSON on stdout stays a document.
    serde_json::from_slice::<serde_json::Value>(&bare.stdout).unwrap();

    let sprt = run(&[
        "sprt",
        oracle,
        "builtin:block",
        "--elo0",
        "0",
        "--elo1",
        "20",
        "--max-pairs",
        "2",
    ]);
    assert_eq!(
        text(&sprt.stderr).matches(warning).count(),
        1,
        "{}",
        text(&sprt.stderr)
    );

    let with_model = run(&[
        "tournament",
        oracle,
        "builtin:counter",
        "--model-url",
        "builtin:house",
    ]);
    assert!(
        !text(&with_model.stderr).contains("none is configured"),
        "{}",
        text(&with_model.stderr)
    );
    let no_caller = run(&["tournament", "builtin:counter", "builtin:block"]);
    assert!(
        !text(&no_caller.stderr).contains("warning"),
        "{}",
        text(&no_caller.stderr)
    );
}
