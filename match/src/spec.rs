//! Bot specs: `builtin:NAME[:ARGS]`, `path/to/bot.wasm`, `grpc://host:port`
//! (`grpcs://` over TLS).

use std::fmt;
use std::path::PathBuf;

use crate::error::MatchError;
use crate::limits::MAX_SPEC_BYTES;

/// The built-in bots and their specs (`builtin:NAME[:ARGS]`) are `duel-builtin`'s.
pub use duel_builtin::{BUILTIN_HELP, BuiltinSpec};

/// A parsed bot spec (DESIGN.md "Bot specs").
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BotSpec {
    Builtin(BuiltinSpec),
    /// A WASM component implementing the `duel:bot` world.
    Wasm(PathBuf),
    /// A remote endpoint implementing `duel.v1.Bot` (`grpc://`, `http://`; over
    /// TLS `grpcs://`, `https://`).
    Endpoint(String),
}

impl fmt::Display for BotSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BotSpec::Builtin(spec) => spec.fmt(f),
            BotSpec::Wasm(path) => write!(f, "{}", path.display()),
            BotSpec::Endpoint(url) => f.write_str(url),
        }
    }
}

fn spec_error(text: &str, why: impl fmt::Display) -> MatchError {
    MatchError::Spec(format!("bot spec {text:?}: {why}"))
}

impl BotSpec {
    pub fn parse(text: &str) -> Result<BotSpec, MatchError> {
        if text.len() > MAX_SPEC_BYTES {
            return Err(MatchError::Spec(format!(
                "bot spec is {} bytes, more than the {MAX_SPEC_BYTES}-byte limit",
                text.len()
            )));
        }
        if text.starts_with("builtin:") {
            return BuiltinSpec::parse(text)
                .map(BotSpec::Builtin)
                .map_err(|error| spec_error(text, error));
        }
        if let Some((scheme, rest)) = endpoint_scheme(text) {
            check_endpoint_address(text, scheme, rest)?;
            return Ok(BotSpec::Endpoint(text.to_owned()));
        }
        if text.ends_with(".wasm") {
            return Ok(BotSpec::Wasm(PathBuf::from(text)));
        }
        Err(spec_error(
            text,
            format!(
                "not a bot spec: expected builtin:NAME ({BUILTIN_HELP}), a .wasm file, or grpc://host:port"
            ),
        ))
    }
}

const ENDPOINT_SCHEMES: [&str; 4] = ["grpc://", "grpcs://", "http://", "https://"];

/// The scheme of an endpoint spec and what follows it.
fn endpoint_scheme(text: &str) -> Option<(&'static str, &str)> {
    ENDPOINT_SCHEMES
        .iter()
        .find_map(|scheme| text.strip_prefix(scheme).map(|rest| (*scheme, rest)))
}

/// The host of an endpoint spec (`grpc://host:port`, …) as [`BotSpec::parse`]
/// accepts it, without the brackets of an IPv6 address: what an address policy
/// checks. Any other spec, or a malformed address, is an error.
pub fn endpoint_host(text: &str) -> Result<String, MatchError> {
    let Some((scheme, rest)) = endpoint_scheme(text) else {
        return Err(spec_error(
            text,
            "not an endpoint address: use grpc://host:port (grpcs:// over TLS, or http(s)://host[:port])",
        ));
    };
    if text.len() > MAX_SPEC_BYTES {
        return Err(MatchError::Spec(format!(
            "bot spec is {} bytes, more than the {MAX_SPEC_BYTES}-byte limit",
            text.len()
        )));
    }
    let authority = check_endpoint_address(text, scheme, rest)?;
    let host = authority.host();
    let host = host
        .strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
        .unwrap_or(host);
    Ok(host.to_owned())
}

/// An endpoint's address, strictly: a host and a port in 1..=65535 (which
/// `http://` and `https://` may leave to their defaults), and no path. A typo
/// here must be an error before the match, not a match of faults.
fn check_endpoint_address(
    text: &str,
    scheme: &str,
    rest: &str,
) -> Result<http::uri::Authority, MatchError> {
    let (authority, path) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    if !path.is_empty() && path != "/" {
        return Err(spec_error(
            text,
            "an endpoint address has no path: use grpc://host:port",
        ));
    }
    if authority.is_empty() {
        return Err(spec_error(text, "missing host:port after the scheme"));
    }
    if authority.contains('@') {
        return Err(spec_error(
            text,
            "credentials in an endpoint address are not accepted",
        ));
    }
    let authority: http::uri::Authority = authority
        .parse()
        .map_err(|_| spec_error(text, "not a host:port address"))?;
    if authority.host().is_empty() || authority.host() == "[]" {
        return Err(spec_error(text, "missing host before the port"));
    }
    let explicit_port = authority
        .as_str()
        .rsplit_once(':')
        .and_then(|(host, port)| {
            // `[::1]` has colons inside its brackets; the port follows the `]`.
            (!host.ends_with(':') && (host.ends_with(']') || !host.contains('['))).then_some(port)
        });
    match explicit_port {
        Some(port) => match port.parse::<u16>() {
            Ok(0) => Err(spec_error(text, "port 0 is not a port a bot can listen on")),
            Ok(_) => Ok(authority),
            Err(_) => Err(spec_error(
                text,
                format!("port {port:?} is not a number from 1 to 65535"),
            )),
        },
        None if matches!(scheme, "http://" | "https://") => Ok(authority),
        None => Err(spec_error(
            text,
            "missing port: use grpc://host:port (grpcs://host:port over TLS)",
        )),
    }
}

