//! A settled match's transcript as one reader may see it before the reveal:
//! an owner, the decisions of its bots in the match (of `bot` alone when
//! named); an operator, every decision (core::reveal::readable_sides). The
//! API (`MatchTranscript`) and the match page's owner form both read it here.

use duel_ladder_core::auth::User;
use duel_ladder_core::model::Match;
use duel_ladder_core::reveal::readable_sides;
use duel_replays::store::ReplayStore;
use duel_replays::transcript::Transcript;
use duel_rules::Side;

use crate::error::{LadderError, Result};

/// `game`'s transcript from `replays`, cut to what `caller` may read.
pub async fn readable_transcript(
    replays: &ReplayStore,
    game: &Match,
    caller: &User,
    bot: Option<&str>,
) -> Result<Transcript> {
    let id = &game.id;
    let [a, b] = &game.sides;
    let mut sides = readable_sides(caller, [&a.owner_id, &b.owner_id]);
    if sides.is_empty() {
        return Err(LadderError::PermissionDenied(format!(
            "match {id}: {} owns neither of its bots, and only their owners read its transcript \
             before it is revealed",
            caller.name
        )));
    }
    if let Some(bot) = bot {
        let Some(side) = [Side::A, Side::B]
            .into_iter()
            .find(|side| game.sides[side.index()].bot_name == bot)
        else {
            return Err(LadderError::Invalid(format!(
                "bot {bot} did not play match {id}"
            )));
        };
        if !sides.contains(&side) {
            return Err(LadderError::PermissionDenied(format!(
                "match {id}: bot {bot} is not yours"
            )));
        }
        sides = vec![side];
    }
    let bytes = replays.get_transcript(id).await?.ok_or_else(|| {
        LadderError::NotFound(format!(
            "the transcript of match {id}: no fighter called a model"
        ))
    })?;
    let mut transcript = Transcript::from_slice(&bytes)?;
    if let [side] = sides.as_slice() {
        transcript = transcript.only(*side);
    }
    if transcript.decisions.is_empty() {
        return Err(LadderError::NotFound(format!(
            "the transcript of match {id}: {} called no model",
            bot.unwrap_or("your bot")
        )));
    }
    Ok(transcript)
}
