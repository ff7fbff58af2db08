//! The environment variables the `referee` and `ladder` binaries read, in one
//! place. Only binaries call these, once at start: the library below them takes
//! the values as arguments and never reads the environment itself.

use std::path::PathBuf;

use crate::error::MatchError;
use duel_gateway::tls::{EXTRA_CA_ENV, Trust};

/// The environment variable holding the model API key (never a flag, never logged).
pub use duel_gateway::models::MODEL_API_KEY_ENV;

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
pub fn trust() -> Result<Trust, MatchError> {
    match non_empty(EXTRA_CA_ENV) {
        Some(path) => Ok(Trust::with_extra_ca_file(
            &PathBuf::from(path),
            EXTRA_CA_ENV,
        )?),
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

/// The model flags both binaries share: `--models PATH`, or the one-model
/// shorthand `--model-url URL [--model NAME]` (clap keeps them apart).
#[derive(Clone, Copy, Debug, Default)]
pub struct ModelFlags<'a> {
    pub models: Option<&'a std::path::Path>,
    pub model_url: Option<&'a str>,
    pub model: Option<&'a str>,
}

/// The model gateway the flags describe, with each model's API key read
/// from the variable its entry names (the shorthand's from
/// [`MODEL_API_KEY_ENV`]); disabled when no flag names a model.
pub fn model_gateway(
    flags: ModelFlags<'_>,
    trust: &Trust,
) -> Result<duel_gateway::ModelGateway, MatchError> {
    let catalogue = match (flags.models, flags.model_url) {
        (Some(path), _) => duel_gateway::Catalogue::read(path)?,
        (None, Some(url)) => duel_gateway::Catalogue::single(url, flags.model)?,
        (None, None) => return Ok(duel_gateway::ModelGateway::disabled()),
    };
    Ok(duel_gateway::ModelGateway::from_catalogue(
        &catalogue, &secret, trust,
    )?)
}

/// A match host's configuration from the model flags both binaries share and
/// the environment: the models' keys, extra TLS roots, the compiled-bot cache.
pub fn host_config(flags: ModelFlags<'_>) -> Result<crate::HostConfig, MatchError> {
    let trust = trust()?;
    let gateway = model_gateway(flags, &trust)?;
    let mut config = crate::HostConfig::new(gateway);
    config.wasm_cache_dir = wasm_cache_dir();
    config.trust = trust;
    Ok(config)
}
