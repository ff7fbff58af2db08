//! The environment variables the `referee` and `ladder` binaries read, in one
//! place. Only binaries call these, once at start: the library below them takes
//! the values as arguments and never reads the environment itself.

use std::path::PathBuf;

use crate::error::RefereeError;
use crate::tls::{EXTRA_CA_ENV, Trust};

/// The environment variable holding the model API key (never a flag, never logged).
pub const MODEL_API_KEY_ENV: &str = "DUEL_MODEL_API_KEY";

/// The environment variable naming the folder of precompiled WASM bots.
pub const WASM_CACHE_ENV: &str = "DUEL_WASM_CACHE";

fn non_empty(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|value| !value.is_empty())
}

/// The model API key from [`MODEL_API_KEY_ENV`], if set and not blank.
pub fn model_api_key() -> Option<String> {
    std::env::var(MODEL_API_KEY_ENV)
        .ok()
        .filter(|key| !key.trim().is_empty())
}

/// What outgoing TLS trusts: the system's roots, plus the file named by
/// `DUEL_EXTRA_CA` when set.
pub fn trust() -> Result<Trust, RefereeError> {
    match non_empty(EXTRA_CA_ENV) {
        Some(path) => Trust::with_extra_ca_file(&PathBuf::from(path), EXTRA_CA_ENV),
        None => Ok(Trust::system()),
    }
}

/// Where precompiled bots are kept, so a bot is compiled once per machine:
/// `$DUEL_WASM_CACHE`, else `$XDG_CACHE_HOME/duel/wasm`, else
/// `~/.cache/duel/wasm`; `None` when there is no such place (no home).
pub fn wasm_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = non_empty(WASM_CACHE_ENV) {
        return Some(PathBuf::from(dir));
    }
    let base = non_empty("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| non_empty("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(base.join("duel").join("wasm"))
}

/// The value of `name` when set and not blank (tokens and keys named by a
/// caller's constant).
pub fn secret(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|value| !value.trim().is_empty())
}

/// A match host's configuration from the model flags both binaries share
/// (`--model-url`, `--model`: both or neither, checked by clap) and the
/// environment: the model key, extra TLS roots, the compiled-bot cache.
pub fn host_config(
    model_url: Option<&str>,
    model: Option<&str>,
) -> Result<crate::HostConfig, RefereeError> {
    let trust = trust()?;
    let gateway = match (model_url, model) {
        (Some(url), Some(name)) => crate::ModelGateway::trusting(
            crate::ModelConfig::new(url.to_owned(), name.to_owned(), model_api_key()),
            &trust,
        )?,
        _ => crate::ModelGateway::disabled(),
    };
    let mut config = crate::HostConfig::new(gateway);
    config.wasm_cache_dir = wasm_cache_dir();
    config.trust = trust;
    Ok(config)
}
