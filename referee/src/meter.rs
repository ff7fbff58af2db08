//! The token meter and the model gateway: one seam that both the WASM `model`
//! import and `duel.v1.Inference` go through. It counts prompt and completion
//! tokens with tiktoken's `o200k_base` (RULES "Token budget", D-7), caps each
//! call's completion at what is left after the prompt, refuses a call whose
//! prompt alone does not fit (gassing the fighter out), and forwards the rest to
//! an OpenAI-compatible chat-completions endpoint. A longer prompt that fits
//! by its bytes alone (with the cap the call names) is forwarded while it is
//! counted, so the model's time hides the count; a call that would be refused
//! while such counts are out waits for them, so refusals rest on exact counts.
//!
//! Every call belongs to the decision it was made in. [`FighterMeter::settle`]
//! ends a decision: a call still running then is cut (its prompt, forwarded
//! already, is charged; no completion reaches the bot), so what a decision spent
//! is final when it is recorded, even for a decision the runner abandoned at the
//! wall clock. An endpoint bot's meter also has a decision window
//! ([`FighterMeter::open_window`]): outside it, calls are refused.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use duel_replays::{CallOutcome, CallRecord, ModelPrice};
use tiktoken_rs::CoreBPE;

use crate::limits::{
    INLINE_COUNT_MAX_BYTES, MAX_CACHED_COUNTS, MAX_MODEL_CALLS_PER_DECISION, MAX_PROMPT_BYTES,
    MAX_PROMPT_MESSAGES, MIN_CACHED_TEXT_BYTES, OVERLAP_COUNT_MAX_BYTES,
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
    messages: Arc<Vec<ChatMessage>>,
    cache: Arc<Mutex<CountCache>>,
) -> Result<u64, ModelError> {
    // A short prompt is counted where it is (tens of microseconds): the hop to
    // the blocking pool and back would cost more than the count.
    if prompt_bytes(&messages) <= INLINE_COUNT_MAX_BYTES {
        return Ok(count_prompt_tokens(&messages));
    }
    tokio::task::spawn_blocking(move || CountCache::count_prompt(&cache, &messages))
        .await
        // Counting cannot panic on any text: a join error means the runtime is
        // shutting down. Nothing was counted, so nothing is charged.
        .map_err(|_| ModelError::Unavailable("the referee is shutting down".to_owned()))
}

/// Polls `future` once: its output if it is ready, else `Pending` (it has
/// been woken up to make progress meanwhile, like any polled future).
async fn poll_once<F: std::future::Future>(
    mut future: std::pin::Pin<&mut F>,
) -> std::task::Poll<F::Output> {
    std::future::poll_fn(|cx| std::task::Poll::Ready(future.as_mut().poll(cx))).await
}

