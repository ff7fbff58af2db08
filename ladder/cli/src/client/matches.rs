//! The queue and the matches it leads to: `ladder enqueue`, `ladder leave`,
//! `ladder matches [--id ID]` and `ladder match logs ID`.

use duel_proto::v1 as pb;
use serde_json::{Value, json};

use super::{Client, ClientError, Result, emit, json_line, required};

/// `ladder enqueue BOT --stake CREDITS`.
pub(super) async fn enqueue(client: &mut Client, bot: String, stake: i64) -> Result<()> {
    let reply = client
        .call(
            pb::LadderEnqueueRequest { bot, stake },
            |mut inner, request| async move { inner.enqueue(request).await },
        )
        .await?;
    emit(&render_enqueued(reply)?);
    Ok(())
}

fn render_enqueued(reply: pb::LadderEnqueueResponse) -> Result<String> {
    let entry = required(reply.entry, "entry")?;
    Ok(format!(
        "{} queued in {} with a stake of {} credits\n",
        entry.bot, entry.weight_class, entry.stake
    ))
}

/// `ladder leave BOT`.
pub(super) async fn leave(client: &mut Client, bot: String) -> Result<()> {
    client
        .call(
            pb::LadderLeaveQueueRequest { bot: bot.clone() },
            |mut inner, request| async move { inner.leave_queue(request).await },
        )
        .await?;
    emit(&format!("{bot} left the queue\n"));
    Ok(())
}

/// `ladder matches --id ID [--json]`.
pub(super) async fn show(client: &mut Client, id: String, json: bool) -> Result<()> {
    let reply = client
        .call(
            pb::LadderShowMatchRequest { id },
            |mut inner, request| async move { inner.show_match(request).await },
        )
        .await?;
    emit(&render_show(reply, json)?);
    Ok(())
}

