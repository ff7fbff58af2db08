//! Trust for the referee's outgoing TLS (an `https://` model URL, `grpcs://` or
//! `https://` endpoint bots): the system's roots, plus extra PEM certificates
//! (a private CA, or a self-signed server) that the binary reads once at start
//! from the file named by `DUEL_EXTRA_CA` ([`EXTRA_CA_ENV`]).

use std::path::Path;
use std::sync::Arc;

use crate::error::GatewayError;
use crate::limits::MAX_CA_FILE_BYTES;

/// The environment variable naming a PEM file of extra trusted certificates.
pub const EXTRA_CA_ENV: &str = "DUEL_EXTRA_CA";

/// What outgoing TLS connections trust. Cheap to clone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trust {
    extra_ca_pem: Option<Arc<[u8]>>,
}

impl Trust {
    /// The system's roots only.
    pub fn system() -> Trust {
        Trust::default()
    }

    /// The system's roots plus the PEM certificates of the file at `path`
    /// (`what` names where the path came from, for the error).
    pub fn with_extra_ca_file(path: &Path, what: &str) -> Result<Trust, GatewayError> {
        let pem =
            duel_files::read_regular_within(path, MAX_CA_FILE_BYTES, duel_files::READ_DEADLINE)
                .map_err(|error| GatewayError::Config(format!("{what}={error}")))?;
        if !pem
            .windows(27)
            .any(|window| window == b"-----BEGIN CERTIFICATE-----")
        {
            return Err(GatewayError::Config(format!(
                "{what}={}: no PEM certificate in it",
                path.display()
            )));
        }
        Ok(Trust {
            extra_ca_pem: Some(pem.into()),
        })
    }

    /// The extra certificates, PEM-encoded, if any.
    pub fn extra_ca_pem(&self) -> Option<&[u8]> {
        self.extra_ca_pem.as_deref()
    }
}
