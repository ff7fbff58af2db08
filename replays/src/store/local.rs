//! The local-folder backend: one file per object, written atomically and
//! durably (temporary file, `fsync`, rename, `fsync` of the folder), with the
//! temporary files of a crashed writer removed at open.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;

use crate::error::ReplayError;
use crate::store::StoreBackend;

/// The folder under the root that holds files being written. One folder (on
/// the root's file system, so a rename out of it stays atomic) means a sweep
/// reads one small directory, not every index folder.
const TEMPORARY_FOLDER: &str = ".tmp";

/// A temporary file older than this belongs to a writer that crashed: a write
/// takes milliseconds. Age, not the writer's process id, decides, because
/// writers in other containers (other pid namespaces) may share the folder.
const STALE_PARTIAL_AGE: Duration = Duration::from_secs(10 * 60);

/// How often a long-running process sweeps again, so a crash of one writer
/// does not leave files until the next restart of another.
const SWEEP_INTERVAL: Duration = Duration::from_secs(60 * 60);

/// Folders below the root that an older layout left temporary files in
/// (`replays/`, `index/all/`, `index/bot/<h>/`, …): how deep to look.
const LEGACY_SWEEP_DEPTH: usize = 3;

#[derive(Debug)]
pub struct LocalBackend {
    root: PathBuf,
    temporary: PathBuf,
    /// Seconds since the epoch of the last sweep of the temporary folder.
    last_sweep_secs: AtomicU64,
}

impl LocalBackend {
    /// Opens (creating if needed) the folder at `root`, and removes what a
    /// crashed writer left: temporary files older than [`STALE_PARTIAL_AGE`]
    /// and, the first time a store of the older layout is opened, the
    /// `.partial` files it scattered through its folders.
    pub fn open(root: &Path) -> Result<LocalBackend, ReplayError> {
        std::fs::create_dir_all(root)
            .map_err(|error| io_error(root, "create store folder", error))?;
        let temporary = root.join(TEMPORARY_FOLDER);
        if !temporary.is_dir() {
            // The older layout wrote `.<name>.<pid>-<n>.partial` beside each
            // object. Swept once; later writers use the temporary folder only.
            sweep_legacy_partials(root, LEGACY_SWEEP_DEPTH);
            std::fs::create_dir_all(&temporary)
                .map_err(|error| io_error(&temporary, "create", error))?;
            sync_folder(root)?;
        }
        sweep_temporary(&temporary, SystemTime::now());
        Ok(LocalBackend {
            root: root.to_owned(),
            temporary,
            last_sweep_secs: AtomicU64::new(now_secs()),
        })
    }

    fn path(&self, key: &str) -> PathBuf {
        self.root.join(key)
    }

    /// Sweeps the temporary folder again when the last sweep is over
    /// [`SWEEP_INTERVAL`] old (one reader wins the race; the others skip).
    fn sweep_if_due(&self) {
        let now = now_secs();
        let last = self.last_sweep_secs.load(Ordering::Relaxed);
        if now.saturating_sub(last) >= SWEEP_INTERVAL.as_secs()
            && self
                .last_sweep_secs
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            sweep_temporary(&self.temporary, SystemTime::now());
        }
    }
}

fn io_error(path: &Path, action: &str, error: std::io::Error) -> ReplayError {
    ReplayError::Store(format!("cannot {action} {}: {error}", path.display()))
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or(0)
}

