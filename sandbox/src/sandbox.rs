//! The engine, loading (validate, digest, compile or fetch from cache) and running
//! bot instances under the per-decision limits.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use duel_rules::{Action, Observation, Side};
use sha2::{Digest as _, Sha256};
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, PoolConcurrencyLimitError,
    PoolingAllocationConfig, Store, Trap, UpdateDeadline,
};

use crate::bindings::{WorldVersion, convert_v1_0_0, convert_v1_1_0, v1_0_0, v1_1_0};
use crate::cache::{DiskCache, MemoryCache};
use crate::error::{DecideFailure, FailureCause, SandboxError, short_reason};
use crate::host::{HostState, LimitHit, Limiter, WallClockOut};
use crate::limits::{
    ASYNC_STACK_BYTES, Allocation, POOL_CORE_INSTANCES_PER_SLOT, POOL_MEMORIES_PER_SLOT,
    POOL_MEMORY_KEEP_RESIDENT_BYTES, POOL_STACKS_PER_SLOT, POOL_TABLE_KEEP_RESIDENT_BYTES,
    POOL_TABLES_PER_SLOT, SandboxConfig, WASM_STACK_BYTES_MAX,
};
use crate::model::ModelPort;
use crate::wasi::{BotLog, LogBounds, SharedLog, closed_wasi, lock_log};

/// The WASM bot host: one per process. Cheap to clone (shared inside).
#[derive(Clone, Debug)]
pub struct Sandbox {
    inner: Arc<SandboxInner>,
}

struct SandboxInner {
    /// Where bots are compiled and instantiated: with the pooling allocator
    /// when the configuration asks for it.
    engine: Engine,
    linker: Linker<HostState>,
    /// With a pool: the on-demand engine an instance goes to when every slot
    /// is taken, so the pool never runs dry.
    overflow: Option<Overflow>,
    config: SandboxConfig,
    compiled: Mutex<MemoryCache<Loaded>>,
    disk: Option<DiskCache>,
    counters: Counters,
    _ticker: EpochTicker,
}

impl std::fmt::Debug for SandboxInner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxInner")
            .field("config", &self.config)
            .field("disk", &self.disk)
            .finish_non_exhaustive()
    }
}

/// The engine of instances that found the pool full. Compiled code is
/// compatible between the two engines (same tunables; the allocation strategy
/// does not enter compilation), so a component moves over by serialization.
struct Overflow {
    engine: Engine,
    linker: Linker<HostState>,
}

#[derive(Debug, Default)]
struct Counters {
    compiled: AtomicU64,
    memory_hits: AtomicU64,
    disk_hits: AtomicU64,
    disk_write_errors: AtomicU64,
    pool_instantiations: AtomicU64,
    on_demand_instantiations: AtomicU64,
}

/// What the sandbox's caches did so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SandboxStats {
    /// Components compiled from source bytes.
    pub compiled: u64,
    pub memory_hits: u64,
    pub disk_hits: u64,
    /// Artifacts that could not be written to the disk cache (the load still
    /// succeeded; the next process compiles again).
    pub disk_write_errors: u64,
    /// Wasm instances made in a pool slot.
    pub pool_instantiations: u64,
    /// Wasm instances allocated on demand: every one without a pool, and with
    /// a pool those that found every slot taken.
    pub on_demand_instantiations: u64,
}

/// Advances the engines' epoch every tick until dropped.
struct EpochTicker {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl EpochTicker {
    fn start(engines: Vec<Engine>, tick: Duration) -> Result<EpochTicker, SandboxError> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("duel-sandbox-epoch".into())
            .spawn(move || {
                let mut next_tick = Instant::now() + tick;
                loop {
                    // Parked rather than asleep, so that dropping the ticker
                    // wakes the thread at once: a `referee local` process
                    // would otherwise wait up to a tick (5 ms) to exit.
                    let now = Instant::now();
                    if flag.load(Ordering::Acquire) {
                        return;
                    }
                    if now < next_tick {
                        std::thread::park_timeout(next_tick - now);
                        continue;
                    }
                    // From now, not from the missed tick: a thread that ran
                    // late must not tick twice in a row and cut a deadline short.
                    next_tick = now + tick;
                    for engine in &engines {
                        engine.increment_epoch();
                    }
                }
            })
            .map_err(|err| SandboxError::Engine(format!("cannot start the epoch thread: {err}")))?;
        Ok(EpochTicker {
            stop,
            handle: Some(handle),
        })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(handle) = self.handle.take() {
            handle.thread().unpark();
            let _ = handle.join();
        }
    }
}

