//! The OpenAI-compatible face of the metered gateway, so that any LLM
//! library plays unchanged: `POST /v1/chat/completions` (whole and streamed)
//! and `GET /v1/models`, keyed by the per-decision Inference credential as
//! the bearer API key, served beside `duel.v1.Inference` on its listener
//! (HTTP/1.1 and HTTP/2). Calls go through the fighter's meter exactly as
//! `Complete` does: the same counting, caps, wall-clock cut and refusals;
//! `usage` is the referee's own count.
//!
//! A streamed answer is the metered answer sent as `chat.completion.chunk`
//! events once the meter has it: the referee must cut a completion to what is
//! left of the budget before any of it reaches the bot, and a call cut by the
//! wall clock must deliver nothing (its prompt is charged, no completion),
//! so nothing is forwarded while the upstream is still answering.
//!
//! Errors use OpenAI's JSON shape (`{"error": {"message", "type", "param",
//! "code"}}`) and carry `x-should-retry: false`, so a client does not spend
//! the bot's clock retrying what will be refused again. This module is the
//! one place that maps gateway errors to HTTP statuses.

use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::json;

use crate::credentials::{CredentialError, Credentials, Holder};
use crate::limits::{
    INLINE_PARSE_MAX_BYTES, MAX_CHAT_REQUEST_BYTES, MAX_PROMPT_MESSAGES, MAX_STOP_STRINGS,
};
use crate::meter::{ChatMessage, Completion, ModelError, ModelRequest, OpenCall};
use crate::models::{Sampling, recorded_name};

/// The header that tells OpenAI's clients not to retry a refusal.
const SHOULD_RETRY: &str = "x-should-retry";

/// The fighter's budget left after a call, on every answer.
pub const BUDGET_LEFT_HEADER: &str = "x-duel-budget-left-tokens";

/// The routes of the OpenAI-compatible face, for the gateway's listener.
pub fn router(credentials: Credentials) -> axum::Router {
    axum::Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/models", get(list_models))
        .route("/v1/models/{model}", get(show_model))
        .fallback(fallback)
        .with_state(credentials)
}

/// An error as OpenAI's clients read it.
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    kind: &'static str,
    code: Option<&'static str>,
    param: Option<&'static str>,
    message: String,
    /// Sent as `Retry-After` (a rate limit).
    retry_after_s: Option<u64>,
}

impl ApiError {
    fn unauthenticated(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::UNAUTHORIZED,
            kind: "invalid_request_error",
            code: Some("invalid_api_key"),
            param: None,
            message: message.into(),
            retry_after_s: None,
        }
    }
}

impl From<ModelError> for ApiError {
    fn from(error: ModelError) -> ApiError {
        let message = error.to_string();
        let (status, kind, code, param) = match error {
            ModelError::BudgetExhausted { .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                "insufficient_quota",
                Some("insufficient_quota"),
                None,
            ),
            ModelError::TooManyCalls => (
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_error",
                Some("too_many_calls"),
                None,
            ),
            ModelError::Unavailable(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "server_error",
                Some("model_unavailable"),
                None,
            ),
            ModelError::Invalid(_) => {
                (StatusCode::BAD_REQUEST, "invalid_request_error", None, None)
            }
            ModelError::ModelNotFound(_) => (
                StatusCode::NOT_FOUND,
                "invalid_request_error",
                Some("model_not_found"),
                Some("model"),
            ),
            ModelError::NotDeciding => (
                StatusCode::FORBIDDEN,
                "permission_error",
                Some("not_deciding"),
                None,
            ),
            ModelError::Cut => (
                StatusCode::REQUEST_TIMEOUT,
                "timeout_error",
                Some("decision_ended"),
                None,
            ),
        };
        ApiError {
            status,
            kind,
            code,
            param,
            message,
            retry_after_s: None,
        }
    }
}

