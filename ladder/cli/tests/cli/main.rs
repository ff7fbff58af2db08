//! The `ladder` binary's tests, one binary: `ladder serve` and `ladder
//! worker` as processes, the CLI against them, the API's limits, metrics,
//! public replays, voids and a bot attacking the model gateway, the site
//! (also in headless Chromium) and the benchmarks.

#[macro_use]
extern crate duel_ladder_testkit;

mod common {
    pub use crate::support as cli;
    pub use duel_ladder_testkit::*;

    /// The match host a ladder's workers and registry use, without a model.
    pub fn host() -> duel_referee::MatchHost {
        duel_referee::MatchHost::new(duel_ladder::worker::ladder_host_config(
            duel_referee::HostConfig::new(duel_referee::ModelGateway::disabled()),
            // The tests' endpoint bots listen on loopback.
            true,
        ))
    }
}

mod api_limits;
mod bench_cli;
mod bench_site;
mod cli_continuous;
mod cli_season;
mod clients;
mod cost_browser;
mod docker_script;
mod gateway_abuse;
mod headers;
mod metrics;
mod public_replays;
mod site;
mod site_browser;
pub mod support;
mod voids;
