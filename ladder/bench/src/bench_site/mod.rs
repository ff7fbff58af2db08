//! `ladder bench-site`: the public site's scale benchmark. [`seed`] writes a
//! large consistent ladder straight in SQL; [`load`] measures the site's pages
//! and JSON twins under a bounded load over loopback (docs/perf/site.md).

pub mod load;
pub mod seed;

pub use load::{LoadConfig, LoadReport, PageFigures, SseFigures, load};
pub use seed::{SeedReport, seed};
