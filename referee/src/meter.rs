//! The token meter and the model gateway: one seam that both the WASM `model`
//! import and `duel.v1.Inference` go through. It counts prompt and completion
//! tokens with tiktoken's `o200k_base` (RULES "Token budget", D-7), caps each
//! call's completion at what is left after the prompt, refuses a call whose
//! prompt alone does not fit (gassing the fighter out), and forwards the rest to
//! an OpenAI-compatible chat-completions endpoint.
//!
//! Every call belongs to the decision it was made in. [`FighterMeter::settle`]
//! ends a decision: a call still running then is cut (its prompt, forwarded
//! already, is charged; no completion reaches the bot), so what a decision spent
//! is final when it is recorded, even for a decision the runner abandoned at the
//! wall clock. An endpoint bot's meter also has a decision window
//! ([`FighterMeter::open_window`]): outside it, calls are refused.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use tiktoken_rs::CoreBPE;

use crate::env::MODEL_API_KEY_ENV;
use crate::error::RefereeError;
use crate::limits::{
    MAX_MODEL_RESPONSE_BYTES, MAX_PROMPT_BYTES, MAX_PROMPT_MESSAGES, MODEL_CALL_TIMEOUT,
};
use crate::tls::Trust;

/// The process-wide `o200k_base` tables: loading costs ~200 ms, so it happens
/// once per process (tiktoken-rs keeps a singleton).
fn encoder() -> &'static CoreBPE {
    tiktoken_rs::o200k_base_singleton()
}

/// Loads the tokenizer now, so the first metered call of a match does not pay
/// for it. The match host calls it once, before any match starts.
pub fn warm_up() {
    let _ = encoder().encode_ordinary("warm up");
}

/// [`count_prompt_tokens`] on the blocking pool: a prompt of megabytes takes a
/// second to count, and the async threads that count it also run both
/// fighters' clocks. Counting there would make the *other* fighter late.
async fn count_prompt_tokens_off_runtime(
    messages: Vec<ChatMessage>,
) -> Result<(Vec<ChatMessage>, u64), ModelError> {
    tokio::task::spawn_blocking(move || {
        let tokens = count_prompt_tokens(&messages);
        (messages, tokens)
    })
    .await
    // Counting cannot panic on any text: a join error means the runtime is
    // shutting down. Nothing was counted, so nothing is charged.
    .map_err(|_| ModelError::Unavailable("the referee is shutting down".to_owned()))
}

/// [`cut_to_tokens`] on the blocking pool, for the same reason.
async fn cut_to_tokens_off_runtime(text: String, cap_tokens: u64) -> (String, u64) {
    tokio::task::spawn_blocking(move || cut_to_tokens(text, cap_tokens))
        .await
        .unwrap_or((String::new(), 0))
}

/// Tokens of `text` under `o200k_base`. Special-token text is counted as plain
/// text: bot input never gets special meaning.
pub fn count_tokens(text: &str) -> u64 {
    encoder().encode_ordinary(text).len() as u64
}

/// The prompt's tokens: the sum over the message texts forwarded (roles and
/// message framing are not counted, D-7).
pub fn count_prompt_tokens(messages: &[ChatMessage]) -> u64 {
    messages
        .iter()
        .map(|message| count_tokens(&message.content))
        .sum()
}

/// One chat message, as forwarded to the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

impl ChatMessage {
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// Why a model call gave no completion.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The prompt alone does not fit what is left of the budget, or the budget
    /// is already spent: the fighter is gassed out.
    #[error("token budget exhausted ({left_tokens} tokens left, prompt needs {prompt_tokens})")]
    BudgetExhausted {
        prompt_tokens: u64,
        left_tokens: u64,
    },
    /// No model is configured, or the model failed; nothing was counted.
    #[error("model unavailable: {0}")]
    Unavailable(String),
    /// The request itself is unusable (no messages, too large); nothing was counted.
    #[error("invalid model request: {0}")]
    Invalid(String),
    /// Made while the fighter is not deciding; nothing was counted.
    #[error("model call made while the fighter is not deciding")]
    NotDeciding,
    /// The decision ended (answered, or abandoned at the wall clock) before the
    /// model answered: the prompt was charged to that decision, no completion.
    #[error("the decision ended before the model answered; its prompt was charged")]
    Cut,
}

