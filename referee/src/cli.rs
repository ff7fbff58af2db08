//! The command line, as clap definitions. Parsing only validates; `cmd/`
//! builds the real objects.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Play your duel bot against others, watch the matches, and check them.
///
/// Every match is adjudicated under Ruleset 1.0.0 and written as a replay that
/// anyone can verify.
#[derive(Debug, Parser)]
#[command(name = "referee", version)]
#[command(after_help = "\
Bot specs (what A, B and BOT stand for):
  path/to/mybot/                a bot's source folder: a Rust crate (Cargo.toml) or a
                                Python bot (app.py); built once, then cached
  path/to/bot.wasm              a built WebAssembly component of the duel:bot world
  builtin:block                 always BLOCK (the fallback policy)
  builtin:random                seeded, uniform over the actions it can pay for
  builtin:script:JAB,HEAVY,…    plays the list, cycling over the match's decisions
  builtin:counter               reads the tape and counters the opponent's habits
  grpc://host:port              a bot you run as a server (duel.v1.Bot)
  grpcs://host:port             the same over TLS (system roots, plus the PEM file
                                named by DUEL_EXTRA_CA)

Getting started:
  referee new mybot --lang python           write a bot that plays as it is
  referee local mybot builtin:counter --logs
                                            play it; its log lines under each exchange
  referee local mybot builtin:counter --watch
                                            the same match in the browser viewer
  referee sprt mybot mybot-v1 --elo0 0 --elo1 20 --openings 8
                                            is the new version stronger?
  referee local --from match.json#r2e7 --swap a=mybot
                                            replay a lost match to round 2, exchange 7,
                                            then let the fixed bot play on
  referee tournament mybot examples/bots/counter builtin:random --out runs/t1
  referee replay verify match.json")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one match locally between two bot specs and print its tape, or
    /// fork a recorded one (--from).
    #[command(
        override_usage = "referee local [OPTIONS] <A> <B>\n       referee local [OPTIONS] --from <REPLAY[#rNeM]> [--swap <SIDE=BOT>]..."
    )]
    Local(LocalArgs),
    /// Serve duel.v1.Referee and duel.v1.Inference over gRPC (with health checks
    /// and reflection) until SIGTERM or ctrl-c.
    Serve(ServeArgs),
    /// Show or verify replay files.
    #[command(subcommand)]
    Replay(ReplayCommand),
    /// Play every pairing of several bots (both sides, seeded) and print the
    /// standings: W/D/L, score, Elo with its 95% interval, substitutions, tokens
    /// and latency.
    Tournament(TournamentArgs),
    /// Is NEW stronger than BASE? Plays match pairs (sides swapped on one seed)
    /// until a sequential probability ratio test decides. Exit 0: H1 accepted
    /// (NEW is at least ELO1 stronger); 1: H0 accepted (at most ELO0); 3: no
    /// verdict within --max-pairs or interrupted.
    Sprt(SprtArgs),
    /// Write a new bot project (Rust or Python) that builds and plays as it is,
    /// with a README and a test that plays it against builtin:counter.
    New(NewArgs),
}

#[derive(Debug, Args)]
pub struct NewArgs {
    /// The bot's name: letters, digits, '-' and '_', starting with a letter.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// The language of the bot.
    #[arg(long, value_enum, default_value_t = LangArg::Rust)]
    pub lang: LangArg,
    /// The folder to write (default: ./NAME); it must not exist.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Rust: the duel-bot-sdk folder to depend on (default: the sdk/ of the
    /// checkout the running referee is in, else of the current folder's
    /// checkout, else of the one it was built from; it says which).
    #[arg(long, value_name = "PATH", conflicts_with = "sdk_git")]
    pub sdk: Option<PathBuf>,
    /// Rust: depend on duel-bot-sdk from this git repository instead.
    #[arg(long, value_name = "URL")]
    pub sdk_git: Option<String>,
    /// Python: a bot that thinks with a language model, as an endpoint bot
    /// using the official `openai` package through the referee's metered,
    /// OpenAI-compatible gateway. Try it offline with
    /// `referee local NAME builtin:counter --model-url builtin:house --logs`.
    #[arg(long)]
    pub llm: bool,
    /// Python: a bot that plays a policy trained in the training env
    /// (`duel_env`, the referee's own rules from Python): `train.py` learns
    /// one against builtin:random in about a minute and saves policy.npz,
    /// `bot.py` plays it as an endpoint bot, reading its observation with the
    /// env's own encoder.
    #[arg(long, conflicts_with = "llm")]
    pub from_env: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LangArg {
    /// A crate built with cargo for wasm32-wasip2, on duel-bot-sdk.
    Rust,
    /// An app.py built with componentize-py.
    Python,
}

impl LangArg {
    pub fn name(self) -> &'static str {
        match self {
            LangArg::Rust => "Rust",
            LangArg::Python => "Python",
        }
    }
}

