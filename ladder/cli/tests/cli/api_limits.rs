//! What keeps one party from exhausting the ladder, on a
//! real `ladder serve` on loopback: the token is checked before a body is
//! decoded (an unauthenticated 60 MiB upload is refused from its headers, and
//! the server's peak memory shows it never held the upload), only uploads get
//! the upload size, bad tokens from one address are rate-limited, and owner
//! quotas (versions, stored bytes, compile seconds a day) refuse with the
//! quota's name and value, on SQLite and PostgreSQL.

// Tests: a failed unwrap is a failed assertion.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::time::Duration;

use common::TestDb;
use common::cli::{Cli, Server, start_server};
use duel_ladder::auth::User;
use duel_ladder::ladder::{Ladder, Registration};
use duel_ladder::model::{BotKind, BotSource, OwnerQuotas};
use duel_ladder::{LadderError, ServiceError};
use duel_proto::v1 as pb;
use duel_proto::v1::ladder_client::LadderClient;
use tonic::Code;
use tonic::transport::Channel;

async fn client(server: &Server) -> LadderClient<Channel> {
    LadderClient::connect(server.url.clone())
        .await
        .unwrap()
        .max_encoding_message_size(128 * 1024 * 1024)
        .max_decoding_message_size(128 * 1024 * 1024)
}

fn with_token<T>(message: T, token: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    request
}

/// The peak resident memory of a process, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

fn wasm_upload(name: &str, bytes: Vec<u8>) -> pb::LadderRegisterBotRequest {
    pb::LadderRegisterBotRequest {
        name: name.into(),
        weight_class: "light".into(),
        source: Some(pb::LadderBotSource {
            source: Some(pb::ladder_bot_source::Source::Wasm(bytes)),
        }),
    }
}

fn builtin(name: &str) -> pb::LadderRegisterBotRequest {
    pb::LadderRegisterBotRequest {
        name: name.into(),
        weight_class: "light".into(),
        source: Some(pb::LadderBotSource {
            source: Some(pb::ladder_bot_source::Source::Builtin(
                "builtin:block".into(),
            )),
        }),
    }
}

