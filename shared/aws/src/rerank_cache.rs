//! The rerank cache in DynamoDB: one item per cache key with the scores and the
//! `expires_at` TTL attribute; reads ignore expired items themselves.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use switchyard_catalog::BoxFuture;
use switchyard_contract::error::Result;
use switchyard_core::rerank_cache::{CachedScores, RerankCache};

use crate::error::TableStore;

pub struct DynamoRerankCache {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

impl DynamoRerankCache {
    pub fn new(client: aws_sdk_dynamodb::Client, table: &str) -> Self {
        DynamoRerankCache {
            client,
            table: table.to_owned(),
        }
    }
}

impl TableStore for DynamoRerankCache {
    fn store_name(&self) -> String {
        format!("rerank cache table `{}`", self.table)
    }
}

impl RerankCache for DynamoRerankCache {
    fn get<'a>(&'a self, key: &'a str, now: i64) -> BoxFuture<'a, Result<Option<Vec<f32>>>> {
        Box::pin(self.get_item(key, now))
    }

    fn put<'a>(&'a self, key: &'a str, entry: CachedScores) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.put_item(key, entry))
    }
}

impl DynamoRerankCache {
    async fn get_item(&self, key: &str, now: i64) -> Result<Option<Vec<f32>>> {
        let item = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("cache_key", AttributeValue::S(key.to_owned()))
            .send()
            .await
            .map_err(|e| self.sdk("GetItem", e))?
            .item;
        let Some(item) = item else {
            return Ok(None);
        };
        let expires_at = match item.get("expires_at") {
            Some(AttributeValue::N(n)) => n.parse::<i64>().unwrap_or(0),
            _ => 0,
        };
        if expires_at <= now {
            return Ok(None);
        }
        match item.get("scores") {
            Some(AttributeValue::S(json)) => serde_json::from_str(json)
                .map(Some)
                .map_err(|e| self.fail(format!("entry `{key}`: scores do not parse: {e}"))),
            _ => Err(self.fail(format!("entry `{key}` has no scores"))),
        }
    }

    async fn put_item(&self, key: &str, entry: CachedScores) -> Result<()> {
        let item = HashMap::from([
            ("cache_key".to_owned(), AttributeValue::S(key.to_owned())),
            (
                "scores".to_owned(),
                AttributeValue::S(serde_json::to_string(&entry.scores).expect("scores serialise")),
            ),
            (
                "expires_at".to_owned(),
                AttributeValue::N(entry.expires_at.to_string()),
            ),
        ]);
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(|e| self.sdk("PutItem", e))?;
        Ok(())
    }
}
