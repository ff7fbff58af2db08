//! The match host: what a process needs to play matches (the WASM sandboxes and
//! their compiled components, the model gateway, the Inference link, trust for
//! outgoing TLS), built once at the edge, and the [`MatchSession`] through which
//! `referee local`, `referee serve`, tournaments and ladder workers all play.
//!
//! One place makes a match's id, `accepted_at` and seed ([`MatchOptions`]), builds
//! both fighters ([`MatchHost::prepare`]), plays them with observers plugged in
//! ([`MatchSession::play`]) and keeps the replay through a sink chain
//! ([`ReplaySinks`]: sign, then write, then store).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use duel_replays::store::ReplayStore;
use duel_replays::{FighterInfo, Replay, SigningKey, Transcript};
use duel_rules::{ExchangeStep, Side, WeightClass};
use duel_sandbox::{Allocation, LoadedBot, Sandbox, SandboxConfig, SandboxStats};

use crate::bot::Bot;
use crate::bots::{BotContext, InferenceLink, builtin_bot, endpoint_bot};
use crate::endpoint::EndpointPolicy;
use crate::error::MatchError;
use crate::limits::{
    DECISION_WALL_CLOCK, MAX_CACHED_COMPONENTS, POOLED_MATCHES_MAX, POOLED_SANDBOXES_MAX,
    SEED_MODULUS,
};
use crate::opening::Opening;
use crate::record::{MatchConfig, MatchRecorder};
use crate::spec::BotSpec;
use duel_gateway::meter::ModelGateway;
use duel_gateway::tls::Trust;

/// How WASM instances are allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WasmAllocation {
    /// Each instance maps its own memory (~50 µs an instance, mostly mmap,
    /// munmap and page faults).
    OnDemand,
    /// Instances come from a pool reserved for this many matches at once
    /// (capped at [`POOLED_MATCHES_MAX`]), several times cheaper to set up;
    /// one that finds the pool full is allocated on demand instead, so more
    /// matches than that still play. What `referee local` (1), `referee
    /// serve` (its `--max-matches`), ladder workers (their count), tournaments
    /// and SPRT (their jobs) use; see [`HostConfig::playing_at_once`].
    Pooled { concurrent_matches: usize },
}

impl WasmAllocation {
    fn sandbox_allocation(self) -> Allocation {
        match self {
            WasmAllocation::OnDemand => Allocation::OnDemand,
            WasmAllocation::Pooled { concurrent_matches } => {
                let matches = concurrent_matches.clamp(1, POOLED_MATCHES_MAX);
                Allocation::Pooling {
                    // Two fighters a match (a failed instance is dropped before
                    // its replacement is made), two to spare.
                    instances: u32::try_from(matches * 2 + 2).unwrap_or(u32::MAX),
                }
            }
        }
    }
}

/// What a host is built with. Every value comes from the binary (flags and the
/// environment, read in `main`): nothing below reads the environment.
#[derive(Clone, Debug)]
pub struct HostConfig {
    /// Where metered model calls go (disabled: every call is refused, free).
    pub gateway: ModelGateway,
    /// Where endpoint bots of this process reach `duel.v1.Inference`, if it runs.
    pub inference: Option<InferenceLink>,
    /// Where compiled components are kept between processes (`None`: memory only).
    pub wasm_cache_dir: Option<PathBuf>,
    pub wasm_allocation: WasmAllocation,
    /// What outgoing TLS trusts (`grpcs://` bots; the gateway has its own copy).
    pub trust: Trust,
    /// How endpoint bots start and how their failures are recorded.
    pub endpoints: EndpointPolicy,
}

impl HostConfig {
    /// WASM instances from a pool sized for `matches` played at once by the
    /// process (see [`WasmAllocation::Pooled`]); none (on demand) for 0, a
    /// process that only validates uploads.
    pub fn playing_at_once(mut self, matches: usize) -> HostConfig {
        self.wasm_allocation = match matches {
            0 => WasmAllocation::OnDemand,
            _ => WasmAllocation::Pooled {
                concurrent_matches: matches,
            },
        };
        self
    }

