//! Real bots for tests: the example WASM components and a `duel.v1.Bot`
//! endpoint server on loopback.

use std::path::PathBuf;

use duel_proto::v1 as pb;
use tokio::net::TcpListener;

/// The path of example bot `name` (`target/bots/NAME.wasm`), which must exist.
pub fn wasm_path(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/bots")
        .join(format!("{name}.wasm"));
    assert!(
        path.exists(),
        "{} is missing: run scripts/build-bots or copy the example bots there",
        path.display()
    );
    path.display().to_string()
}

/// The bytes of example bot `name` (`target/bots/NAME.wasm`).
pub fn wasm(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/bots")
        .join(format!("{name}.wasm"));
    std::fs::read(&path).unwrap_or_else(|error| {
        panic!(
            "{} is missing ({error}): run scripts/build-bots or copy the example bots there",
            path.display()
        )
    })
}

/// A `duel.v1.Bot` server on loopback that always jabs and says it plays `rulesets`.
#[derive(Debug)]
pub struct Jabber {
    rulesets: Vec<String>,
}

#[tonic::async_trait]
impl pb::bot_server::Bot for Jabber {
    async fn hello(
        &self,
        _request: tonic::Request<pb::HelloRequest>,
    ) -> Result<tonic::Response<pb::HelloResponse>, tonic::Status> {
        Ok(tonic::Response::new(pb::HelloResponse {
            name: "remote-jabber".into(),
            version: "1".into(),
            rulesets: self.rulesets.clone(),
        }))
    }

    async fn decide(
        &self,
        _request: tonic::Request<pb::DecideRequest>,
    ) -> Result<tonic::Response<pb::DecideResponse>, tonic::Status> {
        Ok(tonic::Response::new(pb::DecideResponse {
            action: pb::Action::Jab.into(),
            log: vec!["jabbing, as always".to_owned()],
        }))
    }
}

/// Serves a [`Jabber`] on loopback; returns its `grpc://` URL.
pub async fn serve_endpoint_bot(rulesets: &[&str]) -> String {
    serve_stoppable_endpoint_bot(rulesets).await.0
}

/// [`serve_endpoint_bot`], with the server task: aborting it takes the bot
/// down (its port then refuses connections).
pub async fn serve_stoppable_endpoint_bot(
    rulesets: &[&str],
) -> (
    String,
    tokio::task::JoinHandle<Result<(), tonic::transport::Error>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let bot = Jabber {
        rulesets: rulesets
            .iter()
            .map(|ruleset| (*ruleset).to_owned())
            .collect(),
    };
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(pb::bot_server::BotServer::new(bot))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    (format!("grpc://{address}"), server)
}
