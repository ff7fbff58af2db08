//! Replay stores: where published replays live, compressed, with a small index
//! for listing by bot, season and class, newest first.
//!
//! One trait, [`StoreBackend`], is all a storage system must provide (put, get,
//! list names in order); [`ReplayStore`] builds replays and their index on top of
//! it, so the local folder and the S3-compatible object store behave alike.
//!
//! Layout under the store's root (a folder, or a bucket prefix):
//! - `replays/<id>.json.zst` — the replay JSON as received, zstd-compressed.
//! - `index/all/<order>`, `index/class/<class>/<order>`,
//!   `index/season/<h>/<order>`, `index/bot/<h>/<order>` — one small JSON
//!   [`ReplayMeta`] per replay in each listing it belongs to. `<order>` is
//!   `<u64::MAX − accepted_at in ms, 20 digits>-<id>`, so names sort newest first;
//!   `<h>` is the first 32 hex digits of the SHA-256 of the bot name, bot digest
//!   or season (so any value makes a safe key). A listing reads one of these
//!   folders in name order and resumes after its cursor, never every replay.
//!
//! - `index/pending/<order>` — the index entry of a replay whose entries are
//!   being written: the journal that makes an index update all-or-nothing.
//! - `transcripts/<id>.json.zst` — the match's `duel-transcript/1`, kept
//!   apart from its public replay: never listed, never served by the replay
//!   service; its owner's service decides who reads it and when
//!   ([`ReplayStore::get_transcript`]).
//!
//! A store opened [`ReplayStore::without_index`] writes the replay object
//! alone: its listing is kept by its owner instead (the ladder lists its
//! replays from its database, in the transaction that settles each match) and
//! served through [`ReplayIndex`]. One file or object per replay.
//!
//! The replay object is written before its index entries, so a listing never
//! names a replay that cannot be fetched. Before the entries, the entry is put
//! in `index/pending/`; after all of them, it is removed. A writer that crashes
//! in between leaves the journal entry, and the next process to use the store
//! writes the missing entries (every put is atomic and the entries are the
//! same bytes, so writing them again is harmless). A replay whose writer
//! crashed before the journal entry is fetchable but unlisted; publishing it
//! again lists it.

mod local;
#[cfg(feature = "s3")]
mod s3;

use std::fmt;
use std::io::Read;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::ReplayError;
use crate::format::{ClassName, Replay, WinnerName};
use crate::limits::{
    MAX_CURSOR_BYTES, MAX_FILTER_BYTES, MAX_LISTING_SCAN, MAX_PAGE_REPLAYS, MAX_REPLAY_BYTES,
    MAX_REPLAY_ID_BYTES, MAX_TRANSCRIPT_BYTES, ZSTD_LEVEL,
};
use crate::transcript::Transcript;

pub use local::LocalBackend;
#[cfg(feature = "s3")]
pub use s3::S3Backend;

/// What opening an `s3://` store says in a build without the `s3` feature.
pub const NO_S3_SUPPORT: &str = "this build has no S3 replay stores: build it with `--features s3` \
     (cargo run --release -p duel-referee --features s3 -- …)";

/// What a storage system provides to hold replays. Keys are `/`-separated
/// relative names of safe characters (`A-Z a-z 0-9 - _ . /`).
pub trait StoreBackend: Send + Sync + fmt::Debug {
    /// Writes `bytes` at `key`, replacing what was there, atomically.
    fn put<'a>(&'a self, key: &'a str, bytes: Vec<u8>) -> BoxFuture<'a, Result<(), ReplayError>>;
    /// Writes `bytes` at `key` only when nothing is there, atomically (two
    /// writers racing: one wins). `false` when something was: nothing written.
    fn put_new<'a>(
        &'a self,
        key: &'a str,
        bytes: Vec<u8>,
    ) -> BoxFuture<'a, Result<bool, ReplayError>>;
    /// The bytes at `key`, or `None` when there is nothing there.
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, ReplayError>>;
    /// Removes the object at `key`; nothing there is not an error.
    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), ReplayError>>;
    /// Names of the objects directly in folder `prefix` that sort strictly after
    /// `after`, in ascending byte order, at most `limit` of them.
    fn list_after<'a>(
        &'a self,
        prefix: &'a str,
        after: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<String>, ReplayError>>;
}

