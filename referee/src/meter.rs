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
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use duel_replays::{CallOutcome, CallRecord, ModelPrice};
use tiktoken_rs::CoreBPE;

use crate::limits::{
    INLINE_COUNT_MAX_BYTES, MAX_CACHED_COUNTS, MAX_MODEL_CALLS_PER_DECISION, MAX_PROMPT_BYTES,
    MAX_PROMPT_MESSAGES, MIN_CACHED_TEXT_BYTES,
};
use crate::models::{Model, Resolve};
pub use crate::models::{ModelConfig, ModelGateway, Sampling};

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

/// [`count_prompt_tokens`] on the blocking pool, through the fighter's
/// [`CountCache`]: a prompt of megabytes takes a second to count, and the
/// async threads that count it also run both fighters' clocks. Counting there
/// would make the *other* fighter late.
async fn count_prompt_tokens_off_runtime(
    messages: Vec<ChatMessage>,
    cache: Arc<Mutex<CountCache>>,
) -> Result<(Vec<ChatMessage>, u64), ModelError> {
    // A short prompt is counted where it is (tens of microseconds): the hop to
    // the blocking pool and back would cost more than the count.
    let bytes: usize = messages.iter().map(|message| message.content.len()).sum();
    if bytes <= INLINE_COUNT_MAX_BYTES {
        let tokens = messages
            .iter()
            .map(|message| count_tokens(&message.content))
            .sum();
        return Ok((messages, tokens));
    }
    tokio::task::spawn_blocking(move || {
        let tokens = messages
            .iter()
            .map(|message| CountCache::count(&cache, &message.content))
            .sum();
        (messages, tokens)
    })
    .await
    // Counting cannot panic on any text: a join error means the runtime is
    // shutting down. Nothing was counted, so nothing is charged.
    .map_err(|_| ModelError::Unavailable("the referee is shutting down".to_owned()))
}

/// [`cut_to_tokens`] on the blocking pool, for the same reason.
async fn cut_to_tokens_off_runtime(text: String, cap_tokens: u64) -> (String, u64) {
    if text.len() <= INLINE_COUNT_MAX_BYTES {
        return cut_to_tokens(text, cap_tokens);
    }
    tokio::task::spawn_blocking(move || cut_to_tokens(text, cap_tokens))
        .await
        .unwrap_or((String::new(), 0))
}

/// The counts of one fighter's longer message texts, so that a system prompt
/// or a conversation's history sent again with every call (what bots do) is
/// counted once. Exact: a prompt's count is the sum of its messages' counts
/// (D-7). Keyed by a hash under this fighter's own random key (no bot can aim
/// a collision) and kept per fighter (no bot can time whether its opponent
/// sent a text).
#[derive(Debug)]
struct CountCache {
    key: std::collections::hash_map::RandomState,
    counts: HashMap<(u64, usize), u64>,
}

impl Default for CountCache {
    fn default() -> CountCache {
        CountCache {
            key: std::collections::hash_map::RandomState::new(),
            counts: HashMap::new(),
        }
    }
}

impl CountCache {
    /// The tokens of `text`, from the cache when it was counted before.
    /// Blocking (it counts): call it off the async threads.
    fn count(cache: &Mutex<CountCache>, text: &str) -> u64 {
        if text.len() < MIN_CACHED_TEXT_BYTES {
            return count_tokens(text);
        }
        let lock = || {
            cache
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        let key = {
            let cache = lock();
            let key = (
                std::hash::BuildHasher::hash_one(&cache.key, text),
                text.len(),
            );
            if let Some(tokens) = cache.counts.get(&key) {
                return *tokens;
            }
            key
        };
        let tokens = count_tokens(text);
        let mut cache = lock();
        if cache.counts.len() >= MAX_CACHED_COUNTS {
            cache.counts.clear();
        }
        cache.counts.insert(key, tokens);
        tokens
    }
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
    /// The catalogue has no model of this name; nothing was counted.
    #[error("the model `{0}` does not exist here (GET /v1/models lists the catalogue)")]
    ModelNotFound(String),
    /// Made while the fighter is not deciding; nothing was counted.
    #[error("model call made while the fighter is not deciding")]
    NotDeciding,
    /// The decision already made [`MAX_MODEL_CALLS_PER_DECISION`] calls;
    /// nothing was counted and the call is not recorded.
    #[error("at most {MAX_MODEL_CALLS_PER_DECISION} model calls per decision")]
    TooManyCalls,
    /// The decision ended (answered, or abandoned at the wall clock) before the
    /// model answered: the prompt was charged to that decision, no completion.
    #[error("the decision ended before the model answered; its prompt was charged")]
    Cut,
}

/// One model call as a bot makes it, through any face of the gateway.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelRequest {
    /// The catalogue name; empty for the catalogue's default.
    pub model: String,
    pub messages: Vec<ChatMessage>,
    /// The most completion tokens wanted; 0 for as many as are left.
    pub max_tokens: u32,
    pub sampling: Sampling,
}