/// A metered completion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    pub text: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub budget_left_tokens: u64,
}

/// Where model calls go: `--model-url`, `--model` and `DUEL_MODEL_API_KEY`.
#[derive(Clone, PartialEq, Eq)]
pub struct ModelConfig {
    /// The chat-completions URL (`…/v1/chat/completions`), or a base URL
    /// (`…/v1`) to which `/chat/completions` is added.
    pub url: String,
    pub model: String,
    pub api_key: Option<String>,
}

impl fmt::Debug for ModelConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelConfig")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl ModelConfig {
    /// `api_key` is read by the binary ([`crate::env::model_api_key`]).
    pub fn new(url: String, model: String, api_key: Option<String>) -> ModelConfig {
        ModelConfig {
            url,
            model,
            api_key,
        }
    }
}

/// The forwarding half of the gateway, shared by every match of a process.
/// Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct ModelGateway {
    client: Option<Arc<ModelClient>>,
}

struct ModelClient {
    url: reqwest::Url,
    model: String,
    authorization: Option<http::HeaderValue>,
    http: reqwest::Client,
}

impl fmt::Debug for ModelClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelClient")
            .field("url", &self.url.as_str())
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl ModelGateway {
    /// A gateway without a model: every call is `Unavailable` and costs nothing.
    pub fn disabled() -> ModelGateway {
        ModelGateway { client: None }
    }

    /// A gateway forwarding to `config`: `http://` (a local llama.cpp or Ollama
    /// server) or `https://` (a hosted service), trusting the system's roots.
    pub fn new(config: ModelConfig) -> Result<ModelGateway, RefereeError> {
        ModelGateway::trusting(config, &Trust::system())
    }

    /// [`ModelGateway::new`], trusting `trust` for `https://` (`DUEL_EXTRA_CA`).
    pub fn trusting(config: ModelConfig, trust: &Trust) -> Result<ModelGateway, RefereeError> {
        let trimmed = config.url.trim_end_matches('/');
        let full = if trimmed.ends_with("/chat/completions") {
            trimmed.to_owned()
        } else {
            format!("{trimmed}/chat/completions")
        };
        let url = reqwest::Url::parse(&full).map_err(|error| {
            RefereeError::Config(format!("model URL {:?}: {error}", config.url))
        })?;
        if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
            return Err(RefereeError::Config(format!(
                "model URL {:?}: expected http://host:port/… or https://host/…",
                config.url
            )));
        }
        if config.model.trim().is_empty() {
            return Err(RefereeError::Config(
                "--model must name the model to call".to_owned(),
            ));
        }
        let authorization = match &config.api_key {
            Some(key) => {
                let mut value =
                    http::HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                        RefereeError::Config(format!(
                            "{MODEL_API_KEY_ENV} holds characters not allowed in a header"
                        ))
                    })?;
                value.set_sensitive(true);
                Some(value)
            }
            None => None,
        };
        // No redirects: a metered call goes where it was configured to, with
        // the key, or fails (as it did with the plain hyper client before).
        let mut builder = reqwest::Client::builder()
            .tcp_nodelay(true)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("duel-referee/", env!("CARGO_PKG_VERSION")));
        if let Some(pem) = trust.extra_ca_pem() {
            let certificates = reqwest::Certificate::from_pem_bundle(pem).map_err(|error| {
                RefereeError::Config(format!(
                    "{}: not PEM certificates: {error}",
                    crate::tls::EXTRA_CA_ENV
                ))
            })?;
            builder = builder.tls_certs_merge(certificates);
        }
        let http = builder.build().map_err(|error| {
            RefereeError::Config(format!("cannot set up the model client: {}", chain(&error)))
        })?;
        Ok(ModelGateway {
            client: Some(Arc::new(ModelClient {
                url,
                model: config.model,
                authorization,
                http,
            })),
        })
    }

    pub fn is_enabled(&self) -> bool {
        self.client.is_some()
    }

    /// A fresh meter for one fighter of one match.
    pub fn meter(&self, budget_tokens: u64) -> FighterMeter {
        FighterMeter {
            inner: Arc::new(MeterInner {
                gateway: self.clone(),
                budget_tokens,
                state: Mutex::new(MeterState::default()),
                decisions: tokio::sync::watch::channel(0).0,
            }),
        }
    }
}