    /// A host with `gateway`, no Inference service, no disk cache, WASM
    /// instances on demand, the system's TLS roots and the public endpoint
    /// policy (no peer text in replays).
    pub fn new(gateway: ModelGateway) -> HostConfig {
        HostConfig {
            gateway,
            inference: None,
            wasm_cache_dir: None,
            wasm_allocation: WasmAllocation::OnDemand,
            trust: Trust::system(),
            endpoints: EndpointPolicy::PUBLIC,
        }
    }
}

/// Everything a process needs to play matches. Cheap to clone; clones share
/// the sandboxes and caches.
#[derive(Clone, Debug)]
pub struct MatchHost {
    inner: Arc<HostInner>,
}

#[derive(Debug)]
struct HostInner {
    config: HostConfig,
    /// One sandbox (one wasmtime engine) per wall clock: the engine's epoch
    /// deadline is the clock, and the matches of a process nearly always share one.
    /// With [`WasmAllocation::Pooled`], at most [`POOLED_SANDBOXES_MAX`] of
    /// them have an instance pool (the rules' clock always can).
    sandboxes: Mutex<HashMap<Duration, Sandbox>>,
    /// Components loaded by digest (ladder workers keep their bytes in a
    /// database): a hit skips the bytes and the compile.
    components: Mutex<ComponentCache>,
    /// Components loaded from files, by path and wall clock, with the
    /// file's stamp when it was read: a tournament's thousand matches read
    /// each bot's file once, and a file changed since is read again.
    files: Mutex<HashMap<(PathBuf, Duration), (FileStamp, LoadedBot)>>,
}

/// What identifies a file's contents without reading them: its device and
/// inode, size, and modification and change times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileStamp {
    device: u64,
    inode: u64,
    size_bytes: u64,
    modified_ns: (i64, i64),
    changed_ns: (i64, i64),
}

impl FileStamp {
    /// The stamp of the file at `path` (a `stat`, nothing read); `None`
    /// when it cannot be had, and the file is then read as before.
    fn of(path: &Path) -> Option<FileStamp> {
        use std::os::unix::fs::MetadataExt;
        let metadata = std::fs::metadata(path).ok()?;
        Some(FileStamp {
            device: metadata.dev(),
            inode: metadata.ino(),
            size_bytes: metadata.size(),
            modified_ns: (metadata.mtime(), metadata.mtime_nsec()),
            changed_ns: (metadata.ctime(), metadata.ctime_nsec()),
        })
    }
}

