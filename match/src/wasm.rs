//! WASM bots behind the `Bot` seam: one sandbox instance per fighter per match,
//! whose `model` import is metered by the fighter's own token meter, and whose
//! output (`log`, stdout, stderr) of each decision goes with that decision.

use std::path::Path;
use std::sync::Arc;

use duel_replays::{FighterInfo, FighterKind};
use duel_rules::Observation;
use duel_sandbox::{LoadedBot, ModelFuture, ModelPort, Sandbox};

use crate::bot::{Bot, BotFailure, Decision, DecisionFuture, FailureCause};
use crate::error::MatchError;
use duel_gateway::meter::{ChatMessage, FighterMeter, ModelError, ModelRequest, Spent};

/// Reads the component at `path` for [`load_in`] through the one bounded
/// reader (`duel-files`): a regular file only (never a device, FIFO or
/// socket, which could stream forever or block, nor a "regular" file that
/// blocks such as `/proc/kmsg`), at most `cap_bytes`, within the read
/// deadline. Blocking: call it off the async threads.
pub fn read_component(path: &Path, cap_bytes: usize) -> Result<Vec<u8>, MatchError> {
    duel_files::read_regular_within(path, cap_bytes as u64, duel_files::READ_DEADLINE).map_err(
        |error| MatchError::BotFile {
            path: path.to_owned(),
            reason: error.into(),
        },
    )
}

/// Validates and compiles `bytes` in `sandbox` (or finds them in its caches),
/// off the async threads. The error is the sandbox's one-line reason.
pub async fn load_in(
    sandbox: &Sandbox,
    bytes: Vec<u8>,
) -> Result<LoadedBot, duel_sandbox::SandboxError> {
    sandbox.load_async(bytes).await
}

/// Forwards the bot's `model` calls to the fighter's meter.
struct MeteredModel {
    meter: FighterMeter,
}

impl ModelPort for MeteredModel {
    fn complete(&self, call: duel_sandbox::ModelCall) -> ModelFuture<'_> {
        let messages = call
            .messages
            .into_iter()
            .map(|message| ChatMessage::new(message.role, message.content))
            .collect();
        let request = ModelRequest::new(messages, call.max_tokens).of(call.model);
        Box::pin(async move {
            self.meter
                .complete_request(request)
                .await
                .map(|completion| duel_sandbox::ModelAnswer {
                    text: completion.text,
                    model: completion.model.to_string(),
                    prompt_tokens: completion.prompt_tokens,
                    completion_tokens: completion.completion_tokens,
                    budget_left_tokens: completion.budget_left_tokens,
                })
                .map_err(|error| match error {
                    ModelError::BudgetExhausted { .. } => duel_sandbox::ModelError::BudgetExhausted,
                    ModelError::Invalid(_)
                    | ModelError::ModelNotFound(_)
                    | ModelError::TooManyCalls => {
                        duel_sandbox::ModelError::Invalid(error.to_string())
                    }
                    ModelError::Unavailable(_) | ModelError::NotDeciding | ModelError::Cut => {
                        duel_sandbox::ModelError::Unavailable(error.to_string())
                    }
                })
        })
    }

    fn models(&self) -> Vec<String> {
        self.meter
            .gateway()
            .names()
            .iter()
            .map(|name| name.to_string())
            .collect()
    }
}

/// A WASM fighter for one match.
pub struct WasmBot {
    loaded: LoadedBot,
    context: duel_sandbox::BotContext,
    meter: FighterMeter,
    instance: duel_sandbox::BotInstance,
    /// Set while a decision runs: still set at the next decision means the runner
    /// gave up on it (its wall clock), so the instance is mid-call and is replaced.
    in_flight: bool,
    /// A decision was asked before: a wasm instance created after that one is a
    /// restart, and the replay says the bot's memory of the match is lost.
    asked_before: bool,
    info: FighterInfo,
}

impl std::fmt::Debug for WasmBot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmBot")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl WasmBot {
    /// A fighter from the component at `path`, named by the file's stem.
    pub fn new(
        path: &Path,
        loaded: LoadedBot,
        context: duel_sandbox::BotContext,
        meter: FighterMeter,
    ) -> WasmBot {
        let name = path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        WasmBot::named(
            name,
            Some(path.display().to_string()),
            loaded,
            context,
            meter,
        )
    }

    /// A fighter with the name (and spec) the replay shows: a ladder bot's name
    /// and the digest its bytes are kept under, say.
    pub fn named(
        name: String,
        spec: Option<String>,
        loaded: LoadedBot,
        context: duel_sandbox::BotContext,
        meter: FighterMeter,
    ) -> WasmBot {
        let instance = loaded.instantiate(
            context.clone(),
            Arc::new(MeteredModel {
                meter: meter.clone(),
            }),
        );
        let info = FighterInfo {
            name: name.into(),
            kind: FighterKind::Wasm,
            digest: loaded.digest().into(),
            spec: spec.map(Into::into),
        };
        WasmBot {
            loaded,
            context,
            meter,
            instance,
            in_flight: false,
            asked_before: false,
            info,
        }
    }
}

impl Bot for WasmBot {
    fn info(&self) -> FighterInfo {
        self.info.clone()
    }

    fn decide<'a>(&'a mut self, observation: Observation<'a>) -> DecisionFuture<'a> {
        Box::pin(async move {
            if self.in_flight {
                let model = Arc::new(MeteredModel {
                    meter: self.meter.clone(),
                });
                self.instance = self.loaded.instantiate(self.context.clone(), model);
            }
            // Set before the call: the runner may drop this future at its clock.
            let asked_before = std::mem::replace(&mut self.asked_before, true);
            let instantiations_before = self.instance.stats().instantiations;
            self.in_flight = true;
            let result = self.instance.decide(&observation).await;
            self.in_flight = false;
            let log = self.instance.take_decision_log();
            let restarted =
                asked_before && self.instance.stats().instantiations > instantiations_before;
            let answer = result.map_err(|failure| BotFailure {
                cause: match failure.cause {
                    duel_sandbox::FailureCause::Timeout => FailureCause::Timeout,
                    duel_sandbox::FailureCause::Fault => FailureCause::Fault,
                },
                reason: failure.reason,
            });
            Decision {
                restarted,
                log: log.lines,
                log_truncated: log.truncated,
                ..Decision::metered(answer, self.meter.settle())
            }
        })
    }

    fn abandoned(&mut self) -> Spent {
        self.meter.settle()
    }
}