/// Answers within 60 s or fails the test (a server that waits for a whole
/// upload it should refuse must not hang the suite).
async fn within<T>(what: &str, call: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), call)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within 60 s"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_are_authenticated_before_they_are_decoded() {
    let db = TestDb::sqlite().await;
    let (_alice, token) = db.owner("alice", 0).await;
    let dir = tempfile::tempdir().unwrap();
    let server = start_server(
        &db.url,
        dir.path(),
        &[
            "--workers",
            "0",
            "--max-versions-per-owner",
            "2",
            "--max-concurrent-uploads",
            "1",
        ],
    );
    let pid = server.child.id();
    let mut ladder = client(&server).await;
    // Warm the server up (a call that allocates what any call does) before
    // reading its peak.
    let whoami = ladder
        .whoami(with_token(pb::LadderWhoamiRequest {}, &token))
        .await
        .unwrap();
    assert_eq!(whoami.into_inner().account.unwrap().name, "alice");
    let before_kib = peak_rss_kib(pid);

    // 60 MiB, under the upload size: refused from the headers, never
    // decoded whole to find no token.
    let upload = vec![0u8; 60 * 1024 * 1024];
    for (what, token) in [("no token", None), ("a wrong token", Some("dlt_wrong"))] {
        let request = wasm_upload("big", upload.clone());
        let request = match token {
            Some(token) => with_token(request, token),
            None => tonic::Request::new(request),
        };
        let status = within(what, ladder.register_bot(request))
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated, "{what}: {status:?}");
    }
    let grown_kib = peak_rss_kib(pid).saturating_sub(before_kib);
    assert!(
        grown_kib < 40 * 1024,
        "the server's peak memory grew by {grown_kib} KiB while refusing unauthenticated 60 MiB uploads: it buffered them"
    );

    // Every other RPC decodes at most 1 MiB, even for a good token.
    let status = ladder
        .show_bot(with_token(
            pb::LadderShowBotRequest {
                name: "x".repeat(2 * 1024 * 1024),
            },
            &token,
        ))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::OutOfRange, "{status:?}");
    // An upload of the same size passes the size check and reaches validation.
    let status = ladder
        .register_bot(with_token(
            wasm_upload("small", vec![0; 2 * 1024 * 1024]),
            &token,
        ))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");

    // One upload turn: uploads arriving together beyond it are refused at
    // once rather than buffered.
    let mut uploads = tokio::task::JoinSet::new();
    for index in 0..4 {
        let mut ladder = ladder.clone();
        let request = with_token(
            wasm_upload(&format!("turn{index}"), vec![0; 30 * 1024 * 1024]),
            &token,
        );
        uploads.spawn(async move { ladder.register_bot(request).await.unwrap_err() });
    }
    let mut busy = 0;
    while let Some(status) = uploads.join_next().await {
        let status = status.unwrap();
        match status.code() {
            Code::ResourceExhausted => {
                assert!(
                    status.message().contains("1 uploads are being received"),
                    "{status:?}"
                );
                busy += 1;
            }
            Code::InvalidArgument => {}
            other => panic!("unexpected {other:?}: {status:?}"),
        }
    }
    assert!(
        (1..4).contains(&busy),
        "{busy} of 4 simultaneous uploads were turned away"
    );

    // The version quota, set on the command line, through the API.
    for name in ["one", "two"] {
        ladder
            .register_bot(with_token(builtin(name), &token))
            .await
            .unwrap();
    }
    let status = ladder
        .register_bot(with_token(builtin("three"), &token))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(
        status.message().contains("bot versions per owner") && status.message().contains("of 2"),
        "{status:?}"
    );
    drop(server);
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_bad_tokens_from_one_address_is_rate_limited() {
    let db = TestDb::sqlite().await;
    let dir = tempfile::tempdir().unwrap();
    // The default limits: 50 calls a second from one address, bursts of 100.
    let server = start_server(&db.url, dir.path(), &["--workers", "0"]);
    let ladder = client(&server).await;
    let started = std::time::Instant::now();
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..300 {
        let mut ladder = ladder.clone();
        calls.spawn(async move {
            ladder
                .whoami(with_token(pb::LadderWhoamiRequest {}, "dlt_guess"))
                .await
                .unwrap_err()
        });
    }
    let mut unauthenticated = 0u64;
    let mut limited = Vec::new();
    while let Some(status) = calls.join_next().await {
        let status = status.unwrap();
        match status.code() {
            Code::Unauthenticated => unauthenticated += 1,
            Code::ResourceExhausted => limited.push(status),
            other => panic!("unexpected {other:?}: {status:?}"),
        }
    }
    // At most the burst plus what the rate refilled while the calls ran
    // reached the token check.
    let refilled = (started.elapsed().as_secs_f64() * 50.0).ceil() as u64;
    assert!(
        unauthenticated <= 100 + refilled + 1 && !limited.is_empty(),
        "{unauthenticated} of 300 bad-token calls reached the token check in {:?}; {} were rate-limited",
        started.elapsed(),
        limited.len()
    );
    let message = limited[0].message();
    assert!(
        message.contains("rate limit")
            && message.contains("127.0.0.1")
            && message.contains("50 calls a second"),
        "{message}"
    );
    drop(server);
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_token_is_rate_limited() {
    let db = TestDb::sqlite().await;
    let (_alice, token) = db.owner("alice", 0).await;
    let dir = tempfile::tempdir().unwrap();
    let server = start_server(
        &db.url,
        dir.path(),
        &[
            "--workers",
            "0",
            "--calls-per-second-per-token",
            "1",
            "--call-burst-per-token",
            "5",
        ],
    );
    let mut ladder = client(&server).await;
    let mut codes = Vec::new();
    for _ in 0..10 {
        let answer = ladder
            .whoami(with_token(pb::LadderWhoamiRequest {}, &token))
            .await;
        codes.push(answer.map(|_| Code::Ok).unwrap_or_else(|status| {
            assert!(status.message().contains("alice's token"), "{status:?}");
            status.code()
        }));
    }
    assert!(codes[..5].iter().all(|code| *code == Code::Ok), "{codes:?}");
    assert!(
        codes[5..]
            .iter()
            .filter(|code| **code == Code::ResourceExhausted)
            .count()
            >= 3,
        "{codes:?}"
    );
    // The bucket is empty: the CLI waits out the server's hint (under a
    // second at one call a second) instead of giving up with exit 2.
    let token_file = dir.path().join("alice.token");
    std::fs::write(&token_file, &token).unwrap();
    let cli = Cli {
        server: &server.url,
    };
    let whoami = cli.ok(&token_file, &["account", "whoami"]);
    assert!(whoami.contains("alice"), "{whoami}");
    drop(server);
    db.cleanup().await;
}

fn fake_wasm(bytes: Vec<u8>) -> BotSource {
    let digest = duel_referee::spec::sha256_digest(&bytes);
    BotSource {
        kind: BotKind::Wasm,
        spec: digest.clone(),
        digest,
        wasm: Some(bytes),
    }
}

fn quota_message(error: impl Into<ServiceError>) -> String {
    match error.into() {
        ServiceError::Ladder(LadderError::Quota(message)) => message,
        other => panic!("expected a quota error, got {other:?}"),
    }
}

async fn quotas_refuse_with_their_name_and_value(db: &TestDb) {
    let (alice, _) = db.owner("alice", 0).await;
    let (bob, _) = db.owner("bob", 0).await;
    let quotas = OwnerQuotas {
        max_bot_versions: 3,
        max_stored_bytes: 10_000,
        compile_seconds_per_day: 5,
    };
    let store = &db.store;
    let register = |owner: &User, name: &str, source: BotSource| {
        let owner = owner.clone();
        let name = name.to_owned();
        async move {
            store
                .register_bot_within(&owner, &name, "light", &source, Some(&quotas))
                .await
        }
    };
    // Stored bytes count each distinct component once.
    register(&alice, "bot-a", fake_wasm(vec![1; 6_000]))
        .await
        .unwrap();
    register(&alice, "bot-a", fake_wasm(vec![1; 6_000]))
        .await
        .unwrap();
    let message = quota_message(
        register(&alice, "bot-b", fake_wasm(vec![2; 6_000]))
            .await
            .unwrap_err(),
    );
    assert!(
        message.contains("stored bytes per owner")
            && message.contains("12000")
            && message.contains("10000"),
        "{message}"
    );
    // Another owner's holdings are its own.
    register(&bob, "bot-c", fake_wasm(vec![2; 6_000]))
        .await
        .unwrap();
    let usage = store.owner_usage(&alice.id).await.unwrap();
    assert_eq!((usage.bot_versions, usage.stored_bytes), (2, 6_000));

    register(&alice, "bot-d", fake_wasm(vec![3; 10]))
        .await
        .unwrap();
    let message = quota_message(
        register(&alice, "bot-e", fake_wasm(vec![4; 10]))
            .await
            .unwrap_err(),
    );
    assert!(
        message.contains("bot versions per owner") && message.contains("3 of 3"),
        "{message}"
    );

    // Through the ladder: compile seconds are charged per owner and day, and
    // a spent allowance refuses before anything is compiled.
    let ladder = Ladder::new(store.clone(), common::host(), false).with_quotas(OwnerQuotas {
        max_bot_versions: 100,
        ..quotas
    });
    let refused = ladder
        .register_bot(&bob, "f", "light", Registration::Wasm(b"not wasm".to_vec()))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, ServiceError::BotRejected(_)),
        "{refused:?}"
    );
    let charged = store.owner_usage(&bob.id).await.unwrap().compile_ms_today;
    assert!(
        charged >= 1,
        "a refused upload still cost compile time: {charged}"
    );
    store.add_compile_ms(&bob.id, 5_000).await.unwrap();
    let message = quota_message(
        ladder
            .register_bot(&bob, "f", "light", Registration::Wasm(b"not wasm".to_vec()))
            .await
            .unwrap_err(),
    );
    assert!(
        message.contains("compile seconds per day") && message.contains("of 5 s"),
        "{message}"
    );
    // Alice's stored bytes are at the quota: her next upload is refused
    // before it is compiled.
    store.add_compile_ms(&alice.id, 1).await.unwrap();
    let ladder = ladder.with_quotas(OwnerQuotas {
        max_stored_bytes: 6_010,
        max_bot_versions: 100,
        ..quotas
    });
    let message = quota_message(
        ladder
            .register_bot(
                &alice,
                "g",
                "light",
                Registration::Wasm(b"not wasm".to_vec()),
            )
            .await
            .unwrap_err(),
    );
    assert!(message.contains("stored bytes per owner"), "{message}");
    assert_eq!(
        store.owner_usage(&alice.id).await.unwrap().compile_ms_today,
        1
    );
}

