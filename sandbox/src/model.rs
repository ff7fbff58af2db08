//! The model seam: how a bot's `model.complete` calls reach the referee's metered
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

/// Why a model call gave no completion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelError {
    /// The budget is spent, or this prompt does not fit in what is left.
    BudgetExhausted,
    /// No model is configured or the gateway failed; the text says why.
    Unavailable(String),
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::BudgetExhausted => f.write_str("token budget exhausted"),
            ModelError::Unavailable(why) => write!(f, "model unavailable: {why}"),
        }
    }
}

impl std::error::Error for ModelError {}

/// A boxed future, so that [`ModelPort`] stays object safe.
pub type ModelFuture<'a> = Pin<Box<dyn Future<Output = Result<String, ModelError>> + Send + 'a>>;

/// Implemented by the referee with its token meter. One port per bot per match.
pub trait ModelPort: Send + Sync + 'static {
    /// Completes `messages` with at most `max_tokens` completion tokens.
    fn complete(&self, messages: Vec<Message>, max_tokens: u32) -> ModelFuture<'_>;
}

/// The port used until a model endpoint is configured: every call is refused as
/// unavailable, and the bot must decide without it.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoModel;

impl ModelPort for NoModel {
    fn complete(&self, _messages: Vec<Message>, _max_tokens: u32) -> ModelFuture<'_> {
        Box::pin(async { Err(ModelError::Unavailable("no model is configured".into())) })
    }
}
