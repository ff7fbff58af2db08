//! What each page shows, read from the store: the JSON twins serialize these
//! as they are and the templates render them, so the two never disagree.
//!
//! A bot's matches are counted as **rated** (they moved its rating) or
//! **settled** (every match whose stakes settled), each under its own name on
//! every page and twin (`duel_ladder_store::site`, docs/RULES.md "What the
//! site counts").

use duel_rules::WeightClass;
use serde::Serialize;

use crate::chart::CostPoint;
use crate::limits::HOME_TOP_ROWS;
use duel_ladder_core::model::{Bot, BotVersion, MatchState};
use duel_ladder_store::error::{LadderError, Result};
use duel_ladder_store::site::{
    ClassTable, HeadToHead, HistoryPoint, MatchCursor, MatchFilter, MatchLine, MatchNotes,
    MatchResult, OpponentLine, Page, Record, SeasonLine, ShownRating, StandingCursor, play_text,
};
use duel_ladder_store::{CostLine, ModelLine, Reads};

#[derive(Clone, Debug, Serialize)]
pub struct HomePage {
    /// The running season, else the last one that ended.
    pub season: Option<SeasonLine>,
    /// The top of each class's table in `season`.
    pub standings: Vec<ClassTable>,
    pub latest: Page<MatchLine>,
    /// The matches being played now (at most [`HOME_TOP_ROWS`]), each
    /// watchable live from its match page.
    pub live: Vec<MatchLine>,
    /// Where Duel TV streams (server-sent events) and what is on air.
    pub tv: TvLinks,
}

#[derive(Clone, Debug, Serialize)]
pub struct TvLinks {
    /// Duel TV's page (its JSON twin is `/api/tv`).
    pub page: &'static str,
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

/// What a win cost in a season (`/seasons/{season}/cost`): per class, each
/// bot's spend, the bots on the cost–rating frontier, and the models called.
#[derive(Clone, Debug, Serialize)]
pub struct CostPage {
    pub season: SeasonLine,
    pub classes: Vec<ClassCost>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ClassCost {
    pub class: &'static str,
    /// Bots with a settled match in the class; `bots` is one page of them.
    pub total_bots: usize,
    /// The cheapest in tokens per match first, from the page's cursor on.
    pub bots: Vec<CostLine>,
    /// Fetches the next page of `bots` (with `class=`), if there is one.
    pub next_cursor: Option<String>,
    /// Every bot of the class on the chart, whichever page: its model
    /// tokens per match and rating − 2·RD. Drawn on the HTML page only.
    #[serde(skip)]
    pub points: Vec<CostPoint>,
    /// The bots no other bot beats on both counts: fewer or as many tokens per
    /// match for a higher rating − 2·RD. Cheapest first.
    pub frontier: Vec<String>,
    /// Standings by model, from the calls the replays recorded.
    pub models: Vec<ModelLine>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SeasonRating {
    pub season: String,
    /// `running`, or `ended`: then the rating is the season's frozen one.
    pub season_state: &'static str,
    pub rating: f64,
    pub deviation: f64,
}

impl From<ShownRating> for SeasonRating {
    fn from(shown: ShownRating) -> SeasonRating {
        SeasonRating {
            season: shown.season,
            season_state: if shown.ended { "ended" } else { "running" },
            rating: shown.rating,
            deviation: shown.deviation,
        }
    }
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
    /// What the owner says about it (`ladder bot edit`); null where unset.
    pub description: Option<String>,
    pub author: Option<String>,
    pub source_url: Option<String>,
    pub current_version: i64,
    pub kind: &'static str,
    /// `inactive`, `active` or `paused`.
    pub play_state: &'static str,
    /// The play state in words, with the reason of a pause.
    pub play: String,
    /// In the running season, else as the frozen table of the last season
    /// it played in shows it.
    pub rating: Option<SeasonRating>,
    /// Over its rated matches, all seasons (`rated_matches` of them).
    pub record: Record,
    pub rated_matches: i64,
    /// Over its settled matches, rated or not, all seasons
    /// (`settled_matches` of them).
    pub settled_record: Record,
    pub settled_matches: i64,
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
    /// The filter the listing applied, as the query gave it.
    pub filter: MatchesQuery,
    pub matches: Page<MatchLine>,
}

/// What /matches may be narrowed to: a class, a bot, and that bot's result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MatchesQuery {
    #[serde(serialize_with = "class_name")]
    pub class: Option<WeightClass>,
    pub bot: Option<String>,
    #[serde(serialize_with = "result_name")]
    pub result: Option<MatchResult>,
}

impl MatchesQuery {
    pub fn is_empty(&self) -> bool {
        *self == MatchesQuery::default()
    }

