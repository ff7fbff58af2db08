//! The `tournament` and `sprt` commands: set up the match pool, show progress,
//! and print the standings or the verdict for people (a table) or machines (JSON).

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use duel_plumbing::Shutdown;
use duel_referee::arena::pool::{
    Control, Entrant, MatchSummary, PoolSettings, display_names, play_matches,
};
use duel_referee::arena::sprt::{SprtRun, pair_matches};
use duel_referee::arena::stats::{Sprt, Verdict};
use duel_referee::arena::tournament::{
    EloInterval, Format, Standings, TournamentDir, TournamentPlan, latency_text, percentile,
    standings,
};
use duel_referee::limits::MAX_BOOK_BYTES;
use duel_referee::opening::{Opening, OpeningSource};
use duel_referee::{EndpointPolicy, MatchHost};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use super::{Outcome, Stdout};
use crate::cli::{FormatArg, ModelArgs, SprtArgs, TournamentArgs};

/// The clock is in range already (the CLI's parser checks it).
fn wall_clock(seconds: f64) -> Duration {
    Duration::from_secs_f64(seconds)
}

/// The metered gateway endpoint entrants reach their models through, served
/// on a runtime of its own (the pool plays on plain threads) while this lives.
struct Gateway {
    _runtime: Option<tokio::runtime::Runtime>,
    _stop: Option<tokio::sync::oneshot::Sender<()>>,
    /// A model is configured (`--model-url` or `--models`): without one,
    /// bots' calls are refused as unavailable.
    model_configured: bool,
}

/// Once per bot, a warning that it called a model while none is configured
/// (its calls were refused, free, and it decided without an answer).
struct NoModelWarnings {
    model_configured: bool,
    warned: std::collections::BTreeSet<usize>,
}

impl NoModelWarnings {
    fn new(model_configured: bool) -> NoModelWarnings {
        NoModelWarnings {
            model_configured,
            warned: std::collections::BTreeSet::new(),
        }
    }

    /// The warning lines `summary` calls for (none twice for one bot).
    fn check(&mut self, summary: &MatchSummary, names: &[String]) -> Vec<String> {
        if self.model_configured {
            return Vec::new();
        }
        let mut lines = Vec::new();
        for (side, &entrant) in summary.entrants.iter().enumerate() {
            if summary.unavailable_calls[side] > 0 && self.warned.insert(entrant) {
                let name = names.get(entrant).map_or("a bot", String::as_str);
                lines.push(format!(
                    "warning: {name} called a model, but none is configured: its calls are refused as unavailable (free) and it decides without an answer. Configure one with --model-url builtin:house (offline), --model-url URL --model NAME, or --models FILE."
                ));
            }
        }
        lines
    }
}

/// How the pool plays: `jobs` matches at once, their WASM instances pooled for
/// that many, endpoints failing fast with their own reasons on the tape, and
/// bots' model calls metered through the models the flags name (refused as
/// unavailable without one).
fn pool_settings(
    jobs: usize,
    class: duel_rules::WeightClass,
    wall_clock: Duration,
    replay_dir: Option<std::path::PathBuf>,
    openings: OpeningSource,
    (model, entrants): (&ModelArgs, &[Entrant]),
) -> Result<(PoolSettings, Gateway)> {
    let mut config = super::host_config(model)?.playing_at_once(jobs.max(1));
    config.endpoints = EndpointPolicy::LOCAL;
    let specs: Vec<duel_referee::BotSpec> = entrants
        .iter()
        .filter_map(|entrant| match entrant {
            Entrant::Bot { spec, .. } => Some(spec.clone()),
            Entrant::Builtin(_) => None,
        })
        .collect();
    let mut gateway = Gateway {
        _runtime: None,
        _stop: None,
        model_configured: config.gateway.is_enabled(),
    };
    if specs
        .iter()
        .any(|spec| matches!(spec, duel_referee::BotSpec::Endpoint(_)))
    {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .context("cannot start the gateway's runtime")?;
        if let Some((link, stop)) = runtime.block_on(super::local_inference(&specs))? {
            config.inference = Some(link);
            gateway._stop = Some(stop);
        }
        gateway._runtime = Some(runtime);
    }
    Ok((
        PoolSettings {
            jobs,
            class,
            wall_clock,
            replay_dir,
            host: MatchHost::new(config),
            openings,
        },
        gateway,
    ))
}

