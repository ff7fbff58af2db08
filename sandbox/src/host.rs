//! The per-store host state: WASI, the resource limiter, the bot log, the model
//! port and the decision deadline; and the host side of the `model` and `log`
//! imports.

use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::bindings::{v1_0_0, v1_1_0};
use crate::model::{Message, ModelAnswer, ModelCall, ModelError, ModelPort};
use crate::wasi::{SharedLog, lock_log};

/// A memory or table grow past the configured cap. Returned from the limiter so
/// that the trap is recognisable as a limit hit rather than a bot bug.
#[derive(Debug, thiserror::Error)]
#[error("{what} cap of {cap} hit (asked for {desired})")]
pub(crate) struct LimitHit {
    pub(crate) what: &'static str,
    pub(crate) cap: usize,
    pub(crate) desired: usize,
}

/// The wall clock ran out while the guest was running (raised from the epoch
/// callback).
#[derive(Debug, thiserror::Error)]
#[error("wall clock of the decision ran out")]
pub(crate) struct WallClockOut;

#[derive(Debug)]
pub(crate) struct Limiter {
    pub(crate) memory_bytes_max: usize,
    pub(crate) table_elements_max: usize,
    pub(crate) instances_max: usize,
    pub(crate) tables_max: usize,
    pub(crate) memories_max: usize,
    /// Linear memory currently held, over all memories of the instance.
    pub(crate) memory_bytes: usize,
}

impl wasmtime::ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = self
            .memory_bytes
            .saturating_sub(current)
            .saturating_add(desired);
        if total > self.memory_bytes_max {
            return Err(wasmtime::Error::new(LimitHit {
                what: "memory",
                cap: self.memory_bytes_max,
                desired: total,
            }));
        }
        self.memory_bytes = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.table_elements_max {
            return Err(wasmtime::Error::new(LimitHit {
                what: "table",
                cap: self.table_elements_max,
                desired,
            }));
        }
        Ok(true)
    }

    fn instances(&self) -> usize {
        self.instances_max
    }
    fn tables(&self) -> usize {
        self.tables_max
    }
    fn memories(&self) -> usize {
        self.memories_max
    }
}

pub(crate) struct HostState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: Limiter,
    pub(crate) log: SharedLog,
    pub(crate) model: Arc<dyn ModelPort>,
    /// When the current decision's wall clock runs out.
    pub(crate) deadline: Instant,
    /// Model calls made in this store (all decisions).
    pub(crate) model_calls: u64,
}

impl std::fmt::Debug for HostState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostState")
            .field("limiter", &self.limiter)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl HostState {
    /// One model call through the port, counted in the instance's stats.
    async fn call_model(&mut self, call: ModelCall) -> Result<ModelAnswer, ModelError> {
        self.model_calls += 1;
        let model = Arc::clone(&self.model);
        model.complete(call).await
    }

    fn append_log(&mut self, line: &str) {
        let mut log = lock_log(&self.log);
        log.append(line.as_bytes());
        log.append(b"\n");
    }
}

impl v1_0_0::duel::bot::types::Host for HostState {}

impl v1_0_0::duel::bot::model::Host for HostState {
    async fn complete(
        &mut self,
        messages: Vec<v1_0_0::duel::bot::model::Message>,
        max_tokens: u32,
    ) -> Result<String, v1_0_0::duel::bot::model::ModelError> {
        use v1_0_0::duel::bot::model::ModelError as Wit;
        let call = ModelCall {
            model: String::new(),
            messages: messages
                .into_iter()
                .map(|m| Message {
                    role: m.role,
                    content: m.content,
                })
                .collect(),
            max_tokens,
        };
        match self.call_model(call).await {
            Ok(answer) => Ok(answer.text),
            Err(ModelError::BudgetExhausted) => Err(Wit::BudgetExhausted),
            // 1.0.0 knows one other refusal.
            Err(ModelError::Unavailable(why) | ModelError::Invalid(why)) => {
                Err(Wit::Unavailable(why))
            }
        }
    }
}

impl v1_0_0::duel::bot::log::Host for HostState {
    async fn log(&mut self, line: String) {
        self.append_log(&line);
    }
}

impl v1_1_0::duel::bot::types::Host for HostState {}

impl v1_1_0::duel::bot::model::Host for HostState {
    async fn complete(
        &mut self,
        messages: Vec<v1_1_0::duel::bot::model::Message>,
        max_tokens: u32,
    ) -> Result<String, v1_1_0::duel::bot::model::ModelError> {
        self.complete_with(String::new(), messages, max_tokens)
            .await
            .map(|completion| completion.text)
    }

    async fn complete_with(
        &mut self,
        model: String,
        messages: Vec<v1_1_0::duel::bot::model::Message>,
        max_tokens: u32,
    ) -> Result<v1_1_0::duel::bot::model::Completion, v1_1_0::duel::bot::model::ModelError> {
        use v1_1_0::duel::bot::model::ModelError as Wit;
        let call = ModelCall {
            model,
            messages: messages
                .into_iter()
                .map(|m| Message {
                    role: m.role,
                    content: m.content,
                })
                .collect(),
            max_tokens,
        };
        match self.call_model(call).await {
            Ok(answer) => Ok(v1_1_0::duel::bot::model::Completion {
                text: answer.text,
                model: answer.model,
                prompt_tokens: answer.prompt_tokens,
                completion_tokens: answer.completion_tokens,
                budget_left_tokens: answer.budget_left_tokens,
            }),
            Err(ModelError::BudgetExhausted) => Err(Wit::BudgetExhausted),
            Err(ModelError::Unavailable(why)) => Err(Wit::Unavailable(why)),
            Err(ModelError::Invalid(why)) => Err(Wit::Invalid(why)),
        }
    }

    async fn models(&mut self) -> Vec<String> {
        self.model.models()
    }
}

impl v1_1_0::duel::bot::log::Host for HostState {
    async fn log(&mut self, line: String) {
        self.append_log(&line);
    }
}
