//! Log lines to standard error, the same way for both binaries.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// Log lines to stderr, filtered by `RUST_LOG` (`RUST_LOG=sqlx::query=debug`
/// shows each statement with its time), else `default_level`; one JSON object
/// a line with `json`. Colours only on a terminal, so logs piped to files or
/// tests stay plain text. A second call (tests) changes nothing.
pub fn init(json: bool, default_level: &str) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}
