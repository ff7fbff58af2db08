//! `referee sprt NEW BASE --from-losses DIR`: "does my fix win the positions
//! I lost?". Finds BASE's lost matches among the replays of a folder, forks
//! each at the start of every round BASE lost, plays each such position once
//! with NEW and once with BASE in BASE's seat (the opponent its recorded bot),
//! and folds each position's two results into the SPRT as a pair.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use duel_referee::arena::stats::{Pentanomial, Sprt, Verdict, Wdl};
use duel_referee::{EndpointPolicy, ForkStart, MatchHost, MatchOptions};
use duel_replays::{ForkPoint, Replay, WinnerName, check_signature};
use duel_rules::Side;

use super::fork::{check_recorded, recorded_bot};
use super::source::{self, ResolvedBot};
use super::{Outcome, Stdout};
use crate::cli::SprtArgs;

/// One position to play: a lost match of BASE, BASE's side, and the fork
/// there with BASE's side swapped (checked once, played twice).
struct Position {
    file: PathBuf,
    side: Side,
    start: ForkStart,
}

impl Position {
    fn at(&self) -> ForkPoint {
        self.start.record().at
    }
}

/// How one position went for NEW and for BASE (in points doubled: 2 a win,
/// 1 a draw, 0 a loss).
struct Played {
    new_points: usize,
    base_points: usize,
}

pub fn sprt(args: SprtArgs) -> Result<Outcome> {
    let Some(dir) = args.from_losses.clone() else {
        bail!("--from-losses names no folder");
    };
    let test =
        Sprt::new(args.elo0, args.elo1, args.alpha, args.beta).map_err(anyhow::Error::msg)?;
    let new = source::resolve(&args.new).with_context(|| format!("NEW {}", args.new))?;
    let base = source::resolve(&args.base).with_context(|| format!("BASE {}", args.base))?;
    let _processes: Vec<_> = [&new, &base]
        .iter()
        .filter_map(|bot| bot.process.clone())
        .collect();
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    }
    let key = match &args.out {
        Some(_) => Some(super::replay::signing_key(&args.key)?),
        None => None,
    };
    let wall_clock = std::time::Duration::from_secs_f64(args.wall_clock);
    let runtime = super::runtime()?;
    let mut config = super::host_config(&args.model)?.playing_at_once(1);
    config.endpoints = EndpointPolicy::LOCAL;
    let inference = runtime.block_on(super::local_inference(&[
        new.spec.clone(),
        base.spec.clone(),
    ]))?;
    config.inference = inference.as_ref().map(|(link, _)| link.clone());
    let host = MatchHost::new(config);
    let options = MatchOptions::new(duel_rules::WeightClass::Middle).wall_clock(wall_clock);
    let base_digest = runtime
        .block_on(host.check(&base.fighter(), options.clone()))
        .with_context(|| format!("BASE {}", args.base))?
        .digest;
    let (positions, scanned) = lost_positions(&dir, &base_digest)?;
    if positions.is_empty() {
        bail!(
            "no lost match of BASE ({}, {base_digest}) among the {scanned} replays in {}",
            args.base,
            dir.display()
        );
    }
    let mut pentanomial = Pentanomial::default();
    let mut wdl = Wdl::default();
    let mut verdict = Verdict::Continue;
    let mut llr = 0.0;
    let mut rows = Vec::new();
    let mut stdout = Stdout::new();
    for (index, position) in positions.iter().enumerate() {
        let played = runtime.block_on(play_position(
            &host,
            position,
            [&new, &base],
            wall_clock,
            key.as_ref(),
            args.out.as_deref(),
            index,
        ))?;
        // NEW's points in its game, and what BASE's game left to NEW.
        pentanomial.add_pair(played.new_points + (2 - played.base_points));
        wdl.add(Wdl::of_points_doubled(played.new_points));
        let line = format!(
            "{} {}: NEW {}, BASE {}",
            position
                .file
                .file_name()
                .map_or_else(String::new, |name| name.to_string_lossy().into_owned()),
            position.at(),
            result_word(played.new_points),
            result_word(played.base_points)
        );
        if !args.json {
            stdout.print(&format!("{}\n", crate::render::safe(&line)))?;
        }
        rows.push((position, played));
        llr = pentanomial.llr(args.elo0, args.elo1);
        verdict = test.verdict(llr);
        if verdict != Verdict::Continue {
            break;
        }
    }
    drop(inference);
    report(
        &args,
        &rows,
        &pentanomial,
        &wdl,
        llr,
        verdict,
        test,
        scanned,
    )?;
    Ok(match verdict {
        Verdict::AcceptH1 => Outcome::Done,
        Verdict::AcceptH0 => Outcome::Negative,
        Verdict::Continue => Outcome::NoVerdict,
    })
}