#[derive(Debug, Default)]
struct ComponentCache {
    loaded: HashMap<(String, Duration), LoadedBot>,
    /// Insertion order, oldest first, for eviction.
    order: std::collections::VecDeque<(String, Duration)>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // The maps hold handles only; a panic elsewhere cannot leave them torn.
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl MatchHost {
    /// Builds the host. With a model configured the tokenizer is loaded now
    /// (a few hundred ms), so no match pays for it in a fighter's clock.
    pub fn new(config: HostConfig) -> MatchHost {
        if config.gateway.is_enabled() {
            duel_gateway::meter::warm_up();
        }
        if let Some(dir) = &config.wasm_cache_dir
            && let Err(error) = std::fs::create_dir_all(dir)
        {
            tracing::warn!(dir = %dir.display(), %error, "no disk cache for compiled bots");
        }
        MatchHost {
            inner: Arc::new(HostInner {
                config,
                sandboxes: Mutex::new(HashMap::new()),
                components: Mutex::new(ComponentCache::default()),
                files: Mutex::new(HashMap::new()),
            }),
        }
    }

    pub fn config(&self) -> &HostConfig {
        &self.inner.config
    }

    pub fn gateway(&self) -> &ModelGateway {
        &self.inner.config.gateway
    }

    /// The sandbox for decisions under `wall_clock`, started on first use.
    pub fn sandbox(&self, wall_clock: Duration) -> Result<Sandbox, MatchError> {
        let mut sandboxes = lock(&self.inner.sandboxes);
        if let Some(sandbox) = sandboxes.get(&wall_clock) {
            return Ok(sandbox.clone());
        }
        let config = &self.inner.config;
        let disk_cache_dir = config.wasm_cache_dir.clone().filter(|dir| dir.is_dir());
        // The rules' clock always gets its pool (ranked matches play under
        // it); other clocks share the rest of the allowance, first come.
        let other_pools = sandboxes
            .iter()
            .filter(|(clock, sandbox)| {
                **clock != DECISION_WALL_CLOCK
                    && sandbox.config().allocation != Allocation::OnDemand
            })
            .count();
        let allocation = match config.wasm_allocation {
            WasmAllocation::Pooled { .. }
                if wall_clock != DECISION_WALL_CLOCK && other_pools + 1 >= POOLED_SANDBOXES_MAX =>
            {
                Allocation::OnDemand
            }
            wanted => wanted.sandbox_allocation(),
        };
        let sandbox = Sandbox::new(SandboxConfig {
            decision_wall_clock: wall_clock,
            // A short clock needs a finer tick to be enforced at all (the default
            // tick is longer than a 1 ms clock).
            epoch_tick: duel_sandbox::limits::EPOCH_TICK_DEFAULT.min(wall_clock / 4),
            disk_cache_dir,
            allocation,
            ..SandboxConfig::default()
        })
        .map_err(MatchError::Sandbox)?;
        sandboxes.insert(wall_clock, sandbox.clone());
        Ok(sandbox)
    }

    /// What the host's sandboxes did so far (compiles, cache hits, instances
    /// from a pool and on demand), summed over the wall clocks in use.
    pub fn wasm_stats(&self) -> SandboxStats {
        lock(&self.inner.sandboxes)
            .values()
            .map(Sandbox::stats)
            .fold(SandboxStats::default(), |sum, one| SandboxStats {
                compiled: sum.compiled + one.compiled,
                memory_hits: sum.memory_hits + one.memory_hits,
                disk_hits: sum.disk_hits + one.disk_hits,
                disk_write_errors: sum.disk_write_errors + one.disk_write_errors,
                pool_instantiations: sum.pool_instantiations + one.pool_instantiations,
                on_demand_instantiations: sum.on_demand_instantiations
                    + one.on_demand_instantiations,
            })
    }

    /// The largest component this host accepts, in bytes.
    pub fn upload_bytes_max(&self) -> usize {
        SandboxConfig::default().upload_bytes_max
    }

    /// Validates and compiles a component from its bytes (an upload, or bytes
    /// kept elsewhere) for matches under `wall_clock`, and remembers it by
    /// digest. The error is the sandbox's one-line reason.
    pub async fn load_component(
        &self,
        bytes: Vec<u8>,
        wall_clock: Duration,
    ) -> Result<LoadedBot, duel_sandbox::SandboxError> {
        let sandbox = self.sandbox(wall_clock).map_err(|error| match error {
            MatchError::Sandbox(error) => error,
            other => duel_sandbox::SandboxError::Engine(other.to_string()),
        })?;
        let loaded = crate::wasm::load_in(&sandbox, bytes).await?;
        self.remember(loaded.clone(), wall_clock);
        Ok(loaded)
    }

    /// A component loaded before under `digest` (`sha256:…`), if still cached.
    pub fn cached_component(&self, digest: &str, wall_clock: Duration) -> Option<LoadedBot> {
        lock(&self.inner.components)
            .loaded
            .get(&(digest.to_owned(), wall_clock))
            .cloned()
    }

    fn remember(&self, loaded: LoadedBot, wall_clock: Duration) {
        let key = (loaded.digest().to_owned(), wall_clock);
        let mut cache = lock(&self.inner.components);
        if cache.loaded.insert(key.clone(), loaded).is_none() {
            cache.order.push_back(key);
        }
        while cache.order.len() > MAX_CACHED_COMPONENTS {
            if let Some(oldest) = cache.order.pop_front() {
                cache.loaded.remove(&oldest);
            }
        }
    }

    /// The component in the file at `path`, for matches under `wall_clock`:
    /// read and compiled the first time, then kept while the file's stamp
    /// holds (each read of a file starts a thread that a stuck read leaves
    /// behind; a tournament of 1,200 matches made 2,419 of them).
    async fn component_at(
        &self,
        path: &Path,
        wall_clock: Duration,
    ) -> Result<LoadedBot, MatchError> {
        let key = (path.to_owned(), wall_clock);
        let stamp = FileStamp::of(path);
        if let Some(stamp) = stamp
            && let Some((kept, loaded)) = lock(&self.inner.files).get(&key)
            && *kept == stamp
        {
            return Ok(loaded.clone());
        }
        let sandbox = self.sandbox(wall_clock)?;
        let cap_bytes = sandbox.config().upload_bytes_max;
        let read_path = path.to_owned();
        let bytes =
            tokio::task::spawn_blocking(move || crate::wasm::read_component(&read_path, cap_bytes))
                .await
                .map_err(|_| MatchError::ShuttingDown)??;
        let loaded = crate::wasm::load_in(&sandbox, bytes)
            .await
            .map_err(|source| MatchError::Component {
                bot: path.display().to_string(),
                source,
            })?;
        if let Some(stamp) = stamp {
            let mut files = lock(&self.inner.files);
            if files.len() >= MAX_CACHED_COMPONENTS {
                files.clear();
            }
            files.insert(key, (stamp, loaded.clone()));
        }
        Ok(loaded)
    }

    /// Builds both fighters of a match (concurrently: an endpoint's `Hello`
    /// and a component's compile overlap) under the options' id, time and seed.
    pub async fn prepare(
        &self,
        fighters: [Fighter; 2],
        options: MatchOptions,
    ) -> Result<MatchSession, MatchError> {
        let config = options.into_config()?;
        let [fighter_a, fighter_b] = fighters;
        let (bot_a, bot_b) = tokio::join!(
            self.build(&fighter_a, &config, Side::A),
            self.build(&fighter_b, &config, Side::B)
        );
        let bots = [bot_a?, bot_b?];
        let infos = [
            fighter_a.shown_as(bots[0].info()),
            fighter_b.shown_as(bots[1].info()),
        ];
        Ok(MatchSession {
            config,
            fighters: infos,
            bots,
        })
    }

    /// Builds one fighter as a match would (a component compiled, an endpoint
    /// asked `Hello`) and drops it: a bad spec fails before any match is played.
    /// Returns the fighter as replays show it.
    pub async fn check(
        &self,
        fighter: &Fighter,
        options: MatchOptions,
    ) -> Result<FighterInfo, MatchError> {
        let config = options.into_config()?;
        let bot = self.build(fighter, &config, Side::A).await?;
        Ok(fighter.shown_as(bot.info()))
    }

    async fn build(
        &self,
        fighter: &Fighter,
        config: &MatchConfig,
        side: Side,
    ) -> Result<Box<dyn Bot>, MatchError> {
        let host = &self.inner.config;
        let context = BotContext::new(
            config,
            side,
            duel_gateway::meter::FighterMeter::keeping(
                host.gateway.clone(),
                config.budget_tokens(),
                config.keep_transcript,
            ),
            host.inference.clone(),
        );
        match &fighter.source {
            FighterSource::Spec(BotSpec::Wasm(path)) => {
                let loaded = self.component_at(path, config.decision_wall_clock).await?;
                Ok(Box::new(crate::wasm::WasmBot::new(
                    path,
                    loaded,
                    crate::bots::sandbox_context(&context),
                    context.meter.clone(),
                )))
            }
            FighterSource::Spec(BotSpec::Builtin(spec)) => Ok(builtin_bot(spec, &context)),
            FighterSource::Spec(BotSpec::Endpoint(url)) => {
                endpoint_bot(url, &context, &host.trust, host.endpoints).await
            }
            FighterSource::Made(make) => Ok(make(&context)),
            FighterSource::Component(loaded) => Ok(Box::new(crate::wasm::WasmBot::named(
                loaded.digest().to_owned(),
                None,
                loaded.clone(),
                crate::bots::sandbox_context(&context),
                context.meter.clone(),
            ))),
        }
    }
}

/// Makes a bot for one side of a match from its context (see [`FighterSource::Made`]).
pub type BotMaker = Arc<dyn Fn(&BotContext) -> Box<dyn Bot> + Send + Sync>;

/// Where a fighter comes from.
#[derive(Clone)]
pub enum FighterSource {
    /// A bot spec as a user writes it.
    Spec(BotSpec),
    /// A component loaded already ([`MatchHost::load_component`]).
    Component(LoadedBot),
    /// A bot the caller makes itself (a test's slow bot, an embedder's own kind),
    /// given the fighter's context: seed, side, wall clock, its metered account.
    Made(BotMaker),
}

impl std::fmt::Debug for FighterSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FighterSource::Spec(spec) => f.debug_tuple("Spec").field(spec).finish(),
            FighterSource::Component(loaded) => f.debug_tuple("Component").field(loaded).finish(),
            FighterSource::Made(_) => f.write_str("Made(..)"),
        }
    }
}

