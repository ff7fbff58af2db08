//! The `ladder` CLI's client side: commands that talk to a `ladder serve` over
//! `duel.v1.Ladder`, the token lookup (`DUEL_LADDER_TOKEN` or `--token-file`,
//! never a flag value) and the text and `--json` renderings of every read.
//!
//! One function per command, grouped by what it touches: [`accounts`],
//! [`bots`] (and continuous play), [`money`] (credits, rake, balance, ledger),
//! [`seasons`] (seasons and standings), [`matches`] (the queue and matches)
//! and [`status`] (the operator's one screen). Each
//! command sends one request and prints the rendering of its reply; the
//! renderings are pure functions of the reply, so they are tested without a
//! server. A field the server always sets is required: a reply without it is
//! a [`ClientError::MissingField`], never blanks.

mod accounts;
mod bots;
mod matches;
mod money;
mod seasons;
mod status;

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use duel_ladder::limits::MAX_UPLOAD_MESSAGE_BYTES;
use duel_proto::v1::ladder_client::LadderClient;
use serde_json::Value;
use tonic::transport::Channel;

pub use accounts::AccountCommand;
pub use bots::BotCommand;
pub use money::{CreditsCommand, RakeCommand, ledger_check, print_ledger};
pub use seasons::SeasonCommand;

/// The environment variable holding the caller's token.
pub const TOKEN_ENV: &str = "DUEL_LADDER_TOKEN";
pub const DEFAULT_SERVER: &str = "http://127.0.0.1:50061";

/// The largest token file read: a token is ~70 bytes.
const MAX_TOKEN_FILE_BYTES: u64 = 4 * 1024;

/// Why a client command failed. Each message is one line: it reaches the user
/// as it is (`ladder: <message>`), with the cause after a colon.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("no token: set {TOKEN_ENV} or pass --token-file PATH")]
    NoToken,
    /// A file named on the command line could not be read or written: the
    /// path and why, on one line.
    #[error("{0}")]
    File(String),
    #[error("the token is empty")]
    EmptyToken,
    #[error("the token holds characters a header cannot carry")]
    TokenHeader,
    #[error("bad --server URL {url:?}")]
    ServerUrl {
        url: String,
        #[source]
        source: tonic::codegen::http::uri::InvalidUri,
    },
    /// The transport error is part of the line (its own causes are not).
    #[error("cannot reach the ladder at {server}: {error}")]
    Unreachable {
        server: String,
        error: tonic::transport::Error,
    },
    #[error("the ladder server is unavailable: {0}")]
    Unavailable(String),
    /// The server refused the call; its message names the reason.
    #[error("{0}")]
    Refused(String),

    #[error("the WASM file {} is {size} bytes, over the cap of {cap} bytes", path.display())]
    WasmTooBig {
        path: PathBuf,
        size: u64,
        cap: usize,
    },
    #[error("name the bot: --builtin SPEC, --wasm FILE or --endpoint URL")]
    NoSource,

    /// A field the server always sets is absent: a server of another version,
    /// or a bug. Named by its proto path, e.g. `season` or `match.a`.
    #[error("the ladder's reply has no `{0}`")]
    MissingField(&'static str),
}

pub type Result<T, E = ClientError> = std::result::Result<T, E>;

#[derive(Debug, Args)]
pub struct Connection {
    /// The ladder server.
    #[arg(long, global = true, default_value = DEFAULT_SERVER)]
    pub server: String,
    /// A file holding the token (otherwise $DUEL_LADDER_TOKEN).
    #[arg(long, global = true)]
    pub token_file: Option<PathBuf>,
}

