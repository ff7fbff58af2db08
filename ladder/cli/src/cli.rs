//! The `ladder` command line: every command, flag and default, with the help
//! text a user reads. Parsing only; [`crate::cmd`] runs what it parses.

use std::num::{NonZeroU32, NonZeroUsize};
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use duel_ladder::gate::ApiLimits;
use duel_ladder::model::OwnerQuotas;

use crate::client;

#[derive(Debug, Parser)]
#[command(
    name = "ladder",
    version,
    about = "The duel ladder: ranked seasons, ratings and stakes"
)]
pub struct Cli {
    #[command(flatten)]
    pub connection: client::Connection,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create the database (migrations run) and its first operator, writing the
    /// operator's token to a file readable only by you.
    Init(InitArgs),
    /// Claim, run and settle matches until interrupted, publishing each
    /// match's signed replay.
    Worker(WorkerArgs),
    /// Run the gRPC API, in-process workers, the pairing wave timer and (with
    /// --http) the public replay service until Ctrl-C or SIGTERM.
    Serve(ServeArgs),
    /// Matches settled per second on a fresh database with built-in bots,
    /// against the referee alone (the bare baseline): also the settle phase's
    /// CPU per match, each worker step's wall-clock time per match (where the
    /// workers wait), how settlements shared transactions, and `ledger check`
    /// over the result (exit 1 if it finds a violation).
    Bench(BenchArgs),
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
pub struct PlayArgs {
    /// The replay store: a folder, file:///path or s3://bucket/prefix (S3
    /// endpoint, region and credentials from the AWS_* environment variables).
    #[arg(
        long,
        alias = "replays-dir",
        value_name = "URL",
        default_value = "replays"
    )]
    pub replays: String,
    /// The signing key file, created (mode 0600) if missing. Default:
    /// $DUEL_SIGNING_KEY_FILE, else $XDG_DATA_HOME/duel/signing.key or
    /// ~/.local/share/duel/signing.key. Every worker of one ladder needs the same key.
    #[arg(long, value_name = "PATH")]
    pub signing_key: Option<PathBuf>,
    /// A model catalogue for bots' metered model calls: a TOML file of
    /// [[model]] tables (`name`, `url`, optional `upstream_model`,
    /// `api_key_env`, `input_usd_per_mtok`, `output_usd_per_mtok`,
    /// `default = true`). Without a model every model call is refused.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["model_url", "model"])]
    pub models: Option<PathBuf>,
    /// One model without a catalogue: an OpenAI-compatible URL (API key from
    /// $DUEL_MODEL_API_KEY), or builtin:house (no --model needed).
    #[arg(long, value_name = "URL")]
    pub model_url: Option<String>,
    /// The model's name with --model-url.
    #[arg(long, requires = "model_url")]
    pub model: Option<String>,
    /// Accept endpoint bots on loopback and private addresses.
    #[arg(long)]
    pub allow_private_endpoints: bool,
    /// Days bots' logs of ranked matches are kept for their owners
    /// (`ladder match logs`); older logs are dropped every hour.
    #[arg(
        long,
        value_name = "DAYS",
        default_value_t = duel_ladder_core::limits::DEFAULT_LOG_RETENTION_DAYS,
        value_parser = clap::value_parser!(u32).range(1..=i64::from(duel_ladder_core::limits::MAX_LOG_RETENTION_DAYS))
    )]
    pub log_retention_days: u32,
    /// Bytes of bots' logs one owner keeps at most; past it, that owner's
    /// oldest logs go first (a bot logging to the referee's bounds writes
    /// ~67 KB a match).
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = duel_ladder_core::limits::DEFAULT_MAX_LOG_BYTES_PER_OWNER,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub max_log_bytes_per_owner: u64,
    /// Days ranked matches' transcripts (what bots' models were asked and
    /// answered) are kept; older ones are dropped every hour. Keep it longer
    /// than a season for --reveal-transcripts after-season.
    #[arg(
        long,
        value_name = "DAYS",
        default_value_t = duel_ladder_core::limits::DEFAULT_TRANSCRIPT_RETENTION_DAYS,
        value_parser = clap::value_parser!(u32).range(1..=i64::from(duel_ladder_core::limits::MAX_TRANSCRIPT_RETENTION_DAYS))
    )]
    pub transcript_retention_days: u32,
    /// Bytes of transcripts one owner's bots keep at most; past it, that
    /// owner's oldest parts go first (the other side's part stays).
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = duel_ladder_core::limits::DEFAULT_MAX_TRANSCRIPT_BYTES_PER_OWNER,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub max_transcript_bytes_per_owner: u64,
    /// Milliseconds a worker holds a match between heartbeats (it heartbeats
    /// six times per lease). A worker that dies, or whose run fails, leaves
    /// the match to be run again once its lease runs out.
    #[arg(
        long,
        value_name = "MS",
        default_value_t = duel_ladder::limits::DEFAULT_LEASE_MS,
        value_parser = clap::value_parser!(i64).range(duel_ladder::limits::MIN_LEASE_MS..=duel_ladder::limits::MAX_LEASE_MS)
    )]
    pub lease_ms: i64,
}