/// The bytes of a prompt's message texts: never fewer than its tokens (an
/// o200k token is at least one byte).
fn prompt_bytes(messages: &[ChatMessage]) -> usize {
    messages.iter().map(|message| message.content.len()).sum()
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

    /// The tokens of a prompt, message by message through the cache.
    /// Blocking, like [`CountCache::count`].
    fn count_prompt(cache: &Mutex<CountCache>, messages: &[ChatMessage]) -> u64 {
        messages
            .iter()
            .map(|message| CountCache::count(cache, &message.content))
            .sum()
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
    /// Bumped whenever a call forwarded while counted ([`Prompt::Counting`])
    /// is counted or ends: a call that would be refused while such a call
    /// holds more than its count waits for it, so a refusal (which gasses
    /// the fighter out) is only ever decided on exact counts.
    counted: tokio::sync::watch::Sender<u64>,
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
    prompt: Prompt,
    cap_tokens: u64,
    model: Arc<Model>,
    /// The messages, when texts are kept: a call cut in flight still shows
    /// what it asked.
    messages: Option<Arc<Vec<ChatMessage>>>,
    started: Instant,
}

/// A call's prompt as the meter holds it.
#[derive(Clone, Debug)]
enum Prompt {
    /// Counted before the call was forwarded.
    Counted(u64),
    /// Forwarded while it is counted (`OVERLAP_COUNT_MAX_BYTES`): its bytes
    /// are held, which no count exceeds. The counting task fills `count`.
    Counting {
        bytes: u64,
        messages: Arc<Vec<ChatMessage>>,
        count: Arc<OnceLock<u64>>,
    },
}

impl Prompt {
    /// What the prompt holds of the budget: its tokens, or its bytes while
    /// it is counted.
    fn held_tokens(&self) -> u64 {
        match self {
            Prompt::Counted(tokens) => *tokens,
            Prompt::Counting { bytes, .. } => *bytes,
        }
    }
}

impl InFlight {
    /// What the call holds of the budget.
    fn reserved_tokens(&self) -> u64 {
        self.prompt.held_tokens() + self.cap_tokens
    }

    /// The prompt's tokens. A call cut while its prompt is still being
    /// counted finishes the count here (bounded by `OVERLAP_COUNT_MAX_BYTES`;
    /// the counting task, started with the call, has almost always finished).
    fn prompt_tokens(&self) -> u64 {
        match &self.prompt {
            Prompt::Counted(tokens) => *tokens,
            Prompt::Counting {
                messages, count, ..
            } => *count.get_or_init(|| count_prompt_tokens(messages)),
        }
    }

    fn counting(&self) -> bool {
        matches!(self.prompt, Prompt::Counting { .. })
    }
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
        self.reserved_tokens = self.reserved_tokens.saturating_sub(call.reserved_tokens());
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
        let charged = self.charge(budget_tokens, call, call.prompt_tokens());
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

/// What [`FighterMeter::reserve`] decided.
enum Admission<'a> {
    Reserved(Reservation<'a>),
    /// The prompt does not fit while calls in flight are still being
    /// counted: ask again once they are (the receiver changes then).
    AfterCounts(tokio::sync::watch::Receiver<u64>),
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
            if call.counting() {
                self.meter.counts_moved();
            }
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
                counted: tokio::sync::watch::channel(0).0,
            }),
        }
    }

    /// Wakes calls waiting for counts in flight ([`Admission::AfterCounts`]).
    fn counts_moved(&self) {
        self.inner.counted.send_modify(|moves| *moves += 1);
    }

    /// A call forwarded while counted (call `id`) has its count: it now holds
    /// its tokens instead of its bytes, and calls waiting for that are woken.
    /// Nothing happens when the call ended meanwhile or was counted already.
    fn prompt_counted(&self, id: u64, prompt_tokens: u64) {
        let mut state = self.state();
        let Some(call) = state.calls.get_mut(&id) else {
            return;
        };
        if !call.counting() {
            return;
        }
        let held_tokens = call.reserved_tokens();
        call.prompt = Prompt::Counted(prompt_tokens);
        let freed_tokens = held_tokens.saturating_sub(call.reserved_tokens());
        state.reserved_tokens = state.reserved_tokens.saturating_sub(freed_tokens);
        self.counts_moved();
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
        let counting = cut.iter().any(|(_, call)| call.counting());
        for (id, call) in cut {
            state.cut(budget_tokens, id, &call);
        }
        if counting {
            self.counts_moved();
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
        self.check_window(&state, in_decision)?;
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
        let bytes = prompt_bytes(&messages);
        let invalid = if messages.is_empty() {
            Some("no messages".to_owned())
        } else if messages.len() > MAX_PROMPT_MESSAGES {
            Some(format!(
                "{} messages, more than {MAX_PROMPT_MESSAGES}",
                messages.len()
            ))
        } else {
            (bytes > MAX_PROMPT_BYTES)
                .then(|| format!("prompt of {bytes} bytes, more than {MAX_PROMPT_BYTES}"))
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
        let messages = Arc::new(messages);
        // A prompt that fits by its bytes is forwarded while it is counted
        // (`OVERLAP_COUNT_MAX_BYTES`): the model's time hides the count.
        let mut counting = None;
        if max_tokens > 0 && bytes > INLINE_COUNT_MAX_BYTES && bytes <= OVERLAP_COUNT_MAX_BYTES {
            let count = Arc::new(OnceLock::new());
            let prompt = Prompt::Counting {
                bytes: bytes as u64,
                messages: messages.clone(),
                count: count.clone(),
            };
            if let Some(reservation) =
                self.reserve_uncounted(in_decision, prompt, max_tokens, &model, &messages, started)?
            {
                let cache = self.inner.counts.clone();
                let texts = messages.clone();
                let meter = self.clone();
                let id = reservation.guard.id;
                let count_task = move || {
                    tokio::task::spawn_blocking(move || {
                        let tokens =
                            *count.get_or_init(|| CountCache::count_prompt(&cache, &texts));
                        meter.prompt_counted(id, tokens);
                    })
                };
                counting = Some((reservation, count_task));
            }
        }
        let (reservation, mut start_count) = match counting {
            Some((reservation, count_task)) => (reservation, Some(count_task)),
            None => {
                let prompt_tokens = match count_prompt_tokens_off_runtime(
                    messages.clone(),
                    self.inner.counts.clone(),
                )
                .await
                {
                    Ok(tokens) => tokens,
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
                let reservation = loop {
                    match self.reserve(
                        in_decision,
                        prompt_tokens,
                        max_tokens,
                        &model,
                        &messages,
                        started,
                    ) {
                        Ok(Admission::Reserved(reservation)) => break reservation,
                        Ok(Admission::AfterCounts(mut moved)) => {
                            // The sender lives as long as the meter.
                            let _ = moved.changed().await;
                        }
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
                    }
                };
                (reservation, None)
            }
        };
        let Reservation {
            guard,
            cap_tokens,
            mut decisions,
            decision,
        } = reservation;
        let mut counted = None;
        let answer = if cap_tokens == 0 {
            Ok(crate::models::UpstreamAnswer {
                text: String::new(),
            })
        } else {
            let mut forward = std::pin::pin!(model.complete(&messages, cap_tokens, &sampling));
            // The request goes on its way first (one poll hands it to the
            // connection, a yield lets the connection write it); only then
            // does the count take a core. Started together, on 2 cores shared
            // with the upstream, the count delayed the forward by up to its
            // own length (docs/perf/grpc.md).
            let mut first = poll_once(forward.as_mut()).await;
            if let Some(count_task) = start_count.take() {
                if first.is_pending() {
                    tokio::task::yield_now().await;
                    first = poll_once(forward.as_mut()).await;
                }
                counted = Some(count_task());
            }
            match first {
                std::task::Poll::Ready(answer) => answer,
                std::task::Poll::Pending => tokio::select! {
                    answer = forward.as_mut() => answer,
                    // The decision was settled meanwhile: this call is cut
                    // (the guard's drop, or the settlement, records it).
                    _ = decisions.wait_for(|now| *now != decision) => return Err(ModelError::Cut),
                },
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
                if call.counting() {
                    self.counts_moved();
                }
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
        if let Some(task) = counted {
            // Almost always done: it started with the call. A join error (the
            // runtime shutting down) leaves the count to `prompt_tokens()`.
            let _ = task.await;
        }
        let prompt_tokens = match self.state().calls.get(&guard.id) {
            Some(call) => call.prompt_tokens(),
            None => return Err(ModelError::Cut),
        };
        self.prompt_counted(guard.id, prompt_tokens);
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
    /// window (or outside `in_decision`, when given). A prompt that does not
    /// fit while calls forwarded uncounted still hold their bytes waits for
    /// their counts instead ([`Admission::AfterCounts`]).
    fn reserve(
        &self,
        in_decision: Option<u64>,
        prompt_tokens: u64,
        max_tokens: u32,
        model: &Arc<Model>,
        messages: &Arc<Vec<ChatMessage>>,
        started: Instant,
    ) -> Result<Admission<'_>, ModelError> {
        let budget_tokens = self.inner.budget_tokens;
        let mut state = self.state();
        let current = self.check_window(&state, in_decision)?;
        let left_tokens = state.left(budget_tokens);
        if !state.gassed_out
            && prompt_tokens > left_tokens
            && state.calls.values().any(InFlight::counting)
        {
            // Subscribed under the lock that every count's end is announced
            // under: no announcement can slip between.
            return Ok(Admission::AfterCounts(self.inner.counted.subscribe()));
        }
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
        let prompt = Prompt::Counted(prompt_tokens);
        Ok(Admission::Reserved(self.hold(
            &mut state, current, prompt, cap_tokens, model, messages, started,
        )))
    }

    /// Holds a prompt not yet counted by its bytes, and the cap asked, when
    /// both fit what is left; `None` (nothing held, nothing refused) when they
    /// do not, or the fighter is gassed out: the prompt is then counted first.
    #[allow(clippy::too_many_arguments)]
    fn reserve_uncounted(
        &self,
        in_decision: Option<u64>,
        prompt: Prompt,
        max_tokens: u32,
        model: &Arc<Model>,
        messages: &Arc<Vec<ChatMessage>>,
        started: Instant,
    ) -> Result<Option<Reservation<'_>>, ModelError> {
        let budget_tokens = self.inner.budget_tokens;
        let mut state = self.state();
        let current = self.check_window(&state, in_decision)?;
        let cap_tokens = u64::from(max_tokens);
        if state.gassed_out
            || max_tokens == 0
            || prompt.held_tokens() + cap_tokens > state.left(budget_tokens)
        {
            return Ok(None);
        }
        Ok(Some(self.hold(
            &mut state, current, prompt, cap_tokens, model, messages, started,
        )))
    }

    /// The decision now, when a call made `in_decision` may be admitted.
    fn check_window(
        &self,
        state: &MeterState,
        in_decision: Option<u64>,
    ) -> Result<u64, ModelError> {
        let current = *self.inner.decisions.borrow();
        let outside = match in_decision {
            Some(decision) => state.window != Window::Open || decision != current,
            None => state.window == Window::Closed,
        };
        if outside {
            return Err(ModelError::NotDeciding);
        }
        Ok(current)
    }

    /// Records an admitted call in flight and what it holds.
    #[allow(clippy::too_many_arguments)]
    fn hold(
        &self,
        state: &mut MeterState,
        decision: u64,
        prompt: Prompt,
        cap_tokens: u64,
        model: &Arc<Model>,
        messages: &Arc<Vec<ChatMessage>>,
        started: Instant,
    ) -> Reservation<'_> {
        let call = InFlight {
            prompt,
            cap_tokens,
            model: model.clone(),
            messages: self.inner.keep_texts.then(|| messages.clone()),
            started,
        };
        state.reserved_tokens += call.reserved_tokens();
        let id = state.next_call;
        state.next_call += 1;
        state.calls.insert(id, call);
        Reservation {
            guard: CallGuard { meter: self, id },
            cap_tokens,
            decisions: self.inner.decisions.subscribe(),
            decision,
        }
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

    fn house_meter(budget_tokens: u64) -> FighterMeter {
        let catalogue =
            crate::models::Catalogue::single(crate::models::HOUSE_URL, None).expect("house");
        let gateway =
            ModelGateway::from_catalogue(&catalogue, &|_| None, &crate::tls::Trust::system())
                .expect("gateway");
        FighterMeter::new(gateway, budget_tokens)
    }

    /// A prompt forwarded while it is counted holds its bytes; a call that
    /// fits only once that count is known waits for it instead of being
    /// refused (a refusal gasses the fighter out), and is refused only on
    /// exact counts.
    #[tokio::test]
    async fn a_call_that_fits_only_by_counts_waits_for_them() {
        let meter = house_meter(12_000);
        let model = meter.gateway().resolve("").expect("the house model");
        let started = Instant::now();
        let long = Arc::new(vec![ChatMessage::new("user", "word ".repeat(2_000))]);
        let long_tokens = count_prompt_tokens(&long);
        assert!(long_tokens < 10_000, "{long_tokens}");
        let prompt = Prompt::Counting {
            bytes: 10_000,
            messages: long.clone(),
            count: Arc::default(),
        };
        let first = meter
            .reserve_uncounted(None, prompt, 16, &model, &long, started)
            .expect("in the window")
            .expect("fits by its bytes");
        assert_eq!(first.cap_tokens, 16);
        assert_eq!(meter.budget_left_tokens(), 12_000 - 10_000 - 16);
        let second = Arc::new(vec![ChatMessage::new("user", "x")]);
        let Admission::AfterCounts(mut moved) = meter
            .reserve(None, 3_000, 16, &model, &second, started)
            .expect("not refused")
        else {
            panic!("3,000 tokens fit by counts: the call must wait for them");
        };
        assert!(!meter.gassed_out());
        meter.prompt_counted(first.guard.id, long_tokens);
        moved.changed().await.expect("woken by the count");
        assert_eq!(meter.budget_left_tokens(), 12_000 - long_tokens - 16);
        let Admission::Reserved(admitted) = meter
            .reserve(None, 3_000, 16, &model, &second, started)
            .expect("fits")
        else {
            panic!("nothing is counting any more");
        };
        assert_eq!(admitted.cap_tokens, 16);
        // Nothing counting: a prompt that does not fit is refused at once.
        let refused = meter.reserve(None, 12_000, 16, &model, &second, started);
        assert!(matches!(refused, Err(ModelError::BudgetExhausted { .. })));
        assert!(meter.gassed_out());
        // Cut now, each call is charged its prompt's count, never its bytes.
        drop((first, admitted));
        assert_eq!(meter.settle().tokens, long_tokens + 3_000);
    }

    /// An uncounted prompt is never refused by its bytes: one that does not
    /// fit by them, or a call that names no cap, is counted first.
    #[test]
    fn an_uncounted_prompt_that_does_not_fit_by_its_bytes_is_counted_first() {
        let meter = house_meter(1_000);
        let model = meter.gateway().resolve("").expect("the house model");
        let long = Arc::new(vec![ChatMessage::new("user", "word ".repeat(400))]);
        let uncounted = |max_tokens| {
            let prompt = Prompt::Counting {
                bytes: 2_000,
                messages: long.clone(),
                count: Arc::default(),
            };
            meter
                .reserve_uncounted(None, prompt, max_tokens, &model, &long, Instant::now())
                .expect("in the window")
                .is_some()
        };
        assert!(!uncounted(16));
        assert!(!uncounted(0));
        assert!(!meter.gassed_out());
        assert_eq!(meter.budget_left_tokens(), 1_000);
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
