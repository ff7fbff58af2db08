//! The `ladder` binary: `serve`, `worker`, `init` and `ledger check --db` work on
//! the database directly; every other command is a client of `ladder serve`.

mod client;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use std::num::{NonZeroU32, NonZeroUsize};

use duel_ladder::Store;
use duel_ladder::gate::ApiLimits;
use duel_ladder::metrics::LadderMetrics;
use duel_ladder::model::OwnerQuotas;
use duel_ladder::worker::{self, BotFactory, LadderFactory, WorkerConfig};
use duel_referee::credentials::Credentials;
use duel_referee::outcome::{EXIT_ERROR, Outcome};
use duel_referee::publish::HttpLimits;
use duel_referee::shutdown::Shutdown;
use duel_referee::{HostConfig, InferenceLink, MatchHost};
use duel_replays::store::ReplayStore;

/// jemalloc rather than glibc's malloc: its thread cache serves the blocks a
/// match allocates (a replay's rounds are 1,632 bytes, past glibc's 1,032-byte
/// cache). docs/perf/runner.md, "jemalloc for the binaries".
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Debug, Parser)]
#[command(
    name = "ladder",
    version,
    about = "The duel ladder: ranked seasons, ratings and stakes"
)]
struct Cli {
    #[command(flatten)]
    connection: client::Connection,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create the database (migrations run) and its first operator, writing the
    /// operator's token to a file readable only by you.
    Init {
        #[arg(long, default_value = "sqlite://ladder.db")]
        db: String,
        #[arg(long, default_value = "operator")]
        operator: String,
        #[arg(long)]
        token_file: PathBuf,
        /// Also create the replay signing key here (mode 0600) if it is missing,
        /// so workers started together all load one key.
        #[arg(long, value_name = "PATH")]
        signing_key: Option<PathBuf>,
    },
    /// Claim, run and settle matches until interrupted, publishing each
    /// match's signed replay.
    Worker {
        #[arg(long)]
        db: String,
        /// Workers in this process.
        #[arg(long, default_value_t = 1)]
        workers: usize,
        /// Serve `duel.v1.Inference` for endpoint bots of this process's matches
        /// here (without it, endpoint bots get no model credential).
        #[arg(long, value_name = "ADDR")]
        inference_listen: Option<std::net::SocketAddr>,
        /// The Inference URL endpoint bots are told (default: http://<inference-listen>).
        #[arg(long, value_name = "URL", requires = "inference_listen")]
        public_url: Option<String>,
        /// Also serve Prometheus metrics at http://ADDR/metrics.
        #[arg(long, value_name = "ADDR")]
        metrics_listen: Option<std::net::SocketAddr>,
        #[command(flatten)]
        play: PlayArgs,
    },
    /// Run the gRPC API, in-process workers, the pairing wave timer and (with
    /// --http) the public replay service until Ctrl-C or SIGTERM.
    Serve {
        #[arg(long, default_value = "sqlite://ladder.db")]
        db: String,
        #[arg(long, default_value = "127.0.0.1:50061")]
        listen: std::net::SocketAddr,
        /// Serve replays over HTTP here: listing, download, public key, viewer
        /// and live feeds (e.g. 127.0.0.1:8080).
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
        /// In-process workers (0: leave matches to `ladder worker` processes).
        #[arg(long, default_value_t = 2)]
        workers: usize,
        /// Milliseconds between pairing waves.
        #[arg(long, default_value_t = duel_ladder::limits::DEFAULT_WAVE_INTERVAL_MS)]
        wave_interval_ms: u64,
        /// An active bot (`ladder bot activate`) is re-queued no sooner than
        /// this many milliseconds after its last match settled; 0: the next
        /// wave (the wave interval sets the pace).
        #[arg(long, default_value_t = duel_ladder::limits::DEFAULT_MATCH_INTERVAL_MS)]
        match_interval_ms: u64,
        /// The Inference URL endpoint bots are told (default: http://<listen>).
        #[arg(long, value_name = "URL")]
        public_url: Option<String>,
        /// Duel TV's pace (with --http): milliseconds between two exchanges
        /// of the broadcast. Duel TV replays recently settled ranked matches
        /// at this pace, one after another, at /tv (server-sent events) and
        /// /tv/now, each also listed at /live while it airs. 700 shows a
        /// 36-exchange match in about 25 s; lower is faster. Between two
        /// matches it pauses for 4 exchanges.
        #[arg(
            long,
            value_name = "MS",
            default_value_t = duel_ladder::limits::DEFAULT_TV_EXCHANGE_MS,
            value_parser = clap::value_parser!(u64).range(1..=duel_ladder::limits::MAX_TV_EXCHANGE_MS)
        )]
        tv_exchange_ms: u64,
        #[command(flatten)]
        limits: LimitArgs,
        #[command(flatten)]
        play: PlayArgs,
    },
    /// Matches settled per second on a fresh database with built-in bots,
    /// against the referee alone (the bare baseline): also the settle phase's
    /// CPU per match, each worker step's wall-clock time per match (where the
    /// workers wait), how settlements shared transactions, and `ledger check`
    /// over the result (exit 1 if it finds a violation).
    Bench {
        #[arg(long)]
        db: String,
        #[arg(long, default_value_t = 1_000)]
        matches: usize,
        #[arg(long, default_value_t = 2)]
        workers: usize,
        #[arg(long, default_value = "bench-replays")]
        replays_dir: PathBuf,
        /// One JSON object instead of lines of text.
        #[arg(long)]
        json: bool,
    },
    /// The public site's scale benchmark (docs/perf/site.md): seed a large
    /// ladder in SQL, then load the site's pages.
    BenchSite {
        #[command(subcommand)]
        command: BenchSiteCommand,
    },
    /// Ledger commands.
    Ledger {
        #[command(subcommand)]
        command: LedgerCommand,
    },
    #[command(flatten)]
    Client(client::ClientCommand),
}