impl PlayArgs {
    /// `--lease-ms`.
    pub fn lease_ms(&self) -> i64 {
        self.lease_ms
    }

    pub fn transcript_limits(&self) -> duel_ladder::model::TranscriptLimits {
        duel_ladder::model::TranscriptLimits {
            retention_days: self.transcript_retention_days,
            max_bytes_per_owner: self.max_transcript_bytes_per_owner,
        }
    }

    pub fn log_limits(&self) -> duel_ladder::model::LogLimits {
        duel_ladder::model::LogLimits {
            retention_days: self.log_retention_days,
            max_bytes_per_owner: self.max_log_bytes_per_owner,
        }
    }
}

/// How hard `ladder serve` may be used: API rates, upload turns and owner quotas.
#[derive(Debug, clap::Args)]
pub struct LimitArgs {
    /// API calls a second one client address may make (IPv6: per /64); over it,
    /// RESOURCE_EXHAUSTED. Checked before the token. The same rate limits the
    /// site's owner form (HTTP 429), by the forwarded address behind a
    /// --trusted-proxy.
    #[arg(long, default_value_t = ApiLimits::default().calls_per_second_per_peer)]
    pub calls_per_second_per_peer: NonZeroU32,
    /// Calls one client address may make at once before the rate applies (API
    /// calls, and POSTs of the site's owner form).
    #[arg(long, default_value_t = ApiLimits::default().call_burst_per_peer)]
    pub call_burst_per_peer: NonZeroU32,
    /// API calls a second one token may make.
    #[arg(long, default_value_t = ApiLimits::default().calls_per_second_per_token)]
    pub calls_per_second_per_token: NonZeroU32,
    /// Calls one token may make at once before the rate applies.
    #[arg(long, default_value_t = ApiLimits::default().call_burst_per_token)]
    pub call_burst_per_token: NonZeroU32,
    /// Bot uploads received at once; one more gets RESOURCE_EXHAUSTED.
    #[arg(long, default_value_t = ApiLimits::default().max_concurrent_uploads)]
    pub max_concurrent_uploads: NonZeroUsize,
    /// Uploads validated (compiled) at once; more wait for a turn.
    #[arg(long, default_value_t = DEFAULT_COMPILES)]
    pub max_concurrent_compiles: NonZeroUsize,
    /// Bot versions one owner may hold across all its bots.
    #[arg(long, default_value_t = OwnerQuotas::default().max_bot_versions)]
    pub max_versions_per_owner: u64,
    /// Bytes of distinct WASM components one owner's versions may hold.
    #[arg(long, default_value_t = OwnerQuotas::default().max_stored_bytes)]
    pub max_stored_bytes_per_owner: u64,
    /// Seconds one owner's uploads may spend compiling per UTC day.
    #[arg(long, default_value_t = OwnerQuotas::default().compile_seconds_per_day)]
    pub compile_seconds_per_day: u64,
    /// Connections, timeouts and per-client caps of --http.
    #[command(flatten)]
    pub http: duel_plumbing::listen::HttpLimitArgs,
}

