//! The `ladder` binary: `serve`, `worker`, `init` and `ledger check --db` work on
//! the database directly; every other command is a client of `ladder serve`.

mod client;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use duel_ladder::Store;
use duel_ladder::worker::{self, BotFactory, BuiltinFactory, WorkerConfig};

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
    },
    /// Claim, run and settle matches until interrupted.
    Worker {
        #[arg(long)]
        db: String,
        #[arg(long, default_value = "replays")]
        replays_dir: PathBuf,
        /// Workers in this process.
        #[arg(long, default_value_t = 1)]
        workers: usize,
    },
    /// Run the gRPC API, in-process workers and the pairing wave timer until
    /// Ctrl-C or SIGTERM.
    Serve {
        #[arg(long, default_value = "sqlite://ladder.db")]
        db: String,
        #[arg(long, default_value = "127.0.0.1:50061")]
        listen: std::net::SocketAddr,
        #[arg(long, default_value = "replays")]
        replays: PathBuf,
        /// In-process workers (0: leave matches to `ladder worker` processes).
        #[arg(long, default_value_t = 2)]
        workers: usize,
        /// Milliseconds between pairing waves.
        #[arg(long, default_value_t = duel_ladder::limits::DEFAULT_WAVE_INTERVAL_MS)]
        wave_interval_ms: u64,
        /// Accept endpoint bots on loopback and private addresses.
        #[arg(long)]
        allow_private_endpoints: bool,
    },
    /// Matches settled per second on a fresh database with built-in bots,
    /// against the referee alone (the bare baseline).
    Bench {
        #[arg(long)]
        db: String,
        #[arg(long, default_value_t = 1_000)]
        matches: usize,
        #[arg(long, default_value_t = 2)]
        workers: usize,
        #[arg(long, default_value = "bench-replays")]
        replays_dir: PathBuf,
    },
    /// Ledger commands.
    Ledger {
        #[command(subcommand)]
        command: LedgerCommand,
    },
    #[command(flatten)]
    Client(client::ClientCommand),
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

fn main() -> ExitCode {
    // Colours only on a terminal: logs piped to files or tests stay plain text.
    tracing_subscriber::fmt()
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
            eprintln!("ladder: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("ladder: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Init {
            db,
            operator,
            token_file,
        } => {
            let store = Store::connect(&db)
                .await
                .with_context(|| format!("opening {db}"))?;
            match store.bootstrap_operator(&operator).await? {
                Some((user, token)) => {
                    write_secret(&token_file, &token)?;
                    println!(
                        "operator {} created; token written to {}",
                        user.name,
                        token_file.display()
                    );
                }
                None => println!("an operator exists already; nothing created"),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Worker {
            db,
            replays_dir,
            workers,
        } => {
            let store = Store::connect(&db)
                .await
                .with_context(|| format!("opening {db}"))?;
            let stop_rx = duel_ladder::serve::shutdown_on_signals();
            let factory: Arc<dyn BotFactory> = Arc::new(BuiltinFactory);
            let mut tasks = Vec::new();
            for _ in 0..workers.max(1) {
                let config = WorkerConfig::new(replays_dir.clone());
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
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve {
            db,
            listen,
            replays,
            workers,
            wave_interval_ms,
            allow_private_endpoints,
        } => {
            let config = duel_ladder::serve::ServeConfig {
                db_url: db.clone(),
                listen,
                replays_dir: replays,
                workers,
                wave_interval: std::time::Duration::from_millis(wave_interval_ms.max(1)),
                allow_private_endpoints,
            };
            let shutdown = duel_ladder::serve::shutdown_on_signals();
            duel_ladder::serve::serve(config, shutdown, None)
                .await
                .with_context(|| format!("serving {db} on {listen}"))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench {
            db,
            matches,
            workers,
            replays_dir,
        } => {
            let report = duel_ladder::bench::settle_bench(&db, matches, workers, replays_dir)
                .await
                .with_context(|| format!("benchmarking {db}"))?;
            println!(
                "{}: {} matches, {} workers: accepted {:.0}/s, settled {:.0}/s, bare referee {:.0}/s (ratio {:.2})",
                report.backend,
                report.matches,
                report.workers,
                report.accepted_per_s,
                report.settled_per_s,
                report.bare_per_s,
                report.settled_per_s / report.bare_per_s.max(1e-9)
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Ledger {
            command: LedgerCommand::Check { db: None, json },
        } => Ok(if client::ledger_check(cli.connection, json).await? {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
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
            Ok(if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::Client(command) => {
            client::run(cli.connection, command).await?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Writes a secret to a new file only its owner can read.
pub(crate) fn write_secret(path: &std::path::Path, secret: &str) -> Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).with_context(|| {
        format!(
            "cannot create token file {} (it must not exist yet)",
            path.display()
        )
    })?;
    writeln!(file, "{secret}").with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
