//! Playing many matches to compare bots: the parallel match pool, round-robin and
//! gauntlet tournaments, and the SPRT A/B test, with the statistics they report.

pub mod error;
pub mod pool;
pub mod sprt;
pub mod stats;
pub mod tournament;

pub use error::ArenaError;