#[derive(Debug, Subcommand)]
pub enum BenchSiteCommand {
    /// Fill an empty database with owners, bots, two seasons, settled matches,
    /// ratings, frozen standings and rating histories (the ledger stays empty).
    Seed {
        #[arg(long)]
        db: String,
        #[arg(long, default_value_t = 10_000)]
        bots: u64,
        #[arg(long, default_value_t = 1_000_000)]
        matches: u64,
        /// Also write transcripts of the ended season's newest heavy matches
        /// into this replay store (give `ladder serve` the same --replays),
        /// so the load reads /matches/ID/transcript.
        #[arg(long, value_name = "URL")]
        replays: Option<String>,
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
        #[arg(long, default_value_t = duel_ladder_bench::limits::BENCH_SITE_SSE_WATCHERS)]
        watchers: usize,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum LedgerCommand {
    /// Verify every ledger invariant; exits non-zero naming the first violation.
    /// With --db it reads the database directly, otherwise it asks the server.
    Check {
        #[arg(long)]
        db: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

const DEFAULT_COMPILES: NonZeroUsize =
    match NonZeroUsize::new(duel_ladder::limits::DEFAULT_MAX_CONCURRENT_COMPILES) {
        Some(compiles) => compiles,
        None => panic!("the default compile turns must be at least 1"),
    };

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    #[arg(long, default_value = "sqlite://ladder.db")]
    pub db: String,
    #[arg(long, default_value = "operator")]
    pub operator: String,
    #[arg(long)]
    pub token_file: PathBuf,
    /// Also create the replay signing key here (mode 0600) if it is missing,
    /// so workers started together all load one key.
    #[arg(long, value_name = "PATH")]
    pub signing_key: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    #[arg(long)]
    pub db: String,
    /// Workers in this process (1 to 64; run more processes for more).
    #[arg(long, default_value_t = 1, value_parser = workers_in_process)]
    pub workers: usize,
    /// Serve `duel.v1.Inference` for endpoint bots of this process's matches
    /// here (without it, endpoint bots get no model credential).
    #[arg(long, value_name = "ADDR")]
    pub inference_listen: Option<std::net::SocketAddr>,
    /// The Inference URL endpoint bots are told (default: http://<inference-listen>).
    #[arg(long, value_name = "URL", requires = "inference_listen", value_parser = http_url)]
    pub public_url: Option<String>,
    /// Also serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Connections and timeouts of --inference-listen.
    #[command(flatten)]
    pub grpc_limits: duel_plumbing::grpc_listen::GrpcLimitArgs,
    #[command(flatten)]
    pub play: PlayArgs,
}

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    #[arg(long, default_value = "sqlite://ladder.db")]
    pub db: String,
    #[arg(long, default_value = "127.0.0.1:50061")]
    pub listen: std::net::SocketAddr,
    /// Serve replays over HTTP here: listing, download, public key, viewer
    /// and live feeds (e.g. 127.0.0.1:8080).
    #[arg(long, value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,
    /// In-process workers (0: leave matches to `ladder worker` processes;
    /// at most 64).
    #[arg(long, default_value_t = 2, value_parser = workers_in_process)]
    pub workers: usize,
    /// Milliseconds between pairing waves.
    #[arg(long, default_value_t = duel_ladder::limits::DEFAULT_WAVE_INTERVAL_MS)]
    pub wave_interval_ms: u64,
    /// An active bot (`ladder bot activate`) is re-queued no sooner than
    /// this many milliseconds after its last match settled; 0: the next
    /// wave (the wave interval sets the pace).
    #[arg(long, default_value_t = duel_ladder::limits::DEFAULT_MATCH_INTERVAL_MS)]
    pub match_interval_ms: u64,
    /// Ranked matches accepted from now on open with N exchanges forced for
    /// both fighters, drawn from each match's seed, so that deterministic
    /// bots play new games each time they meet (docs/RULES.md, "Ranked
    /// matches open with two forced exchanges"); 0: no opening. Each match
    /// keeps the length it was accepted with.
    #[arg(
        long,
        value_name = "N",
        default_value_t = duel_ladder::limits::RANKED_OPENING_EXCHANGES as u8,
        value_parser = clap::value_parser!(u8).range(0..=duel_replays::MAX_OPENING_EXCHANGES as i64)
    )]
    pub ranked_openings: u8,
    /// The Inference URL endpoint bots are told (default: http://<listen>).
    #[arg(long, value_name = "URL", value_parser = http_url)]
    pub public_url: Option<String>,
    /// Duel TV's pace (with --http): milliseconds between two exchanges
    /// of the broadcast. Duel TV replays recently settled ranked matches
    /// at this pace, one after another, at /tv (server-sent events) and
    /// /tv/now, each also listed at /live while it airs. 700 shows a
    /// 36-exchange match in about 25 s; lower is faster. Between two
    /// matches it pauses for 4 exchanges.
    #[arg(
        long,
        value_name = "MS",
        default_value_t = duel_ladder_site::limits::DEFAULT_TV_EXCHANGE_MS,
        value_parser = clap::value_parser!(u64).range(1..=duel_ladder_site::limits::MAX_TV_EXCHANGE_MS)
    )]
    pub tv_exchange_ms: u64,
    /// When everyone may read a ranked match's transcripts (with --http,
    /// at /matches/{id}/transcript): never, after-season (once the match's
    /// season has ended) or after-days:N (N days after the match). A bot's
    /// owner reads its own at once: `ladder match transcript`.
    #[arg(
        long,
        value_name = "POLICY",
        default_value = "after-season",
        value_parser = reveal_policy
    )]
    pub reveal_transcripts: duel_ladder::reveal::RevealPolicy,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Connections and timeouts of --listen (the API and Inference).
    #[command(flatten)]
    pub grpc_limits: duel_plumbing::grpc_listen::GrpcLimitArgs,
    #[command(flatten)]
    pub play: PlayArgs,
}

