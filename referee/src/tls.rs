//! Trust for the referee's outgoing TLS (an `https://` model URL, `grpcs://` or
//! `https://` endpoint bots): the system's roots, plus the PEM certificates in
//! the file named by `DUEL_EXTRA_CA` (a private CA, or a self-signed server).

use std::io::Read;

use crate::error::RefereeError;
use crate::limits::MAX_CA_FILE_BYTES;

/// The environment variable naming a PEM file of extra trusted certificates.
pub const EXTRA_CA_ENV: &str = "DUEL_EXTRA_CA";

/// The PEM text of the extra trusted certificates, when `DUEL_EXTRA_CA` names a
/// file. Read when a client is set up (a gateway, an endpoint bot), not per call.
pub fn extra_ca_pem() -> Result<Option<Vec<u8>>, RefereeError> {
    let Some(path) = std::env::var_os(EXTRA_CA_ENV).filter(|value| !value.is_empty()) else {
        return Ok(None);
    };
    let unreadable = |error: std::io::Error| {
        RefereeError::Config(format!(
            "{EXTRA_CA_ENV}={}: cannot read it: {error}",
            path.to_string_lossy()
        ))
    };
    let file = std::fs::File::open(&path).map_err(unreadable)?;
    let mut pem = Vec::new();
    file.take(MAX_CA_FILE_BYTES + 1)
        .read_to_end(&mut pem)
        .map_err(unreadable)?;
    if pem.len() as u64 > MAX_CA_FILE_BYTES {
        return Err(RefereeError::Config(format!(
            "{EXTRA_CA_ENV}={}: larger than {MAX_CA_FILE_BYTES} bytes",
            path.to_string_lossy()
        )));
    }
    if !pem
        .windows(27)
        .any(|window| window == b"-----BEGIN CERTIFICATE-----")
    {
        return Err(RefereeError::Config(format!(
            "{EXTRA_CA_ENV}={}: no PEM certificate in it",
            path.to_string_lossy()
        )));
    }
    Ok(Some(pem))
}
