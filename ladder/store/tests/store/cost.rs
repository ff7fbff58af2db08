//! What a win cost, read back from settled matches: each bot's tokens,
//! dollars and lost decisions, and the standings by model, are exactly the
//! sums of what the settlements recorded (one settled alone, two in a batch),
//! with unpriced calls counted apart. SQLite and PostgreSQL.

use crate::common;

use common::TestDb;
use duel_ladder_core::model::{BotSource, Fallbacks, ModelUse, PlayRecord, Winner};
use duel_ladder_store::{PairSide, Store};
use duel_rules::WeightClass;

fn builtin() -> BotSource {
    BotSource::builtin("builtin:random".to_owned())
}

fn used(side: usize, model: &str, calls: i64, tokens: i64, cost_usd: Option<f64>) -> ModelUse {
    ModelUse {
        side,
        model: model.to_owned(),
        calls,
        tokens,
        cost_usd,
    }
}

fn close(x: f64, y: f64) -> bool {
    (x - y).abs() < 1e-9
}

async fn accept(store: &Store, bots: [&str; 2]) -> String {
    common::accept_pair(
        store,
        bots.map(|bot_id| PairSide {
            bot_id: bot_id.to_owned(),
            stake: 10,
        }),
    )
    .await
    .expect("accept")
    .id
}

