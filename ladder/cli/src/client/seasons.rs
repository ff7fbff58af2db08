//! Seasons and their standings: `ladder season start|end` and `ladder standings`.

use clap::Subcommand;
use duel_proto::v1 as pb;
use serde_json::{Value, json};

use super::{Client, Result, emit, json_line, required};

#[derive(Debug, Subcommand)]
pub enum SeasonCommand {
    /// Start a season (operator).
    Start { name: String },
    /// End the running season and freeze its standings (operator).
    End,
}

pub(super) async fn run(client: &mut Client, command: SeasonCommand) -> Result<()> {
    match command {
        SeasonCommand::Start { name } => start(client, name).await,
        SeasonCommand::End => end(client).await,
    }
}

/// `ladder season start NAME`.
async fn start(client: &mut Client, name: String) -> Result<()> {
    let reply = client
        .call(
            pb::LadderStartSeasonRequest { name },
            |mut inner, request| async move { inner.start_season(request).await },
        )
        .await?;
    let season = required(reply.season, "season")?;
    emit(&format!("season {} ({}) started\n", season.id, season.name));
    Ok(())
}

/// `ladder season end`.
async fn end(client: &mut Client) -> Result<()> {
    let reply = client
        .call(
            pb::LadderEndSeasonRequest {},
            |mut inner, request| async move { inner.end_season(request).await },
        )
        .await?;
    let season = required(reply.season, "season")?;
    emit(&format!(
        "season {} ({}) ended; standings frozen\n",
        season.id, season.name
    ));
    Ok(())
}

/// `ladder standings [--season NAME|ID] [--class CLASS] [--json]`.
pub(super) async fn standings(
    client: &mut Client,
    season: Option<String>,
    class: Option<String>,
    json: bool,
) -> Result<()> {
    // A number is a season id, anything else its name; 0 and empty are the
    // proto's "the running season (else the last ended)" and "every class".
    let (season_id, season_name) = match season.as_deref().map(str::trim) {
        None | Some("") => (0, String::new()),
        Some(text) => match text.parse::<i64>() {
            Ok(id) => (id, String::new()),
            Err(_) => (0, text.to_owned()),
        },
    };
    let reply = client
        .call(
            pb::LadderStandingsRequest {
                season_id,
                season_name,
                weight_class: class.unwrap_or_default(),
            },
            |mut inner, request| async move { inner.standings(request).await },
        )
        .await?;
    emit(&render_standings(reply, json)?);
    Ok(())
}

/// How standings are ordered, said above every table.
const SORTED_BY: &str = "sorted by rating − 2·RD (conservative rating), per class";

fn render_standings(reply: pb::LadderStandingsResponse, json: bool) -> Result<String> {
    let season = required(reply.season, "season")?;
    if json {
        let standings: Vec<Value> = reply.standings.iter().map(standing_json).collect();
        return Ok(json_line(
            &json!({ "season": season_json(&season), "standings": standings }),
        ));
    }
    let state = if season.ended_ms > 0 {
        "ended, frozen"
    } else {
        "running"
    };
    let mut text = format!(
        "season {} ({state}; id {})\n{SORTED_BY}\n",
        season.name, season.id
    );
    for standing in &reply.standings {
        text.push_str(&standing_line(standing));
    }
    Ok(text)
}

fn standing_line(standing: &pb::LadderStanding) -> String {
    format!(
        "{:>3}. {:<20} {:<12} {:<6} {:>7.1} ±{:>5.1} {}W {}D {}L{}\n",
        standing.rank,
        standing.bot,
        standing.owner,
        standing.weight_class,
        standing.rating,
        standing.deviation,
        standing.wins,
        standing.draws,
        standing.losses,
        if standing.provisional {
            " provisional"
        } else {
            ""
        }
    )
}

fn standing_json(standing: &pb::LadderStanding) -> Value {
    json!({
        "rank": standing.rank,
        "bot": standing.bot,
        "owner": standing.owner,
        "class": standing.weight_class,
        "rating": standing.rating,
        "deviation": standing.deviation,
        "volatility": standing.volatility,
        "conservative": standing.conservative,
        "provisional": standing.provisional,
        "games": standing.games,
        "wins": standing.wins,
        "losses": standing.losses,
        "draws": standing.draws,
    })
}

fn season_json(season: &pb::LadderSeason) -> Value {
    json!({
        "id": season.id,
        "name": season.name,
        "started_ms": season.started_ms,
        // 0 on the wire while the season runs.
        "ended_ms": (season.ended_ms > 0).then_some(season.ended_ms),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply() -> pb::LadderStandingsResponse {
        pb::LadderStandingsResponse {
            season: Some(pb::LadderSeason {
                id: 1,
                name: "autumn".into(),
                started_ms: 10,
                ended_ms: 0,
            }),
            standings: vec![pb::LadderStanding {
                weight_class_enum: pb::WeightClass::Light as i32,
                rank: 1,
                bot: "counter".into(),
                owner: "alice".into(),
                weight_class: "light".into(),
                rating: 1662.3,
                deviation: 290.0,
                volatility: 0.06,
                conservative: 1082.25,
                provisional: true,
                games: 3,
                wins: 2,
                losses: 1,
                draws: 0,
            }],
        }
    }

    #[test]
    fn standings_render_as_a_table() {
        assert_eq!(
            render_standings(reply(), false).expect("text"),
            "season autumn (running; id 1)\n\
             sorted by rating − 2·RD (conservative rating), per class\n  \
             1. counter              alice        light   1662.3 ±290.0 2W 0D 1L provisional\n"
        );
    }

    #[test]
    fn a_running_season_has_no_end_in_json() {
        let text = render_standings(reply(), true).expect("json");
        let value: Value = serde_json::from_str(&text).expect("one JSON document");
        assert!(value["season"]["ended_ms"].is_null());
        assert_eq!(value["standings"][0]["class"], "light");
        assert_eq!(value["standings"][0]["games"], 3);
    }

    #[test]
    fn a_reply_without_its_season_is_an_error() {
        let error = render_standings(
            pb::LadderStandingsResponse {
                season: None,
                ..reply()
            },
            false,
        )
        .expect_err("no season");
        assert_eq!(error.to_string(), "the ladder's reply has no `season`");
    }
}
