//! `ladder bench` (ranked matches settled per second against the referee
//! alone) and `ladder bench-site` (seed a large ladder, load its pages): the
//! benchmarks of `duel-ladder-bench`, printed as text or one JSON object.

use anyhow::{Context, Result};
use duel_ladder_bench::bench::{BenchReport, settle_bench};
use duel_ladder_bench::bench_site::{self, LoadConfig};
use duel_plumbing::Outcome;
use duel_replays::store::ReplayStore;

use super::say;
use crate::cli::{BenchArgs, BenchSiteCommand};
use crate::client;

pub async fn settle(args: BenchArgs) -> Result<Outcome> {
    let report = settle_bench(
        &args.db,
        args.matches,
        args.workers,
        args.replays_dir,
        args.window,
    )
    .await
    .with_context(|| format!("benchmarking {}", args.db))?;
    if args.json {
        say!("{}", serde_json::to_string_pretty(&report.json())?);
        return Ok(super::verdict(report.ledger.is_ok()));
    }
    print_settle(&report);
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

fn print_settle(report: &BenchReport) {
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
    // Summed over the workers: with W workers busy all along, the sum is
    // W ÷ the settled rate; the largest step is where to look.
    let steps: Vec<String> = report
        .step_ms
        .iter()
        .map(|(step, ms)| format!("{} {ms:.2}", step.name().replace('_', " ")))
        .collect();
    say!(
        "worker time per match, in ms of wall clock: {} (sum {:.2}; {} workers at {:.0}/s have {:.2})",
        steps.join(", "),
        report.step_ms.iter().map(|(_, ms)| ms).sum::<f64>(),
        report.workers,
        report.settled_per_s,
        report.workers as f64 * 1_000.0 / report.settled_per_s.max(1e-9)
    );
    if let (Some(first), Some(last)) = (report.windows.first(), report.windows.last()) {
        let line = |window: &duel_ladder_bench::bench::Window| {
            format!(
                "matches {}–{}: {:.0}/s, settle {:.2} ms, publish {:.2} ms, CPU {} per match",
                window.from,
                window.to,
                window.settled_per_s,
                window.settle_ms_per_match,
                window.step_ms.get("publish").copied().unwrap_or(0.0),
                window
                    .cpu_ms_per_match
                    .map_or_else(|| "unknown".to_owned(), |ms| format!("{ms:.2} ms"))
            )
        };
        say!(
            "first window, {}; last window, {} ({} windows in --json)",
            line(first),
            line(last),
            report.windows.len()
        );
    }
    let stats = report.settlements;
    say!(
        "settlements: {} in {} shared transactions ({:.1} each), {} alone",
        stats.batched,
        stats.batches,
        stats.batched as f64 / stats.batches.max(1) as f64,
        stats.alone
    );
}

pub async fn site(command: BenchSiteCommand) -> Result<Outcome> {
    match command {
        BenchSiteCommand::Seed {
            db,
            bots,
            matches,
            replays,
            json,
        } => seed(&db, bots, matches, replays.as_deref(), json).await,
        BenchSiteCommand::Load {
            url,
            db,
            requests,
            concurrency,
            server_pid,
            watchers,
            json,
        } => {
            let config = LoadConfig {
                url,
                db_url: db,
                requests,
                concurrency,
                server_pid,
                watchers,
            };
            let report = bench_site::load(&config)
                .await
                .with_context(|| format!("loading {}", config.url))?;
            if json {
                say!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                client::emit(&report.table());
            }
            Ok(super::verdict(report.errors() == 0))
        }
    }
}

async fn seed(
    db: &str,
    bots: u64,
    matches: u64,
    replays: Option<&str>,
    json: bool,
) -> Result<Outcome> {
    let replays = match replays {
        Some(url) => Some(
            ReplayStore::open(url).with_context(|| format!("opening the replay store {url}"))?,
        ),
        None => None,
    };
    let report = bench_site::seed(db, bots, matches, replays.as_ref())
        .await
        .with_context(|| format!("seeding {db}"))?;
    if json {
        say!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(Outcome::Done);
    }
    say!(
        "{}: seeded {} bots of {} owners, {} matches, {} rating points in {:.1} s",
        report.backend,
        report.bots,
        report.owners,
        report.matches,
        report.rating_history_rows,
        report.total_s
    );
    if report.transcripts > 0 {
        say!(
            "  and {} transcripts of heavy matches of the ended season",
            report.transcripts
        );
    }
    for (step, seconds) in &report.steps {
        say!("  {step:<30} {seconds:>8.1} s");
    }
    Ok(Outcome::Done)
}
