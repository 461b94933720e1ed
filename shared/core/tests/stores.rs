//! The in-memory stores stay within their capacity however many distinct keys they see:
//! 100,000 rerank-cache keys, sessions and topic owners each, against capacities of 1,000
//! (the defaults are 10,000). Every write is O(1) (least recently used out), so the loop
//! also finishes in well under a second a store; the bound asserted is the capacity.

use switchyard_core::config::Config;
use switchyard_core::rerank_cache::{CachedScores, MemoryRerankCache, RerankCache};
use switchyard_routing::session::{MemorySessionStore, SessionStore, Turn, TurnOutcome};
use switchyard_routing::topics::{MemoryTopicStore, TopicStore, Topics};

const KEYS: usize = 100_000;
const CAPACITY: usize = 1_000;

fn turn(at: i64) -> Turn {
    Turn {
        query: None,
        datasource: Some("hr".into()),
        template_id: Some("employees_count_by_department".into()),
        parameters: serde_json::Map::new(),
        outcome: TurnOutcome::Execute,
        confidence: 0.9,
        belief: Vec::new(),
        choices: Vec::new(),
        answer: None,
        at,
    }
}

#[tokio::test]
async fn memory_stores_stay_within_capacity_under_100000_distinct_keys() {
    let config = Config::default();

    let cache = MemoryRerankCache::new(CAPACITY);
    for i in 0..KEYS {
        let entry = CachedScores {
            scores: vec![0.5],
            expires_at: 1_000,
        };
        cache.put(&format!("key-{i}"), entry).await.unwrap();
    }
    assert_eq!(cache.len(), CAPACITY);
    // The newest are kept, the oldest gone.
    assert!(cache
        .get(&format!("key-{}", KEYS - 1), 0)
        .await
        .unwrap()
        .is_some());
    assert!(cache.get("key-0", 0).await.unwrap().is_none());

    let mut sessions_config = config.sessions.clone();
    sessions_config.memory_capacity = CAPACITY;
    let sessions = MemorySessionStore::new(sessions_config);
    for i in 0..KEYS {
        sessions
            .append(&format!("session-{i}"), turn(i as i64))
            .await
            .unwrap();
    }
    assert_eq!(sessions.len(), CAPACITY);
    let last = format!("session-{}", KEYS - 1);
    assert_eq!(sessions.recent(&last, KEYS as i64).await.unwrap().len(), 1);

    let topics = MemoryTopicStore::new(&config.sessions.topics, CAPACITY);
    let mut words = Topics::default();
    words.add("engineering headcount", 0, &config.sessions.topics);
    for i in 0..KEYS {
        topics
            .save(&format!("owner-{i}"), &words, i as i64)
            .await
            .unwrap();
    }
    assert_eq!(topics.len(), CAPACITY);
}
