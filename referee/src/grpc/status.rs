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
            ServiceError::Model(ModelError::NotDeciding) => Code::PermissionDenied,
            ServiceError::Model(ModelError::Cut) => Code::DeadlineExceeded,
        };
        Status::new(code, message)
    }
}

/// Answers `INVALID_ARGUMENT` where tonic answers `INTERNAL` for a request
/// body that does not decode: a protobuf that does not parse (a string field
/// that is not UTF-8 included), an empty body, or a frame cut short. A client
/// sent those, so the request is malformed, not the server broken. tonic
/// decodes before any handler or interceptor of ours runs and has no hook for
/// the code, so the wrapper rewrites the status of the trailers-only answer
/// tonic gives when a unary request fails to decode (every `duel.v1` request is
/// unary). The messages matched are tonic's and prost's own; the table test in
/// `referee/tests/serve.rs` fails if a tonic upgrade changes them. A frame with
/// a bad compression flag stays `INTERNAL`, as the gRPC spec requires.
#[derive(Clone, Debug)]
pub struct MalformedAsInvalid<S> {
    inner: S,
}

impl<S> MalformedAsInvalid<S> {
    pub fn new(inner: S) -> MalformedAsInvalid<S> {
        MalformedAsInvalid { inner }
    }
}

/// Whether a status is tonic's or prost's refusal of a request body that
/// does not decode.
pub fn is_request_decode_failure(status: &Status) -> bool {
    status.code() == Code::Internal
        && (status
            .message()
            .starts_with("failed to decode Protobuf message")
            || status.message() == "Missing request message."
            || status.message() == "Unexpected EOF decoding stream.")
}

type HttpRequest = tonic::codegen::http::Request<tonic::body::Body>;
type HttpResponse = tonic::codegen::http::Response<tonic::body::Body>;

impl<S> tower_service::Service<HttpRequest> for MalformedAsInvalid<S>
where
    S: tower_service::Service<
            HttpRequest,
            Response = HttpResponse,
            Error = std::convert::Infallible,
        > + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = HttpResponse;
    type Error = std::convert::Infallible;
    type Future = tonic::codegen::BoxFuture<HttpResponse, std::convert::Infallible>;

    fn poll_ready(
        &mut self,
        context: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(context)
    }

    fn call(&mut self, request: HttpRequest) -> Self::Future {
        let answer = self.inner.call(request);
        Box::pin(async move {
            let mut response = answer.await?;
            let malformed = Status::from_header_map(response.headers())
                .is_some_and(|status| is_request_decode_failure(&status));
            if malformed {
                response.headers_mut().insert(
                    "grpc-status",
                    tonic::codegen::http::HeaderValue::from(Code::InvalidArgument as i32),
                );
            }
            Ok(response)
        })
    }
}

impl<S: tonic::server::NamedService> tonic::server::NamedService for MalformedAsInvalid<S> {
    const NAME: &'static str = S::NAME;
}
