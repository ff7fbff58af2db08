//! The site's tests, one binary: Duel TV's broadcast in a real `ladder serve`
//! and in headless Chromium; transcripts after the reveal policy.

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

mod transcripts;
mod tv;