impl From<CredentialError> for ApiError {
    fn from(error: CredentialError) -> ApiError {
        match error {
            CredentialError::Unknown => ApiError::unauthenticated(error.to_string()),
            CredentialError::RateLimited { retry_after_s } => ApiError {
                status: StatusCode::TOO_MANY_REQUESTS,
                kind: "rate_limit_error",
                code: Some("rate_limit_exceeded"),
                param: None,
                message: error.to_string(),
                retry_after_s: Some(retry_after_s),
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        }});
        let mut response = (self.status, axum::Json(body)).into_response();
        response
            .headers_mut()
            .insert(SHOULD_RETRY, HeaderValue::from_static("false"));
        if let Some(seconds) = self.retry_after_s {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// The connection's peer address, which tonic's server puts in every
/// request it serves (unknown tokens are counted per address).
fn client_of(extensions: &axum::http::Extensions) -> Option<std::net::IpAddr> {
    extensions
        .get::<tonic::transport::server::TcpConnectInfo>()
        .and_then(tonic::transport::server::TcpConnectInfo::remote_addr)
        .map(|address| address.ip())
}

/// The fighter and decision the bearer credential belongs to.
fn holder(
    credentials: &Credentials,
    headers: &HeaderMap,
    client: Option<std::net::IpAddr>,
) -> Result<Holder, ApiError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Err(ApiError::unauthenticated(
            "missing `Authorization: Bearer <inference_token>` (the DecideRequest's inference_token is the API key)",
        ));
    };
    let token = value
        .to_str()
        .ok()
        .and_then(|text| {
            text.strip_prefix("Bearer ")
                .or_else(|| text.strip_prefix("bearer "))
        })
        .map(str::trim)
        .ok_or_else(|| {
            ApiError::unauthenticated("the Authorization header is not `Bearer <token>`")
        })?;
    Ok(credentials.check_from(token, client.map(duel_plumbing::clients::client_key))?)
}

async fn list_models(
    State(credentials): State<Credentials>,
    extensions: axum::http::Extensions,
    headers: HeaderMap,
) -> Response {
    match holder(&credentials, &headers, client_of(&extensions)) {
        Ok(holder) => {
            let data: Vec<serde_json::Value> = holder
                .meter
                .gateway()
                .names()
                .iter()
                .map(|name| model_object(name))
                .collect();
            axum::Json(json!({"object": "list", "data": data})).into_response()
        }
        Err(error) => error.into_response(),
    }
}

async fn show_model(
    State(credentials): State<Credentials>,
    Path(model): Path<String>,
    extensions: axum::http::Extensions,
    headers: HeaderMap,
) -> Response {
    let holder = match holder(&credentials, &headers, client_of(&extensions)) {
        Ok(holder) => holder,
        Err(error) => return error.into_response(),
    };
    match holder
        .meter
        .gateway()
        .names()
        .iter()
        .find(|name| ***name == *model)
    {
        Some(name) => axum::Json(model_object(name)).into_response(),
        None => ApiError::from(ModelError::ModelNotFound(recorded_name(&model))).into_response(),
    }
}

fn model_object(name: &str) -> serde_json::Value {
    json!({"id": name, "object": "model", "created": 0, "owned_by": "duel"})
}

/// Anything else: gRPC calls of services not served here get gRPC's
/// UNIMPLEMENTED, other paths a JSON 404.
async fn fallback(request: Request) -> Response {
    let grpc = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/grpc"));
    if grpc {
        return tonic::Status::unimplemented("no such service here").into_http();
    }
    ApiError {
        status: StatusCode::NOT_FOUND,
        kind: "invalid_request_error",
        code: Some("unknown_url"),
        param: None,
        message: format!(
            "unknown path {}: this gateway serves POST /v1/chat/completions and GET /v1/models",
            recorded_name(request.uri().path())
        ),
        retry_after_s: None,
    }
    .into_response()
}