#[derive(Debug, Args)]
pub struct TournamentArgs {
    /// Two or more bot specs (none with --resume: the saved plan's bots and
    /// settings are played).
    #[arg(value_name = "BOT", num_args = 2.., required_unless_present = "resume")]
    pub bots: Vec<String>,
    /// How many times each pairing is played (from both sides each time).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// Matches played at a time (default: the machine's cores).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub jobs: Option<u32>,
    #[arg(long, value_enum, default_value_t = FormatArg::RoundRobin)]
    pub format: FormatArg,
    /// Folder for the plan, results and every match's replay (needed for --resume).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Continue the tournament in --out, playing only the matches not yet played.
    /// Without bots, the plan saved there (bots, format, rounds, seed, class) is
    /// played; --wall-clock, --jobs and --limit apply to this run.
    #[arg(long, requires = "out")]
    pub resume: bool,
    /// Play at most N more matches in this run (continue later with --resume).
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// Seed of the schedule: each pairing game gets its own seed derived from
    /// it (at most 2^53 - 1).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(..=duel_referee::limits::SEED_MAX))]
    pub seed: u64,
    #[arg(long, value_enum, default_value_t = ClassArg::Middle)]
    pub class: ClassArg,
    /// Per-decision wall clock in seconds, 0.001 to 10 (the rules say 10).
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0, value_parser = parse_wall_clock)]
    pub wall_clock: f64,
    /// Start each pair of games with N random exchanges forced for both fighters
    /// (legal under the rules, drawn from the pair's seed; both games of a pair
    /// play it, sides swapped), so deterministic bots play varied games.
    #[arg(long, value_name = "N", conflicts_with = "book",
          value_parser = clap::value_parser!(u8).range(1..=duel_referee::limits::MAX_OPENING_EXCHANGES as i64))]
    pub openings: Option<u8>,
    /// Start each pair of games with an opening from FILE: one per line,
    /// exchanges separated by spaces, each ACTION_A:ACTION_B
    /// (`JAB:BLOCK FEINT:DODGE`); `#` starts a comment.
    #[arg(long, value_name = "FILE")]
    pub book: Option<PathBuf>,
    /// Print the standings as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub model: ModelArgs,
}

#[derive(Debug, Args)]
pub struct SprtArgs {
    /// The bot under test.
    #[arg(value_name = "NEW")]
    pub new: String,
    /// The bot it is compared with.
    #[arg(value_name = "BASE")]
    pub base: String,
    /// H0: NEW is at most this many Elo stronger.
    #[arg(long, allow_negative_numbers = true)]
    pub elo0: f64,
    /// H1: NEW is at least this many Elo stronger.
    #[arg(long, allow_negative_numbers = true)]
    pub elo1: f64,
    /// Probability of accepting H1 when H0 holds.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Probability of accepting H0 when H1 holds.
    #[arg(long, default_value_t = 0.05)]
    pub beta: f64,
    /// Give up without a verdict after this many match pairs.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_pairs: u64,
    /// Matches played at a time (default: the machine's cores).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub jobs: Option<u32>,
    /// Seed of the pair schedule (at most 2^53 - 1).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(..=duel_referee::limits::SEED_MAX))]
    pub seed: u64,
    #[arg(long, value_enum, default_value_t = ClassArg::Middle)]
    pub class: ClassArg,
    /// Per-decision wall clock in seconds, 0.001 to 10 (the rules say 10).
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0, value_parser = parse_wall_clock)]
    pub wall_clock: f64,
    /// Write every match's replay to this folder.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Start each pair of games with N random exchanges forced for both fighters
    /// (legal under the rules, drawn from the pair's seed; both games of a pair
    /// play it, sides swapped), so deterministic bots play varied games.
    #[arg(long, value_name = "N", conflicts_with = "book",
          value_parser = clap::value_parser!(u8).range(1..=duel_referee::limits::MAX_OPENING_EXCHANGES as i64))]
    pub openings: Option<u8>,
    /// Start each pair of games with an opening from FILE: one per line,
    /// exchanges separated by spaces, each ACTION_A:ACTION_B
    /// (`JAB:BLOCK FEINT:DODGE`); `#` starts a comment.
    #[arg(long, value_name = "FILE")]
    pub book: Option<PathBuf>,
    /// Instead of new matches, the positions BASE lost: each replay in DIR
    /// that BASE (by digest) lost is forked at the start of every round BASE
    /// lost (`referee local --from`), and each such position is played once
    /// with NEW and once with BASE in BASE's seat, the opponent its recorded
    /// bot. A position's two games are one pair of the SPRT (NEW's points,
    /// plus what BASE's game left), so "does my fix win the positions I
    /// lost?" gets a verdict, or says the positions were too few. Played in
    /// the parents' class and seed, one game at a time.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["openings", "book", "class", "seed"])]
    pub from_losses: Option<PathBuf>,
    /// With --from-losses --out: the key that signs the fork replays written.
    #[command(flatten)]
    pub key: SigningKeyArgs,
    /// Print the verdict as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub model: ModelArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// Every bot against every other.
    RoundRobin,
    /// The first bot against each of the others.
    Gauntlet,
}

