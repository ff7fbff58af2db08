//! Transcripts within their limits: each side's part counts against its
//! owner's quota, past which that owner's oldest parts are cut out of their
//! stored transcripts (the other side's part stays readable), a part larger
//! than the whole quota is not kept, keeping a match again replaces its rows,
//! and parts past the retention period are cut (a transcript with none left
//! is dropped from the replay store). SQLite and PostgreSQL, on a clock
//! moved by hand, with a real replay store folder.

use crate::common;

use std::sync::Arc;

use common::TestDb;
use duel_ladder_core::clock::ManualClock;
use duel_ladder_core::model::{BotSource, Match, TranscriptLimits};
use duel_ladder_store::{PairSide, Store, TranscriptPart};
use duel_replays::CallOutcome;
use duel_replays::store::ReplayStore;
use duel_replays::transcript::{
    FighterName, TRANSCRIPT_FORMAT, Transcript, TranscriptCall, TranscriptDecision,
    TranscriptMessage,
};
use duel_rules::Side;

const QUOTA_BYTES: u64 = 3_000;
const DAY_MS: i64 = 86_400_000;

/// A transcript of `match_id` with one decision of `chars` prompt characters
/// for each side in `sides`.
fn transcript(match_id: &str, sides: &[(Side, usize)]) -> Transcript {
    Transcript {
        format: TRANSCRIPT_FORMAT.into(),
        match_id: match_id.to_owned(),
        decisions: sides
            .iter()
            .map(|(side, chars)| TranscriptDecision {
                round: 1,
                exchange: 1,
                fighter: FighterName::from(*side),
                calls: vec![TranscriptCall {
                    model: "mini".to_owned(),
                    messages: vec![TranscriptMessage {
                        role: "user".to_owned(),
                        content: "x".repeat(*chars),
                    }],
                    completion: "JAB".to_owned(),
                    prompt_tokens: 10,
                    completion_tokens: 1,
                    latency_us: 5,
                    outcome: CallOutcome::Ok,
                    truncated: false,
                }],
            })
            .collect(),
    }
}

/// The sides whose decisions the replay store still keeps for `game`.
async fn stored_sides(replays: &ReplayStore, game: &Match) -> Vec<FighterName> {
    match replays.get_transcript(&game.id).await.expect("read") {
        None => Vec::new(),
        Some(bytes) => Transcript::from_slice(&bytes)
            .expect("parse")
            .decisions
            .iter()
            .map(|decision| decision.fighter)
            .collect(),
    }
}

async fn keep(store: &Store, replays: &ReplayStore, game: &Match, kept: &Transcript) -> usize {
    replays.put_transcript(kept).await.expect("put");
    store
        .keep_transcript(replays, game, kept)
        .await
        .expect("keep")
        .len()
}

async fn transcripts_within_limits(db: &TestDb) {
    let clock = ManualClock::new(10 * DAY_MS);
    let store = db
        .store
        .clone()
        .with_clock(Arc::new(clock.clone()))
        .with_transcript_limits(TranscriptLimits {
            retention_days: 2,
            max_bytes_per_owner: QUOTA_BYTES,
        });
    let folder = tempfile::tempdir().expect("temp dir");
    let replays = ReplayStore::open(&folder.path().display().to_string()).expect("store");
    store.start_season("s1").await.expect("season");
    let (alice, _) = db.owner("alice", 10_000).await;
    let (bob, _) = db.owner("bob", 10_000).await;
    let source = BotSource::builtin("builtin:random".to_owned());
    let a = store
        .register_bot(&alice, "a-bot", "light", &source)
        .await
        .expect("register");
    let b = store
        .register_bot(&bob, "b-bot", "light", &source)
        .await
        .expect("register");
    let mut games = Vec::new();
    for _ in 0..6 {
        let sides = [&a.id, &b.id].map(|bot_id| PairSide {
            bot_id: bot_id.clone(),
            stake: 1,
        });
        games.push(common::accept_pair(&store, sides).await.expect("accept"));
    }
    // Alice's bot is side a of every match, Bob's side b.
    assert_eq!(games[0].sides[0].owner_id, alice.id);

    // Two matches where both called a model; Bob's parts are small.
    assert_eq!(
        keep(
            &store,
            &replays,
            &games[0],
            &transcript(&games[0].id, &[(Side::A, 1_000), (Side::B, 100)])
        )
        .await,
        0
    );
    clock.advance(1);
    assert_eq!(
        keep(
            &store,
            &replays,
            &games[1],
            &transcript(&games[1].id, &[(Side::A, 1_000), (Side::B, 100)])
        )
        .await,
        0
    );
    let two = store.transcript_bytes(&alice.id).await.expect("bytes");
    assert!(two > 2_000 && two <= QUOTA_BYTES as i64, "{two}");

    // Past Alice's quota, her oldest part is cut out of its transcript;
    // Bob's part of that match stays, readable and verifiable as before.
    clock.advance(1);
    let dropped = store
        .keep_transcript(&replays, &games[2], &{
            let kept = transcript(&games[2].id, &[(Side::A, 1_000)]);
            replays.put_transcript(&kept).await.expect("put");
            kept
        })
        .await
        .expect("keep");
    assert_eq!(
        dropped,
        vec![TranscriptPart {
            match_id: games[0].id.clone(),
            side: Side::A
        }]
    );
    assert_eq!(
        stored_sides(&replays, &games[0]).await,
        vec![FighterName::B]
    );
    assert_eq!(
        stored_sides(&replays, &games[1]).await,
        vec![FighterName::A, FighterName::B]
    );
    let after = store.transcript_bytes(&alice.id).await.expect("bytes");
    assert!(after <= QUOTA_BYTES as i64, "{after}");
    assert!(store.transcript_bytes(&bob.id).await.expect("bytes") > 0);

    // A part larger than the whole quota is not kept, and drops nothing else.
    let huge = transcript(&games[3].id, &[(Side::A, 5_000)]);
    assert_eq!(keep(&store, &replays, &games[3], &huge).await, 1);
    assert!(
        stored_sides(&replays, &games[3]).await.is_empty(),
        "nothing left: dropped"
    );
    assert_eq!(
        store.transcript_bytes(&alice.id).await.expect("bytes"),
        after
    );

    // Kept again (a re-run of the match): replaced, not counted twice.
    let again = transcript(&games[2].id, &[(Side::A, 1_000)]);
    assert_eq!(keep(&store, &replays, &games[2], &again).await, 0);
    assert_eq!(
        store.transcript_bytes(&alice.id).await.expect("bytes"),
        after
    );

    // Past the retention: cut, and transcripts with nothing left dropped;
    // what was kept since stays.
    clock.advance(2 * DAY_MS + 1);
    let fresh = transcript(&games[4].id, &[(Side::B, 100)]);
    assert_eq!(keep(&store, &replays, &games[4], &fresh).await, 0);
    assert_eq!(
        store.prune_transcripts(&replays).await.expect("prune"),
        4,
        "b of match 0, a and b of match 1, a of match 2"
    );
    for game in &games[..3] {
        assert!(stored_sides(&replays, game).await.is_empty(), "{}", game.id);
    }
    assert_eq!(
        stored_sides(&replays, &games[4]).await,
        vec![FighterName::B]
    );
    assert_eq!(store.transcript_bytes(&alice.id).await.expect("bytes"), 0);
    assert_eq!(store.prune_transcripts(&replays).await.expect("prune"), 0);
}

both_backends!(transcripts_kept_within_limits, transcripts_within_limits);
