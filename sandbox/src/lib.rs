//! The WASM bot host: runs components of the `duel:bot` WIT world, versions
//! 1.0.0 and 1.1.0 side by side (`wit/v1.0.0/`, `wit/v1.1.0/`), on wasmtime,
//! one sandboxed instance per bot per match.
//!
//! Architecture invariant: whatever a bot does — loop, allocate, recurse, panic,
//! sleep, spam its output, return garbage — the host does not panic and the
//! decision ends within the wall clock as an [`Action`](duel_rules::Action) or a
//! [`DecideFailure`] (`timeout` or `fault`). A bot sees nothing of the host: WASI is
//! closed (no files, sockets, environment), its randomness is seeded from the match
//! seed and its clocks are virtual, so a match re-plays from its replay.
//!
//! Entry points: [`Sandbox::new`] (one per process), [`Sandbox::load`] (validate and
//! compile an upload, cached by digest), [`LoadedBot::instantiate`] (one per bot per
//! match), [`BotInstance::decide`] and [`BotInstance::take_decision_log`] (what the
//! bot wrote while deciding). The referee reaches its token meter through
//! [`ModelPort`]. All limits are in [`limits`].

mod bindings;
mod cache;
mod error;
mod host;
pub mod limits;
mod model;
mod sandbox;
mod wasi;

pub use bindings::WorldVersion;
pub use error::{DecideFailure, FailureCause, SandboxError, timeout_reason};
pub use limits::{Allocation, SandboxConfig};
pub use model::{Message, ModelAnswer, ModelCall, ModelError, ModelFuture, ModelPort, NoModel};
pub use sandbox::{
    BotContext, BotInstance, CompileOrigin, DecisionLog, InstanceStats, LoadedBot, Sandbox,
    SandboxStats,
};

/// The newest `duel:bot` WIT world (1.1.0), as text: what a bot builder
/// (componentize-py, say) is given when it is not in a checkout of this project.
pub const WORLD_WIT: &str = include_str!("../wit/v1.1.0/world.wit");

/// The name of the world in [`WORLD_WIT`], as builders name it.
pub const WORLD_NAME: &str = "duel:bot/bot@1.1.0";

/// The first `duel:bot` world (1.0.0), as text: components built against it
/// keep running unchanged.
pub const WORLD_WIT_1_0_0: &str = include_str!("../wit/v1.0.0/world.wit");