/// The openings of `--book FILE` (none without it), checked against the rules.
fn read_book(path: Option<&std::path::Path>) -> Result<Vec<Opening>> {
    let Some(path) = path else {
        return Ok(Vec::new());
    };
    let bytes =
        duel_files::read_regular_within(path, MAX_BOOK_BYTES as u64, duel_files::READ_DEADLINE)
            .map_err(|error| anyhow::anyhow!("cannot read the opening book {error}"))?;
    let text = String::from_utf8(bytes)
        .with_context(|| format!("the opening book {} is not text", path.display()))?;
    Opening::parse_book(duel_rules::Ruleset::CURRENT, &text)
        .with_context(|| format!("in {}", path.display()))
}

fn jobs(requested: Option<u32>) -> usize {
    requested.map(|jobs| jobs as usize).unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(usize::from)
            .unwrap_or(1)
    })
}

/// Sets a flag on ctrl-c or SIGTERM so the pool stops taking new matches.
fn interrupt_flag() -> Result<Arc<AtomicBool>> {
    let shutdown = Shutdown::install()?;
    let interrupted = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&interrupted);
    // The pool runs on plain threads: a watcher thread turns the signal into
    // the flag they check between matches.
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().build();
        if let Ok(runtime) = runtime {
            runtime.block_on(shutdown.wait());
            flag.store(true, Ordering::SeqCst);
        }
    });
    Ok(interrupted)
}

fn progress_bar(length: u64, position: u64, template: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(length), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("█▉▊▋▌▍▎▏ ").with_key(
            "rate",
            |state: &ProgressState, out: &mut dyn std::fmt::Write| {
                let _ = write!(out, "{}", rate_text(state.per_sec()));
            },
        ));
    }
    bar.set_position(position);
    bar
}

/// A rate for people: whole numbers from 10 up, one decimal below.
fn rate_text(per_second: f64) -> String {
    if !per_second.is_finite() || per_second <= 0.0 {
        "–/s".to_owned()
    } else if per_second >= 10.0 {
        format!("{per_second:.0}/s")
    } else {
        format!("{per_second:.1}/s")
    }
}

/// The entrants from their specs as given; a source folder is built (or taken
/// from the cache, or started: a Python endpoint bot) here, before any
/// match. The processes of endpoint bots run while the second list is kept.
fn parse_entrants(
    specs: &[String],
) -> Result<(
    Vec<Entrant>,
    Vec<std::sync::Arc<super::python_endpoint::BotProcess>>,
)> {
    let mut entrants = Vec::with_capacity(specs.len());
    let mut processes = Vec::new();
    for spec in specs {
        let resolved = super::source::resolve(spec)?;
        entrants.push(resolved.entrant()?);
        processes.extend(resolved.process);
    }
    Ok((entrants, processes))
}

fn check_entrants(entrants: &[Entrant], settings: &PoolSettings) -> Result<()> {
    for entrant in entrants {
        entrant.check(settings)?;
    }
    Ok(())
}

