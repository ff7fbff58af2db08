//! The local-folder replay store after a crash, on a real folder: temporary
//! files a crashed writer left are removed at open, an index update cut short
//! is finished by the next process, and a torn index entry is rebuilt from its
//! replay, so listings stay complete and correct.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use duel_replays::store::{ListQuery, ReplayStore};

const FIXTURE: &[u8] = include_bytes!("fixtures/random-vs-counter.json");

/// The fixture as replay `id`, accepted on day `day` of January 2026.
fn replay(id: &str, day: u8) -> Vec<u8> {
    let mut value: serde_json::Value = serde_json::from_slice(FIXTURE).expect("fixture json");
    value["match_id"] = id.into();
    value["accepted_at"] = format!("2026-01-{day:02}T10:00:00Z").into();
    serde_json::to_vec_pretty(&value).expect("json")
}

fn open(root: &Path) -> ReplayStore {
    ReplayStore::open(root.to_str().expect("utf-8 path")).expect("open store")
}

fn query(bot: Option<&str>) -> ListQuery {
    ListQuery {
        bot: bot.map(str::to_owned),
        limit: 10,
        ..ListQuery::default()
    }
}

async fn listed(store: &ReplayStore, bot: Option<&str>) -> Vec<String> {
    store
        .list(&query(bot))
        .await
        .expect("list")
        .replays
        .into_iter()
        .map(|meta| meta.id)
        .collect()
}

/// Every file under `folder`, recursively, relative to it.
fn files(folder: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![folder.to_owned()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(folder).expect("under").to_owned());
            }
        }
    }
    out.sort();
    out
}

/// The index entries (relative paths) of the replay whose name ends in `id`.
fn entries_of(root: &Path, id: &str) -> Vec<PathBuf> {
    files(root)
        .into_iter()
        .filter(|path| {
            path.starts_with("index") && path.to_string_lossy().ends_with(&format!("-{id}"))
        })
        .collect()
}

fn backdate(path: &Path, age: Duration) {
    File::options()
        .write(true)
        .open(path)
        .and_then(|file| file.set_modified(SystemTime::now() - age))
        .expect("backdate");
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn temporary_files_of_a_crashed_writer_are_removed_at_open() {
    let folder = tempfile::tempdir().expect("temp dir");
    let root = folder.path().join("store");
    let runtime = runtime();
    let store = open(&root);
    runtime.block_on(async {
        store.put_json(&replay("r-1", 1)).await.expect("put");
        store.put_json(&replay("r-2", 2)).await.expect("put");
    });
    drop(store);
    let clean = files(&root);
    assert!(
        clean
            .iter()
            .all(|path| !path.to_string_lossy().ends_with(".partial")),
        "{clean:?}"
    );

    // A writer killed mid-write an hour ago, and one writing right now.
    let crashed = root.join(".tmp/4242-7.partial");
    let live = root.join(".tmp/4243-0.partial");
    std::fs::write(&crashed, b"half a rep").expect("write");
    std::fs::write(&live, b"half a rep").expect("write");
    backdate(&crashed, Duration::from_secs(3600));

    let store = open(&root);
    assert!(!crashed.exists(), "the crashed writer's file is removed");
    assert!(live.exists(), "a live writer's file is left alone");
    runtime.block_on(async {
        assert_eq!(listed(&store, None).await, ["r-2", "r-1"]);
    });
}

#[test]
fn partial_files_of_the_older_layout_are_removed_at_first_open() {
    let folder = tempfile::tempdir().expect("temp dir");
    let root = folder.path().join("store");
    let runtime = runtime();
    let store = open(&root);
    runtime.block_on(async {
        store.put_json(&replay("r-1", 1)).await.expect("put");
    });
    drop(store);
    // The older layout: no temporary folder, `.partial` files beside objects.
    std::fs::remove_dir_all(root.join(".tmp")).expect("remove");
    let order = entries_of(&root, "r-1")[0]
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let left = [
        root.join("replays/.r-9.json.zst.311-0.partial"),
        root.join(format!("index/all/.{order}.311-1.partial")),
        root.join("index/class/middle/.x.311-2.partial"),
    ];
    for path in &left {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, b"{\"id\":").expect("write");
    }

    let store = open(&root);
    for path in &left {
        assert!(!path.exists(), "{} is removed", path.display());
    }
    assert!(root.join(".tmp").is_dir());
    runtime.block_on(async {
        assert_eq!(listed(&store, None).await, ["r-1"]);
        store.put_json(&replay("r-2", 2)).await.expect("put");
        assert_eq!(listed(&store, None).await, ["r-2", "r-1"]);
    });
}

