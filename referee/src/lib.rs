//! The referee: runs matches between bots under a ruleset and records them as
//! `duel-replay/1` replays.
//!
//! Every entry point (`referee local`, `referee serve`, tournaments, ladder
//! workers) plays through one [`host::MatchHost`] and its [`host::MatchSession`].
//! Start reading at [`runner`]: [`runner::run_match`] asks both fighters
//! concurrently through the [`Bot`] seam, [`record::MatchRecorder`] turns their
//! answers (or substitutions) into exchanges of the rules and lines of the replay.
//! Built-in bots live in [`builtin`]; bot specs are parsed in [`spec`].

pub mod address_policy;
pub mod arena;
pub mod bot;
pub mod bots;
pub mod builtin;
pub mod endpoint;
pub mod env;
pub mod error;
pub mod grpc;
pub mod host;
pub mod limits;
pub mod opening;
pub mod publish;
pub mod record;
pub mod runner;
pub mod spec;
pub mod terminal;
pub mod verify;
pub mod wasm;

// The gateway, where the referee's code and its users found it.
pub use duel_gateway::{credentials, meter, models, openai, tls, tokens};

pub use bot::{Bot, BotFailure, Decision, FailureCause};
pub use bots::{BotContext, InferenceLink};
pub use endpoint::EndpointPolicy;
pub use error::RefereeError;
pub use host::{
    BotMaker, Fighter, FighterSource, HostConfig, MatchHost, MatchObserver, MatchOptions,
    MatchSession, Played, ReplaySinks, WasmAllocation,
};
pub use meter::{ChatMessage, FighterMeter, ModelCall, ModelError, ModelRequest, Spent};
pub use models::{Catalogue, ModelConfig, ModelGateway};
pub use record::{MatchConfig, MatchRecorder};
pub use runner::{run_bare_match, run_match};
pub use spec::{BotSpec, BuiltinSpec};
