//! The ladder service: the permission-checked facade over the store
//! ([`ladder::Ladder`]), upload and endpoint validation, the workers that
//! claim matches and play them through the referee library, the
//! `duel.v1.Ladder` gRPC service behind its gate, `/metrics`, and `ladder
//! serve`'s wiring of them.
//!
//! The rules live in `duel-ladder-core` and the SQL in `duel-ladder-store`;
//! they are re-exported here under the names the rest of the project uses
//! (`duel_ladder::ledger`, `duel_ladder::store`, …). The public site and
//! Duel TV are `duel-ladder-site`, mounted by the CLI, so a page's change
//! never rebuilds this crate.
//!
//! Start reading at [`ladder::Ladder`] (who may do what), then [`worker`]
//! (claim, run, settle).

pub mod gate;
pub mod grpc;
pub mod ladder;
pub mod limits;
pub mod metrics;
pub mod serve;
pub mod validate;
pub mod worker;

pub use duel_ladder_core::{auth, clock, ledger, matchmaker, model, profile, rating, reveal};
pub use duel_ladder_store as store;
pub use duel_ladder_store::{LadderError, Result, Store, error};
