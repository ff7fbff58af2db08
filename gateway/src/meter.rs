//! The token meter and the model gateway: one seam that both the WASM `model`
//! import and `duel.v1.Inference` go through. It counts prompt and completion
//! tokens with `o200k_base` (RULES "Token budget", D-7; [`crate::tokens`]),
//! caps each call's completion at what is left after the prompt, refuses a
//! call whose prompt alone does not fit (gassing the fighter out), and
//! forwards the rest to an OpenAI-compatible chat-completions endpoint.
//!
//! A call goes through named stages, each a function of [`FighterMeter`]:
//! `admit` (into its decision; from then on recorded, however it ends;
//! `complete_request` and `open_call` admit), then, called in order by
//! `complete_admitted`, `resolve` (the model),
//! `validate` (every text a bot sends bounded before it is recorded, logged
//! or echoed; roles from the documented set), `size_by_bytes` (a prompt
//! that cannot fit even at the longest token's bytes each is refused
//! uncounted), then either `reserve_by_bytes` (a prompt that fits by its
//! bytes is forwarded while it is counted, so the model's time hides the
//! count) or `count_and_reserve` (`count_messages`: one count per fighter at
//! a time, stopped once it cannot fit, cancelled when its decision ends;
//! then `reserve`), `forward`, and `charge_and_record` (the completion cut
//! to the cap, the call charged and recorded). A call that would be refused
//! while counts are out waits for them, so refusals rest on exact counts.
//!
//! Every call belongs to the decision it was made in. [`FighterMeter::settle`]
//! ends a decision: a call still running then is cut (a prompt forwarded
//! already is charged; one not yet counted is not forwarded and costs
//! nothing; no completion reaches the bot), so what a decision spent is
//! final when it is recorded, even for a decision the runner abandoned at
//! the wall clock. An endpoint bot's meter also has a decision window
//! ([`FighterMeter::open_window`]): outside it, calls are refused.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use duel_replays::{CallOutcome, CallRecord, ModelPrice};

use crate::limits::{
    INLINE_COUNT_MAX_BYTES, MAX_CACHED_COUNTS, MAX_MODEL_CALLS_PER_DECISION, MAX_PROMPT_BYTES,
    MAX_PROMPT_MESSAGES, MAX_STOP_BYTES, MAX_STOP_STRINGS, MESSAGE_ROLES, MIN_CACHED_TEXT_BYTES,
    OVERLAP_COUNT_MAX_BYTES,
};
pub use crate::models::{ChatMessage, ModelConfig, ModelGateway, Sampling};
use crate::models::{Model, Resolve};
use crate::tokens::{Count, min_tokens};

/// Loads the tokenizer now, so the first metered call of a match does not pay
/// for it. The match host calls it once, before any match starts.
pub fn warm_up() {
    crate::tokens::warm_up();
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
    /// The tokens of `text` when at most `limit_tokens`, from the cache when
    /// it was counted before. Blocking (it counts): call it off the async
    /// threads.
    fn count_within(
        cache: &Mutex<CountCache>,
        text: &str,
        limit_tokens: u64,
        cancelled: &dyn Fn() -> bool,
        counted_bytes: &AtomicU64,
    ) -> Count {
        if text.len() < MIN_CACHED_TEXT_BYTES {
            counted_bytes.fetch_add(text.len() as u64, Ordering::Relaxed);
            return crate::tokens::count_within(text, limit_tokens, cancelled);
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
            if let Some(&tokens) = cache.counts.get(&key) {
                return if tokens > limit_tokens {
                    Count::OverLimit
                } else {
                    Count::Tokens(tokens)
                };
            }
            key
        };
        counted_bytes.fetch_add(text.len() as u64, Ordering::Relaxed);
        let count = crate::tokens::count_within(text, limit_tokens, cancelled);
        if let Count::Tokens(tokens) = count {
            let mut cache = lock();
            if cache.counts.len() >= MAX_CACHED_COUNTS {
                cache.counts.clear();
            }
            cache.counts.insert(key, tokens);
        }
        count
    }

    /// The tokens of a prompt when at most `limit_tokens`, message by
    /// message through the cache. Blocking, like [`CountCache::count_within`].
    fn count_prompt_within(
        cache: &Mutex<CountCache>,
        messages: &[ChatMessage],
        limit_tokens: u64,
        cancelled: &dyn Fn() -> bool,
        counted_bytes: &AtomicU64,
    ) -> Count {
        let mut tokens = 0u64;
        for message in messages {
            if cancelled() {
                return Count::Cancelled;
            }
            match CountCache::count_within(
                cache,
                &message.content,
                limit_tokens - tokens,
                cancelled,
                counted_bytes,
            ) {
                Count::Tokens(message_tokens) => tokens += message_tokens,
                other => return other,
            }
        }
        Count::Tokens(tokens)
    }

    /// The tokens of a prompt, whatever their number. Blocking.
    fn count_prompt(
        cache: &Mutex<CountCache>,
        messages: &[ChatMessage],
        counted_bytes: &AtomicU64,
    ) -> u64 {
        match CountCache::count_prompt_within(cache, messages, u64::MAX, &|| false, counted_bytes) {
            Count::Tokens(tokens) => tokens,
            // Neither a limit nor a cancellation was given.
            Count::OverLimit | Count::Cancelled => count_prompt_tokens(messages),
        }
    }
}

/// Tokens of `text` under `o200k_base` ([`crate::tokens::count`]).
pub fn count_tokens(text: &str) -> u64 {
    crate::tokens::count(text)
}

/// The prompt's tokens: the sum over the message texts forwarded (roles and
/// message framing are not counted, D-7).
pub fn count_prompt_tokens(messages: &[ChatMessage]) -> u64 {
    messages
        .iter()
        .map(|message| count_tokens(&message.content))
        .sum()
}