/// One fighter of a match: where it comes from, and how the replay shows it.
#[derive(Clone, Debug)]
pub struct Fighter {
    pub source: FighterSource,
    /// The name in the replay (a ladder bot's name); by default the bot's own
    /// (a file stem, an endpoint's `Hello` name, a built-in's spec).
    pub name: Option<String>,
    /// The spec in the replay (the exact stored version); by default the spec given.
    pub label: Option<String>,
}

impl Fighter {
    pub fn new(source: FighterSource) -> Fighter {
        Fighter {
            source,
            name: None,
            label: None,
        }
    }

    /// Shown in the replay as `name`, started from `label`.
    pub fn shown(mut self, name: String, label: String) -> Fighter {
        self.name = Some(name);
        self.label = Some(label);
        self
    }

    fn shown_as(&self, own: FighterInfo) -> FighterInfo {
        FighterInfo {
            name: self.name.as_deref().map_or(own.name, Into::into),
            spec: self.label.as_deref().map(Into::into).or(own.spec),
            ..own
        }
    }
}

impl From<BotSpec> for Fighter {
    fn from(spec: BotSpec) -> Fighter {
        Fighter::new(FighterSource::Spec(spec))
    }
}

/// What a match is played under. Unset ids, times and seeds are made here, the
/// one place that makes them.
#[derive(Clone, Debug)]
pub struct MatchOptions {
    pub class: WeightClass,
    /// `None`: a fresh seed ([`new_seed`]).
    pub seed: Option<u64>,
    /// `None`: a fresh UUID.
    pub match_id: Option<String>,
    /// RFC 3339; `None`: now.
    pub accepted_at: Option<String>,
    /// Per decision; the rules fix 10 s, local experiments may shorten it.
    pub wall_clock: Duration,
    /// Exchanges forced at the start (tournament and SPRT openings).
    pub opening: Opening,
    /// Keep the match's transcript (what model calls sent and received) and
    /// sign its digests into the replay. On by default.
    pub keep_transcript: bool,
    /// Play on from a recorded match ([`ForkStart::options`](crate::fork::ForkStart::options)).
    pub fork: Option<std::sync::Arc<crate::fork::ForkStart>>,
}

