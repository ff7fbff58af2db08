//! Shared helpers of the publishing tests: real matches, a real replay service
//! on an ephemeral loopback port.

#![allow(dead_code)]

use std::net::SocketAddr;

use duel_referee::builtin::BuiltinFighter;
use duel_referee::publish::{self, HttpLimits, LiveFeeds, PublishState, RateConfig};
use duel_referee::{BotSpec, MatchConfig, run_bare_match};
use duel_replays::store::ReplayStore;
use duel_replays::{Replay, SigningKey};
use duel_rules::WeightClass;

/// A real match between two built-in bots, accepted at `accepted_at`.
pub fn play(
    id: &str,
    accepted_at: &str,
    class: WeightClass,
    seed: u64,
    a: &str,
    b: &str,
) -> Replay {
    let spec = |text: &str| match BotSpec::parse(text) {
        Ok(BotSpec::Builtin(spec)) => spec,
        other => panic!("{text} is not a built-in spec: {other:?}"),
    };
    let (fighter_a, fighter_b) = (BuiltinFighter::new(spec(a)), BuiltinFighter::new(spec(b)));
    let config = MatchConfig::new(id.to_owned(), accepted_at.to_owned(), class, seed);
    run_bare_match(config, [&fighter_a, &fighter_b])
}

/// A fixed test key.
pub fn referee_key() -> SigningKey {
    SigningKey::from_bytes(&[42; 32])
}

/// A signed replay's JSON.
pub fn signed(mut replay: Replay, key: &SigningKey) -> Replay {
    duel_replays::sign(&mut replay, key).expect("signs");
    replay
}

/// A replay service on 127.0.0.1 with its own runtime thread; stops on drop.
pub struct Server {
    pub address: SocketAddr,
    pub live: LiveFeeds,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    pub fn start(store: ReplayStore, key: &SigningKey, rate: RateConfig) -> Server {
        Server::start_with(store, key, rate, HttpLimits::default())
    }

    /// [`Server::start`] with the listener's own limits.
    pub fn start_with(
        store: ReplayStore,
        key: &SigningKey,
        rate: RateConfig,
        limits: HttpLimits,
    ) -> Server {
        Server::start_beside(store, key, rate, limits, axum::Router::new())
    }

    /// [`Server::start_with`], `site`'s routes served beside the replay
    /// service's (as a ladder mounts its site).
    pub fn start_beside(
        store: ReplayStore,
        key: &SigningKey,
        rate: RateConfig,
        limits: HttpLimits,
        site: axum::Router,
    ) -> Server {
        let live = LiveFeeds::new();
        let state = PublishState::new(store, key.verifying_key(), live.clone(), rate);
        let router = publish::router(state).merge(site);
        let (address_tx, address_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind");
                address_tx
                    .send(listener.local_addr().expect("address"))
                    .expect("send");
                publish::serve_router(listener, router, limits, async {
                    let _ = stop_rx.await;
                })
                .await
                .expect("serve");
            });
        });
        let address = address_rx.recv().expect("server started");
        Server {
            address,
            live,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A current-thread runtime for a test's own async calls.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}
pub mod chromium;
pub mod services;
