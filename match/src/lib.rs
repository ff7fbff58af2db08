//! The match engine: what any process that plays matches needs, and nothing
//! of a server or a command line. A [`host::MatchHost`] builds both fighters
//! of a match from their specs (built-in, WASM in the sandbox, endpoint bots
//! over gRPC) with their token meters, and its [`host::MatchSession`] plays
//! them: [`runner::run_match`] asks both fighters concurrently through the
//! [`Bot`] seam and [`record::MatchRecorder`] turns their answers (or
//! substitutions) into exchanges of the rules and lines of the replay.
//! Built-in bots live in [`builtin`]; bot specs are parsed in [`spec`];
//! openings in [`opening`]; a replay's built-in choices are verified in
//! [`verify`]. The `referee` binary, its servers, the arena and the ladder's
//! workers all build on this crate.

pub mod address_policy;
pub mod bot;
pub mod bots;
pub mod builtin;
pub mod convert;
pub mod endpoint;
pub mod env;
pub mod error;
pub mod fork;
pub mod host;
pub mod limits;
pub mod opening;
pub mod record;
pub mod runner;
pub mod spec;
pub mod terminal;
pub mod verify;
pub mod wasm;

pub use bot::{Bot, BotFailure, Decision, FailureCause};
pub use bots::{BotContext, InferenceLink};
pub use endpoint::EndpointPolicy;
pub use error::{BotFileReason, HelloFailure, MatchError};
pub use fork::ForkStart;
pub use host::{
    BotMaker, Fighter, FighterSource, HostConfig, MatchHost, MatchObserver, MatchOptions,
    MatchSession, Played, ReplaySinks, WasmAllocation,
};
pub use record::{MatchConfig, MatchRecorder};
pub use runner::{run_bare_match, run_match};
pub use spec::{BotSpec, BuiltinSpec};
