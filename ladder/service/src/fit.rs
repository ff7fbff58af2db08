//! The season fit behind the standings, as the wave timer runs it: solved
//! without locks and written if no rated game settled meanwhile, so
//! settlements go on while a large season is solved; a fit gone stale is
//! solved again, [`FIT_UNLOCKED_ATTEMPTS`] times at most, then under the
//! class's locks, so a busy class is still fitted (docs/RULES.md,
//! "Standings: one fit of the season").

use duel_rules::WeightClass;

use crate::error::Result;
use crate::limits::FIT_UNLOCKED_ATTEMPTS;
use crate::store::{FitReport, Store};

/// Fits the running season's ratings of `class` from all its rated games.
/// The wave timer runs it; ending a season fits every class itself, before
/// the standings freeze. FAILED_PRECONDITION when no season runs.
pub async fn fit_season(store: &Store, class: WeightClass) -> Result<FitReport> {
    let mut stale = 0;
    while stale < FIT_UNLOCKED_ATTEMPTS {
        let solved = store.solve_season_fit(class).await?;
        if let Some(report) = store.write_season_fit(&solved).await? {
            return Ok(FitReport { stale, ..report });
        }
        stale += 1;
    }
    let report = store.fit_season_locked(class).await?;
    Ok(FitReport { stale, ..report })
}
