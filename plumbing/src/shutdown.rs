//! The one ctrl-c / SIGTERM listener of a process, for both binaries: services
//! drain and stop, the arena stops taking matches, `--watch` stops serving.

use std::sync::OnceLock;

use tokio::sync::watch;

use crate::PlumbingError;

/// Whether a stop was asked for (ctrl-c or SIGTERM). Cheap to clone.
#[derive(Clone, Debug)]
pub struct Shutdown {
    requested: watch::Receiver<bool>,
}

static INSTALLED: OnceLock<Result<watch::Receiver<bool>, String>> = OnceLock::new();

impl Shutdown {
    /// Listens for ctrl-c and SIGTERM from now on: they no longer kill the
    /// process, [`Shutdown::requested`] and [`Shutdown::wait`] see them. Safe to
    /// call again (the same listener is returned); needs no async runtime.
    pub fn install() -> Result<Shutdown, PlumbingError> {
        let installed = INSTALLED.get_or_init(|| {
            let (sender, receiver) = watch::channel(false);
            ctrlc::set_handler(move || {
                sender.send_replace(true);
            })
            .map(|()| receiver)
            .map_err(|error| format!("cannot listen for ctrl-c and SIGTERM: {error}"))
        });
        match installed {
            Ok(requested) => Ok(Shutdown {
                requested: requested.clone(),
            }),
            Err(reason) => Err(PlumbingError::Signal(reason.clone())),
        }
    }

    /// A stop that is asked for by dropping (or sending on) the returned
    /// sender: for tests and for embedding a service in another program.
    pub fn manual() -> (watch::Sender<bool>, Shutdown) {
        let (sender, requested) = watch::channel(false);
        (sender, Shutdown { requested })
    }

    /// Whether a stop was asked for.
    pub fn requested(&self) -> bool {
        *self.requested.borrow()
    }

    /// Resolves once a stop is asked for (or its sender is gone).
    pub async fn wait(&self) {
        let mut requested = self.requested.clone();
        let _ = requested.wait_for(|stop| *stop).await;
    }

    /// The stop as a `watch` receiver (true once asked for).
    pub fn receiver(&self) -> watch::Receiver<bool> {
        self.requested.clone()
    }
}