/// A listing of replays kept outside the store (see
/// [`ReplayStore::without_index`]): the ladder's database answers it.
pub trait ReplayIndex: Send + Sync + fmt::Debug {
    /// One page of replays matching `query` (already checked with
    /// [`check_query`]), newest first.
    fn list<'a>(&'a self, query: &'a ListQuery) -> BoxFuture<'a, Result<ListPage, ReplayError>>;
}

/// The index record of one replay: enough to list it without reading it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayMeta {
    pub id: String,
    pub accepted_at: String,
    pub class: ClassName,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub season: Option<String>,
    pub fighters: [IndexedFighter; 2],
    pub winner: WinnerName,
    pub signed: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexedFighter {
    pub name: String,
    pub digest: String,
}

/// A listing request. Filters combine with AND; `bot` matches either fighter's
/// name or digest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListQuery {
    pub bot: Option<String>,
    pub season: Option<String>,
    pub class: Option<ClassName>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size, 1 to [`MAX_PAGE_REPLAYS`].
    pub limit: usize,
}

/// One page of a listing, newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ListPage {
    pub replays: Vec<ReplayMeta>,
    /// Pass as `cursor` to continue; `None` when the listing is complete.
    pub next_cursor: Option<String>,
}

/// A store of published replays over one [`StoreBackend`].
#[derive(Clone, Debug)]
pub struct ReplayStore {
    backend: Arc<dyn StoreBackend>,
    description: String,
    /// Set once the journal a crashed writer left has been replayed.
    recovered: Arc<tokio::sync::OnceCell<()>>,
    /// Whether this store keeps the listing index beside the replays.
    indexed: bool,
}

/// The journal folder: index entries of replays being indexed.
const PENDING_FOLDER: &str = "index/pending";

/// Checks a replay id: 1 to [`MAX_REPLAY_ID_BYTES`] of `A-Z a-z 0-9 - _`.
pub fn validate_id(id: &str) -> Result<(), ReplayError> {
    if is_safe_name(id, MAX_REPLAY_ID_BYTES) {
        Ok(())
    } else {
        Err(ReplayError::BadId(shorten(id)))
    }
}

fn is_safe_name(text: &str, max_bytes: usize) -> bool {
    !text.is_empty()
        && text.len() <= max_bytes
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
}

/// An untrusted value cut for an error message.
fn shorten(text: &str) -> String {
    let mut end = text.len().min(40);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = &text[..end];
    if end < text.len() {
        format!("{cut:?}…")
    } else {
        format!("{cut:?}")
    }
}