impl MatchOptions {
    /// A fresh match of `class` under the rules' wall clock.
    pub fn new(class: WeightClass) -> MatchOptions {
        MatchOptions {
            class,
            seed: None,
            match_id: None,
            accepted_at: None,
            wall_clock: DECISION_WALL_CLOCK,
            opening: Opening::none(),
            keep_transcript: true,
            fork: None,
        }
    }

    /// Whether the match keeps a transcript (see [`MatchOptions::keep_transcript`]).
    pub fn transcript(mut self, keep: bool) -> MatchOptions {
        self.keep_transcript = keep;
        self
    }

    /// Starts the match with `opening` forced for both fighters.
    pub fn opening(mut self, opening: Opening) -> MatchOptions {
        self.opening = opening;
        self
    }

    pub fn seed(mut self, seed: u64) -> MatchOptions {
        self.seed = Some(seed);
        self
    }

    pub fn wall_clock(mut self, wall_clock: Duration) -> MatchOptions {
        self.wall_clock = wall_clock;
        self
    }

    /// The match configuration, with what was left unset made now. A seed
    /// over [`SEED_MAX`](crate::limits::SEED_MAX) is refused: the replay's
    /// signature could not bind it.
    pub fn into_config(self) -> Result<MatchConfig, MatchError> {
        if let Some(seed) = self.seed
            && seed > crate::limits::SEED_MAX
        {
            return Err(MatchError::Config(format!(
                "seed {seed} is over {}: a replay's signature binds integers up to 2^53 - 1",
                crate::limits::SEED_MAX
            )));
        }
        let accepted_at = match self.accepted_at {
            Some(at) => at,
            None => now_rfc3339()?,
        };
        let mut config = MatchConfig::new(
            self.match_id.unwrap_or_else(new_match_id),
            accepted_at,
            self.class,
            self.seed.unwrap_or_else(new_seed),
        );
        config.decision_wall_clock = self.wall_clock;
        config.opening = self.opening;
        config.keep_transcript = self.keep_transcript;
        config.fork = self.fork;
        Ok(config)
    }
}

