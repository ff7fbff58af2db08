//! The service's tests, one binary: the facade's permissions, registration,
//! seasons, pairing waves and the season fit, workers and their leases,
//! continuous play and real bots (WASM, endpoints, a model-driven bot), on
//! SQLite and PostgreSQL.

#[macro_use]
extern crate duel_ladder_testkit;

mod common {
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

mod continuous_play;
mod entry_points;
mod real_bots;
mod registry;
mod season;
mod season_fit;
mod waves;
mod workers;
