//! The store's tests, one binary: the ledger's rules applied on SQLite and
//! PostgreSQL (transfers, settlement, the property test against the
//! in-memory book), concurrent settlement, repeats and racing requests.

#[macro_use]
extern crate duel_ladder_testkit;

mod common {
    pub use duel_ladder_testkit::*;
}

mod concurrent_settlement;
mod cost;
mod kept;
mod ledger;
mod ledger_property;
mod logs;
mod races;
mod repeats;
mod transcripts;
