//! Ranked matches' transcripts: as one reader may see them (before the
//! reveal an owner, the decisions of its bots in the match, of `bot` alone
//! when named; an operator, every decision; after it, everyone every
//! decision: core::reveal::readable_sides, with [`Reads::transcript_revealed`]),
//! which the API (`MatchTranscript`) and the site both read here; and kept within limits (`TranscriptLimits`): each side's part
//! is a row of `match_transcripts` counted against its owner's quota, past
//! which that owner's oldest parts are cut out of their transcripts, and
//! parts past the retention period are cut hourly.

use duel_ladder_core::auth::User;
use duel_ladder_core::limits::TRANSCRIPT_PRUNE_BATCH;

use crate::limits::QUOTA_PAGE_ROWS;
use duel_ladder_core::model::Match;
use duel_ladder_core::reveal::readable_sides;
use duel_replays::store::ReplayStore;
use duel_replays::transcript::{FighterName, Transcript, TranscriptDecision};
use duel_rules::Side;
use sqlx::AnyConnection;
use sqlx::any::AnyRow;

use crate::error::{LadderError, Result};
use crate::seasons::season_on;
use crate::{Reads, Store, get};
use duel_ladder_core::model::MatchState;
use duel_ladder_core::reveal::RevealPolicy;

impl Reads {
    /// Whether `game`'s transcript is public at `now_ms` under `policy`: a
    /// settled match whose season and settlement time the policy reveals
    /// (core::reveal::RevealPolicy::revealed).
    pub async fn transcript_revealed(
        &self,
        policy: RevealPolicy,
        game: &Match,
        now_ms: i64,
    ) -> Result<bool> {
        if game.state != MatchState::Settled {
            return Ok(false);
        }
        let season = season_on(&mut *self.reader().await?, game.season_id).await?;
        Ok(policy.revealed(game.finished_ms, season.ended_ms, now_ms))
    }
}

/// `game`'s transcript from `replays`, cut to what `caller` may read, whether
/// it is `revealed` ([`Reads::transcript_revealed`]) or not.
pub async fn readable_transcript(
    replays: &ReplayStore,
    game: &Match,
    caller: &User,
    bot: Option<&str>,
    revealed: bool,
) -> Result<Transcript> {
    let id = &game.id;
    let [a, b] = &game.sides;
    let mut sides = readable_sides(Some(caller), [&a.owner_id, &b.owner_id], revealed);
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

/// One side's part of a match's transcript, as `match_transcripts` keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TranscriptPart {
    pub match_id: String,
    pub side: Side,
}

impl Store {
    /// Records the transcript just kept in `replays` for `game`: one row per
    /// side that called a model (replacing an earlier run's), counted against
    /// its owner's quota. Past the quota that owner's oldest parts go first;
    /// a part larger than the whole quota is not kept. Dropped parts are cut
    /// out of their stored transcripts (the other side's part stays). Returns
    /// the parts dropped.
    pub async fn keep_transcript(
        &self,
        replays: &ReplayStore,
        game: &Match,
        transcript: &Transcript,
    ) -> Result<Vec<TranscriptPart>> {
        let now = self.clock().now_ms();
        let quota = i64::try_from(self.transcript_limits.max_bytes_per_owner).unwrap_or(i64::MAX);
        let mut dropped = Vec::new();
        let mut owners = Vec::new();
        {
            let mut conn = self.writer().await?;
            sqlx::query("DELETE FROM match_transcripts WHERE match_id = $1")
                .bind(game.id.clone())
                .execute(&mut *conn)
                .await?;
            for side in [Side::A, Side::B] {
                if transcript.of(side).next().is_none() {
                    continue;
                }
                let size = part_size_bytes(transcript, side);
                let owner = &game.sides[side.index()].owner_id;
                if size > quota {
                    dropped.push(TranscriptPart {
                        match_id: game.id.clone(),
                        side,
                    });
                    continue;
                }
                sqlx::query(
                    "INSERT INTO match_transcripts (match_id, side, owner_id, kept_ms, size_bytes) \
                     VALUES ($1, $2, $3, $4, $5)",
                )
                .bind(game.id.clone())
                .bind(side.name())
                .bind(owner.clone())
                .bind(now)
                .bind(size)
                .execute(&mut *conn)
                .await?;
                owners.push(owner.clone());
            }
            for owner in &owners {
                dropped.extend(oldest_over_quota(&mut conn, owner, quota).await?);
            }
        }
        self.drop_transcript_parts(replays, &dropped).await?;
        Ok(dropped)
    }

