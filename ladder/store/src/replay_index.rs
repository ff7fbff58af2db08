//! The listing of the ladder's public replays (`GET /replays`), answered from
//! its settled matches: the match row settled with its replay's location is the
//! index entry, written in the settlement's own transaction, so the replay
//! store keeps one object per replay and no index files.

use duel_replays::store::{IndexedFighter, ListPage, ListQuery, ReplayIndex, ReplayMeta};
use duel_replays::{ClassName, ReplayError, WinnerName};
use futures::future::BoxFuture;
use sqlx::any::AnyRow;

use super::{Reads, get};
use crate::error::{LadderError, Result};
use crate::params::Params;
use duel_ladder_core::model::class_from_name;

const REPLAY_LISTING: &str = "SELECT m.id, m.accepted_ms, m.class, m.winner, s.name AS season_name, \
     ba.name AS name_a, va.digest AS digest_a, bb.name AS name_b, vb.digest AS digest_b \
     FROM matches m JOIN seasons s ON s.id = m.season_id \
     JOIN bots ba ON ba.id = m.bot_a JOIN bots bb ON bb.id = m.bot_b \
     JOIN bot_versions va ON va.bot_id = m.bot_a AND va.version = m.version_a \
     JOIN bot_versions vb ON vb.bot_id = m.bot_b AND vb.version = m.version_b";

/// Where a listing resumes: after (accepted_ms, id), newest first.
fn parse_cursor(cursor: &str) -> Result<(i64, String)> {
    let bad = || LadderError::Invalid(format!("cursor {cursor:?} is not one this service gave"));
    let (accepted, id) = cursor.split_once('_').ok_or_else(bad)?;
    Ok((accepted.parse().map_err(|_| bad())?, id.to_owned()))
}

fn meta(row: &AnyRow) -> Result<ReplayMeta> {
    let accepted_ms: i64 = get(row, "accepted_ms")?;
    let winner = match get::<Option<String>>(row, "winner")?.as_deref() {
        Some("a") => WinnerName::A,
        Some("b") => WinnerName::B,
        _ => WinnerName::Draw,
    };
    Ok(ReplayMeta {
        id: get(row, "id")?,
        accepted_at: duel_ladder_core::model::rfc3339(accepted_ms)?,
        class: ClassName::from(class_from_name(&get::<String>(row, "class")?)?),
        season: Some(get(row, "season_name")?),
        fighters: [
            IndexedFighter {
                name: get(row, "name_a")?,
                digest: get(row, "digest_a")?,
            },
            IndexedFighter {
                name: get(row, "name_b")?,
                digest: get(row, "digest_b")?,
            },
        ],
        winner,
        // Every ranked replay is signed before it is published.
        signed: true,
    })
}

impl Reads {
    /// A page of published replays, newest first (by acceptance), filtered
    /// as `GET /replays` is: `bot` is either fighter's name or version digest.
    pub async fn list_replays(&self, query: &ListQuery) -> Result<ListPage> {
        let (accepted_ms, id) = match &query.cursor {
            Some(cursor) => parse_cursor(cursor)?,
            None => (i64::MAX, String::new()),
        };
        let limit = i64::try_from(query.limit.saturating_add(1)).unwrap_or(i64::MAX);
        // Only the filters given go into the SQL (crate::params); an empty
        // value is no filter, as it always was.
        let mut params = Params::after(3);
        let mut sql = format!(
            "{REPLAY_LISTING} WHERE m.state = 'settled' AND m.replay_path IS NOT NULL \
             AND (m.accepted_ms, m.id) < ($1, $2)"
        );
        if let Some(season) = query.season.as_deref().filter(|season| !season.is_empty()) {
            sql.push_str(&format!(" AND s.name = {}", params.placeholder(season)));
        }
        if let Some(class) = query.class {
            let class = duel_rules::WeightClass::from(class).name();
            sql.push_str(&format!(" AND m.class = {}", params.placeholder(class)));
        }
        if let Some(bot) = query.bot.as_deref().filter(|bot| !bot.is_empty()) {
            let bot = params.placeholder(bot);
            sql.push_str(&format!(
                " AND (ba.name = {bot} OR bb.name = {bot} OR va.digest = {bot} OR vb.digest = {bot})"
            ));
        }
        sql.push_str(" ORDER BY m.accepted_ms DESC, m.id DESC LIMIT $3");
        let rows = params
            .bind(
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(accepted_ms)
                    .bind(id)
                    .bind(limit),
            )
            .fetch_all(self.store.read_pool())
            .await?;
        let more = rows.len() > query.limit;
        let mut replays = Vec::with_capacity(rows.len().min(query.limit));
        let mut next_cursor = None;
        for row in rows.iter().take(query.limit) {
            replays.push(meta(row)?);
            if more {
                next_cursor = Some(format!(
                    "{}_{}",
                    get::<i64>(row, "accepted_ms")?,
                    get::<String>(row, "id")?
                ));
            }
        }
        Ok(ListPage {
            replays,
            next_cursor,
        })
    }
}

/// `GET /replays` of `ladder serve`, from the database.
#[derive(Clone, Debug)]
pub struct LadderReplayIndex(pub Reads);

impl ReplayIndex for LadderReplayIndex {
    fn list<'a>(&'a self, query: &'a ListQuery) -> BoxFuture<'a, Result<ListPage, ReplayError>> {
        Box::pin(async move {
            self.0
                .list_replays(query)
                .await
                .map_err(|error| match error {
                    LadderError::Invalid(message) => ReplayError::BadQuery(message),
                    other => ReplayError::Store(other.to_string()),
                })
        })
    }
}