async fn cost_read_back(db: &TestDb) {
    db.store.start_season("s1").await.expect("season");
    let mut ids = Vec::new();
    for name in ["x", "y", "z"] {
        let (owner, _) = db.owner(&format!("owner-{name}"), 10_000).await;
        let bot = db
            .store
            .register_bot(&owner, name, "light", &builtin())
            .await
            .expect("register");
        ids.push(bot.id);
    }
    let [x, y, z] = [&ids[0], &ids[1], &ids[2]];
    let games = [
        (
            [x, y],
            Winner::A,
            PlayRecord {
                play_key: "sha256:1".to_owned(),
                round_wins: [2, 0],
                damage: [50, 10],
                exchanges: 20,
                tokens: [300, 0],
                cost_usd: [Some(0.003), Some(0.0)],
                fallbacks: [
                    Fallbacks {
                        timeout: 1,
                        budget: 2,
                        fault: 0,
                    },
                    Fallbacks::default(),
                ],
                models: vec![used(0, "mini", 3, 300, Some(0.003))],
            },
        ),
        (
            [x, z],
            Winner::B,
            PlayRecord {
                play_key: "sha256:2".to_owned(),
                round_wins: [0, 2],
                damage: [10, 50],
                exchanges: 10,
                tokens: [100, 50],
                cost_usd: [Some(0.001), None],
                fallbacks: [
                    Fallbacks::default(),
                    Fallbacks {
                        timeout: 0,
                        budget: 0,
                        fault: 1,
                    },
                ],
                models: vec![
                    used(0, "mini", 1, 100, Some(0.001)),
                    used(1, "house", 1, 50, None),
                ],
            },
        ),
        (
            [y, z],
            Winner::Draw,
            PlayRecord {
                play_key: "sha256:3".to_owned(),
                round_wins: [1, 1],
                damage: [30, 30],
                exchanges: 30,
                tokens: [0, 0],
                cost_usd: [Some(0.0), Some(0.0)],
                fallbacks: [Fallbacks::default(); 2],
                models: Vec::new(),
            },
        ),
    ];
    let now = 1_000;
    // The first alone, the other two at once (a settlement batch).
    let mut settling = tokio::task::JoinSet::new();
    for (index, (bots, winner, played)) in games.into_iter().enumerate() {
        let match_id = accept(&db.store, [bots[0], bots[1]]).await;
        let claim = db
            .store
            .claim(60_000, now)
            .await
            .expect("claim")
            .expect("queued");
        assert_eq!(claim.game.id, match_id);
        let store = db.store.clone();
        let settle = async move {
            store
                .complete(
                    &match_id,
                    &claim.lease_id,
                    winner,
                    "r.json",
                    Some(&played),
                    now + 1,
                )
                .await
        };
        if index == 0 {
            settle.await.expect("settle");
            // Read between settlements: the page keeps what it read in
            // memory, and that must not outlive the next settlement.
            let reads = db.store.reads();
            let season = reads.active_season().await.expect("read").expect("season");
            let first = reads
                .cost_lines(&season, WeightClass::Light)
                .await
                .expect("cost lines");
            assert_eq!(
                first.iter().map(|line| line.matches).collect::<Vec<_>>(),
                [1, 1],
                "{first:?}"
            );
        } else {
            settling.spawn(settle);
        }
    }
    while let Some(done) = settling.join_next().await {
        done.expect("task").expect("settle");
    }

    let reads = db.store.reads();
    let season = reads.active_season().await.expect("read").expect("season");
    let lines = reads
        .cost_lines(&season, WeightClass::Light)
        .await
        .expect("cost lines");
    let line = |bot: &str| {
        lines
            .iter()
            .find(|line| line.bot == bot)
            .unwrap_or_else(|| panic!("{bot} in {lines:?}"))
    };
    assert_eq!(lines.len(), 3);
    // Cheapest per match first.
    assert_eq!(
        lines
            .iter()
            .map(|line| line.bot.as_str())
            .collect::<Vec<_>>(),
        ["y", "z", "x"]
    );
    let x = line("x");
    assert_eq!((x.matches, x.wins, x.draws, x.losses), (2, 1, 0, 1));
    assert_eq!((x.tokens, x.decisions, x.unpriced_matches), (400, 30, 0));
    assert!(close(x.tokens_per_match, 200.0) && x.tokens_per_win == Some(400.0));
    assert!(close(x.cost_usd, 0.004), "{x:?}");
    assert!(x.cost_per_match_usd.is_some_and(|usd| close(usd, 0.002)));
    assert!(x.cost_per_win_usd.is_some_and(|usd| close(usd, 0.004)));
    assert!(close(x.fallback_share.timeout, 1.0 / 30.0));
    assert!(close(x.fallback_share.budget, 2.0 / 30.0));
    assert!(close(x.fallback_share.fault, 0.0));
    let y = line("y");
    assert_eq!((y.matches, y.wins, y.draws, y.losses), (2, 0, 1, 1));
    assert_eq!((y.tokens, y.tokens_per_win), (0, None));
    assert_eq!(y.cost_per_match_usd, Some(0.0));
    let z = line("z");
    assert_eq!((z.matches, z.wins, z.draws, z.losses), (2, 1, 1, 0));
    assert_eq!((z.tokens, z.unpriced_matches, z.decisions), (50, 1, 40));
    assert_eq!(z.cost_per_match_usd, Some(0.0), "over its one priced match");
    assert_eq!(z.cost_per_win_usd, None, "its win was unpriced");
    assert!(close(z.fallback_share.fault, 1.0 / 40.0));
    assert!(close(x.conservative, x.rating - 2.0 * x.deviation));

    let models = reads
        .model_lines(&season, WeightClass::Light)
        .await
        .expect("model lines");
    assert_eq!(
        models.iter().map(|m| m.model.as_str()).collect::<Vec<_>>(),
        ["house", "mini"],
        "the best score first"
    );
    let house = &models[0];
    assert_eq!(
        (
            house.bots,
            house.matches,
            house.wins,
            house.draws,
            house.losses
        ),
        (1, 1, 1, 0, 0)
    );
    assert_eq!((house.unpriced_matches, house.cost_per_win_usd), (1, None));
    let mini = &models[1];
    assert_eq!(
        (
            mini.bots,
            mini.matches,
            mini.wins,
            mini.losses,
            mini.calls,
            mini.tokens
        ),
        (1, 2, 1, 1, 4, 400)
    );
    assert!(close(mini.score, 0.5) && close(mini.tokens_per_match, 200.0));
    assert!(mini.cost_per_win_usd.is_some_and(|usd| close(usd, 0.004)));
    // The season fit moves ratings without a settlement: the table shows it.
    db.store
        .fit_season_locked(WeightClass::Light)
        .await
        .expect("fit");
    let (_, standings) = db
        .store
        .standings(Some(season.id), Some(WeightClass::Light))
        .await
        .expect("standings");
    let fitted = reads
        .cost_lines(&season, WeightClass::Light)
        .await
        .expect("cost lines");
    for line in &fitted {
        let standing = standings
            .iter()
            .find(|standing| standing.bot_name == line.bot)
            .expect("in the standings");
        assert_eq!(
            (line.rating, line.deviation),
            (standing.rating, standing.deviation),
            "{}",
            line.bot
        );
    }
    // Another class has nothing.
    assert!(
        reads
            .cost_lines(&season, WeightClass::Heavy)
            .await
            .expect("heavy")
            .is_empty()
    );
}
both_backends!(cost_of_a_win_read_back, cost_read_back);

