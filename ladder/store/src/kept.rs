//! Reads kept in memory while the database says they still hold: each kept
//! value carries the fingerprint of the rows it was read from, and a reader
//! asks for the fingerprint (a cheap aggregate) before it reads again.
//!
//! Every process keeps its own and checks the database each time, so a
//! worker's settlement shows on the next page of every `serve`. The site
//! keeps its rendered transcript pages in one too.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};

use duel_rules::WeightClass;

use crate::cost::{ClassSpend, SpendFingerprint};
use crate::error::Result;
use crate::limits::{KEPT_BOT_PAGES, KEPT_SPEND_TABLES};
use crate::site::{BotFingerprint, BotReads};

/// What one store keeps: the cost page's tables by season and class, and
/// what a bot's page reads of its record, history and opponents, by bot.
#[derive(Debug)]
pub(crate) struct KeptReads {
    pub(crate) spend: Kept<(i64, WeightClass), SpendFingerprint, ClassSpend>,
    pub(crate) bots: Kept<String, BotFingerprint, BotReads>,
}

impl Default for KeptReads {
    fn default() -> Self {
        KeptReads {
            spend: Kept::new(KEPT_SPEND_TABLES),
            bots: Kept::new(KEPT_BOT_PAGES),
        }
    }
}

/// At most `capacity` values by key, each with its fingerprint.
#[derive(Debug)]
pub struct Kept<K, F, V> {
    capacity: usize,
    inner: Mutex<Inner<K, F, V>>,
}

#[derive(Debug)]
struct Inner<K, F, V> {
    values: HashMap<K, Entry<F, V>>,
    /// Puts so far: each entry's `kept_at`.
    puts: u64,
}

#[derive(Debug)]
struct Entry<F, V> {
    fingerprint: F,
    value: Arc<V>,
    /// When it was kept, in puts: the oldest goes first when full.
    kept_at: u64,
}

impl<K: Eq + Hash + Clone, F: PartialEq, V> Kept<K, F, V> {
    pub fn new(capacity: usize) -> Self {
        Kept {
            capacity: capacity.max(1),
            inner: Mutex::new(Inner {
                values: HashMap::new(),
                puts: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner<K, F, V>> {
        // A panic elsewhere while the lock was held leaves the map whole
        // (every change is one insert or remove), so its values still hold.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The value kept for `key` if it was read from rows with `fingerprint`,
    /// else what `read` reads, kept for the next reader. `fingerprint` must
    /// be taken before `read` runs: should the rows change in between, the
    /// value is newer than its fingerprint and the next reader reads again,
    /// which is slower but never stale.
    pub async fn get_or_read<R>(&self, key: K, fingerprint: F, read: R) -> Result<Arc<V>>
    where
        R: Future<Output = Result<V>>,
    {
        if let Some(value) = self.get(&key, &fingerprint) {
            return Ok(value);
        }
        let value = Arc::new(read.await?);
        self.put(key, fingerprint, Arc::clone(&value));
        Ok(value)
    }

    fn get(&self, key: &K, fingerprint: &F) -> Option<Arc<V>> {
        self.lock()
            .values
            .get(key)
            .filter(|entry| entry.fingerprint == *fingerprint)
            .map(|entry| Arc::clone(&entry.value))
    }

    fn put(&self, key: K, fingerprint: F, value: Arc<V>) {
        let mut inner = self.lock();
        inner.puts += 1;
        let kept_at = inner.puts;
        if inner.values.len() >= self.capacity && !inner.values.contains_key(&key) {
            let oldest = inner
                .values
                .iter()
                .min_by_key(|(_, entry)| entry.kept_at)
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                inner.values.remove(&oldest);
            }
        }
        inner.values.insert(
            key,
            Entry {
                fingerprint,
                value,
                kept_at,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_holds_while_its_fingerprint_does_and_the_oldest_goes_first() {
        let kept: Kept<&str, u32, String> = Kept::new(2);
        kept.put("a", 1, Arc::new("a1".to_owned()));
        assert_eq!(
            kept.get(&"a", &1).as_deref().map(String::as_str),
            Some("a1")
        );
        assert_eq!(kept.get(&"a", &2), None, "the rows moved");
        kept.put("b", 1, Arc::new("b1".to_owned()));
        kept.put("a", 2, Arc::new("a2".to_owned()));
        kept.put("c", 1, Arc::new("c1".to_owned()));
        assert_eq!(kept.get(&"b", &1), None, "b was kept longest ago");
        assert_eq!(
            kept.get(&"a", &2).as_deref().map(String::as_str),
            Some("a2")
        );
        assert_eq!(
            kept.get(&"c", &1).as_deref().map(String::as_str),
            Some("c1")
        );
    }
}
