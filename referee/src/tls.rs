//! Trust for the referee's outgoing TLS (an `https://` model URL, `grpcs://` or
//! `https://` endpoint bots): the system's roots, plus extra PEM certificates
//! (a private CA, or a self-signed server) that the binary reads once at start
//! from the file named by `DUEL_EXTRA_CA` ([`crate::env`]).

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use crate::error::RefereeError;
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
    pub fn with_extra_ca_file(path: &Path, what: &str) -> Result<Trust, RefereeError> {
        let unreadable = |error: std::io::Error| {
            RefereeError::Config(format!(
                "{what}={}: cannot read it: {error}",
                path.display()
            ))
        };
        let file = std::fs::File::open(path).map_err(unreadable)?;
        let mut pem = Vec::new();
        file.take(MAX_CA_FILE_BYTES + 1)
            .read_to_end(&mut pem)
            .map_err(unreadable)?;
        if pem.len() as u64 > MAX_CA_FILE_BYTES {
            return Err(RefereeError::Config(format!(
                "{what}={}: larger than {MAX_CA_FILE_BYTES} bytes",
                path.display()
            )));
        }
        if !pem
            .windows(27)
            .any(|window| window == b"-----BEGIN CERTIFICATE-----")
        {
            return Err(RefereeError::Config(format!(
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
