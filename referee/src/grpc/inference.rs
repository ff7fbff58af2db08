//! `duel.v1.Inference`: the metered model gateway for endpoint bots. The bearer
//! credential picks the fighter's meter; the meter does the rest.

use duel_proto::v1 as pb;
use duel_proto::v1::inference_server::Inference;
use tonic::{Request, Response, Status};

use crate::credentials::Credentials;
use crate::grpc::status::ServiceError;
use crate::meter::{ChatMessage, ModelRequest};

#[derive(Clone, Debug)]
pub struct InferenceService {
    credentials: Credentials,
}

impl InferenceService {
    pub fn new(credentials: Credentials) -> InferenceService {
        InferenceService { credentials }
    }
}

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

#[tonic::async_trait]
impl Inference for InferenceService {
    async fn complete(
        &self,
        request: Request<pb::CompleteRequest>,
    ) -> Result<Response<pb::CompleteResponse>, Status> {
        let Some(token) = bearer(&request) else {
            return Err(ServiceError::Unauthenticated(
                "missing `authorization: Bearer <inference_token>` metadata".to_owned(),
            )
            .into());
        };
        let client = request.remote_addr().map(|address| address.ip());
        let holder = self
            .credentials
            .check_from(token, client)
            .map_err(ServiceError::from)?;
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
        let completion = completion.map_err(ServiceError::from)?;
        Ok(Response::new(pb::CompleteResponse {
            text: completion.text,
            prompt_tokens: completion.prompt_tokens,
            completion_tokens: completion.completion_tokens,
            budget_left_tokens: completion.budget_left_tokens,
        }))
    }
}
