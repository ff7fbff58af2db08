//! `referee local --from REPLAY[#rNeM] --swap SIDE=BOT`: reads the parent
//! replay (file or URL, its signature checked), parses the fork point and the
//! swaps, and resolves each side's bot: the swapped-in one, or the recorded
//! one started again from its spec and checked against the recorded digest.

use anyhow::{Context, Result, bail};
use duel_referee::ForkStart;
use duel_replays::{ForkPoint, Replay, check_signature};
use duel_rules::Side;

use super::source::{self, ResolvedBot};

/// A fork ready to prepare: the checked start and both sides' bots.
pub struct ForkPlan {
    pub start: ForkStart,
    pub bots: [ResolvedBot; 2],
}

impl ForkPlan {
    pub fn load(from: &str, swaps: &[String]) -> Result<ForkPlan> {
        let (source, at) = split_fork_point(from)?;
        let bytes = super::replay::load(source)?;
        if let Err(failure) = check_signature(&bytes, None)? {
            bail!(
                "replay {source}: its signature fails ({failure}); a fork is made only of a replay that verifies"
            );
        }
        let parent = Replay::from_slice(&bytes).with_context(|| format!("replay {source}"))?;
        let swapped = parse_swaps(swaps)?;
        let sides: Vec<Side> = swapped.iter().map(|(side, _)| *side).collect();
        let start = ForkStart::new(parent, at, &sides)
            .with_context(|| format!("cannot fork {source} at {at}"))?;
        let bot = |side: Side| match swapped.iter().find(|(swapped, _)| *swapped == side) {
            Some((_, spec)) => {
                source::resolve(spec).with_context(|| format!("--swap {}={spec}", side.name()))
            }
            None => recorded_bot(start.parent(), side),
        };
        let bots = [bot(Side::A)?, bot(Side::B)?];
        Ok(ForkPlan { start, bots })
    }
}

/// Checks that each side of `fork` that was not swapped is the recorded bot:
/// the same digest (the same component, or the same spec).
pub fn check_recorded(fork: &ForkStart, fighters: &[duel_replays::FighterInfo; 2]) -> Result<()> {
    let parent = fork.parent();
    for side in Side::BOTH {
        if fork.record().swapped(side) {
            continue;
        }
        let recorded = &parent.fighters[side.index()];
        let here = &fighters[side.index()];
        if here.digest != recorded.digest {
            bail!(
                "fighter {} here is {} ({}), but the replay recorded {}: the recorded bot changed since; swap it with --swap {}=BOT",
                side.name(),
                recorded.spec.as_deref().unwrap_or(&recorded.name),
                here.digest,
                recorded.digest,
                side.name()
            );
        }
    }
    Ok(())
}

/// `REPLAY#rNeM` into the replay's path or URL and the fork point (the start
/// of the match without `#`). A path that exists as given is taken whole,
/// even with a `#` in its name.
fn split_fork_point(from: &str) -> Result<(&str, ForkPoint)> {
    if std::path::Path::new(from).exists() {
        return Ok((from, ForkPoint::START));
    }
    match from.rsplit_once('#') {
        Some((source, point)) => Ok((source, ForkPoint::parse(point)?)),
        None => Ok((from, ForkPoint::START)),
    }
}

/// `a=BOT` and `b=BOT`, each side at most once.
fn parse_swaps(swaps: &[String]) -> Result<Vec<(Side, String)>> {
    let mut parsed: Vec<(Side, String)> = Vec::new();
    for swap in swaps {
        let Some((side, spec)) = swap.split_once('=') else {
            bail!("--swap {swap:?} is not SIDE=BOT (a=bots/fixed.wasm)");
        };
        let side = match side.trim() {
            "a" | "A" => Side::A,
            "b" | "B" => Side::B,
            other => bail!("--swap {swap:?}: side {other:?} is neither a nor b"),
        };
        if spec.trim().is_empty() {
            bail!("--swap {swap:?} names no bot");
        }
        if parsed.iter().any(|(known, _)| *known == side) {
            bail!("--swap names side {} twice", side.name());
        }
        parsed.push((side, spec.trim().to_owned()));
    }
    Ok(parsed)
}

/// The recorded bot of `side`, from the spec the replay recorded, shown in
/// the fork as the replay showed it.
pub(super) fn recorded_bot(parent: &Replay, side: Side) -> Result<ResolvedBot> {
    let fighter = &parent.fighters[side.index()];
    let spec = fighter.spec.as_deref().unwrap_or(&fighter.name);
    let mut bot = source::resolve(spec).with_context(|| {
        format!(
            "fighter {} was recorded as {spec:?}, which cannot be started here; run from where it is, or give a bot for it with --swap {}=BOT",
            side.name(),
            side.name()
        )
    })?;
    bot.shown = Some((fighter.name.to_string(), spec.to_owned()));
    Ok(bot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swaps_parse_and_refuse_clearly() {
        let swaps =
            parse_swaps(&["a=builtin:random".to_owned(), "B = x.wasm".to_owned()]).expect("parses");
        assert_eq!(
            swaps,
            [
                (Side::A, "builtin:random".to_owned()),
                (Side::B, "x.wasm".to_owned())
            ]
        );
        for (bad, says) in [
            ("builtin:random", "is not SIDE=BOT"),
            ("c=builtin:random", "neither a nor b"),
            ("a=", "names no bot"),
        ] {
            let error = parse_swaps(&[bad.to_owned()]).expect_err(bad).to_string();
            assert!(error.contains(says), "{bad}: {error}");
        }
        let twice = parse_swaps(&["a=builtin:random".to_owned(), "a=builtin:block".to_owned()])
            .expect_err("twice")
            .to_string();
        assert!(twice.contains("twice"), "{twice}");
    }

    #[test]
    fn the_fork_point_follows_the_last_hash() {
        let (source, at) = split_fork_point("no-such-dir/match.json#r2e7").expect("splits");
        assert_eq!(
            (source, at.to_string().as_str()),
            ("no-such-dir/match.json", "r2e7")
        );
        let (source, at) = split_fork_point("no-such-dir/match.json").expect("whole");
        assert_eq!((source, at), ("no-such-dir/match.json", ForkPoint::START));
        let error = split_fork_point("no-such-dir/match.json#r2").expect_err("bad point");
        assert!(error.to_string().contains("rNeM"), "{error}");
    }
}
