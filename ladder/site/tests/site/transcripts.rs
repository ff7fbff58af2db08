//! Transcripts for everyone, served on loopback as `ladder serve --http` does:
//! a 404 with a JSON error until the reveal policy allows, then the kept
//! transcript byte for byte, at `/matches/{id}/transcript` and where the
//! viewer looks (`/replays/{id}/transcript`). `never` never reveals,
//! `after-days:0` at once; an unknown match is a 404, a malformed id a 400,
//! a match whose fighters called no model a 404. SQLite and PostgreSQL.

use crate::common;

use std::net::SocketAddr;

use common::TestDb;
use duel_ladder_core::model::{BotSource, Winner};
use duel_ladder_core::reveal::RevealPolicy;
use duel_ladder_store::PairSide;
use duel_replays::CallOutcome;
use duel_replays::store::ReplayStore;
use duel_replays::transcript::{
    FighterName, Transcript, TranscriptCall, TranscriptDecision, TranscriptMessage,
};
use serde_json::Value;

/// Settles one match between two new bots of two new owners; its id and
/// the owners' tokens (side a's, then b's).
async fn settled_match(db: &TestDb, tag: &str) -> (String, Vec<String>) {
    let mut ids = Vec::new();
    let mut tokens = Vec::new();
    for side in ["x", "y"] {
        let name = format!("{side}-{tag}");
        let (owner, token) = db.owner(&format!("owner-{name}"), 1_000).await;
        tokens.push(token);
        let bot = db
            .store
            .register_bot(
                &owner,
                &name,
                "light",
                &BotSource::builtin("builtin:random".to_owned()),
            )
            .await
            .expect("register");
        ids.push(bot.id);
    }
    let game = db
        .store
        .accept_pair([0, 1].map(|index| PairSide {
            bot_id: ids[index].clone(),
            stake: 10,
        }))
        .await
        .expect("accept");
    let claim = db
        .store
        .claim(60_000, 1_000)
        .await
        .expect("claim")
        .expect("queued");
    db.store
        .complete(&game.id, &claim.lease_id, Winner::A, "r.json", None, 2_000)
        .await
        .expect("settle");
    (game.id, tokens)
}

fn transcript_of(match_id: &str) -> Transcript {
    let mut transcript = Transcript::new(match_id.to_owned());
    transcript.decisions.push(TranscriptDecision {
        round: 1,
        exchange: 1,
        fighter: FighterName::A,
        calls: vec![TranscriptCall {
            model: "house".to_owned(),
            messages: vec![TranscriptMessage {
                role: "user".to_owned(),
                content: "You face a blocker. <b>Move?</b>".to_owned(),
            }],
            completion: "FEINT".to_owned(),
            prompt_tokens: 12,
            completion_tokens: 2,
            latency_us: 900,
            outcome: CallOutcome::Ok,
            truncated: false,
        }],
    });
    transcript
}

async fn serve(db: &TestDb, replays: &ReplayStore, policy: RevealPolicy) -> String {
    let router = duel_ladder_site::transcripts::router(db.store.reads(), replays.clone(), policy);
    let loopback: SocketAddr = "127.0.0.1:0".parse().expect("address");
    let listener = tokio::net::TcpListener::bind(loopback).await.expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{address}")
}

async fn get(base: &str, path: &str) -> (u16, String) {
    let response = reqwest::get(format!("{base}{path}"))
        .await
        .expect("request");
    let status = response.status().as_u16();
    (status, response.text().await.expect("body"))
}

fn error_of(body: &str) -> String {
    let value: Value = serde_json::from_str(body).expect("a JSON error");
    value["error"].as_str().expect("error").to_owned()
}

async fn transcripts_revealed(db: &TestDb) {
    db.store.start_season("s1").await.expect("season");
    let dir = tempfile::tempdir().expect("temp dir");
    let replays = ReplayStore::open(&dir.path().display().to_string()).expect("store");
    let (spoken, tokens) = settled_match(db, "spoken").await;
    let (silent, _) = settled_match(db, "silent").await;
    let (_, strangers) = settled_match(db, "stranger").await;
    let kept = transcript_of(&spoken);
    replays.put_transcript(&kept).await.expect("keep");

    let after_season = serve(db, &replays, RevealPolicy::AfterSeason).await;
    let never = serve(db, &replays, RevealPolicy::Never).await;
    let at_once = serve(db, &replays, RevealPolicy::AfterDays(0)).await;

    // While the season runs: hidden under the default policy and `never`,
    // public under `after-days:0`.
    for path in [
        format!("/matches/{spoken}/transcript"),
        format!("/replays/{spoken}/transcript"),
    ] {
        let (status, body) = get(&after_season, &path).await;
        assert_eq!(status, 404, "{path}: {body}");
        assert!(
            error_of(&body).contains("public once its season ends"),
            "{body}"
        );
    }
    let (status, body) = get(&at_once, &format!("/matches/{spoken}/transcript")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        kept.to_json_pretty(),
        "the kept transcript, byte for byte"
    );

    // Its owner reads its bot's calls at once from the match page's form,
    // escaped and never cached; the other owner's bot called no model; a
    // stranger and a bad token are refused.
    let client = reqwest::Client::new();
    let post = |base: &str, token: &str| {
        client
            .post(format!("{base}/matches/{spoken}/transcript"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("token={token}"))
            .send()
    };
    let owner = post(&after_season, &tokens[0]).await.expect("post");
    assert_eq!(owner.status().as_u16(), 200);
    assert_eq!(owner.headers()["cache-control"], "no-store");
    let page = owner.text().await.expect("page");
    assert!(
        page.contains("You face a blocker. &lt;b&gt;Move?&lt;/b&gt;"),
        "{page}"
    );
    assert!(
        page.contains("FEINT") && page.contains("x-spoken"),
        "{page}"
    );
    for (token, status, says) in [
        (tokens[1].as_str(), 404, "your bot called no model"),
        (strangers[0].as_str(), 403, "owns neither of its bots"),
        ("not-a-token", 401, "matches no account"),
        ("", 401, "give the token"),
    ] {
        let refused = post(&after_season, token).await.expect("post");
        assert_eq!(refused.status().as_u16(), status, "{token}");
        assert_eq!(refused.headers()["cache-control"], "no-store");
        let body = refused.text().await.expect("page");
        assert!(body.contains(says), "{token}: {body}");
    }

    db.store.end_season().await.expect("end");
    for path in [
        format!("/matches/{spoken}/transcript"),
        format!("/replays/{spoken}/transcript"),
    ] {
        let (status, body) = get(&after_season, &path).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert_eq!(
            Transcript::from_slice(body.as_bytes()).expect("a transcript"),
            kept
        );
    }
    let (status, body) = get(&never, &format!("/matches/{spoken}/transcript")).await;
    assert_eq!(status, 404, "{body}");
    assert!(error_of(&body).contains("never made public"), "{body}");
    let (status, body) = get(&after_season, &format!("/matches/{silent}/transcript")).await;
    assert_eq!(status, 404, "{body}");
    assert!(
        error_of(&body).contains("no fighter called a model"),
        "{body}"
    );
    let (status, body) = get(&after_season, "/matches/no-such-match/transcript").await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = get(&after_season, "/matches/..%2Fetc/transcript").await;
    assert_eq!(status, 400, "{body}");
}
both_backends!(transcripts_after_the_reveal, transcripts_revealed);
