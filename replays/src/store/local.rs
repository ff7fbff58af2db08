//! The local-folder backend: one file per object, written atomically.

use std::path::{Path, PathBuf};

use futures::future::BoxFuture;

use crate::error::ReplayError;
use crate::store::StoreBackend;

#[derive(Debug)]
pub struct LocalBackend {
    root: PathBuf,
}

impl LocalBackend {
    /// Opens (creating if needed) the folder at `root`.
    pub fn open(root: &Path) -> Result<LocalBackend, ReplayError> {
        std::fs::create_dir_all(root).map_err(|error| {
            ReplayError::Store(format!(
                "cannot create store folder {}: {error}",
                root.display()
            ))
        })?;
        Ok(LocalBackend {
            root: root.to_owned(),
        })
    }

    fn path(&self, key: &str) -> PathBuf {
        self.root.join(key)
    }
}

fn io_error(path: &Path, action: &str, error: std::io::Error) -> ReplayError {
    ReplayError::Store(format!("cannot {action} {}: {error}", path.display()))
}

impl StoreBackend for LocalBackend {
    fn put<'a>(&'a self, key: &'a str, bytes: Vec<u8>) -> BoxFuture<'a, Result<(), ReplayError>> {
        Box::pin(async move {
            let path = self.path(key);
            let folder = path.parent().unwrap_or(&self.root).to_owned();
            tokio::fs::create_dir_all(&folder)
                .await
                .map_err(|error| io_error(&folder, "create", error))?;
            // A unique temporary name per write: concurrent writers of one key
            // each rename a whole file, and the last one wins.
            let temporary = folder.join(format!(
                ".{}.{}.partial",
                path.file_name()
                    .map(|name| name.to_string_lossy())
                    .unwrap_or_default(),
                unique_suffix()
            ));
            tokio::fs::write(&temporary, bytes)
                .await
                .map_err(|error| io_error(&temporary, "write", error))?;
            if let Err(error) = tokio::fs::rename(&temporary, &path).await {
                let _ = tokio::fs::remove_file(&temporary).await;
                return Err(io_error(&path, "write", error));
            }
            Ok(())
        })
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

fn unique_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}