/// The observer of a position's games: nothing is shown while they play.
fn ignore_exchange(_: &duel_referee::MatchRecorder, _: &duel_rules::ExchangeStep) {}

fn result_word(points_doubled: usize) -> &'static str {
    match points_doubled {
        2 => "wins",
        1 => "draws",
        _ => "loses",
    }
}

/// Each replay of `dir` (its `.json` files, by name) that BASE lost, and the
/// start of each round it lost there: the positions to play. A file that is
/// not a replay, whose signature fails, or in which BASE plays both sides is
/// skipped with a line on stderr. Returns the positions and the number of
/// replays read.
fn lost_positions(dir: &Path, base_digest: &str) -> Result<(Vec<Position>, usize)> {
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read the folder of replays {}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "json") && path.is_file())
        .collect();
    files.sort();
    let mut positions = Vec::new();
    let mut scanned = 0;
    for file in files {
        let skip = |why: String| {
            eprintln!(
                "referee: skipping {}: {}",
                file.display(),
                crate::render::safe(&why)
            );
        };
        let bytes = match super::replay::load(&file.display().to_string()) {
            Ok(bytes) => bytes,
            Err(error) => {
                skip(format!("{error:#}"));
                continue;
            }
        };
        match check_signature(&bytes, None) {
            Ok(Ok(_)) => {}
            Ok(Err(failure)) => {
                skip(format!("its signature fails ({failure})"));
                continue;
            }
            Err(error) => {
                skip(error.to_string());
                continue;
            }
        }
        let replay = match Replay::from_slice(&bytes) {
            Ok(replay) => replay,
            Err(error) => {
                skip(error.to_string());
                continue;
            }
        };
        scanned += 1;
        let sides: Vec<Side> = Side::BOTH
            .into_iter()
            .filter(|side| &*replay.fighters[side.index()].digest == base_digest)
            .collect();
        let side = match sides.as_slice() {
            [] => continue,
            [side] => *side,
            _ => {
                skip("BASE plays both sides".to_owned());
                continue;
            }
        };
        let opponent = match side {
            Side::A => WinnerName::B,
            Side::B => WinnerName::A,
        };
        if replay.result.winner != opponent {
            continue;
        }
        for round in &replay.rounds {
            if round.result.winner != opponent {
                continue;
            }
            let at = ForkPoint {
                round: round.number,
                exchange: 1,
            };
            match ForkStart::new(replay.clone(), at, &[side]) {
                Ok(start) => positions.push(Position {
                    file: file.clone(),
                    side,
                    start,
                }),
                Err(error) => skip(format!("cannot fork it at {at}: {error}")),
            }
        }
    }
    Ok((positions, scanned))
}