/// A chat-completions request, as much of it as the gateway uses: sampling
/// settings are forwarded; tools, response formats and logprobs are not
/// supported and are ignored.
#[derive(Debug, Deserialize)]
struct ChatRequest {
    #[serde(default)]
    model: Option<String>,
    messages: Vec<RequestMessage>,
    #[serde(default)]
    max_tokens: Option<u64>,
    #[serde(default)]
    max_completion_tokens: Option<u64>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    #[serde(default)]
    n: Option<u64>,
    #[serde(default)]
    temperature: Option<f64>,
    #[serde(default)]
    top_p: Option<f64>,
    #[serde(default)]
    seed: Option<i64>,
    #[serde(default)]
    stop: Option<Stop>,
}

#[derive(Debug, Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Stop {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Deserialize)]
struct RequestMessage {
    role: String,
    #[serde(default)]
    content: Option<Content>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

#[derive(Debug, Deserialize)]
struct ContentPart {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

/// What the gateway makes of a request: the metered call and how to answer.
#[derive(Debug)]
pub struct Parsed {
    pub request: ModelRequest,
    pub stream: bool,
    pub include_usage: bool,
}

/// A body the gateway cannot read as a chat completion: the model it named
/// (as sent; bounded before it is recorded), why, and OpenAI's `param` and
/// `code` for the refusal when it has them.
#[derive(Debug, PartialEq, Eq)]
pub struct Unreadable {
    pub model: String,
    pub message: String,
    pub param: Option<&'static str>,
    pub code: Option<&'static str>,
}

/// Reads a `POST /v1/chat/completions` body (public for its fuzz target).
/// The meter validates what every face sends (roles, sizes, stop strings);
/// this reads OpenAI's shape.
pub fn parse_request(body: &[u8]) -> Result<Parsed, Unreadable> {
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|error| Unreadable {
        model: String::new(),
        message: format!("the body is not JSON: {error}"),
        param: None,
        code: None,
    })?;
    // The model's name, when the body says one, is recorded with a refusal.
    let model = value
        .get("model")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let unreadable = |(message, param, code): Refused| Unreadable {
        model: model.clone(),
        message,
        param,
        code,
    };
    let request: ChatRequest = serde_json::from_value(value).map_err(|error| {
        unreadable((
            format!("not a chat completion request: {error}"),
            None,
            None,
        ))
    })?;
    read_request(request).map_err(unreadable)
}

/// Why a request was refused: the message, and OpenAI's `param` and `code`.
type Refused = (String, Option<&'static str>, Option<&'static str>);

/// The metered call a chat-completions request asks for.
fn read_request(request: ChatRequest) -> Result<Parsed, Refused> {
    if request.n.is_some_and(|n| n != 1) {
        return Err(("n must be 1".to_owned(), Some("n"), None));
    }
    if request.messages.len() > MAX_PROMPT_MESSAGES {
        return Err((
            format!("more than {MAX_PROMPT_MESSAGES} messages"),
            Some("messages"),
            None,
        ));
    }
    let max_tokens = read_completion_cap(request.max_completion_tokens, request.max_tokens)?;
    let messages = read_messages(request.messages)?;
    let stop = match request.stop {
        None => Vec::new(),
        Some(Stop::One(stop)) => vec![stop],
        Some(Stop::Many(stops)) => stops,
    };
    if stop.len() > MAX_STOP_STRINGS {
        return Err((
            format!("at most {MAX_STOP_STRINGS} stop strings"),
            Some("stop"),
            None,
        ));
    }
    for (name, value) in [
        ("temperature", request.temperature),
        ("top_p", request.top_p),
    ] {
        if value.is_some_and(|value| !value.is_finite()) {
            return Err((format!("{name} must be a number"), Some(name), None));
        }
    }
    Ok(Parsed {
        request: ModelRequest {
            model: request.model.unwrap_or_default(),
            messages,
            max_tokens,
            sampling: Sampling {
                temperature: request.temperature,
                top_p: request.top_p,
                seed: request.seed,
                stop,
            },
        },
        stream: request.stream.unwrap_or(false),
        include_usage: request
            .stream_options
            .and_then(|options| options.include_usage)
            .unwrap_or(false),
    })
}

/// The completion cap, read as OpenAI reads it: `max_tokens` is the older
/// name of `max_completion_tokens`; setting both is refused, and either is
/// at least 1 (0 is refused, never "no cap"). 0 here: no cap named.
fn read_completion_cap(
    max_completion_tokens: Option<u64>,
    max_tokens: Option<u64>,
) -> Result<u32, Refused> {
    let (param, wanted) = match (max_completion_tokens, max_tokens) {
        (Some(_), Some(_)) => {
            return Err((
                "Setting 'max_tokens' and 'max_completion_tokens' at the same time is not supported."
                    .to_owned(),
                Some("max_tokens"),
                Some("invalid_parameter_combination"),
            ));
        }
        (Some(wanted), None) => ("max_completion_tokens", wanted),
        (None, Some(wanted)) => ("max_tokens", wanted),
        (None, None) => return Ok(0),
    };
    if wanted == 0 {
        return Err((
            format!(
                "Invalid '{param}': integer below minimum value. Expected a value >= 1, but got 0 instead."
            ),
            Some(param),
            Some("integer_below_min_value"),
        ));
    }
    u32::try_from(wanted).map_err(|_| {
        (
            format!("{param} {wanted} is more than {}", u32::MAX),
            Some(param),
            Some("integer_above_max_value"),
        )
    })
}

/// The messages' texts (a string, or parts of `type: "text"`).
fn read_messages(messages: Vec<RequestMessage>) -> Result<Vec<ChatMessage>, Refused> {
    let mut read = Vec::with_capacity(messages.len());
    for (index, message) in messages.into_iter().enumerate() {
        let content = match message.content {
            None => String::new(),
            Some(Content::Text(text)) => text,
            Some(Content::Parts(parts)) => {
                let mut text = String::new();
                for part in parts {
                    match (part.kind.as_str(), part.text) {
                        ("text", Some(piece)) => text.push_str(&piece),
                        (other, _) => {
                            return Err((
                                format!(
                                    "messages[{index}]: only text content is supported, not {:?}",
                                    recorded_name(other)
                                ),
                                Some("messages"),
                                None,
                            ));
                        }
                    }
                }
                text
            }
        };
        read.push(ChatMessage::new(message.role, content));
    }
    Ok(read)
}

async fn chat_completions(State(credentials): State<Credentials>, request: Request) -> Response {
    // The credential is checked, and the call admitted into its decision,
    // before the body is read: a caller without one, or a call outside its
    // decision, cannot make the gateway buffer anything; a call admitted is
    // recorded however it ends.
    let client = client_of(request.extensions());
    let holder = match holder(&credentials, request.headers(), client) {
        Ok(holder) => holder,
        Err(error) => return error.into_response(),
    };
    let call = match holder.meter.open_call(holder.decision) {
        Ok(call) => call,
        Err(error) => return ApiError::from(error).into_response(),
    };
    let parsed = match read_call(&call, request.into_body()).await {
        Ok(parsed) => parsed,
        Err(refusal) => return refusal.into_response(),
    };
    let stream = parsed.stream;
    let completion = call.complete(parsed.request).await;
    match &completion {
        Ok(done) => tracing::info!(
            match_id = %holder.match_id,
            side = holder.side.name(),
            model = %done.model,
            prompt_tokens = done.prompt_tokens,
            completion_tokens = done.completion_tokens,
            budget_left_tokens = done.budget_left_tokens,
            stream,
            "model call (OpenAI face)"
        ),
        Err(error) => tracing::info!(
            match_id = %holder.match_id,
            side = holder.side.name(),
            %error,
            "model call refused (OpenAI face)"
        ),
    }
    match completion {
        Ok(completion) => answer(&completion, stream, parsed.include_usage),
        Err(error) => ApiError::from(error).into_response(),
    }
}

/// Reads an admitted call's body: up to [`MAX_CHAT_REQUEST_BYTES`], left
/// unread once its decision ends, parsed off the async threads when long
/// (they run both fighters' clocks). A body that is not a chat completion
/// is recorded with the call as `invalid`.
async fn read_call(call: &OpenCall<'_>, body: Body) -> Result<Parsed, ApiError> {
    let read = axum::body::to_bytes(body, MAX_CHAT_REQUEST_BYTES);
    let body = match tokio::select! {
        body = read => body,
        () = call.decision_ended() => return Err(ApiError::from(ModelError::Cut)),
    } {
        Ok(body) => body,
        Err(_) => {
            let error = call.refuse_unread(
                "",
                format!("the request body is larger than {MAX_CHAT_REQUEST_BYTES} bytes"),
            );
            return Err(ApiError::from(error));
        }
    };
    let parsed = if body.len() <= INLINE_PARSE_MAX_BYTES {
        parse_request(&body)
    } else {
        match tokio::task::spawn_blocking(move || parse_request(&body)).await {
            Ok(parsed) => parsed,
            // The runtime is shutting down: the call ends cut, as its
            // decision does.
            Err(_) => {
                let error = ModelError::Unavailable("the referee is shutting down".to_owned());
                return Err(ApiError::from(error));
            }
        }
    };
    parsed.map_err(|unreadable| {
        let error = call.refuse_unread(&unreadable.model, unreadable.message);
        let mut refusal = ApiError::from(error);
        if refusal.status == StatusCode::BAD_REQUEST {
            refusal.param = unreadable.param;
            refusal.code = unreadable.code;
        }
        refusal
    })
}

/// A completion as OpenAI answers it: whole, or streamed as
/// `chat.completion.chunk` events; the budget left in a header.
fn answer(completion: &Completion, stream: bool, include_usage: bool) -> Response {
    let mut response = if stream {
        streamed(completion, include_usage)
    } else {
        axum::Json(whole(completion)).into_response()
    };
    response.headers_mut().insert(
        BUDGET_LEFT_HEADER,
        HeaderValue::from(completion.budget_left_tokens),
    );
    response
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

fn completion_id() -> String {
    format!("chatcmpl-{}", uuid::Uuid::new_v4().simple())
}

fn finish_reason(completion: &Completion) -> &'static str {
    if completion.cut_at_cap {
        "length"
    } else {
        "stop"
    }
}

fn usage(completion: &Completion) -> serde_json::Value {
    json!({
        "prompt_tokens": completion.prompt_tokens,
        "completion_tokens": completion.completion_tokens,
        "total_tokens": completion.prompt_tokens + completion.completion_tokens,
    })
}

/// A whole `chat.completion`.
fn whole(completion: &Completion) -> serde_json::Value {
    json!({
        "id": completion_id(),
        "object": "chat.completion",
        "created": now_secs(),
        "model": &*completion.model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": completion.text, "refusal": null},
            "logprobs": null,
            "finish_reason": finish_reason(completion),
        }],
        "usage": usage(completion),
        "system_fingerprint": null,
    })
}