#[derive(Debug, Args)]
pub struct LocalArgs {
    /// Fighter A (see "Bot specs" in `referee --help`).
    #[arg(
        value_name = "A",
        required_unless_present = "from",
        conflicts_with = "from"
    )]
    pub bot_a: Option<String>,
    /// Fighter B.
    #[arg(
        value_name = "B",
        required_unless_present = "from",
        conflicts_with = "from"
    )]
    pub bot_b: Option<String>,
    /// Fork a recorded match instead of starting one: REPLAY is a replay file
    /// or URL, #rNeM the first exchange played anew (round N, exchange M;
    /// default r1e1). The exchanges before it are copied from the replay,
    /// byte for byte, with each side's budget as it stood; from there the
    /// bots are asked, a side given with --swap by its new bot, the other by
    /// the recorded one. Same seed, class and opening. The new replay is
    /// signed (see --signing-key), names its parent by digest and is never
    /// ranked; `referee replay verify FORK --parent REPLAY` checks the two.
    #[arg(long, value_name = "REPLAY[#rNeM]", conflicts_with_all = ["seed", "class"])]
    pub from: Option<String>,
    /// With --from: the bot that plays SIDE (a or b) from the fork point,
    /// any bot spec (`--swap a=bots/fixed.wasm`). Repeat for both sides.
    #[arg(long, value_name = "SIDE=BOT", requires = "from")]
    pub swap: Vec<String>,
    /// With --from: the key that signs the fork's replay.
    #[command(flatten)]
    pub key: SigningKeyArgs,
    /// Seed for bots that ask for randomness; recorded in the replay. Random when
    /// not given (the tape's header shows it, so any match can be played again).
    /// At most 2^53 - 1, the largest a replay's signature binds.
    #[arg(long, value_parser = clap::value_parser!(u64).range(..=duel_referee::limits::SEED_MAX))]
    pub seed: Option<u64>,
    /// Weight class: the token budget each fighter has for the whole match.
    #[arg(long, value_enum, default_value_t = ClassArg::Middle)]
    pub class: ClassArg,
    /// Also write the replay (duel-replay/1 JSON) to this file.
    #[arg(long, value_name = "PATH")]
    pub replay: Option<PathBuf>,
    /// Also write the transcript (duel-transcript/1 JSON: what each model
    /// call sent and received) to this file, readable by you only. The
    /// replay holds each decision's signed digest of it:
    /// `referee replay verify REPLAY --transcript PATH` checks them.
    #[arg(long, value_name = "PATH")]
    pub transcript: Option<PathBuf>,
    /// Print the replay JSON on stdout instead of the tape.
    #[arg(long)]
    pub json: bool,
    /// Print each fighter's log lines (what it wrote with `log`, stdout and
    /// stderr while deciding) and its model calls (model, tokens, the first
    /// words of the answer) under the exchange they belong to.
    #[arg(long, conflicts_with = "json")]
    pub logs: bool,
    /// Wall clock per decision in seconds, 0.001 to the rules' 10 (fractions
    /// allowed); recorded in the replay.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0, value_parser = parse_wall_clock)]
    pub wall_clock: f64,
    /// Serve the replay viewer locally and show the match in it live, then keep
    /// serving the finished replay until ctrl-c. Prints the viewer's URL and
    /// opens it in a browser when there is one ($BROWSER or a desktop session).
    #[arg(long)]
    pub watch: bool,
    /// Where --watch serves (default: 127.0.0.1 on a free port).
    #[arg(long, value_name = "ADDR", requires = "watch")]
    pub watch_addr: Option<std::net::SocketAddr>,
    /// With --watch, the match starts when the viewer connects, or after this
    /// many seconds without one (0: at once).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub watch_wait: u64,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub color: ColorArgs,
}