pub fn tournament(args: TournamentArgs) -> Result<Outcome> {
    let ((entrants, _processes), plan, class) =
        match (&args.out, args.resume && args.bots.is_empty()) {
            (Some(root), true) => {
                let plan = TournamentDir { root: root.clone() }.read_plan()?;
                let class = saved_class(&plan.class)?;
                (parse_entrants(&plan.bots)?, plan, class)
            }
            _ => {
                let entrants = parse_entrants(&args.bots)?;
                let names = entrants.0.iter().map(Entrant::name).collect();
                let plan = TournamentPlan {
                    bots: names,
                    format: match args.format {
                        FormatArg::RoundRobin => Format::RoundRobin,
                        FormatArg::Gauntlet => Format::Gauntlet,
                    },
                    rounds: args.rounds,
                    seed: args.seed,
                    class: duel_rules::WeightClass::from(args.class).name().to_owned(),
                    openings: args.openings.map(usize::from),
                    book: read_book(args.book.as_deref())?
                        .iter()
                        .map(ToString::to_string)
                        .collect(),
                };
                (entrants, plan, args.class.into())
            }
        };
    let settings_clock = wall_clock(args.wall_clock);
    let schedule = plan.schedule();
    let dir = args.out.clone().map(|root| TournamentDir { root });
    let mut summaries = Vec::new();
    if let Some(dir) = &dir {
        if args.resume {
            summaries = dir.resume(&plan)?;
        } else {
            dir.create(&plan)?;
        }
    }
    let done: std::collections::BTreeSet<u64> = summaries.iter().map(|s| s.index).collect();
    let mut remaining: Vec<_> = schedule
        .iter()
        .filter(|s| !done.contains(&s.index))
        .copied()
        .collect();
    if let Some(limit) = args.limit {
        remaining.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    }
    let (settings, gateway) = pool_settings(
        jobs(args.jobs),
        class,
        settings_clock,
        dir.as_ref().map(TournamentDir::replays),
        plan.opening_source()?,
        (&args.model, &entrants),
    )?;
    check_entrants(&entrants, &settings)?;
    let names = display_names(&entrants);
    let mut no_model = NoModelWarnings::new(gateway.model_configured);
    // Matches played before a --resume count too.
    for summary in &summaries {
        for line in no_model.check(summary, &names) {
            eprintln!("{line}");
        }
    }
    let interrupted = interrupt_flag()?;
    let bar = progress_bar(
        schedule.len() as u64,
        summaries.len() as u64,
        "{bar:32} {pos}/{len} matches · {rate} · ETA {eta}",
    );
    let mut results_file = dir.as_ref().map(TournamentDir::open_results).transpose()?;
    let cursor = AtomicU64::new(0);
    let next = || {
        let position = cursor.fetch_add(1, Ordering::SeqCst) as usize;
        remaining.get(position).copied()
    };
    let mut write_error = None;
    play_matches(&entrants, &settings, &interrupted, &next, |summary| {
        if let (Some(dir), Some(file)) = (&dir, results_file.as_mut())
            && let Err(error) = dir.append(file, &summary)
        {
            write_error.get_or_insert(error);
            return Control::Stop;
        }
        for line in no_model.check(&summary, &names) {
            bar.suspend(|| eprintln!("{line}"));
        }
        summaries.push(summary);
        bar.inc(1);
        Control::Continue
    })?;
    bar.finish_and_clear();
    if let Some(error) = write_error {
        return Err(error.into());
    }
    summaries.sort_by_key(|summary| summary.index);
    let table = standings(&names, &summaries, schedule.len() as u64);
    let mut stdout = Stdout::new();
    if args.json {
        let text = serde_json::to_string_pretty(&serde_json::json!({
            "plan": plan,
            "standings": table,
            "complete": table.matches_played == table.matches_scheduled,
        }))
        .context("cannot encode the standings")?;
        stdout.print(&format!("{text}\n"))?;
    } else {
        stdout.print(&tournament_table(
            &plan,
            &table,
            &first_faults(&names, &summaries),
        ))?;
    }
    if table.matches_played < table.matches_scheduled {
        let how = match &dir {
            Some(dir) => format!("continue with --resume --out {}", dir.root.display()),
            None => "pass --out DIR to be able to resume".to_owned(),
        };
        eprintln!(
            "referee: {} of {} matches played; {how}",
            table.matches_played, table.matches_scheduled
        );
        if interrupted.load(Ordering::SeqCst) {
            return Ok(Outcome::Interrupted);
        }
    }
    Ok(Outcome::Done)
}

/// The weight class a saved plan names.
fn saved_class(name: &str) -> Result<duel_rules::WeightClass> {
    duel_rules::WeightClass::from_name(name)
        .with_context(|| format!("the saved plan names an unknown weight class {name:?}"))
}

/// A number for people's tables: its minus sign is U+2212 '−' (the same as
/// the tables' other minus signs), never ASCII '-'. `--json` keeps numbers.
pub(super) fn minus(text: String) -> String {
    text.replace('-', "−")
}

