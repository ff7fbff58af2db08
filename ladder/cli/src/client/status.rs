//! `ladder status` (operator): the ladder on one screen: the season, per
//! class the bots (queued, active, paused), the season's matches by state
//! and the last pairing wave.

use duel_proto::v1 as pb;
use serde_json::{Value, json};

use super::{Client, Result, emit, json_line};

/// `ladder status [--json]`.
pub(super) async fn status(client: &mut Client, json: bool) -> Result<()> {
    let reply = client
        .call(
            pb::LadderStatusRequest {},
            |mut inner, request| async move { inner.status(request).await },
        )
        .await?;
    emit(&render_status(&reply, json));
    Ok(())
}

fn render_status(reply: &pb::LadderStatusResponse, json: bool) -> String {
    if json {
        return json_line(&status_json(reply));
    }
    let mut text = match (&reply.season, &reply.last_ended) {
        (Some(season), _) => format!("season {} (running; id {})\n", season.name, season.id),
        (None, Some(ended)) => format!(
            "no season running; last: {} (ended, frozen; id {})\n",
            ended.name, ended.id
        ),
        (None, None) => "no season yet\n".to_owned(),
    };
    text.push_str(&format!(
        "{:<7}{:>6}{:>8}{:>8}{:>8}  {:>9}{:>9}{:>9}{:>8}  last wave\n",
        "class", "bots", "queued", "active", "paused", "accepted", "running", "settled", "voided"
    ));
    for class in &reply.classes {
        let wave = match &class.last_wave {
            Some(wave) => format!(
                "{} pairs from {} at {} ({} ms)",
                wave.pairs,
                wave.pool,
                duel_ladder::model::utc_text(wave.at_ms),
                wave.duration_ms
            ),
            None => "none".to_owned(),
        };
        text.push_str(&format!(
            "{:<7}{:>6}{:>8}{:>8}{:>8}  {:>9}{:>9}{:>9}{:>8}  {wave}\n",
            class.weight_class,
            class.bots,
            class.queued,
            class.active,
            class.paused,
            class.accepted,
            class.running,
            class.settled,
            class.voided,
        ));
    }
    text
}

fn season_json(season: &pb::LadderSeason) -> Value {
    json!({
        "id": season.id,
        "name": season.name,
        "started_ms": season.started_ms,
        "ended_ms": (season.ended_ms > 0).then_some(season.ended_ms),
    })
}

fn status_json(reply: &pb::LadderStatusResponse) -> Value {
    json!({
        "season": reply.season.as_ref().map(season_json),
        "last_ended": reply.last_ended.as_ref().map(season_json),
        "classes": reply.classes.iter().map(|class| json!({
            "class": class.weight_class,
            "bots": class.bots,
            "queued": class.queued,
            "active": class.active,
            "paused": class.paused,
            "matches": {
                "accepted": class.accepted,
                "running": class.running,
                "settled": class.settled,
                "voided": class.voided,
            },
            "last_wave": class.last_wave.as_ref().map(|wave| json!({
                "season_id": wave.season_id,
                "at_ms": wave.at_ms,
                "pool": wave.pool,
                "pairs": wave.pairs,
                "duration_ms": wave.duration_ms,
            })),
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_renders_one_screen() {
        let reply = pb::LadderStatusResponse {
            season: Some(pb::LadderSeason {
                id: 2,
                name: "winter".into(),
                started_ms: 1,
                ended_ms: 0,
            }),
            last_ended: None,
            classes: vec![pb::LadderClassStatus {
                weight_class_enum: pb::WeightClass::Light as i32,
                weight_class: "light".into(),
                bots: 6,
                queued: 1,
                active: 3,
                paused: 1,
                accepted: 1,
                running: 2,
                settled: 40,
                voided: 0,
                last_wave: Some(pb::LadderWave {
                    season_id: 2,
                    at_ms: 1_764_585_296_000,
                    pool: 4,
                    pairs: 2,
                    duration_ms: 3,
                }),
            }],
        };
        let text = render_status(&reply, false);
        assert!(
            text.starts_with("season winter (running; id 2)\n"),
            "{text}"
        );
        assert!(
            text.contains("2 pairs from 4 at 2025-12-01 10:34:56 UTC (3 ms)"),
            "{text}"
        );
        let value: Value = serde_json::from_str(&render_status(&reply, true)).expect("json");
        assert_eq!(value["classes"][0]["matches"]["settled"], 40);
        assert_eq!(value["classes"][0]["last_wave"]["pairs"], 2);
        assert!(value["last_ended"].is_null());
    }
}
