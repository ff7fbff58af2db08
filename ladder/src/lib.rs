//! The duel ladder: bots registry, queue and wave matchmaking per weight class,
//! Glicko-2 ratings per season, the double-entry stakes ledger, workers that run
//! matches through the referee library, and the `duel.v1.Ladder` service.
//!
//! Start reading at [`store::Store`] (every durable change is one transaction
//! there), [`ledger`] (the transfer model and its invariant check), and
//! [`worker`] (claim, run, settle). [`ladder::Ladder`] checks who may do what;
//! the gRPC service and the CLI are thin shells over it.

pub mod auth;
pub mod bench;
pub mod bench_site;
pub mod clock;
pub mod error;
pub mod gate;
pub mod grpc;
pub mod ladder;
pub mod ledger;
pub mod limits;
pub mod matchmaker;
pub mod metrics;
pub mod model;
pub mod rating;
pub mod serve;
pub mod site;
pub mod store;
pub mod tv;
pub mod validate;
pub mod worker;

pub use error::{LadderError, Result};
pub use store::Store;
