//! Round trips through both replay stores: the local folder, and an S3
//! bucket on a real S3-compatible server (moto) started on 127.0.0.1.

use crate::support;

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use duel_replays::ClassName;
use duel_replays::store::{ListQuery, ReplayStore};
use duel_rules::WeightClass;

/// Three real replays, oldest first; the newest carries a season.
fn replays() -> Vec<Vec<u8>> {
    let key = support::referee_key();
    let first = support::play(
        "r-1",
        "2026-01-01T10:00:00Z",
        WeightClass::Middle,
        1,
        "builtin:random",
        "builtin:block",
    );
    let second = support::play(
        "r-2",
        "2026-01-02T10:00:00Z",
        WeightClass::Heavy,
        2,
        "builtin:counter",
        "builtin:random",
    );
    let third = support::play(
        "r-3",
        "2026-01-03T10:00:00.5+02:00",
        WeightClass::Middle,
        3,
        "builtin:counter",
        "builtin:block",
    );
    let mut third: serde_json::Value =
        serde_json::from_str(&support::signed(third, &key).to_json_pretty()).expect("json");
    // The ladder's optional top-level season field.
    third["season"] = serde_json::json!("2026-winter");
    vec![
        support::signed(first, &key).to_json_pretty().into_bytes(),
        second.to_json_pretty().into_bytes(),
        serde_json::to_vec_pretty(&third).expect("json"),
    ]
}

fn ids(page: &duel_replays::store::ListPage) -> Vec<&str> {
    page.replays.iter().map(|meta| meta.id.as_str()).collect()
}

fn query(limit: usize) -> ListQuery {
    ListQuery {
        limit,
        ..ListQuery::default()
    }
}

async fn round_trip(store: &ReplayStore) {
    let replays = replays();
    for bytes in &replays {
        store.put_json(bytes).await.expect("put");
    }
    for (id, bytes) in ["r-1", "r-2", "r-3"].iter().zip(&replays) {
        let json = store.get_json(id).await.expect("get").expect("present");
        assert_eq!(&json, bytes, "replay {id} comes back byte for byte");
        let compressed = store
            .get_compressed(id)
            .await
            .expect("get")
            .expect("present");
        assert!(
            compressed.len() < bytes.len() / 3,
            "{id} is stored compressed"
        );
    }
    // A published replay is never replaced (it is served as immutable): the
    // same bytes again are a no-op, other bytes under its id are refused.
    store
        .put_json(&replays[0])
        .await
        .expect("the same bytes again");
    let mut other = replays[0].clone();
    other.extend_from_slice(b"\n");
    match store.put_json(&other).await {
        Err(duel_replays::ReplayError::Conflict(id)) => assert_eq!(id, "r-1"),
        outcome => panic!("other bytes under r-1 must be refused, not {outcome:?}"),
    }
    assert_eq!(
        store.get_json("r-1").await.expect("get").as_ref(),
        Some(&replays[0]),
        "the first publication stands"
    );
    assert_eq!(store.get_json("r-404").await.expect("get"), None);
    assert!(store.get_json("../etc/passwd").await.is_err());

    let all = store.list(&query(10)).await.expect("list");
    assert_eq!(ids(&all), ["r-3", "r-2", "r-1"], "newest first");
    assert_eq!(all.next_cursor, None);
    assert_eq!(all.replays[0].season.as_deref(), Some("2026-winter"));
    assert!(all.replays[0].signed && !all.replays[1].signed && all.replays[2].signed);

    let first_page = store.list(&query(2)).await.expect("list");
    assert_eq!(ids(&first_page), ["r-3", "r-2"]);
    let rest = store
        .list(&ListQuery {
            cursor: first_page.next_cursor.clone(),
            ..query(2)
        })
        .await
        .expect("list");
    assert_eq!(ids(&rest), ["r-1"]);
    assert_eq!(rest.next_cursor, None);

    let by_bot = |bot: &str| ListQuery {
        bot: Some(bot.to_owned()),
        ..query(10)
    };
    assert_eq!(
        ids(&store.list(&by_bot("builtin:counter")).await.expect("list")),
        ["r-3", "r-2"]
    );
    assert_eq!(
        ids(&store.list(&by_bot("builtin:block")).await.expect("list")),
        ["r-3", "r-1"]
    );
    let digest = all.replays[2].fighters[1].digest.clone();
    assert_eq!(
        ids(&store.list(&by_bot(&digest)).await.expect("list")),
        ["r-3", "r-1"],
        "by digest"
    );
    assert!(
        store
            .list(&by_bot("nobody"))
            .await
            .expect("list")
            .replays
            .is_empty()
    );

    let heavy = ListQuery {
        class: Some(ClassName::Heavy),
        ..query(10)
    };
    assert_eq!(ids(&store.list(&heavy).await.expect("list")), ["r-2"]);
    let season = ListQuery {
        season: Some("2026-winter".to_owned()),
        ..query(10)
    };
    assert_eq!(ids(&store.list(&season).await.expect("list")), ["r-3"]);
    let combined = ListQuery {
        bot: Some("builtin:block".to_owned()),
        class: Some(ClassName::Middle),
        season: Some("2026-winter".to_owned()),
        ..query(10)
    };
    assert_eq!(ids(&store.list(&combined).await.expect("list")), ["r-3"]);

    let bad_cursor = ListQuery {
        cursor: Some("../../x".to_owned()),
        ..query(10)
    };
    assert!(store.list(&bad_cursor).await.is_err());
    assert!(store.list(&query(0)).await.is_err());
    assert!(
        store
            .put_json(b"{\"format\": \"duel-replay/1\"}")
            .await
            .is_err()
    );
}

