//! The `ladder` binary: operator commands that work on the database directly.
//! The gRPC service and the owner commands over it are not built yet.

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
    /// Ledger commands.
    Ledger {
        #[command(subcommand)]
        command: LedgerCommand,
    },
}

#[derive(Debug, Subcommand)]
enum LedgerCommand {
    /// Verify every ledger invariant; exits non-zero naming the first violation.
    Check {
        #[arg(long)]
        db: String,
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
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
            let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
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
            tokio::signal::ctrl_c()
                .await
                .context("waiting for Ctrl-C")?;
            let _ = stop_tx.send(true);
            for task in tasks {
                let _ = task.await;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Ledger {
            command: LedgerCommand::Check { db, json },
        } => {
            let store = Store::connect(&db)
                .await
                .with_context(|| format!("opening {db}"))?;
            match store.ledger_check().await? {
                Ok(report) => {
                    if json {
                        println!(
                            "{}",
                            serde_json::json!({
                                "ok": true,
                                "accounts": report.accounts,
                                "transfers": report.transfers,
                                "pending_unresolved": report.pending_unresolved,
                                "credits_in_circulation": report.credits_in_circulation,
                                "house_credits": report.house_credits,
                            })
                        );
                    } else {
                        println!(
                            "ledger clean: {} accounts, {} transfers, {} stakes in escrow, {} credits in circulation, house {}",
                            report.accounts,
                            report.transfers,
                            report.pending_unresolved,
                            report.credits_in_circulation,
                            report.house_credits
                        );
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Err(violation) => {
                    if json {
                        println!(
                            "{}",
                            serde_json::json!({ "ok": false, "violation": violation })
                        );
                    } else {
                        eprintln!("ledger check failed: {violation}");
                    }
                    Ok(ExitCode::FAILURE)
                }
            }
        }
    }
}

/// Writes a secret to a new file only its owner can read.
fn write_secret(path: &std::path::Path, secret: &str) -> Result<()> {
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