fn value_hash(value: &str) -> String {
    let digest = Sha256::digest(value.as_bytes());
    digest
        .iter()
        .take(16)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

fn replay_key(id: &str) -> String {
    format!("replays/{id}.json.zst")
}

/// The sortable name of a replay in every index folder.
fn order_name(accepted_at: &str, id: &str) -> Result<String, ReplayError> {
    let accepted =
        time::OffsetDateTime::parse(accepted_at, &time::format_description::well_known::Rfc3339)
            .map_err(|error| {
                ReplayError::Store(format!(
                    "accepted_at {accepted_at:?} is not RFC 3339: {error}"
                ))
            })?;
    let millis = u64::try_from(accepted.unix_timestamp_nanos() / 1_000_000).unwrap_or(0);
    Ok(format!("{:020}-{id}", u64::MAX - millis))
}

thread_local! {
    /// One compression context per thread, made on first use: a fresh one per
    /// replay (what `zstd::bulk::compress` does) allocates and clears its
    /// tables each time. The frames are the same bytes either way.
    static COMPRESSOR: std::cell::Cell<Option<zstd::bulk::Compressor<'static>>> =
        const { std::cell::Cell::new(None) };
}

/// Compresses replay JSON for storage.
pub fn compress(json: &[u8]) -> Result<Vec<u8>, ReplayError> {
    let failed =
        |error: std::io::Error| ReplayError::Store(format!("cannot compress replay: {error}"));
    COMPRESSOR.with(|slot| {
        let mut compressor = match slot.take() {
            Some(compressor) => compressor,
            None => zstd::bulk::Compressor::new(ZSTD_LEVEL).map_err(failed)?,
        };
        let compressed = compressor.compress(json).map_err(failed);
        slot.replace(Some(compressor));
        compressed
    })
}

/// Decompresses stored replay bytes, refusing output over [`MAX_REPLAY_BYTES`].
pub fn decompress(compressed: &[u8]) -> Result<Vec<u8>, ReplayError> {
    decompress_at_most(compressed, MAX_REPLAY_BYTES)
}

fn decompress_at_most(compressed: &[u8], limit_bytes: u64) -> Result<Vec<u8>, ReplayError> {
    let decoder = zstd::stream::read::Decoder::new(compressed)
        .map_err(|error| ReplayError::Store(format!("cannot decompress: {error}")))?;
    let mut json = Vec::new();
    decoder
        .take(limit_bytes + 1)
        .read_to_end(&mut json)
        .map_err(|error| ReplayError::Store(format!("cannot decompress: {error}")))?;
    if json.len() as u64 > limit_bytes {
        return Err(ReplayError::TooLarge {
            size_bytes: json.len() as u64,
            limit_bytes,
        });
    }
    Ok(json)
}

fn transcript_key(id: &str) -> String {
    format!("transcripts/{id}.json.zst")
}

impl ReplayStore {
    /// A store over any backend.
    pub fn new(backend: Arc<dyn StoreBackend>, description: String) -> ReplayStore {
        ReplayStore {
            backend,
            description,
            recovered: Arc::new(tokio::sync::OnceCell::new()),
            indexed: true,
        }
    }

    /// This store, writing each replay as one object and no index entries:
    /// for an owner that keeps the listing itself (the ladder: its settled
    /// matches are the index) and serves it through a [`ReplayIndex`].
    /// [`ReplayStore::list`] then answers only what an indexed writer left.
    pub fn without_index(mut self) -> ReplayStore {
        self.indexed = false;
        self
    }

    /// Whether [`ReplayStore::put_json`] writes listing index entries.
    pub fn is_indexed(&self) -> bool {
        self.indexed
    }

    /// Finishes the index updates a crashed writer left in the journal, once
    /// per store value, before the first put or listing. Also runs when other
    /// writers are live: their entries are written twice, identically.
    async fn recover(&self) -> Result<(), ReplayError> {
        self.recovered
            .get_or_try_init(|| async {
                let mut after: Option<String> = None;
                loop {
                    let names = self
                        .backend
                        .list_after(PENDING_FOLDER, after.as_deref(), 256)
                        .await?;
                    let Some(last) = names.last().cloned() else {
                        return Ok(());
                    };
                    for name in names {
                        self.finish_pending(&name).await?;
                    }
                    after = Some(last);
                }
            })
            .await
            .map(|_| ())
    }

    /// Writes every index entry of the journal entry `name`, then removes it.
    async fn finish_pending(&self, name: &str) -> Result<(), ReplayError> {
        let key = format!("{PENDING_FOLDER}/{name}");
        let from_journal = self
            .backend
            .get(&key)
            .await?
            .and_then(|body| serde_json::from_slice::<ReplayMeta>(&body).ok());
        // The journal entry is written atomically, so it is whole; should it not
        // be (a store written before puts were synced), the replay says the same.
        let meta = match from_journal {
            Some(meta) => Some(meta),
            None => self.meta_from_replay(name).await?,
        };
        if let Some(meta) = meta {
            self.write_index(&meta, name).await?;
        }
        self.backend.delete(&key).await
    }

    /// The index entry of the replay an index name (`<order>-<id>`) points to,
    /// rebuilt from the replay; `None` when the replay is missing or unreadable.
    async fn meta_from_replay(&self, order: &str) -> Result<Option<ReplayMeta>, ReplayError> {
        let Some((_, id)) = order.split_once('-') else {
            return Ok(None);
        };
        if validate_id(id).is_err() {
            return Ok(None);
        }
        let Ok(Some(json)) = self.get_json(id).await else {
            return Ok(None);
        };
        let Ok(replay) = Replay::from_slice(&json) else {
            return Ok(None);
        };
        match (meta_of(&replay), order_name(&replay.accepted_at, id)) {
            // The name must still be this replay's: it may have been published
            // again with another acceptance time since.
            (Ok(meta), Ok(expected)) if expected == order => Ok(Some(meta)),
            _ => Ok(None),
        }
    }

    async fn write_index(&self, meta: &ReplayMeta, order: &str) -> Result<(), ReplayError> {
        let entry = encode_entry(meta)?;
        for folder in index_folders(meta) {
            self.backend
                .put(&format!("{folder}/{order}"), entry.clone())
                .await?;
        }
        Ok(())
    }

    #[cfg(feature = "s3")]
    fn open_s3(rest: &str, options: &[(&str, &str)]) -> Result<ReplayStore, ReplayError> {
        let backend = S3Backend::open(rest, options)?;
        Ok(ReplayStore::new(Arc::new(backend), format!("s3://{rest}")))
    }

    /// A build without the `s3` feature names the one step that adds it.
    #[cfg(not(feature = "s3"))]
    fn open_s3(_rest: &str, _options: &[(&str, &str)]) -> Result<ReplayStore, ReplayError> {
        Err(ReplayError::Store(NO_S3_SUPPORT.to_owned()))
    }

    /// Opens the store named by `url`: a plain path or `file:///path` (a local
    /// folder, created if missing), or `s3://bucket[/prefix]` with the endpoint,
    /// region and credentials from the standard `AWS_*` environment variables.
    pub fn open(url: &str) -> Result<ReplayStore, ReplayError> {
        ReplayStore::open_with(url, &[])
    }

    /// Like [`ReplayStore::open`], with object-store options (`aws_endpoint`,
    /// `aws_allow_http`, …) that override the environment.
    pub fn open_with(url: &str, options: &[(&str, &str)]) -> Result<ReplayStore, ReplayError> {
        if let Some(rest) = url.strip_prefix("s3://") {
            return ReplayStore::open_s3(rest, options);
        }
        let path = match url.strip_prefix("file://") {
            Some(path) => path,
            None if url.contains("://") => {
                return Err(ReplayError::Store(format!(
                    "unknown store URL {}: use a folder path, file:///path or s3://bucket/prefix",
                    shorten(url)
                )));
            }
            None => url,
        };
        if path.is_empty() {
            return Err(ReplayError::Store(
                "the store folder path is empty".to_owned(),
            ));
        }
        let backend = LocalBackend::open(std::path::Path::new(path))?;
        Ok(ReplayStore::new(Arc::new(backend), path.to_owned()))
    }

    /// Publishes replay JSON: checks that it parses, compresses it as received
    /// (a signature covers those bytes), and indexes it. Publishing the same
    /// bytes again is a no-op; other bytes under a published id are refused
    /// with [`ReplayError::Conflict`].
    pub async fn put_json(&self, json: &[u8]) -> Result<ReplayMeta, ReplayError> {
        let replay = Replay::from_slice(json)?;
        self.put_parsed(&replay, json).await
    }

    /// Publishes a replay as its pretty JSON.
    pub async fn put(&self, replay: &Replay) -> Result<ReplayMeta, ReplayError> {
        let json = replay.to_json_pretty();
        // The bytes are this replay's own: checked as `put_json` would check
        // them, without parsing them back (every ranked match comes here).
        replay.check_writable(json.len())?;
        self.put_parsed(replay, json.as_bytes()).await
    }

    /// [`ReplayStore::put_json`] of `json`, which is `replay`'s JSON.
    async fn put_parsed(&self, replay: &Replay, json: &[u8]) -> Result<ReplayMeta, ReplayError> {
        let meta = meta_of(replay)?;
        let order = order_name(&replay.accepted_at, &replay.match_id)?;
        if self.indexed {
            self.recover().await?;
        }
        // A published replay is never replaced: its URL is cached as
        // immutable. Publishing the same bytes again is a no-op here (and
        // finishes its index entries below); other bytes are refused.
        let key = replay_key(&meta.id);
        if !self.backend.put_new(&key, compress(json)?).await? {
            let stored = match self.backend.get(&key).await? {
                Some(compressed) => Some(decompress(&compressed)?),
                None => None,
            };
            if stored.as_deref() != Some(json) {
                return Err(ReplayError::Conflict(meta.id));
            }
        }
        if !self.indexed {
            return Ok(meta);
        }
        // The journal entry first: from here on, a crash is finished by the
        // next process to use the store, so the entries appear all or none.
        let pending = format!("{PENDING_FOLDER}/{order}");
        self.backend.put(&pending, encode_entry(&meta)?).await?;
        self.write_index(&meta, &order).await?;
        self.backend.delete(&pending).await?;
        Ok(meta)
    }

    /// The stored (zstd-compressed) bytes of a replay, or `None` if unknown.
    pub async fn get_compressed(&self, id: &str) -> Result<Option<Vec<u8>>, ReplayError> {
        validate_id(id)?;
        self.backend.get(&replay_key(id)).await
    }

    /// A replay's JSON as published, or `None` if unknown.
    pub async fn get_json(&self, id: &str) -> Result<Option<Vec<u8>>, ReplayError> {
        match self.get_compressed(id).await? {
            Some(compressed) => decompress(&compressed).map(Some),
            None => Ok(None),
        }
    }

    /// One page of replays matching `query`, newest first.
    pub async fn list(&self, query: &ListQuery) -> Result<ListPage, ReplayError> {
        check_query(query)?;
        self.recover().await?;
        let folder = if let Some(bot) = &query.bot {
            format!("index/bot/{}", value_hash(bot))
        } else if let Some(season) = &query.season {
            format!("index/season/{}", value_hash(season))
        } else if let Some(class) = query.class {
            format!("index/class/{}", class_name(class))
        } else {
            "index/all".to_owned()
        };
        let mut replays = Vec::new();
        let mut cursor = query.cursor.clone();
        let mut scanned = 0usize;
        loop {
            let batch_size = (query.limit * 2)
                .clamp(16, 256)
                .min(MAX_LISTING_SCAN - scanned);
            let names = self
                .backend
                .list_after(&folder, cursor.as_deref(), batch_size)
                .await?;
            let exhausted = names.len() < batch_size;
            // Entries are read a few at a time in parallel; order is kept.
            let entries: Vec<(String, Option<Vec<u8>>)> = futures::stream::iter(names)
                .map(|name| {
                    let key = format!("{folder}/{name}");
                    async move { self.backend.get(&key).await.map(|body| (name, body)) }
                })
                .buffered(8)
                .try_collect()
                .await?;
            for (name, body) in entries {
                scanned += 1;
                let parsed = body.and_then(|body| serde_json::from_slice::<ReplayMeta>(&body).ok());
                let meta = match parsed {
                    Some(meta) => Some(meta),
                    None => self.heal_entry(&folder, &name).await,
                };
                cursor = Some(name);
                // An entry that cannot be healed is skipped: the listing must not
                // fail for all.
                let Some(meta) = meta else {
                    continue;
                };
                if matches(&meta, query) {
                    replays.push(meta);
                    if replays.len() == query.limit {
                        return Ok(ListPage {
                            replays,
                            next_cursor: cursor,
                        });
                    }
                }
            }
            if exhausted {
                return Ok(ListPage {
                    replays,
                    next_cursor: None,
                });
            }
            if scanned >= MAX_LISTING_SCAN {
                return Ok(ListPage {
                    replays,
                    next_cursor: cursor,
                });
            }
        }
    }

    /// A torn index entry (a crash of a writer that did not sync its files)
    /// rebuilt from its replay and written back whole; `None` when the replay
    /// is gone too. Best effort: a failed rewrite still lists the replay.
    async fn heal_entry(&self, folder: &str, name: &str) -> Option<ReplayMeta> {
        let meta = self.meta_from_replay(name).await.ok().flatten()?;
        if let Ok(entry) = encode_entry(&meta) {
            let _ = self.backend.put(&format!("{folder}/{name}"), entry).await;
        }
        Some(meta)
    }

    /// Keeps a match's transcript apart from its replay (see the module
    /// docs: never listed, never served by the replay service). Keeping the
    /// same transcript again is a no-op; another under the same match id is
    /// refused with [`ReplayError::Conflict`], as replays are.
    pub async fn put_transcript(&self, transcript: &Transcript) -> Result<(), ReplayError> {
        validate_id(&transcript.match_id)?;
        let json = transcript.to_json_pretty();
        if json.len() as u64 > MAX_TRANSCRIPT_BYTES {
            return Err(ReplayError::TooLarge {
                size_bytes: json.len() as u64,
                limit_bytes: MAX_TRANSCRIPT_BYTES,
            });
        }
        let key = transcript_key(&transcript.match_id);
        if !self
            .backend
            .put_new(&key, compress(json.as_bytes())?)
            .await?
        {
            let stored = match self.backend.get(&key).await? {
                Some(compressed) => Some(decompress_at_most(&compressed, MAX_TRANSCRIPT_BYTES)?),
                None => None,
            };
            if stored.as_deref() != Some(json.as_bytes()) {
                return Err(ReplayError::Conflict(transcript.match_id.clone()));
            }
        }
        Ok(())
    }

    /// Keeps `transcript` in place of the match's transcript kept before (a
    /// retention that drops one side rewrites the other's), or drops the
    /// match's transcript when `transcript` has no decision left.
    pub async fn replace_transcript(&self, transcript: &Transcript) -> Result<(), ReplayError> {
        validate_id(&transcript.match_id)?;
        let key = transcript_key(&transcript.match_id);
        if transcript.decisions.is_empty() {
            return self.backend.delete(&key).await;
        }
        let json = transcript.to_json_pretty();
        self.backend.put(&key, compress(json.as_bytes())?).await
    }

    /// A match's transcript JSON as kept, or `None` when there is none
    /// (no fighter called a model, or the match is unknown).
    pub async fn get_transcript(&self, id: &str) -> Result<Option<Vec<u8>>, ReplayError> {
        validate_id(id)?;
        match self.backend.get(&transcript_key(id)).await? {
            Some(compressed) => decompress_at_most(&compressed, MAX_TRANSCRIPT_BYTES).map(Some),
            None => Ok(None),
        }
    }

    /// Where replay `id` is kept in this store (a file path or an object URL),
    /// for records and messages.
    pub fn location(&self, id: &str) -> String {
        format!(
            "{}/{}",
            self.description.trim_end_matches('/'),
            replay_key(id)
        )
    }

    /// Where the store is (a folder path or `s3://bucket/prefix`), for messages.
    pub fn description(&self) -> &str {
        &self.description
    }
}

/// The index entry of a replay, after checking its id and season.
fn meta_of(replay: &Replay) -> Result<ReplayMeta, ReplayError> {
    validate_id(&replay.match_id)?;
    let season = replay.season.clone();
    if let Some(season) = &season
        && (season.is_empty() || season.len() > MAX_FILTER_BYTES)
    {
        return Err(ReplayError::Malformed(format!(
            "season must be 1 to {MAX_FILTER_BYTES} bytes"
        )));
    }
    Ok(ReplayMeta {
        id: replay.match_id.clone(),
        accepted_at: replay.accepted_at.clone(),
        class: replay.class,
        season,
        fighters: replay.fighters.clone().map(|fighter| IndexedFighter {
            name: fighter.name.to_string(),
            digest: fighter.digest.to_string(),
        }),
        winner: replay.result.winner,
        signed: replay.signature.is_some(),
    })
}

fn encode_entry(meta: &ReplayMeta) -> Result<Vec<u8>, ReplayError> {
    serde_json::to_vec(meta)
        .map_err(|error| ReplayError::Store(format!("cannot encode index entry: {error}")))
}

fn class_name(class: ClassName) -> &'static str {
    duel_rules::WeightClass::from(class).name()
}