/// Why a model call gave no completion.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The prompt alone does not fit what is left of the budget, or the budget
    /// is already spent: the fighter is gassed out. `prompt_tokens` is the
    /// prompt's count, or what it was known to exceed when counting stopped
    /// once it could not fit.
    #[error(
        "token budget exhausted ({left_tokens} tokens left, the prompt needs at least {prompt_tokens})"
    )]
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
    /// The catalogue has no model of this name (as recorded: bounded, see
    /// [`crate::models::recorded_name`]); nothing was counted.
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
    /// model answered: a prompt forwarded already was charged to that
    /// decision, no completion.
    #[error("the decision ended before the model answered; a prompt forwarded was charged")]
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
    /// catalogue does not have, as [`crate::models::recorded_name`] bounds
    /// it (empty when it sent none and none applies).
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
    /// The same number, for counts on the blocking pool to see that their
    /// decision ended (and stop).
    decision_now: AtomicU64,
    /// Bytes of this fighter's texts whose count was started (prompts and
    /// completions; a text the cache knew costs nothing): what its calls
    /// cost the referee in counting.
    counted_bytes: AtomicU64,
    /// One count of this fighter's texts at a time: a bot that sends many
    /// long prompts at once gets them counted one after another, on at most
    /// one core, and what its decision did not reach is never counted.
    count_turn: Arc<tokio::sync::Semaphore>,
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

/// A call from its admission to its end.
#[derive(Clone, Debug)]
struct InFlight {
    prompt: Prompt,
    cap_tokens: u64,
    /// The model's name as recorded (the bot's, bounded, until resolved).
    model: Arc<str>,
    price: Option<ModelPrice>,
    /// The messages, when texts are kept: a call cut in flight still shows
    /// what it asked.
    messages: Option<Arc<Vec<ChatMessage>>>,
    started: Instant,
}

/// A call's prompt as the meter holds it.
#[derive(Clone, Debug)]
enum Prompt {
    /// Admitted, not yet counted and not forwarded: holds nothing; cut now,
    /// it costs nothing.
    Waiting,
    /// Counted before the call was forwarded (stop strings included).
    Counted(u64),
    /// Forwarded while it is counted (`OVERLAP_COUNT_MAX_BYTES`): its bytes
    /// (and its stop strings' tokens) are held, which no count exceeds. The
    /// counting task fills `count`, the messages' tokens.
    Counting {
        bytes: u64,
        stop_tokens: u64,
        messages: Arc<Vec<ChatMessage>>,
        count: Arc<OnceLock<u64>>,
    },
}

impl Prompt {
    /// What the prompt holds of the budget: its tokens, or its bytes while
    /// it is counted.
    fn held_tokens(&self) -> u64 {
        match self {
            Prompt::Waiting => 0,
            Prompt::Counted(tokens) => *tokens,
            Prompt::Counting {
                bytes, stop_tokens, ..
            } => bytes + stop_tokens,
        }
    }