impl ModelClient {
    async fn chat(&self, messages: &[ChatMessage], max_tokens: u64) -> Result<String, String> {
        let body = serde_json::json!({
            "model": self.model,
            "messages": messages
                .iter()
                .map(|message| serde_json::json!({"role": message.role, "content": message.content}))
                .collect::<Vec<_>>(),
            "max_tokens": max_tokens,
            "stream": false,
        });
        let mut request = self
            .http
            .post(self.url.clone())
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        if let Some(authorization) = &self.authorization {
            request = request.header(http::header::AUTHORIZATION, authorization.clone());
        }
        let call = async {
            let mut response = request
                .send()
                .await
                .map_err(|error| format!("cannot reach the model: {}", chain(&error)))?;
            let status = response.status();
            let mut bytes = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|error| format!("cannot read the model's answer: {}", chain(&error)))?
            {
                if bytes.len() + chunk.len() > MAX_MODEL_RESPONSE_BYTES {
                    return Err(format!(
                        "the model's answer is larger than {MAX_MODEL_RESPONSE_BYTES} bytes"
                    ));
                }
                bytes.extend_from_slice(&chunk);
            }
            if !status.is_success() {
                return Err(format!("the model answered HTTP {status}"));
            }
            parse_completion(&bytes)
        };
        match tokio::time::timeout(MODEL_CALL_TIMEOUT, call).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "the model did not answer within {} s",
                MODEL_CALL_TIMEOUT.as_secs()
            )),
        }
    }
}

/// An error with its causes, on one line (a TLS failure's reason is a cause).
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The text of `choices[0].message.content` of an OpenAI-style answer.
fn parse_completion(bytes: &[u8]) -> Result<String, String> {
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|error| format!("the model's answer is not JSON: {error}"))?;
    value
        .pointer("/choices/0/message/content")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| "the model's answer has no choices[0].message.content".to_owned())
}

/// One fighter's budget for one match. Clones share the same account.
#[derive(Clone, Debug)]
pub struct FighterMeter {
    inner: Arc<MeterInner>,
}

#[derive(Debug)]
struct MeterInner {
    gateway: ModelGateway,
    budget_tokens: u64,
    state: Mutex<MeterState>,
    /// Bumped by every [`FighterMeter::settle`]: calls in flight wake up and
    /// find themselves cut.
    decisions: tokio::sync::watch::Sender<u64>,
}

/// Whether calls are refused outside decisions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Window {
    /// No window was ever opened: calls are always accepted (WASM bots, whose
    /// model import exists only inside a decision anyway).
    #[default]
    None,
    Open,
    Closed,
}

/// A call between its reservation and its charge.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    prompt_tokens: u64,
    cap_tokens: u64,
}

#[derive(Debug, Default)]
struct MeterState {
    /// Tokens charged.
    used_tokens: u64,
    /// Tokens held for calls in flight (prompt + completion cap), so concurrent
    /// calls of one fighter can never overspend together.
    reserved_tokens: u64,
    /// Tokens already reported through [`FighterMeter::settle`].
    reported_tokens: u64,
    gassed_out: bool,
    window: Window,
    calls: HashMap<u64, InFlight>,
    next_call: u64,
}

impl MeterState {
    fn left(&self, budget_tokens: u64) -> u64 {
        budget_tokens
            .saturating_sub(self.used_tokens)
            .saturating_sub(self.reserved_tokens)
    }

