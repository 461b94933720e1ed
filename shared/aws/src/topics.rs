//! Callers' topic words on AWS: one DynamoDB item per owner (a digest of it, not the
//! name), holding the topics (JSON) and the `expires_at` TTL attribute, pushed back by
//! every save; reads ignore expired items themselves (DynamoDB deletes them late).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use sha2::{Digest, Sha256};
use switchyard_catalog::BoxFuture;
use switchyard_contract::error::Result;
use switchyard_routing::topics::{TopicStore, Topics};

use crate::error::TableStore;

pub struct DynamoTopicStore {
    client: aws_sdk_dynamodb::Client,
    table: String,
    ttl_seconds: i64,
}

impl DynamoTopicStore {
    pub fn new(client: aws_sdk_dynamodb::Client, table: &str, ttl_seconds: u64) -> Self {
        DynamoTopicStore {
            client,
            table: table.to_owned(),
            ttl_seconds: ttl_seconds as i64,
        }
    }

    /// The item's key: the owner's digest, so the table holds no principal names.
    fn key(owner: &str) -> AttributeValue {
        AttributeValue::S(hex::encode(Sha256::digest(owner.as_bytes())))
    }

    async fn get(&self, owner: &str, now: i64) -> Result<Topics> {
        let item = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("owner", Self::key(owner))
            .send()
            .await
            .map_err(|e| self.sdk("GetItem", e))?
            .item;
        let Some(item) = item else {
            return Ok(Topics::default());
        };
        let expires_at = match item.get("expires_at") {
            Some(AttributeValue::N(n)) => n.parse::<i64>().unwrap_or(0),
            _ => 0,
        };
        if expires_at <= now {
            return Ok(Topics::default());
        }
        match item.get("topics") {
            Some(AttributeValue::S(json)) => serde_json::from_str(json)
                .map_err(|e| self.fail(format!("an item's `topics` does not parse: {e}"))),
            _ => Err(self.fail("an item has no `topics`".into())),
        }
    }

    async fn put(&self, owner: &str, topics: &Topics, now: i64) -> Result<()> {
        let item = HashMap::from([
            ("owner".to_owned(), Self::key(owner)),
            (
                "topics".to_owned(),
                AttributeValue::S(serde_json::to_string(topics).expect("serialises")),
            ),
            (
                "expires_at".to_owned(),
                AttributeValue::N((now + self.ttl_seconds).to_string()),
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

impl TableStore for DynamoTopicStore {
    fn store_name(&self) -> String {
        format!("topics table `{}`", self.table)
    }
}

impl TopicStore for DynamoTopicStore {
    fn load<'a>(&'a self, owner: &'a str, now: i64) -> BoxFuture<'a, Result<Topics>> {
        Box::pin(self.get(owner, now))
    }

    fn save<'a>(
        &'a self,
        owner: &'a str,
        topics: &'a Topics,
        now: i64,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.put(owner, topics, now))
    }
}