/// The pieces a streamed answer is sent in: each word with the spaces after
/// it (what a client renders as it arrives).
fn pieces(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut in_space = false;
    for (index, c) in text.char_indices() {
        if c.is_whitespace() {
            in_space = true;
        } else if in_space {
            pieces.push(&text[start..index]);
            start = index;
            in_space = false;
        }
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

/// The server-sent events of a streamed answer: a first chunk with the
/// role, one per piece of the text, one with the finish reason, the usage
/// chunk when asked for, then `[DONE]`.
fn streamed(completion: &Completion, include_usage: bool) -> Response {
    let id = completion_id();
    let created = now_secs();
    let model = &*completion.model;
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        let mut chunk = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": null,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        if include_usage && let Some(object) = chunk.as_object_mut() {
            object.insert("usage".to_owned(), serde_json::Value::Null);
        }
        chunk
    };
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    for piece in pieces(&completion.text) {
        events.push(chunk(json!({"content": piece}), None));
    }
    events.push(chunk(json!({}), Some(finish_reason(completion))));
    if include_usage {
        events.push(json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": null,
            "choices": [],
            "usage": usage(completion),
        }));
    }
    let mut frames: Vec<Result<Bytes, std::convert::Infallible>> = events
        .iter()
        .map(|event| Ok(Bytes::from(format!("data: {event}\n\n"))))
        .collect();
    frames.push(Ok(Bytes::from_static(b"data: [DONE]\n\n")));
    let mut response = Response::new(Body::from_stream(futures::stream::iter(frames)));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_text_parts_and_max_completion_tokens() {
        let parsed = parse_request(
            br#"{"model": "alpha", "max_completion_tokens": 7,
                 "messages": [{"role": "system", "content": "be brief"},
                              {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                              {"role": "assistant", "content": null}],
                 "stream": true, "stream_options": {"include_usage": true}, "stop": "\n"}"#,
        )
        .expect("parses");
        assert_eq!(parsed.request.model, "alpha");
        assert_eq!(parsed.request.max_tokens, 7);
        assert_eq!(
            parsed.request.messages,
            vec![
                ChatMessage::new("system", "be brief"),
                ChatMessage::new("user", "ab"),
                ChatMessage::new("assistant", ""),
            ]
        );
        assert!(parsed.stream && parsed.include_usage);
        assert_eq!(parsed.request.sampling.stop, vec!["\n".to_owned()]);
    }

    #[test]
    fn refuses_what_it_cannot_meter_and_keeps_the_model_named() {
        for (body, expected) in [
            (&br#"{"messages": "#[..], "not JSON"),
            (br#"{"model": "m", "messages": 3}"#, "not a chat completion request"),
            (br#"{"model": "m", "n": 2, "messages": []}"#, "n must be 1"),
            (
                br#"{"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]}"#,
                "only text content",
            ),
            (br#"{"model": "m", "max_tokens": 99999999999, "messages": []}"#, "max_tokens"),
        ] {
            let refused = parse_request(body).expect_err("refused");
            assert!(refused.message.contains(expected), "{refused:?}");
            if expected != "not JSON" {
                assert_eq!(refused.model, "m");
            }
        }
    }

    /// OpenAI's reading of the completion caps: `max_completion_tokens` or
    /// its older name `max_tokens`, never both, and never 0 (which used to
    /// mean "no cap" here: `max_completion_tokens: 0` beside `max_tokens: 3`
    /// gave an uncapped completion).
    #[test]
    fn completion_caps_are_read_as_openai_reads_them() {
        let messages = r#""messages": [{"role": "user", "content": "hi"}]"#;
        let cap = |fields: &str| {
            parse_request(format!("{{{messages}{fields}}}").as_bytes())
                .map(|parsed| parsed.request.max_tokens)
        };
        assert_eq!(cap(""), Ok(0), "no cap named: as many as are left");
        assert_eq!(cap(r#", "max_tokens": 3"#), Ok(3));
        assert_eq!(cap(r#", "max_completion_tokens": 5"#), Ok(5));
        assert_eq!(
            cap(r#", "max_completion_tokens": null, "max_tokens": 3"#),
            Ok(3)
        );
        let both = cap(r#", "max_completion_tokens": 0, "max_tokens": 3"#).expect_err("both");
        assert_eq!(
            (both.param, both.code),
            (Some("max_tokens"), Some("invalid_parameter_combination"))
        );
        for (fields, param) in [
            (r#", "max_tokens": 0"#, "max_tokens"),
            (r#", "max_completion_tokens": 0"#, "max_completion_tokens"),
        ] {
            let zero = cap(fields).expect_err("0 is below the minimum");
            assert_eq!(
                (zero.param, zero.code),
                (Some(param), Some("integer_below_min_value"))
            );
            assert!(
                zero.message.contains("Expected a value >= 1, but got 0"),
                "{}",
                zero.message
            );
        }
    }

    #[test]
    fn streamed_pieces_put_the_text_back_together() {
        for text in ["", "JAB", "JAB. The house  model\nplays JAB. ", "  leading"] {
            assert_eq!(pieces(text).concat(), text);
        }
        assert_eq!(pieces("a b c"), vec!["a ", "b ", "c"]);
    }
}