    /// Drops a call's reservation and charges `charged_tokens` for it.
    fn charge(&mut self, budget_tokens: u64, call: InFlight, charged_tokens: u64) {
        self.reserved_tokens = self
            .reserved_tokens
            .saturating_sub(call.prompt_tokens + call.cap_tokens);
        self.used_tokens = self
            .used_tokens
            .saturating_add(charged_tokens)
            .min(budget_tokens);
        if self.used_tokens >= budget_tokens {
            self.gassed_out = true;
        }
    }
}

/// What one decision spent, final once settled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Spent {
    /// Prompt and completion tokens of the calls made in the decision (only the
    /// prompt of a call cut at its end).
    pub tokens: u64,
    /// A call was refused or the budget reached zero: the fighter is gassed out
    /// from its next decision on.
    pub gassed_out: bool,
}

/// A call admitted by [`FighterMeter::reserve`].
struct Reservation<'a> {
    guard: CallGuard<'a>,
    call: InFlight,
    /// The decision counter, and the decision the call was made in: the call is
    /// cut once the counter moves on.
    decisions: tokio::sync::watch::Receiver<u64>,
    decision: u64,
}

/// A call's claim on the meter. Dropped before it is finished (its future was
/// dropped with an abandoned decision), the call counts as cut.
struct CallGuard<'a> {
    meter: &'a FighterMeter,
    id: u64,
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        let budget_tokens = self.meter.inner.budget_tokens;
        let mut state = self.meter.state();
        if let Some(call) = state.calls.remove(&self.id) {
            state.charge(budget_tokens, call, call.prompt_tokens);
        }
    }
}

impl FighterMeter {
    fn state(&self) -> MutexGuard<'_, MeterState> {
        // The lock guards plain counters; a panic elsewhere cannot leave them torn.
        self.inner
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn budget_tokens(&self) -> u64 {
        self.inner.budget_tokens
    }

    /// Tokens charged so far in the match.
    pub fn tokens_used(&self) -> u64 {
        self.state().used_tokens
    }

    /// A call was refused or the budget reached zero: the fallback plays from the
    /// next decision on.
    pub fn gassed_out(&self) -> bool {
        self.state().gassed_out
    }

    /// Opens a decision window: from now on calls are accepted only between this
    /// and the next [`FighterMeter::settle`] (endpoint bots, whose Inference calls
    /// arrive over the network at any time). Returns the decision's number for
    /// [`FighterMeter::complete_in_decision`].
    pub fn open_window(&self) -> u64 {
        let mut state = self.state();
        state.window = Window::Open;
        // Read under the lock that settle() bumps it under.
        *self.inner.decisions.borrow()
    }

    /// Whether a decision window is open now.
    pub fn window_open(&self) -> bool {
        self.state().window == Window::Open
    }

    /// Ends the current decision: cuts the calls still in flight (charging their
    /// prompts), closes the window if one is used, and returns what the decision
    /// spent. Call it once per decision, answered or abandoned.
    pub fn settle(&self) -> Spent {
        let budget_tokens = self.inner.budget_tokens;
        let mut state = self.state();
        let cut: Vec<InFlight> = state.calls.drain().map(|(_, call)| call).collect();
        for call in cut {
            state.charge(budget_tokens, call, call.prompt_tokens);
        }
        if state.window == Window::Open {
            state.window = Window::Closed;
        }
        let spent = state.used_tokens - state.reported_tokens;
        state.reported_tokens = state.used_tokens;
        // Under the lock, so a call reserving now sees the new number.
        self.inner.decisions.send_modify(|decision| *decision += 1);
        Spent {
            tokens: spent,
            gassed_out: state.gassed_out,
        }
    }

    /// Tokens charged since the previous settlement ([`FighterMeter::settle`]).
    pub fn take_spent(&self) -> u64 {
        self.settle().tokens
    }

    /// One metered model call; the completion text.
    pub async fn complete(
        &self,
        messages: Vec<ChatMessage>,
        max_tokens: u32,
    ) -> Result<String, ModelError> {
        self.complete_detailed(messages, max_tokens)
            .await
            .map(|completion| completion.text)
    }