/// The models bots may call through the metered gateway. API keys come only
/// from the environment (DUEL_MODEL_API_KEY, or each model's api_key_env).
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// A model catalogue: a TOML file of [[model]] tables, each with `name`
    /// (what bots send as `model`) and `url` (an OpenAI-compatible base URL
    /// such as http://127.0.0.1:8081/v1, or builtin:house), and optionally
    /// `upstream_model`, `api_key_env`, `input_usd_per_mtok`,
    /// `output_usd_per_mtok` and `default = true`. Without a model, bots'
    /// model calls are refused as unavailable and cost nothing.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["model_url", "model"])]
    pub models: Option<PathBuf>,
    /// One model, without a catalogue: an OpenAI-compatible URL (llama.cpp's
    /// `llama-server --port 8081` at http://127.0.0.1:8081/v1, Ollama
    /// http://127.0.0.1:11434/v1, vLLM http://127.0.0.1:8000/v1, or https://…
    /// trusting the system's roots and DUEL_EXTRA_CA), or builtin:house, the
    /// built-in deterministic model for offline runs (no --model needed).
    #[arg(long, value_name = "URL")]
    pub model_url: Option<String>,
    /// The model's name with --model-url: what bots send and what goes upstream.
    #[arg(long, value_name = "NAME", requires = "model_url")]
    pub model: Option<String>,
}

impl ModelArgs {
    pub fn flags(&self) -> duel_referee::env::ModelFlags<'_> {
        duel_referee::env::ModelFlags {
            models: self.models.as_deref(),
            model_url: self.model_url.as_deref(),
            model: self.model.as_deref(),
        }
    }
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on. Beyond loopback, the operator token must be set in
    /// DUEL_REFEREE_TOKEN and every Referee call must carry it as a bearer token.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:50051")]
    pub listen: std::net::SocketAddr,
    /// Matches run at once; more RunMatch calls get RESOURCE_EXHAUSTED.
    #[arg(long, value_name = "N", default_value_t = duel_referee::limits::DEFAULT_MAX_CONCURRENT_MATCHES as u64,
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub max_matches: u64,
    /// The URL endpoint bots are told to reach Inference at (default: http://ADDR).
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
    /// Also write each finished replay to DIR/<match_id>.json.
    #[arg(long, value_name = "DIR")]
    pub replay_dir: Option<PathBuf>,
    /// Seconds matches in flight get to finish after SIGTERM/ctrl-c before they are
    /// recorded as aborted.
    #[arg(long, value_name = "SECONDS", default_value_t = duel_referee::limits::DEFAULT_SHUTDOWN_GRACE.as_secs())]
    pub shutdown_grace: u64,
    /// Also serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    #[command(flatten)]
    pub grpc_limits: duel_plumbing::grpc_listen::GrpcLimitArgs,
    #[command(flatten)]
    pub http_limits: duel_plumbing::listen::HttpLimitArgs,
    /// Also serve replays and live feeds over HTTP on ADDR (the routes of
    /// `referee replay serve`): spectators follow a match at
    /// http://ADDR/live/<match_id>/view, then watch its signed replay.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,
    /// Publish every finished replay, signed, into this store: a folder,
    /// file:///path or s3://bucket/prefix. With --http and no --store, a
    /// temporary folder that is removed when the server stops.
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    #[command(flatten)]
    pub key: SigningKeyArgs,
    /// Also dial endpoint bots at loopback, private, link-local and other
    /// non-public addresses. Off by default: callers of a public referee must
    /// not make it reach into the network it runs in. Bot specs that name
    /// server-side `.wasm` paths are for the operator's callers only (see the
    /// operator token).
    #[arg(long)]
    pub allow_private_endpoints: bool,
    /// Log lines as JSON objects instead of text.
    #[arg(long)]
    pub log_json: bool,
    #[command(flatten)]
    pub model: ModelArgs,
}

/// A per-decision wall clock in seconds, from the real minimum
/// ([`MIN_WALL_CLOCK`](duel_referee::limits::MIN_WALL_CLOCK)) to the rules' 10 s.
fn parse_wall_clock(text: &str) -> Result<f64, String> {
    let seconds: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    let min = duel_referee::limits::MIN_WALL_CLOCK.as_secs_f64();
    let max = duel_referee::limits::DECISION_WALL_CLOCK.as_secs_f64();
    if !(min..=max).contains(&seconds) {
        return Err(format!("must be from {min} to {max} seconds"));
    }
    Ok(seconds)
}