/// The engine's configuration; `pooled` turns the pooling allocator on when the
/// sandbox's configuration asks for one.
fn engine_config(config: &SandboxConfig, pooled: bool) -> Config {
    let mut wasm = Config::new();
    wasm.epoch_interruption(true)
        .consume_fuel(true)
        // No component-model-async APIs are used: plain calls are cheaper without.
        .concurrency_support(false)
        .max_wasm_stack(WASM_STACK_BYTES_MAX)
        .async_stack_size(ASYNC_STACK_BYTES);
    if let (Allocation::Pooling { instances }, true) = (config.allocation, pooled) {
        let per_bot = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let per_slot = |n: usize, cap: u32| instances.saturating_mul(per_bot(n).min(cap));
        let mut pool = PoolingAllocationConfig::new();
        pool.total_component_instances(instances)
            .total_core_instances(per_slot(config.instances_max, POOL_CORE_INSTANCES_PER_SLOT))
            .total_memories(per_slot(config.memories_max, POOL_MEMORIES_PER_SLOT))
            .total_tables(per_slot(config.tables_max, POOL_TABLES_PER_SLOT))
            .total_stacks(instances.saturating_mul(POOL_STACKS_PER_SLOT))
            .max_core_instances_per_component(per_bot(config.instances_max))
            .max_memories_per_component(per_bot(config.memories_max))
            .max_tables_per_component(per_bot(config.tables_max))
            .max_memory_size(config.memory_bytes_max)
            .table_elements(config.table_elements_max)
            .linear_memory_keep_resident(POOL_MEMORY_KEEP_RESIDENT_BYTES)
            .table_keep_resident(POOL_TABLE_KEEP_RESIDENT_BYTES)
            // Linux 6.7+: reset only the pages a bot dirtied, not the whole
            // kept region (a plain memset of it cost more than the faults).
            .pagemap_scan(Enabled::Auto);
        wasm.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    wasm
}

/// An engine and its linker: closed WASI and the `duel:bot` imports.
fn engine_and_linker(
    config: &SandboxConfig,
    pooled: bool,
) -> Result<(Engine, Linker<HostState>), SandboxError> {
    let engine = Engine::new(&engine_config(config, pooled))
        .map_err(|err| SandboxError::Engine(err.to_string()))?;
    let mut linker = Linker::<HostState>::new(&engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)
        .map_err(|err| SandboxError::Engine(err.to_string()))?;
    // Both versions in one linker: their interfaces have distinct names
    // (`duel:bot/model@1.0.0`, `…@1.1.0`).
    v1_0_0::Bot::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |state| state)
        .map_err(|err| SandboxError::Engine(err.to_string()))?;
    v1_1_0::Bot::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |state| state)
        .map_err(|err| SandboxError::Engine(err.to_string()))?;
    Ok((engine, linker))
}

impl Sandbox {
    /// Builds the engine, the linker with closed WASI and the `duel:bot` imports,
    /// the caches, and starts the epoch thread.
    pub fn new(config: SandboxConfig) -> Result<Sandbox, SandboxError> {
        config.validate().map_err(SandboxError::Config)?;
        let (engine, linker) = engine_and_linker(&config, true)?;
        let overflow = match config.allocation {
            Allocation::Pooling { .. } => {
                let (engine, linker) = engine_and_linker(&config, false)?;
                Some(Overflow { engine, linker })
            }
            Allocation::OnDemand => None,
        };
        let disk = match &config.disk_cache_dir {
            Some(dir) => Some(DiskCache::open(dir, &engine)?),
            None => None,
        };
        let mut engines = vec![engine.clone()];
        engines.extend(overflow.iter().map(|overflow| overflow.engine.clone()));
        let ticker = EpochTicker::start(engines, config.epoch_tick)?;
        Ok(Sandbox {
            inner: Arc::new(SandboxInner {
                compiled: Mutex::new(MemoryCache::new(config.compiled_cache_entries)),
                engine,
                linker,
                overflow,
                config,
                disk,
                counters: Counters::default(),
                _ticker: ticker,
            }),
        })
    }

