//! Shared helpers of the sandbox tests: the example bots (built once by
//! `scripts/build-bots`), observations and a small match loop.
#![allow(dead_code, clippy::unwrap_used)]

pub mod handmade;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use duel_rules::{
    Action, MatchState, Observation, Ruleset, Side, Source, TapeEntry, TapeSide, WeightClass,
};
use duel_sandbox::{BotContext, BotInstance, LoadedBot, NoModel, Sandbox, SandboxConfig};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The folder of built bots. Runs `scripts/build-bots` once per test process; the
/// script serialises concurrent runs with a lock and rebuilds only what changed.
pub fn bots_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let repo = repo();
        let out = repo.join("target").join("bots");
        let output = Command::new(repo.join("scripts").join("build-bots"))
            .env("BOTS_OUT", &out)
            .output()
            .expect("run scripts/build-bots");
        assert!(
            output.status.success(),
            "scripts/build-bots failed:\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        out
    })
}

pub fn bot_bytes(name: &str) -> Vec<u8> {
    let path = bots_dir().join(format!("{name}.wasm"));
    std::fs::read(&path).unwrap_or_else(|err| panic!("read {}: {err}", path.display()))
}

pub fn load(sandbox: &Sandbox, name: &str) -> LoadedBot {
    sandbox
        .load(&bot_bytes(name))
        .unwrap_or_else(|err| panic!("load {name}: {err}"))
}

/// A sandbox sharing one disk cache with every test (compiled once per engine
/// configuration), unless the config names its own.
pub fn sandbox(mut config: SandboxConfig) -> Sandbox {
    if config.disk_cache_dir.is_none() {
        config.disk_cache_dir = Some(repo().join("target").join("test-artifacts"));
    }
    Sandbox::new(config).unwrap()
}

pub fn instance(bot: &LoadedBot, match_id: &str, seed: u64, side: Side) -> BotInstance {
    bot.instantiate(
        BotContext {
            match_id: match_id.to_owned(),
            seed,
            side,
        },
        Arc::new(NoModel),
    )
}

/// The first decision of a match.
pub fn first_observation<'a>(match_id: &'a str, state: &MatchState) -> Observation<'a> {
    Observation::new(state, Side::A, match_id, WeightClass::Middle, 64_000, &[])
}

/// A match in progress, to ask decisions from.
pub struct Bout {
    pub match_id: String,
    pub state: MatchState,
    pub tape: Vec<TapeEntry>,
}

impl Bout {
    pub fn new(match_id: &str) -> Bout {
        Bout {
            match_id: match_id.to_owned(),
            state: MatchState::new(Ruleset::CURRENT),
            tape: Vec::new(),
        }
    }

    pub fn observation(&self, side: Side) -> Observation<'_> {
        Observation::new(
            &self.state,
            side,
            &self.match_id,
            WeightClass::Middle,
            64_000,
            &self.tape,
        )
    }

    /// Plays one exchange with the given choices (after substitution).
    pub fn play(&mut self, chosen: [(Action, Source); 2]) {
        let round = self.state.round();
        let step = self
            .state
            .play_exchange([chosen[0].0, chosen[1].0])
            .unwrap();
        let side = |i: usize| TapeSide {
            action: chosen[i].0,
            exhausted: step.outcome.sides[i].exhausted,
            source: chosen[i].1,
            damage_taken: step.outcome.sides[i].damage_taken,
        };
        self.tape.push(TapeEntry {
            round,
            exchange: step.exchange,
            sides: [side(0), side(1)],
        });
    }
}

/// Asks a bot, substituting the fallback BLOCK on failure as the referee does.
pub async fn ask(bot: &mut BotInstance, bout: &Bout, side: Side) -> (Action, Source) {
    match bot.decide(&bout.observation(side)).await {
        Ok(action) => (action, Source::Bot),
        Err(failure) => (Ruleset::CURRENT.fallback_action(), failure.cause.source()),
    }
}

/// Plays a whole match between two instances; returns the bout.
pub async fn play_match(a: &mut BotInstance, b: &mut BotInstance, match_id: &str) -> Bout {
    let mut bout = Bout::new(match_id);
    while !bout.state.is_over() {
        let choice_a = ask(a, &bout, Side::A).await;
        let choice_b = ask(b, &bout, Side::B).await;
        bout.play([choice_a, choice_b]);
    }
    bout
}
