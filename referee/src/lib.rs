//! The referee: runs matches between bots under a ruleset and records them as
//! `duel-replay/1` replays.
//!
//! Every entry point (`referee local`, `referee serve`, tournaments, ladder
//! workers) plays through one [`host::MatchHost`] and its [`host::MatchSession`].
//! Start reading at [`runner`]: [`runner::run_match`] asks both fighters
//! concurrently through the [`Bot`] seam, [`record::MatchRecorder`] turns their
//! answers (or substitutions) into exchanges of the rules and lines of the replay.
//! Built-in bots live in [`builtin`]; bot specs are parsed in [`spec`].

pub mod error;
pub mod grpc;
pub mod limits;
pub mod publish;

// The match engine and the gateway, where the referee's code and its users
// found them.
pub use duel_arena as arena;
pub use duel_gateway::{credentials, meter, models, openai, tls, tokens};
pub use duel_match::{
    address_policy, bot, bots, builtin, endpoint, env, fork, host, opening, record, runner, spec,
    terminal, verify, wasm,
};

pub use duel_gateway::{Catalogue, ModelConfig, ModelGateway};
pub use duel_gateway::{ChatMessage, FighterMeter, ModelCall, ModelError, ModelRequest, Spent};
pub use duel_match::{
    Bot, BotContext, BotFailure, BotMaker, BotSpec, BuiltinSpec, Decision, EndpointPolicy,
    FailureCause, Fighter, FighterSource, ForkStart, HostConfig, InferenceLink, MatchConfig,
    MatchError, MatchHost, MatchObserver, MatchOptions, MatchRecorder, MatchSession, Played,
    ReplaySinks, WasmAllocation, run_bare_match, run_match,
};
pub use error::RefereeError;