impl ModelRequest {
    /// A call of the default model.
    pub fn new(messages: Vec<ChatMessage>, max_tokens: u32) -> ModelRequest {
        ModelRequest {
            model: String::new(),
            messages,
            max_tokens,
            sampling: Sampling::default(),
        }
    }

    /// The same call of the model named `model`.
    pub fn of(mut self, model: impl Into<String>) -> ModelRequest {
        self.model = model.into();
        self
    }
}

/// A metered completion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The catalogue name of the model that answered.
    pub model: Arc<str>,
    pub text: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub budget_left_tokens: u64,
    /// The model's answer was cut to the completion cap (OpenAI's
    /// `finish_reason: "length"`).
    pub cut_at_cap: bool,
}

/// One model call of a decision, as the recorder receives it: the replay's
/// part (model, tokens, outcome), why it gave nothing when it did not, and
/// what was said when the match keeps a transcript.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelCall {
    /// The catalogue name, or the name the bot sent for a model the
    /// catalogue does not have (empty when it sent none and none applies).
    pub model: Arc<str>,
    /// The catalogue's entry and prices, when the call named one.
    pub price: Option<ModelPrice>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub outcome: CallOutcome,
    /// From the call's arrival at the gateway to its end.
    pub latency_us: u64,
    /// Why the call gave no completion, in a few words (`upstream 404`).
    pub note: Option<String>,
    /// The messages and the completion, when the match keeps a transcript.
    pub text: Option<CallText>,
}

/// What a call sent and received, kept for the transcript.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallText {
    pub messages: Vec<ChatMessage>,
    pub completion: String,
}

impl ModelCall {
    /// The replay's part of the call.
    pub fn record(&self) -> CallRecord {
        CallRecord {
            model: self.model.to_string(),
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            outcome: self.outcome,
        }
    }

    pub fn tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
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
    /// Keep what each call sent and received (the match keeps a transcript).
    keep_texts: bool,
    state: Mutex<MeterState>,
    /// Counts of this fighter's longer texts (its own only).
    counts: Arc<Mutex<CountCache>>,
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
#[derive(Clone, Debug)]
struct InFlight {
    prompt_tokens: u64,
    cap_tokens: u64,
    model: Arc<Model>,
    /// The messages, when texts are kept: a call cut in flight still shows
    /// what it asked.
    messages: Option<Arc<Vec<ChatMessage>>>,
    started: Instant,
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
    /// Calls of the current decision that ended, with their number (the
    /// order they were made in).
    ended: Vec<(u64, ModelCall)>,
    /// Calls made in the current decision, against [`MAX_MODEL_CALLS_PER_DECISION`].
    decision_calls: usize,
}

impl MeterState {
    fn left(&self, budget_tokens: u64) -> u64 {
        budget_tokens
            .saturating_sub(self.used_tokens)
            .saturating_sub(self.reserved_tokens)
    }

    /// Drops a call's reservation and charges `charged_tokens` for it;
    /// returns what was charged.
    fn charge(&mut self, budget_tokens: u64, call: &InFlight, charged_tokens: u64) -> u64 {
        self.reserved_tokens = self
            .reserved_tokens
            .saturating_sub(call.prompt_tokens + call.cap_tokens);
        let before = self.used_tokens;
        self.used_tokens = self
            .used_tokens
            .saturating_add(charged_tokens)
            .min(budget_tokens);
        if self.used_tokens >= budget_tokens {
            self.gassed_out = true;
        }
        self.used_tokens - before
    }