/// Commands that go through the server.
#[derive(Debug, Subcommand)]
pub enum ClientCommand {
    /// Accounts (create: operator).
    Account {
        #[command(subcommand)]
        command: AccountCommand,
    },
    /// Credits (operator).
    Credits {
        #[command(subcommand)]
        command: CreditsCommand,
    },
    /// Seasons (operator).
    Season {
        #[command(subcommand)]
        command: SeasonCommand,
    },
    /// The rake (operator).
    Rake {
        #[command(subcommand)]
        command: RakeCommand,
    },
    /// The bots registry.
    Bot {
        #[command(subcommand)]
        command: BotCommand,
    },
    /// Queue one of your bots with a stake (owner).
    Enqueue {
        bot: String,
        #[arg(long)]
        stake: i64,
    },
    /// Take one of your bots out of the queue (owner).
    Leave { bot: String },
    /// Available credits: yours, or any account's for an operator.
    Balance {
        account: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Standings of the running season (else of the one that ended last), or
    /// of any season by name or id; sorted by rating − 2·RD per class.
    Standings {
        /// A season's name or numeric id.
        #[arg(long)]
        season: Option<String>,
        #[arg(long)]
        class: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Matches, newest first; `--id` shows one.
    Matches {
        #[arg(long)]
        id: Option<String>,
        /// queued, running, settled or voided.
        #[arg(long)]
        state: Option<String>,
        #[arg(long)]
        bot: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// The ladder on one screen: the season, per class the bots (queued,
    /// active, paused), the season's matches by state and the last pairing
    /// wave (operator).
    Status {
        #[arg(long)]
        json: bool,
    },
    /// One match: `ladder match logs ID`, `ladder match transcript ID`.
    Match {
        #[command(subcommand)]
        command: MatchCommand,
    },
}

/// `ladder match …`.
#[derive(Debug, Subcommand)]
pub enum MatchCommand {
    /// Your bots' log lines in a ranked match, exchange by exchange. Published
    /// replays carry no logs (they can reveal strategy); only the owner of a bot
    /// that fought can read its logs.
    Logs {
        /// The match id.
        id: String,
        /// One JSON object: {"id", "sides": [{"side", "bot", "exchanges": [{"round", "exchange", "lines", "truncated"}]}]}.
        #[arg(long)]
        json: bool,
    },
    /// Write a match's transcript (`duel-transcript/1`: what the fighters'
    /// model calls sent and received) to a file: your bots' decisions, or
    /// BOT's. Everyone else reads it once the operator reveals it (`ladder
    /// serve --reveal-transcripts`). The file is readable by you only.
    Transcript {
        /// The match id.
        id: String,
        /// One bot of the match (default: every bot of yours in it).
        #[arg(long)]
        bot: Option<String>,
        /// Where to write it (default: ID.transcript.json, or
        /// ID.BOT.transcript.json with --bot, in the current folder).
        #[arg(long, value_name = "PATH")]
        out: Option<std::path::PathBuf>,
        /// One JSON object: {"id", "path", "decisions"}.
        #[arg(long)]
        json: bool,
    },
}

/// Runs one client command; the exit code is the caller's.
pub async fn run(connection: Connection, command: ClientCommand) -> Result<()> {
    let mut client = Client::connect(&connection).await?;
    let client = &mut client;
    match command {
        ClientCommand::Account { command } => accounts::run(client, command).await,
        ClientCommand::Credits { command } => money::credits(client, command).await,
        ClientCommand::Rake { command } => money::rake(client, command).await,
        ClientCommand::Balance { account, json } => money::balance(client, account, json).await,
        ClientCommand::Season { command } => seasons::run(client, command).await,
        ClientCommand::Standings {
            season,
            class,
            json,
        } => seasons::standings(client, season, class, json).await,
        ClientCommand::Bot { command } => bots::run(client, command).await,
        ClientCommand::Enqueue { bot, stake } => matches::enqueue(client, bot, stake).await,
        ClientCommand::Leave { bot } => matches::leave(client, bot).await,
        ClientCommand::Matches {
            id: Some(id), json, ..
        } => matches::show(client, id, json).await,
        ClientCommand::Matches {
            id: None,
            state,
            bot,
            json,
        } => matches::list(client, state, bot, json).await,
        ClientCommand::Status { json } => status::status(client, json).await,
        ClientCommand::Match {
            command: MatchCommand::Logs { id, json },
        } => matches::logs(client, id, json).await,
        ClientCommand::Match {
            command: MatchCommand::Transcript { id, bot, out, json },
        } => matches::transcript(client, id, bot, out, json).await,
    }
}

/// Reads the token: `--token-file` wins, then `$DUEL_LADDER_TOKEN`.
pub fn read_token(token_file: Option<&Path>) -> Result<String> {
    let token = match token_file {
        // A token is ~70 bytes: a regular file of at most a few KiB, read
        // within the deadline (never /dev/zero or a FIFO).
        Some(path) => {
            let bytes = duel_files::read_regular_within(
                path,
                MAX_TOKEN_FILE_BYTES,
                duel_files::READ_DEADLINE,
            )
            .map_err(|error| ClientError::File(error.to_string()))?;
            String::from_utf8(bytes).map_err(|_| {
                ClientError::File(format!("{}: the token file is not text", path.display()))
            })?
        }
        None => std::env::var(TOKEN_ENV).map_err(|_| ClientError::NoToken)?,
    };
    let token = token.trim().to_owned();
    if token.is_empty() {
        return Err(ClientError::EmptyToken);
    }
    Ok(token)
}

/// Writes a secret to a new file only its owner can read (never over an
/// existing file, never through a link).
pub fn write_secret(path: &Path, secret: &str) -> Result<()> {
    duel_files::write_atomic(
        path,
        format!("{secret}\n").as_bytes(),
        duel_files::WriteOptions::PRIVATE_NEW,
    )
    .map_err(|error| ClientError::File(error.to_string()))
}

/// A connection to the server with the caller's token.
#[derive(Debug)]
struct Client {
    inner: LadderClient<Channel>,
    authorization: tonic::metadata::MetadataValue<tonic::metadata::Ascii>,
}

impl Client {
    async fn connect(connection: &Connection) -> Result<Client> {
        let token = read_token(connection.token_file.as_deref())?;
        let authorization = format!("Bearer {token}")
            .parse()
            .map_err(|_| ClientError::TokenHeader)?;
        let endpoint = Channel::from_shared(connection.server.clone()).map_err(|source| {
            ClientError::ServerUrl {
                url: connection.server.clone(),
                source,
            }
        })?;
        let channel = endpoint
            .connect()
            .await
            .map_err(|error| ClientError::Unreachable {
                server: connection.server.clone(),
                error,
            })?;
        Ok(Client {
            // Uploads carry whole WASM components.
            inner: LadderClient::new(channel)
                .max_encoding_message_size(MAX_UPLOAD_MESSAGE_BYTES)
                .max_decoding_message_size(MAX_UPLOAD_MESSAGE_BYTES),
            authorization,
        })
    }

    /// `message` with the caller's token.
    fn request<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        request
            .metadata_mut()
            .insert("authorization", self.authorization.clone());
        request
    }

    /// Sends `message` through `method` and returns the reply. A rate-limit
    /// refusal that says when to retry is sent again after that wait, at most
    /// [`RATE_LIMIT_RETRIES`] times: the server refuses it before doing
    /// anything, so sending it again changes nothing twice.
    async fn call<M, R, F, Fut>(&mut self, message: M, method: F) -> Result<R>
    where
        M: Clone,
        F: Fn(LadderClient<Channel>, tonic::Request<M>) -> Fut,
        Fut: std::future::Future<Output = std::result::Result<tonic::Response<R>, tonic::Status>>,
    {
        let mut retries = 0;
        loop {
            let request = self.request(message.clone());
            match method(self.inner.clone(), request).await {
                Ok(reply) => return Ok(reply.into_inner()),
                Err(status) => match retry_after(&status) {
                    Some(wait) if retries < RATE_LIMIT_RETRIES => {
                        retries += 1;
                        tokio::time::sleep(wait).await;
                    }
                    Some(_) => {
                        return Err(ClientError::Refused(format!(
                            "{} (gave up after {RATE_LIMIT_RETRIES} retries)",
                            status.message()
                        )));
                    }
                    None => return Err(failed(status)),
                },
            }
        }
    }
}

/// How many times one call is sent again after a rate-limit refusal, and the
/// longest wait honoured: a longer hint is a refusal to report, not to sleep on.
const RATE_LIMIT_RETRIES: u32 = 3;
const MAX_RATE_LIMIT_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The wait a RESOURCE_EXHAUSTED refusal asks for (`…; retry in 31 ms`), if
/// it asks for one within [`MAX_RATE_LIMIT_WAIT`]. Quota refusals share the
/// code but name no wait: waiting would not help them.
fn retry_after(status: &tonic::Status) -> Option<std::time::Duration> {
    if status.code() != tonic::Code::ResourceExhausted {
        return None;
    }
    let (_, after) = status.message().rsplit_once("retry in ")?;
    let millis: u64 = after.strip_suffix(" ms")?.trim().parse().ok()?;
    let wait = std::time::Duration::from_millis(millis);
    (wait <= MAX_RATE_LIMIT_WAIT).then_some(wait)
}

/// A refused call as one line: the server's message already names the reason.
fn failed(status: tonic::Status) -> ClientError {
    let message = if status.message().trim().is_empty() {
        // A server that says nothing still gets a line a person can act on.
        match status.code() {
            tonic::Code::Unimplemented => {
                "the server does not offer this call (is --server a ladder, and as new as this CLI?)"
                    .to_owned()
            }
            code => format!("the server refused the call ({code:?}) without saying why"),
        }
    } else {
        status.message().to_owned()
    };
    match status.code() {
        tonic::Code::Unavailable => ClientError::Unavailable(message),
        _ => ClientError::Refused(message),
    }
}

/// A field the server always sets, or the error naming it.
fn required<T>(value: Option<T>, field: &'static str) -> Result<T> {
    value.ok_or(ClientError::MissingField(field))
}

/// `--json` output: one JSON document on one line.
fn json_line(value: &Value) -> String {
    format!("{value}\n")
}

/// Prints a command's rendering (every line already ends in `\n`). A reader
/// that went away (`ladder … | head -1`) is not an error: the rest is
/// dropped, where `print!` would panic.
///
/// Everything printed passes through here, and names and messages come from
/// the server (other owners' bots among them): no control character but the
/// line end reaches the terminal.
pub fn emit(text: &str) {
    use std::io::Write;
    let text = duel_referee::terminal::safe_lines(text);
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        && error.kind() != std::io::ErrorKind::BrokenPipe
    {
        eprintln!("ladder: cannot write to standard output: {error}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limit_refusals_name_their_wait() {
        let limited = |message: &str| tonic::Status::resource_exhausted(message.to_owned());
        let cases = [
            (
                limited(
                    "rate limit: more than 20 calls a second (burst 60) with alice's token; retry in 31 ms",
                ),
                Some(31),
            ),
            (limited("rate limit: …; retry in 0 ms"), Some(0)),
            // Too long to wait on, no wait named, or another code.
            (limited("rate limit: …; retry in 60000 ms"), None),
            (limited("quota exceeded: 200 bot versions per owner"), None),
            (limited("retry in soon ms"), None),
            (
                tonic::Status::unavailable("retry in 31 ms".to_owned()),
                None,
            ),
        ];
        for (status, expected) in cases {
            assert_eq!(
                retry_after(&status),
                expected.map(std::time::Duration::from_millis),
                "{status:?}"
            );
        }
    }

    #[test]
    fn a_refusal_without_a_message_still_says_something() {
        let silent = failed(tonic::Status::unimplemented(""));
        assert!(
            silent.to_string().contains("does not offer this call"),
            "{silent}"
        );
        let other = failed(tonic::Status::new(tonic::Code::Aborted, " "));
        assert!(other.to_string().contains("Aborted"), "{other}");
        let said = failed(tonic::Status::not_found("bot x"));
        assert_eq!(said.to_string(), "bot x");
    }
}
