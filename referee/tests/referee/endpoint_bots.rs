//! Endpoint bots over real loopback gRPC: the wall clock, faults of every kind,
//! recovery, and the other fighter's independence.

// Tests: a failed unwrap is a failed assertion.
#![allow(clippy::unwrap_used)]

use crate::grpc_support as support;

use std::time::Duration;

use duel_proto::v1 as pb;
use duel_replays::SourceName;
use support::*;

const CLOCK_MS: u32 = 150;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleeper_past_the_clock_times_out_and_the_other_fighter_is_unaffected() {
    let (sleeper, _) = serve_bot(Behaviour::Sleep(Duration::from_millis(400))).await;
    let (quick, _) = serve_bot(Behaviour::Fixed(pb::Action::Jab)).await;
    let referee = serve_referee(serve_config(4, Default::default())).await;
    let replay = run_match(&referee, request(&sleeper.url(), &quick.url(), CLOCK_MS)).await;
    assert_eq!(replay.wall_clock_ms, Some(u64::from(CLOCK_MS)));
    let a = sides(&replay, 0);
    let b = sides(&replay, 1);
    assert!(a.len() >= 24, "two full rounds at least: {}", a.len());
    for side in &a {
        assert_eq!(side.source, SourceName::Timeout);
        assert_eq!(
            side.action,
            duel_replays::ActionName::Block,
            "the fallback plays"
        );
        assert!(
            side.latency_ms >= u64::from(CLOCK_MS) - 5,
            "{}",
            side.latency_ms
        );
        assert!(
            side.latency_ms < u64::from(CLOCK_MS) + 150,
            "{}",
            side.latency_ms
        );
    }
    // Asked concurrently: the sleeper never costs the other fighter its answer,
    // and does not slow it down (the median, so a scheduling hiccup on a loaded
    // machine does not fail the test).
    assert!(b.iter().all(|side| side.source == SourceName::Bot));
    let mut latencies: Vec<u64> = b.iter().map(|side| side.latency_ms).collect();
    latencies.sort_unstable();
    let median = latencies[latencies.len() / 2];
    assert!(median < u64::from(CLOCK_MS) / 3, "{latencies:?}");
    assert!(
        duel_referee::verify::verify_replay(&replay)
            .unwrap()
            .is_ok()
    );
    referee.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_connections_and_junk_are_faults_for_that_exchange_only() {
    for junk in [&b""[..], &b"HTTP/1.1 200 OK\r\n\r\nthis is not grpc"[..]] {
        let dropper = serve_dropper(junk).await;
        let (quick, _) = serve_bot(Behaviour::Fixed(pb::Action::Jab)).await;
        let referee = serve_referee(serve_config(4, Default::default())).await;
        let replay = run_match(&referee, request(&dropper.url(), &quick.url(), CLOCK_MS)).await;
        for side in sides(&replay, 0) {
            assert_eq!(side.source, SourceName::Fault, "{side:?}");
            assert!(side.reason().is_some());
        }
        assert!(
            sides(&replay, 1)
                .iter()
                .all(|side| side.source == SourceName::Bot)
        );
        referee.stop().await;
        dropper.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_answers_are_faults() {
    for (value, expected) in [(99, "unknown action value 99"), (0, "ACTION_UNSPECIFIED")] {
        let (garbage, log) = serve_bot(Behaviour::Raw(value)).await;
        let referee = serve_referee(serve_config(4, Default::default())).await;
        let replay = run_match(&referee, request(&garbage.url(), "builtin:block", CLOCK_MS)).await;
        let a = sides(&replay, 0);
        assert!(a.iter().all(|side| side.source == SourceName::Fault));
        assert!(
            a[0].reason().unwrap_or_default().contains(expected),
            "{:?}",
            a[0].reason()
        );
        // Asked again every exchange: faults never forfeit.
        assert_eq!(
            log.decisions.load(std::sync::atomic::Ordering::SeqCst),
            a.len()
        );
        referee.stop().await;
    }
}

/// A reply over `MAX_BOT_RESPONSE_BYTES` is a fault every time, never
/// buffered; a reply just under it plays (its log is cut by the recorder).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_replies_are_faults() {
    let limit = duel_referee::limits::MAX_BOT_RESPONSE_BYTES;
    let referee = serve_referee(serve_config(4, Default::default())).await;
    let (huge, _) = serve_bot(Behaviour::Chatty(limit + 1)).await;
    let replay = run_match(&referee, request(&huge.url(), "builtin:block", CLOCK_MS)).await;
    let a = sides(&replay, 0);
    assert!(
        a.iter().all(|side| side.source == SourceName::Fault),
        "{a:?}"
    );
    let (large, _) = serve_bot(Behaviour::Chatty(limit - 64)).await;
    let replay = run_match(&referee, request(&large.url(), "builtin:block", CLOCK_MS)).await;
    assert!(
        sides(&replay, 0)
            .iter()
            .all(|side| side.source == SourceName::Bot)
    );
    referee.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_comes_back_after_faults() {
    let (flaky, _) = serve_bot(Behaviour::FailFirst(3)).await;
    let referee = serve_referee(serve_config(4, Default::default())).await;
    let replay = run_match(&referee, request(&flaky.url(), "builtin:block", CLOCK_MS)).await;
    let sources: Vec<SourceName> = sides(&replay, 0).iter().map(|side| side.source).collect();
    assert_eq!(&sources[..3], &[SourceName::Fault; 3]);
    assert!(
        sources[3..].iter().all(|source| *source == SourceName::Bot),
        "{sources:?}"
    );
    referee.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_that_goes_down_and_comes_back_is_reconnected() {
    use duel_referee::{BotSpec, Fighter, HostConfig, MatchHost, MatchOptions};
    use duel_rules::WeightClass;

    let listener = loopback().await;
    let address = listener.local_addr().unwrap();
    let log = std::sync::Arc::new(BotLog::default());
    // Slow enough that the controller acts between exchanges.
    let bot = TestBot {
        behaviour: Behaviour::Sleep(Duration::from_millis(20)),
        log: std::sync::Arc::clone(&log),
    };
    let mut server = Some(serve_bot_on(listener, bot.clone()));
    let mut config = HostConfig::new(duel_referee::ModelGateway::disabled());
    // The bot listens on loopback.
    config.endpoints.addresses = duel_referee::address_policy::AddressPolicy::Any;
    let host = MatchHost::new(config);
    let options = MatchOptions::new(WeightClass::Light)
        .seed(1)
        .wall_clock(Duration::from_millis(CLOCK_MS.into()));
    let session = host
        .prepare(
            [
                Fighter::from(BotSpec::parse(&format!("grpc://{address}")).unwrap()),
                Fighter::from(BotSpec::parse("builtin:block").unwrap()),
            ],
            options,
        )
        .await
        .unwrap();
    // Take the bot down after exchange 3 and bring it back (same port) after 8.
    let (events, mut exchanges) = tokio::sync::mpsc::unbounded_channel::<usize>();
    let controller = tokio::spawn(async move {
        let mut seen = 0;
        while let Some(count) = exchanges.recv().await {
            seen = count;
            if seen == 3
                && let Some(running) = server.take()
            {
                running.stop().await;
            }
            if seen == 8 {
                let listener = tokio::net::TcpListener::bind(address).await.unwrap();
                server = Some(serve_bot_on(listener, bot.clone()));
            }
        }
        let _ = seen;
        if let Some(running) = server {
            running.stop().await;
        }
    });
    let mut count = 0;
    let replay = session
        .play(&mut |_: &_, _: &_| {
            count += 1;
            let _ = events.send(count);
        })
        .await
        .replay;
    drop(events);
    controller.await.unwrap();
    let sources: Vec<SourceName> = sides(&replay, 0).iter().map(|side| side.source).collect();
    assert!(
        sources[..3].iter().all(|s| *s == SourceName::Bot),
        "{sources:?}"
    );
    assert!(sources[3..8].contains(&SourceName::Fault), "{sources:?}");
    assert!(
        sources[10..].iter().all(|s| *s == SourceName::Bot),
        "{sources:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_bots_play_as_faults_named_by_url() {
    let referee = serve_referee(serve_config(4, Default::default())).await;
    let replay = run_match(&referee, request("grpc://127.0.0.1:1", "builtin:block", 50)).await;
    assert_eq!(&*replay.fighters[0].name, "grpc://127.0.0.1:1");
    assert_eq!(replay.fighters[0].kind, duel_replays::FighterKind::Endpoint);
    assert!(
        sides(&replay, 0)
            .iter()
            .all(|side| side.source == SourceName::Fault)
    );
    referee.stop().await;
}
