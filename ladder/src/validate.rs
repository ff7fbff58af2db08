//! Validation of what owners register: WASM uploads (a seam the sandbox's full
//! check plugs into) and endpoint URLs (untrusted addresses).

use std::net::IpAddr;

use wasmparser::{Encoding, Parser, Payload, Validator, WasmFeatures};

use crate::error::{LadderError, Result};
use crate::limits::{MAX_URL_BYTES, MAX_WASM_BYTES};

/// Decides whether an uploaded WASM binary may be registered as a bot.
pub trait BotValidator: Send + Sync + std::fmt::Debug {
    fn validate_wasm(&self, bytes: &[u8]) -> Result<()>;
}

/// A structural check until the sandbox's instantiating check replaces it: size
/// cap, a valid WebAssembly *component* (not a core module), and an export named
/// `decide` somewhere in it (the `duel:bot` world's export).
#[derive(Clone, Copy, Debug, Default)]
pub struct StructuralValidator;

impl BotValidator for StructuralValidator {
    fn validate_wasm(&self, bytes: &[u8]) -> Result<()> {
        if bytes.len() > MAX_WASM_BYTES {
            return Err(LadderError::BotRejected(format!(
                "component is {} bytes, more than the {MAX_WASM_BYTES}-byte limit",
                bytes.len()
            )));
        }
        let mut validator = Validator::new_with_features(WasmFeatures::all());
        validator.validate_all(bytes).map_err(|error| {
            LadderError::BotRejected(format!("not valid WebAssembly: {}", error.message()))
        })?;
        let mut is_component = false;
        let mut exports_decide = false;
        for payload in Parser::new(0).parse_all(bytes) {
            let payload = payload.map_err(|error| {
                LadderError::BotRejected(format!("unreadable: {}", error.message()))
            })?;
            match payload {
                Payload::Version {
                    encoding: Encoding::Component,
                    ..
                } => is_component = true,
                Payload::ComponentExportSection(reader) => {
                    for export in reader {
                        let export = export.map_err(|error| {
                            LadderError::BotRejected(format!("bad export: {}", error.message()))
                        })?;
                        if export.name.name == "decide" || export.name.name.ends_with("/decide") {
                            exports_decide = true;
                        }
                    }
                }
                Payload::ExportSection(reader) => {
                    for export in reader {
                        let export = export.map_err(|error| {
                            LadderError::BotRejected(format!("bad export: {}", error.message()))
                        })?;
                        if export.name == "decide" || export.name.ends_with("#decide") {
                            exports_decide = true;
                        }
                    }
                }
                _ => {}
            }
        }
        if !is_component {
            return Err(LadderError::BotRejected(
                "a core WebAssembly module, not a component of the duel:bot world".to_owned(),
            ));
        }
        if !exports_decide {
            return Err(LadderError::BotRejected(
                "the component exports no `decide`".to_owned(),
            ));
        }
        Ok(())
    }
}

/// Checks an endpoint URL: scheme, host, and unless `allow_private` (local
/// ladders, tests) no loopback, private, link-local or unspecified address.
/// Host names are checked again when a match resolves them.
pub fn check_endpoint_url(url: &str, allow_private: bool) -> Result<()> {
    if url.len() > MAX_URL_BYTES {
        return Err(LadderError::BotRejected(format!(
            "endpoint URL longer than {MAX_URL_BYTES} bytes"
        )));
    }
    let rest = ["grpc://", "http://", "https://"]
        .iter()
        .find_map(|scheme| url.strip_prefix(scheme))
        .ok_or_else(|| {
            LadderError::BotRejected(format!(
                "endpoint {url:?} must start with grpc://, http:// or https://"
            ))
        })?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    let host = if let Some(bracketed) = host_port.strip_prefix('[') {
        bracketed.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    if host.is_empty() {
        return Err(LadderError::BotRejected(format!(
            "endpoint {url:?} has no host"
        )));
    }
    if allow_private {
        return Ok(());
    }
    let lowered = host.to_ascii_lowercase();
    if lowered == "localhost" || lowered.ends_with(".localhost") {
        return Err(private_refused(url));
    }
    if let Ok(address) = host.parse::<IpAddr>()
        && !is_public(address)
    {
        return Err(private_refused(url));
    }
    Ok(())
}

fn private_refused(url: &str) -> LadderError {
    LadderError::BotRejected(format!(
        "endpoint {url:?} is a loopback, private or link-local address (the operator may allow them with --allow-private-endpoints)"
    ))
}

/// Whether an address is reachable on the public internet.
pub fn is_public(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => {
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                // 100.64.0.0/10, carrier-grade NAT.
                || (v4.octets()[0] == 100 && (v4.octets()[1] & 0xc0) == 64))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                // fc00::/7 unique local, fe80::/10 link-local.
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80)
        }
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
    }

    #[test]
    fn refuses_core_modules_and_garbage() {
        let validator = StructuralValidator;
        assert!(validator.validate_wasm(b"not wasm").is_err());
        // The smallest core module: magic and version 1.
        let core = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
        let message = validator
            .validate_wasm(&core)
            .expect_err("core module")
            .to_string();
        assert!(message.contains("not a component"), "{message}");
        // The smallest component: magic, version 0x0d, layer 1.
        let component = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
        let message = validator
            .validate_wasm(&component)
            .expect_err("no decide")
            .to_string();
        assert!(message.contains("exports no `decide`"), "{message}");
    }
}
