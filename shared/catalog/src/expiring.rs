//! The in-memory stores' one map: bounded in entries, each entry with its expiry. At
//! capacity the least recently written or read entry goes (O(1)); an expired entry reads
//! as absent. The rerank cache, sessions and topics kept in memory (local `serve`, a
//! router without tables) all use it, so none grows with the number of distinct keys.

use std::num::NonZeroUsize;
use std::sync::{Mutex, MutexGuard};

use lru::LruCache;

/// Keys to values with an expiry (Unix seconds), at most `capacity` of them.
pub struct ExpiringMap<V> {
    entries: Mutex<LruCache<String, (i64, V)>>,
}

impl<V: Clone> ExpiringMap<V> {
    /// A map of at most `capacity` entries (at least 1).
    pub fn new(capacity: usize) -> Self {
        let capacity = NonZeroUsize::new(capacity.max(1)).expect("at least 1");
        ExpiringMap {
            entries: Mutex::new(LruCache::new(capacity)),
        }
    }

    fn entries(&self) -> MutexGuard<'_, LruCache<String, (i64, V)>> {
        // A panic while the lock was held leaves no half-written entry.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The value under `key` unless absent or expired at `now` (expired ones are dropped).
    pub fn get(&self, key: &str, now: i64) -> Option<V> {
        let mut entries = self.entries();
        match entries.get(key) {
            Some((expires_at, value)) if *expires_at > now => Some(value.clone()),
            Some(_) => {
                entries.pop(key);
                None
            }
            None => None,
        }
    }

    /// Store `value` under `key` until `expires_at`, evicting the least recently used
    /// entry at capacity.
    pub fn put(&self, key: &str, value: V, expires_at: i64) {
        self.entries().put(key.to_owned(), (expires_at, value));
    }

    /// Change the value under `key` (absent or expired: `f` gets `None`) and store what `f`
    /// returns, with its expiry.
    pub fn update(&self, key: &str, now: i64, f: impl FnOnce(Option<V>) -> (V, i64)) {
        let mut entries = self.entries();
        let current = entries
            .pop(key)
            .filter(|(expires_at, _)| *expires_at > now)
            .map(|(_, value)| value);
        let (value, expires_at) = f(current);
        entries.put(key.to_owned(), (expires_at, value));
    }

    /// Remove `key`; true when it held an entry.
    pub fn remove(&self, key: &str) -> bool {
        self.entries().pop(key).is_some()
    }

    /// Entries held, expired ones not yet dropped included.
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_expiring_and_least_recently_used_out() {
        let map = ExpiringMap::new(2);
        map.put("a", 1, 100);
        map.put("b", 2, 100);
        assert_eq!(map.get("a", 50), Some(1)); // "b" is now the least recently used
        map.put("c", 3, 100);
        assert_eq!(map.len(), 2);
        assert_eq!(map.get("b", 50), None);
        assert_eq!(map.get("a", 100), None, "expired at 100");
        map.update("c", 50, |v| (v.unwrap_or(0) + 10, 200));
        assert_eq!(map.get("c", 150), Some(13));
        assert!(map.remove("c"));
        assert!(!map.remove("c"));
    }
}