fn render_show(reply: pb::LadderShowMatchResponse, json: bool) -> Result<String> {
    let game = required(reply.r#match, "match")?;
    if json {
        Ok(json_line(&match_json(&game)?))
    } else {
        match_line(&game)
    }
}

/// `ladder matches [--state STATE] [--bot NAME] [--json]`.
pub(super) async fn list(
    client: &mut Client,
    state: Option<String>,
    bot: Option<String>,
    json: bool,
) -> Result<()> {
    let reply = client
        .call(
            pb::LadderListMatchesRequest {
                // Filters; empty is the proto's "all".
                state: state.unwrap_or_default(),
                bot: bot.unwrap_or_default(),
            },
            |mut inner, request| async move { inner.list_matches(request).await },
        )
        .await?;
    emit(&render_list(&reply.matches, json)?);
    Ok(())
}

fn render_list(matches: &[pb::LadderMatch], json: bool) -> Result<String> {
    if json {
        let matches = matches.iter().map(match_json).collect::<Result<Vec<_>>>()?;
        Ok(json_line(&Value::Array(matches)))
    } else {
        matches.iter().map(match_line).collect()
    }
}

/// Both sides of a match: every accepted match has two.
fn sides(game: &pb::LadderMatch) -> Result<(&pb::LadderMatchSide, &pb::LadderMatchSide)> {
    Ok((
        required(game.a.as_ref(), "match.a")?,
        required(game.b.as_ref(), "match.b")?,
    ))
}

fn match_json(game: &pb::LadderMatch) -> Result<Value> {
    let side = |side: &pb::LadderMatchSide| json!({ "bot": side.bot, "version": side.version, "stake": side.stake });
    let (a, b) = sides(game)?;
    // Empty strings and 0 on the wire mean "not yet": null here.
    Ok(json!({
        "id": game.id,
        "season_id": game.season_id,
        "class": game.weight_class,
        "ruleset": game.ruleset,
        "budget": game.budget,
        "seed": game.seed,
        "a": side(a),
        "b": side(b),
        "state": game.state,
        "attempts": game.attempts,
        "accepted_ms": game.accepted_ms,
        "finished_ms": (game.finished_ms > 0).then_some(game.finished_ms),
        "winner": (!game.winner.is_empty()).then_some(&game.winner),
        "replay_path": (!game.replay_path.is_empty()).then_some(&game.replay_path),
        "note": (!game.note.is_empty()).then_some(&game.note),
        "last_failure": (!game.last_failure.is_empty()).then_some(&game.last_failure),
        "repeat_of": (!game.repeat_of.is_empty()).then_some(&game.repeat_of),
        "not_rated": (!game.not_rated.is_empty()).then_some(&game.not_rated),
    }))
}

/// A match's one-line summary.
fn match_line(game: &pb::LadderMatch) -> Result<String> {
    let side =
        |side: &pb::LadderMatchSide| format!("{} v{} ({} cr)", side.bot, side.version, side.stake);
    let (a, b) = sides(game)?;
    // The winner by name and version, not by side ("a" is the wire's).
    let result = match game.winner.as_str() {
        "" => String::new(),
        "a" => format!(" winner {} v{}", a.bot, a.version),
        "b" => format!(" winner {} v{}", b.bot, b.version),
        "draw" => " drawn".to_owned(),
        other => format!(" winner {other}"),
    };
    let repeat = match game.not_rated.as_str() {
        "" => String::new(),
        "repeat" => format!(" (not rated: repeats {})", game.repeat_of),
        "pair_rated" => {
            " (not rated: settled while a pair was rated at most twice a season)".to_owned()
        }
        other => format!(" (not rated: {other})"),
    };
    // Why it was voided, or why its last run failed while it waits for the next.
    let why = if !game.note.is_empty() {
        format!(" ({})", game.note)
    } else if !game.last_failure.is_empty() && game.state != "settled" {
        format!(" (last run: {})", game.last_failure)
    } else {
        String::new()
    };
    // When it ended, or when it was paired while it has not.
    let when = if game.finished_ms > 0 {
        game.finished_ms
    } else {
        game.accepted_ms
    };
    Ok(format!(
        "{} {} {} {} vs {} {}{}{}{}\n",
        duel_ladder_core::model::utc_text(when),
        game.id,
        game.weight_class,
        side(a),
        side(b),
        game.state,
        result,
        repeat,
        why
    ))
}

/// `ladder match transcript ID [--bot BOT] [--out PATH] [--json]`.
pub(super) async fn transcript(
    client: &mut Client,
    id: String,
    bot: Option<String>,
    out: Option<std::path::PathBuf>,
    json: bool,
) -> Result<()> {
    let path = out.unwrap_or_else(|| {
        std::path::PathBuf::from(match &bot {
            Some(bot) => format!("{id}.{bot}.transcript.json"),
            None => format!("{id}.transcript.json"),
        })
    });
    let reply = client
        .call(
            pb::LadderMatchTranscriptRequest {
                id,
                bot: bot.unwrap_or_default(),
            },
            |mut inner, request| async move { inner.match_transcript(request).await },
        )
        .await?;
    // Checked before it is written: what lands on disk is a transcript.
    duel_replays::transcript::Transcript::from_slice(&reply.transcript_json).map_err(|error| {
        ClientError::File(format!(
            "the server sent a transcript that does not parse: {error}"
        ))
    })?;
    duel_files::write_atomic(
        &path,
        &reply.transcript_json,
        duel_files::WriteOptions::PRIVATE,
    )
    .map_err(|error| ClientError::File(format!("cannot write {}: {error}", path.display())))?;
    emit(&if json {
        json_line(&json!({
            "id": reply.id,
            "path": path.display().to_string(),
            "decisions": reply.decisions,
        }))
    } else {
        format!(
            "wrote {} ({} decisions of match {})\n",
            path.display(),
            reply.decisions,
            reply.id
        )
    });
    Ok(())
}

/// `ladder match logs ID [--json]`.
pub(super) async fn logs(client: &mut Client, id: String, json: bool) -> Result<()> {
    let reply = client
        .call(
            pb::LadderMatchLogsRequest { id },
            |mut inner, request| async move { inner.match_logs(request).await },
        )
        .await?;
    emit(&render_logs(&reply, json));
    Ok(())
}

fn render_logs(reply: &pb::LadderMatchLogsResponse, json: bool) -> String {
    if json {
        let sides: Vec<Value> = reply
            .sides
            .iter()
            .map(|side| {
                json!({
                    "side": side.side,
                    "bot": side.bot,
                    "exchanges": side.exchanges.iter().map(|exchange| json!({
                        "round": exchange.round,
                        "exchange": exchange.exchange,
                        "lines": exchange.lines,
                        "truncated": exchange.truncated,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        return json_line(&json!({ "id": reply.id, "sides": sides }));
    }
    if reply.sides.is_empty() {
        return format!("match {}: your bots wrote no log lines\n", reply.id);
    }
    let mut out = String::new();
    for side in &reply.sides {
        out.push_str(&format!(
            "match {} · {} (fighter {})\n",
            reply.id, side.bot, side.side
        ));
        for exchange in &side.exchanges {
            for line in &exchange.lines {
                out.push_str(&format!(
                    "  r{} e{:<2} │ {}\n",
                    exchange.round,
                    exchange.exchange,
                    one_line(line)
                ));
            }
            if exchange.truncated {
                out.push_str(&format!(
                    "  r{} e{:<2} │ … (cut by the referee's log bounds)\n",
                    exchange.round, exchange.exchange
                ));
            }
        }
    }
    out
}

/// A log line as one terminal line: control and bidirectional characters (a
/// bot's escape sequences, its U+202E) shown as spaces.
fn one_line(line: &str) -> String {
    line.chars()
        .map(|c| {
            if duel_referee::terminal::is_hidden(c) {
                ' '
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn game() -> pb::LadderMatch {
        let side = |bot: &str, stake| {
            Some(pb::LadderMatchSide {
                bot: bot.into(),
                version: 1,
                stake,
            })
        };
        pb::LadderMatch {
            weight_class_enum: pb::WeightClass::Light as i32,
            state_enum: pb::LadderMatchState::Settled as i32,
            winner_enum: pb::Winner::A as i32,
            id: "m1".into(),
            season_id: 1,
            weight_class: "light".into(),
            ruleset: "1.0.0".into(),
            budget: 1000,
            seed: 7,
            a: side("counter", 10),
            b: side("block", 15),
            state: "settled".into(),
            attempts: 1,
            accepted_ms: 100,
            finished_ms: 200,
            winner: "a".into(),
            replay_path: "replays/m1.json".into(),
            note: String::new(),
            last_failure: String::new(),
            repeat_of: String::new(),
            not_rated: String::new(),
            not_rated_enum: pb::LadderNotRated::Unspecified as i32,
        }
    }

    #[test]
    fn a_match_renders_as_a_line_and_as_json() {
        assert_eq!(
            render_list(&[game()], false).expect("text"),
            "1970-01-01 00:00:00 UTC m1 light counter v1 (10 cr) vs block v1 (15 cr) settled winner counter v1\n"
        );
        let b_won = pb::LadderMatch {
            winner: "b".into(),
            ..game()
        };
        assert!(
            render_list(std::slice::from_ref(&b_won), false)
                .expect("text")
                .ends_with("settled winner block v1\n")
        );
        let drawn = pb::LadderMatch {
            winner: "draw".into(),
            ..game()
        };
        assert!(
            render_list(std::slice::from_ref(&drawn), false)
                .expect("text")
                .ends_with("settled drawn\n")
        );
        // The JSON keeps the side, as before.
        let value: Value =
            serde_json::from_str(&render_list(&[game()], true).expect("json")).expect("JSON");
        assert_eq!(value[0]["winner"], "a");
        let repeat = pb::LadderMatch {
            repeat_of: "m0".into(),
            not_rated: "repeat".into(),
            ..game()
        };
        assert!(
            render_list(std::slice::from_ref(&repeat), false)
                .expect("text")
                .ends_with("winner counter v1 (not rated: repeats m0)\n")
        );
        let value: Value =
            serde_json::from_str(&render_list(&[repeat], true).expect("json")).expect("JSON");
        assert_eq!(value[0]["repeat_of"], "m0");
        assert_eq!(value[0]["not_rated"], "repeat");
        let text = render_list(&[game()], true).expect("json");
        let value: Value = serde_json::from_str(&text).expect("one JSON document");
        assert_eq!(value[0]["a"]["stake"], 10);
        assert_eq!(value[0]["finished_ms"], 200);
        assert!(value[0]["note"].is_null());
        assert!(value[0]["last_failure"].is_null());
        assert_eq!(render_list(&[], false).expect("text"), "");
        // A void names its cause, in the line and in the JSON.
        let cause = "publishing the replay failed: replay is 17000000 bytes";
        let voided = pb::LadderMatch {
            state: "voided".into(),
            winner: String::new(),
            note: format!(
                "voided at claim 3 after 2 runs without a result; the last run failed: {cause}"
            ),
            last_failure: cause.into(),
            ..game()
        };
        let line = render_list(std::slice::from_ref(&voided), false).expect("text");
        assert!(
            line.ends_with(&format!("voided (voided at claim 3 after 2 runs without a result; the last run failed: {cause})\n")),
            "{line}"
        );
        let value: Value =
            serde_json::from_str(&render_list(&[voided], true).expect("json")).expect("JSON");
        assert_eq!(value[0]["last_failure"], cause);
        let waiting = pb::LadderMatch {
            state: "queued".into(),
            winner: String::new(),
            last_failure: cause.into(),
            ..game()
        };
        let line = render_list(&[waiting], false).expect("text");
        assert!(
            line.ends_with(&format!("queued (last run: {cause})\n")),
            "{line}"
        );
    }

    #[test]
    fn a_reply_without_a_side_or_entry_is_an_error() {
        let one_sided = pb::LadderMatch { b: None, ..game() };
        for json in [false, true] {
            let error = render_list(&[game(), one_sided.clone()], json).expect_err("no side b");
            assert_eq!(error.to_string(), "the ladder's reply has no `match.b`");
        }
        let error = render_show(pb::LadderShowMatchResponse { r#match: None }, false)
            .expect_err("no match");
        assert_eq!(error.to_string(), "the ladder's reply has no `match`");
        let error =
            render_enqueued(pb::LadderEnqueueResponse { entry: None }).expect_err("no entry");
        assert_eq!(error.to_string(), "the ladder's reply has no `entry`");
    }
}