/// Plays one position twice: NEW in BASE's seat, then BASE again; the
/// opponent is its recorded bot both times.
async fn play_position(
    host: &MatchHost,
    position: &Position,
    [new, base]: [&ResolvedBot; 2],
    wall_clock: std::time::Duration,
    key: Option<&duel_replays::SigningKey>,
    out: Option<&Path>,
    index: usize,
) -> Result<Played> {
    let mut points = [0usize; 2];
    for (slot, (bot, label)) in [(new, "new"), (base, "base")].into_iter().enumerate() {
        let where_ = || format!("{} at {}", position.file.display(), position.at());
        let start = position.start.clone();
        let opponent = recorded_bot(start.parent(), position.side.other()).with_context(where_)?;
        let mut fighters = [bot.fighter(), bot.fighter()];
        fighters[position.side.other().index()] = opponent.fighter();
        let session = host
            .prepare(fighters, start.options(wall_clock))
            .await
            .with_context(where_)?;
        if let Some(fork) = &session.config().fork {
            check_recorded(fork, session.fighters()).with_context(where_)?;
        }
        let mut unobserved = ignore_exchange;
        let mut played = session.play(&mut unobserved).await;
        let winner = played.replay.result.winner;
        points[slot] = match duel_rules::Winner::from(winner).side() {
            None => 1,
            Some(side) if side == position.side => 2,
            Some(_) => 0,
        };
        if let (Some(key), Some(out)) = (key, out) {
            duel_replays::sign(&mut played.replay, key)?;
            let path = out.join(format!("{index:04}-{}-{label}.json", position.at()));
            duel_referee::ReplaySinks::new()
                .write_to(path)
                .keep(&mut played.replay)
                .await?;
        }
    }
    Ok(Played {
        new_points: points[0],
        base_points: points[1],
    })
}

#[allow(clippy::too_many_arguments)]
fn report(
    args: &SprtArgs,
    rows: &[(&Position, Played)],
    pentanomial: &Pentanomial,
    wdl: &Wdl,
    llr: f64,
    verdict: Verdict,
    test: Sprt,
    scanned: usize,
) -> Result<()> {
    let (lower, upper) = test.bounds();
    let new_won = rows.iter().filter(|(_, p)| p.new_points == 2).count();
    let base_won = rows.iter().filter(|(_, p)| p.base_points == 2).count();
    let elo = pentanomial
        .elo()
        .map(duel_referee::arena::tournament::EloInterval::from);
    let verdict_name = match verdict {
        Verdict::AcceptH1 => "H1",
        Verdict::AcceptH0 => "H0",
        Verdict::Continue => "none",
    };
    let mut stdout = Stdout::new();
    if args.json {
        let positions: Vec<serde_json::Value> = rows
            .iter()
            .map(|(position, played)| {
                serde_json::json!({
                    "replay": position.file.display().to_string(),
                    "match_id": position.start.parent().match_id,
                    "side": position.side.name(),
                    "at": position.at().to_string(),
                    "new": result_word(played.new_points),
                    "base": result_word(played.base_points),
                })
            })
            .collect();
        let text = serde_json::to_string_pretty(&serde_json::json!({
            "new": args.new,
            "base": args.base,
            "from_losses": args.from_losses,
            "replays": scanned,
            "positions": positions,
            "new_won": new_won,
            "base_won": base_won,
            "pentanomial": pentanomial.counts,
            "elo": elo,
            "llr": llr,
            "bounds": [lower, upper],
            "verdict": verdict_name,
        }))
        .context("cannot encode the verdict")?;
        return stdout.print(&format!("{text}\n"));
    }
    let score = wdl.score().unwrap_or(0.5);
    let verdict_text = match verdict {
        Verdict::AcceptH1 => format!(
            "H1 accepted: on BASE's lost positions, NEW is at least {} Elo stronger",
            super::arena::minus(format!("{:+}", args.elo1))
        ),
        Verdict::AcceptH0 => format!(
            "H0 accepted: on BASE's lost positions, NEW is not {} Elo stronger",
            super::arena::minus(format!("{:+}", args.elo1))
        ),
        Verdict::Continue => format!(
            "no verdict: the {} positions were not enough to decide",
            rows.len()
        ),
    };
    stdout.print(&format!(
        "positions {} (from {scanned} replays) · NEW won {new_won}, BASE won {base_won} again · ptnml(0-2) {:?}\n  Elo (95%) {} · LLR {} ({}, {})\n{verdict_text}\n",
        rows.len(),
        pentanomial.counts,
        super::arena::elo_text(elo, score, "every position alike"),
        super::arena::number(llr, 2),
        super::arena::number(lower, 2),
        super::arena::number(upper, 2),
    ))
}
