//! TLS out of the referee, through the real binary: an endpoint bot at
//! `grpcs://` and a model at `https://`, loopback servers with a self-signed
//! certificate, trusted through `DUEL_EXTRA_CA`; without it, both are refused
//! (the bot's decisions fault, the model's calls fail and cost nothing).

// Tests: a failed unwrap is a failed assertion.
#![allow(clippy::unwrap_used)]

use crate::grpc_support as support;

use std::process::{Command, Output};
use std::sync::Arc;

use duel_referee::meter::count_tokens;
use duel_replays::{Replay, SourceName};
use support::*;

const PROMPT: &str = "Pick one move for the next exchange.";
const COMPLETION: &str = "JAB";

fn wasm_bot(name: &str) -> String {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/bots")
        .join(format!("{name}.wasm"));
    assert!(
        path.exists(),
        "{} is missing: run scripts/build-bots (scripts/test.sh does)",
        path.display()
    );
    path.display().to_string()
}

/// Runs the referee binary off the async runtime (the servers live on it).
async fn referee(args: Vec<String>, extra_ca: Option<std::path::PathBuf>) -> Output {
    tokio::task::spawn_blocking(move || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_referee"));
        command.args(&args).env_remove("DUEL_MODEL_API_KEY");
        match extra_ca {
            Some(path) => command.env("DUEL_EXTRA_CA", path),
            None => command.env_remove("DUEL_EXTRA_CA"),
        };
        command.output().unwrap()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpcs_bots_and_an_https_model_are_trusted_through_duel_extra_ca() {
    let tls = self_signed();
    let folder = tempfile::tempdir().unwrap();
    let ca = folder.path().join("ca.pem");
    std::fs::write(&ca, &tls.cert_pem).unwrap();
    let (model, model_log) = serve_tls_model(COMPLETION, &tls).await;
    let bot_log = Arc::new(BotLog::default());
    let bot = serve_tls_bot_on(
        loopback().await,
        TestBot {
            behaviour: Behaviour::Think {
                messages: vec![("user".to_owned(), PROMPT.to_owned())],
                max_tokens: 4,
            },
            log: Arc::clone(&bot_log),
        },
        &tls,
    );
    let bot_url = format!("grpcs://127.0.0.1:{}", bot.address.port());
    let args: Vec<String> = [
        "local",
        &bot_url,
        &wasm_bot("oracle"),
        "--seed",
        "3",
        "--wall-clock",
        "5",
        "--class",
        "light",
        "--model-url",
        &format!("https://127.0.0.1:{}/v1", model.address.port()),
        "--model",
        "m",
        "--json",
    ]
    .iter()
    .map(|arg| arg.to_string())
    .collect();

    let trusted = referee(args.clone(), Some(ca.clone())).await;
    assert!(
        trusted.status.success(),
        "{}",
        String::from_utf8_lossy(&trusted.stderr)
    );
    let replay = Replay::from_slice(&trusted.stdout).unwrap();
    assert!(
        replay.fighters[0].name.starts_with("test-Think"),
        "Hello answered over TLS: {}",
        replay.fighters[0].name
    );
    let per_call = count_tokens(PROMPT) + count_tokens(COMPLETION);
    for side in sides(&replay, 0) {
        assert_eq!(
            (side.source, side.tokens),
            (SourceName::Bot, per_call),
            "{side:?}"
        );
    }
    assert!(
        replay.result.tokens_used[1] > 0,
        "the WASM oracle reached the https model too"
    );
    let forwarded = model_log.requests.lock().unwrap().len();
    assert!(forwarded > sides(&replay, 0).len());

    // Without the extra CA the self-signed servers are not trusted: the
    // endpoint fails its Hello, so `local` stops before the match (exit 2,
    // one line naming the certificate problem).
    let untrusted = referee(args.clone(), None).await;
    let stderr = String::from_utf8_lossy(&untrusted.stderr);
    assert_eq!(untrusted.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&bot_url), "{stderr}");
    assert!(stderr.contains("certificate"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    // And the https model is not trusted either: the WASM oracle's model calls
    // fail, cost nothing and reach nobody.
    let mut oracle_only = args.clone();
    oracle_only[1] = "builtin:block".to_owned();
    let untrusted = referee(oracle_only, None).await;
    assert!(
        untrusted.status.success(),
        "{}",
        String::from_utf8_lossy(&untrusted.stderr)
    );
    let replay = Replay::from_slice(&untrusted.stdout).unwrap();
    assert_eq!(
        replay.result.tokens_used,
        [0, 0],
        "failed model calls cost nothing"
    );
    assert_eq!(model_log.requests.lock().unwrap().len(), forwarded);

    // A DUEL_EXTRA_CA that holds no certificate is a one-line error.
    std::fs::write(&ca, "not a certificate").unwrap();
    let broken = referee(args, Some(ca)).await;
    assert_eq!(broken.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&broken.stderr);
    assert!(stderr.contains("DUEL_EXTRA_CA"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}
