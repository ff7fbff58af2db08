//! The stakes ledger against real databases: idempotent transfer ids, conflicts,
//! two-phase transfers resolved once, no negative balance, settlement exactly
//! once with the rake, and `ledger check` catching tampering.

use crate::common;

use common::TestDb;
use duel_ladder_core::ledger::{
    ISSUANCE_ACCOUNT, LedgerViolation, TransferOp, TransferOutcome, TransferRequest, owner_account,
};
use duel_ladder_core::model::{BotSource, Winner};
use duel_ladder_store::LadderError;
use duel_ladder_store::PairSide;

fn single(id: &str, debit: &str, credit: &str, amount: i64) -> TransferRequest {
    TransferRequest {
        id: id.to_owned(),
        op: TransferOp::Single {
            debit: debit.to_owned(),
            credit: credit.to_owned(),
            amount,
        },
        memo: String::new(),
    }
}

pub async fn builtin_bot(db: &TestDb, owner: &duel_ladder_core::auth::User, name: &str) -> String {
    let spec = "builtin:counter".to_owned();
    let source = BotSource::builtin(spec);
    db.store
        .register_bot(owner, name, "middle", &source)
        .await
        .expect("register")
        .id
}

async fn duplicate_and_conflicting_ids(db: &TestDb) {
    let (alice, _) = db.owner("alice", 100).await;
    let (bob, _) = db.owner("bob", 0).await;
    let (a, b) = (owner_account(&alice.id), owner_account(&bob.id));
    let first = single("t1", &a, &b, 30);
    assert_eq!(
        db.store.transfer(&first).await.expect("first"),
        TransferOutcome::Created
    );
    assert_eq!(
        db.store.transfer(&first).await.expect("retry"),
        TransferOutcome::AlreadyExists
    );
    assert_eq!(
        db.store.account(&b).await.expect("bob").available(),
        30,
        "a retry moves nothing"
    );
    for different in [single("t1", &a, &b, 31), single("t1", &b, &a, 30), {
        let mut memo = first.clone();
        memo.memo = "other".into();
        memo
    }] {
        let error = db.store.transfer(&different).await.expect_err("conflict");
        assert!(
            matches!(&error, LadderError::Conflict(message) if message.contains("exists with different fields")),
            "{error}"
        );
    }
    // No account below zero, and a refused transfer leaves no trace.
    let error = db
        .store
        .transfer(&single("t2", &b, &a, 31))
        .await
        .expect_err("overdraft");
    assert!(
        matches!(error, LadderError::InsufficientCredits(_)),
        "{error}"
    );
    assert!(db.store.transfer_by_id("t2").await.expect("read").is_none());
    assert_eq!(db.store.account(&b).await.expect("bob").available(), 30);
    // Two-phase: a pending transfer reserves, and is resolved at most once.
    let pending = TransferRequest {
        id: "p1".into(),
        op: TransferOp::Pending {
            debit: a.clone(),
            credit: b.clone(),
            amount: 50,
        },
        memo: String::new(),
    };
    db.store.transfer(&pending).await.expect("pending");
    assert_eq!(
        db.store.account(&a).await.expect("alice").available(),
        20,
        "reserved"
    );
    let error = db
        .store
        .transfer(&single("t3", &a, &b, 21))
        .await
        .expect_err("reserved credits are not spendable");
    assert!(
        matches!(error, LadderError::InsufficientCredits(_)),
        "{error}"
    );
    let post = TransferRequest {
        id: "p1-post".into(),
        op: TransferOp::Post {
            pending_id: "p1".into(),
        },
        memo: String::new(),
    };
    db.store.transfer(&post).await.expect("post");
    assert_eq!(
        db.store.transfer(&post).await.expect("post retry"),
        TransferOutcome::AlreadyExists
    );
    let void = TransferRequest {
        id: "p1-void".into(),
        op: TransferOp::Void {
            pending_id: "p1".into(),
        },
        memo: String::new(),
    };
    let error = db
        .store
        .transfer(&void)
        .await
        .expect_err("second resolution");
    assert!(
        matches!(&error, LadderError::Conflict(message) if message.contains("already resolved")),
        "{error}"
    );
    assert_eq!(db.store.account(&b).await.expect("bob").available(), 80);
    let report = db
        .store
        .ledger_check()
        .await
        .expect("check")
        .expect("clean ledger");
    assert_eq!(report.credits_in_circulation, 100);
    assert_eq!(
        -db.store
            .account(ISSUANCE_ACCOUNT)
            .await
            .expect("issuance")
            .available(),
        100
    );
}
both_backends!(
    duplicate_and_conflicting_transfer_ids,
    duplicate_and_conflicting_ids
);