    pub fn config(&self) -> &SandboxConfig {
        &self.inner.config
    }

    pub fn stats(&self) -> SandboxStats {
        let c = &self.inner.counters;
        SandboxStats {
            compiled: c.compiled.load(Ordering::Relaxed),
            memory_hits: c.memory_hits.load(Ordering::Relaxed),
            disk_hits: c.disk_hits.load(Ordering::Relaxed),
            disk_write_errors: c.disk_write_errors.load(Ordering::Relaxed),
            pool_instantiations: c.pool_instantiations.load(Ordering::Relaxed),
            on_demand_instantiations: c.on_demand_instantiations.load(Ordering::Relaxed),
        }
    }

    /// Validates an upload as a `duel:bot` component and compiles it (or takes it
    /// from a cache). Compiling a large bot takes seconds of CPU: from async code
    /// use [`Sandbox::load_async`].
    pub fn load(&self, bytes: &[u8]) -> Result<LoadedBot, SandboxError> {
        let inner = &self.inner;
        let cap = inner.config.upload_bytes_max;
        if bytes.len() > cap {
            return Err(SandboxError::TooLarge {
                size: bytes.len(),
                cap,
            });
        }
        check_component_header(bytes)?;
        let digest_hex: String = Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let digest = format!("sha256:{digest_hex}");
        if let Some(loaded) = inner.cached(&digest) {
            inner.counters.memory_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(LoadedBot::new(self, loaded, CompileOrigin::MemoryCache));
        }
        let from_disk = inner
            .disk
            .as_ref()
            .and_then(|disk| disk.load(&inner.engine, &digest_hex));
        let (component, origin) = match from_disk {
            Some(component) => (component, CompileOrigin::DiskCache),
            None => {
                let component = Component::new(&inner.engine, bytes).map_err(|err| {
                    SandboxError::InvalidComponent(short_reason(&format!("{err:#}")))
                })?;
                (component, CompileOrigin::Compiled)
            }
        };
        let loaded = Arc::new(inner.link(component.clone(), digest.clone(), bytes.len())?);
        match origin {
            CompileOrigin::DiskCache => {
                inner.counters.disk_hits.fetch_add(1, Ordering::Relaxed);
            }
            _ => {
                inner.counters.compiled.fetch_add(1, Ordering::Relaxed);
                if let Some(disk) = &inner.disk
                    && disk.store(&digest_hex, &component).is_err()
                {
                    inner
                        .counters
                        .disk_write_errors
                        .fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        inner
            .compiled
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .insert(digest, Arc::clone(&loaded));
        Ok(LoadedBot::new(self, loaded, origin))
    }

    /// [`Sandbox::load`] on a blocking thread.
    pub async fn load_async(&self, bytes: Vec<u8>) -> Result<LoadedBot, SandboxError> {
        let sandbox = self.clone();
        tokio::task::spawn_blocking(move || sandbox.load(&bytes))
            .await
            .map_err(|err| SandboxError::Engine(format!("compile task failed: {err}")))?
    }
}

/// `\0asm` then version and layer: 1/0 is a core module, 0x0d/1 a component.
fn check_component_header(bytes: &[u8]) -> Result<(), SandboxError> {
    const MAGIC: &[u8; 4] = b"\0asm";
    const COMPONENT: [u8; 4] = [0x0d, 0x00, 0x01, 0x00];
    const CORE_MODULE: [u8; 4] = [0x01, 0x00, 0x00, 0x00];
    if bytes.len() < 8 || &bytes[..4] != MAGIC {
        return Err(SandboxError::NotAComponent(
            "the file is not WebAssembly (no \\0asm header)".into(),
        ));
    }
    match [bytes[4], bytes[5], bytes[6], bytes[7]] {
        COMPONENT => Ok(()),
        CORE_MODULE => Err(SandboxError::NotAComponent(
            "this is a core wasm module; build a component (cargo build --target wasm32-wasip2, or componentize-py)"
                .into(),
        )),
        other => Err(SandboxError::NotAComponent(format!(
            "unknown WebAssembly version/layer {other:02x?}"
        ))),
    }
}

impl SandboxInner {
    fn cached(&self, digest: &str) -> Option<Arc<Loaded>> {
        self.compiled
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .get(digest)
    }

    /// Checks the component against its `duel:bot` world and pre-links it.
    fn link(
        &self,
        component: Component,
        digest: String,
        size_bytes: usize,
    ) -> Result<Loaded, SandboxError> {
        let world = WorldVersion::detect(&self.engine, &component)?;
        let pre = pre_link(&self.linker, &component, world)?;
        Ok(Loaded {
            digest,
            world,
            component,
            pre,
            overflow_pre: OnceLock::new(),
            size_bytes,
        })
    }

    /// `loaded`, pre-linked in the overflow engine: its compiled code copied
    /// over on first need (milliseconds for a large bot; once per component).
    fn overflow_pre<'a>(
        &self,
        overflow: &Overflow,
        loaded: &'a Loaded,
    ) -> Result<&'a BotPre, wasmtime::Error> {
        loaded
            .overflow_pre
            .get_or_init(|| copy_to(overflow, loaded))
            .as_ref()
            .map_err(|err| wasmtime::Error::msg(format!("{err:#}")))
    }
}

/// Copies a loaded bot's compiled code into the overflow engine and pre-links
/// it there.
fn copy_to(overflow: &Overflow, loaded: &Loaded) -> Result<BotPre, wasmtime::Error> {
    let bytes = loaded.component.serialize()?;
    // SAFETY: `bytes` were serialized just above, in this process, by an engine
    // whose compilation settings are the overflow engine's (`engine_config`
    // differs only in the allocator, which does not enter compiled code); and
    // wasmtime checks that compatibility again before loading them.
    #[allow(unsafe_code)]
    let component = unsafe { Component::deserialize(&overflow.engine, &bytes) }?;
    pre_link(&overflow.linker, &component, loaded.world)
        .map_err(|err| wasmtime::Error::msg(err.to_string()))
}

/// Pre-links a component of `world` with `linker`.
fn pre_link(
    linker: &Linker<HostState>,
    component: &Component,
    world: WorldVersion,
) -> Result<BotPre, SandboxError> {
    let pre = linker
        .instantiate_pre(component)
        .map_err(|err| SandboxError::WrongWorld(short_reason(&format!("{err:#}"))))?;
    let wrong = |err: wasmtime::Error| SandboxError::WrongWorld(short_reason(&format!("{err:#}")));
    Ok(match world {
        WorldVersion::V1_0_0 => BotPre::V1_0_0(v1_0_0::BotPre::new(pre).map_err(wrong)?),
        WorldVersion::V1_1_0 => BotPre::V1_1_0(v1_1_0::BotPre::new(pre).map_err(wrong)?),
    })
}

enum BotPre {
    V1_0_0(v1_0_0::BotPre<HostState>),
    V1_1_0(v1_1_0::BotPre<HostState>),
}

/// A compiled, validated, pre-linked bot.
struct Loaded {
    digest: String,
    world: WorldVersion,
    component: Component,
    pre: BotPre,
    /// The same bot pre-linked in the overflow engine, once an instance of it
    /// found the pool full (or why it could not be).
    overflow_pre: OnceLock<Result<BotPre, wasmtime::Error>>,
    size_bytes: usize,
}

/// Where a loaded bot's compiled code came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompileOrigin {
    Compiled,
    MemoryCache,
    DiskCache,
}

