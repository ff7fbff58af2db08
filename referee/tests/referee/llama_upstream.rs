//! The gateway against a real OpenAI-compatible server written elsewhere:
//! llama.cpp's, from the `llama-cpp-python` package (the environment
//! scripts/setup/python-llama.sh makes), serving a tiny model the test writes
//! with the `gguf` package. The metered answers are what that engine
//! generated, counted by the referee (never by the upstream's own tokenizer),
//! capped at what is asked; and the bot `referee new --lang python --llm`
//! writes plays a whole match against it with one flag, its transcript
//! verifying against the replay.

// Tests: a failed unwrap is a failed assertion.
#![allow(clippy::unwrap_used)]

#[allow(dead_code)]
use crate::services;

#[allow(dead_code)]
use crate::python_llm;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use duel_referee::meter::{ChatMessage, ModelRequest, count_tokens};
use duel_referee::{Catalogue, ModelGateway};
use duel_replays::{CallOutcome, Replay};

/// The Python of the llama environment, when the setup script made it.
fn llama_python() -> Option<PathBuf> {
    let python =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/python-llama/venv/bin/python");
    python.is_file().then_some(python)
}

/// llama.cpp's server on a loopback port; killed when dropped.
struct LlamaServer {
    child: Child,
    base: String,
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_llama(python: &Path, dir: &Path) -> LlamaServer {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/tiny_gguf.py");
    let model = dir.join("tiny.gguf");
    let written = Command::new(python)
        .arg(&script)
        .arg(&model)
        .output()
        .unwrap();
    assert!(
        written.status.success(),
        "{}",
        String::from_utf8_lossy(&written.stderr)
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let log = std::fs::File::create(dir.join("llama.log")).unwrap();
    let child = Command::new(python)
        .args(["-m", "llama_cpp.server", "--model"])
        .arg(&model)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args([
            "--chat_format",
            "chatml",
            "--n_ctx",
            "2048",
            "--model_alias",
            "tiny",
        ])
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut server = LlamaServer {
        child,
        base: format!("http://127.0.0.1:{port}/v1"),
    };
    let started = Instant::now();
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    while std::net::TcpStream::connect_timeout(&address, Duration::from_millis(100)).is_err() {
        assert!(
            server.child.try_wait().unwrap().is_none(),
            "llama.cpp's server exited: {}",
            std::fs::read_to_string(dir.join("llama.log")).unwrap_or_default()
        );
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "llama.cpp's server never listened"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llama_cpps_server_is_metered_by_the_referees_count() {
    let Some(python) = llama_python() else {
        services::skip(
            "llama.cpp's server",
            "target/python-llama is missing; scripts/setup/python-llama.sh makes it",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = tokio::task::spawn_blocking({
        let dir = dir.path().to_owned();
        move || start_llama(&python, &dir)
    })
    .await
    .unwrap();
    let catalogue = Catalogue::parse(&format!(
        "[[model]]\nname = \"tiny\"\nurl = \"{}\"\ninput_usd_per_mtok = 1.0\noutput_usd_per_mtok = 2.0\n",
        server.base
    ))
    .unwrap();
    let gateway =
        ModelGateway::from_catalogue(&catalogue, &|_| None, &duel_referee::tls::Trust::system())
            .unwrap();
    let meter = duel_referee::FighterMeter::keeping(gateway, 8_000, true);
    let prompt = vec![
        ChatMessage::new("system", "You are a fighter in a duel."),
        ChatMessage::new(
            "user",
            "Round 1, exchange 1. Choose one action: JAB, HEAVY or BLOCK.",
        ),
    ];
    let whole = meter
        .complete_request(ModelRequest::new(prompt.clone(), 12).of("tiny"))
        .await
        .unwrap();
    assert_eq!(&*whole.model, "tiny");
    assert_eq!(
        whole.prompt_tokens,
        count_tokens("You are a fighter in a duel.")
            + count_tokens("Round 1, exchange 1. Choose one action: JAB, HEAVY or BLOCK.")
    );
    assert_eq!(whole.completion_tokens, count_tokens(&whole.text));
    assert!(whole.completion_tokens <= 12);
    // A cap of 2 of our tokens holds whatever the engine's own tokenizer did.
    let capped = meter
        .complete_request(ModelRequest::new(prompt, 2).of("tiny"))
        .await
        .unwrap();
    assert!(capped.completion_tokens <= 2, "{capped:?}");
    let spent = meter.settle();
    assert_eq!(spent.calls.len(), 2);
    assert!(
        spent
            .calls
            .iter()
            .all(|call| call.outcome == CallOutcome::Ok)
    );
    assert_eq!(
        spent.tokens,
        whole.prompt_tokens
            + whole.completion_tokens
            + capped.prompt_tokens
            + capped.completion_tokens
    );
    drop(server);
}

/// The bot `referee new --lang python --llm` writes, pointed at llama.cpp's
/// server by one flag: every decision asks it, every call is metered, and
/// the transcript verifies.
#[test]
fn the_llm_bot_plays_against_llama_cpp_with_one_flag() {
    let (Some(python), Some(venv)) = (llama_python(), python_llm::venv()) else {
        services::skip(
            "llama.cpp's server and the python-llm environment",
            "scripts/setup/python-llama.sh and scripts/setup/python-llm.sh make them",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = start_llama(&python, dir.path());
    let referee = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_referee"))
            .args(args)
            .env("DUEL_PYTHON_VENV", &venv)
            .env("DUEL_BOT_CACHE", dir.path().join("cache"))
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    let bot = dir.path().join("thinker");
    let made = referee(&[
        "new",
        "thinker",
        "--lang",
        "python",
        "--llm",
        "--dir",
        bot.to_str().unwrap(),
    ]);
    assert!(made.status.success());
    let replay_path = dir.path().join("match.json");
    let transcript_path = dir.path().join("t.json");
    let played = referee(&[
        "local",
        bot.to_str().unwrap(),
        "builtin:counter",
        "--model-url",
        &server.base,
        "--model",
        "tiny",
        "--seed",
        "4",
        "--replay",
        replay_path.to_str().unwrap(),
        "--transcript",
        transcript_path.to_str().unwrap(),
    ]);
    assert!(
        played.status.success(),
        "{}",
        String::from_utf8_lossy(&played.stderr)
    );
    let replay = Replay::read(&replay_path).unwrap();
    let mut calls = 0;
    for (_, exchange) in replay.exchanges() {
        let record = &exchange.a;
        for call in record.calls() {
            assert_eq!(
                (call.model.as_str(), call.outcome),
                ("tiny", CallOutcome::Ok),
                "{record:?}"
            );
            calls += 1;
        }
        assert_eq!(
            record.tokens,
            record.calls().iter().map(|call| call.tokens()).sum::<u64>()
        );
    }
    assert!(calls > 0);
    assert_eq!(replay.models[0].name, "tiny");
    let verify = referee(&[
        "replay",
        "verify",
        replay_path.to_str().unwrap(),
        "--transcript",
        transcript_path.to_str().unwrap(),
    ]);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );
    drop(server);
}