/// `value` with `decimals` places, its minus sign a '−'; −0.0 prints as 0.
pub(super) fn number(value: f64, decimals: usize) -> String {
    // `+ 0.0` turns −0.0 into 0.0.
    minus(format!("{:.decimals$}", value + 0.0))
}

/// "+107.5", "−42.0", "+0.0".
fn signed(value: f64) -> String {
    let value = value + 0.0;
    if value >= 0.0 {
        format!("+{value:.1}")
    } else {
        number(value, 1)
    }
}

/// An Elo difference with its 95% interval, for people: "+107.5 ± 66.2";
/// an interval open at one end (the score's interval reaches 0 or 1) as
/// the end it has, "−511.5 (≤ −402.3)". What has no finite value says why
/// instead of printing "−∞" or "+0.0 ± 0.0": "— (all won)", "— (all lost)",
/// and `alike` ("all drawn", "every pair alike") for a record whose games
/// (or pairs) all scored the same, whose interval has no width.
pub(super) fn elo_text(elo: Option<EloInterval>, score: f64, alike: &str) -> String {
    match elo {
        Some(EloInterval {
            elo: Some(elo),
            low: Some(low),
            high: Some(high),
        }) if high - low > 0.0 => {
            format!("{} ± {}", signed(elo), number((high - low) / 2.0, 1))
        }
        Some(EloInterval {
            elo: Some(elo),
            low: Some(_),
            high: Some(_),
        }) if elo.abs() < 0.05 => format!("— ({alike})"),
        Some(EloInterval {
            elo: Some(elo),
            low: Some(_),
            high: Some(_),
        }) => format!("{} ({alike})", signed(elo)),
        Some(EloInterval {
            elo: Some(elo),
            low: None,
            high: Some(high),
        }) => format!("{} (≤ {})", signed(elo), signed(high)),
        Some(EloInterval {
            elo: Some(elo),
            low: Some(low),
            high: None,
        }) => format!("{} (≥ {})", signed(elo), signed(low)),
        Some(EloInterval {
            elo: Some(elo),
            low: None,
            high: None,
        }) => format!("{} (any)", signed(elo)),
        Some(EloInterval { elo: None, .. }) if score >= 0.5 => "— (all won)".to_owned(),
        Some(EloInterval { elo: None, .. }) => "— (all lost)".to_owned(),
        None => "— (no games)".to_owned(),
    }
}

