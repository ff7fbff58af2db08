//! The example bot, as a real process, plays a match through `referee serve`
//! and thinks through the metered Inference service.

#![allow(clippy::unwrap_used)]

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use duel_proto::v1 as pb;
use duel_referee::grpc::ServeConfig;
use duel_referee::{ModelConfig, ModelGateway};

struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn wait_for(port: u16) {
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the example bot did not start on port {port}");
}

/// Plays the bot started by `start(port)` through a referee whose model always
/// advises FEINT, and checks it was metered.
async fn plays_and_is_metered(name: &str, start: impl FnOnce(u16) -> Child) {
    // A fake model that always advises FEINT.
    let calls = Arc::new(Mutex::new(0usize));
    let model = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let model_address = model.local_addr().unwrap();
    let counter = Arc::clone(&calls);
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move || {
            let counter = Arc::clone(&counter);
            async move {
                *counter.lock().unwrap() += 1;
                axum::Json(serde_json::json!({"choices": [{"message": {"role": "assistant", "content": "FEINT"}}]}))
            }
        }),
    );
    tokio::spawn(async move { axum::serve(model, app).await });

    let port = free_port();
    let _bot = Process(start(port));
    wait_for(port).await;

    let gateway = ModelGateway::new(ModelConfig {
        url: format!("http://{model_address}/v1"),
        model: "m".into(),
        api_key: None,
    })
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let referee_address = listener.local_addr().unwrap();
    let mut host = duel_referee::HostConfig::new(gateway);
    // The example bot listens on loopback.
    host.endpoints.addresses = duel_referee::address_policy::AddressPolicy::Any;
    let config = ServeConfig {
        max_concurrent_matches: 2,
        host,
        operator_token: None,
        public_url: None,
        replay_dir: None,
        shutdown_grace: Duration::from_secs(5),
        publishing: None,
        grpc_limits: duel_referee::grpc::GrpcLimits::default(),
        http_limits: duel_referee::publish::HttpLimits::default(),
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(duel_referee::grpc::serve(listener, config, async {
        let _ = stopped.await;
    }));
    let mut client =
        duel_proto::v1::referee_client::RefereeClient::connect(format!("http://{referee_address}"))
            .await
            .unwrap();
    let response = client
        .run_match(pb::RunMatchRequest {
            bot_a: format!("grpc://127.0.0.1:{port}"),
            bot_b: "builtin:block".into(),
            class: pb::WeightClass::Light as i32,
            seed: Some(1),
            wall_clock_ms: 5_000,
            detach: false,
        })
        .await
        .unwrap()
        .into_inner();
    let replay = duel_replays::Replay::from_slice(response.replay_json.as_bytes()).unwrap();
    assert_eq!(&*replay.fighters[0].name, name);
    let a: Vec<_> = replay
        .exchanges()
        .map(|(_, exchange)| exchange.a.clone())
        .collect();
    // Every decision followed the model's advice and paid for it.
    for side in &a {
        assert_eq!(side.source, duel_replays::SourceName::Bot);
        assert_eq!(side.action, duel_replays::ActionName::Feint);
        assert!(side.tokens > 0, "{a:?}");
    }
    assert_eq!(*calls.lock().unwrap(), a.len());
    assert_eq!(
        replay.result.tokens_used[0],
        a.iter().map(|side| side.tokens).sum::<u64>()
    );
    let _ = stop.send(());
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_example_thinks_through_inference_and_is_metered() {
    plays_and_is_metered("thinker", |port| {
        Command::new(env!("CARGO_BIN_EXE_endpoint-bot"))
            .args([
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--think",
                "--name",
                "thinker",
            ])
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    })
    .await;
}

/// The Python example (grpcio, stubs generated from our .proto files by
/// `scripts/setup-python-bot.sh`) proves the protos from a second language.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_example_thinks_through_inference_and_is_metered() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let setup = Command::new("bash")
        .arg(root.join("scripts/setup-python-bot.sh"))
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(setup.status.success(), "scripts/setup-python-bot.sh failed");
    let python = String::from_utf8(setup.stdout)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .trim()
        .to_owned();
    let script = root.join("examples/python-endpoint-bot/bot.py");
    plays_and_is_metered("py-thinker", |port| {
        Command::new(&python)
            .arg(&script)
            .args([
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--think",
                "--name",
                "py-thinker",
            ])
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    })
    .await;
}
