//! Compiled-component caches: a bounded in-memory map by digest, and an optional
//! directory of precompiled artifacts keyed by digest and engine configuration.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest as _, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::error::SandboxError;

/// Least-recently-used map of at most `cap` entries.
#[derive(Debug)]
pub(crate) struct MemoryCache<V> {
    cap: usize,
    clock: u64,
    entries: HashMap<String, (Arc<V>, u64)>,
}

impl<V> MemoryCache<V> {
    pub(crate) fn new(cap: usize) -> MemoryCache<V> {
        assert!(cap > 0, "validated by SandboxConfig::validate");
        MemoryCache {
            cap,
            clock: 0,
            entries: HashMap::new(),
        }
    }

    pub(crate) fn get(&mut self, key: &str) -> Option<Arc<V>> {
        self.clock += 1;
        let clock = self.clock;
        self.entries.get_mut(key).map(|(value, used)| {
            *used = clock;
            Arc::clone(value)
        })
    }

    pub(crate) fn insert(&mut self, key: String, value: Arc<V>) {
        self.clock += 1;
        if !self.entries.contains_key(&key) && self.entries.len() >= self.cap {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                self.entries.remove(&oldest);
            }
        }
        self.entries.insert(key, (value, self.clock));
        assert!(self.entries.len() <= self.cap);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

/// Feeds `Hash` output into SHA-256, to name artifacts by engine configuration.
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    fn finish(&self) -> u64 {
        0
    }
}

/// Precompiled artifacts in a directory the host owns. Artifacts are mapped into
/// memory while their bot is loaded, so files are only ever replaced by rename or
/// removed, never rewritten in place (a truncated mapped file is a SIGBUS).
#[derive(Debug)]
pub(crate) struct DiskCache {
    dir: PathBuf,
    /// Identifies the wasmtime version and every engine setting that affects code
    /// (an artifact built with different settings does not load).
    engine_tag: String,
}

impl DiskCache {
    pub(crate) fn open(dir: &Path, engine: &Engine) -> Result<DiskCache, SandboxError> {
        std::fs::create_dir_all(dir).map_err(|err| SandboxError::DiskCache {
            path: dir.display().to_string(),
            reason: err.to_string(),
        })?;
        let mut hasher = ShaHasher(Sha256::new());
        "duel-sandbox/artifact/v1".hash(&mut hasher);
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let tag = hasher.0.finalize();
        let engine_tag = tag[..8].iter().map(|b| format!("{b:02x}")).collect();
        Ok(DiskCache {
            dir: dir.to_path_buf(),
            engine_tag,
        })
    }

    fn path(&self, digest_hex: &str) -> PathBuf {
        self.dir
            .join(format!("{digest_hex}-{}.cwasm", self.engine_tag))
    }

    /// The cached artifact of `digest_hex`, if there is a loadable one. A file that
    /// does not load (truncated, from another engine build) is removed.
    pub(crate) fn load(&self, engine: &Engine, digest_hex: &str) -> Option<Component> {
        let path = self.path(digest_hex);
        if !path.is_file() {
            return None;
        }
        // SAFETY: `deserialize_file` maps the file as native code and trusts it.
        // The cache directory is the host's own (see `SandboxConfig::disk_cache_dir`),
        // files in it are written only by `store` below from `Component::serialize`
        // of this engine, and they appear under their final name only by an atomic
        // rename once complete. wasmtime still checks the header and engine version.
        #[allow(unsafe_code)]
        let loaded = unsafe { Component::deserialize_file(engine, &path) };
        match loaded {
            Ok(component) => Some(component),
            Err(_) => {
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    pub(crate) fn store(
        &self,
        digest_hex: &str,
        component: &Component,
    ) -> Result<(), SandboxError> {
        let path = self.path(digest_hex);
        let fail = |reason: String| SandboxError::DiskCache {
            path: path.display().to_string(),
            reason,
        };
        let bytes = component.serialize().map_err(|err| fail(err.to_string()))?;
        let tmp = self.dir.join(format!(
            ".{digest_hex}-{}.{}.tmp",
            self.engine_tag,
            std::process::id()
        ));
        std::fs::write(&tmp, &bytes).map_err(|err| fail(err.to_string()))?;
        std::fs::rename(&tmp, &path).map_err(|err| {
            let _ = std::fs::remove_file(&tmp);
            fail(err.to_string())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_cache_evicts_the_least_recently_used() {
        let mut cache = MemoryCache::new(2);
        cache.insert("a".into(), Arc::new(1));
        cache.insert("b".into(), Arc::new(2));
        assert!(cache.get("a").is_some());
        cache.insert("c".into(), Arc::new(3));
        assert_eq!(cache.len(), 2);
        assert!(cache.get("b").is_none());
        assert!(cache.get("a").is_some());
        assert!(cache.get("c").is_some());
    }
}