    /// The least the prompt will hold once counted.
    fn held_at_least_tokens(&self) -> u64 {
        match self {
            Prompt::Counting {
                bytes, stop_tokens, ..
            } => min_tokens(usize::try_from(*bytes).unwrap_or(usize::MAX)) + stop_tokens,
            other => other.held_tokens(),
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
            Prompt::Waiting => 0,
            Prompt::Counted(tokens) => *tokens,
            Prompt::Counting {
                messages,
                count,
                stop_tokens,
                ..
            } => *count.get_or_init(|| count_prompt_tokens(messages)) + stop_tokens,
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

    /// The most that can be left for a new prompt once every call in flight
    /// is counted: what is left now, plus what calls forwarded uncounted
    /// hold beyond the least their counts can be. A prompt with more tokens
    /// than this is refused whatever those counts turn out to be.
    fn left_at_most(&self, budget_tokens: u64) -> u64 {
        let held_at_least: u64 = self
            .calls
            .values()
            .map(|call| call.prompt.held_at_least_tokens() + call.cap_tokens)
            .sum();
        budget_tokens
            .saturating_sub(self.used_tokens)
            .saturating_sub(held_at_least)
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

    /// Charges a call cut before its answer (its prompt, if it was
    /// forwarded) and records it.
    fn cut(&mut self, budget_tokens: u64, id: u64, call: &InFlight) {
        let charged = self.charge(budget_tokens, call, call.prompt_tokens());
        let note = match call.prompt {
            Prompt::Waiting => {
                "the decision ended before the prompt was counted; nothing was forwarded or charged"
            }
            _ => "the decision ended before the model answered",
        };
        self.ended.push((
            id,
            ModelCall {
                model: call.model.clone(),
                price: call.price.clone(),
                prompt_tokens: charged,
                completion_tokens: 0,
                outcome: CallOutcome::Cut,
                latency_us: micros_since(call.started),
                note: Some(note.to_owned()),
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
#[derive(Debug)]
enum Admission {
    /// The prompt and this completion cap are held.
    Reserved { cap_tokens: u64 },
    /// The prompt does not fit what is left (or the fighter is gassed out):
    /// the call is refused on the budget.
    Refused { left_tokens: u64 },
    /// The prompt does not fit while calls in flight are still being
    /// counted: ask again once they are (the receiver changes then).
    AfterCounts(tokio::sync::watch::Receiver<u64>),
}

/// A call admitted into its decision ([`FighterMeter::admit`]). Dropped
/// before it is finished (its future was dropped with an abandoned
/// decision), the call counts as cut.
struct CallGuard<'a> {
    meter: &'a FighterMeter,
    id: u64,
    /// The decision the call was made in: it is cut once the counter moves on.
    decision: u64,
    started: Instant,
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

/// A call admitted into an endpoint bot's decision before its request was
/// read ([`FighterMeter::open_call`]): from now on it is recorded, however
/// it ends.
pub struct OpenCall<'a> {
    guard: CallGuard<'a>,
}

impl std::fmt::Debug for OpenCall<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenCall")
            .field("id", &self.guard.id)
            .field("decision", &self.guard.decision)
            .finish()
    }
}

impl OpenCall<'_> {
    /// Resolves once the call's decision has ended (the call is cut then):
    /// a request still arriving is not worth reading any more.
    pub async fn decision_ended(&self) {
        let mut decisions = self.guard.meter.inner.decisions.subscribe();
        // The sender lives as long as the meter.
        let _ = decisions.wait_for(|now| *now != self.guard.decision).await;
    }

    /// Meters the call, now that its request is read.
    pub async fn complete(self, request: ModelRequest) -> Result<Completion, ModelError> {
        let meter = self.guard.meter;
        meter.complete_admitted(self.guard, request).await
    }

    /// Records the call as `invalid` (a request that could not even be
    /// read as a chat completion; `model` is what it named, bounded before
    /// it is recorded) and returns the error to answer with.
    pub fn refuse_unread(&self, model: &str, reason: String) -> ModelError {
        let meter = self.guard.meter;
        let refusal = Refusal {
            model: crate::models::recorded_name(model).into(),
            price: None,
            outcome: CallOutcome::Invalid,
            note: reason.clone(),
            error: ModelError::Invalid(reason),
            gasses_out: false,
        };
        match meter.refuse::<()>(&self.guard, refusal, &[]) {
            Err(error) => error,
            Ok(()) => ModelError::Cut,
        }
    }
}

/// A call that ended without reaching a model: what it is recorded with
/// and the error the bot gets.
struct Refusal {
    model: Arc<str>,
    price: Option<ModelPrice>,
    outcome: CallOutcome,
    note: String,
    error: ModelError,
    /// A refusal on the budget gasses the fighter out.
    gasses_out: bool,
}

impl Refusal {
    fn invalid(model: &Model, note: String) -> Refusal {
        Refusal {
            model: model.name.clone(),
            price: Some(model.price.clone()),
            outcome: CallOutcome::Invalid,
            note: note.clone(),
            error: ModelError::Invalid(note),
            gasses_out: false,
        }
    }

    /// A prompt the referee could not count (it shut down, or a count
    /// failed): recorded as `invalid` or `unavailable`, nothing charged.
    fn uncounted(model: &Model, error: ModelError) -> Refusal {
        let outcome = match error {
            ModelError::Invalid(_) => CallOutcome::Invalid,
            _ => CallOutcome::Unavailable,
        };
        Refusal {
            model: model.name.clone(),
            price: Some(model.price.clone()),
            outcome,
            note: error.to_string(),
            error,
            gasses_out: false,
        }
    }

    fn budget(model: &Model, prompt_tokens: u64, left_tokens: u64) -> Refusal {
        Refusal {
            model: model.name.clone(),
            price: Some(model.price.clone()),
            outcome: CallOutcome::Refused,
            note: "the token budget is spent".to_owned(),
            error: ModelError::BudgetExhausted {
                prompt_tokens,
                left_tokens,
            },
            gasses_out: true,
        }
    }

    /// The stage that resolves the model: why a name resolves to none.
    fn unresolved(requested: &str, why: Resolve) -> Refusal {
        match why {
            Resolve::NoModels => {
                let note = "no model is configured (--model-url or --models)".to_owned();
                Refusal {
                    model: crate::models::recorded_name(requested).into(),
                    price: None,
                    outcome: CallOutcome::Unavailable,
                    note: note.clone(),
                    error: ModelError::Unavailable(note),
                    gasses_out: false,
                }
            }
            Resolve::NotFound(name) => Refusal {
                model: name.as_str().into(),
                price: None,
                outcome: CallOutcome::Invalid,
                note: format!("no model `{name}`"),
                error: ModelError::ModelNotFound(name),
                gasses_out: false,
            },
            Resolve::NameTooLong(length_bytes) => {
                let note = format!(
                    "the model name is {length_bytes} bytes; names are at most {} (GET /v1/models lists them)",
                    crate::limits::MAX_MODEL_NAME_BYTES
                );
                Refusal {
                    model: crate::models::recorded_name(requested).into(),
                    price: None,
                    outcome: CallOutcome::Invalid,
                    note: note.clone(),
                    error: ModelError::Invalid(note),
                    gasses_out: false,
                }
            }
            Resolve::NoDefault(names) => {
                let note = format!("name a model: one of {}", names.join(", "));
                Refusal {
                    model: "".into(),
                    price: None,
                    outcome: CallOutcome::Invalid,
                    note: note.clone(),
                    error: ModelError::Invalid(note),
                    gasses_out: false,
                }
            }
        }
    }
}

/// The stage that validates a request: why the gateway cannot take it, in
/// words the bot's author can act on; `None` when it can.
fn invalid_request(messages: &[ChatMessage], sampling: &Sampling) -> Option<String> {
    if messages.is_empty() {
        return Some("no messages".to_owned());
    }
    if messages.len() > MAX_PROMPT_MESSAGES {
        return Some(format!(
            "{} messages, more than {MAX_PROMPT_MESSAGES}",
            messages.len()
        ));
    }
    if let Some((index, _)) = messages
        .iter()
        .enumerate()
        .find(|(_, message)| !MESSAGE_ROLES.contains(&message.role.as_str()))
    {
        return Some(format!(
            "messages[{index}].role must be one of {}",
            MESSAGE_ROLES.join(", ")
        ));
    }
    let bytes = prompt_bytes(messages);
    if bytes > MAX_PROMPT_BYTES {
        return Some(format!(
            "the prompt's texts are {bytes} bytes, more than {MAX_PROMPT_BYTES}"
        ));
    }
    if sampling.stop.len() > MAX_STOP_STRINGS {
        return Some(format!("at most {MAX_STOP_STRINGS} stop strings"));
    }
    if let Some((index, stop)) = sampling
        .stop
        .iter()
        .enumerate()
        .find(|(_, stop)| stop.is_empty() || stop.len() > MAX_STOP_BYTES)
    {
        return Some(format!(
            "stop[{index}] is {} bytes; a stop string is 1 to {MAX_STOP_BYTES}",
            stop.len()
        ));
    }
    None
}

/// A validated prompt as it will be sent: its messages, the bytes of their
/// texts, and its stop strings' tokens.
struct PromptSent {
    messages: Arc<Vec<ChatMessage>>,
    bytes: usize,
    stop_tokens: u64,
}

/// The count of a prompt forwarded while it is counted, to start once the
/// request is on its way: in the fighter's count turn, on the blocking pool.
struct OverlapCount {
    meter: FighterMeter,
    id: u64,
    messages: Arc<Vec<ChatMessage>>,
    count: Arc<OnceLock<u64>>,
}

impl OverlapCount {
    fn start(self) -> tokio::task::JoinHandle<()> {
        let turn = self.meter.inner.count_turn.clone();
        let count_in_turn = move |turn: tokio::sync::OwnedSemaphorePermit| {
            move || {
                let _turn = turn;
                let inner = &self.meter.inner;
                let tokens = *self.count.get_or_init(|| {
                    CountCache::count_prompt(&inner.counts, &self.messages, &inner.counted_bytes)
                });
                self.meter.prompt_counted(self.id, tokens);
            }
        };
        // The turn is almost always free: then straight to the blocking
        // pool, with no task between.
        match turn.clone().try_acquire_owned() {
            Ok(turn) => tokio::task::spawn_blocking(count_in_turn(turn)),
            Err(_) => tokio::spawn(async move {
                if let Ok(turn) = turn.acquire_owned().await {
                    let _ = tokio::task::spawn_blocking(count_in_turn(turn)).await;
                }
            }),
        }
    }
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
                decision_now: AtomicU64::new(0),
                counted_bytes: AtomicU64::new(0),
                count_turn: Arc::new(tokio::sync::Semaphore::new(1)),
                counted: tokio::sync::watch::channel(0).0,
            }),
        }
    }