#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    #[arg(long)]
    pub db: String,
    #[arg(long, default_value_t = 1_000)]
    pub matches: usize,
    #[arg(long, default_value_t = 2)]
    pub workers: usize,
    #[arg(long, default_value = "bench-replays")]
    pub replays_dir: PathBuf,
    /// Also time each run of N consecutive settlements (settled/s, the
    /// settle step and CPU per match): whether a settlement costs more at the
    /// 50,000th match of a season than at the 2,000th. 0: no windows.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub window: usize,
    /// One JSON object instead of lines of text.
    #[arg(long)]
    pub json: bool,
}

/// `--workers`: a count this process can hold.
fn workers_in_process(text: &str) -> Result<usize, String> {
    let max = duel_ladder::limits::MAX_WORKERS_PER_PROCESS;
    let count: usize = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of workers"))?;
    if count > max {
        return Err(format!(
            "{count} workers is more than one process runs ({max}); start more `ladder worker` processes"
        ));
    }
    Ok(count)
}

/// `--public-url`: what endpoint bots dial, so an absolute http(s) URL with a host.
fn reveal_policy(text: &str) -> Result<duel_ladder::reveal::RevealPolicy, String> {
    duel_ladder::reveal::RevealPolicy::parse(text).map_err(|error| error.to_string())
}

fn http_url(text: &str) -> Result<String, String> {
    let uri: tonic::codegen::http::Uri = text
        .parse()
        .map_err(|error| format!("{text:?} is not a URL: {error}"))?;
    match (uri.scheme_str(), uri.host()) {
        (Some("http" | "https"), Some(host)) if !host.is_empty() => Ok(text.to_owned()),
        _ => Err(format!(
            "{text:?} is not an http:// or https:// URL with a host"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_are_bounded_per_process() {
        assert_eq!(workers_in_process("0"), Ok(0));
        assert_eq!(workers_in_process("64"), Ok(64));
        let refused = workers_in_process("100000").expect_err("too many");
        assert!(refused.contains("ladder worker"), "{refused}");
        assert!(workers_in_process("-1").is_err());
        assert!(workers_in_process("many").is_err());
    }

    #[test]
    fn a_public_url_is_an_http_url_with_a_host() {
        for good in ["http://127.0.0.1:50061", "https://[::1]:8443/inference"] {
            assert_eq!(http_url(good).as_deref(), Ok(good));
        }
        for bad in [
            "127.0.0.1:50061",
            "ftp://127.0.0.1/",
            "/relative",
            "http://",
            "not a url",
        ] {
            assert!(http_url(bad).is_err(), "{bad}");
        }
    }
}
