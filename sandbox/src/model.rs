//! The model seam: how a bot's `model` calls reach the referee's metered
//! gateway. The sandbox only forwards; counting tokens is the referee's job.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// One chat message, as the bot sent it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub role: String,
    pub content: String,
}

/// One model call: which model ("" for the catalogue's default), the
/// conversation, and the most completion tokens wanted (0: all that is left).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelCall {
    pub model: String,
    pub messages: Vec<Message>,
    pub max_tokens: u32,
}

/// A metered answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelAnswer {
    pub text: String,
    /// The catalogue name of the model that answered.
    pub model: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub budget_left_tokens: u64,
}

/// Why a model call gave no completion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelError {
    /// The budget is spent, or this prompt does not fit in what is left.
    BudgetExhausted,
    /// No model is configured or the gateway failed; the text says why.
    Unavailable(String),
    /// The call was refused as made (an unknown model, no messages, too
    /// large); the text says why. `duel:bot@1.0.0` bots see it as
    /// `unavailable`, the only other refusal that world has.
    Invalid(String),
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::BudgetExhausted => f.write_str("token budget exhausted"),
            ModelError::Unavailable(why) => write!(f, "model unavailable: {why}"),
            ModelError::Invalid(why) => write!(f, "invalid model call: {why}"),
        }
    }
}

impl std::error::Error for ModelError {}

/// A boxed future, so that [`ModelPort`] stays object safe.
pub type ModelFuture<'a> =
    Pin<Box<dyn Future<Output = Result<ModelAnswer, ModelError>> + Send + 'a>>;

/// Implemented by the referee with its token meter. One port per bot per match.
pub trait ModelPort: Send + Sync + 'static {
    /// Completes one call, metered.
    fn complete(&self, call: ModelCall) -> ModelFuture<'_>;

    /// The names of the models a call may name.
    fn models(&self) -> Vec<String>;
}

/// The port used until a model endpoint is configured: every call is refused as
/// unavailable, and the bot must decide without it.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoModel;

impl ModelPort for NoModel {
    fn complete(&self, _call: ModelCall) -> ModelFuture<'_> {
        Box::pin(async { Err(ModelError::Unavailable("no model is configured".into())) })
    }

    fn models(&self) -> Vec<String> {
        Vec::new()
    }
}