async fn settlement_once_with_rake(db: &TestDb) {
    db.store.start_season("s1").await.expect("season");
    let (alice, _) = db.owner("alice", 1_000).await;
    let (bob, _) = db.owner("bob", 1_000).await;
    let bot_a = builtin_bot(db, &alice, "alpha").await;
    let bot_b = builtin_bot(db, &bob, "bravo").await;
    let game = common::accept_pair(
        &db.store,
        [
            PairSide {
                bot_id: bot_a.clone(),
                stake: 100,
            },
            PairSide {
                bot_id: bot_b.clone(),
                stake: 99,
            },
        ],
    )
    .await
    .expect("accept");
    assert_eq!(
        db.store.available(&alice.id).await.expect("balance"),
        900,
        "stake in escrow"
    );
    let now = 1_000;
    let claim = db
        .store
        .claim(10_000, now)
        .await
        .expect("claim")
        .expect("a match");
    assert_eq!(claim.game.id, game.id);
    assert!(
        db.store.claim(10_000, now).await.expect("claim").is_none(),
        "held by a lease"
    );
    let settlement = db
        .store
        .complete(
            &game.id,
            &claim.lease_id,
            Winner::A,
            "r.json",
            None,
            now + 5,
        )
        .await
        .expect("settle");
    // Pot 199 at 5%: 9.95 rounds down to 9; the winner gets 190.
    assert_eq!(
        (settlement.pot, settlement.rake, settlement.payout),
        (199, 9, 190)
    );
    let again = db
        .store
        .complete(
            &game.id,
            &claim.lease_id,
            Winner::A,
            "r.json",
            None,
            now + 6,
        )
        .await
        .expect("idempotent");
    assert!(again.already_settled);
    assert_eq!((again.rake, again.payout), (9, 190));
    assert_eq!(db.store.available(&alice.id).await.expect("alice"), 1_090);
    assert_eq!(db.store.available(&bob.id).await.expect("bob"), 901);
    let report = db
        .store
        .ledger_check()
        .await
        .expect("check")
        .expect("clean");
    assert_eq!(report.house_credits, 9);
    // A draw returns both stakes in full with no rake.
    db.store
        .start_season("never")
        .await
        .expect_err("one season at a time");
    let draw = common::accept_pair(
        &db.store,
        [
            PairSide {
                bot_id: bot_b,
                stake: 50,
            },
            PairSide {
                bot_id: bot_a,
                stake: 50,
            },
        ],
    )
    .await
    .expect("accept");
    let claim = db
        .store
        .claim(10_000, now)
        .await
        .expect("claim")
        .expect("match");
    let settlement = db
        .store
        .complete(
            &draw.id,
            &claim.lease_id,
            Winner::Draw,
            "d.json",
            None,
            now + 1,
        )
        .await
        .expect("draw");
    assert_eq!(settlement.rake, 0);
    assert_eq!(db.store.available(&alice.id).await.expect("alice"), 1_090);
    db.store
        .ledger_check()
        .await
        .expect("check")
        .expect("clean");
}
both_backends!(settlement_exactly_once_with_rake, settlement_once_with_rake);

async fn rake_pinned_at_acceptance(db: &TestDb) {
    db.store.start_season("s1").await.expect("season");
    let (alice, _) = db.owner("alice", 1_000).await;
    let (bob, _) = db.owner("bob", 1_000).await;
    let bot_a = builtin_bot(db, &alice, "alpha").await;
    let bot_b = builtin_bot(db, &bob, "bravo").await;
    let pair = || {
        [
            PairSide {
                bot_id: bot_a.clone(),
                stake: 100,
            },
            PairSide {
                bot_id: bot_b.clone(),
                stake: 100,
            },
        ]
    };
    let running = common::accept_pair(&db.store, pair())
        .await
        .expect("accept");
    assert_eq!(running.rake_bp, 500, "the default rake");
    let now = 1_000;
    let claim = db
        .store
        .claim(10_000, now)
        .await
        .expect("claim")
        .expect("a match");
    assert_eq!(claim.game.rake_bp, 500, "the claim reads the pinned rake");
    // The operator raises the rake while the match runs.
    db.store.set_setting("rake_bp", 2_000).await.expect("rake");
    let settlement = db
        .store
        .complete(
            &running.id,
            &claim.lease_id,
            Winner::A,
            "r.json",
            None,
            now + 1,
        )
        .await
        .expect("settle");
    assert_eq!(
        (settlement.rake, settlement.payout),
        (10, 190),
        "5% pinned at acceptance, not the 20% set since"
    );
    let later = common::accept_pair(&db.store, pair())
        .await
        .expect("accept");
    assert_eq!(later.rake_bp, 2_000);
    let claim = db
        .store
        .claim(10_000, now)
        .await
        .expect("claim")
        .expect("a match");
    let settlement = db
        .store
        .complete(
            &later.id,
            &claim.lease_id,
            Winner::B,
            "r.json",
            None,
            now + 1,
        )
        .await
        .expect("settle");
    assert_eq!((settlement.rake, settlement.payout), (40, 160));
    assert_eq!(
        db.store
            .reads()
            .game(&later.id)
            .await
            .expect("match")
            .rake_bp,
        2_000
    );
    db.store
        .ledger_check()
        .await
        .expect("check")
        .expect("clean");
}
both_backends!(rake_is_pinned_at_acceptance, rake_pinned_at_acceptance);

async fn tampering_is_named(db: &TestDb) {
    let (alice, _) = db.owner("alice", 100).await;
    db.store
        .ledger_check()
        .await
        .expect("check")
        .expect("clean before");
    sqlx::query("UPDATE ledger_accounts SET credits_posted = credits_posted + 1 WHERE id = $1")
        .bind(owner_account(&alice.id))
        .execute(&sqlx::AnyPool::connect(&db.url).await.expect("pool"))
        .await
        .expect("tamper");
    let violation = db
        .store
        .ledger_check()
        .await
        .expect("check")
        .expect_err("tampered");
    assert_eq!(
        violation,
        LedgerViolation::SumDiffers {
            account: owner_account(&alice.id),
            field: "credits_posted",
            stored: 101,
            history: 100,
        }
    );
    assert_eq!(
        violation.to_string(),
        format!(
            "account {} has credits_posted 101 but its transfers sum to 100",
            owner_account(&alice.id)
        )
    );
}
both_backends!(ledger_check_names_the_first_violation, tampering_is_named);