    /// Charges a call cut before its answer (its prompt) and records it.
    fn cut(&mut self, budget_tokens: u64, id: u64, call: &InFlight) {
        let charged = self.charge(budget_tokens, call, call.prompt_tokens);
        self.ended.push((
            id,
            ModelCall {
                model: call.model.name.clone(),
                price: Some(call.model.price.clone()),
                prompt_tokens: charged,
                completion_tokens: 0,
                outcome: CallOutcome::Cut,
                latency_us: micros_since(call.started),
                note: Some("the decision ended before the model answered".to_owned()),
                text: call.messages.as_ref().map(|messages| CallText {
                    messages: messages.as_ref().clone(),
                    completion: String::new(),
                }),
            },
        ));
    }
}

fn micros_since(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// What one decision spent, final once settled.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Spent {
    /// Prompt and completion tokens of the calls made in the decision (only the
    /// prompt of a call cut at its end).
    pub tokens: u64,
    /// A call was refused or the budget reached zero: the fighter is gassed out
    /// from its next decision on.
    pub gassed_out: bool,
    /// Every call the decision made, in the order they were made.
    pub calls: Vec<ModelCall>,
}

/// A call admitted by [`FighterMeter::reserve`].
struct Reservation<'a> {
    guard: CallGuard<'a>,
    cap_tokens: u64,
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
            state.cut(budget_tokens, self.id, &call);
        }
    }
}

/// What a call that never reached a model is recorded with.
struct Refusal {
    model: Arc<str>,
    price: Option<ModelPrice>,
    outcome: CallOutcome,
    note: String,
}

impl FighterMeter {
    /// A fresh meter of `budget_tokens` over `gateway`.
    pub fn new(gateway: ModelGateway, budget_tokens: u64) -> FighterMeter {
        FighterMeter::keeping(gateway, budget_tokens, false)
    }

    /// A fresh meter that also keeps what each call sent and received
    /// (`keep_texts`: the match keeps a transcript).
    pub fn keeping(gateway: ModelGateway, budget_tokens: u64, keep_texts: bool) -> FighterMeter {
        FighterMeter {
            inner: Arc::new(MeterInner {
                gateway,
                budget_tokens,
                keep_texts,
                state: Mutex::new(MeterState::default()),
                counts: Arc::default(),
                decisions: tokio::sync::watch::channel(0).0,
            }),
        }
    }

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

    /// The gateway this meter forwards through (its catalogue).
    pub fn gateway(&self) -> &ModelGateway {
        &self.inner.gateway
    }

    /// Tokens charged so far in the match.
    pub fn tokens_used(&self) -> u64 {
        self.state().used_tokens
    }