fn index_folders(meta: &ReplayMeta) -> Vec<String> {
    let mut folders = vec![
        "index/all".to_owned(),
        format!("index/class/{}", class_name(meta.class)),
    ];
    if let Some(season) = &meta.season {
        folders.push(format!("index/season/{}", value_hash(season)));
    }
    let mut bot_values: Vec<&str> = meta
        .fighters
        .iter()
        .flat_map(|fighter| [fighter.name.as_str(), fighter.digest.as_str()])
        .collect();
    bot_values.sort_unstable();
    bot_values.dedup();
    for value in bot_values {
        folders.push(format!("index/bot/{}", value_hash(value)));
    }
    folders
}

fn matches(meta: &ReplayMeta, query: &ListQuery) -> bool {
    let bot_ok = query.bot.as_deref().is_none_or(|bot| {
        meta.fighters
            .iter()
            .any(|fighter| fighter.name == bot || fighter.digest == bot)
    });
    let season_ok = query
        .season
        .as_deref()
        .is_none_or(|season| meta.season.as_deref() == Some(season));
    let class_ok = query.class.is_none_or(|class| meta.class == class);
    bot_ok && season_ok && class_ok
}

/// Checks a listing request: the page size, the filters' sizes, and that a
/// cursor is made of safe characters.
pub fn check_query(query: &ListQuery) -> Result<(), ReplayError> {
    if query.limit == 0 || query.limit > MAX_PAGE_REPLAYS {
        return Err(ReplayError::BadQuery(format!(
            "limit must be 1 to {MAX_PAGE_REPLAYS}, not {}",
            query.limit
        )));
    }
    for (name, value) in [("bot", &query.bot), ("season", &query.season)] {
        if let Some(value) = value
            && (value.is_empty() || value.len() > MAX_FILTER_BYTES)
        {
            return Err(ReplayError::BadQuery(format!(
                "{name} must be 1 to {MAX_FILTER_BYTES} bytes"
            )));
        }
    }
    if let Some(cursor) = &query.cursor
        && !is_safe_name(cursor, MAX_CURSOR_BYTES)
    {
        return Err(ReplayError::BadQuery(format!(
            "cursor {} is not one this service gave",
            shorten(cursor)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without the feature an `s3://` URL is refused with the step that adds
    /// it; with it, the URL reaches the S3 backend, which refuses an empty
    /// bucket name for its own reason (no URL here names a bucket: opening
    /// one would reach for the network).
    #[test]
    fn an_s3_url_names_the_feature_only_when_the_build_lacks_it() {
        let error = ReplayStore::open("s3://")
            .map(|_| ())
            .expect_err("an s3:// URL without a bucket is refused")
            .to_string();
        if cfg!(feature = "s3") {
            assert_eq!(error, "replay store: s3:// URL has no bucket name");
        } else {
            assert!(error.contains(NO_S3_SUPPORT), "{error}");
        }
    }

    #[test]
    fn a_reused_compression_context_writes_the_same_frames_as_a_fresh_one() {
        let replays: Vec<Vec<u8>> = (0..5)
            .map(|size| {
                format!(
                    "{{\"exchanges\":[{}]}}",
                    "{\"a\":\"JAB\"},".repeat(size * 400)
                )
                .into_bytes()
            })
            .collect();
        // Largest first, so later, smaller inputs run in a context sized for it.
        for json in replays.iter().rev().chain(&replays) {
            let compressed = compress(json).expect("compress");
            let fresh = zstd::bulk::compress(json, ZSTD_LEVEL).expect("fresh context");
            assert_eq!(compressed, fresh);
            assert_eq!(&decompress(&compressed).expect("decompress"), json);
        }
    }
}