/// Matches accepted before their season ended and settled after it are not
/// rated, but they add to both bots' spend in that season, settled alone or
/// in a batch alike (the batch once skipped the ended season's rows).
async fn spend_after_the_end(db: &TestDb) {
    db.store.start_season("s1").await.expect("season");
    let mut ids = Vec::new();
    for name in ["x", "y", "z"] {
        let (owner, _) = db.owner(&format!("owner-{name}"), 10_000).await;
        let bot = db
            .store
            .register_bot(&owner, name, "light", &builtin())
            .await
            .expect("register");
        ids.push(bot.id);
    }
    let [x, y, z] = [&ids[0], &ids[1], &ids[2]];
    let now = 1_000;
    let mut claims = Vec::new();
    // The batch holds x's two matches, both calling the same model: one row
    // of its sums by model changed twice in one statement on PostgreSQL.
    for (index, bots) in [[y, z], [x, y], [x, z]].into_iter().enumerate() {
        let match_id = accept(&db.store, [bots[0], bots[1]]).await;
        let claim = db
            .store
            .claim(60_000, now)
            .await
            .expect("claim")
            .expect("queued");
        assert_eq!(claim.game.id, match_id);
        let played = PlayRecord {
            play_key: format!("sha256:{index}"),
            round_wins: [2, 0],
            damage: [50, 10],
            exchanges: 20,
            tokens: [100, 10],
            cost_usd: [Some(0.001), Some(0.0001)],
            fallbacks: [Fallbacks::default(); 2],
            models: vec![used(0, "mini", 1, 100, Some(0.001))],
        };
        claims.push((match_id, claim.lease_id, played));
    }
    let season = db.store.end_season().await.expect("end");
    // The first alone, the other two at once (a settlement batch).
    let mut settling = tokio::task::JoinSet::new();
    for (index, (match_id, lease_id, played)) in claims.into_iter().enumerate() {
        let store = db.store.clone();
        let settle = async move {
            store
                .complete(
                    &match_id,
                    &lease_id,
                    Winner::A,
                    "r.json",
                    Some(&played),
                    now + 1,
                )
                .await
        };
        if index == 0 {
            settle.await.expect("settle");
            // Read between settlements: the page keeps what it read in
            // memory, and that must not outlive the next settlement.
            let first = db
                .store
                .reads()
                .cost_lines(&season, WeightClass::Light)
                .await
                .expect("cost lines");
            assert_eq!(
                first.iter().map(|line| line.matches).collect::<Vec<_>>(),
                [1, 1],
                "{first:?}"
            );
        } else {
            settling.spawn(settle);
        }
    }
    while let Some(done) = settling.join_next().await {
        done.expect("task").expect("settle");
    }
    let lines = db
        .store
        .reads()
        .cost_lines(&season, WeightClass::Light)
        .await
        .expect("cost lines");
    let line = |bot: &str| {
        lines
            .iter()
            .find(|line| line.bot == bot)
            .unwrap_or_else(|| panic!("{bot} in {lines:?}"))
    };
    assert_eq!((line("x").matches, line("x").tokens), (2, 200));
    assert_eq!((line("y").matches, line("y").tokens), (2, 110));
    assert_eq!((line("z").matches, line("z").tokens), (2, 20));
    assert!(close(line("x").cost_usd, 0.002), "{lines:?}");
    let models = db
        .store
        .reads()
        .model_lines(&season, WeightClass::Light)
        .await
        .expect("model lines");
    assert_eq!(models.len(), 1, "{models:?}");
    let mini = &models[0];
    assert_eq!(
        (
            mini.model.as_str(),
            mini.bots,
            mini.matches,
            mini.wins,
            mini.calls,
            mini.tokens
        ),
        ("mini", 2, 3, 3, 3, 300)
    );
    assert!(close(mini.cost_usd, 0.003), "{mini:?}");
}
both_backends!(spend_settled_after_the_season_ended, spend_after_the_end);
