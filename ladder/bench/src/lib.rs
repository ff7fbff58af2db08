//! The ladder's benchmarks, apart from the crates they measure:
//! [`bench`] (`ladder bench`: ranked matches settled per second against the
//! referee alone) and [`bench_site`] (`ladder bench-site`: a synthetic ladder
//! seeded in SQL, and the public site under a bounded load over loopback).
//! Nothing here ships in a server.

pub mod bench;
pub mod bench_site;
pub mod error;
pub mod limits;

pub use error::{BenchError, Result};
