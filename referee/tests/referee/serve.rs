//! `referee serve` over real loopback gRPC: watching (over gRPC and, for HTTP
//! spectators, server-sent events), limits, shutdown, auth, health, argument
//! checking, and WASM bots named in `RunMatch`.

// Tests: a failed unwrap is a failed assertion.
#![allow(clippy::unwrap_used)]

use crate::grpc_support as support;

use std::time::Duration;

use duel_proto::v1 as pb;
use duel_proto::v1::referee_client::RefereeClient;
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_match_sees_every_exchange_in_order() {
    let (slow, _) = serve_bot(Behaviour::Sleep(Duration::from_millis(5))).await;
    let referee = serve_referee(serve_config(4, Default::default())).await;
    let mut client = referee_client(&referee).await;
    let mut detached = request(&slow.url(), "builtin:random", 1_000);
    detached.detach = true;
    let accepted = client.run_match(detached).await.unwrap().into_inner();
    assert!(accepted.result.is_none() && accepted.replay_json.is_empty());
    let mut stream = client
        .watch_match(pb::WatchMatchRequest {
            match_id: accepted.match_id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    let mut events = Vec::new();
    while let Some(event) = stream.message().await.unwrap() {
        events.push(event.event.unwrap());
    }
    let pb::match_event::Event::Started(started) = &events[0] else {
        panic!("first event must be the header: {:?}", events[0]);
    };
    assert_eq!(started.match_id, accepted.match_id);
    assert_eq!(started.wall_clock_ms, 1_000);
    let pb::match_event::Event::Finished(result) = events.last().unwrap() else {
        panic!("last event must be the result");
    };
    let replay_json = client
        .get_replay(pb::GetReplayRequest {
            match_id: accepted.match_id.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .replay_json;
    let replay = duel_replays::Replay::from_slice(replay_json.as_bytes()).unwrap();
    let watched: Vec<&pb::ExchangeEvent> = events[1..events.len() - 1]
        .iter()
        .map(|event| match event {
            pb::match_event::Event::Exchange(exchange) => exchange,
            other => panic!("only exchanges between header and result: {other:?}"),
        })
        .collect();
    let recorded: Vec<_> = replay.exchanges().collect();
    assert_eq!(watched.len(), recorded.len());
    for (seen, (round, exchange)) in watched.iter().zip(&recorded) {
        assert_eq!(
            (seen.round, seen.exchange),
            (u32::from(*round), u32::from(exchange.number))
        );
        let a = seen.a.as_ref().unwrap();
        assert_eq!(a.hp, exchange.a.hp);
        assert_eq!(a.tokens, exchange.a.tokens);
        assert_eq!(seen.b.as_ref().unwrap().stamina, exchange.b.stamina);
    }
    assert_eq!(
        result.round_wins,
        replay.result.round_wins.map(u32::from).to_vec()
    );
    // A late spectator sees the same match from its start.
    let late: Vec<_> = {
        let mut stream = client
            .watch_match(pb::WatchMatchRequest {
                match_id: accepted.match_id.clone(),
            })
            .await
            .unwrap()
            .into_inner();
        let mut late = Vec::new();
        while let Some(event) = stream.message().await.unwrap() {
            late.push(event.event.unwrap());
        }
        late
    };
    assert_eq!(late, events);
    referee.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_match_over_the_limit_gets_resource_exhausted() {
    let (sleeper, _) = serve_bot(Behaviour::Sleep(Duration::from_millis(500))).await;
    let referee = serve_referee(serve_config(1, Default::default())).await;
    let mut client = referee_client(&referee).await;
    let mut first = request(&sleeper.url(), "builtin:block", 100);
    first.detach = true;
    let running = client.run_match(first).await.unwrap().into_inner();
    let refused = client
        .run_match(request("builtin:block", "builtin:block", 100))
        .await
        .unwrap_err();
    assert_eq!(
        refused.code(),
        tonic::Code::ResourceExhausted,
        "{refused:?}"
    );
    let still_running = client
        .get_replay(pb::GetReplayRequest {
            match_id: running.match_id,
        })
        .await
        .unwrap_err();
    assert_eq!(still_running.code(), tonic::Code::FailedPrecondition);
    referee.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_matches_in_flight_finish() {
    let (slow, slow_log) = serve_bot(Behaviour::Sleep(Duration::from_millis(10))).await;
    let replay_dir = tempfile::tempdir().unwrap();
    let mut config = serve_config(4, Default::default());
    config.replay_dir = Some(replay_dir.path().to_owned());
    let mut referee = serve_referee(config).await;
    let mut client = referee_client(&referee).await;
    let in_flight = {
        let mut client = client.clone();
        let request = request(&slow.url(), "builtin:block", 1_000);
        tokio::spawn(async move { client.run_match(request).await })
    };
    until("the match to be in play", || {
        slow_log.decisions.load(std::sync::atomic::Ordering::SeqCst) > 0
    })
    .await;
    referee.signal_stop();
    until_not_serving(&referee).await;
    let refused = client
        .run_match(request("builtin:block", "builtin:block", 100))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unavailable);
    let finished = in_flight.await.unwrap().unwrap().into_inner();
    let replay = duel_replays::Replay::from_slice(finished.replay_json.as_bytes()).unwrap();
    assert!(
        duel_referee::verify::verify_replay(&replay)
            .unwrap()
            .is_ok()
    );
    let written = duel_replays::Replay::read(
        &replay_dir
            .path()
            .join(format!("{}.json", finished.match_id)),
    )
    .unwrap();
    assert_eq!(written, replay);
    tokio::time::timeout(Duration::from_secs(10), referee.task)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_past_the_grace_aborts_matches_without_half_written_replays() {
    let (sleeper, sleeper_log) = serve_bot(Behaviour::Sleep(Duration::from_millis(50))).await;
    let replay_dir = tempfile::tempdir().unwrap();
    let mut config = serve_config(4, Default::default());
    config.replay_dir = Some(replay_dir.path().to_owned());
    config.shutdown_grace = Duration::from_millis(200);
    let mut referee = serve_referee(config).await;
    let mut client = referee_client(&referee).await;
    let in_flight = {
        let mut client = client.clone();
        let request = request(&sleeper.url(), "builtin:block", 1_000);
        tokio::spawn(async move { client.run_match(request).await })
    };
    let mut watcher = {
        until("the first match to be in play", || {
            sleeper_log
                .decisions
                .load(std::sync::atomic::Ordering::SeqCst)
                > 0
        })
        .await;
        let mut detached = request(&sleeper.url(), "builtin:block", 1_000);
        detached.detach = true;
        let accepted = client.run_match(detached).await.unwrap().into_inner();
        client
            .watch_match(pb::WatchMatchRequest {
                match_id: accepted.match_id,
            })
            .await
            .unwrap()
            .into_inner()
    };
    referee.signal_stop();
    let aborted = in_flight.await.unwrap().unwrap_err();
    assert_eq!(aborted.code(), tonic::Code::Aborted, "{aborted:?}");
    let mut last = None;
    while let Some(event) = watcher.message().await.unwrap() {
        last = event.event;
    }
    assert!(
        matches!(last, Some(pb::match_event::Event::Aborted(_))),
        "{last:?}"
    );
    tokio::time::timeout(Duration::from_secs(10), referee.task)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        std::fs::read_dir(replay_dir.path()).unwrap().count(),
        0,
        "no replay, not even a partial one"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_clear_codes() {
    // One slot: a refused request must not hold it (the last request plays).
    let referee = serve_referee(serve_config(1, Default::default())).await;
    let mut client = referee_client(&referee).await;
    let wasm = tempfile::Builder::new().suffix(".wasm").tempfile().unwrap();
    let wasm_path = wasm.path().display().to_string();
    // Files that would stream forever or block a match slot: a
    // link to /dev/zero, a FIFO with no writer.
    let folder = tempfile::tempdir().unwrap();
    let zero_link = folder.path().join("zero.wasm");
    std::os::unix::fs::symlink("/dev/zero", &zero_link).unwrap();
    let fifo = folder.path().join("fifo.wasm");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let cases = [
        (
            request(&zero_link.display().to_string(), "builtin:block", 100),
            tonic::Code::InvalidArgument,
            "not a regular file",
        ),
        (
            request(&fifo.display().to_string(), "builtin:block", 100),
            tonic::Code::InvalidArgument,
            "not a regular file",
        ),
        (
            request("", "builtin:block", 100),
            tonic::Code::InvalidArgument,
            "bot_a is missing",
        ),
        (
            request("builtin:nope", "builtin:block", 100),
            tonic::Code::InvalidArgument,
            "unknown built-in bot",
        ),
        (
            request("builtin:block", "builtin:block", 10_001),
            tonic::Code::InvalidArgument,
            "wall_clock_ms",
        ),
        (
            request("missing.wasm", "builtin:block", 100),
            tonic::Code::InvalidArgument,
            "cannot read bot",
        ),
        (
            request(&wasm_path, "builtin:block", 100),
            tonic::Code::InvalidArgument,
            "not a WebAssembly component",
        ),
        (
            request("ftp://127.0.0.1:1", "builtin:block", 100),
            tonic::Code::InvalidArgument,
            "not a bot spec",
        ),
    ];
    for (request, code, message) in cases {
        let status = client.run_match(request).await.unwrap_err();
        assert_eq!(status.code(), code, "{status:?}");
        assert!(status.message().contains(message), "{status:?}");
    }
    client
        .run_match(request("builtin:block", "builtin:counter", 100))
        .await
        .expect("the one slot is free after every refusal");
    let unknown = uuid::Uuid::new_v4().to_string();
    let status = client
        .get_replay(pb::GetReplayRequest { match_id: unknown })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::NotFound);
    let status = client
        .watch_match(pb::WatchMatchRequest {
            match_id: "x".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    referee.stop().await;
}

/// Sends bytes as they are as the one message of a unary call: what a broken or hostile client puts on the wire.
#[derive(Debug, Clone, Default)]
struct RawBytes;

impl tonic::codec::Codec for RawBytes {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawBytes;
    type Decoder = RawBytes;
    fn encoder(&mut self) -> RawBytes {
        RawBytes
    }
    fn decoder(&mut self) -> RawBytes {
        RawBytes
    }
}

impl tonic::codec::Encoder for RawBytes {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn encode(
        &mut self,
        item: Vec<u8>,
        buf: &mut tonic::codec::EncodeBuf<'_>,
    ) -> Result<(), tonic::Status> {
        bytes::BufMut::put_slice(buf, &item);
        Ok(())
    }
}

impl tonic::codec::Decoder for RawBytes {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn decode(
        &mut self,
        buf: &mut tonic::codec::DecodeBuf<'_>,
    ) -> Result<Option<Vec<u8>>, tonic::Status> {
        let remaining = bytes::Buf::remaining(buf);
        Ok(Some(bytes::Buf::copy_to_bytes(buf, remaining).to_vec()))
    }
}

/// A request body that is not the method's protobuf message is the caller's
/// fault: INVALID_ARGUMENT naming it, not INTERNAL (tonic's default), on every
/// method; and the server still plays afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_requests_are_invalid_argument() {
    let referee = serve_referee(serve_config(1, Default::default())).await;
    let channel = tonic::transport::Endpoint::from_shared(referee.http_url())
        .unwrap()
        .connect()
        .await
        .unwrap();
    // 0xff… is a field with tag 0 (never valid); 0x0a 0x05 "ab" a string field
    // cut short; 0x08 an integer field with no value.
    let bodies: [&[u8]; 3] = [
        &[0xff, 0xff, 0xff, 0xff],
        &[0x0a, 0x05, b'a', b'b'],
        &[0x08],
    ];
    let methods = [
        "/duel.v1.Referee/RunMatch",
        "/duel.v1.Referee/GetReplay",
        "/duel.v1.Referee/WatchMatch",
    ];
    for method in methods {
        for body in bodies {
            let mut grpc = tonic::client::Grpc::new(channel.clone());
            grpc.ready().await.unwrap();
            let path = http::uri::PathAndQuery::from_static(method);
            let result = if method.ends_with("WatchMatch") {
                grpc.server_streaming(tonic::Request::new(body.to_vec()), path, RawBytes)
                    .await
                    .map(|_| ())
            } else {
                grpc.unary(tonic::Request::new(body.to_vec()), path, RawBytes)
                    .await
                    .map(|_| ())
            };
            let status = result.expect_err("an undecodable request is refused");
            assert_eq!(
                status.code(),
                tonic::Code::InvalidArgument,
                "{method} {body:?}: {status:?}"
            );
            assert!(
                status.message().contains("malformed protobuf message"),
                "{method}: {status:?}"
            );
        }
    }
    let mut client = referee_client(&referee).await;
    client
        .run_match(request("builtin:block", "builtin:counter", 100))
        .await
        .expect("the server plays after malformed requests");
    referee.stop().await;
}

/// By default a referee dials public addresses only: naming a loopback or
/// private endpoint is refused before the match, and the bot is never asked.
/// (Only loopback is dialed here; the policy over other addresses is tested as
/// a pure function in `address_policy.rs`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_referee_refuses_private_endpoints() {
    let (bot, log) = serve_bot(Behaviour::Fixed(pb::Action::Jab)).await;
    let mut config = serve_config(4, Default::default());
    config.host.endpoints.addresses = duel_referee::address_policy::AddressPolicy::PublicOnly;
    let referee = serve_referee(config).await;
    let mut client = referee_client(&referee).await;
    for url in [bot.url(), "grpc://localhost:1".to_owned()] {
        let status = client
            .run_match(request(&url, "builtin:block", 100))
            .await
            .unwrap_err();
        assert_eq!(status.code(), tonic::Code::PermissionDenied, "{status:?}");
        assert!(status.message().contains("non-public"), "{status:?}");
    }
    assert_eq!(log.decisions.load(std::sync::atomic::Ordering::SeqCst), 0);
    referee.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_token_guards_the_referee_but_not_health() {
    let mut config = serve_config(4, Default::default());
    config.operator_token = Some("s3cret".into());
    let referee = serve_referee(config).await;
    let channel = tonic::transport::Endpoint::from_shared(referee.http_url())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut client = RefereeClient::new(channel.clone());
    for header in [None, Some("Bearer wrong")] {
        let mut call = tonic::Request::new(request("builtin:block", "builtin:block", 100));
        if let Some(header) = header {
            call.metadata_mut()
                .insert("authorization", header.parse().unwrap());
        }
        let status = client.run_match(call).await.unwrap_err();
        assert_eq!(status.code(), tonic::Code::Unauthenticated);
    }
    let mut call = tonic::Request::new(request("builtin:block", "builtin:random", 100));
    call.metadata_mut()
        .insert("authorization", "Bearer s3cret".parse().unwrap());
    let response = client.run_match(call).await.unwrap().into_inner();
    assert!(response.result.is_some());
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
    for service in ["duel.v1.Referee", "duel.v1.Inference"] {
        let status = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap()
            .into_inner()
            .status;
        assert_eq!(
            status,
            tonic_health::pb::health_check_response::ServingStatus::Serving as i32
        );
    }
    referee.stop().await;
}

#[tokio::test]
async fn listening_beyond_loopback_needs_an_operator_token() {
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let error = duel_referee::grpc::serve(listener, serve_config(1, Default::default()), async {})
        .await
        .unwrap_err();
    assert!(error.to_string().contains("DUEL_REFEREE_TOKEN"), "{error}");
}

async fn http_get(address: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: metrics\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).await.unwrap();
    text
}

/// A referee for two matches with its metrics listener, both on loopback.
struct MetricsServer {
    client: RefereeClient<tonic::transport::Channel>,
    metrics_address: std::net::SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<Result<(), duel_referee::RefereeError>>,
}

impl MetricsServer {
    async fn stop(self) {
        let _ = self.stop.send(());
        self.server.await.unwrap().unwrap();
    }
}

async fn serve_with_metrics_listener() -> MetricsServer {
    let listener = loopback().await;
    let address = listener.local_addr().unwrap();
    let metrics_listener = loopback().await;
    let metrics_address = metrics_listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(duel_referee::grpc::serve_with_metrics(
        listener,
        Some(metrics_listener),
        serve_config(2, Default::default()),
        async {
            let _ = stopped.await;
        },
    ));
    let client = RefereeClient::connect(format!("http://{address}"))
        .await
        .unwrap();
    MetricsServer {
        client,
        metrics_address,
        stop,
        server,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_matches_decisions_and_substitutions() {
    let (sleeper, _) = serve_bot(Behaviour::Sleep(Duration::from_millis(200))).await;
    let mut referee = serve_with_metrics_listener().await;
    let response = referee
        .client
        .run_match(request(&sleeper.url(), "builtin:random", 50))
        .await
        .unwrap()
        .into_inner();
    let replay = duel_replays::Replay::from_slice(response.replay_json.as_bytes()).unwrap();
    let sides = 2 * replay.exchanges().count();
    let timeouts = replay
        .exchanges()
        .filter(|(_, e)| e.a.source == duel_replays::SourceName::Timeout)
        .count();
    assert_eq!(timeouts, sides / 2);
    let text = http_get(referee.metrics_address, "/metrics").await;
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        text.contains("duel_matches_total{state=\"finished\"} 1\n"),
        "{text}"
    );
    assert!(text.contains("duel_matches_running 0\n"), "{text}");
    assert!(
        text.contains(&format!(
            "duel_decisions_total{{source=\"timeout\"}} {timeouts}\n"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "duel_decisions_total{{source=\"bot\"}} {}\n",
            sides - timeouts
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("duel_decision_latency_ms_count {sides}\n")),
        "{text}"
    );
    assert!(
        http_get(referee.metrics_address, "/other")
            .await
            .starts_with("HTTP/1.1 404")
    );
    referee.stop().await;
}

/// Reads server-sent events until the stream ends: (event name, JSON data).
async fn read_events(response: reqwest::Response) -> Vec<(String, serde_json::Value)> {
    let text = response.text().await.unwrap();
    text.split("\n\n")
        .filter_map(|block| {
            let name = block
                .lines()
                .find_map(|line| line.strip_prefix("event: "))?;
            let data = block.lines().find_map(|line| line.strip_prefix("data: "))?;
            Some((name.to_owned(), serde_json::from_str(data).unwrap()))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_spectators_follow_a_grpc_match_live_then_get_its_signed_replay() {
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let (gated, _) = serve_bot(Behaviour::Gated(std::sync::Arc::clone(&gate))).await;
    let store_dir = tempfile::tempdir().unwrap();
    let store =
        duel_replays::store::ReplayStore::open(&store_dir.path().display().to_string()).unwrap();
    let key = duel_replays::SigningKey::from_bytes(&[7; 32]);
    let mut config = serve_config(4, Default::default());
    config.publishing = Some(duel_referee::grpc::Publishing {
        live: duel_referee::publish::LiveFeeds::new(),
        store,
        signing_key: std::sync::Arc::new(key.clone()),
    });
    let (referee, http_address) = serve_referee_with_http(config).await;
    let base = format!("http://{http_address}");
    let mut client = referee_client(&referee).await;
    let running = tokio::spawn(async move {
        client
            .run_match(request(&gated.url(), "builtin:counter", 5_000))
            .await
            .map(tonic::Response::into_inner)
    });
    // The gated bot holds the first exchange until the spectator is in.
    let http = reqwest::Client::new();
    let match_id = loop {
        let live: serde_json::Value = serde_json::from_slice(
            &http
                .get(format!("{base}/live"))
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap(),
        )
        .unwrap();
        if let Some(id) = live["live"][0].as_str() {
            break id.to_owned();
        }
        assert!(
            !running.is_finished(),
            "the match cannot end before the gate opens"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let feed = http
        .get(format!("{base}/live/{match_id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(feed.status(), 200);
    let reader = tokio::spawn(read_events(feed));
    gate.add_permits(1);
    let response = running.await.unwrap().unwrap();
    let events = tokio::time::timeout(Duration::from_secs(60), reader)
        .await
        .expect("the feed ends with the match")
        .unwrap();
    assert_eq!(response.match_id, match_id);
    let replay = duel_replays::Replay::from_slice(response.replay_json.as_bytes()).unwrap();

    let exchanges: Vec<_> = replay.exchanges().collect();
    assert_eq!(
        events.len(),
        exchanges.len() + 2,
        "start, every exchange, end"
    );
    assert_eq!(events[0].0, "start");
    assert_eq!(events[0].1["match_id"], match_id.as_str());
    assert_eq!(events[0].1["fighters"][1]["name"], "builtin:counter");
    for ((name, event), (round, exchange)) in events[1..].iter().zip(&exchanges) {
        assert_eq!(name, "exchange");
        assert_eq!(event["round"], *round);
        assert_eq!(event["exchange"], serde_json::to_value(exchange).unwrap());
    }
    assert_eq!(events.last().unwrap().0, "end");
    assert_eq!(
        events.last().unwrap().1["result"],
        serde_json::to_value(&replay.result).unwrap()
    );

    // RunMatch's replay is signed with the server's key and is the one served.
    assert!(matches!(
        duel_replays::check_signature(response.replay_json.as_bytes(), Some(&key.verifying_key()))
            .unwrap(),
        Ok(duel_replays::SignatureStatus::Valid { .. })
    ));
    let served = http
        .get(format!("{base}/replays/{match_id}"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(duel_replays::Replay::from_slice(&served).unwrap(), replay);
    let view = http
        .get(format!("{base}/live/{match_id}/view"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        view.status(),
        200,
        "the live viewer URL works after the end"
    );
    assert!(
        duel_referee::verify::verify_replay(&replay)
            .unwrap()
            .is_ok()
    );
    referee.stop().await;
}

/// An example WASM bot built by `scripts/build-bots`, as an absolute path.
fn wasm_bot(name: &str) -> String {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/bots")
        .join(format!("{name}.wasm"));
    assert!(
        path.exists(),
        "{} is missing: run scripts/build-bots (scripts/test.sh does)",
        path.display()
    );
    path.canonicalize().unwrap().display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_match_plays_example_wasm_bots_and_meters_their_model_calls() {
    let (model, model_log) = serve_model("JAB").await;
    let referee = serve_referee(serve_config(2, gateway_for(&model))).await;
    let mut wasm = request(&wasm_bot("oracle"), &wasm_bot("jabber"), 5_000);
    wasm.class = pb::WeightClass::Middle as i32;
    let replay = run_match(&referee, wasm).await;
    for (fighter, name) in replay.fighters.iter().zip(["oracle", "jabber"]) {
        assert_eq!(fighter.kind, duel_replays::FighterKind::Wasm);
        assert_eq!(&*fighter.name, name);
        assert!(fighter.digest.starts_with("sha256:"), "{}", fighter.digest);
    }
    assert!(
        duel_referee::verify::verify_replay(&replay)
            .unwrap()
            .is_ok(),
        "the replay of two WASM bots verifies"
    );
    // The oracle asks the model through its `model` import: each call is
    // charged to the decision that made it, prompt plus completion exactly.
    let requests = model_log.requests.lock().unwrap().clone();
    assert!(!requests.is_empty(), "the oracle asked the model");
    let expected: Vec<u64> = requests
        .iter()
        .map(|request| {
            assert_eq!(request["max_tokens"], 8);
            duel_referee::meter::count_tokens(request["messages"][0]["content"].as_str().unwrap())
                + duel_referee::meter::count_tokens("JAB")
        })
        .collect();
    let charged: Vec<u64> = sides(&replay, 0)
        .iter()
        .map(|side| side.tokens)
        .filter(|tokens| *tokens > 0)
        .collect();
    assert_eq!(charged, expected);
    assert_eq!(replay.result.tokens_used, [expected.iter().sum::<u64>(), 0]);
    referee.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_spectators_hear_aborted_when_shutdown_cuts_a_match_short() {
    // The gate never opens: the match is stuck in its first decision.
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let (gated, _) = serve_bot(Behaviour::Gated(gate)).await;
    let store_dir = tempfile::tempdir().unwrap();
    let mut config = serve_config(4, Default::default());
    config.shutdown_grace = Duration::from_millis(100);
    config.publishing = Some(duel_referee::grpc::Publishing {
        live: duel_referee::publish::LiveFeeds::new(),
        store: duel_replays::store::ReplayStore::open(&store_dir.path().display().to_string())
            .unwrap(),
        signing_key: std::sync::Arc::new(duel_replays::SigningKey::from_bytes(&[9; 32])),
    });
    let (mut referee, http_address) = serve_referee_with_http(config).await;
    let mut detached = request(&gated.url(), "builtin:block", 10_000);
    detached.detach = true;
    let accepted = referee_client(&referee)
        .await
        .run_match(detached)
        .await
        .unwrap()
        .into_inner();
    let feed = reqwest::Client::new()
        .get(format!("http://{http_address}/live/{}", accepted.match_id))
        .send()
        .await
        .unwrap();
    assert_eq!(feed.status(), 200);
    let reader = tokio::spawn(read_events(feed));
    referee.signal_stop();
    let events = tokio::time::timeout(Duration::from_secs(60), reader)
        .await
        .expect("the feed ends with the abort")
        .unwrap();
    let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["start", "aborted"]);
    assert!(
        events[1].1["reason"]
            .as_str()
            .unwrap()
            .contains("shut down"),
        "{:?}",
        events[1].1
    );
    tokio::time::timeout(Duration::from_secs(10), referee.task)
        .await
        .unwrap()
        .unwrap();
    // The store's own work folder (`.tmp`) may exist; no replay may.
    assert_eq!(
        std::fs::read_dir(store_dir.path())
            .unwrap()
            .filter(|entry| entry.as_ref().unwrap().file_name() != ".tmp")
            .count(),
        0,
        "no replay is published for an aborted match"
    );
}

/// The operator token never reaches a log line through `{:?}`.
#[test]
fn the_operator_token_never_shows_in_debug_output() {
    let mut config = serve_config(1, Default::default());
    config.operator_token = Some("s3cret-operator-token".to_owned());
    let shown = format!("{config:?}");
    assert!(!shown.contains("s3cret-operator-token"), "{shown}");
    assert!(shown.contains("<redacted>"), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_plays_wasm_bots_from_its_instance_pool() {
    let mut referee = serve_with_metrics_listener().await;
    for _ in 0..2 {
        referee
            .client
            .run_match(request(&wasm_bot("jabber"), &wasm_bot("counter"), 5_000))
            .await
            .unwrap();
    }
    let text = http_get(referee.metrics_address, "/metrics").await;
    // Four instances, all from the pool sized for the server's two matches.
    assert!(
        text.contains("duel_wasm_instances_made{allocation=\"pool\"} 4\n"),
        "{text}"
    );
    assert!(
        text.contains("duel_wasm_instances_made{allocation=\"on_demand\"} 0\n"),
        "{text}"
    );
    referee.stop().await;
}

/// A `referee serve` process under `prlimit --nofile=1024`, with its gRPC
/// and metrics addresses read from its log.
struct LimitedReferee {
    child: std::process::Child,
    grpc: std::net::SocketAddr,
    metrics: std::net::SocketAddr,
}

impl Drop for LimitedReferee {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of `field=` in a log line.
fn log_field(line: &str, field: &str) -> Option<std::net::SocketAddr> {
    let rest = line.split(&format!(" {field}=")).nth(1)?;
    rest.split_whitespace().next()?.parse().ok()
}

fn start_limited_referee(timeout_ms: u64) -> LimitedReferee {
    use std::io::BufRead;
    let timeout = timeout_ms.to_string();
    let mut child = std::process::Command::new("prlimit")
        .arg("--nofile=1024:1024")
        .arg(env!("CARGO_BIN_EXE_referee"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "127.0.0.1:0",
        ])
        .args(["--grpc-handshake-timeout-ms", &timeout])
        .args(["--grpc-idle-timeout-ms", &timeout])
        .args(["--http-header-timeout-ms", &timeout])
        .args(["--http-idle-timeout-ms", &timeout])
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start prlimit referee serve");
    let stderr = child.stderr.take().unwrap();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (mut grpc, mut metrics, mut sent) = (None, None, false);
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            grpc = grpc.or_else(|| log_field(&line, "address"));
            metrics = metrics.or_else(|| log_field(&line, "metrics_address"));
            if !sent && let (Some(grpc), Some(metrics)) = (grpc, metrics) {
                let _ = sender.send((grpc, metrics));
                sent = true;
            }
            eprintln!("[referee serve] {line}");
        }
    });
    let (grpc, metrics) = receiver
        .recv_timeout(Duration::from_secs(60))
        .expect("referee serve logs both addresses");
    LimitedReferee {
        child,
        grpc,
        metrics,
    }
}

/// Opens `count` connections to `address` that never send a byte.
async fn idle_sockets(address: std::net::SocketAddr, count: usize) -> Vec<tokio::net::TcpStream> {
    let mut sockets = Vec::with_capacity(count);
    for _ in 0..count {
        sockets.push(tokio::net::TcpStream::connect(address).await.unwrap());
    }
    sockets
}

/// Waits until the server has closed every socket.
async fn all_closed(sockets: Vec<tokio::net::TcpStream>, within: Duration) {
    use tokio::io::AsyncReadExt;
    let waits = sockets.into_iter().map(|mut socket| async move {
        let mut byte = [0u8; 64];
        loop {
            match socket.read(&mut byte).await {
                Ok(0) | Err(_) => return,
                // An HTTP/2 server's settings or a 408 before the close.
                Ok(_) => {}
            }
        }
    });
    tokio::time::timeout(within, futures::future::join_all(waits))
        .await
        .expect("every idle socket closed by the server in time");
}

// At a 1,024-descriptor limit, 1,030 idle sockets to either
// listener used to hold the process's descriptors for good, and RunMatch
// failed with DEADLINE_EXCEEDED. Now each listener takes at most half the
// limit, closes a socket that sends nothing within its timeout, and a match
// asked for meanwhile is played.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sockets_are_closed_and_matches_still_run_at_the_open_file_limit() {
    const TIMEOUT_MS: u64 = 1_500;
    const SOCKETS: usize = 1_030;
    let referee = start_limited_referee(TIMEOUT_MS);
    for (listener, address) in [("gRPC", referee.grpc), ("metrics", referee.metrics)] {
        let started = std::time::Instant::now();
        let sockets = idle_sockets(address, SOCKETS).await;
        // Accepted half a limit at a time: three rounds of the timeout at most.
        let closing = tokio::spawn(all_closed(
            sockets,
            Duration::from_millis(3 * TIMEOUT_MS + 5_000),
        ));
        let mut client = RefereeClient::connect(format!("http://{}", referee.grpc))
            .await
            .unwrap();
        let mut run = request("builtin:random", "builtin:block", 1_000);
        run.seed = Some(11);
        let played = tokio::time::timeout(Duration::from_secs(30), client.run_match(run))
            .await
            .unwrap_or_else(|_| panic!("RunMatch behind {SOCKETS} idle {listener} sockets"))
            .unwrap_or_else(|status| panic!("RunMatch behind idle {listener} sockets: {status:?}"))
            .into_inner();
        assert!(!played.match_id.is_empty());
        let played_ms = started.elapsed().as_millis();
        closing.await.unwrap();
        eprintln!(
            "{SOCKETS} idle {listener} sockets: RunMatch played {played_ms} ms and every \
             socket closed {} ms after the first connect",
            started.elapsed().as_millis()
        );
    }
}
