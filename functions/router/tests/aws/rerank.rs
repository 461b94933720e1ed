//! The rerank cache's DynamoDB table.

use aws_sdk_dynamodb::types::AttributeValue;
use switchyard_aws::DynamoRerankCache;
use switchyard_core::rerank_cache::{CachedScores, RerankCache};

use crate::setup::{create_table, endpoint, sdk};

#[tokio::test]
async fn expired_rerank_cache_entries_are_ignored() {
    let moto = endpoint("SWITCHYARD_TEST_MOTO_URL");
    let client = aws_sdk_dynamodb::Client::new(&sdk(&moto).await);
    let table = create_table(&client, "cache_key").await;
    let cache = DynamoRerankCache::new(client.clone(), &table);
    let entry = CachedScores {
        scores: vec![0.75, 0.5],
        expires_at: 1_000,
    };
    cache.put("k1", entry).await.unwrap();
    assert_eq!(cache.get("k1", 999).await.unwrap(), Some(vec![0.75, 0.5]));
    assert_eq!(cache.get("k1", 1_000).await.unwrap(), None);
    assert_eq!(cache.get("absent", 0).await.unwrap(), None);
    // The item is still stored: the filtering is ours.
    let item = client
        .get_item()
        .table_name(&table)
        .key("cache_key", AttributeValue::S("k1".into()))
        .send()
        .await
        .unwrap()
        .item;
    assert!(item.is_some());
}