#[test]
fn an_index_update_cut_short_is_finished_by_the_next_process() {
    let folder = tempfile::tempdir().expect("temp dir");
    let root = folder.path().join("store");
    let runtime = runtime();
    let store = open(&root);
    runtime.block_on(async {
        store.put_json(&replay("r-1", 1)).await.expect("put");
        store.put_json(&replay("r-2", 2)).await.expect("put");
    });
    drop(store);
    assert!(
        files(&root.join("index"))
            .iter()
            .all(|path| !path.starts_with("pending")),
        "a finished put leaves no journal entry"
    );
    // Crash after the journal entry and the first index entry of r-2: only
    // `index/all` has it, the class and bot listings do not.
    let entries = entries_of(&root, "r-2");
    assert!(entries.len() >= 4, "{entries:?}");
    let all = entries
        .iter()
        .find(|path| path.starts_with("index/all"))
        .expect("index/all entry");
    let name = all.file_name().expect("name");
    std::fs::create_dir_all(root.join("index/pending")).expect("mkdir");
    std::fs::copy(root.join(all), root.join("index/pending").join(name)).expect("journal");
    for entry in &entries {
        if entry != all {
            std::fs::remove_file(root.join(entry)).expect("remove");
        }
    }

    let store = open(&root);
    runtime.block_on(async {
        assert_eq!(
            listed(&store, Some("builtin:counter")).await,
            ["r-2", "r-1"],
            "the bot listing has the replay again"
        );
        assert_eq!(listed(&store, None).await, ["r-2", "r-1"]);
    });
    assert_eq!(entries_of(&root, "r-2"), entries, "every entry is back");
    assert!(
        !root.join("index/pending").join(name).exists(),
        "the journal entry is removed once done"
    );
}

#[test]
fn a_torn_index_entry_is_rebuilt_from_its_replay() {
    let folder = tempfile::tempdir().expect("temp dir");
    let root = folder.path().join("store");
    let runtime = runtime();
    let store = open(&root);
    let expected = runtime.block_on(async {
        store.put_json(&replay("r-1", 1)).await.expect("put");
        store.put_json(&replay("r-2", 2)).await.expect("put");
        store.list(&query(None)).await.expect("list").replays
    });
    drop(store);
    // A rename acknowledged before the data reached the disk: after the crash
    // the entry is empty, or cut short.
    let entries = entries_of(&root, "r-1");
    let all = entries
        .iter()
        .find(|path| path.starts_with("index/all"))
        .expect("index/all entry");
    std::fs::write(root.join(all), b"").expect("truncate");
    let bots: Vec<&PathBuf> = entries
        .iter()
        .filter(|path| path.starts_with("index/bot"))
        .collect();
    assert_eq!(bots.len(), 4, "two fighters, by name and by digest");
    for bot in &bots {
        std::fs::write(root.join(bot), b"{\"id\":\"r-1\",\"acc").expect("tear");
    }

    let store = open(&root);
    runtime.block_on(async {
        let page = store.list(&query(None)).await.expect("list");
        assert_eq!(page.replays, expected, "the listing is whole and correct");
        for fighter in &expected[1].fighters {
            assert_eq!(listed(&store, Some(&fighter.name)).await, ["r-2", "r-1"]);
            assert_eq!(listed(&store, Some(&fighter.digest)).await, ["r-2", "r-1"]);
        }
    });
    for entry in bots.into_iter().chain([all]) {
        let body = std::fs::read(root.join(entry)).expect("read");
        assert!(
            serde_json::from_slice::<serde_json::Value>(&body).is_ok(),
            "{} is written back whole",
            entry.display()
        );
    }
}

/// A store without its own index (the ladder's: its database lists the
/// replays) writes one file per replay and nothing else; it keeps the same
/// promises: the same bytes again are a no-op, other bytes are refused.
#[test]
fn a_store_without_index_writes_one_file_per_replay() {
    let folder = tempfile::tempdir().expect("temp dir");
    let store = open(folder.path()).without_index();
    assert!(!store.is_indexed());
    runtime().block_on(async {
        for (id, day) in [("m1", 1), ("m2", 2), ("m3", 3)] {
            store.put_json(&replay(id, day)).await.expect("put");
        }
        store.put_json(&replay("m2", 2)).await.expect("same bytes");
        let refused = store.put_json(&replay("m2", 9)).await;
        assert!(
            matches!(refused, Err(duel_replays::ReplayError::Conflict(_))),
            "{refused:?}"
        );
        assert_eq!(
            store.get_json("m3").await.expect("get"),
            Some(replay("m3", 3))
        );
        assert!(listed(&store, None).await.is_empty(), "no index of its own");
    });
    let written: Vec<PathBuf> = files(folder.path())
        .into_iter()
        .filter(|path| !path.starts_with("tmp"))
        .collect();
    assert_eq!(
        written,
        ["m1", "m2", "m3"].map(|id| PathBuf::from(format!("replays/{id}.json.zst")))
    );
}