    /// One metered model call with its counts. `max_tokens` 0 asks for as many
    /// completion tokens as are left.
    pub async fn complete_detailed(
        &self,
        messages: Vec<ChatMessage>,
        max_tokens: u32,
    ) -> Result<Completion, ModelError> {
        self.complete_inner(None, messages, max_tokens).await
    }

    /// [`FighterMeter::complete_detailed`] for a call made in decision
    /// `decision` (from [`FighterMeter::open_window`]): refused unless that very
    /// decision is still open, so a late call is never charged to a later one.
    pub async fn complete_in_decision(
        &self,
        decision: u64,
        messages: Vec<ChatMessage>,
        max_tokens: u32,
    ) -> Result<Completion, ModelError> {
        self.complete_inner(Some(decision), messages, max_tokens)
            .await
    }

    async fn complete_inner(
        &self,
        in_decision: Option<u64>,
        messages: Vec<ChatMessage>,
        max_tokens: u32,
    ) -> Result<Completion, ModelError> {
        let Some(client) = self.inner.gateway.client.as_ref() else {
            return Err(ModelError::Unavailable(
                "this referee has no model configured (--model-url)".to_owned(),
            ));
        };
        if messages.is_empty() {
            return Err(ModelError::Invalid("no messages".to_owned()));
        }
        if messages.len() > MAX_PROMPT_MESSAGES {
            return Err(ModelError::Invalid(format!(
                "{} messages, more than {MAX_PROMPT_MESSAGES}",
                messages.len()
            )));
        }
        let prompt_bytes: usize = messages.iter().map(|message| message.content.len()).sum();
        if prompt_bytes > MAX_PROMPT_BYTES {
            return Err(ModelError::Invalid(format!(
                "prompt of {prompt_bytes} bytes, more than {MAX_PROMPT_BYTES}"
            )));
        }
        let (messages, prompt_tokens) = count_prompt_tokens_off_runtime(messages).await?;
        let Reservation {
            guard,
            call,
            mut decisions,
            decision,
        } = self.reserve(in_decision, prompt_tokens, max_tokens)?;
        let answer = if call.cap_tokens == 0 {
            Ok(String::new())
        } else {
            tokio::select! {
                answer = client.chat(&messages, call.cap_tokens) => answer,
                // The decision was settled meanwhile: this call is cut.
                _ = decisions.wait_for(|now| *now != decision) => return Err(ModelError::Cut),
            }
        };
        let text = match answer {
            Ok(text) => text,
            Err(reason) => {
                // The model failed, not the bot: nothing is charged.
                let mut state = self.state();
                if let Some(call) = state.calls.remove(&guard.id) {
                    state.charge(self.inner.budget_tokens, call, 0);
                    return Err(ModelError::Unavailable(reason));
                }
                return Err(ModelError::Cut);
            }
        };
        let (text, completion_tokens) = cut_to_tokens_off_runtime(text, call.cap_tokens).await;
        let mut state = self.state();
        let Some(call) = state.calls.remove(&guard.id) else {
            return Err(ModelError::Cut);
        };
        state.charge(
            self.inner.budget_tokens,
            call,
            prompt_tokens + completion_tokens,
        );
        Ok(Completion {
            text,
            prompt_tokens,
            completion_tokens,
            budget_left_tokens: self.inner.budget_tokens - state.used_tokens,
        })
    }

    /// Holds the prompt and the completion cap; refuses (and gasses out) when
    /// the prompt alone does not fit, and refuses a call outside the decision
    /// window (or outside `in_decision`, when given).
    fn reserve(
        &self,
        in_decision: Option<u64>,
        prompt_tokens: u64,
        max_tokens: u32,
    ) -> Result<Reservation<'_>, ModelError> {
        let budget_tokens = self.inner.budget_tokens;
        let mut state = self.state();
        let current = *self.inner.decisions.borrow();
        let outside = match in_decision {
            Some(decision) => state.window != Window::Open || decision != current,
            None => state.window == Window::Closed,
        };
        if outside {
            return Err(ModelError::NotDeciding);
        }
        let left_tokens = state.left(budget_tokens);
        if state.gassed_out || prompt_tokens > left_tokens {
            state.gassed_out = true;
            return Err(ModelError::BudgetExhausted {
                prompt_tokens,
                left_tokens,
            });
        }
        let mut cap_tokens = left_tokens - prompt_tokens;
        if max_tokens > 0 {
            cap_tokens = cap_tokens.min(u64::from(max_tokens));
        }
        state.reserved_tokens += prompt_tokens + cap_tokens;
        let call = InFlight {
            prompt_tokens,
            cap_tokens,
        };
        let id = state.next_call;
        state.next_call += 1;
        state.calls.insert(id, call);
        let decisions = self.inner.decisions.subscribe();
        Ok(Reservation {
            guard: CallGuard { meter: self, id },
            call,
            decisions,
            decision: current,
        })
    }
}