/// How matches are played and their replays published (`serve` and `worker`).
#[derive(Debug, clap::Args)]
struct PlayArgs {
    /// The replay store: a folder, file:///path or s3://bucket/prefix (S3
    /// endpoint, region and credentials from the AWS_* environment variables).
    #[arg(
        long,
        alias = "replays-dir",
        value_name = "URL",
        default_value = "replays"
    )]
    replays: String,
    /// The signing key file, created (mode 0600) if missing. Default:
    /// $DUEL_SIGNING_KEY_FILE, else $XDG_DATA_HOME/duel/signing.key or
    /// ~/.local/share/duel/signing.key. Every worker of one ladder needs the same key.
    #[arg(long, value_name = "PATH")]
    signing_key: Option<PathBuf>,
    /// A model catalogue for bots' metered model calls: a TOML file of
    /// [[model]] tables (`name`, `url`, optional `upstream_model`,
    /// `api_key_env`, `input_usd_per_mtok`, `output_usd_per_mtok`,
    /// `default = true`). Without a model every model call is refused.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["model_url", "model"])]
    models: Option<PathBuf>,
    /// One model without a catalogue: an OpenAI-compatible URL (API key from
    /// $DUEL_MODEL_API_KEY), or builtin:house (no --model needed).
    #[arg(long, value_name = "URL")]
    model_url: Option<String>,
    /// The model's name with --model-url.
    #[arg(long, requires = "model_url")]
    model: Option<String>,
    /// Accept endpoint bots on loopback and private addresses.
    #[arg(long)]
    allow_private_endpoints: bool,
}

/// How hard `ladder serve` may be used: API rates, upload turns and owner quotas.
#[derive(Debug, clap::Args)]
struct LimitArgs {
    /// API calls a second one client address may make (IPv6: per /64); over it,
    /// RESOURCE_EXHAUSTED. Checked before the token.
    #[arg(long, default_value_t = ApiLimits::default().calls_per_second_per_peer)]
    calls_per_second_per_peer: NonZeroU32,
    /// Calls one client address may make at once before the rate applies.
    #[arg(long, default_value_t = ApiLimits::default().call_burst_per_peer)]
    call_burst_per_peer: NonZeroU32,
    /// API calls a second one token may make.
    #[arg(long, default_value_t = ApiLimits::default().calls_per_second_per_token)]
    calls_per_second_per_token: NonZeroU32,
    /// Calls one token may make at once before the rate applies.
    #[arg(long, default_value_t = ApiLimits::default().call_burst_per_token)]
    call_burst_per_token: NonZeroU32,
    /// Bot uploads received at once; one more gets RESOURCE_EXHAUSTED.
    #[arg(long, default_value_t = ApiLimits::default().max_concurrent_uploads)]
    max_concurrent_uploads: NonZeroUsize,
    /// Uploads validated (compiled) at once; more wait for a turn.
    #[arg(long, default_value_t = DEFAULT_COMPILES)]
    max_concurrent_compiles: NonZeroUsize,
    /// Bot versions one owner may hold across all its bots.
    #[arg(long, default_value_t = OwnerQuotas::default().max_bot_versions)]
    max_versions_per_owner: u64,
    /// Bytes of distinct WASM components one owner's versions may hold.
    #[arg(long, default_value_t = OwnerQuotas::default().max_stored_bytes)]
    max_stored_bytes_per_owner: u64,
    /// Seconds one owner's uploads may spend compiling per UTC day.
    #[arg(long, default_value_t = OwnerQuotas::default().compile_seconds_per_day)]
    compile_seconds_per_day: u64,
    /// Connections the replay service (--http) serves at once; more wait to be
    /// accepted.
    #[arg(long, default_value_t = HttpLimits::default().max_connections)]
    http_max_connections: NonZeroUsize,
    /// Milliseconds a replay service client has to send a request's headers
    /// (also the longest a kept-alive connection waits for its next request).
    #[arg(long, default_value_t = duration_ms(HttpLimits::default().header_read_timeout))]
    http_header_timeout_ms: u64,
    /// Milliseconds with no bytes moving after which a replay service
    /// connection is closed.
    #[arg(long, default_value_t = duration_ms(HttpLimits::default().idle_timeout))]
    http_idle_timeout_ms: u64,
}