    /// Wakes calls waiting for counts in flight ([`Admission::AfterCounts`]).
    fn counts_moved(&self) {
        self.inner.counted.send_modify(|moves| *moves += 1);
    }

    /// A call forwarded while counted (call `id`) has its count (its
    /// messages' tokens): it now holds its tokens instead of its bytes, and
    /// calls waiting for that are woken. Nothing happens when the call ended
    /// meanwhile or was counted already.
    fn prompt_counted(&self, id: u64, message_tokens: u64) {
        let mut state = self.state();
        let Some(call) = state.calls.get_mut(&id) else {
            return;
        };
        let Prompt::Counting { stop_tokens, .. } = call.prompt else {
            return;
        };
        let held_tokens = call.reserved_tokens();
        call.prompt = Prompt::Counted(message_tokens + stop_tokens);
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

    /// Calls admitted and not yet ended (counting, waiting for their count
    /// turn, or at the model).
    pub fn calls_in_flight(&self) -> usize {
        self.state().calls.len()
    }

    /// Bytes of this fighter's texts the meter has counted or started to
    /// count (a text its count cache knew is not counted again).
    pub fn counted_bytes(&self) -> u64 {
        self.inner.counted_bytes.load(Ordering::Relaxed)
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

    /// Ends the current decision: cuts the calls still in flight (charging
    /// the prompts forwarded), closes the window if one is used, and returns
    /// what the decision spent and every call it made. Call it once per
    /// decision, answered or abandoned.
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
        // Under the lock, so a call admitted now sees the new number; counts
        // of the decision that ended see it and stop.
        self.inner.decisions.send_modify(|decision| *decision += 1);
        self.inner.decision_now.fetch_add(1, Ordering::AcqRel);
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
        let call = self.admit(None)?;
        self.complete_admitted(call, request).await
    }

    /// [`FighterMeter::complete_request`] for a call made in decision
    /// `decision` (from [`FighterMeter::open_window`]): refused unless that very
    /// decision is still open, so a late call is never charged to a later one.
    pub async fn complete_in_decision(
        &self,
        decision: u64,
        request: ModelRequest,
    ) -> Result<Completion, ModelError> {
        self.open_call(decision)?.complete(request).await
    }

    /// Admits a call of decision `decision` before its request is read, so
    /// that a call refused outside its decision (or past the per-decision
    /// bound) costs the gateway nothing, and a call admitted is recorded
    /// however it ends, even when its decision ends while its request is
    /// still arriving.
    pub fn open_call(&self, decision: u64) -> Result<OpenCall<'_>, ModelError> {
        Ok(OpenCall {
            guard: self.admit(Some(decision))?,
        })
    }