/// A validated bot, ready to be instantiated for matches. Cheap to clone.
#[derive(Clone)]
pub struct LoadedBot {
    sandbox: Sandbox,
    loaded: Arc<Loaded>,
    origin: CompileOrigin,
}

impl std::fmt::Debug for LoadedBot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedBot")
            .field("digest", &self.loaded.digest)
            .field("world", &self.loaded.world)
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

/// Who the instance plays for: fixes its randomness and names its match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BotContext {
    pub match_id: String,
    /// The match seed from the replay; with `side` it seeds the bot's WASI random.
    pub seed: u64,
    pub side: Side,
}

impl LoadedBot {
    fn new(sandbox: &Sandbox, loaded: Arc<Loaded>, origin: CompileOrigin) -> LoadedBot {
        LoadedBot {
            sandbox: sandbox.clone(),
            loaded,
            origin,
        }
    }

    /// `"sha256:<hex>"` of the uploaded bytes.
    pub fn digest(&self) -> &str {
        &self.loaded.digest
    }

    pub fn world(&self) -> WorldVersion {
        self.loaded.world
    }

    pub fn origin(&self) -> CompileOrigin {
        self.origin
    }

    pub fn size_bytes(&self) -> usize {
        self.loaded.size_bytes
    }

    /// One bot's instance for one match. The wasm instance itself is created at the
    /// first decision, inside that decision's limits, and again after any failure.
    pub fn instantiate(&self, context: BotContext, model: Arc<dyn ModelPort>) -> BotInstance {
        let config = &self.sandbox.inner.config;
        let bounds = LogBounds {
            bytes: config.log_bytes_per_decision,
            lines: config.log_lines_per_decision,
            line_bytes: config.log_line_bytes,
        };
        let log = Arc::new(Mutex::new(BotLog::new(config.log_bytes_per_match, bounds)));
        BotInstance {
            bot: self.clone(),
            context,
            model,
            log,
            live: None,
            stats: InstanceStats::default(),
        }
    }
}

