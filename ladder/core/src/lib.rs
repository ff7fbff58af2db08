//! The ladder's rules, as pure functions over plain data: the model (bots,
//! matches, seasons), the stakes ledger (transfers, the settlement plan and
//! what it changes, the invariant check), Glicko-2 ratings, matchmaking
//! waves, accounts and roles, and the clock seam.
//!
//! Architecture invariant: no I/O, no async, no database, no randomness (a
//! caller draws ids, seeds and token bytes and hands them in). The store
//! applies what these functions decide; it never decides a rule itself.

pub mod auth;
pub mod clock;
pub mod error;
pub mod failure;
pub mod ledger;
pub mod limits;
pub mod matchmaker;
pub mod model;
pub mod profile;
pub mod rating;
pub mod repeat;
pub mod reveal;
pub mod text;

pub use error::{CoreError, Result};