both_backends!(owner_quotas, quotas_refuse_with_their_name_and_value);

/// Flags that would exhaust the process or hand bots a bad URL are refused by
/// the real binary before it opens anything (exit 2, one line naming why).
#[test]
fn out_of_bounds_flags_are_refused_before_anything_starts() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let db = format!("sqlite://{}", dir.path().join("never.db").display());
    let cases: [(&[&str], &str); 6] = [
        (
            &["worker", "--db", &db, "--workers", "100000"],
            "ladder worker",
        ),
        (
            &["serve", "--db", &db, "--workers", "65"],
            "more than one process runs",
        ),
        (
            &["serve", "--db", &db, "--public-url", "ftp://127.0.0.1/"],
            "not an http:// or https:// URL",
        ),
        (
            &["serve", "--db", &db, "--log-retention-days", "0"],
            "--log-retention-days",
        ),
        (
            &["worker", "--db", &db, "--max-log-bytes-per-owner", "0"],
            "--max-log-bytes-per-owner",
        ),
        (
            &["serve", "--db", &db, "--reveal-transcripts", "sometimes"],
            "never, after-season or after-days:N",
        ),
    ];
    for (args, expected) in cases {
        let output = std::process::Command::new(common::cli::LADDER)
            .args(args)
            .output()
            .expect("ladder runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    assert!(!dir.path().join("never.db").exists(), "nothing was opened");
}
