//! The gateway's listener: `duel.v1.Inference` for endpoint bots over gRPC
//! and the OpenAI-compatible face over HTTP, served together
//! ([`gateway_routes`]). The bearer credential picks the fighter's meter; the
//! meter does the rest. This module is the one place where the gateway's
//! errors become gRPC status codes. The listener itself is the `serve`
//! feature's; the status mapping and the proto conversion are always here.

use duel_proto::v1 as pb;
use tonic::{Code, Request, Status};

use crate::credentials::CredentialError;
use crate::meter::{ChatMessage, ModelError};

#[cfg(feature = "serve")]
pub use serving::{InferenceService, gateway_routes, serve_inference, serve_inference_within};

/// The token of an `authorization: Bearer <token>` header.
pub fn bearer<T>(request: &Request<T>) -> Option<&str> {
    let value = request.metadata().get("authorization")?.to_str().ok()?;
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))?;
    Some(token.trim())
}

pub fn messages_from_proto(messages: Vec<pb::ChatMessage>) -> Vec<ChatMessage> {
    messages
        .into_iter()
        .map(|message| ChatMessage {
            role: message.role,
            content: message.content,
        })
        .collect()
}

/// A credential refused, as a gRPC status.
pub fn credential_status(error: CredentialError) -> Status {
    let code = match error {
        CredentialError::Unknown => Code::Unauthenticated,
        CredentialError::RateLimited { .. } => Code::ResourceExhausted,
    };
    Status::new(code, error.to_string())
}

/// A model call's failure, as a gRPC status.
pub fn model_status(error: ModelError) -> Status {
    let code = match error {
        ModelError::BudgetExhausted { .. } | ModelError::TooManyCalls => Code::ResourceExhausted,
        ModelError::Unavailable(_) => Code::Unavailable,
        ModelError::Invalid(_) => Code::InvalidArgument,
        ModelError::ModelNotFound(_) => Code::NotFound,
        ModelError::NotDeciding => Code::PermissionDenied,
        ModelError::Cut => Code::DeadlineExceeded,
    };
    Status::new(code, error.to_string())
}

#[cfg(feature = "serve")]
mod serving {
    use std::future::Future;

    use duel_plumbing::grpc_listen::{self, GrpcLimits};
    use duel_proto::v1 as pb;
    use duel_proto::v1::inference_server::{Inference, InferenceServer};
    use tokio::net::TcpListener;
    use tonic::{Request, Response, Status};

    use super::{bearer, credential_status, messages_from_proto, model_status};
    use crate::credentials::Credentials;
    use crate::error::GatewayError;
    use crate::limits::MAX_GRPC_MESSAGE_BYTES;
    use crate::meter::ModelRequest;

    #[derive(Clone, Debug)]
    pub struct InferenceService {
        credentials: Credentials,
    }

    impl InferenceService {
        pub fn new(credentials: Credentials) -> InferenceService {
            InferenceService { credentials }
        }
    }

    #[tonic::async_trait]
    impl Inference for InferenceService {
        async fn complete(
            &self,
            request: Request<pb::CompleteRequest>,
        ) -> Result<Response<pb::CompleteResponse>, Status> {
            let Some(token) = bearer(&request) else {
                return Err(Status::unauthenticated(
                    "missing `authorization: Bearer <inference_token>` metadata",
                ));
            };
            let client = request
                .remote_addr()
                .map(|address| duel_plumbing::clients::client_key(address.ip()));
            let holder = self
                .credentials
                .check_from(token, client)
                .map_err(credential_status)?;
            let request = request.into_inner();
            let completion = holder
                .meter
                .complete_in_decision(
                    holder.decision,
                    ModelRequest::new(messages_from_proto(request.messages), request.max_tokens),
                )
                .await;
            match &completion {
                Ok(done) => tracing::info!(
                    match_id = %holder.match_id,
                    side = holder.side.name(),
                    prompt_tokens = done.prompt_tokens,
                    completion_tokens = done.completion_tokens,
                    budget_left_tokens = done.budget_left_tokens,
                    "model call"
                ),
                Err(error) => {
                    tracing::info!(match_id = %holder.match_id, side = holder.side.name(), %error, "model call refused")
                }
            }
            let completion = completion.map_err(model_status)?;
            Ok(Response::new(pb::CompleteResponse {
                text: completion.text,
                prompt_tokens: completion.prompt_tokens,
                completion_tokens: completion.completion_tokens,
                budget_left_tokens: completion.budget_left_tokens,
            }))
        }
    }

    /// The metered gateway's routes for one listener: `duel.v1.Inference` over
    /// gRPC and its OpenAI-compatible face (`/v1/chat/completions`,
    /// `/v1/models`) over HTTP, both keyed by the per-decision credentials.
    /// Serve them with `accept_http1(true)` so LLM clients on HTTP/1.1 reach them.
    /// The OpenAI face's answers (JSON and event streams for bots, errors
    /// included) carry the security headers of every HTTP answer
    /// (`duel_plumbing::headers`), as the HTTP listeners' do.
    pub fn gateway_routes(credentials: Credentials) -> tonic::service::Routes {
        let inference = InferenceServer::new(InferenceService::new(credentials.clone()))
            .max_decoding_message_size(MAX_GRPC_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_GRPC_MESSAGE_BYTES);
        let openai = crate::openai::router(credentials).layer(axum::middleware::map_response(
            duel_plumbing::headers::security_headers,
        ));
        tonic::service::Routes::from(openai).add_service(inference)
    }

    /// Serves only the metered gateway ([`gateway_routes`]) on `listener` (for
    /// `referee local` with endpoint bots) under the default connection limits
    /// until `shutdown` resolves.
    pub async fn serve_inference(
        listener: TcpListener,
        credentials: Credentials,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), GatewayError> {
        serve_inference_within(listener, credentials, GrpcLimits::default(), shutdown).await
    }

    /// [`serve_inference`] under `limits` (ladder workers take them from flags).
    pub async fn serve_inference_within(
        listener: TcpListener,
        credentials: Credentials,
        limits: GrpcLimits,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), GatewayError> {
        limits
            .server()
            .add_routes(gateway_routes(credentials))
            .serve_with_incoming_shutdown(grpc_listen::incoming(listener, limits), shutdown)
            .await
            .map_err(GatewayError::Serve)
    }
}
