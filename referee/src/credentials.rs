//! Inference credentials: a random token per fighter per match that maps a
//! `duel.v1.Inference` call to that fighter's meter. A token is accepted only
//! while its fighter is being asked for a decision, and forgotten when the match
//! ends (its [`Credential`] is dropped), so a fighter can never spend the other
//! fighter's budget or another match's.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use duel_rules::Side;

use crate::limits::CREDENTIAL_BYTES;
use crate::meter::FighterMeter;

/// Why a token was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    /// Never issued, or its match is over.
    #[error("unknown or expired inference credential")]
    Unknown,
    /// Issued, but its fighter is not being asked right now.
    #[error("inference credential used while its fighter is not deciding")]
    NotDeciding,
}

#[derive(Debug)]
struct Entry {
    meter: FighterMeter,
    match_id: String,
    side: Side,
    /// Decisions in flight for this fighter (0 or 1 in practice).
    deciding: AtomicUsize,
}

/// Every live credential of a process. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Credentials {
    entries: Arc<Mutex<HashMap<String, Arc<Entry>>>>,
}

/// Who a token belongs to, once accepted.
#[derive(Clone, Debug)]
pub struct Holder {
    pub meter: FighterMeter,
    pub match_id: String,
    pub side: Side,
}

impl Credentials {
    pub fn new() -> Credentials {
        Credentials::default()
    }

    fn entries(&self) -> MutexGuard<'_, HashMap<String, Arc<Entry>>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Issues a fresh token for one fighter of one match.
    pub fn issue(&self, match_id: &str, side: Side, meter: FighterMeter) -> Credential {
        let token = random_token();
        let entry = Arc::new(Entry {
            meter,
            match_id: match_id.to_owned(),
            side,
            deciding: AtomicUsize::new(0),
        });
        self.entries().insert(token.clone(), Arc::clone(&entry));
        Credential {
            token,
            entry,
            registry: self.clone(),
        }
    }

    /// The fighter a token belongs to, if it is live and its fighter is deciding.
    pub fn check(&self, token: &str) -> Result<Holder, CredentialError> {
        let entry = self
            .entries()
            .get(token)
            .cloned()
            .ok_or(CredentialError::Unknown)?;
        if entry.deciding.load(Ordering::Acquire) == 0 {
            return Err(CredentialError::NotDeciding);
        }
        Ok(Holder {
            meter: entry.meter.clone(),
            match_id: entry.match_id.clone(),
            side: entry.side,
        })
    }

    /// Live credentials (two per running match with endpoint bots).
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One issued token; dropping it revokes the token.
pub struct Credential {
    token: String,
    entry: Arc<Entry>,
    registry: Credentials,
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credential")
            .field("match_id", &self.entry.match_id)
            .field("side", &self.entry.side)
            .finish_non_exhaustive()
    }
}

impl Credential {
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Opens the decision window: the token is accepted until the guard drops
    /// (the answer arrived, or the runner abandoned the decision at the clock).
    pub fn deciding(&self) -> DecidingGuard {
        self.entry.deciding.fetch_add(1, Ordering::AcqRel);
        DecidingGuard {
            entry: Arc::clone(&self.entry),
        }
    }
}

impl Drop for Credential {
    fn drop(&mut self) {
        self.registry.entries().remove(&self.token);
    }
}

/// Keeps a credential's decision window open while alive.
#[derive(Debug)]
pub struct DecidingGuard {
    entry: Arc<Entry>,
}

impl Drop for DecidingGuard {
    fn drop(&mut self) {
        self.entry.deciding.fetch_sub(1, Ordering::AcqRel);
    }
}

/// [`CREDENTIAL_BYTES`] bytes from the operating system's generator, as hex.
fn random_token() -> String {
    let mut text = String::with_capacity(CREDENTIAL_BYTES * 2);
    while text.len() < CREDENTIAL_BYTES * 2 {
        // UUID v4 draws 122 random bits from the OS generator; use its bytes.
        for byte in uuid::Uuid::new_v4().as_bytes() {
            text.push_str(&format!("{byte:02x}"));
        }
    }
    text.truncate(CREDENTIAL_BYTES * 2);
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meter::ModelGateway;

    #[test]
    fn a_token_works_only_while_deciding_and_until_dropped() {
        let credentials = Credentials::new();
        let credential = credentials.issue("m1", Side::A, ModelGateway::disabled().meter(10));
        let token = credential.token().to_owned();
        assert_eq!(token.len(), CREDENTIAL_BYTES * 2);
        assert_eq!(
            credentials.check(&token).err(),
            Some(CredentialError::NotDeciding)
        );
        let guard = credential.deciding();
        let holder = credentials.check(&token).expect("deciding");
        assert_eq!((holder.match_id.as_str(), holder.side), ("m1", Side::A));
        drop(guard);
        assert_eq!(
            credentials.check(&token).err(),
            Some(CredentialError::NotDeciding)
        );
        drop(credential);
        assert_eq!(
            credentials.check(&token).err(),
            Some(CredentialError::Unknown)
        );
        assert!(credentials.is_empty());
    }

    #[test]
    fn tokens_differ() {
        let credentials = Credentials::new();
        let meter = ModelGateway::disabled().meter(10);
        let first = credentials.issue("m", Side::A, meter.clone());
        let second = credentials.issue("m", Side::B, meter);
        assert_ne!(first.token(), second.token());
    }
}