#[test]
fn local_folder_round_trip() {
    let folder = tempfile::tempdir().expect("temp dir");
    let url = format!("file://{}", folder.path().join("store").display());
    let store = ReplayStore::open(&url).expect("open");
    support::runtime().block_on(round_trip(&store));
    assert!(folder.path().join("store/replays/r-1.json.zst").is_file());
}

#[test]
fn unknown_store_urls_are_refused() {
    let error = ReplayStore::open("ftp://host/x").expect_err("refused");
    assert!(error.to_string().contains("unknown store URL"), "{error}");
    assert!(ReplayStore::open("s3://").is_err());
}

/// The S3 store is the `s3` feature's (on in the shipped set that CI tests).
#[cfg(feature = "s3")]
mod s3 {
    use super::*;

    /// A moto S3 server on a free loopback port, killed on drop.
    struct Moto {
        child: Child,
        port: u16,
    }

    impl Drop for Moto {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// A moto server, or `None` (the test skipped) where moto is not installed.
    fn start_moto() -> Option<Moto> {
        let Some(moto_server) = support::services::program(&["moto_server"]) else {
            support::services::skip(
                "moto",
                "moto_server is not on PATH; scripts/ensure-moto.sh installs it",
            );
            return None;
        };
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(moto_server)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| {
                panic!("cannot start moto_server ({error}): install it with scripts/ensure-moto.sh")
            });
        let mut moto = Moto { child, port };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(moto);
            }
            if let Ok(Some(status)) = moto.child.try_wait() {
                panic!(
                    "moto_server exited at start ({status}): install it with scripts/ensure-moto.sh"
                );
            }
            assert!(
                Instant::now() < deadline,
                "moto_server did not listen on port {port} within 20 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    #[test]
    fn s3_bucket_round_trip() {
        let Some(moto) = start_moto() else {
            return;
        };
        let endpoint = format!("http://127.0.0.1:{}", moto.port);
        let runtime = support::runtime();
        runtime.block_on(async {
            // moto accepts unsigned requests; object_store cannot create buckets.
            let created = reqwest::Client::new()
                .put(format!("{endpoint}/duel-replays"))
                .send()
                .await
                .expect("create bucket");
            assert!(
                created.status().is_success(),
                "create bucket: {}",
                created.status()
            );
        });
        let options = [
            ("aws_endpoint", endpoint.as_str()),
            ("aws_allow_http", "true"),
            ("aws_access_key_id", "test"),
            ("aws_secret_access_key", "test"),
            ("aws_region", "us-east-1"),
        ];
        let store = ReplayStore::open_with("s3://duel-replays/ranked/v1", &options).expect("open");
        runtime.block_on(round_trip(&store));
        runtime.block_on(async {
            // The objects sit under the prefix in the bucket.
            let listing = reqwest::Client::new()
                .get(format!(
                    "{endpoint}/duel-replays?list-type=2&prefix=ranked/v1/replays/"
                ))
                .send()
                .await
                .expect("list bucket")
                .text()
                .await
                .expect("text");
            assert!(
                listing.contains("ranked/v1/replays/r-1.json.zst"),
                "{listing}"
            );
        });
    }
}