/// Cuts `text` to at most `cap_tokens` tokens (a model with another tokenizer can
/// run over the cap as we count it); returns the text and its token count.
fn cut_to_tokens(text: String, cap_tokens: u64) -> (String, u64) {
    let tokens = encoder().encode_ordinary(&text);
    if tokens.len() as u64 <= cap_tokens {
        return (text, tokens.len() as u64);
    }
    let keep = usize::try_from(cap_tokens)
        .unwrap_or(usize::MAX)
        .min(tokens.len());
    let bytes = encoder()
        .decode_bytes(&tokens[..keep])
        .expect("tokens the encoder just made decode");
    let mut cut = match std::str::from_utf8(&bytes) {
        Ok(valid) => valid.to_owned(),
        Err(error) => String::from_utf8_lossy(&bytes[..error.valid_up_to()]).into_owned(),
    };
    // Re-encoding a prefix can merge differently; drop characters until it fits.
    loop {
        let count = count_tokens(&cut);
        if count <= cap_tokens {
            return (cut, count);
        }
        cut.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_known_texts() {
        assert_eq!(count_tokens(""), 0);
        assert_eq!(count_tokens("hello world"), 2);
        assert_eq!(
            count_prompt_tokens(&[
                ChatMessage::new("system", "hello world"),
                ChatMessage::new("user", "hello world")
            ]),
            4
        );
    }

    #[test]
    fn cuts_long_completions_to_the_cap() {
        let text = "one two three four five six seven eight nine ten".to_owned();
        let full = count_tokens(&text);
        let (cut, count) = cut_to_tokens(text.clone(), 3);
        assert_eq!(count, 3);
        assert!(text.starts_with(&cut));
        assert_eq!(cut_to_tokens(text.clone(), full), (text, full));
        assert_eq!(
            cut_to_tokens("héllo wörld ✓✓✓".to_owned(), 0),
            (String::new(), 0)
        );
    }

    #[tokio::test]
    async fn without_a_model_calls_cost_nothing() {
        let meter = ModelGateway::disabled().meter(100);
        let error = meter
            .complete(vec![ChatMessage::new("user", "hi")], 10)
            .await
            .expect_err("no model");
        assert!(matches!(error, ModelError::Unavailable(_)));
        assert_eq!(meter.tokens_used(), 0);
        assert!(!meter.gassed_out());
    }

    #[test]
    fn takes_http_and_https_only_and_keeps_the_key_out_of_debug() {
        for url in ["https://example.invalid/v1", "http://127.0.0.1:1/v1"] {
            let config = ModelConfig {
                url: url.into(),
                model: "m".into(),
                api_key: None,
            };
            assert!(ModelGateway::new(config).is_ok(), "{url}");
        }
        let ftp = ModelGateway::new(ModelConfig {
            url: "ftp://example.invalid/v1".into(),
            model: "m".into(),
            api_key: None,
        });
        assert!(ftp.expect_err("ftp").to_string().contains("expected http"));
        let config = ModelConfig {
            url: "http://127.0.0.1:1/v1".into(),
            model: "m".into(),
            api_key: Some("sk-secret".into()),
        };
        assert!(!format!("{config:?}").contains("sk-secret"));
        let gateway = ModelGateway::new(config).expect("gateway");
        assert!(!format!("{gateway:?}").contains("sk-secret"));
    }
}
