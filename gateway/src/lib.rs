//! The metered model gateway: how a bot reaches a language model, whichever
//! face it uses (the WASM `model` import, `duel.v1.Inference`, the
//! OpenAI-compatible `/v1/chat/completions`). Every call goes through one
//! fighter's [`meter::FighterMeter`]: counted with `o200k_base`
//! ([`tokens`]), capped, forwarded to a model of the catalogue ([`models`]),
//! charged to the decision that made it and recorded with it. Per-decision
//! credentials ([`credentials`]) map a network call to its fighter; [`tls`]
//! holds what outgoing TLS trusts. No match is played here: the match engine
//! (`duel-match`) owns the meters it hands its bots.

pub mod credentials;
pub mod error;
pub mod inference;
pub mod limits;
pub mod meter;
pub mod models;
#[cfg(feature = "serve")]
pub mod openai;
pub mod tls;
pub mod tokens;

pub use credentials::{Credential, CredentialError, Credentials, Holder};
pub use error::GatewayError;
#[cfg(feature = "serve")]
pub use inference::{gateway_routes, serve_inference, serve_inference_within};
pub use meter::{
    CallText, ChatMessage, Completion, FighterMeter, ModelCall, ModelError, ModelRequest, Spent,
};
pub use models::{Catalogue, ModelConfig, ModelGateway, Sampling};