/// Removes temporary files last modified before `now − STALE_PARTIAL_AGE`.
/// Best effort: a file that vanished meanwhile (renamed by its live writer)
/// or cannot be removed is left for the next sweep.
fn sweep_temporary(temporary: &Path, now: SystemTime) {
    let Ok(entries) = std::fs::read_dir(temporary) else {
        return;
    };
    let Some(cutoff) = now.checked_sub(STALE_PARTIAL_AGE) else {
        return;
    };
    for entry in entries.flatten() {
        let stale = entry
            .metadata()
            .and_then(|metadata| metadata.modified())
            .is_ok_and(|modified| modified < cutoff);
        if stale {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Removes every `.…partial` file in `folder` and its subfolders down to
/// `depth`. Only hidden names ending in `.partial`: nothing the store lists.
fn sweep_legacy_partials(folder: &Path, depth: usize) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if file_type.is_dir() {
            if depth > 0 && name != TEMPORARY_FOLDER {
                sweep_legacy_partials(&entry.path(), depth - 1);
            }
        } else if file_type.is_file() && name.starts_with('.') && name.ends_with(".partial") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Makes a folder's entries (a rename into it, a new subfolder) durable.
fn sync_folder(folder: &Path) -> Result<(), ReplayError> {
    File::open(folder)
        .and_then(|handle| handle.sync_all())
        .map_err(|error| io_error(folder, "sync folder", error))
}

/// A temporary name unique across threads and processes on this machine.
fn unique_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}.partial",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// The blocking part of a put: the bytes reach the disk before the rename, and
/// the rename (and any new folder) before the put returns, so an acknowledged
/// write survives a crash whole, and an unacknowledged one leaves at most a
/// temporary file for the next sweep.
///
/// With `replace` false, the file is linked into place only when nothing is
/// there (a hard link fails on an existing name, atomically): `Ok(false)` then,
/// and nothing changed.
fn write_durably(
    root: &Path,
    temporary_folder: &Path,
    path: &Path,
    bytes: &[u8],
    replace: bool,
) -> Result<bool, ReplayError> {
    let folder = path.parent().unwrap_or(root);
    let created = !folder.is_dir();
    if created {
        std::fs::create_dir_all(folder).map_err(|error| io_error(folder, "create", error))?;
    }
    // A unique temporary name per write: concurrent writers of one key each
    // rename a whole file, and the last one wins.
    let temporary = temporary_folder.join(unique_name());
    let written = File::create(&temporary).and_then(|mut file| {
        std::io::Write::write_all(&mut file, bytes)?;
        file.sync_all()
    });
    if let Err(error) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(io_error(&temporary, "write", error));
    }
    if replace {
        if let Err(error) = std::fs::rename(&temporary, path) {
            let _ = std::fs::remove_file(&temporary);
            return Err(io_error(path, "write", error));
        }
    } else {
        let linked = std::fs::hard_link(&temporary, path);
        let _ = std::fs::remove_file(&temporary);
        match linked {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
            Err(error) => return Err(io_error(path, "write", error)),
        }
    }
    sync_folder(folder)?;
    if created {
        // Each new folder's entry lives in its parent: sync up to the root.
        let mut child = folder;
        while let Some(parent) = child.parent() {
            sync_folder(parent)?;
            if parent == root {
                break;
            }
            child = parent;
        }
    }
    Ok(true)
}

impl LocalBackend {
    /// Writes `bytes` durably under `key`; without `replace`, only if nothing
    /// is there yet (`Ok(false)` when something is).
    fn write(
        &self,
        key: &str,
        bytes: Vec<u8>,
        replace: bool,
    ) -> BoxFuture<'_, Result<bool, ReplayError>> {
        self.sweep_if_due();
        let root = self.root.clone();
        let temporary = self.temporary.clone();
        let path = self.path(key);
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                write_durably(&root, &temporary, &path, &bytes, replace)
            })
            .await
            .map_err(|error| ReplayError::Store(format!("write task failed: {error}")))?
        })
    }
}

impl StoreBackend for LocalBackend {
    fn put<'a>(&'a self, key: &'a str, bytes: Vec<u8>) -> BoxFuture<'a, Result<(), ReplayError>> {
        let written = self.write(key, bytes, true);
        Box::pin(async move { written.await.map(|_| ()) })
    }

    fn put_new<'a>(
        &'a self,
        key: &'a str,
        bytes: Vec<u8>,
    ) -> BoxFuture<'a, Result<bool, ReplayError>> {
        self.write(key, bytes, false)
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, ReplayError>> {
        Box::pin(async move {
            let path = self.path(key);
            match tokio::fs::read(&path).await {
                Ok(bytes) => Ok(Some(bytes)),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(error) => Err(io_error(&path, "read", error)),
            }
        })
    }

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), ReplayError>> {
        Box::pin(async move {
            let path = self.path(key);
            match tokio::fs::remove_file(&path).await {
                Ok(()) => Ok(()),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(error) => Err(io_error(&path, "remove", error)),
            }
        })
    }

    fn list_after<'a>(
        &'a self,
        prefix: &'a str,
        after: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<String>, ReplayError>> {
        Box::pin(async move {
            let folder = self.path(prefix);
            let mut entries = match tokio::fs::read_dir(&folder).await {
                Ok(entries) => entries,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                Err(error) => return Err(io_error(&folder, "list", error)),
            };
            let mut names = Vec::new();
            while let Some(entry) = entries
                .next_entry()
                .await
                .map_err(|error| io_error(&folder, "list", error))?
            {
                let Ok(name) = entry.file_name().into_string() else {
                    continue;
                };
                if name.starts_with('.') || after.is_some_and(|after| name.as_str() <= after) {
                    continue;
                }
                names.push(name);
            }
            names.sort_unstable();
            names.truncate(limit);
            Ok(names)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_old_temporary_files_are_swept() {
        let folder = tempfile::tempdir().expect("temp dir");
        let old = folder.path().join("1-0.partial");
        let fresh = folder.path().join("1-1.partial");
        std::fs::write(&old, b"x").expect("write");
        std::fs::write(&fresh, b"x").expect("write");
        let hour_ago = SystemTime::now() - Duration::from_secs(3600);
        File::options()
            .write(true)
            .open(&old)
            .and_then(|file| file.set_modified(hour_ago))
            .expect("backdate");
        sweep_temporary(folder.path(), SystemTime::now());
        assert!(!old.exists(), "a crashed writer's file is removed");
        assert!(fresh.exists(), "a live writer's file is kept");
    }
}
