//! Reranker answers, cached so a repeated question pays the reranker once. The key covers
//! everything the answer depends on: the normalised query, the candidates in order, their
//! templates' content and the reranker's id; entries live `rerank_cache.ttl_seconds`.
//! In memory locally, DynamoDB on AWS (`switchyard-aws`). Stores may delete expired entries
//! late (DynamoDB's TTL does), so every read checks `expires_at` itself.

use sha2::{Digest, Sha256};

use switchyard_catalog::expiring::ExpiringMap;
use switchyard_catalog::template::Template;
use switchyard_catalog::BoxFuture;
use switchyard_contract::error::Result;

/// A cached answer: one score per candidate, and when it stops counting (Unix seconds).
#[derive(Debug, Clone, PartialEq)]
pub struct CachedScores {
    pub scores: Vec<f32>,
    pub expires_at: i64,
}

/// Boxed futures keep the trait usable as `dyn RerankCache`.
pub trait RerankCache: Send + Sync {
    /// The scores under `key`, unless absent or expired at `now`.
    fn get<'a>(&'a self, key: &'a str, now: i64) -> BoxFuture<'a, Result<Option<Vec<f32>>>>;

    fn put<'a>(&'a self, key: &'a str, entry: CachedScores) -> BoxFuture<'a, Result<()>>;
}

/// The cache key of a reranking: SHA-256 over the reranker id, the query (trimmed,
/// lower-cased, whitespace collapsed) and each candidate's datasource, id and content hash.
pub fn cache_key(reranker_id: &str, query: &str, candidates: &[(&str, &Template)]) -> String {
    let mut hasher = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    field(reranker_id.as_bytes());
    let normalised = query
        .split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ");
    field(normalised.as_bytes());
    for (datasource, template) in candidates {
        field(datasource.as_bytes());
        field(template.id.as_bytes());
        let content = serde_json::to_vec(template).expect("a template always serialises");
        field(&Sha256::digest(&content));
    }
    hex::encode(hasher.finalize())
}

/// Entries in this process: at most `rerank_cache.memory_capacity` (the least recently
/// used go).
pub struct MemoryRerankCache {
    entries: ExpiringMap<Vec<f32>>,
}

impl MemoryRerankCache {
    pub fn new(capacity: usize) -> Self {
        MemoryRerankCache {
            entries: ExpiringMap::new(capacity),
        }
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl RerankCache for MemoryRerankCache {
    fn get<'a>(&'a self, key: &'a str, now: i64) -> BoxFuture<'a, Result<Option<Vec<f32>>>> {
        Box::pin(std::future::ready(Ok(self.entries.get(key, now))))
    }

    fn put<'a>(&'a self, key: &'a str, entry: CachedScores) -> BoxFuture<'a, Result<()>> {
        self.entries.put(key, entry.scores, entry.expires_at);
        Box::pin(std::future::ready(Ok(())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template(id: &str, description: &str) -> Template {
        serde_json::from_value(json!({"id": id, "description": description, "nl_examples": ["x"]}))
            .unwrap()
    }

    #[test]
    fn the_key_follows_everything_the_answer_depends_on() {
        let a = template("a", "first");
        let b = template("b", "second");
        let key = cache_key("r1", "How many  people?", &[("hr", &a), ("hr", &b)]);
        assert_eq!(
            key,
            cache_key("r1", " how many people? ", &[("hr", &a), ("hr", &b)])
        );
        assert_ne!(
            key,
            cache_key("r2", "How many people?", &[("hr", &a), ("hr", &b)])
        );
        assert_ne!(
            key,
            cache_key("r1", "How many people?", &[("hr", &b), ("hr", &a)])
        );
        let edited = template("b", "second, edited");
        assert_ne!(
            key,
            cache_key("r1", "How many people?", &[("hr", &a), ("hr", &edited)])
        );
    }

    #[tokio::test]
    async fn expired_entries_are_ignored() {
        let cache = MemoryRerankCache::new(10);
        let entry = CachedScores {
            scores: vec![0.5, 0.25],
            expires_at: 100,
        };
        cache.put("k", entry).await.unwrap();
        assert_eq!(cache.get("k", 99).await.unwrap(), Some(vec![0.5, 0.25]));
        assert_eq!(cache.get("k", 100).await.unwrap(), None);
        assert_eq!(cache.get("missing", 0).await.unwrap(), None);
    }
}
