//! Validation of what owners register and what workers dial: WASM uploads go
//! through the referee's own sandbox loader (so the ladder accepts exactly the
//! components a referee runs, refusing with the sandbox's one-line reasons), and
//! endpoint bots must pass the URL policy and answer `Hello` for this ruleset.

use std::net::IpAddr;
use std::time::Duration;

use duel_referee::address_policy::AddressPolicy;
use duel_referee::{MatchError, MatchHost};
use duel_rules::Ruleset;

use crate::error::{Rejection, Result};
use crate::limits::{
    ENDPOINT_HELLO_TIMEOUT, MAX_QUOTED_RULESET_CHARS, MAX_QUOTED_RULESETS, MAX_URL_BYTES,
    MAX_WASM_BYTES,
};

/// A WASM upload the sandbox loaded: valid, of the `duel:bot` world, compiled
/// (into the sandbox's caches, so the first match does not compile it again).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidWasm {
    /// `sha256:` of the bytes, as the sandbox computed it.
    pub digest: String,
}

/// Validates an upload as a component of the `duel:bot` world with the
/// sandbox's loader, the one `referee local` and `referee serve` use. Compiling
/// a large component takes seconds; it runs on a blocking thread.
pub async fn validate_wasm(host: &MatchHost, bytes: &[u8]) -> Result<ValidWasm> {
    if bytes.len() > MAX_WASM_BYTES {
        return Err(Rejection::TooLarge { bytes: bytes.len() }.into());
    }
    let loaded = host
        .load_component(bytes.to_vec(), duel_referee::limits::DECISION_WALL_CLOCK)
        .await
        .map_err(Rejection::Sandbox)?;
    Ok(ValidWasm {
        digest: loaded.digest().to_owned(),
    })
}

/// Checks an endpoint bot before it is registered: the URL policy
/// ([`check_endpoint_url`]; the referee resolves the name and checks every
/// address against the host's address policy), then a `Hello` within
/// [`ENDPOINT_HELLO_TIMEOUT`] that lists the ruleset in force.
pub async fn check_endpoint(host: &MatchHost, url: &str, allow_private: bool) -> Result<()> {
    check_endpoint_url(url, allow_private)?;
    hello(host, url, ENDPOINT_HELLO_TIMEOUT).await
}

async fn hello(host: &MatchHost, url: &str, timeout: Duration) -> Result<()> {
    let answer = duel_referee::endpoint::hello(
        url,
        timeout,
        &host.config().trust,
        host.config().endpoints.addresses,
    )
    .await
    .map_err(|error| match error {
        MatchError::AddressRefused { .. } => private_refused(url),
        error => Rejection::NoHello(error),
    })?;
    let current = Ruleset::CURRENT.version();
    if answer.rulesets.iter().any(|ruleset| ruleset == current) {
        return Ok(());
    }
    let offered: Vec<String> = answer
        .rulesets
        .iter()
        .take(MAX_QUOTED_RULESETS)
        .map(|ruleset| {
            ruleset
                .chars()
                .filter(|c| !duel_referee::terminal::is_hidden(*c))
                .take(MAX_QUOTED_RULESET_CHARS)
                .collect()
        })
        .collect();
    Err(Rejection::OtherRulesets {
        url: url.to_owned(),
        offered,
        current,
    }
    .into())
}

/// The host of an endpoint URL (without brackets for IPv6), by the referee's
/// own bot-spec parser, so the ladder accepts exactly the addresses a referee
/// dials.
fn endpoint_host(url: &str) -> Result<String> {
    Ok(duel_referee::spec::endpoint_host(url).map_err(Rejection::Match)?)
}

/// Checks an endpoint URL: scheme, host, and unless `allow_private` (local
/// ladders, tests) no loopback, private, link-local or unspecified address.
/// Host names are resolved and checked by [`check_resolved`].
pub fn check_endpoint_url(url: &str, allow_private: bool) -> Result<()> {
    if url.len() > MAX_URL_BYTES {
        return Err(Rejection::UrlTooLong.into());
    }
    let host = endpoint_host(url)?;
    if allow_private {
        return Ok(());
    }
    let policy = AddressPolicy::PublicOnly;
    if policy.check_name(&host).is_err() {
        return Err(private_refused(url).into());
    }
    if let Ok(address) = host.parse::<IpAddr>()
        && !policy.allows(address)
    {
        return Err(private_refused(url).into());
    }
    Ok(())
}

fn private_refused(url: &str) -> Rejection {
    Rejection::PrivateAddress {
        url: url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_private_endpoints_unless_allowed() {
        for url in [
            "grpc://127.0.0.1:5000",
            "http://localhost:80",
            "grpc://10.1.2.3:1",
            "grpc://192.168.0.1:1",
            "grpc://169.254.169.254:80",
            "grpc://[::1]:5000",
            "grpc://[fd00::1]:5000",
            "grpc://0.0.0.0:1",
        ] {
            assert!(check_endpoint_url(url, false).is_err(), "{url}");
            assert!(check_endpoint_url(url, true).is_ok(), "{url}");
        }
        assert!(check_endpoint_url("grpc://bots.example.com:443", false).is_ok());
        assert!(check_endpoint_url("grpc://8.8.8.8:443", false).is_ok());
        assert!(check_endpoint_url("ftp://x", true).is_err());
        assert!(check_endpoint_url("grpc://:80", true).is_err());
        // What the referee's spec parser refuses, the ladder refuses too.
        for url in [
            "grpc://bots.example.com",
            "grpc://bots.example.com:443/path",
            "grpc://user@bots.example.com:443",
            "grpc://bots.example.com:0",
        ] {
            let error = check_endpoint_url(url, true).expect_err(url).line();
            assert!(error.contains("bot spec"), "{url}: {error}");
        }
        assert!(check_endpoint_url("grpcs://bots.example.com:443", false).is_ok());
    }
}
