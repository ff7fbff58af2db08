//! The match entry points of the referee agree: one seeded match of a WASM bot
//! that thinks through a slow model (so its decisions time out mid-call)
//! against a built-in, played by the `referee local` binary, by `referee serve`
//! over gRPC and by the arena's match pool, gives the same exchanges, sources,
//! tokens and restarts. (Ladder workers join them in ladder/tests.)

// Tests: a failed unwrap is a failed assertion.
#![allow(clippy::unwrap_used)]

use crate::grpc_support as support;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use duel_proto::v1 as pb;
use duel_referee::arena::pool::{Control, Entrant, PoolSettings, ScheduledMatch, play_matches};
use duel_referee::{HostConfig, MatchHost, WasmAllocation};
use duel_replays::Replay;
use duel_rules::WeightClass;
use support::*;

const SEED: u64 = 11;
const CLOCK_MS: u32 = 300;
/// Longer than the clock: every model call is cut when its decision times out.
const MODEL_DELAY: Duration = Duration::from_millis(1_500);

fn oracle() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bots/oracle.wasm");
    assert!(
        path.exists(),
        "{} is missing: run scripts/build-bots (scripts/test.sh does)",
        path.display()
    );
    path.display().to_string()
}

/// What the rules and the meter made of each exchange, without timings.
fn exchanges(replay: &Replay) -> Vec<String> {
    replay
        .exchanges()
        .map(|(round, exchange)| {
            let side = |side: &duel_replays::SideRecord| {
                format!(
                    "{:?}/{:?}/hp {}/st {}/tokens {}/restarted {}/{}",
                    side.action,
                    side.source,
                    side.hp,
                    side.stamina,
                    side.tokens,
                    side.restarted,
                    side.reason().unwrap_or("")
                )
            };
            format!(
                "r{round}e{} a {} | b {}",
                exchange.number,
                side(&exchange.a),
                side(&exchange.b)
            )
        })
        .collect()
}

fn local(model_url: &str) -> Replay {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_referee"))
        .args(["local", &oracle(), "builtin:counter", "--json"])
        .args(["--seed", &SEED.to_string(), "--class", "light"])
        .args(["--wall-clock", &format!("{}", f64::from(CLOCK_MS) / 1000.0)])
        .args(["--model-url", model_url, "--model", "test-model"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

async fn served(model: &Running) -> Replay {
    let referee = serve_referee(serve_config(4, gateway_for(model))).await;
    let mut call = request(&oracle(), "builtin:counter", CLOCK_MS);
    call.class = pb::WeightClass::Light as i32;
    call.seed = Some(SEED);
    let replay = run_match(&referee, call).await;
    referee.stop().await;
    replay
}

fn arena(model: &Running) -> Replay {
    let dir = tempfile::tempdir().unwrap();
    let mut config = HostConfig::new(gateway_for(model));
    config.wasm_allocation = WasmAllocation::Pooled {
        concurrent_matches: 1,
    };
    let settings = PoolSettings {
        jobs: 1,
        class: WeightClass::Light,
        wall_clock: Duration::from_millis(CLOCK_MS.into()),
        replay_dir: Some(dir.path().to_owned()),
        host: MatchHost::new(config),
        openings: duel_referee::opening::OpeningSource::None,
    };
    let entrants = [
        Entrant::parse(&oracle()).unwrap(),
        Entrant::parse("builtin:counter").unwrap(),
    ];
    let once = std::sync::Mutex::new(Some(ScheduledMatch {
        index: 0,
        entrants: [0, 1],
        seed: SEED,
    }));
    let next = || once.lock().unwrap().take();
    play_matches(&entrants, &settings, &AtomicBool::new(false), &next, |_| {
        Control::Continue
    })
    .unwrap();
    Replay::read(&duel_referee::arena::pool::replay_path(dir.path(), 0)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_serve_and_the_arena_play_the_same_match() {
    let (model, _) = serve_slow_model("JAB", MODEL_DELAY).await;
    let model_url = format!("http://{}/v1", model.address);
    let local = tokio::task::spawn_blocking(move || local(&model_url))
        .await
        .unwrap();
    let served = served(&model).await;
    let arena = {
        let model = &model;
        tokio::task::block_in_place(|| arena(model))
    };
    let expected = exchanges(&local);
    // The slow model really was cut mid-call: a timeout charged its prompt.
    assert!(
        local.exchanges().any(|(_, exchange)| exchange.a.source
            == duel_replays::SourceName::Timeout
            && exchange.a.tokens > 0),
        "{expected:#?}"
    );
    assert_eq!(exchanges(&served), expected, "serve disagrees with local");
    assert_eq!(
        exchanges(&arena),
        expected,
        "the arena disagrees with local"
    );
    assert_eq!(served.result, local.result);
    assert_eq!(arena.result, local.result);
}