    /// Drops the transcript parts kept longer than the retention period
    /// (at most [`TRANSCRIPT_PRUNE_BATCH`] a call); how many went.
    pub async fn prune_transcripts(&self, replays: &ReplayStore) -> Result<u64> {
        let cutoff = self.transcript_limits.cutoff_ms(self.clock().now_ms());
        let rows = sqlx::query(
            "SELECT match_id, side FROM match_transcripts WHERE kept_ms < $1 \
             ORDER BY kept_ms, match_id, side LIMIT $2",
        )
        .bind(cutoff)
        .bind(TRANSCRIPT_PRUNE_BATCH)
        .fetch_all(&mut *self.writer().await?)
        .await?;
        let parts = rows.iter().map(part_of_row).collect::<Result<Vec<_>>>()?;
        self.drop_transcript_parts(replays, &parts).await?;
        Ok(parts.len() as u64)
    }

    /// Bytes of transcripts kept for `owner_id`'s bots.
    pub async fn transcript_bytes(&self, owner_id: &str) -> Result<i64> {
        owner_transcript_bytes(&mut *self.writer().await?, owner_id).await
    }

    /// Cuts `parts` out of their matches' stored transcripts (a transcript
    /// left with no decision is dropped), then forgets their rows. In that
    /// order, so a pass cut short is finished by the next one.
    async fn drop_transcript_parts(
        &self,
        replays: &ReplayStore,
        parts: &[TranscriptPart],
    ) -> Result<()> {
        let mut matches: Vec<&str> = parts.iter().map(|part| part.match_id.as_str()).collect();
        matches.sort_unstable();
        matches.dedup();
        for match_id in matches {
            let Some(bytes) = replays.get_transcript(match_id).await? else {
                continue;
            };
            let mut transcript = Transcript::from_slice(&bytes)?;
            let before = transcript.decisions.len();
            transcript.decisions.retain(|decision| {
                !parts.iter().any(|part| {
                    part.match_id == match_id && FighterName::from(part.side) == decision.fighter
                })
            });
            if transcript.decisions.len() != before {
                replays.replace_transcript(&transcript).await?;
            }
        }
        let mut conn = self.writer().await?;
        for part in parts {
            sqlx::query("DELETE FROM match_transcripts WHERE match_id = $1 AND side = $2")
                .bind(part.match_id.clone())
                .bind(part.side.name())
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }
}

/// Bytes of `side`'s part of `transcript`, as JSON.
fn part_size_bytes(transcript: &Transcript, side: Side) -> i64 {
    let part: Vec<&TranscriptDecision> = transcript.of(side).collect();
    let size = serde_json::to_vec(&part).map_or(0, |json| json.len());
    i64::try_from(size).unwrap_or(i64::MAX)
}

/// `owner_id`'s oldest parts that must go for the rest to fit in `quota`:
/// one sum, then the oldest rows a page at a time only when over it.
async fn oldest_over_quota(
    conn: &mut AnyConnection,
    owner_id: &str,
    quota: i64,
) -> Result<Vec<TranscriptPart>> {
    let total = owner_transcript_bytes(conn, owner_id).await?;
    let mut over = total.saturating_sub(quota);
    let mut parts = Vec::new();
    let mut offset: i64 = 0;
    while over > 0 {
        let rows = sqlx::query(
            "SELECT match_id, side, size_bytes FROM match_transcripts WHERE owner_id = $1 \
             ORDER BY kept_ms, match_id, side LIMIT $2 OFFSET $3",
        )
        .bind(owner_id.to_owned())
        .bind(QUOTA_PAGE_ROWS)
        .bind(offset)
        .fetch_all(&mut *conn)
        .await?;
        if rows.is_empty() {
            break;
        }
        offset += QUOTA_PAGE_ROWS;
        for row in &rows {
            if over <= 0 {
                break;
            }
            over -= get::<i64>(row, "size_bytes")?;
            parts.push(part_of_row(row)?);
        }
    }
    Ok(parts)
}

async fn owner_transcript_bytes(conn: &mut AnyConnection, owner_id: &str) -> Result<i64> {
    let row = sqlx::query(
        "SELECT CAST(COALESCE(SUM(size_bytes), 0) AS BIGINT) AS bytes \
         FROM match_transcripts WHERE owner_id = $1",
    )
    .bind(owner_id.to_owned())
    .fetch_one(&mut *conn)
    .await?;
    get(&row, "bytes")
}

fn part_of_row(row: &AnyRow) -> Result<TranscriptPart> {
    let side: String = get(row, "side")?;
    let side = match side.as_str() {
        "a" => Side::A,
        "b" => Side::B,
        other => return Err(LadderError::corrupt(format!("transcript side {other:?}"))),
    };
    Ok(TranscriptPart {
        match_id: get(row, "match_id")?,
        side,
    })
}
