//! One fighter's model call can never make the other fighter late: a prompt
//! of half a megabyte takes tens of milliseconds to count, and counting must
//! not run where both fighters' clocks run. Played through `referee serve` (the
//! library's server) and through the `referee local` binary, whose runtime
//! has a single thread: a fighter that answers in 25 ms under a 250 ms clock
//! is never recorded late, and no recorded latency overruns the clock by more
//! than scheduling noise.

// Tests: a failed unwrap is a failed assertion.
#![allow(clippy::unwrap_used)]

use crate::grpc_support as support;

use std::time::Duration;

use duel_proto::v1 as pb;
use duel_replays::{Replay, SourceName};
use support::*;

const CLOCK_MS: u32 = 250;
/// How long the quick fighter takes: far inside the clock, so that only a
/// stall (counting on the threads that run the clocks) can make it late,
/// not a loaded machine's scheduling. A flood of such prompts in one
/// decision is tests/gateway_hardening.rs's.
const QUICK_ANSWER: Duration = Duration::from_millis(25);
/// What a latency may exceed the clock by on a loaded 2-core machine.
const NOISE_MS: u64 = 120;
/// About 500 KB of prompt: ~100,000 tokens, within the heavy budget and
/// within `MAX_PROMPT_BYTES` (512 KiB).
const PROMPT_WORDS: usize = 100_000;

fn huge_thinker() -> Behaviour {
    Behaviour::Think {
        messages: vec![("user".to_owned(), "word ".repeat(PROMPT_WORDS))],
        max_tokens: 4,
    }
}

/// The quick fighter (`b`) played every decision itself, in time; nobody's
/// latency overran the clock.
fn assert_fair(replay: &Replay) {
    for (round, exchange) in replay.exchanges() {
        for (index, side) in exchange.sides().into_iter().enumerate() {
            let at = format!("round {round}, exchange {}, side {index}", exchange.number);
            assert!(
                side.latency_ms <= u64::from(CLOCK_MS) + NOISE_MS,
                "{at}: latency {} ms under a {CLOCK_MS} ms clock",
                side.latency_ms
            );
            if index == 1 {
                assert_eq!(side.source, SourceName::Bot, "{at}: {side:?}");
            }
        }
    }
    // The huge prompt really was counted and charged at least once.
    assert!(replay.result.tokens_used[0] > 0, "{:?}", replay.result);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_prompt_never_makes_the_other_fighter_late_in_serve() {
    let (model, _) = serve_model("JAB").await;
    let (thinker, _) = serve_bot(huge_thinker()).await;
    let (quick, _) = serve_bot(Behaviour::Sleep(QUICK_ANSWER)).await;
    let referee = serve_referee(serve_config(4, gateway_for(&model))).await;
    let mut call = request(&thinker.url(), &quick.url(), CLOCK_MS);
    call.class = pb::WeightClass::Heavy as i32;
    let replay = run_match(&referee, call).await;
    assert_fair(&replay);
    referee.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_prompt_never_makes_the_other_fighter_late_in_local() {
    let (model, _) = serve_model("JAB").await;
    let (thinker, _) = serve_bot(huge_thinker()).await;
    let (quick, _) = serve_bot(Behaviour::Sleep(QUICK_ANSWER)).await;
    let (thinker_url, quick_url) = (thinker.url(), quick.url());
    let model_url = format!("http://{}/v1", model.address);
    // The binary blocks: run it off this runtime, which serves the bots.
    let output = tokio::task::spawn_blocking(move || {
        // A debug `referee` is ~230 MB. On a machine whose page cache is cold
        // (a fresh CI machine), its first match waited on disk reads of its
        // own code and recorded a decision 451 ms late under the 250 ms clock:
        // not the stall this test is about. Read it once so it is cached.
        let mut binary = std::fs::File::open(env!("CARGO_BIN_EXE_referee")).unwrap();
        std::io::copy(&mut binary, &mut std::io::sink()).unwrap();
        std::process::Command::new(env!("CARGO_BIN_EXE_referee"))
            .args(["local", &thinker_url, &quick_url, "--json", "--seed", "7"])
            .args(["--class", "heavy", "--wall-clock", "0.25"])
            .args(["--model-url", &model_url, "--model", "test-model"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let replay: Replay = serde_json::from_slice(&output.stdout).unwrap();
    assert_fair(&replay);
}
