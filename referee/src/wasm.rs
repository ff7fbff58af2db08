//! WASM bots behind the `Bot` seam: one sandbox instance per fighter per match,
//! whose `model` import is metered by the fighter's own token meter.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use duel_replays::{FighterInfo, FighterKind};
use duel_rules::Observation;
use duel_sandbox::{Allocation, LoadedBot, ModelFuture, ModelPort, Sandbox, SandboxConfig};

use crate::bot::{Bot, BotFailure, Decision, DecisionFuture, FailureCause};
use crate::error::RefereeError;
use crate::meter::{ChatMessage, FighterMeter, ModelError, Spent};

/// One sandbox (one wasmtime engine, compile caches) per wall clock and instance
/// allocation in this process: the engine's epoch deadline is the clock, and
/// matches of one process nearly always share one.
fn sandbox_for(wall_clock: Duration, pool: Option<u32>) -> Result<Sandbox, RefereeError> {
    type Sandboxes = HashMap<(Duration, Option<u32>), Sandbox>;
    static SANDBOXES: OnceLock<Mutex<Sandboxes>> = OnceLock::new();
    let mut sandboxes = SANDBOXES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    if let Some(sandbox) = sandboxes.get(&(wall_clock, pool)) {
        return Ok(sandbox.clone());
    }
    let config = SandboxConfig {
        decision_wall_clock: wall_clock,
        disk_cache_dir: default_cache_dir(),
        allocation: pool.map_or(Allocation::OnDemand, |instances| Allocation::Pooling {
            instances,
        }),
        ..SandboxConfig::default()
    };
    let sandbox = Sandbox::new(config).map_err(|error| {
        RefereeError::Unsupported(format!("cannot start the WASM sandbox: {error}"))
    })?;
    sandboxes.insert((wall_clock, pool), sandbox.clone());
    Ok(sandbox)
}

/// WASM instances a pool needs for `matches` matches at once: two fighters each
/// (a failed instance is dropped before its replacement is made), two to spare.
fn pool_instances(matches: usize) -> u32 {
    u32::try_from(matches.saturating_mul(2).saturating_add(2)).unwrap_or(u32::MAX)
}

/// `$DUEL_WASM_CACHE`, else `$XDG_CACHE_HOME/duel/wasm`, else `~/.cache/duel/wasm`:
/// precompiled bots, so a bot is compiled once per machine, not once per match.
fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("DUEL_WASM_CACHE").filter(|dir| !dir.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    let dir = base.join("duel").join("wasm");
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir)
}

/// Loads (validates and compiles, or finds in a cache) the component at `path`,
/// for a process that runs any number of matches at once: instances are
/// allocated on demand.
pub async fn load(path: &Path, wall_clock: Duration) -> Result<LoadedBot, RefereeError> {
    load_for(path, wall_clock, None).await
}

/// [`load`], for a process that never runs more than `concurrent_matches`
/// matches at once (when `Some`): its instances then come from a pre-reserved
/// pool, several times cheaper to set up per match (docs/perf/sandbox.md). More
/// matches than that at once would find the pool empty, and their bots fault.
pub async fn load_for(
    path: &Path,
    wall_clock: Duration,
    concurrent_matches: Option<usize>,
) -> Result<LoadedBot, RefereeError> {
    let sandbox = sandbox_for(wall_clock, concurrent_matches.map(pool_instances))?;
    let limit = sandbox.config().upload_bytes_max;
    let size = std::fs::metadata(path)
        .map_err(|error| {
            RefereeError::Spec(format!("cannot read bot {}: {error}", path.display()))
        })?
        .len();
    if size > limit as u64 {
        return Err(RefereeError::Spec(format!(
            "bot {} is {size} bytes, more than the {limit}-byte limit",
            path.display()
        )));
    }
    let bytes = tokio::fs::read(path).await.map_err(|error| {
        RefereeError::Spec(format!("cannot read bot {}: {error}", path.display()))
    })?;
    load_in(&sandbox, bytes)
        .await
        .map_err(|error| RefereeError::Spec(format!("bot {}: {error}", path.display())))
}

/// The largest component the sandbox of this process accepts, in bytes.
pub fn upload_bytes_max() -> usize {
    duel_sandbox::limits::UPLOAD_BYTES_MAX_DEFAULT
}

/// Loads a component from its bytes (an upload, or bytes kept by digest in a
/// database) through the same sandbox and caches as [`load`]. The error is the
/// sandbox's one-line reason, exactly as `referee local` and `referee serve`
/// report it for a file (there prefixed by the path).
pub async fn load_bytes(bytes: Vec<u8>, wall_clock: Duration) -> Result<LoadedBot, RefereeError> {
    load_in(&sandbox_for(wall_clock, None)?, bytes).await
}

async fn load_in(sandbox: &Sandbox, bytes: Vec<u8>) -> Result<LoadedBot, RefereeError> {
    sandbox
        .load_async(bytes)
        .await
        .map_err(|error| RefereeError::Spec(error.to_string()))
}

/// Forwards the bot's `model.complete` to the fighter's meter.
struct MeteredModel {
    meter: FighterMeter,
}

impl ModelPort for MeteredModel {
    fn complete(&self, messages: Vec<duel_sandbox::Message>, max_tokens: u32) -> ModelFuture<'_> {
        let messages = messages
            .into_iter()
            .map(|message| ChatMessage::new(message.role, message.content))
            .collect();
        Box::pin(async move {
            self.meter
                .complete(messages, max_tokens)
                .await
                .map_err(|error| match error {
                    ModelError::BudgetExhausted { .. } => duel_sandbox::ModelError::BudgetExhausted,
                    other => duel_sandbox::ModelError::Unavailable(other.to_string()),
                })
        })
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
            name,
            kind: FighterKind::Wasm,
            digest: loaded.digest().to_owned(),
            spec,
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
            let restarted =
                asked_before && self.instance.stats().instantiations > instantiations_before;
            let answer = result.map_err(|failure| BotFailure {
                cause: match failure.cause {
                    duel_sandbox::FailureCause::Timeout => FailureCause::Timeout,
                    duel_sandbox::FailureCause::Fault => FailureCause::Fault,
                },
                reason: failure.reason,
            });
            let spent = self.meter.settle();
            Decision {
                answer,
                tokens: spent.tokens,
                gassed_out: spent.gassed_out,
                restarted,
            }
        })
    }

    fn abandoned(&mut self) -> Spent {
        self.meter.settle()
    }
}