/// A fresh match seed: random, and short enough to retype (below
/// [`SEED_MODULUS`]). The only seed generator of the project.
pub fn new_seed() -> u64 {
    uuid::Uuid::new_v4().as_u64_pair().0 % SEED_MODULUS
}

/// A fresh match id.
pub fn new_match_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Now in RFC 3339 (UTC), for `accepted_at`.
pub fn now_rfc3339() -> Result<String, MatchError> {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .map_err(MatchError::Clock)
}

/// Something that follows a match exchange by exchange (the tape, live feeds,
/// metrics, `WatchMatch`).
pub trait MatchObserver {
    fn exchange(&mut self, recorder: &MatchRecorder, step: &ExchangeStep);
}

impl<F: FnMut(&MatchRecorder, &ExchangeStep)> MatchObserver for F {
    fn exchange(&mut self, recorder: &MatchRecorder, step: &ExchangeStep) {
        self(recorder, step);
    }
}

/// Several observers, each told in turn.
impl<A: MatchObserver, B: MatchObserver> MatchObserver for (A, B) {
    fn exchange(&mut self, recorder: &MatchRecorder, step: &ExchangeStep) {
        self.0.exchange(recorder, step);
        self.1.exchange(recorder, step);
    }
}

impl<O: MatchObserver> MatchObserver for Option<O> {
    fn exchange(&mut self, recorder: &MatchRecorder, step: &ExchangeStep) {
        if let Some(observer) = self {
            observer.exchange(recorder, step);
        }
    }
}

/// A match ready to play: its configuration and both fighters.
pub struct MatchSession {
    config: MatchConfig,
    fighters: [FighterInfo; 2],
    bots: [Box<dyn Bot>; 2],
}

impl std::fmt::Debug for MatchSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MatchSession")
            .field("config", &self.config)
            .field("fighters", &self.fighters)
            .finish_non_exhaustive()
    }
}

impl MatchSession {
    pub fn config(&self) -> &MatchConfig {
        &self.config
    }

