//! `referee local --watch`: the replay service on loopback for one match — the
//! viewer following its live feed while it is played, then its replay until
//! ctrl-c — and opening a browser on it when there is one.

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use duel_plumbing::Shutdown;
use duel_referee::ReplaySinks;
use duel_referee::publish::{self, LiveEvent, LiveFeeds, LivePublisher, PublishState, RateConfig};
use duel_replays::store::ReplayStore;
use duel_replays::{SigningKey, generate_signing_key};

/// The service of one watched match. Its store is a temporary folder, removed
/// when the command ends.
pub struct Watch {
    address: SocketAddr,
    live: LiveFeeds,
    store: ReplayStore,
    /// Made for this session only: the replay is signed so that `referee replay
    /// fetch` works against the session, but the key is never stored.
    key: Arc<SigningKey>,
    _folder: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Watch {
    /// Starts serving on `address` (127.0.0.1 on a free port by default).
    pub async fn start(address: Option<SocketAddr>) -> Result<Watch> {
        let address = address.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
        let folder = tempfile::Builder::new()
            .prefix("duel-watch-")
            .tempdir()
            .context("cannot make a temporary folder for the replay")?;
        let store = ReplayStore::open(&folder.path().display().to_string())?;
        let key = Arc::new(generate_signing_key()?);
        let live = LiveFeeds::new();
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .with_context(|| format!("cannot listen on {address} for --watch"))?;
        let address = listener
            .local_addr()
            .context("cannot read the --watch address")?;
        let state = PublishState::new(
            store.clone(),
            key.verifying_key(),
            live.clone(),
            RateConfig::default(),
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        // The session's own routes beside the replay service's: the author's
        // transcript, which no public service serves.
        let router = publish::router(state).merge(transcript_router(store.clone()));
        let server = tokio::spawn(publish::serve_router(
            listener,
            router,
            publish::HttpLimits::default(),
            async {
                let _ = stopped.await;
            },
        ));
        Ok(Watch {
            address,
            live,
            store,
            key,
            _folder: folder,
            stop: Some(stop),
            server,
        })
    }

    /// Opens the live feed of a match with its start event.
    pub fn start_feed(&self, match_id: &str, start: LiveEvent) -> Result<LivePublisher> {
        Ok(self.live.start(match_id, start)?)
    }

    /// The viewer page of a match: live while it is played, its replay after.
    pub fn view_url(&self, match_id: &str) -> String {
        format!("http://{}/live/{match_id}/view", self.address)
    }

    pub fn replay_url(&self, match_id: &str) -> String {
        format!("http://{}/replays/{match_id}", self.address)
    }

    /// Where the finished replay goes: signed with the session key and stored,
    /// so `/replays/{id}` serves it before spectators hear the end.
    pub fn sinks(&self) -> ReplaySinks {
        ReplaySinks::new()
            .sign_with(Arc::clone(&self.key))
            .put_into(self.store.clone())
    }

    /// Serves until ctrl-c or SIGTERM (listened for before the URL was
    /// printed, so an early signal is not lost), then stops.
    pub async fn serve_until(mut self, shutdown: &Shutdown) -> Result<()> {
        shutdown.wait().await;
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // Spectators still connected hold no stream open past the match's end,
        // so the graceful stop is quick; do not hang on a stuck client.
        match tokio::time::timeout(Duration::from_secs(5), &mut self.server).await {
            Ok(Ok(result)) => result.context("the --watch service failed"),
            Ok(Err(error)) => Err(error).context("the --watch service panicked"),
            Err(_) => Ok(()),
        }
    }
}

/// `GET /replays/{id}/transcript`: the watched match's transcript, for its
/// author's viewer (this service listens on loopback for one session).
fn transcript_router(store: ReplayStore) -> axum::Router {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    axum::Router::new()
        .route(
            "/replays/{id}/transcript",
            axum::routing::get(
                |axum::extract::State(store): axum::extract::State<ReplayStore>,
                 axum::extract::Path(id): axum::extract::Path<String>| async move {
                    match store.get_transcript(&id).await {
                        Ok(Some(json)) => (
                            [(axum::http::header::CONTENT_TYPE, "application/json")],
                            json,
                        )
                            .into_response(),
                        Ok(None) | Err(_) => duel_plumbing::reply::json_error(
                            StatusCode::NOT_FOUND,
                            "no transcript for this match",
                        ),
                    }
                },
            ),
        )
        .layer(axum::middleware::map_response(publish::security_headers))
        .with_state(store)
}

/// The command that opens `url` in a browser, if this session has one: the
/// first entry of `$BROWSER` (`%s` replaced by the URL, else the URL appended),
/// `open` on macOS, `xdg-open` under a desktop session (`DISPLAY` or
/// `WAYLAND_DISPLAY`). `None` on a headless machine.
fn browser_command(url: &str) -> Option<Command> {
    if let Some(browser) = std::env::var("BROWSER")
        .ok()
        .and_then(|value| value.split(':').next().map(str::trim).map(str::to_owned))
        .filter(|browser| !browser.is_empty())
    {
        let mut words = browser.split_whitespace();
        let mut command = Command::new(words.next()?);
        let mut placed = false;
        for word in words {
            if word.contains("%s") {
                command.arg(word.replace("%s", url));
                placed = true;
            } else {
                command.arg(word);
            }
        }
        if !placed {
            command.arg(url);
        }
        return Some(command);
    }
    if cfg!(target_os = "macos") {
        let mut command = Command::new("open");
        command.arg(url);
        return Some(command);
    }
    let desktop = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|value| !value.is_empty()));
    if desktop {
        let mut command = Command::new("xdg-open");
        command.arg(url);
        return Some(command);
    }
    None
}

/// Tries to open `url` in a browser; never fails the command. Says whether a
/// browser was started.
pub fn open_browser(url: &str) -> bool {
    let Some(mut command) = browser_command(url) else {
        return false;
    };
    let spawned = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match spawned {
        Ok(mut child) => {
            // Reap it whenever it exits, without waiting here.
            std::thread::spawn(move || {
                let _ = child.wait();
            });
            true
        }
        Err(_) => false,
    }
}
