//! Inference credentials: a random token per decision of one fighter of one
//! match, mapping a `duel.v1.Inference` call to that fighter's meter and to
//! that decision. A token exists only while its decision runs (its
//! [`Credential`] is dropped when the decision ends, answered or abandoned), and
//! the meter admits a call only while that very decision is open, so a call is
//! always charged to the decision whose token it carries: a fighter can never
//! spend the other fighter's budget or another match's, nor charge a late call
//! to a later decision.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use duel_rules::Side;

use crate::limits::CREDENTIAL_BYTES;
use crate::meter::FighterMeter;

/// Why a token was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    /// Never issued, or its decision is over.
    #[error("unknown or expired inference credential (a token is valid only during its decision)")]
    Unknown,
}

#[derive(Debug)]
struct Entry {
    meter: FighterMeter,
    match_id: String,
    side: Side,
    /// The meter's number of the decision this token was issued for.
    decision: u64,
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
    /// Pass to [`FighterMeter::complete_in_decision`].
    pub decision: u64,
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

    /// Opens a decision of one fighter of one match (its meter's decision
    /// window) and issues a fresh token for it, valid until the returned
    /// credential is dropped.
    pub fn issue(&self, match_id: &str, side: Side, meter: FighterMeter) -> Credential {
        let token = random_token();
        let decision = meter.open_window();
        let entry = Arc::new(Entry {
            meter,
            match_id: match_id.to_owned(),
            side,
            decision,
        });
        self.entries().insert(token.clone(), Arc::clone(&entry));
        Credential {
            token,
            entry,
            registry: self.clone(),
        }
    }

    /// The fighter and decision a token belongs to, if its decision runs.
    pub fn check(&self, token: &str) -> Result<Holder, CredentialError> {
        let entry = self
            .entries()
            .get(token)
            .cloned()
            .ok_or(CredentialError::Unknown)?;
        Ok(Holder {
            meter: entry.meter.clone(),
            match_id: entry.match_id.clone(),
            side: entry.side,
            decision: entry.decision,
        })
    }

    /// Live credentials (one per endpoint fighter being asked now).
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One issued token; dropping it revokes the token (at the end of its decision).
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
}

impl Drop for Credential {
    fn drop(&mut self) {
        self.registry.entries().remove(&self.token);
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
    fn a_token_works_only_for_its_decision() {
        let credentials = Credentials::new();
        let meter = ModelGateway::disabled().meter(10);
        let credential = credentials.issue("m1", Side::A, meter.clone());
        let token = credential.token().to_owned();
        assert_eq!(token.len(), CREDENTIAL_BYTES * 2);
        assert!(meter.window_open());
        let holder = credentials.check(&token).expect("deciding");
        assert_eq!((holder.match_id.as_str(), holder.side), ("m1", Side::A));
        meter.settle();
        assert!(!meter.window_open());
        drop(credential);
        assert_eq!(
            credentials.check(&token).err(),
            Some(CredentialError::Unknown)
        );
        assert!(credentials.is_empty());
        // The next decision has a token of its own, for its own decision.
        let next = credentials.issue("m1", Side::A, meter);
        assert_ne!(next.token(), token);
        assert_ne!(
            credentials.check(next.token()).expect("deciding").decision,
            holder.decision
        );
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