fn duration_ms(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

const DEFAULT_COMPILES: NonZeroUsize =
    match NonZeroUsize::new(duel_ladder::limits::DEFAULT_MAX_CONCURRENT_COMPILES) {
        Some(compiles) => compiles,
        None => panic!("the default compile turns must be at least 1"),
    };

impl LimitArgs {
    fn api(&self) -> ApiLimits {
        ApiLimits {
            calls_per_second_per_peer: self.calls_per_second_per_peer,
            call_burst_per_peer: self.call_burst_per_peer,
            calls_per_second_per_token: self.calls_per_second_per_token,
            call_burst_per_token: self.call_burst_per_token,
            max_concurrent_uploads: self.max_concurrent_uploads,
        }
    }

    fn http(&self) -> HttpLimits {
        HttpLimits {
            header_read_timeout: std::time::Duration::from_millis(
                self.http_header_timeout_ms.max(1),
            ),
            idle_timeout: std::time::Duration::from_millis(self.http_idle_timeout_ms.max(1)),
            max_connections: self.http_max_connections,
        }
    }

    fn quotas(&self) -> OwnerQuotas {
        OwnerQuotas {
            max_bot_versions: self.max_versions_per_owner,
            max_stored_bytes: self.max_stored_bytes_per_owner,
            compile_seconds_per_day: self.compile_seconds_per_day,
        }
    }
}

/// The environment variable naming the signing key file (as for `referee`).
const SIGNING_KEY_ENV: &str = "DUEL_SIGNING_KEY_FILE";

impl PlayArgs {
    fn signing_key(&self) -> Result<Arc<duel_replays::SigningKey>> {
        let path = match (&self.signing_key, std::env::var_os(SIGNING_KEY_ENV)) {
            (Some(path), _) => path.clone(),
            (None, Some(path)) if !path.is_empty() => PathBuf::from(path),
            _ => duel_replays::default_signing_key_path().with_context(|| {
                format!("no home folder: give --signing-key PATH or set {SIGNING_KEY_ENV}")
            })?,
        };
        let (key, created) = duel_replays::load_or_create_signing_key(&path)?;
        if created {
            eprintln!(
                "ladder: created a new signing key at {} (public key {})",
                path.display(),
                duel_replays::public_key_text(&key.verifying_key())
            );
        }
        Ok(Arc::new(key))
    }

    /// The match host's configuration from the model flags and the
    /// environment (the model key, extra TLS roots, the compiled-bot cache):
    /// the one place the ladder binary reads them.
    fn host_config(&self) -> Result<HostConfig> {
        let config = duel_referee::env::host_config(duel_referee::env::ModelFlags {
            models: self.models.as_deref(),
            model_url: self.model_url.as_deref(),
            model: self.model.as_deref(),
        })?;
        Ok(worker::ladder_host_config(
            config,
            self.allow_private_endpoints,
        ))
    }
}

#[derive(Debug, Subcommand)]
enum BenchSiteCommand {
    /// Fill an empty database with owners, bots, two seasons, settled matches,
    /// ratings, frozen standings and rating histories (the ledger stays empty).
    Seed {
        #[arg(long)]
        db: String,
        #[arg(long, default_value_t = 10_000)]
        bots: u64,
        #[arg(long, default_value_t = 1_000_000)]
        matches: u64,
        #[arg(long)]
        json: bool,
    },
    /// Measure each page and its JSON twin of a running `ladder serve --http`
    /// over the seeded database: latency percentiles and requests per second.
    Load {
        /// The site, e.g. http://127.0.0.1:8080.
        #[arg(long)]
        url: String,
        /// The database the server serves (the pages' addresses are found in it).
        #[arg(long)]
        db: String,
        /// Measured requests per page and format.
        #[arg(long, default_value_t = 1_000)]
        requests: usize,
        #[arg(long, default_value_t = 8)]
        concurrency: usize,
        /// The serve process, whose RSS is read around the SSE watchers.
        #[arg(long)]
        server_pid: Option<u32>,
        /// Concurrent SSE watchers of Duel TV (/tv); 0 skips them.
        #[arg(long, default_value_t = duel_ladder::limits::BENCH_SITE_SSE_WATCHERS)]
        watchers: usize,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
enum LedgerCommand {
    /// Verify every ledger invariant; exits non-zero naming the first violation.
    /// With --db it reads the database directly, otherwise it asks the server.
    Check {
        #[arg(long)]
        db: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

/// `println!` that survives a closed pipe (`ladder bench | head -1`).
macro_rules! say {
    ($($arg:tt)*) => {
        client::emit(&format!("{}\n", format_args!($($arg)*)))
    };
}

fn main() -> ExitCode {
    // Colours only on a terminal: logs piped to files or tests stay plain text.
    // `RUST_LOG` filters as everywhere (`RUST_LOG=sqlx::query=debug` shows each
    // statement with its time); `info` without it.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("ladder: error: cannot start the async runtime: {error}");
            return ExitCode::from(EXIT_ERROR);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(outcome) => outcome.exit_code(),
        Err(error) => {
            // `{:#}` prints the whole context chain on one line; what it
            // quotes from the server never reaches the terminal as escapes.
            eprintln!(
                "ladder: error: {}",
                duel_referee::terminal::safe(&format!("{error:#}"))
            );
            ExitCode::from(EXIT_ERROR)
        }
    }
}

async fn run(cli: Cli) -> Result<Outcome> {
    match cli.command {
        Command::Init {
            db,
            operator,
            token_file,
            signing_key,
        } => {
            if let Some(path) = &signing_key {
                let (key, created) = duel_replays::load_or_create_signing_key(path)?;
                say!(
                    "signing key {} {} (public key {})",
                    path.display(),
                    if created { "created" } else { "exists" },
                    duel_replays::public_key_text(&key.verifying_key())
                );
            }
            let store = Store::connect(&db)
                .await
                .with_context(|| format!("opening {db}"))?;
            match store.bootstrap_operator(&operator).await? {
                Some((user, token)) => {
                    client::write_secret(&token_file, &token)?;
                    say!(
                        "operator {} created; token written to {}",
                        user.name,
                        token_file.display()
                    );
                }
                None => say!("an operator exists already; nothing created"),
            }
            Ok(Outcome::Done)
        }
        Command::Worker {
            db,
            workers,
            inference_listen,
            public_url,
            metrics_listen,
            play,
        } => {
            let signing_key = play.signing_key()?;
            // Each worker plays one match at a time: a WASM instance pool for
            // that many (beyond it, on demand).
            let mut host_config = play.host_config()?.playing_at_once(workers.max(1));
            // One object per replay: `ladder serve` lists them from the database.
            let replays = ReplayStore::open(&play.replays)
                .with_context(|| format!("opening the replay store {}", play.replays))?
                .without_index();
            let store = Store::connect(&db)
                .await
                .with_context(|| format!("opening {db}"))?;
            let shutdown = Shutdown::install()?;
            let stop_rx = shutdown.receiver();
            host_config.inference = match inference_listen {
                Some(address) => Some(serve_inference(address, public_url, stop_rx.clone()).await?),
                None => None,
            };
            // Loads the tokenizer (when a model is configured) before any match.
            let host = tokio::task::spawn_blocking(move || MatchHost::new(host_config))
                .await
                .context("cannot start the match host")?;
            let factory: Arc<dyn BotFactory> = Arc::new(LadderFactory::new(
                store.clone(),
                host.clone(),
                play.allow_private_endpoints,
            ));
            let metrics = LadderMetrics::new();
            let mut tasks = Vec::new();
            if let Some(address) = metrics_listen {
                let listener = tokio::net::TcpListener::bind(address)
                    .await
                    .with_context(|| format!("cannot listen on {address} (metrics)"))?;
                let (metrics, host) = (Arc::clone(&metrics), host.clone());
                let mut stop = stop_rx.clone();
                tasks.push(tokio::spawn(duel_referee::grpc::metrics::serve_metrics(
                    listener,
                    move || metrics.render(&host.wasm_stats()),
                    async move {
                        let _ = stop.wait_for(|stopped| *stopped).await;
                    },
                )));
            }
            for _ in 0..workers.max(1) {
                let mut config =
                    WorkerConfig::new(host.clone(), replays.clone(), Arc::clone(&signing_key));
                config.metrics = Some(Arc::clone(&metrics));
                tasks.push(tokio::spawn(worker::run(
                    store.clone(),
                    Arc::clone(&factory),
                    config,
                    stop_rx.clone(),
                )));
            }
            for task in tasks {
                let _ = task.await;
            }
            Ok(Outcome::Done)
        }
        Command::Serve {
            db,
            listen,
            http,
            workers,
            wave_interval_ms,
            match_interval_ms,
            public_url,
            tv_exchange_ms,
            limits,
            play,
        } => {
            let config = duel_ladder::serve::ServeConfig {
                db_url: db.clone(),
                listen,
                http,
                replays: play.replays.clone(),
                signing_key: play.signing_key()?,
                workers,
                wave_interval: std::time::Duration::from_millis(wave_interval_ms.max(1)),
                match_interval: std::time::Duration::from_millis(match_interval_ms),
                allow_private_endpoints: play.allow_private_endpoints,
                host: play.host_config()?,
                public_url,
                api: limits.api(),
                quotas: limits.quotas(),
                max_concurrent_compiles: limits.max_concurrent_compiles,
                http_limits: limits.http(),
                tv: duel_ladder::tv::TvConfig::paced(std::time::Duration::from_millis(
                    tv_exchange_ms,
                )),
            };
            let shutdown = Shutdown::install()?;
            duel_ladder::serve::serve(config, shutdown.receiver(), None)
                .await
                .with_context(|| format!("serving {db} on {listen}"))?;
            Ok(Outcome::Done)
        }
        Command::Bench {
            db,
            matches,
            workers,
            replays_dir,
            json,
        } => {
            let report = duel_ladder::bench::settle_bench(&db, matches, workers, replays_dir)
                .await
                .with_context(|| format!("benchmarking {db}"))?;
            if json {
                say!("{}", serde_json::to_string_pretty(&bench_json(&report))?);
                return Ok(match report.ledger {
                    Ok(()) => Outcome::Done,
                    Err(_) => Outcome::Negative,
                });
            }
            say!(
                "{}: {} matches, {} workers: accepted {:.0}/s, settled {:.0}/s, bare referee {:.0}/s (the referee alone is {:.0}x faster)",
                report.backend,
                report.matches,
                report.workers,
                report.accepted_per_s,
                report.settled_per_s,
                report.bare_per_s,
                report.bare_per_s / report.settled_per_s.max(1e-9)
            );
            if let Some(cpu) = report.settle_cpu {
                say!(
                    "settling: {:.2} ms of CPU per match (this process, user + system), {:.0}% of it in the kernel",
                    cpu.per_match_ms,
                    cpu.system_share * 100.0
                );
            }
            // Summed over the workers: with W workers busy all along, the sum
            // is W ÷ the settled rate; the largest step is where to look.
            let steps: Vec<String> = report
                .step_ms
                .iter()
                .map(|(step, ms)| format!("{} {ms:.2}", step.name()))
                .collect();
            say!(
                "worker time per match, in ms of wall clock: {} (sum {:.2}; {} workers at {:.0}/s have {:.2})",
                steps.join(", "),
                report.step_ms.iter().map(|(_, ms)| ms).sum::<f64>(),
                report.workers,
                report.settled_per_s,
                report.workers as f64 * 1_000.0 / report.settled_per_s.max(1e-9)
            );
            let stats = report.settlements;
            say!(
                "settlements: {} in {} shared transactions ({:.1} each), {} alone",
                stats.batched,
                stats.batches,
                stats.batched as f64 / stats.batches.max(1) as f64,
                stats.alone
            );
            match &report.ledger {
                Ok(()) => {
                    say!("ledger check: ok");
                    Ok(Outcome::Done)
                }
                Err(violation) => {
                    eprintln!("ledger check: {violation}");
                    Ok(Outcome::Negative)
                }
            }
        }
        Command::BenchSite { command } => bench_site(command).await,
        Command::Ledger {
            command: LedgerCommand::Check { db: None, json },
        } => Ok(if client::ledger_check(cli.connection, json).await? {
            Outcome::Done
        } else {
            Outcome::Negative
        }),
        Command::Ledger {
            command: LedgerCommand::Check { db: Some(db), json },
        } => {
            let store = Store::connect(&db)
                .await
                .with_context(|| format!("opening {db}"))?;
            let checked = store.ledger_check().await?;
            let ok = checked.is_ok();
            match checked {
                Ok(report) => client::print_ledger(
                    json,
                    Ok(()),
                    report.accounts,
                    report.transfers,
                    report.pending_unresolved,
                    report.credits_in_circulation,
                    report.house_credits,
                ),
                Err(violation) => client::print_ledger(json, Err(violation), 0, 0, 0, 0, 0),
            }
            Ok(if ok { Outcome::Done } else { Outcome::Negative })
        }
        Command::Client(command) => {
            client::run(cli.connection, command).await?;
            Ok(Outcome::Done)
        }
    }
}

/// `ladder bench --json`: the report's figures, steps keyed by name
/// (`lease_check`), `ledger` `"ok"` or the first violation.
fn bench_json(report: &duel_ladder::bench::BenchReport) -> serde_json::Value {
    let steps: serde_json::Map<String, serde_json::Value> = report
        .step_ms
        .iter()
        .map(|(step, ms)| (step.name().replace(' ', "_"), serde_json::json!(ms)))
        .collect();
    serde_json::json!({
        "backend": report.backend,
        "matches": report.matches,
        "workers": report.workers,
        "accepted_per_s": report.accepted_per_s,
        "settled_per_s": report.settled_per_s,
        "bare_per_s": report.bare_per_s,
        "settle_cpu": report.settle_cpu.map(|cpu| serde_json::json!({
            "per_match_ms": cpu.per_match_ms,
            "system_share": cpu.system_share,
        })),
        "step_ms": steps,
        "settlements": {
            "batches": report.settlements.batches,
            "batched": report.settlements.batched,
            "alone": report.settlements.alone,
        },
        "ledger": match &report.ledger {
            Ok(()) => serde_json::json!("ok"),
            Err(violation) => serde_json::json!(violation),
        },
    })
}

async fn bench_site(command: BenchSiteCommand) -> Result<Outcome> {
    match command {
        BenchSiteCommand::Seed {
            db,
            bots,
            matches,
            json,
        } => {
            let report = duel_ladder::bench_site::seed(&db, bots, matches)
                .await
                .with_context(|| format!("seeding {db}"))?;
            if json {
                say!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                say!(
                    "{}: seeded {} bots of {} owners, {} matches, {} rating points in {:.1} s",
                    report.backend,
                    report.bots,
                    report.owners,
                    report.matches,
                    report.rating_history_rows,
                    report.total_s
                );
                for (step, seconds) in &report.steps {
                    say!("  {step:<16} {seconds:>8.1} s");
                }
            }
            Ok(Outcome::Done)
        }
        BenchSiteCommand::Load {
            url,
            db,
            requests,
            concurrency,
            server_pid,
            watchers,
            json,
        } => {
            let config = duel_ladder::bench_site::LoadConfig {
                url,
                db_url: db,
                requests,
                concurrency,
                server_pid,
                watchers,
            };
            let report = duel_ladder::bench_site::load(&config)
                .await
                .with_context(|| format!("loading {}", config.url))?;
            if json {
                say!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                client::emit(&report.table());
            }
            Ok(if report.errors() == 0 {
                Outcome::Done
            } else {
                Outcome::Negative
            })
        }
    }
}

/// Serves `duel.v1.Inference` for a `ladder worker` process until `stop`.
async fn serve_inference(
    address: std::net::SocketAddr,
    public_url: Option<String>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<InferenceLink> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("cannot listen on {address} for Inference"))?;
    let local = listener
        .local_addr()
        .context("cannot read the Inference address")?;
    let credentials = Credentials::new();
    tokio::spawn(duel_referee::grpc::serve_inference(
        listener,
        credentials.clone(),
        async move {
            let _ = stop.wait_for(|stopped| *stopped).await;
        },
    ));
    Ok(InferenceLink {
        url: public_url.unwrap_or_else(|| format!("http://{local}")),
        credentials,
    })
}