/// A bot's output during one decision, one entry per line (without its line
/// end), bounded by the per-decision log limits of [`SandboxConfig`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DecisionLog {
    pub lines: Vec<String>,
    /// Lines were cut or dropped at the bounds.
    pub truncated: bool,
}

/// What one instance did over its match.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InstanceStats {
    pub decisions: u64,
    /// Fresh wasm instances created: 1 plus one after each failure that was
    /// followed by another decision.
    pub instantiations: u64,
    pub timeouts: u64,
    pub faults: u64,
    /// Fuel the last decision burnt (instantiation included when it happened).
    pub last_fuel_used: u64,
    /// Calls of `model.complete` over the match.
    pub model_calls: u64,
    /// Linear memory the current wasm instance holds (it never shrinks).
    pub memory_bytes: usize,
}

enum BotHandle {
    V1_0_0(v1_0_0::Bot),
    V1_1_0(v1_1_0::Bot),
}

struct Live {
    store: Store<HostState>,
    bot: BotHandle,
}

/// One bot in one match: a fresh store, memory kept across its decisions, and its
/// bounded log. Not shared between fighters or matches.
pub struct BotInstance {
    bot: LoadedBot,
    context: BotContext,
    model: Arc<dyn ModelPort>,
    log: SharedLog,
    live: Option<Live>,
    stats: InstanceStats,
}

