//! What each page shows, read from the store: the JSON twins serialize these
//! as they are and the templates render them, so the two never disagree.

use duel_rules::WeightClass;
use serde::Serialize;

use crate::limits::HOME_TOP_ROWS;
use duel_ladder_core::model::{Bot, BotVersion, MatchState};
use duel_ladder_store::Reads;
use duel_ladder_store::error::Result;
use duel_ladder_store::site::{
    ClassTable, HeadToHead, HistoryPoint, MatchCursor, MatchLine, OpponentLine, Page, Record,
    SeasonLine, StandingCursor, play_text,
};

#[derive(Clone, Debug, Serialize)]
pub struct HomePage {
    /// The running season, else the last one that ended.
    pub season: Option<SeasonLine>,
    /// The top of each class's table in `season`.
    pub standings: Vec<ClassTable>,
    pub latest: Page<MatchLine>,
    /// Where Duel TV streams (server-sent events) and what is on air.
    pub tv: TvLinks,
}

#[derive(Clone, Debug, Serialize)]
pub struct TvLinks {
    pub events: &'static str,
    pub now: &'static str,
}

#[derive(Clone, Debug, Serialize)]
pub struct SeasonsPage {
    pub seasons: Vec<SeasonLine>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SeasonPage {
    pub season: SeasonLine,
    pub sorted_by: &'static str,
    pub classes: Vec<ClassTable>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SeasonRating {
    pub season: String,
    pub rating: f64,
    pub deviation: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct VersionLine {
    pub version: i64,
    pub kind: &'static str,
    pub digest: String,
    pub created_ms: i64,
}

impl From<&BotVersion> for VersionLine {
    fn from(version: &BotVersion) -> VersionLine {
        VersionLine {
            version: version.version,
            kind: version.kind.name(),
            digest: version.digest.clone(),
            created_ms: version.created_ms,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct BotPage {
    pub name: String,
    pub class: &'static str,
    pub owner: String,
    pub current_version: i64,
    pub kind: &'static str,
    /// `inactive`, `active` or `paused`.
    pub play_state: &'static str,
    /// The play state in words, with the reason of a pause.
    pub play: String,
    /// In the running season (else the last it played in).
    pub rating: Option<SeasonRating>,
    pub record: Record,
    /// Oldest first: one point per rated match (the last
    /// `duel_ladder_store::limits::MAX_CHART_POINTS`).
    pub history: Vec<HistoryPoint>,
    pub matches: Page<MatchLine>,
    pub opponents: Vec<OpponentLine>,
    /// Oldest first.
    pub versions: Vec<VersionLine>,
}

#[derive(Clone, Debug, Serialize)]
pub struct VersusPage {
    #[serde(flatten)]
    pub head_to_head: HeadToHead,
}

#[derive(Clone, Debug, Serialize)]
pub struct MatchesPage {
    pub matches: Page<MatchLine>,
}

#[derive(Clone, Debug, Serialize)]
pub struct MatchPage {
    #[serde(flatten)]
    pub line: MatchLine,
    pub note: Option<String>,
    /// Where to watch it: the viewer of its replay, or of its live feed.
    pub viewer: Option<String>,
    pub replay: Option<String>,
}

pub const SORTED_BY: &str = "rating - 2*RD (conservative rating), then bot name";

/// The season the home page shows.
async fn shown_season(store: &Reads) -> Result<Option<duel_ladder_core::model::Season>> {
    if let Some(season) = store.active_season().await? {
        return Ok(Some(season));
    }
    store.last_ended_season().await
}

pub async fn home(store: &Reads) -> Result<HomePage> {
    let season = shown_season(store).await?;
    let mut standings = Vec::new();
    if let Some(season) = &season {
        for class in WeightClass::ALL {
            standings.push(
                store
                    .class_table(season, class, None, HOME_TOP_ROWS)
                    .await?,
            );
        }
    }
    Ok(HomePage {
        season: season.map(SeasonLine::from),
        standings,
        latest: store
            .settled_matches(&MatchCursor::first(), HOME_TOP_ROWS)
            .await?,
        tv: TvLinks {
            events: "/tv",
            now: "/tv/now",
        },
    })
}

pub async fn seasons(store: &Reads) -> Result<SeasonsPage> {
    Ok(SeasonsPage {
        seasons: store.season_lines().await?,
    })
}

pub async fn season(
    store: &Reads,
    name_or_id: &str,
    class: Option<WeightClass>,
    cursor: Option<&StandingCursor>,
    limit: usize,
) -> Result<SeasonPage> {
    let season = store
        .chosen_season(&duel_ladder_store::SeasonChoice::parse(name_or_id))
        .await?;
    let mut classes = Vec::new();
    match class {
        Some(class) => classes.push(store.class_table(&season, class, cursor, limit).await?),
        None => {
            for class in WeightClass::ALL {
                classes.push(store.class_table(&season, class, None, limit).await?);
            }
        }
    }
    Ok(SeasonPage {
        season: SeasonLine::from(season),
        sorted_by: SORTED_BY,
        classes,
    })
}

pub async fn bot(store: &Reads, name: &str, cursor: &MatchCursor, limit: usize) -> Result<BotPage> {
    let bot: Bot = store.bot(name).await?;
    let history = store.rating_history(&bot.id).await?;
    let rating = match store.active_season().await? {
        Some(season) => store
            .season_rating(season.id, &bot.id)
            .await?
            .map(|rating| SeasonRating {
                season: season.name.clone(),
                rating: rating.rating,
                deviation: rating.deviation,
            }),
        None => None,
    }
    .or_else(|| {
        history.last().map(|point| SeasonRating {
            season: point.season.clone(),
            rating: point.rating,
            deviation: point.deviation,
        })
    });
    let kind = bot
        .versions
        .iter()
        .find(|version| version.version == bot.current_version)
        .map_or("unknown", |version| version.kind.name());
    Ok(BotPage {
        class: bot.class.name(),
        owner: bot.owner_name.clone(),
        current_version: bot.current_version,
        kind,
        play_state: bot.play.state_name(),
        play: play_text(&bot.play),
        rating,
        record: store.bot_record(&bot.id).await?,
        matches: store.bot_matches(&bot.id, None, cursor, limit).await?,
        opponents: store.opponents(&bot.id).await?,
        versions: bot.versions.iter().map(VersionLine::from).collect(),
        history,
        name: bot.name,
    })
}

pub async fn versus(
    store: &Reads,
    name: &str,
    opponent: &str,
    cursor: &MatchCursor,
    limit: usize,
) -> Result<VersusPage> {
    let bot = store.bot(name).await?;
    let other = store.bot(opponent).await?;
    Ok(VersusPage {
        head_to_head: HeadToHead {
            record: store.head_to_head_record(&bot.id, &other.id).await?,
            matches: store
                .bot_matches(&bot.id, Some(&other.id), cursor, limit)
                .await?,
            bot: bot.name,
            opponent: other.name,
        },
    })
}

pub async fn matches(store: &Reads, cursor: &MatchCursor, limit: usize) -> Result<MatchesPage> {
    Ok(MatchesPage {
        matches: store.settled_matches(cursor, limit).await?,
    })
}

pub async fn match_page(store: &Reads, id: &str) -> Result<MatchPage> {
    let (line, note) = store.match_line(id).await?;
    let (viewer, replay) = if line.replay {
        (
            Some(format!("/replays/{id}/view")),
            Some(format!("/replays/{id}")),
        )
    } else if line.state == MatchState::Running {
        (Some(format!("/live/{id}/view")), None)
    } else {
        (None, None)
    };
    Ok(MatchPage {
        line,
        note,
        viewer,
        replay,
    })
}
