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
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use duel_rules::Side;
use governor::clock::Clock;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::limits::{
    BAD_CREDENTIALS_BURST_PER_CLIENT, BAD_CREDENTIALS_PER_SECOND_PER_CLIENT, CREDENTIAL_BYTES,
    MAX_CREDENTIAL_RATE_LIMITED_CLIENTS,
};
use crate::meter::FighterMeter;

/// Why a token was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    /// Never issued, or its decision is over.
    #[error("unknown or expired inference credential (a token is valid only during its decision)")]
    Unknown,
    /// The caller's address sent more unknown tokens than the gateway
    /// allows ([`BAD_CREDENTIALS_PER_SECOND_PER_CLIENT`]); no token from it
    /// is looked up until it may try again.
    #[error(
        "rate limit: too many unknown credentials from this address; try again in {retry_after_s} s"
    )]
    RateLimited { retry_after_s: u64 },
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
    bad_tries: Arc<BadTries>,
}

/// Unknown tokens per client address: a door that looks tokens up is rate
/// limited as the ladder's API is (per address, IPv6 per /64), counting
/// only the tokens it did not know, so a bot's own calls never use up its
/// allowance. Once an address has none left, none of its tokens is looked
/// up (right or wrong) until it may try again.
#[derive(Debug)]
struct BadTries {
    limiter: DefaultKeyedRateLimiter<IpAddr>,
    /// Addresses out of allowance, and when they may try again.
    shut_until: Mutex<HashMap<IpAddr, Instant>>,
}

impl Default for BadTries {
    fn default() -> BadTries {
        let per_second =
            NonZeroU32::new(BAD_CREDENTIALS_PER_SECOND_PER_CLIENT).unwrap_or(NonZeroU32::MIN);
        let burst = NonZeroU32::new(BAD_CREDENTIALS_BURST_PER_CLIENT).unwrap_or(NonZeroU32::MIN);
        BadTries::new(Quota::per_second(per_second).allow_burst(burst))
    }
}

impl BadTries {
    fn new(quota: Quota) -> BadTries {
        BadTries {
            limiter: RateLimiter::keyed(quota),
            shut_until: Mutex::new(HashMap::new()),
        }
    }

    fn shut(&self) -> MutexGuard<'_, HashMap<IpAddr, Instant>> {
        self.shut_until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Refuses a client whose allowance is spent, before any lookup.
    fn admit(&self, client: IpAddr) -> Result<(), CredentialError> {
        let mut shut = self.shut();
        match shut.get(&client) {
            Some(until) if *until > Instant::now() => Err(CredentialError::RateLimited {
                retry_after_s: retry_after_s(*until),
            }),
            Some(_) => {
                shut.remove(&client);
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Counts an unknown token; the error to answer with.
    fn missed(&self, client: IpAddr) -> CredentialError {
        let Err(not_until) = self.limiter.check_key(&client) else {
            return CredentialError::Unknown;
        };
        let wait = not_until.wait_time_from(governor::clock::DefaultClock::default().now());
        let until = Instant::now() + wait.max(Duration::from_millis(1));
        let mut shut = self.shut();
        if shut.len() >= MAX_CREDENTIAL_RATE_LIMITED_CLIENTS {
            let now = Instant::now();
            shut.retain(|_, until| *until > now);
        }
        if shut.len() < MAX_CREDENTIAL_RATE_LIMITED_CLIENTS {
            shut.insert(client, until);
        }
        if self.limiter.len() >= MAX_CREDENTIAL_RATE_LIMITED_CLIENTS {
            self.limiter.retain_recent();
        }
        CredentialError::RateLimited {
            retry_after_s: retry_after_s(until),
        }
    }
}

fn retry_after_s(until: Instant) -> u64 {
    until
        .saturating_duration_since(Instant::now())
        .as_secs_f64()
        .ceil()
        .max(1.0) as u64
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

    /// Credentials whose unknown tokens are allowed `quota` per client
    /// address instead of [`BAD_CREDENTIALS_PER_SECOND_PER_CLIENT`] after a
    /// burst of [`BAD_CREDENTIALS_BURST_PER_CLIENT`] (a test that must not
    /// race the refill on a loaded machine takes one a minute).
    pub fn with_bad_credentials_quota(quota: Quota) -> Credentials {
        Credentials {
            entries: Arc::default(),
            bad_tries: Arc::new(BadTries::new(quota)),
        }
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
        self.check_from(token, None)
    }

    /// [`Credentials::check`] for a caller whose allowance is kept under
    /// `client` (its peer's key: the IPv4 address or the IPv6 /64, as
    /// `duel_plumbing::clients::client_key` draws it): unknown tokens count
    /// against the allowance, and a key without allowance is refused before
    /// any lookup.
    pub fn check_from(
        &self,
        token: &str,
        client: Option<IpAddr>,
    ) -> Result<Holder, CredentialError> {
        if let Some(client) = client {
            self.bad_tries.admit(client)?;
        }
        let Some(entry) = self.entries().get(token).cloned() else {
            return Err(match client {
                Some(client) => self.bad_tries.missed(client),
                None => CredentialError::Unknown,
            });
        };
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

/// [`CREDENTIAL_BYTES`] random bytes, as hex: from the thread's ChaCha
/// generator, which the operating system seeds and reseeds, so that a
/// decision's token costs no system call (two UUIDs from the OS, two calls
/// a decision, before).
fn random_token() -> String {
    let mut bytes = [0u8; CREDENTIAL_BYTES];
    rand::fill(&mut bytes[..]);
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meter::ModelGateway;

    #[test]
    fn a_token_works_only_for_its_decision() {
        let credentials = Credentials::new();
        let meter = FighterMeter::new(ModelGateway::disabled(), 10);
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
        let meter = FighterMeter::new(ModelGateway::disabled(), 10);
        let first = credentials.issue("m", Side::A, meter.clone());
        let second = credentials.issue("m", Side::B, meter);
        assert_ne!(first.token(), second.token());
    }
}