fn percent(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// Per bot that called a model: its tokens and cost per match, and each
/// model with its calls, tokens and cost (nothing when no bot called one).
fn model_lines(bots: &[duel_referee::arena::tournament::BotStanding]) -> String {
    let mut out = String::new();
    let spenders: Vec<_> = bots.iter().filter(|row| !row.models.is_empty()).collect();
    if spenders.is_empty() {
        return out;
    }
    let _ = writeln!(out, "\n Models (tokens and cost at the catalogue's prices)");
    for row in spenders {
        let cost = row
            .cost_per_match_usd
            .map(crate::render::dollars)
            .unwrap_or_else(|| "no price".to_owned());
        let models: Vec<String> = row
            .models
            .iter()
            .map(|model| {
                format!(
                    "{} {} calls {} tokens {}",
                    model.model,
                    model.calls,
                    model.tokens,
                    model
                        .cost_usd
                        .map(crate::render::dollars)
                        .unwrap_or_else(|| "no price".to_owned())
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "  {}: {:.0} tokens/match · {cost}/match · {}",
            row.bot,
            row.tokens_per_match,
            models.join(" · ")
        );
    }
    out
}

/// Per bot that faulted, by name: the reason of its first fault (in match
/// order), to say why a fault rate is what it is.
fn first_faults(
    names: &[String],
    summaries: &[MatchSummary],
) -> std::collections::BTreeMap<String, String> {
    let mut faults = std::collections::BTreeMap::new();
    for summary in summaries {
        for (side, &entrant) in summary.entrants.iter().enumerate() {
            if let (Some(reason), Some(name)) = (&summary.first_fault[side], names.get(entrant)) {
                faults.entry(name.clone()).or_insert_with(|| reason.clone());
            }
        }
    }
    faults
}

/// Per bot that faulted: its fault rate and its first fault's reason (a
/// fault is a trap, a limit or a bad answer; BLOCK was played instead).
fn fault_lines(
    bots: &[duel_referee::arena::tournament::BotStanding],
    faults: &std::collections::BTreeMap<String, String>,
) -> String {
    let mut out = String::new();
    let faulted: Vec<_> = bots.iter().filter(|row| row.substituted[2] > 0.0).collect();
    if faulted.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "\n Faults (the bot trapped, hit a limit or answered badly; BLOCK was played instead)"
    );
    for row in faulted {
        let reason = faults.get(&row.bot).map_or_else(
            || "reason not recorded".to_owned(),
            |reason| format!("first: {reason}"),
        );
        let _ = writeln!(
            out,
            "  {}: {} of its decisions · {reason}",
            row.bot,
            percent(row.substituted[2])
        );
    }
    out
}

fn tournament_table(
    plan: &TournamentPlan,
    table: &Standings,
    faults: &std::collections::BTreeMap<String, String>,
) -> String {
    let name_width = table
        .bots
        .iter()
        .map(|standing| standing.bot.chars().count())
        .max()
        .unwrap_or(3)
        .clamp(3, 40);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Tournament · {} bots · {} · {} round{} · seed {} · {} class · {}/{} matches",
        plan.bots.len(),
        match plan.format {
            Format::RoundRobin => "round robin",
            Format::Gauntlet => "gauntlet",
        },
        plan.rounds,
        if plan.rounds == 1 { "" } else { "s" },
        plan.seed,
        plan.class,
        table.matches_played,
        table.matches_scheduled,
    );
    let _ = writeln!(
        out,
        "\n {:>2}  {:<name_width$}  {:>6} {:>6} {:>6} {:>6}  {:>6}  {:>18}  {:>7} {:>7} {:>7}  {:>9}  {:>7} {:>7}",
        "#",
        "bot",
        "games",
        "wins",
        "draws",
        "losses",
        "score",
        "Elo (95%)",
        "timeout",
        "budget",
        "fault",
        "tok/match",
        "p50",
        "p99"
    );
    for (rank, row) in table.bots.iter().enumerate() {
        let _ = writeln!(
            out,
            " {:>2}  {:<name_width$}  {:>6} {:>6} {:>6} {:>6}  {:>6}  {:>18}  {:>7} {:>7} {:>7}  {:>9.0}  {:>7} {:>7}",
            rank + 1,
            row.bot,
            row.games,
            row.wins,
            row.draws,
            row.losses,
            percent(row.score),
            elo_text(row.elo, row.score, "all drawn"),
            percent(row.substituted[0]),
            percent(row.substituted[1]),
            percent(row.substituted[2]),
            row.tokens_per_match,
            latency_text(row.latency_p50_us),
            latency_text(row.latency_p99_us),
        );
    }
    out.push_str(&model_lines(&table.bots));
    out.push_str(&fault_lines(&table.bots, faults));
    let _ = writeln!(out, "\n Pairings (first bot's view)");
    for pair in &table.pairs {
        let _ = writeln!(
            out,
            "  {:<name_width$}  vs  {:<name_width$}  {:>5} games  {:>4}-{}-{}  {:>6}  {:>18}",
            pair.a,
            pair.b,
            pair.games,
            pair.wins,
            pair.draws,
            pair.losses,
            percent(pair.score),
            elo_text(pair.elo, pair.score, "all drawn"),
        );
    }
    out
}

pub fn sprt(args: SprtArgs) -> Result<Outcome> {
    let test =
        Sprt::new(args.elo0, args.elo1, args.alpha, args.beta).map_err(anyhow::Error::msg)?;
    let (entrants, _processes) = parse_entrants(&[args.new.clone(), args.base.clone()])?;
    let names = display_names(&entrants);
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    }
    let openings = match (args.openings, read_book(args.book.as_deref())?) {
        (Some(length), _) => OpeningSource::Random(usize::from(length)),
        (None, book) if !book.is_empty() => OpeningSource::Book(book),
        (None, _) => OpeningSource::None,
    };
    let (settings, gateway) = pool_settings(
        jobs(args.jobs),
        args.class.into(),
        wall_clock(args.wall_clock),
        args.out.clone(),
        openings,
        (&args.model, &entrants),
    )?;
    check_entrants(&entrants, &settings)?;
    let interrupted = interrupt_flag()?;
    let (lower, upper) = test.bounds();
    let bar = progress_bar(args.max_pairs, 0, "{bar:24} {pos} pairs · {rate} · {msg}");
    let show_lines = !args.json && !std::io::stderr().is_terminal();
    let max_matches = args.max_pairs.saturating_mul(2);
    let cursor = AtomicU64::new(0);
    let next = || {
        let position = cursor.fetch_add(1, Ordering::SeqCst);
        (position < max_matches)
            .then(|| pair_matches(args.seed, position / 2)[(position % 2) as usize])
    };
    let mut run = SprtRun::new(test);
    let mut no_model = NoModelWarnings::new(gateway.model_configured);
    play_matches(&entrants, &settings, &interrupted, &next, |summary| {
        for line in no_model.check(&summary, &names) {
            bar.suspend(|| eprintln!("{line}"));
        }
        let before = run.pairs_done;
        let verdict = run.record(summary);
        if run.pairs_done > before {
            bar.set_position(run.pairs_done);
            let message = format!(
                "LLR {} ({}, {}) · Elo {}",
                number(run.llr, 2),
                number(lower, 2),
                number(upper, 2),
                elo_text(
                    run.pentanomial.elo().map(EloInterval::from),
                    run.wdl.score().unwrap_or(0.5),
                    "every pair alike"
                )
            );
            if show_lines && run.pairs_done.is_multiple_of(100) {
                eprintln!("pairs {} · {message}", run.pairs_done);
            }
            bar.set_message(message);
        }
        if verdict == Verdict::Continue {
            Control::Continue
        } else {
            Control::Stop
        }
    })?;
    bar.finish_and_clear();
    let elo = run.pentanomial.elo().map(EloInterval::from);
    let verdict_text = match run.verdict {
        Verdict::AcceptH1 => format!(
            "H1 accepted: {} is stronger than {} (at least {} Elo)",
            names[0],
            names[1],
            minus(format!("{:+}", args.elo1))
        ),
        Verdict::AcceptH0 => format!(
            "H0 accepted: {} is not {} Elo stronger than {}",
            names[0],
            minus(format!("{:+}", args.elo1)),
            names[1]
        ),
        Verdict::Continue if interrupted.load(Ordering::SeqCst) => {
            "no verdict: interrupted".to_owned()
        }
        Verdict::Continue => format!("no verdict within {} pairs", args.max_pairs),
    };
    // Tokens, cost and models per bot over every match played.
    let spending = standings(&names, &run.summaries, run.summaries.len() as u64);
    let mut stdout = Stdout::new();
    if args.json {
        let spend_of = |name: &str| {
            spending.bots.iter().find(|row| row.bot == name).map(|row| {
                serde_json::json!({
                    "tokens_per_match": row.tokens_per_match,
                    "cost_per_match_usd": row.cost_per_match_usd,
                    "models": row.models,
                })
            })
        };
        let text = serde_json::to_string_pretty(&serde_json::json!({
            "spending": {"new": spend_of(&names[0]), "base": spend_of(&names[1])},
            "new": names[0],
            "base": names[1],
            "elo0": args.elo0,
            "elo1": args.elo1,
            "alpha": args.alpha,
            "beta": args.beta,
            "pairs": run.pairs_done,
            "wins": run.wdl.wins,
            "draws": run.wdl.draws,
            "losses": run.wdl.losses,
            "pentanomial": run.pentanomial.counts,
            "elo": elo,
            "llr": run.llr,
            "bounds": [lower, upper],
            "identical_pairs": run.identical_pairs(),
            "openings": match &settings.openings {
                OpeningSource::None => serde_json::Value::Null,
                OpeningSource::Random(length) => serde_json::json!({ "random": length }),
                OpeningSource::Book(book) => serde_json::json!({ "book": book.len() }),
            },
            "verdict": match run.verdict {
                Verdict::AcceptH1 => "H1",
                Verdict::AcceptH0 => "H0",
                Verdict::Continue => "none",
            },
        }))
        .context("cannot encode the verdict")?;
        stdout.print(&format!("{text}\n"))?;
    } else {
        let mut latencies: Vec<u64> = run
            .summaries
            .iter()
            .flat_map(|summary| {
                let side = summary.entrants.iter().position(|e| *e == 0).unwrap_or(0);
                summary.latencies_us[side].clone()
            })
            .collect();
        latencies.sort_unstable();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "SPRT {} vs {} · elo0 {} · elo1 {} · alpha {} · beta {}",
            names[0],
            names[1],
            minus(args.elo0.to_string()),
            minus(args.elo1.to_string()),
            args.alpha,
            args.beta
        );
        let _ = writeln!(
            out,
            "  pairs {} · games {} · W-D-L {}-{}-{} · ptnml(0-2) {:?}",
            run.pairs_done,
            run.wdl.games(),
            run.wdl.wins,
            run.wdl.draws,
            run.wdl.losses,
            run.pentanomial.counts
        );
        let _ = writeln!(
            out,
            "  Elo (95%) {} · {} latency p50 {}, p99 {}",
            elo_text(elo, run.wdl.score().unwrap_or(0.5), "every pair alike"),
            names[0],
            latency_text(percentile(&latencies, 50)),
            latency_text(percentile(&latencies, 99))
        );
        let _ = writeln!(
            out,
            "  LLR {} ({}, {})",
            number(run.llr, 2),
            number(lower, 2),
            number(upper, 2)
        );
        out.push_str(&model_lines(&spending.bots));
        let _ = writeln!(out, "{verdict_text}");
        stdout.print(&out)?;
    }
    if run.identical_pairs() {
        eprintln!(
            "warning: all {} pairs played the same two games: {} and {} play alike whatever the seed, so the test counted one pair {} times{}",
            run.pairs_done,
            names[0],
            names[1],
            run.pairs_done,
            match settings.openings {
                OpeningSource::None => "; --openings 4 starts each pair differently",
                _ => "",
            }
        );
    }
    Ok(match run.verdict {
        Verdict::AcceptH1 => Outcome::Done,
        Verdict::AcceptH0 => Outcome::Negative,
        Verdict::Continue if interrupted.load(Ordering::SeqCst) => Outcome::Interrupted,
        Verdict::Continue => Outcome::NoVerdict,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(elo: Option<f64>, low: Option<f64>, high: Option<f64>) -> Option<EloInterval> {
        Some(EloInterval { elo, low, high })
    }

    #[test]
    fn elo_texts_use_one_minus_sign_and_say_why_there_is_no_number() {
        let cases = [
            (
                interval(Some(107.5), Some(41.3), Some(173.7)),
                0.6,
                "+107.5 ± 66.2",
            ),
            (
                interval(Some(-42.0), Some(-80.0), Some(-4.0)),
                0.4,
                "−42.0 ± 38.0",
            ),
            (
                interval(Some(-511.5), None, Some(-402.3)),
                0.05,
                "−511.5 (≤ −402.3)",
            ),
            (
                interval(Some(511.5), Some(402.3), None),
                0.95,
                "+511.5 (≥ +402.3)",
            ),
            (
                interval(Some(0.0), Some(0.0), Some(0.0)),
                0.5,
                "— (all drawn)",
            ),
            (
                interval(Some(190.8), Some(190.8), Some(190.8)),
                0.75,
                "+190.8 (all drawn)",
            ),
            (interval(None, None, None), 1.0, "— (all won)"),
            (interval(None, None, None), 0.0, "— (all lost)"),
            (None, 0.0, "— (no games)"),
        ];
        for (elo, score, expected) in cases {
            let text = elo_text(elo, score, "all drawn");
            assert_eq!(text, expected);
            assert!(!text.contains('-') && !text.contains('∞'), "{text}");
        }
        assert_eq!(number(-2.944, 2), "−2.94");
        assert_eq!(number(-0.0, 1), "0.0");
        assert_eq!(signed(-0.0), "+0.0");
    }
}