    /// Both fighters as the replay shows them.
    pub fn fighters(&self) -> &[FighterInfo; 2] {
        &self.fighters
    }

    /// Plays the whole match, telling `observer` after every exchange. The bots
    /// (and their Inference credentials) are gone when this returns, or when
    /// the future is dropped (an aborted match).
    pub async fn play(self, observer: &mut (dyn MatchObserver + Send)) -> Played {
        let MatchSession {
            config,
            fighters,
            bots,
        } = self;
        let [mut bot_a, mut bot_b] = bots;
        let (replay, transcript) = crate::runner::run_fighters(
            config,
            fighters,
            [bot_a.as_mut(), bot_b.as_mut()],
            |recorder, step| observer.exchange(recorder, step),
        )
        .await;
        Played { replay, transcript }
    }
}

/// A finished match: its replay and, when it kept one, its transcript (which
/// holds a decision only when a fighter called a model in it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Played {
    pub replay: Replay,
    pub transcript: Option<Transcript>,
}

impl Played {
    /// The transcript, when it has something in it.
    pub fn said(&self) -> Option<&Transcript> {
        self.transcript
            .as_ref()
            .filter(|transcript| !transcript.decisions.is_empty())
    }
}

/// What happens to a finished replay, in this order: signed, written to a
/// file, put into a store; and to its transcript: written to a file (owner
/// only), kept in the store apart from the replay. Each step is optional.
#[derive(Clone, Debug, Default)]
pub struct ReplaySinks {
    signing_key: Option<Arc<SigningKey>>,
    file: Option<PathBuf>,
    transcript_file: Option<PathBuf>,
    store: Option<ReplayStore>,
}

impl ReplaySinks {
    pub fn new() -> ReplaySinks {
        ReplaySinks::default()
    }

    pub fn sign_with(mut self, key: Arc<SigningKey>) -> ReplaySinks {
        self.signing_key = Some(key);
        self
    }

    pub fn write_to(mut self, path: PathBuf) -> ReplaySinks {
        self.file = Some(path);
        self
    }

    pub fn put_into(mut self, store: ReplayStore) -> ReplaySinks {
        self.store = Some(store);
        self
    }

    /// Also writes the transcript to `path` (mode 0600: it holds prompts).
    pub fn transcript_to(mut self, path: PathBuf) -> ReplaySinks {
        self.transcript_file = Some(path);
        self
    }

    pub fn store(&self) -> Option<&ReplayStore> {
        self.store.as_ref()
    }

    /// Signs, writes and stores `replay`; the first step that fails ends the chain.
    pub async fn keep(&self, replay: &mut Replay) -> Result<(), MatchError> {
        if let Some(key) = &self.signing_key {
            duel_replays::sign(replay, key)?;
        }
        if let Some(path) = &self.file {
            replay.write(path)?;
        }
        if let Some(store) = &self.store {
            store.put(replay).await?;
        }
        Ok(())
    }

    /// [`ReplaySinks::keep`] of the replay, then the transcript: written to
    /// its file (an empty one when no fighter called a model, so the file
    /// asked for always exists), and kept in the store when it has
    /// something in it. The transcript is kept after the replay, whose
    /// signature covers its digests.
    pub async fn keep_played(&self, played: &mut Played) -> Result<(), MatchError> {
        self.keep(&mut played.replay).await?;
        if let (Some(path), Some(transcript)) = (&self.transcript_file, &played.transcript) {
            duel_files::write_atomic(
                path,
                transcript.to_json_pretty().as_bytes(),
                duel_files::WriteOptions::PRIVATE,
            )
            .map_err(|error| {
                MatchError::Replay(duel_replays::ReplayError::File(format!(
                    "cannot write transcript {error}"
                )))
            })?;
        }
        if let (Some(store), Some(transcript)) = (&self.store, played.said()) {
            store.put_transcript(transcript).await?;
        }
        Ok(())
    }
}
