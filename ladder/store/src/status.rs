//! The ladder at a glance (`ladder status`): bots per class and how they
//! play, matches of the season by state, and each class's last pairing wave
//! (recorded by the wave itself in `waves`).

use duel_rules::WeightClass;

use super::{Store, WaveReport, get};
use crate::error::Result;
use duel_ladder_core::model::{ClassStatus, LadderStatus, WaveRecord};

impl Store {
    /// Records a class's last wave (one row per class, replaced each wave).
    pub async fn record_wave(
        &self,
        class: WeightClass,
        season_id: i64,
        report: &WaveReport,
    ) -> Result<()> {
        sqlx::query(
            "INSERT INTO waves (class, season_id, at_ms, pool, pairs, duration_ms) VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (class) DO UPDATE SET season_id = $2, at_ms = $3, pool = $4, pairs = $5, duration_ms = $6",
        )
        .bind(class.name())
        .bind(season_id)
        .bind(report.at_ms)
        .bind(i64::try_from(report.waiting).unwrap_or(i64::MAX))
        .bind(i64::try_from(report.matches.len()).unwrap_or(i64::MAX))
        .bind(i64::try_from(report.duration_ms).unwrap_or(i64::MAX))
        .execute(&mut *self.writer().await?)
        .await?;
        Ok(())
    }

    /// Every class's counts; matches are those of the running season (else
    /// of the one that ended last).
    pub async fn status(&self) -> Result<LadderStatus> {
        let (season, last_ended) = {
            let mut conn = self.writer().await?;
            (
                crate::rows::active_season_on(&mut conn).await?,
                crate::seasons::last_ended_season_on(&mut conn).await?,
            )
        };
        let season_id = season
            .as_ref()
            .or(last_ended.as_ref())
            .map_or(0, |season| season.id);
        let mut classes = Vec::with_capacity(WeightClass::ALL.len());
        for class in WeightClass::ALL {
            let bots = sqlx::query(
                "SELECT COUNT(*) AS bots, \
                 COALESCE(SUM(CASE WHEN active_stake IS NOT NULL AND paused_reason IS NULL THEN 1 ELSE 0 END), 0) AS active, \
                 COALESCE(SUM(CASE WHEN active_stake IS NOT NULL AND paused_reason IS NOT NULL THEN 1 ELSE 0 END), 0) AS paused \
                 FROM bots WHERE class = $1",
            )
            .bind(class.name())
            .fetch_one(self.read_pool())
            .await?;
            let queued = sqlx::query("SELECT COUNT(*) AS n FROM queue WHERE class = $1")
                .bind(class.name())
                .fetch_one(self.read_pool())
                .await?;
            let states = sqlx::query(
                "SELECT state, COUNT(*) AS n FROM matches WHERE class = $1 AND season_id = $2 GROUP BY state",
            )
            .bind(class.name())
            .bind(season_id)
            .fetch_all(self.read_pool())
            .await?;
            let mut by_state = [0_i64; 4];
            for row in &states {
                let slot = match get::<String>(row, "state")?.as_str() {
                    "queued" => 0,
                    "running" => 1,
                    "settled" => 2,
                    _ => 3,
                };
                by_state[slot] += get::<i64>(row, "n")?;
            }
            let wave = sqlx::query("SELECT * FROM waves WHERE class = $1")
                .bind(class.name())
                .fetch_optional(self.read_pool())
                .await?;
            let last_wave = wave
                .map(|row| {
                    Ok::<_, crate::error::LadderError>(WaveRecord {
                        season_id: get(&row, "season_id")?,
                        at_ms: get(&row, "at_ms")?,
                        pool: get(&row, "pool")?,
                        pairs: get(&row, "pairs")?,
                        duration_ms: get(&row, "duration_ms")?,
                    })
                })
                .transpose()?;
            classes.push(ClassStatus {
                class,
                bots: get(&bots, "bots")?,
                queued: get(&queued, "n")?,
                active: get(&bots, "active")?,
                paused: get(&bots, "paused")?,
                accepted: by_state[0],
                running: by_state[1],
                settled: by_state[2],
                voided: by_state[3],
                last_wave,
            });
        }
        Ok(LadderStatus {
            season,
            last_ended,
            classes,
        })
    }
}