/// `sha256:` and the lowercase hex digest of `bytes` (the replay format's
/// naming of a fighter, `FighterInfo::digest`).
pub use duel_replays::sha256_digest;

#[cfg(test)]
mod tests {
    use duel_rules::Action;

    use super::*;

    #[test]
    fn parses_every_kind() {
        let cases = [
            ("builtin:block", BotSpec::Builtin(BuiltinSpec::Block)),
            ("builtin:random", BotSpec::Builtin(BuiltinSpec::Random)),
            ("builtin:counter", BotSpec::Builtin(BuiltinSpec::Counter)),
            (
                "builtin:script:jab, Heavy ,FEINT",
                BotSpec::Builtin(BuiltinSpec::Script(
                    vec![Action::Jab, Action::Heavy, Action::Feint].into(),
                )),
            ),
            (
                "bots/mine.wasm",
                BotSpec::Wasm(PathBuf::from("bots/mine.wasm")),
            ),
            (
                "grpc://127.0.0.1:50051",
                BotSpec::Endpoint("grpc://127.0.0.1:50051".into()),
            ),
            (
                "grpc://[::1]:50051",
                BotSpec::Endpoint("grpc://[::1]:50051".into()),
            ),
            (
                "grpcs://bots.example:443/",
                BotSpec::Endpoint("grpcs://bots.example:443/".into()),
            ),
            (
                "https://bots.example",
                BotSpec::Endpoint("https://bots.example".into()),
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(BotSpec::parse(text).expect(text), expected, "{text}");
        }
    }

    #[test]
    fn rejects_bad_specs_with_one_line() {
        let cases = [
            ("builtin:nope", "unknown built-in bot \"nope\""),
            ("builtin:script:", "empty script"),
            ("builtin:script:JAB,PUNCH", "unknown action \"PUNCH\""),
            ("builtin:script:JAB,,HEAVY", "unknown action \"\""),
            ("builtin:block:3", "takes no arguments"),
            ("grpc://", "missing host:port"),
            ("grpc://127.0.0.1", "missing port"),
            ("grpc://127.0.0.1:99999", "is not a number from 1 to 65535"),
            ("grpc://127.0.0.1:abc", "port \"abc\" is not a number"),
            ("grpc://127.0.0.1:0", "port 0"),
            ("grpc://:5", "missing host"),
            ("grpcs://bots.example:443/x", "no path"),
            ("grpc://user@127.0.0.1:5", "credentials"),
            ("grpc://[::1]", "missing port"),
            ("bot.exe", "not a bot spec"),
        ];
        for (text, expected) in cases {
            let message = BotSpec::parse(text).expect_err(text).to_string();
            assert!(message.contains(expected), "{text}: {message}");
            assert!(!message.contains('\n'), "{text}: {message}");
        }
    }

    #[test]
    fn endpoint_hosts_come_without_brackets_or_port() {
        for (text, host) in [
            ("grpc://127.0.0.1:50051", "127.0.0.1"),
            ("grpcs://[::1]:443/", "::1"),
            ("https://bots.example", "bots.example"),
            ("http://localhost:80", "localhost"),
        ] {
            assert_eq!(endpoint_host(text).expect(text), host);
        }
        for text in [
            "builtin:block",
            "bot.wasm",
            "grpc://:80",
            "ftp://x",
            "grpc://u@h:1",
        ] {
            assert!(endpoint_host(text).is_err(), "{text}");
        }
    }

    #[test]
    fn canonical_builtin_names_round_trip() {
        for text in [
            "builtin:block",
            "builtin:random",
            "builtin:counter",
            "builtin:script:JAB,HEAVY",
        ] {
            assert_eq!(BotSpec::parse(text).expect(text).to_string(), text);
        }
    }
}