    /// The query string that gives this filter, each pair followed by `&`
    /// (for a cursor to follow).
    pub fn query_prefix(&self) -> String {
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        if let Some(class) = self.class {
            pairs.push(("class", class.name()));
        }
        if let Some(bot) = &self.bot {
            pairs.push(("bot", bot));
        }
        if let Some(result) = self.result {
            pairs.push(("result", result.name()));
        }
        let query = serde_urlencoded::to_string(&pairs).unwrap_or_default();
        if query.is_empty() { query } else { query + "&" }
    }
}

fn class_name<S: serde::Serializer>(
    class: &Option<WeightClass>,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    match class {
        Some(class) => serializer.serialize_str(class.name()),
        None => serializer.serialize_none(),
    }
}

fn result_name<S: serde::Serializer>(
    result: &Option<MatchResult>,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    match result {
        Some(result) => serializer.serialize_str(result.name()),
        None => serializer.serialize_none(),
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct MatchPage {
    #[serde(flatten)]
    pub line: MatchLine,
    /// Why it was voided (naming the last run's cause when a run failed), and
    /// why its last run failed: both null when neither happened.
    #[serde(flatten)]
    pub notes: MatchNotes,
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
            .settled_matches(
                &MatchFilter::default(),
                &MatchCursor::first(),
                HOME_TOP_ROWS,
            )
            .await?,
        live: store.running_matches(HOME_TOP_ROWS).await?,
        tv: TvLinks {
            page: "/tv",
            events: crate::tv::TV_EVENTS_PATH,
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

/// Where a page of the cost table starts: the number of bots before it, in
/// the table's order. The whole table is read for the chart and frontier
/// anyway, so an offset costs nothing and pages stay in step with the chart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CostCursor(pub usize);

impl CostCursor {
    pub fn parse(text: &str) -> Result<Self> {
        text.parse::<usize>().map(CostCursor).map_err(|_| {
            LadderError::Invalid(format!(
                "cursor must be a row number, not {:?}",
                text.chars().take(32).collect::<String>()
            ))
        })
    }
}

pub async fn cost(
    store: &Reads,
    name_or_id: &str,
    class: Option<WeightClass>,
    cursor: CostCursor,
    limit: usize,
) -> Result<CostPage> {
    let season = store
        .chosen_season(&duel_ladder_store::SeasonChoice::parse(name_or_id))
        .await?;
    let mut classes = Vec::new();
    for class in class.map_or(WeightClass::ALL.to_vec(), |class| vec![class]) {
        let spend = store.class_spend(&season, class).await?;
        let all = &spend.bots;
        let coordinates: Vec<(f64, f64)> = all
            .iter()
            .map(|line| (line.tokens_per_match, line.conservative))
            .collect();
        let mut on_frontier = vec![false; all.len()];
        let frontier: Vec<String> = crate::chart::frontier(&coordinates)
            .into_iter()
            .map(|index| {
                on_frontier[index] = true;
                all[index].bot.clone()
            })
            .collect();
        let points = all
            .iter()
            .zip(&on_frontier)
            .map(|(line, on_frontier)| CostPoint {
                bot: line.bot.clone(),
                tokens_per_match: line.tokens_per_match,
                conservative: line.conservative,
                on_frontier: *on_frontier,
            })
            .collect();
        let total_bots = all.len();
        let end = cursor.0.saturating_add(limit);
        let next_cursor = (end < total_bots).then(|| end.to_string());
        let bots = all.iter().skip(cursor.0).take(limit).cloned().collect();
        classes.push(ClassCost {
            class: class.name(),
            models: spend.models.clone(),
            total_bots,
            bots,
            next_cursor,
            frontier,
            points,
        });
    }
    Ok(CostPage {
        season: SeasonLine::from(season),
        classes,
    })
}

pub async fn bot(store: &Reads, name: &str, cursor: &MatchCursor, limit: usize) -> Result<BotPage> {
    let bot: Bot = store.bot(name).await?;
    let kept = store.bot_reads(&bot.id).await?;
    let history = kept.history.clone();
    let running = match store.active_season().await? {
        Some(season) => store
            .season_rating(season.id, &bot.id)
            .await?
            .map(|rating| ShownRating {
                season: season.name.clone(),
                rating: rating.rating,
                deviation: rating.deviation,
                ended: false,
            }),
        None => None,
    };
    // An ended season shows its frozen table's rating, the fit of all its
    // games, not the chart's last point (where the season's last refit
    // had not yet moved it).
    let rating = match running {
        Some(rating) => Some(rating),
        None => store.last_frozen_rating(&bot.id).await?,
    }
    .map(SeasonRating::from);
    let kind = bot
        .versions
        .iter()
        .find(|version| version.version == bot.current_version)
        .map_or("unknown", |version| version.kind.name());
    Ok(BotPage {
        class: bot.class.name(),
        owner: bot.owner_name.clone(),
        description: bot.profile.description.clone(),
        author: bot.profile.author.clone(),
        source_url: bot.profile.source_url.clone(),
        current_version: bot.current_version,
        kind,
        play_state: bot.play.state_name(),
        play: play_text(&bot.play),
        rating,
        record: kept.record,
        rated_matches: kept.record.matches(),
        settled_record: kept.settled_record,
        settled_matches: kept.settled_matches,
        matches: store
            .settled_matches(
                &MatchFilter {
                    bot_id: Some(&bot.id),
                    ..MatchFilter::default()
                },
                cursor,
                limit,
            )
            .await?,
        opponents: kept.opponents.clone(),
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
    let records = store.head_to_head_record(&bot.id, &other.id).await?;
    let matches = store
        .settled_matches(
            &MatchFilter {
                bot_id: Some(&bot.id),
                opponent_id: Some(&other.id),
                ..MatchFilter::default()
            },
            cursor,
            limit,
        )
        .await?;
    Ok(VersusPage {
        head_to_head: HeadToHead::new(bot.name, other.name, records, matches),
    })
}

/// Settled matches narrowed by `query`; a bot that does not exist is an
/// invalid filter (400), not a missing page.
pub async fn matches(
    store: &Reads,
    query: MatchesQuery,
    cursor: &MatchCursor,
    limit: usize,
) -> Result<MatchesPage> {
    let bot = match &query.bot {
        Some(name) => Some(store.bot(name).await.map_err(|error| match error {
            LadderError::NotFound(_) => LadderError::Invalid(format!(
                "bot= names no bot: {:?}",
                name.chars().take(64).collect::<String>()
            )),
            other => other,
        })?),
        None => None,
    };
    let filter = MatchFilter {
        class: query.class,
        bot_id: bot.as_ref().map(|bot| bot.id.as_str()),
        opponent_id: None,
        result: query.result,
    };
    Ok(MatchesPage {
        matches: store.settled_matches(&filter, cursor, limit).await?,
        filter: query,
    })
}

pub async fn match_page(store: &Reads, id: &str) -> Result<MatchPage> {
    let (line, notes) = store.match_line(id).await?;
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
        notes,
        viewer,
        replay,
    })
}
