//! The `ladder` CLI's client side: commands that talk to a `ladder serve` over
//! `duel.v1.Ladder`, the token lookup (`DUEL_LADDER_TOKEN` or `--token-file`,
//! never a flag value) and the text and `--json` renderings of every read.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand};
use duel_ladder::limits::{MAX_GRPC_MESSAGE_BYTES, MAX_WASM_BYTES};
use duel_proto::v1 as pb;
use duel_proto::v1::ladder_client::LadderClient;
use serde_json::{Value, json};
use tonic::transport::Channel;

/// The environment variable holding the caller's token.
pub const TOKEN_ENV: &str = "DUEL_LADDER_TOKEN";
pub const DEFAULT_SERVER: &str = "http://127.0.0.1:50061";

#[derive(Debug, Args)]
pub struct Connection {
    /// The ladder server.
    #[arg(long, global = true, default_value = DEFAULT_SERVER)]
    pub server: String,
    /// A file holding the token (otherwise $DUEL_LADDER_TOKEN).
    #[arg(long, global = true)]
    pub token_file: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum AccountCommand {
    /// Create a bot owner (operator); prints its token once, or writes it to --out.
    Create {
        name: String,
        /// Write the new token to this file (created, mode 0600) instead of printing it.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Show the account behind the token.
    Whoami {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum CreditsCommand {
    /// Grant credits to an owner (operator).
    Grant {
        owner: String,
        amount: i64,
        /// Transfer id for a safe retry; default: a fresh one.
        #[arg(long)]
        id: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum SeasonCommand {
    /// Start a season (operator).
    Start { name: String },
    /// End the running season and freeze its standings (operator).
    End,
}

#[derive(Debug, Subcommand)]
pub enum RakeCommand {
    /// Set the rake in basis points of the pot, e.g. 500 = 5% (operator).
    Set { basis_points: i64 },
}

#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct SourceArgs {
    /// A built-in bot spec, e.g. builtin:counter.
    #[arg(long)]
    builtin: Option<String>,
    /// A WASM component file of the duel:bot world.
    #[arg(long)]
    wasm: Option<PathBuf>,
    /// An endpoint bot's URL.
    #[arg(long)]
    endpoint: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum BotCommand {
    /// Register a bot (owner).
    Register {
        name: String,
        /// light, middle or heavy.
        #[arg(long)]
        class: String,
        #[command(flatten)]
        source: SourceArgs,
        #[arg(long)]
        json: bool,
    },
    /// Add a version to one of your bots (owner).
    Version {
        name: String,
        #[command(flatten)]
        source: SourceArgs,
        #[arg(long)]
        json: bool,
    },
    /// Your bots (all bots for an operator).
    List {
        #[arg(long)]
        json: bool,
    },
    /// One bot with its versions.
    Show {
        name: String,
        #[arg(long)]
        json: bool,
    },
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
    /// Standings of the running season, or of an ended one.
    Standings {
        #[arg(long)]
        season: Option<i64>,
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
}

/// Reads the token: `--token-file` wins, then `$DUEL_LADDER_TOKEN`.
pub fn read_token(token_file: Option<&Path>) -> Result<String> {
    let token = match token_file {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the token file {}", path.display()))?,
        None => std::env::var(TOKEN_ENV)
            .map_err(|_| anyhow!("no token: set {TOKEN_ENV} or pass --token-file PATH"))?,
    };
    let token = token.trim().to_owned();
    if token.is_empty() {
        bail!("the token is empty");
    }
    Ok(token)
}

struct Client {
    inner: LadderClient<Channel>,
    authorization: tonic::metadata::MetadataValue<tonic::metadata::Ascii>,
}

impl Client {
    async fn connect(connection: &Connection) -> Result<Client> {
        let token = read_token(connection.token_file.as_deref())?;
        let authorization = format!("Bearer {token}")
            .parse()
            .map_err(|_| anyhow!("the token holds characters a header cannot carry"))?;
        let endpoint = Channel::from_shared(connection.server.clone())
            .with_context(|| format!("bad --server URL {:?}", connection.server))?;
        let channel = endpoint.connect().await.map_err(|error| {
            anyhow!("cannot reach the ladder at {}: {error}", connection.server)
        })?;
        Ok(Client {
            // Uploads carry whole WASM components.
            inner: LadderClient::new(channel)
                .max_encoding_message_size(MAX_GRPC_MESSAGE_BYTES)
                .max_decoding_message_size(MAX_GRPC_MESSAGE_BYTES),
            authorization,
        })
    }

    fn request<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        request
            .metadata_mut()
            .insert("authorization", self.authorization.clone());
        request
    }
}

/// A refused call as one line: the server's message already names the reason.
fn failed(status: tonic::Status) -> anyhow::Error {
    match status.code() {
        tonic::Code::Unavailable => {
            anyhow!("the ladder server is unavailable: {}", status.message())
        }
        _ => anyhow!("{}", status.message()),
    }
}

fn source(args: SourceArgs) -> Result<pb::LadderBotSource> {
    use pb::ladder_bot_source::Source;
    let source = if let Some(spec) = args.builtin {
        Source::Builtin(spec)
    } else if let Some(url) = args.endpoint {
        Source::EndpointUrl(url)
    } else if let Some(path) = args.wasm {
        let size = std::fs::metadata(&path)
            .with_context(|| format!("cannot read the WASM file {}", path.display()))?
            .len();
        if size > MAX_WASM_BYTES as u64 {
            bail!(
                "the WASM file {} is {size} bytes, over the cap of {MAX_WASM_BYTES} bytes",
                path.display()
            );
        }
        let bytes = std::fs::read(&path)
            .with_context(|| format!("cannot read the WASM file {}", path.display()))?;
        Source::Wasm(bytes)
    } else {
        bail!("name the bot: --builtin SPEC, --wasm FILE or --endpoint URL");
    };
    Ok(pb::LadderBotSource {
        source: Some(source),
    })
}

fn print_json(value: &Value) {
    println!("{value}");
}

fn bot_json(bot: &pb::LadderBot) -> Value {
    json!({
        "id": bot.id,
        "name": bot.name,
        "owner": bot.owner,
        "class": bot.weight_class,
        "current_version": bot.current_version,
        "versions": bot.versions.iter().map(|version| json!({
            "version": version.version,
            "kind": version.kind,
            "spec": version.spec,
            "digest": version.digest,
            "created_ms": version.created_ms,
        })).collect::<Vec<_>>(),
    })
}

fn print_bot(bot: &pb::LadderBot) {
    println!(
        "{} (owner {}, class {}, version {})",
        bot.name, bot.owner, bot.weight_class, bot.current_version
    );
    for version in &bot.versions {
        println!(
            "  v{} {} {} {}",
            version.version, version.kind, version.spec, version.digest
        );
    }
}

fn season_json(season: &pb::LadderSeason) -> Value {
    json!({
        "id": season.id,
        "name": season.name,
        "started_ms": season.started_ms,
        "ended_ms": (season.ended_ms > 0).then_some(season.ended_ms),
    })
}

fn match_json(game: &pb::LadderMatch) -> Value {
    let side = |side: &Option<pb::LadderMatchSide>| {
        side.as_ref()
            .map(|side| json!({ "bot": side.bot, "version": side.version, "stake": side.stake }))
    };
    json!({
        "id": game.id,
        "season_id": game.season_id,
        "class": game.weight_class,
        "ruleset": game.ruleset,
        "budget": game.budget,
        "seed": game.seed,
        "a": side(&game.a),
        "b": side(&game.b),
        "state": game.state,
        "attempts": game.attempts,
        "accepted_ms": game.accepted_ms,
        "finished_ms": (game.finished_ms > 0).then_some(game.finished_ms),
        "winner": (!game.winner.is_empty()).then_some(&game.winner),
        "replay_path": (!game.replay_path.is_empty()).then_some(&game.replay_path),
        "note": (!game.note.is_empty()).then_some(&game.note),
    })
}

fn match_line(game: &pb::LadderMatch) -> String {
    let side = |side: &Option<pb::LadderMatchSide>| {
        side.as_ref().map_or_else(String::new, |side| {
            format!("{} v{} ({} cr)", side.bot, side.version, side.stake)
        })
    };
    let result = if game.winner.is_empty() {
        String::new()
    } else {
        format!(" winner {}", game.winner)
    };
    format!(
        "{} {} {} vs {} {}{}",
        game.id,
        game.weight_class,
        side(&game.a),
        side(&game.b),
        game.state,
        result
    )
}

/// Runs one client command; the exit code is the caller's.
pub async fn run(connection: Connection, command: ClientCommand) -> Result<()> {
    let mut client = Client::connect(&connection).await?;
    match command {
        ClientCommand::Account {
            command: AccountCommand::Create { name, out },
        } => {
            let request = client.request(pb::LadderCreateOwnerRequest { name });
            let response = client
                .inner
                .create_owner(request)
                .await
                .map_err(failed)?
                .into_inner();
            let name = response
                .account
                .map(|account| account.name)
                .unwrap_or_default();
            match out {
                Some(path) => {
                    crate::write_secret(&path, &response.token)?;
                    println!("owner {name} created; token written to {}", path.display());
                }
                None => {
                    println!("owner {name} created; token (shown once):");
                    println!("{}", response.token);
                }
            }
        }
        ClientCommand::Account {
            command: AccountCommand::Whoami { json },
        } => {
            let request = client.request(pb::LadderWhoamiRequest {});
            let account = client
                .inner
                .whoami(request)
                .await
                .map_err(failed)?
                .into_inner()
                .account
                .unwrap_or_default();
            let role = match account.role() {
                pb::LadderRole::Operator => "operator",
                pb::LadderRole::Owner => "owner",
                pb::LadderRole::Unspecified => "unknown",
            };
            if json {
                print_json(&json!({ "id": account.id, "name": account.name, "role": role }));
            } else {
                println!("{} ({role})", account.name);
            }
        }
        ClientCommand::Credits {
            command: CreditsCommand::Grant { owner, amount, id },
        } => {
            let request = client.request(pb::LadderGrantCreditsRequest {
                owner: owner.clone(),
                amount,
                transfer_id: id.unwrap_or_default(),
            });
            let response = client
                .inner
                .grant_credits(request)
                .await
                .map_err(failed)?
                .into_inner();
            if response.already_applied {
                println!(
                    "transfer {} was already applied; nothing changed",
                    response.transfer_id
                );
            } else {
                println!(
                    "granted {amount} credits to {owner} (transfer {})",
                    response.transfer_id
                );
            }
        }
        ClientCommand::Season {
            command: SeasonCommand::Start { name },
        } => {
            let request = client.request(pb::LadderStartSeasonRequest { name });
            let season = client
                .inner
                .start_season(request)
                .await
                .map_err(failed)?
                .into_inner()
                .season
                .unwrap_or_default();
            println!("season {} ({}) started", season.id, season.name);
        }
        ClientCommand::Season {
            command: SeasonCommand::End,
        } => {
            let request = client.request(pb::LadderEndSeasonRequest {});
            let season = client
                .inner
                .end_season(request)
                .await
                .map_err(failed)?
                .into_inner()
                .season
                .unwrap_or_default();
            println!(
                "season {} ({}) ended; standings frozen",
                season.id, season.name
            );
        }
        ClientCommand::Rake {
            command: RakeCommand::Set { basis_points },
        } => {
            let request = client.request(pb::LadderSetRakeRequest {
                rake_bp: basis_points,
            });
            client.inner.set_rake(request).await.map_err(failed)?;
            println!("rake set to {basis_points} basis points");
        }
        ClientCommand::Bot {
            command:
                BotCommand::Register {
                    name,
                    class,
                    source: spec,
                    json,
                },
        } => {
            let request = client.request(pb::LadderRegisterBotRequest {
                name,
                weight_class: class,
                source: Some(source(spec)?),
            });
            let bot = client
                .inner
                .register_bot(request)
                .await
                .map_err(failed)?
                .into_inner()
                .bot
                .unwrap_or_default();
            if json {
                print_json(&bot_json(&bot));
            } else {
                println!("registered {} version {}", bot.name, bot.current_version);
            }
        }
        ClientCommand::Bot {
            command:
                BotCommand::Version {
                    name,
                    source: spec,
                    json,
                },
        } => {
            let request = client.request(pb::LadderNewBotVersionRequest {
                name,
                source: Some(source(spec)?),
            });
            let bot = client
                .inner
                .new_bot_version(request)
                .await
                .map_err(failed)?
                .into_inner()
                .bot
                .unwrap_or_default();
            if json {
                print_json(&bot_json(&bot));
            } else {
                println!("{} is now at version {}", bot.name, bot.current_version);
            }
        }
        ClientCommand::Bot {
            command: BotCommand::List { json },
        } => {
            let request = client.request(pb::LadderListBotsRequest {});
            let bots = client
                .inner
                .list_bots(request)
                .await
                .map_err(failed)?
                .into_inner()
                .bots;
            if json {
                print_json(&Value::Array(bots.iter().map(bot_json).collect()));
            } else {
                for bot in &bots {
                    println!(
                        "{} (owner {}, class {}, version {})",
                        bot.name, bot.owner, bot.weight_class, bot.current_version
                    );
                }
            }
        }
        ClientCommand::Bot {
            command: BotCommand::Show { name, json },
        } => {
            let request = client.request(pb::LadderShowBotRequest { name });
            let bot = client
                .inner
                .show_bot(request)
                .await
                .map_err(failed)?
                .into_inner()
                .bot
                .unwrap_or_default();
            if json {
                print_json(&bot_json(&bot));
            } else {
                print_bot(&bot);
            }
        }
        ClientCommand::Enqueue { bot, stake } => {
            let request = client.request(pb::LadderEnqueueRequest { bot, stake });
            let entry = client
                .inner
                .enqueue(request)
                .await
                .map_err(failed)?
                .into_inner()
                .entry
                .unwrap_or_default();
            println!(
                "{} queued in {} with a stake of {} credits",
                entry.bot, entry.weight_class, entry.stake
            );
        }
        ClientCommand::Leave { bot } => {
            let request = client.request(pb::LadderLeaveQueueRequest { bot: bot.clone() });
            client.inner.leave_queue(request).await.map_err(failed)?;
            println!("{bot} left the queue");
        }
        ClientCommand::Balance { account, json } => {
            let request = client.request(pb::LadderBalanceRequest {
                account: account.unwrap_or_default(),
            });
            let balance = client
                .inner
                .balance(request)
                .await
                .map_err(failed)?
                .into_inner();
            if json {
                print_json(&json!({ "account": balance.account, "available": balance.available }));
            } else {
                println!(
                    "{}: {} credits available",
                    balance.account, balance.available
                );
            }
        }
        ClientCommand::Standings {
            season,
            class,
            json,
        } => {
            let request = client.request(pb::LadderStandingsRequest {
                season_id: season.unwrap_or(0),
                weight_class: class.unwrap_or_default(),
            });
            let response = client
                .inner
                .standings(request)
                .await
                .map_err(failed)?
                .into_inner();
            let season = response.season.unwrap_or_default();
            if json {
                let standings: Vec<Value> = response
                    .standings
                    .iter()
                    .map(|standing| {
                        json!({
                            "rank": standing.rank,
                            "bot": standing.bot,
                            "owner": standing.owner,
                            "class": standing.weight_class,
                            "rating": standing.rating,
                            "deviation": standing.deviation,
                            "volatility": standing.volatility,
                            "conservative": standing.conservative,
                            "provisional": standing.provisional,
                            "games": standing.games,
                            "wins": standing.wins,
                            "losses": standing.losses,
                            "draws": standing.draws,
                        })
                    })
                    .collect();
                print_json(&json!({ "season": season_json(&season), "standings": standings }));
            } else {
                let state = if season.ended_ms > 0 {
                    "ended, frozen"
                } else {
                    "running"
                };
                println!("season {} ({}, {state})", season.id, season.name);
                for standing in &response.standings {
                    println!(
                        "{:>3}. {:<20} {:<12} {:<6} {:>7.1} ±{:>5.1} {}W {}L {}D{}",
                        standing.rank,
                        standing.bot,
                        standing.owner,
                        standing.weight_class,
                        standing.rating,
                        standing.deviation,
                        standing.wins,
                        standing.losses,
                        standing.draws,
                        if standing.provisional {
                            " provisional"
                        } else {
                            ""
                        }
                    );
                }
            }
        }
        ClientCommand::Matches {
            id: Some(id), json, ..
        } => {
            let request = client.request(pb::LadderShowMatchRequest { id });
            let game = client
                .inner
                .show_match(request)
                .await
                .map_err(failed)?
                .into_inner()
                .r#match
                .unwrap_or_default();
            if json {
                print_json(&match_json(&game));
            } else {
                println!("{}", match_line(&game));
            }
        }
        ClientCommand::Matches {
            id: None,
            state,
            bot,
            json,
        } => {
            let request = client.request(pb::LadderListMatchesRequest {
                state: state.unwrap_or_default(),
                bot: bot.unwrap_or_default(),
            });
            let matches = client
                .inner
                .list_matches(request)
                .await
                .map_err(failed)?
                .into_inner()
                .matches;
            if json {
                print_json(&Value::Array(matches.iter().map(match_json).collect()));
            } else {
                for game in &matches {
                    println!("{}", match_line(game));
                }
            }
        }
    }
    Ok(())
}

/// `ladder ledger check` through the server; false when a violation was found.
pub async fn ledger_check(connection: Connection, json: bool) -> Result<bool> {
    let mut client = Client::connect(&connection).await?;
    let request = client.request(pb::LadderCheckLedgerRequest {});
    let report = client
        .inner
        .check_ledger(request)
        .await
        .map_err(failed)?
        .into_inner();
    print_ledger(
        json,
        report.ok.then_some(()).ok_or(report.violation.clone()),
        report.accounts,
        report.transfers,
        report.pending_unresolved,
        report.credits_in_circulation,
        report.house_credits,
    );
    Ok(report.ok)
}

/// The one rendering of a ledger check, local or remote.
pub fn print_ledger(
    json: bool,
    verdict: Result<(), String>,
    accounts: u64,
    transfers: u64,
    pending_unresolved: u64,
    credits_in_circulation: i64,
    house_credits: i64,
) {
    match verdict {
        Ok(()) if json => print_json(&json!({
            "ok": true,
            "accounts": accounts,
            "transfers": transfers,
            "pending_unresolved": pending_unresolved,
            "credits_in_circulation": credits_in_circulation,
            "house_credits": house_credits,
        })),
        Ok(()) => println!(
            "ledger clean: {accounts} accounts, {transfers} transfers, {pending_unresolved} stakes in escrow, {credits_in_circulation} credits in circulation, house {house_credits}"
        ),
        Err(violation) if json => print_json(&json!({ "ok": false, "violation": violation })),
        Err(violation) => eprintln!("ledger check failed: {violation}"),
    }
}
