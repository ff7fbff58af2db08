//! The one place where errors of the gRPC services become status codes.

use tonic::{Code, Status};

use crate::credentials::CredentialError;
use crate::error::RefereeError;
use crate::meter::ModelError;

/// Everything a `duel.v1` handler can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("{0}")]
    InvalidArgument(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    NotFinished(String),
    /// A bound was reached (concurrent matches).
    #[error("{0}")]
    Busy(String),
    #[error("the referee is shutting down")]
    ShuttingDown,
    #[error("{0}")]
    Unauthenticated(String),
    #[error(transparent)]
    Credential(#[from] CredentialError),
    #[error(transparent)]
    Referee(#[from] RefereeError),
    #[error(transparent)]
    Model(#[from] ModelError),
}

impl From<ServiceError> for Status {
    fn from(error: ServiceError) -> Status {
        let message = error.to_string();
        let code = match error {
            ServiceError::InvalidArgument(_) => Code::InvalidArgument,
            ServiceError::NotFound(_) => Code::NotFound,
            ServiceError::NotFinished(_) => Code::FailedPrecondition,
            ServiceError::Busy(_) => Code::ResourceExhausted,
            ServiceError::ShuttingDown => Code::Unavailable,
            ServiceError::Unauthenticated(_) => Code::Unauthenticated,
            ServiceError::Credential(CredentialError::Unknown) => Code::Unauthenticated,
            ServiceError::Credential(CredentialError::RateLimited { .. }) => {
                Code::ResourceExhausted
            }
            ServiceError::Referee(RefereeError::Spec(_)) => Code::InvalidArgument,
            ServiceError::Referee(RefereeError::Config(_)) => Code::InvalidArgument,
            ServiceError::Referee(RefereeError::BotFile { .. }) => Code::InvalidArgument,
            ServiceError::Referee(RefereeError::Component { .. }) => Code::InvalidArgument,
            // The caller named an endpoint that does not answer Hello: a state
            // of the world the request depends on, not a malformed request.
            ServiceError::Referee(RefereeError::Unreachable { .. }) => Code::FailedPrecondition,
            ServiceError::Referee(RefereeError::AddressRefused { .. }) => Code::PermissionDenied,
            // The machine's fault, not the request's: a retry elsewhere may work.
            ServiceError::Referee(RefereeError::Sandbox(_)) => Code::Unavailable,
            ServiceError::Referee(RefereeError::Runtime(_)) => Code::Unavailable,
            ServiceError::Referee(RefereeError::Bind { .. }) => Code::Internal,
            ServiceError::Referee(RefereeError::Replay(_)) => Code::Internal,
            ServiceError::Referee(RefereeError::Serve(_)) => Code::Internal,
            ServiceError::Referee(RefereeError::Live(_)) => Code::Internal,
            ServiceError::Referee(RefereeError::Fetch(_)) => Code::Unavailable,
            ServiceError::Model(ModelError::BudgetExhausted { .. }) => Code::ResourceExhausted,
            ServiceError::Model(ModelError::Unavailable(_)) => Code::Unavailable,
            ServiceError::Model(ModelError::Invalid(_)) => Code::InvalidArgument,
            ServiceError::Model(ModelError::ModelNotFound(_)) => Code::NotFound,
            ServiceError::Model(ModelError::TooManyCalls) => Code::ResourceExhausted,
            ServiceError::Model(ModelError::NotDeciding) => Code::PermissionDenied,
            ServiceError::Model(ModelError::Cut) => Code::DeadlineExceeded,
        };
        if code == Code::Internal {
            // The server's own failure: its text (paths, I/O errors) stays in
            // the operator's log, found again by the id the caller is given.
            return Status::internal(duel_plumbing::reply::internal("internal error", &message));
        }
        Status::new(code, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_errors_reach_callers_as_a_correlation_id_only() {
        let error = ServiceError::Referee(RefereeError::Serve(
            "cannot write /var/lib/duel/replays/x.json: disk full".to_owned(),
        ));
        let status = Status::from(error);
        assert_eq!(status.code(), Code::Internal);
        assert!(
            status
                .message()
                .starts_with("internal error (correlation id "),
            "{status:?}"
        );
        assert!(!status.message().contains("/var/lib"), "{status:?}");
        let refused = Status::from(ServiceError::InvalidArgument("bad clock".to_owned()));
        assert_eq!(refused.message(), "bad clock");
    }
}