    /// The stage that admits a call into its decision: refused (and not
    /// recorded) outside the decision's window or past the per-decision call
    /// bound; from here on the call is recorded however it ends.
    fn admit(&self, in_decision: Option<u64>) -> Result<CallGuard<'_>, ModelError> {
        let started = Instant::now();
        let mut state = self.state();
        let decision = self.check_window(&state, in_decision)?;
        if state.decision_calls >= MAX_MODEL_CALLS_PER_DECISION {
            return Err(ModelError::TooManyCalls);
        }
        state.decision_calls += 1;
        let id = state.next_call;
        state.next_call += 1;
        state.calls.insert(
            id,
            InFlight {
                prompt: Prompt::Waiting,
                cap_tokens: 0,
                model: "".into(),
                price: None,
                messages: None,
                started,
            },
        );
        Ok(CallGuard {
            meter: self,
            id,
            decision,
            started,
        })
    }

    /// Ends a call that never reached a model, charging nothing (and
    /// gassing the fighter out when the refusal is on the budget). A call
    /// its decision already cut stays cut.
    fn refuse<T>(
        &self,
        call: &CallGuard<'_>,
        refusal: Refusal,
        messages: &[ChatMessage],
    ) -> Result<T, ModelError> {
        let budget_tokens = self.inner.budget_tokens;
        let mut state = self.state();
        let Some(flight) = state.calls.remove(&call.id) else {
            return Err(ModelError::Cut);
        };
        state.charge(budget_tokens, &flight, 0);
        if refusal.gasses_out {
            state.gassed_out = true;
        }
        let text = self.inner.keep_texts.then(|| CallText {
            messages: messages.to_vec(),
            completion: String::new(),
        });
        state.ended.push((
            call.id,
            ModelCall {
                model: refusal.model,
                price: refusal.price,
                prompt_tokens: 0,
                completion_tokens: 0,
                outcome: refusal.outcome,
                latency_us: micros_since(call.started),
                note: Some(refusal.note),
                text,
            },
        ));
        Err(refusal.error)
    }

    /// Names the call's model (and keeps its messages, when texts are
    /// kept) in its record, so a call cut from here on shows them.
    fn name_call(&self, call: &CallGuard<'_>, model: &Model, messages: &Arc<Vec<ChatMessage>>) {
        let keep_texts = self.inner.keep_texts;
        let mut state = self.state();
        if let Some(flight) = state.calls.get_mut(&call.id) {
            flight.model = model.name.clone();
            flight.price = Some(model.price.clone());
            if keep_texts {
                flight.messages = Some(messages.clone());
            }
        }
    }

    /// The stage that counts a prompt's messages off the async threads,
    /// one count per fighter at a time, stopping once they are more than
    /// `limit_tokens` ([`Count::OverLimit`]); a count its decision's end
    /// overtakes stops, and the call is cut.
    async fn count_messages(
        &self,
        call: &CallGuard<'_>,
        messages: &Arc<Vec<ChatMessage>>,
        limit_tokens: u64,
    ) -> Result<Count, ModelError> {
        // A short prompt is counted where it is (tens of microseconds): the
        // hop to the blocking pool and back would cost more than the count.
        let bytes = prompt_bytes(messages);
        if bytes <= INLINE_COUNT_MAX_BYTES {
            self.inner
                .counted_bytes
                .fetch_add(bytes as u64, Ordering::Relaxed);
            // Exact whatever the limit: the reservation then refuses it
            // with its true count.
            return Ok(Count::Tokens(count_prompt_tokens(messages)));
        }
        // The turn is almost always free: taken at once, without a wait.
        let turn = match self.inner.count_turn.clone().try_acquire_owned() {
            Ok(turn) => turn,
            Err(_) => {
                let mut decisions = self.inner.decisions.subscribe();
                tokio::select! {
                    turn = self.inner.count_turn.clone().acquire_owned() => turn.map_err(|_| {
                        ModelError::Unavailable("the referee is shutting down".to_owned())
                    })?,
                    _ = decisions.wait_for(|now| *now != call.decision) => return Err(ModelError::Cut),
                }
            }
        };
        let cache = self.inner.counts.clone();
        let texts = messages.clone();
        let meter = self.inner.clone();
        let decision = call.decision;
        let counted = tokio::task::spawn_blocking(move || {
            let _turn = turn;
            let cancelled = || meter.decision_now.load(Ordering::Acquire) != decision;
            CountCache::count_prompt_within(
                &cache,
                &texts,
                limit_tokens,
                &cancelled,
                &meter.counted_bytes,
            )
        })
        .await;
        match counted {
            Ok(Count::Cancelled) => Err(ModelError::Cut),
            Ok(count) => Ok(count),
            Err(error) if error.is_panic() => {
                // Counting is linear and total on every text (tokens.rs, its
                // fuzz target); should it ever fail, the call is refused
                // uncharged rather than the referee brought down.
                tracing::error!(%error, "counting a prompt failed");
                Err(ModelError::Invalid(
                    "the referee could not count this prompt; nothing was charged".to_owned(),
                ))
            }
            // The runtime is shutting down. Nothing was counted, so nothing
            // is charged.
            Err(_) => Err(ModelError::Unavailable(
                "the referee is shutting down".to_owned(),
            )),
        }
    }

    /// [`crate::tokens::cut`] off the async threads, in the fighter's count turn.
    async fn cut_completion(&self, text: String, cap_tokens: u64) -> (String, u64) {
        self.inner
            .counted_bytes
            .fetch_add(text.len() as u64, Ordering::Relaxed);
        if text.len() <= INLINE_COUNT_MAX_BYTES {
            return crate::tokens::cut(text, cap_tokens);
        }
        let turn = self.inner.count_turn.clone().acquire_owned().await;
        tokio::task::spawn_blocking(move || {
            let _turn = turn;
            crate::tokens::cut(text, cap_tokens)
        })
        .await
        .unwrap_or((String::new(), 0))
    }

    /// A call's stages, in order; each is a function of its own below.
    async fn complete_admitted(
        &self,
        call: CallGuard<'_>,
        request: ModelRequest,
    ) -> Result<Completion, ModelError> {
        let ModelRequest {
            model: requested,
            messages,
            max_tokens,
            sampling,
        } = request;
        let model = self.resolve(&call, &requested, &messages)?;
        let prompt = self.validate(&call, &model, messages, &sampling)?;
        self.size_by_bytes(&call, &model, &prompt)?;
        let (cap_tokens, overlap) = match self.reserve_by_bytes(&call, &prompt, max_tokens)? {
            Some((cap_tokens, overlap)) => (cap_tokens, Some(overlap)),
            None => {
                let cap_tokens = self
                    .count_and_reserve(
                        &call,
                        &model,
                        &prompt.messages,
                        prompt.stop_tokens,
                        max_tokens,
                    )
                    .await?;
                (cap_tokens, None)
            }
        };
        let text = self
            .forward(&call, &model, &prompt, cap_tokens, &sampling, overlap)
            .await?;
        self.charge_and_record(&call, &model, &prompt, cap_tokens, text)
            .await
    }

    /// The stage that resolves the model a call names: the model, or the
    /// call refused and recorded (a name past the catalogue's bound is
    /// refused without being compared, and recorded by its bound prefix and
    /// length).
    fn resolve(
        &self,
        call: &CallGuard<'_>,
        requested: &str,
        messages: &[ChatMessage],
    ) -> Result<Arc<Model>, ModelError> {
        match self.inner.gateway.resolve(requested) {
            Ok(model) => Ok(model),
            Err(why) => self.refuse(call, Refusal::unresolved(requested, why), messages),
        }
    }

    /// The stage that validates a request ([`invalid_request`]: every text
    /// bounded, roles from the documented set) and names the call's model
    /// in its record; what is sent, with its stop strings' tokens (they
    /// reach the model, so they are counted with the prompt; at most four
    /// short ones, counted here).
    fn validate(
        &self,
        call: &CallGuard<'_>,
        model: &Arc<Model>,
        messages: Vec<ChatMessage>,
        sampling: &Sampling,
    ) -> Result<PromptSent, ModelError> {
        if let Some(note) = invalid_request(&messages, sampling) {
            return self.refuse(call, Refusal::invalid(model, note), &messages);
        }
        let messages = Arc::new(messages);
        self.name_call(call, model, &messages);
        Ok(PromptSent {
            bytes: prompt_bytes(&messages),
            stop_tokens: sampling.stop.iter().map(|stop| count_tokens(stop)).sum(),
            messages,
        })
    }

    /// The stage that sizes a prompt by its bytes: one that cannot fit even
    /// if each of its tokens were the longest is refused (on the budget)
    /// before it is counted, as is any call of a fighter gassed out.
    fn size_by_bytes(
        &self,
        call: &CallGuard<'_>,
        model: &Arc<Model>,
        prompt: &PromptSent,
    ) -> Result<(), ModelError> {
        let budget_tokens = self.inner.budget_tokens;
        let (gassed_out, left_at_most, left_now) = {
            let state = self.state();
            (
                state.gassed_out,
                state.left_at_most(budget_tokens),
                state.left(budget_tokens),
            )
        };
        let least_tokens = min_tokens(prompt.bytes) + prompt.stop_tokens;
        if gassed_out || least_tokens > left_at_most {
            return self.refuse(
                call,
                Refusal::budget(model, least_tokens, left_now),
                &prompt.messages,
            );
        }
        Ok(())
    }

    /// The stage that holds a prompt by its bytes, when it may be forwarded
    /// while it is counted (`OVERLAP_COUNT_MAX_BYTES`, a cap named, and its
    /// bytes plus the cap fit what is left: the model's time then hides the
    /// count); the cap held and the count to start beside the forward.
    /// `None`: the prompt is counted first.
    fn reserve_by_bytes(
        &self,
        call: &CallGuard<'_>,
        prompt: &PromptSent,
        max_tokens: u32,
    ) -> Result<Option<(u64, OverlapCount)>, ModelError> {
        if max_tokens == 0
            || prompt.bytes <= INLINE_COUNT_MAX_BYTES
            || prompt.bytes > OVERLAP_COUNT_MAX_BYTES
        {
            return Ok(None);
        }
        let count = Arc::new(OnceLock::new());
        let held = Prompt::Counting {
            bytes: prompt.bytes as u64,
            stop_tokens: prompt.stop_tokens,
            messages: prompt.messages.clone(),
            count: count.clone(),
        };
        let Some(cap_tokens) = self.reserve_uncounted(call, held, max_tokens)? else {
            return Ok(None);
        };
        let overlap = OverlapCount {
            meter: self.clone(),
            id: call.id,
            messages: prompt.messages.clone(),
            count,
        };
        Ok(Some((cap_tokens, overlap)))
    }

    /// The stage that forwards a call to its model (and starts the count of
    /// a prompt held by its bytes once the request is on its way); the
    /// model's text. A call whose decision ends first is cut; a model that
    /// fails is recorded `unavailable`, nothing charged.
    async fn forward(
        &self,
        call: &CallGuard<'_>,
        model: &Arc<Model>,
        prompt: &PromptSent,
        cap_tokens: u64,
        sampling: &Sampling,
        mut overlap: Option<OverlapCount>,
    ) -> Result<String, ModelError> {
        if cap_tokens == 0 {
            return Ok(String::new());
        }
        let mut decisions = self.inner.decisions.subscribe();
        let mut forward = std::pin::pin!(model.complete(&prompt.messages, cap_tokens, sampling));
        // The request goes on its way first (one poll hands it to the
        // connection, a yield lets the connection write it); only then does
        // the count take a core. Started together, on 2 cores shared with
        // the upstream, the count delayed the forward by up to its own
        // length (docs/perf/grpc.md).
        let mut first = poll_once(forward.as_mut()).await;
        let mut counted = None;
        if let Some(overlap) = overlap.take() {
            if first.is_pending() {
                tokio::task::yield_now().await;
                first = poll_once(forward.as_mut()).await;
            }
            counted = Some(overlap.start());
        }
        let answer = match first {
            std::task::Poll::Ready(answer) => answer,
            std::task::Poll::Pending => tokio::select! {
                answer = forward.as_mut() => answer,
                // The decision was settled meanwhile: this call is cut (the
                // guard's drop, or the settlement, records it).
                _ = decisions.wait_for(|now| *now != call.decision) => return Err(ModelError::Cut),
            },
        };
        if let Some(task) = counted {
            // Almost always done: it started with the call. A join error
            // (the runtime shutting down) leaves the count to
            // `prompt_tokens()`.
            let _ = task.await;
        }
        match answer {
            Ok(answer) => Ok(answer.text),
            Err(reason) => Err(self.record_unavailable(call, model, &prompt.messages, reason)),
        }
    }

    /// Records a call whose model failed (the model's fault, not the
    /// bot's: nothing is charged); the error to answer with.
    fn record_unavailable(
        &self,
        call: &CallGuard<'_>,
        model: &Model,
        messages: &Arc<Vec<ChatMessage>>,
        reason: String,
    ) -> ModelError {
        let mut state = self.state();
        let Some(flight) = state.calls.remove(&call.id) else {
            return ModelError::Cut;
        };
        state.charge(self.inner.budget_tokens, &flight, 0);
        if flight.counting() {
            self.counts_moved();
        }
        let text = self.inner.keep_texts.then(|| CallText {
            messages: messages.as_ref().clone(),
            completion: String::new(),
        });
        state.ended.push((
            call.id,
            ModelCall {
                model: model.name.clone(),
                price: Some(model.price.clone()),
                prompt_tokens: 0,
                completion_tokens: 0,
                outcome: CallOutcome::Unavailable,
                latency_us: micros_since(call.started),
                note: Some(reason.clone()),
                text,
            },
        ));
        ModelError::Unavailable(reason)
    }

    /// The stages that end an answered call: its completion cut to the cap
    /// (a model with another tokenizer can run over it as we count it), the
    /// prompt and completion charged, the call recorded.
    async fn charge_and_record(
        &self,
        call: &CallGuard<'_>,
        model: &Model,
        prompt: &PromptSent,
        cap_tokens: u64,
        text: String,
    ) -> Result<Completion, ModelError> {
        let budget_tokens = self.inner.budget_tokens;
        let prompt_tokens = match self.state().calls.get(&call.id) {
            Some(flight) => flight.prompt_tokens(),
            None => return Err(ModelError::Cut),
        };
        self.prompt_counted(call.id, prompt_tokens.saturating_sub(prompt.stop_tokens));
        let full_bytes = text.len();
        let (text, completion_tokens) = self.cut_completion(text, cap_tokens).await;
        let mut state = self.state();
        let Some(flight) = state.calls.remove(&call.id) else {
            return Err(ModelError::Cut);
        };
        let charged = state.charge(budget_tokens, &flight, prompt_tokens + completion_tokens);
        debug_assert_eq!(
            charged,
            prompt_tokens + completion_tokens,
            "the reservation covers the call"
        );
        let record_text = self.inner.keep_texts.then(|| CallText {
            messages: prompt.messages.as_ref().clone(),
            completion: text.clone(),
        });
        state.ended.push((
            call.id,
            ModelCall {
                model: model.name.clone(),
                price: Some(model.price.clone()),
                prompt_tokens,
                completion_tokens,
                outcome: CallOutcome::Ok,
                latency_us: micros_since(call.started),
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
            budget_left_tokens: budget_tokens - state.used_tokens,
        })
    }

    /// The stages that count a prompt (stopping once it cannot fit) and
    /// hold it with its completion cap; the cap held.
    async fn count_and_reserve(
        &self,
        call: &CallGuard<'_>,
        model: &Arc<Model>,
        messages: &Arc<Vec<ChatMessage>>,
        stop_tokens: u64,
        max_tokens: u32,
    ) -> Result<u64, ModelError> {
        let budget_tokens = self.inner.budget_tokens;
        let mut limit_tokens = self.state().left_at_most(budget_tokens);
        let prompt_tokens = loop {
            let message_limit = limit_tokens.saturating_sub(stop_tokens);
            let count = match self.count_messages(call, messages, message_limit).await {
                Ok(count) => count,
                Err(ModelError::Cut) => return Err(ModelError::Cut),
                // Never the bot's doing (the runtime stopping, or a count
                // that failed): recorded as such, nothing charged.
                Err(error) => return self.refuse(call, Refusal::uncounted(model, error), messages),
            };
            match count {
                Count::Tokens(tokens) => break tokens + stop_tokens,
                Count::OverLimit => {
                    // Calls that ended meanwhile may have freed some of
                    // what they held: count again against the new limit.
                    let (now_at_most, left_now) = {
                        let state = self.state();
                        (state.left_at_most(budget_tokens), state.left(budget_tokens))
                    };
                    if now_at_most > limit_tokens {
                        limit_tokens = now_at_most;
                        continue;
                    }
                    return self.refuse(
                        call,
                        Refusal::budget(model, limit_tokens.saturating_add(1), left_now),
                        messages,
                    );
                }
                // Mapped to `Cut` by the count.
                Count::Cancelled => return Err(ModelError::Cut),
            }
        };
        loop {
            match self.reserve(call, prompt_tokens, max_tokens)? {
                Admission::Reserved { cap_tokens } => return Ok(cap_tokens),
                Admission::AfterCounts(mut moved) => {
                    // The sender lives as long as the meter.
                    let _ = moved.changed().await;
                }
                Admission::Refused { left_tokens } => {
                    return self.refuse(
                        call,
                        Refusal::budget(model, prompt_tokens, left_tokens),
                        messages,
                    );
                }
            }
        }
    }

    /// The stage that holds a counted prompt and its completion cap: what
    /// is left after the prompt, or less when the call names a cap. A prompt
    /// that does not fit while calls forwarded uncounted still hold their
    /// bytes waits for their counts instead ([`Admission::AfterCounts`]).
    fn reserve(
        &self,
        call: &CallGuard<'_>,
        prompt_tokens: u64,
        max_tokens: u32,
    ) -> Result<Admission, ModelError> {
        let budget_tokens = self.inner.budget_tokens;
        let mut state = self.state();
        if !state.calls.contains_key(&call.id) {
            // Its decision ended and cut it.
            return Err(ModelError::Cut);
        }
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
            return Ok(Admission::Refused { left_tokens });
        }
        let mut cap_tokens = left_tokens - prompt_tokens;
        if max_tokens > 0 {
            cap_tokens = cap_tokens.min(u64::from(max_tokens));
        }
        Self::hold(
            &mut state,
            call.id,
            Prompt::Counted(prompt_tokens),
            cap_tokens,
        );
        Ok(Admission::Reserved { cap_tokens })
    }

    /// Holds a prompt not yet counted by its bytes, and the cap asked, when
    /// both fit what is left; `None` (nothing held, nothing refused) when they
    /// do not, or the fighter is gassed out: the prompt is then counted first.
    fn reserve_uncounted(
        &self,
        call: &CallGuard<'_>,
        prompt: Prompt,
        max_tokens: u32,
    ) -> Result<Option<u64>, ModelError> {
        let budget_tokens = self.inner.budget_tokens;
        let mut state = self.state();
        if !state.calls.contains_key(&call.id) {
            return Err(ModelError::Cut);
        }
        let cap_tokens = u64::from(max_tokens);
        if state.gassed_out
            || max_tokens == 0
            || prompt.held_tokens() + cap_tokens > state.left(budget_tokens)
        {
            return Ok(None);
        }
        Self::hold(&mut state, call.id, prompt, cap_tokens);
        Ok(Some(cap_tokens))
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

    /// Sets what an admitted call holds: its prompt and completion cap.
    fn hold(state: &mut MeterState, id: u64, prompt: Prompt, cap_tokens: u64) {
        let Some(call) = state.calls.get_mut(&id) else {
            return;
        };
        let before = call.reserved_tokens();
        call.prompt = prompt;
        call.cap_tokens = cap_tokens;
        let after = call.reserved_tokens();
        state.reserved_tokens = state.reserved_tokens.saturating_sub(before) + after;
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

    #[tokio::test]
    async fn without_a_model_calls_cost_nothing_and_are_recorded() {
        let meter = FighterMeter::new(ModelGateway::disabled(), 100);
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
        let long = Arc::new(vec![ChatMessage::new("user", "word ".repeat(2_000))]);
        let long_tokens = count_prompt_tokens(&long);
        assert!(long_tokens < 10_000, "{long_tokens}");
        let prompt = Prompt::Counting {
            bytes: 10_000,
            stop_tokens: 0,
            messages: long.clone(),
            count: Arc::default(),
        };
        let first = meter.admit(None).expect("admitted");
        assert_eq!(
            meter
                .reserve_uncounted(&first, prompt, 16)
                .expect("not cut"),
            Some(16),
            "fits by its bytes"
        );
        assert_eq!(meter.budget_left_tokens(), 12_000 - 10_000 - 16);
        let second = meter.admit(None).expect("admitted");
        let Admission::AfterCounts(mut moved) = meter.reserve(&second, 3_000, 16).expect("not cut")
        else {
            panic!("3,000 tokens fit by counts: the call must wait for them");
        };
        assert!(!meter.gassed_out());
        meter.prompt_counted(first.id, long_tokens);
        moved.changed().await.expect("woken by the count");
        assert_eq!(meter.budget_left_tokens(), 12_000 - long_tokens - 16);
        let Admission::Reserved { cap_tokens } = meter.reserve(&second, 3_000, 16).expect("fits")
        else {
            panic!("nothing is counting any more");
        };
        assert_eq!(cap_tokens, 16);
        // Nothing counting: a prompt that does not fit is refused at once.
        let third = meter.admit(None).expect("admitted");
        let Admission::Refused { left_tokens } =
            meter.reserve(&third, 12_000, 16).expect("not cut")
        else {
            panic!("12,000 tokens cannot fit");
        };
        let refused = meter.refuse::<()>(&third, Refusal::budget(&model, 12_000, left_tokens), &[]);
        assert!(matches!(refused, Err(ModelError::BudgetExhausted { .. })));
        assert!(meter.gassed_out());
        // Cut now, each call is charged its prompt's count, never its bytes.
        drop((first, second, third));
        assert_eq!(meter.settle().tokens, long_tokens + 3_000);
    }

    /// An uncounted prompt is never refused by its bytes: one that does not
    /// fit by them, or a call that names no cap, is counted first.
    #[test]
    fn an_uncounted_prompt_that_does_not_fit_by_its_bytes_is_counted_first() {
        let meter = house_meter(1_000);
        let long = Arc::new(vec![ChatMessage::new("user", "word ".repeat(400))]);
        let uncounted = |max_tokens| {
            let call = meter.admit(None).expect("admitted");
            let prompt = Prompt::Counting {
                bytes: 2_000,
                stop_tokens: 0,
                messages: long.clone(),
                count: Arc::default(),
            };
            meter
                .reserve_uncounted(&call, prompt, max_tokens)
                .expect("not cut")
                .is_some()
        };
        assert!(!uncounted(16));
        assert!(!uncounted(0));
        assert!(!meter.gassed_out());
        assert_eq!(meter.budget_left_tokens(), 1_000);
        // Both calls ended unforwarded when their guards went: cut, uncharged.
        let spent = meter.settle();
        assert_eq!(spent.tokens, 0);
        assert!(
            spent
                .calls
                .iter()
                .all(|call| call.outcome == CallOutcome::Cut)
        );
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
