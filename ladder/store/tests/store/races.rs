//! Two owners' requests racing on one row, many trials each, on both
//! backends: enqueueing and activating one bot at once leave it in exactly one
//! of the two (PostgreSQL locks the bot's row; without the lock both checks
//! passed in 7 of 8 trials), and owners registering the same new name at once
//! get one bot and refusals, never a database error.

use crate::common;

use common::TestDb;
use duel_ladder_core::model::{BotSource, Play};
use duel_ladder_store::LadderError;

/// Trials of each race.
const TRIALS: usize = 16;
/// Owners registering one name at once.
const REGISTRANTS: usize = 6;

fn builtin() -> BotSource {
    BotSource::builtin("builtin:random".to_owned())
}

async fn enqueue_races_activate(db: &TestDb) {
    db.store.start_season("s1").await.expect("season");
    let (owner, _) = db.owner("racer", 100_000).await;
    for trial in 0..TRIALS {
        let name = format!("twin{trial}");
        db.store
            .register_bot(&owner, &name, "light", &builtin())
            .await
            .expect("register");
        let enqueue = {
            let (store, owner, name) = (db.store.clone(), owner.clone(), name.clone());
            tokio::spawn(async move { store.enqueue(&owner, &name, 10).await.map(|_| ()) })
        };
        let activate = {
            let (store, owner, name) = (db.store.clone(), owner.clone(), name.clone());
            tokio::spawn(async move { store.activate(&owner, &name, 10).await.map(|_| ()) })
        };
        let results = [
            enqueue.await.expect("enqueue task"),
            activate.await.expect("activate task"),
        ];
        let queued = db
            .store
            .queue(Some("light"))
            .await
            .expect("queue")
            .iter()
            .any(|entry| entry.bot_name == name);
        let active = db.store.reads().bot(&name).await.expect("bot").play != Play::Inactive;
        assert!(
            !(queued && active),
            "trial {trial}: {name} is both queued and active after {results:?}"
        );
        assert_eq!(
            results.iter().filter(|result| result.is_ok()).count(),
            1,
            "trial {trial}: exactly one of enqueue and activate wins: {results:?}"
        );
        for result in &results {
            if let Err(error) = result {
                assert!(
                    matches!(error, LadderError::Conflict(_)),
                    "trial {trial}: the loser is told why: {error}"
                );
            }
        }
        assert!(queued || active, "trial {trial}: the winner's state stands");
    }
}
both_backends!(enqueue_and_activate_at_once, enqueue_races_activate);

async fn one_name_registered_at_once(db: &TestDb) {
    let mut owners = Vec::new();
    for index in 0..REGISTRANTS {
        owners.push(db.owner(&format!("registrant{index}"), 0).await.0);
    }
    for trial in 0..TRIALS {
        let name = format!("prize{trial}");
        let tasks: Vec<_> = owners
            .iter()
            .map(|owner| {
                let (store, owner, name) = (db.store.clone(), owner.clone(), name.clone());
                tokio::spawn(async move {
                    store
                        .register_bot(&owner, &name, "light", &builtin())
                        .await
                        .map(|bot| bot.owner_id)
                })
            })
            .collect();
        let mut winners = Vec::new();
        for task in tasks {
            match task.await.expect("register task") {
                Ok(owner_id) => winners.push(owner_id),
                Err(LadderError::Conflict(_) | LadderError::PermissionDenied(_)) => {}
                Err(other) => panic!("trial {trial}: a lost race is a refusal, not {other}"),
            }
        }
        assert_eq!(winners.len(), 1, "trial {trial}: one owner gets {name}");
        assert_eq!(
            db.store.reads().bot(&name).await.expect("bot").owner_id,
            winners[0],
            "trial {trial}"
        );
    }
}
both_backends!(one_new_name_registered_by_many, one_name_registered_at_once);
