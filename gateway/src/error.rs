//! The one error type of the gateway library: what can go wrong setting the
//! gateway up (a models file, a model's URL or key, extra TLS roots) or
//! serving it. A model call's own failures are [`crate::ModelError`], which
//! the faces answer bots with.

/// Non-exhaustive: the `serve` feature adds the listener's failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// A setting that cannot be used as given (a models file, a model URL or
    /// key, the extra CA file): one line that names it.
    #[error("{0}")]
    Config(String),
    /// The gateway's listener stopped on an error.
    #[cfg(feature = "serve")]
    #[error("Inference server stopped: {0}")]
    Serve(#[source] tonic::transport::Error),
}