#[derive(Debug, Subcommand)]
pub enum ReplayCommand {
    /// Print a replay's tape and a per-fighter summary.
    Show {
        /// The replay file, or its URL on a replay service.
        #[arg(value_name = "PATH|URL")]
        path: String,
        /// Print each fighter's log lines under the exchange they belong to.
        #[arg(long)]
        logs: bool,
        #[command(flatten)]
        color: ColorArgs,
    },
    /// Check a replay's signature (when signed, or when --public-key is given),
    /// then re-run it through the rules (and re-run its built-in bots); exits 1
    /// naming the check and the first exchange that disagrees.
    Verify {
        /// The replay file, or its URL on a replay service.
        #[arg(value_name = "PATH|URL")]
        path: String,
        /// Require a signature by this key: base64 of the ed25519 public key, or a
        /// file holding it (or the JSON of GET /public-key).
        #[arg(long, value_name = "KEY|FILE")]
        public_key: Option<String>,
        /// Also check a transcript (duel-transcript/1) against the digests the
        /// replay signed: every decision's calls, nothing edited, added or
        /// left out. Exits 1 naming the first decision that differs.
        #[arg(long, value_name = "PATH")]
        transcript: Option<PathBuf>,
        /// The replay is a fork (`referee local --from`): also check it
        /// against its parent, this replay file or URL. It must be the
        /// parent the fork names (by digest), with the same header, the same
        /// fighter on each side not swapped, and every exchange before the
        /// fork point identical. Exits 1 naming the first that differs.
        #[arg(long, value_name = "PATH|URL")]
        parent: Option<String>,
        /// Print the verdict as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Download a replay from a replay service, verify its signature (against
    /// the server's published key unless --public-key is given) and its rules,
    /// and save it.
    Fetch(FetchArgs),
    /// Serve replays over HTTP: download, listing, the viewer, the public key
    /// and live feeds.
    Serve(ReplayServeArgs),
    /// Publish replay files into a replay store.
    Put {
        /// The store: a folder, file:///path or s3://bucket/prefix.
        #[arg(long, value_name = "URL")]
        store: String,
        /// The replay files.
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
    },
    /// Sign a replay file with the referee's key (created at first use).
    Sign {
        /// The replay file; rewritten in place unless --out is given.
        path: PathBuf,
        /// Write the signed replay here instead.
        #[arg(long, value_name = "PATH")]
        out: Option<PathBuf>,
        #[command(flatten)]
        key: SigningKeyArgs,
    },
}

#[derive(Debug, Args)]
pub struct FetchArgs {
    /// A replay URL (…/replays/{id}) or a replay id with --server.
    #[arg(value_name = "URL|ID")]
    pub source: String,
    /// The replay service's base URL, for an id (default: $DUEL_REPLAY_SERVER).
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    /// Where to save the replay (default: <match id>.json here).
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
    /// Require a signature by this key instead of the server's published one.
    #[arg(long, value_name = "KEY|FILE")]
    pub public_key: Option<String>,
    /// Also fetch the match's transcript (URL/transcript: a ladder serves it
    /// once it reveals it, `referee local --watch` to the bot's author), check
    /// every decision against the digests the signed replay carries, and save
    /// it beside the replay.
    #[arg(long)]
    pub transcript: bool,
    /// Where to save the transcript (default: <match id>.transcript.json here).
    #[arg(long, value_name = "PATH", requires = "transcript")]
    pub transcript_out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReplayServeArgs {
    /// The store: a folder, file:///path or s3://bucket/prefix (S3 settings from
    /// the AWS_* environment variables).
    #[arg(long, value_name = "URL")]
    pub store: String,
    /// Address to listen on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: std::net::SocketAddr,
    #[command(flatten)]
    pub key: SigningKeyArgs,
}

#[derive(Debug, Args)]
pub struct SigningKeyArgs {
    /// The referee's signing key file, created (mode 0600) if missing. Default:
    /// $DUEL_SIGNING_KEY_FILE, else $XDG_DATA_HOME/duel/signing.key or
    /// ~/.local/share/duel/signing.key.
    #[arg(long, value_name = "PATH")]
    pub signing_key: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ClassArg {
    /// 8,000 tokens per match.
    Light,
    /// 64,000 tokens per match.
    Middle,
    /// 512,000 tokens per match.
    Heavy,
}

impl From<ClassArg> for duel_rules::WeightClass {
    fn from(class: ClassArg) -> duel_rules::WeightClass {
        match class {
            ClassArg::Light => duel_rules::WeightClass::Light,
            ClassArg::Middle => duel_rules::WeightClass::Middle,
            ClassArg::Heavy => duel_rules::WeightClass::Heavy,
        }
    }
}

#[derive(Debug, Args)]
pub struct ColorArgs {
    /// When to colour the tape: auto (a terminal, and NO_COLOR unset), always, never.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}