    /// What is left of the budget now (calls in flight hold their share).
    pub fn budget_left_tokens(&self) -> u64 {
        self.state().left(self.inner.budget_tokens)
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
    /// spent and every call it made. Call it once per decision, answered or
    /// abandoned.
    pub fn settle(&self) -> Spent {
        let budget_tokens = self.inner.budget_tokens;
        let mut state = self.state();
        let cut: Vec<(u64, InFlight)> = state.calls.drain().collect();
        for (id, call) in cut {
            state.cut(budget_tokens, id, &call);
        }
        if state.window == Window::Open {
            state.window = Window::Closed;
        }
        let spent = state.used_tokens - state.reported_tokens;
        state.reported_tokens = state.used_tokens;
        state.decision_calls = 0;
        let mut ended = std::mem::take(&mut state.ended);
        ended.sort_by_key(|(id, _)| *id);
        // Under the lock, so a call reserving now sees the new number.
        self.inner.decisions.send_modify(|decision| *decision += 1);
        Spent {
            tokens: spent,
            gassed_out: state.gassed_out,
            calls: ended.into_iter().map(|(_, call)| call).collect(),
        }
    }

    /// Tokens charged since the previous settlement ([`FighterMeter::settle`]).
    pub fn take_spent(&self) -> u64 {
        self.settle().tokens
    }

    /// One metered call of the default model; the completion text.
    pub async fn complete(
        &self,
        messages: Vec<ChatMessage>,
        max_tokens: u32,
    ) -> Result<String, ModelError> {
        self.complete_request(ModelRequest::new(messages, max_tokens))
            .await
            .map(|completion| completion.text)
    }

    /// One metered call of the default model with its counts. `max_tokens` 0
    /// asks for as many completion tokens as are left.
    pub async fn complete_detailed(
        &self,
        messages: Vec<ChatMessage>,
        max_tokens: u32,
    ) -> Result<Completion, ModelError> {
        self.complete_request(ModelRequest::new(messages, max_tokens))
            .await
    }

    /// One metered call, of the model the request names.
    pub async fn complete_request(&self, request: ModelRequest) -> Result<Completion, ModelError> {
        self.complete_inner(None, request).await
    }

    /// [`FighterMeter::complete_request`] for a call made in decision
    /// `decision` (from [`FighterMeter::open_window`]): refused unless that very
    /// decision is still open, so a late call is never charged to a later one.
    pub async fn complete_in_decision(
        &self,
        decision: u64,
        request: ModelRequest,
    ) -> Result<Completion, ModelError> {
        self.complete_inner(Some(decision), request).await
    }

    /// Records a call of decision `decision` that could not even be read (a
    /// request body that is not a chat completion), as `invalid`, and
    /// returns the error to answer with. Not recorded, like any call, when
    /// the decision is not open.
    pub fn refuse_in_decision(&self, decision: u64, model: &str, reason: String) -> ModelError {
        let started = Instant::now();
        if let Err(error) = self.admit(Some(decision)) {
            return error;
        }
        self.record_refusal(
            Refusal {
                model: model.into(),
                price: None,
                outcome: CallOutcome::Invalid,
                note: reason.clone(),
            },
            &[],
            started,
        );
        ModelError::Invalid(reason)
    }

    /// Admits a call into the decision: refused (and not recorded) outside
    /// the decision's window or past the per-decision call bound.
    fn admit(&self, in_decision: Option<u64>) -> Result<(), ModelError> {
        let mut state = self.state();
        let current = *self.inner.decisions.borrow();
        let outside = match in_decision {
            Some(decision) => state.window != Window::Open || decision != current,
            None => state.window == Window::Closed,
        };
        if outside {
            return Err(ModelError::NotDeciding);
        }
        if state.decision_calls >= MAX_MODEL_CALLS_PER_DECISION {
            return Err(ModelError::TooManyCalls);
        }
        state.decision_calls += 1;
        Ok(())
    }

    /// Records a call that ended without reaching a model, charging nothing.
    fn record_refusal(&self, refusal: Refusal, messages: &[ChatMessage], started: Instant) {
        let text = self.inner.keep_texts.then(|| CallText {
            messages: messages.to_vec(),
            completion: String::new(),
        });
        let call = ModelCall {
            model: refusal.model,
            price: refusal.price,
            prompt_tokens: 0,
            completion_tokens: 0,
            outcome: refusal.outcome,
            latency_us: micros_since(started),
            note: Some(refusal.note),
            text,
        };
        let mut state = self.state();
        let id = state.next_call;
        state.next_call += 1;
        state.ended.push((id, call));
    }

    async fn complete_inner(
        &self,
        in_decision: Option<u64>,
        request: ModelRequest,
    ) -> Result<Completion, ModelError> {
        let started = Instant::now();
        self.admit(in_decision)?;
        let ModelRequest {
            model: requested,
            messages,
            max_tokens,
            sampling,
        } = request;
        let refuse =
            |outcome, model: Arc<str>, price, note: String, error, messages: &[ChatMessage]| {
                self.record_refusal(
                    Refusal {
                        model,
                        price,
                        outcome,
                        note,
                    },
                    messages,
                    started,
                );
                Err(error)
            };
        let model = match self.inner.gateway.resolve(&requested) {
            Ok(model) => model,
            Err(Resolve::NoModels) => {
                let note = "no model is configured (--model-url or --models)".to_owned();
                return refuse(
                    CallOutcome::Unavailable,
                    requested.as_str().into(),
                    None,
                    note.clone(),
                    ModelError::Unavailable(note),
                    &messages,
                );
            }
            Err(Resolve::NotFound(name)) => {
                return refuse(
                    CallOutcome::Invalid,
                    name.as_str().into(),
                    None,
                    format!("no model `{name}`"),
                    ModelError::ModelNotFound(name),
                    &messages,
                );
            }
            Err(Resolve::NoDefault(names)) => {
                let note = format!("name a model: one of {}", names.join(", "));
                return refuse(
                    CallOutcome::Invalid,
                    "".into(),
                    None,
                    note.clone(),
                    ModelError::Invalid(note),
                    &messages,
                );
            }
        };
        let invalid = if messages.is_empty() {
            Some("no messages".to_owned())
        } else if messages.len() > MAX_PROMPT_MESSAGES {
            Some(format!(
                "{} messages, more than {MAX_PROMPT_MESSAGES}",
                messages.len()
            ))
        } else {
            let prompt_bytes: usize = messages.iter().map(|message| message.content.len()).sum();
            (prompt_bytes > MAX_PROMPT_BYTES)
                .then(|| format!("prompt of {prompt_bytes} bytes, more than {MAX_PROMPT_BYTES}"))
        };
        if let Some(note) = invalid {
            return refuse(
                CallOutcome::Invalid,
                model.name.clone(),
                Some(model.price.clone()),
                note.clone(),
                ModelError::Invalid(note),
                &messages,
            );
        }
        let counted = count_prompt_tokens_off_runtime(messages, self.inner.counts.clone()).await;
        let (messages, prompt_tokens) = match counted {
            Ok(counted) => counted,
            Err(error) => {
                return refuse(
                    CallOutcome::Unavailable,
                    model.name.clone(),
                    Some(model.price.clone()),
                    error.to_string(),
                    error,
                    &[],
                );
            }
        };
        let messages = Arc::new(messages);
        let reservation = match self.reserve(
            in_decision,
            prompt_tokens,
            max_tokens,
            &model,
            &messages,
            started,
        ) {
            Ok(reservation) => reservation,
            Err(error @ ModelError::BudgetExhausted { .. }) => {
                return refuse(
                    CallOutcome::Refused,
                    model.name.clone(),
                    Some(model.price.clone()),
                    "the token budget is spent".to_owned(),
                    error,
                    &messages,
                );
            }
            Err(error) => return Err(error),
        };
        let Reservation {
            guard,
            cap_tokens,
            mut decisions,
            decision,
        } = reservation;
        let answer = if cap_tokens == 0 {
            Ok(crate::models::UpstreamAnswer {
                text: String::new(),
            })
        } else {
            tokio::select! {
                answer = model.complete(&messages, cap_tokens, &sampling) => answer,
                // The decision was settled meanwhile: this call is cut (the
                // guard's drop, or the settlement, records it).
                _ = decisions.wait_for(|now| *now != decision) => return Err(ModelError::Cut),
            }
        };
        let text = match answer {
            Ok(answer) => answer.text,
            Err(reason) => {
                // The model failed, not the bot: nothing is charged.
                let mut state = self.state();
                let Some(call) = state.calls.remove(&guard.id) else {
                    return Err(ModelError::Cut);
                };
                state.charge(self.inner.budget_tokens, &call, 0);
                let text = self.inner.keep_texts.then(|| CallText {
                    messages: messages.as_ref().clone(),
                    completion: String::new(),
                });
                state.ended.push((
                    guard.id,
                    ModelCall {
                        model: model.name.clone(),
                        price: Some(model.price.clone()),
                        prompt_tokens: 0,
                        completion_tokens: 0,
                        outcome: CallOutcome::Unavailable,
                        latency_us: micros_since(started),
                        note: Some(reason.clone()),
                        text,
                    },
                ));
                return Err(ModelError::Unavailable(reason));
            }
        };
        let full_bytes = text.len();
        let (text, completion_tokens) = cut_to_tokens_off_runtime(text, cap_tokens).await;
        let mut state = self.state();
        let Some(call) = state.calls.remove(&guard.id) else {
            return Err(ModelError::Cut);
        };
        let charged = state.charge(
            self.inner.budget_tokens,
            &call,
            prompt_tokens + completion_tokens,
        );
        debug_assert_eq!(
            charged,
            prompt_tokens + completion_tokens,
            "the reservation covers the call"
        );
        let record_text = self.inner.keep_texts.then(|| CallText {
            messages: messages.as_ref().clone(),
            completion: text.clone(),
        });
        state.ended.push((
            guard.id,
            ModelCall {
                model: model.name.clone(),
                price: Some(model.price.clone()),
                prompt_tokens,
                completion_tokens,
                outcome: CallOutcome::Ok,
                latency_us: micros_since(started),
                note: None,
                text: record_text,
            },
        ));
        Ok(Completion {
            model: model.name.clone(),
            cut_at_cap: text.len() < full_bytes,
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
        model: &Arc<Model>,
        messages: &Arc<Vec<ChatMessage>>,
        started: Instant,
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
        let id = state.next_call;
        state.next_call += 1;
        state.calls.insert(
            id,
            InFlight {
                prompt_tokens,
                cap_tokens,
                model: model.clone(),
                messages: self.inner.keep_texts.then(|| messages.clone()),
                started,
            },
        );
        let decisions = self.inner.decisions.subscribe();
        Ok(Reservation {
            guard: CallGuard { meter: self, id },
            cap_tokens,
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
    async fn without_a_model_calls_cost_nothing_and_are_recorded() {
        let meter = ModelGateway::disabled().meter(100);
        let error = meter
            .complete(vec![ChatMessage::new("user", "hi")], 10)
            .await
            .expect_err("no model");
        assert!(matches!(error, ModelError::Unavailable(_)));
        assert_eq!(meter.tokens_used(), 0);
        assert!(!meter.gassed_out());
        let spent = meter.settle();
        assert_eq!(spent.calls.len(), 1);
        assert_eq!(spent.calls[0].outcome, CallOutcome::Unavailable);
        assert_eq!(spent.calls[0].tokens(), 0);
    }

    /// The house model answers through the meter like any model: counted,
    /// capped, recorded, and the same prompt gets the same answer.
    #[tokio::test]
    async fn the_house_model_is_metered_like_any_other() {
        let catalogue =
            crate::models::Catalogue::single(crate::models::HOUSE_URL, None).expect("house");
        let gateway =
            ModelGateway::from_catalogue(&catalogue, &|_| None, &crate::tls::Trust::system())
                .expect("gateway");
        let meter = FighterMeter::keeping(gateway, 1_000, true);
        let prompt = vec![ChatMessage::new("user", "round 1")];
        let first = meter
            .complete_detailed(prompt.clone(), 0)
            .await
            .expect("answers");
        assert_eq!(first.text, crate::models::house_answer(&prompt));
        assert_eq!(first.completion_tokens, count_tokens(&first.text));
        let capped = meter.complete_detailed(prompt, 1).await.expect("answers");
        assert_eq!(capped.completion_tokens, 1);
        assert!(capped.cut_at_cap);
        let spent = meter.settle();
        assert_eq!(spent.calls.len(), 2);
        assert_eq!(
            spent.tokens,
            spent.calls.iter().map(ModelCall::tokens).sum::<u64>()
        );
        assert_eq!(
            spent.calls[0]
                .text
                .as_ref()
                .map(|text| text.completion.as_str()),
            Some(first.text.as_str())
        );
        let unknown = meter
            .complete_request(ModelRequest::new(vec![ChatMessage::new("user", "x")], 0).of("gpt-9"))
            .await
            .expect_err("not in the catalogue");
        assert_eq!(unknown, ModelError::ModelNotFound("gpt-9".to_owned()));
        let spent = meter.settle();
        assert_eq!(
            (spent.calls[0].outcome, &*spent.calls[0].model),
            (CallOutcome::Invalid, "gpt-9")
        );
    }
}
