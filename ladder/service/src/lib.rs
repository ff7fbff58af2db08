//! The ladder service: the permission-checked facade over the store
//! ([`ladder::Ladder`]), upload and endpoint validation, the use cases that
//! decide over the store's reads and writes (pairing waves in [`wave`], with
//! the match ids and seeds they draw, and the season fit's retries in
//! [`fit`]), the workers that claim matches and play them through the
//! referee library, the `duel.v1.Ladder` gRPC service behind its gate,
//! `/metrics`, and `ladder serve`'s wiring of them. Its errors are its own
//! ([`ServiceError`]), the store's among them.
//!
//! The rules live in `duel-ladder-core` and the SQL in `duel-ladder-store`;
//! they are re-exported here under the names the rest of the project uses
//! (`duel_ladder::ledger`, `duel_ladder::store`, …). The public site and
//! Duel TV are `duel-ladder-site`, mounted by the CLI, so a page's change
//! never rebuilds this crate.
//!
//! Start reading at [`ladder::Ladder`] (who may do what), then [`worker`]
//! (claim, run, settle).

pub mod error;
pub mod fit;
pub mod gate;
pub mod grpc;
pub mod ladder;
pub mod limits;
pub mod metrics;
pub mod serve;
pub mod validate;
pub mod wave;
pub mod worker;

pub use duel_ladder_core::{auth, clock, ledger, matchmaker, model, profile, rating, reveal};
pub use duel_ladder_store as store;
pub use duel_ladder_store::{LadderError, Store};
pub use error::{Result, ServiceError};
