//! The store's tests, one binary: the ledger's rules applied on SQLite and
//! PostgreSQL (transfers, settlement, the property test against the
//! in-memory book) and concurrent settlement.

#[macro_use]
extern crate duel_ladder_testkit;

mod common {
    pub use duel_ladder_testkit::*;
}

mod concurrent_settlement;
mod ledger;
mod ledger_property;
mod repeats;
