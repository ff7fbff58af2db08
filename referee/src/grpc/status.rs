//! The one place where errors of the gRPC services become status codes.

use tonic::{Code, Status};

use crate::credentials::CredentialError;
use crate::error::{MatchError, RefereeError};
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

impl From<MatchError> for ServiceError {
    fn from(error: MatchError) -> ServiceError {
        ServiceError::Referee(RefereeError::Match(error))
    }
}

/// The code of a match that cannot be built or played.
fn match_code(error: &MatchError) -> Code {
    match error {
        MatchError::Spec(_)
        | MatchError::Config(_)
        | MatchError::BotFile { .. }
        | MatchError::Component { .. } => Code::InvalidArgument,
        MatchError::Gateway(duel_gateway::GatewayError::Config(_)) => Code::InvalidArgument,
        // The caller named an endpoint that does not answer Hello: a state
        // of the world the request depends on, not a malformed request.
        MatchError::Unreachable { .. } => Code::FailedPrecondition,
        MatchError::AddressRefused { .. } => Code::PermissionDenied,
        // The machine's fault, not the request's: a retry elsewhere may work.
        MatchError::Sandbox(_) | MatchError::Runtime(_) | MatchError::ShuttingDown => {
            Code::Unavailable
        }
        MatchError::Replay(_) | MatchError::Clock(_) | MatchError::Gateway(_) => Code::Internal,
    }
}

impl From<ServiceError> for Status {
    fn from(error: ServiceError) -> Status {
        let message = error.to_string();
        let code = match &error {
            ServiceError::InvalidArgument(_) => Code::InvalidArgument,
            ServiceError::NotFound(_) => Code::NotFound,
            ServiceError::NotFinished(_) => Code::FailedPrecondition,
            ServiceError::Busy(_) => Code::ResourceExhausted,
            ServiceError::ShuttingDown => Code::Unavailable,
            ServiceError::Unauthenticated(_) => Code::Unauthenticated,
            ServiceError::Credential(error) => {
                return duel_gateway::inference::credential_status(*error);
            }
            ServiceError::Referee(RefereeError::Match(error)) => match_code(error),
            ServiceError::Referee(RefereeError::Config(_)) => Code::InvalidArgument,
            ServiceError::Referee(RefereeError::Bind { .. }) => Code::Internal,
            ServiceError::Referee(RefereeError::Replay(_)) => Code::Internal,
            ServiceError::Referee(
                RefereeError::LocalAddr(_)
                | RefereeError::HostStart(_)
                | RefereeError::Reflection(_)
                | RefereeError::Stopped(_)
                | RefereeError::AlreadyLive { .. }
                | RefereeError::TooManyLive { .. }
                | RefereeError::HttpClient(_),
            ) => Code::Internal,
            ServiceError::Referee(RefereeError::Fetch { .. }) => Code::Unavailable,
            ServiceError::Model(error) => {
                return duel_gateway::inference::model_status(error.clone());
            }
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
        let error = ServiceError::Referee(RefereeError::LocalAddr(std::io::Error::other(
            "cannot write /var/lib/duel/replays/x.json: disk full",
        )));
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
