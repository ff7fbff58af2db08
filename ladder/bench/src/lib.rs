//! The ladder's benchmarks, apart from the crates they measure:
//! [`bench`] (`ladder bench`: ranked matches settled per second against the
//! referee alone) and [`bench_site`] (`ladder bench-site`: the public site
//! under a bounded load over loopback). Nothing here ships in a server.

pub mod bench;
pub mod bench_site;
pub mod limits;