impl std::fmt::Debug for BotInstance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BotInstance")
            .field("bot", &self.bot)
            .field("context", &self.context)
            .field("live", &self.live.is_some())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl BotInstance {
    pub fn digest(&self) -> &str {
        self.bot.digest()
    }

    pub fn context(&self) -> &BotContext {
        &self.context
    }

    pub fn stats(&self) -> InstanceStats {
        self.stats
    }

    /// The bot's output so far this match (`log` lines, stdout, stderr), up to the
    /// per-match cap.
    pub fn log_text(&self) -> String {
        lock_log(&self.log).text()
    }

    /// Bytes of output dropped past the cap.
    pub fn log_dropped_bytes(&self) -> u64 {
        lock_log(&self.log).dropped_bytes()
    }

    /// What the bot wrote during the last decision (`log` lines, stdout and
    /// stderr, in the order written), bounded per decision; taking it empties
    /// it. Allocates nothing when the bot wrote nothing.
    pub fn take_decision_log(&mut self) -> DecisionLog {
        let (lines, truncated) = lock_log(&self.log).take_decision();
        DecisionLog { lines, truncated }
    }

    /// Asks the bot for its action, within the wall clock, fuel and memory limits.
    /// On failure the instance is dropped; the next decision starts a fresh one.
    pub async fn decide(&mut self, observation: &Observation<'_>) -> Result<Action, DecideFailure> {
        let wall_clock = self.bot.sandbox.inner.config.decision_wall_clock;
        let started = Instant::now();
        let deadline = started + wall_clock;
        self.stats.decisions += 1;
        let log_before = {
            let mut log = lock_log(&self.log);
            log.start_decision();
            log.len()
        };
        let result =
            match tokio::time::timeout_at(deadline.into(), self.decide_live(deadline, observation))
                .await
            {
                Ok(result) => result,
                Err(_elapsed) => Err(DecideFailure::new(
                    FailureCause::Timeout,
                    crate::timeout_reason(wall_clock),
                )),
            };
        if let Some(live) = &self.live {
            self.stats.model_calls = live.store.data().model_calls;
        }
        match result {
            Ok(action) => Ok(action),
            Err(mut failure) => {
                // A trap poisons the instance, and a cancelled call leaves it
                // mid-flight: either way the next decision starts afresh.
                self.live = None;
                match failure.cause {
                    FailureCause::Timeout => self.stats.timeouts += 1,
                    FailureCause::Fault => self.stats.faults += 1,
                }
                if let Some(line) = self.last_log_line_since(log_before) {
                    failure =
                        DecideFailure::new(failure.cause, format!("{line}; {}", failure.reason));
                }
                Err(failure)
            }
        }
    }

    /// What the bot wrote during this decision that explains a failure: a Python
    /// exception line (`RuntimeError: …`), else a Rust panic message.
    fn last_log_line_since(&self, start: usize) -> Option<String> {
        let text = lock_log(&self.log).text();
        let lines: Vec<&str> = text.get(start..)?.lines().collect();
        if let Some(line) = lines.iter().rev().find(|line| is_exception_line(line)) {
            return Some(line.trim().to_owned());
        }
        // "thread '…' panicked at FILE:LINE:COL:" and the message on the next line.
        let at = lines
            .iter()
            .rposition(|line| line.contains("panicked at"))?;
        let message = lines.get(at + 1).map_or("", |line| line.trim());
        Some(format!("panicked: {message}"))
    }

    async fn decide_live(
        &mut self,
        deadline: Instant,
        observation: &Observation<'_>,
    ) -> Result<Action, DecideFailure> {
        let inner = Arc::clone(&self.bot.sandbox.inner);
        let fuel = inner.config.fuel_per_decision;
        if self.live.is_none() {
            let loaded = Arc::clone(&self.bot.loaded);
            let counters = &inner.counters;
            let store = self.new_store(&inner.engine, deadline);
            let live = match instantiate(store, &loaded.pre, fuel).await {
                Ok(live) => {
                    let counter = match inner.overflow {
                        Some(_) => &counters.pool_instantiations,
                        None => &counters.on_demand_instantiations,
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                    live
                }
                // Every slot of the pool is taken: this one is made on demand.
                Err(err) if err.is::<PoolConcurrencyLimitError>() => {
                    let Some(overflow) = &inner.overflow else {
                        return Err(classify(&inner.config, &err));
                    };
                    let pre = inner
                        .overflow_pre(overflow, &loaded)
                        .map_err(|err| classify(&inner.config, &err))?;
                    let store = self.new_store(&overflow.engine, deadline);
                    let live = instantiate(store, pre, fuel)
                        .await
                        .map_err(|err| classify(&inner.config, &err))?;
                    counters
                        .on_demand_instantiations
                        .fetch_add(1, Ordering::Relaxed);
                    live
                }
                Err(err) => return Err(classify(&inner.config, &err)),
            };
            self.stats.instantiations += 1;
            self.live = Some(live);
        } else if let Some(live) = &mut self.live {
            live.store.data_mut().deadline = deadline;
            live.store
                .set_fuel(fuel)
                .map_err(|err| classify(&inner.config, &err))?;
            live.store.set_epoch_deadline(1);
        }
        let Some(live) = &mut self.live else {
            return Err(DecideFailure::new(
                FailureCause::Fault,
                "internal: no live instance",
            ));
        };
        let answer = match &live.bot {
            BotHandle::V1_0_0(bot) => {
                let wit = convert_v1_0_0::observation(observation);
                bot.call_decide(&mut live.store, &wit)
                    .await
                    .map(convert_v1_0_0::action_from_wit)
            }
            BotHandle::V1_1_0(bot) => {
                let wit = convert_v1_1_0::observation(observation);
                bot.call_decide(&mut live.store, &wit)
                    .await
                    .map(convert_v1_1_0::action_from_wit)
            }
        };
        self.stats.last_fuel_used = fuel.saturating_sub(live.store.get_fuel().unwrap_or(0));
        self.stats.memory_bytes = live.store.data().limiter.memory_bytes;
        answer.map_err(|err| classify(&inner.config, &err))
    }

    fn new_store(&self, engine: &Engine, deadline: Instant) -> Store<HostState> {
        let config = &self.bot.sandbox.inner.config;
        let state = HostState {
            wasi: closed_wasi(self.context.seed, self.context.side, &self.log),
            table: ResourceTable::new(),
            limiter: Limiter {
                memory_bytes_max: config.memory_bytes_max,
                table_elements_max: config.table_elements_max,
                instances_max: config.instances_max,
                tables_max: config.tables_max,
                memories_max: config.memories_max,
                memory_bytes: 0,
            },
            log: Arc::clone(&self.log),
            model: Arc::clone(&self.model),
            deadline,
            model_calls: self.stats.model_calls,
        };
        let mut store = Store::new(engine, state);
        store.limiter(|state| &mut state.limiter);
        // Every tick: past the deadline, trap; otherwise yield to the runtime so a
        // spinning guest does not hold its worker thread, and check again next tick.
        store.epoch_deadline_callback(|context| {
            if Instant::now() >= context.data().deadline {
                Err(wasmtime::Error::new(WallClockOut))
            } else {
                Ok(UpdateDeadline::Yield(1))
            }
        });
        store
    }
}

/// The bot instantiated from `pre` in a fresh `store` of the same engine, with
/// this decision's `fuel`.
async fn instantiate(
    mut store: Store<HostState>,
    pre: &BotPre,
    fuel: u64,
) -> Result<Live, wasmtime::Error> {
    store.set_fuel(fuel)?;
    store.set_epoch_deadline(1);
    let bot = match pre {
        BotPre::V1_0_0(pre) => BotHandle::V1_0_0(pre.instantiate_async(&mut store).await?),
        BotPre::V1_1_0(pre) => BotHandle::V1_1_0(pre.instantiate_async(&mut store).await?),
    };
    Ok(Live { store, bot })
}

/// `NameError: text` at the start of a line, as Python's traceback ends.
fn is_exception_line(line: &str) -> bool {
    let Some((name, _)) = line.split_once(": ") else {
        return false;
    };
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    plain && (name.ends_with("Error") || name.ends_with("Exception") || name.ends_with("Exit"))
}

/// Turns a wasmtime error from instantiation or a call into the replay's cause and
/// a short reason.
fn classify(config: &SandboxConfig, err: &wasmtime::Error) -> DecideFailure {
    if err.downcast_ref::<WallClockOut>().is_some() {
        return DecideFailure::new(
            FailureCause::Timeout,
            crate::timeout_reason(config.decision_wall_clock),
        );
    }
    if let Some(hit) = err.downcast_ref::<LimitHit>() {
        return DecideFailure::new(FailureCause::Fault, hit.to_string());
    }
    if let Some(exit) = err.downcast_ref::<wasmtime_wasi::I32Exit>() {
        return DecideFailure::new(
            FailureCause::Fault,
            format!("the bot exited with code {}", exit.0),
        );
    }
    if let Some(trap) = err.downcast_ref::<Trap>() {
        let reason = match trap {
            Trap::Interrupt => {
                return DecideFailure::new(
                    FailureCause::Timeout,
                    crate::timeout_reason(config.decision_wall_clock),
                );
            }
            Trap::OutOfFuel => format!(
                "fuel cap of {} per decision exhausted",
                config.fuel_per_decision
            ),
            Trap::StackOverflow => "stack overflow".to_owned(),
            Trap::UnreachableCodeReached => {
                "trap: unreachable (a panic, abort or exception)".to_owned()
            }
            other => format!("trap: {other}"),
        };
        return DecideFailure::new(FailureCause::Fault, reason);
    }
    DecideFailure::new(FailureCause::Fault, format!("{err:#}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropping_the_ticker_does_not_wait_out_its_tick() {
        let engine = Engine::new(&engine_config(&SandboxConfig::default(), false)).expect("engine");
        // A tick far longer than the test may take: dropping the ticker must
        // wake its thread rather than wait for the tick to end.
        let ticker = EpochTicker::start(vec![engine], Duration::from_secs(3_600)).expect("ticker");
        std::thread::sleep(Duration::from_millis(20)); // parked by now
        let dropping = Instant::now();
        drop(ticker);
        assert!(
            dropping.elapsed() < Duration::from_secs(60),
            "dropping waited out the tick"
        );
    }
}
