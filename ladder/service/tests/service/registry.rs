//! Registration refuses what a referee would refuse, on both backends: WASM
//! uploads go through the sandbox's loader and are refused with the sandbox's
//! own one-line reason (garbage, a core module, a component of another world, a
//! truncated component, over the cap); endpoint bots must answer `Hello` for
//! ruleset 1.0.0 and pass the address policy. A refusal registers nothing.

use crate::common;

use common::TestDb;
use common::bots::{serve_endpoint_bot, wasm};
use duel_ladder::ladder::{Ladder, Registration};
use duel_ladder::{LadderError, ServiceError};

async fn endpoint_bots_are_checked(db: &TestDb) {
    // A loopback endpoint, allowed by this ladder's operator.
    let ladder = Ladder::new(db.store.clone(), common::host(), true);
    let (alice, _) = db.owner("alice", 0).await;
    let url = serve_endpoint_bot(&["0.9.0", "1.0.0"]).await;
    ladder
        .register_bot(
            &alice,
            "remote",
            "light",
            Registration::Endpoint(url.clone()),
        )
        .await
        .expect("an endpoint that plays 1.0.0 registers");
    // Refusals: nothing answers; another ruleset; the URL policy.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("address")
    };
    let error = ladder
        .register_bot(
            &alice,
            "gone",
            "light",
            Registration::Endpoint(format!("grpc://{closed}")),
        )
        .await
        .expect_err("nothing listens there");
    let message = error.to_string();
    assert!(matches!(error, ServiceError::BotRejected(_)), "{message}");
    assert!(message.contains("did not answer Hello"), "{message}");
    assert_eq!(message.lines().count(), 1, "{message}");
    let old = serve_endpoint_bot(&["0.9.0"]).await;
    let message = ladder
        .register_bot(&alice, "old", "light", Registration::Endpoint(old))
        .await
        .expect_err("another ruleset")
        .to_string();
    assert!(
        message.contains("plays rulesets [0.9.0], not 1.0.0"),
        "{message}"
    );
    let strict = Ladder::new(db.store.clone(), common::host(), false);
    let message = strict
        .register_bot(&alice, "local", "light", Registration::Endpoint(url))
        .await
        .expect_err("loopback refused")
        .to_string();
    assert!(message.contains("loopback, private"), "{message}");
    for name in ["gone", "old", "local"] {
        assert!(
            matches!(
                db.store.reads().bot(name).await,
                Err(LadderError::NotFound(_))
            ),
            "{name} was not registered"
        );
    }
}
both_backends!(endpoint_registration, endpoint_bots_are_checked);

/// What the referee says for these bytes: the sandbox's one-line reason.
async fn referee_reason(bytes: &[u8]) -> String {
    common::host()
        .load_component(bytes.to_vec(), duel_referee::limits::DECISION_WALL_CLOCK)
        .await
        .expect_err("the referee refuses it too")
        .to_string()
}

async fn uploads_are_validated_by_the_sandbox(db: &TestDb) {
    let ladder = Ladder::new(db.store.clone(), common::host(), false);
    let (alice, _) = db.owner("alice", 0).await;
    let counter = wasm("counter");
    let mut truncated = counter.clone();
    truncated.truncate(counter.len() / 2);
    let cases: [(&str, Vec<u8>, &str); 5] = [
        ("garbage", b"not wasm at all".to_vec(), "no \\0asm header"),
        (
            "core",
            vec![0, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
            "this is a core wasm module",
        ),
        (
            "empty-component",
            vec![0, 0x61, 0x73, 0x6d, 0x0d, 0, 1, 0],
            "not a duel:bot component",
        ),
        ("truncated", truncated, "invalid component"),
        (
            "huge",
            vec![0; duel_ladder::limits::MAX_WASM_BYTES + 1],
            "over the cap",
        ),
    ];
    for (name, bytes, reason) in cases {
        let error = ladder
            .register_bot(&alice, name, "light", Registration::Wasm(bytes.clone()))
            .await
            .expect_err(name);
        let message = error.to_string();
        assert!(
            matches!(error, ServiceError::BotRejected(_)),
            "{name}: {message}"
        );
        assert!(message.contains(reason), "{name}: {message}");
        assert_eq!(message.lines().count(), 1, "{name}: {message}");
        assert_eq!(
            message,
            format!("bot rejected: {}", referee_reason(&bytes).await),
            "{name}: the referee's own reason"
        );
    }
    assert!(db.store.bots(None).await.expect("bots").is_empty());
}
both_backends!(uploads_validated, uploads_are_validated_by_the_sandbox);

/// Names are unique whatever their letter case, so no owner passes for
/// another on the site; the store's index holds it, and the refusal says why.
async fn look_alike_names_are_refused(db: &TestDb) {
    let ladder = Ladder::new(db.store.clone(), common::host(), false);
    let (alice, _) = db.owner("alice", 0).await;
    let error = db
        .store
        .create_user("Alice", duel_ladder::auth::Role::Owner)
        .await
        .expect_err("Alice beside alice");
    assert!(matches!(error, LadderError::Conflict(_)), "{error}");
    assert!(error.to_string().contains("letter case"), "{error}");
    for reserved in ["house", "Issuance"] {
        let error = db
            .store
            .create_user(reserved, duel_ladder::auth::Role::Operator)
            .await
            .expect_err(reserved);
        assert!(matches!(error, LadderError::Invalid(_)), "{error}");
    }
    ladder
        .register_bot(
            &alice,
            "b-wasm",
            "light",
            Registration::Builtin("builtin:counter".to_owned()),
        )
        .await
        .expect("the first b-wasm");
    let (bob, _) = db.owner("bob", 0).await;
    for look_alike in ["B-wasm", "B-WASM"] {
        let error = ladder
            .register_bot(
                &bob,
                look_alike,
                "light",
                Registration::Builtin("builtin:counter".to_owned()),
            )
            .await
            .expect_err(look_alike);
        assert!(
            matches!(error, ServiceError::Ladder(LadderError::Conflict(_))),
            "{error}"
        );
    }
    for dotted in [".", "..", "b-wasm."] {
        let error = ladder
            .register_bot(
                &bob,
                dotted,
                "light",
                Registration::Builtin("builtin:counter".to_owned()),
            )
            .await
            .expect_err(dotted);
        assert!(
            matches!(error, ServiceError::Ladder(LadderError::Invalid(_))),
            "{error}"
        );
    }
    assert_eq!(db.store.bots(None).await.expect("bots").len(), 1);
}
both_backends!(look_alike_names, look_alike_names_are_refused);
