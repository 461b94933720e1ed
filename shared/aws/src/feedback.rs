//! Decisions and their feedback in DynamoDB: one item per decision, keyed by the request id
//! scoped by its caller (`feedback::decision_key`, in the `request_id` attribute), holding
//! the decision (JSON), once judged the feedback (JSON) and the reward, and the
//! `expires_at` TTL attribute; reads ignore expired items themselves (DynamoDB deletes them
//! late). Judging reads the item consistently: feedback sent right after its answer finds
//! the decision that answer wrote.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use switchyard_catalog::clock::unix_now;
use switchyard_catalog::BoxFuture;
use switchyard_contract::error::Result;
use switchyard_core::feedback::{
    judged, unjudged, Decision, Feedback, FeedbackRecord, FeedbackStore,
};

use crate::error::TableStore;

pub struct DynamoFeedbackStore {
    client: aws_sdk_dynamodb::Client,
    table: String,
    ttl_seconds: u64,
}

type Item = HashMap<String, AttributeValue>;

impl DynamoFeedbackStore {
    pub fn new(client: aws_sdk_dynamodb::Client, table: &str, ttl_seconds: u64) -> Self {
        DynamoFeedbackStore {
            client,
            table: table.to_owned(),
            ttl_seconds,
        }
    }

    fn item(&self, key: &str, record: &FeedbackRecord) -> Item {
        let expires_at = record.decision.at + self.ttl_seconds as i64;
        let mut item = HashMap::from([
            ("request_id".to_owned(), AttributeValue::S(key.to_owned())),
            (
                "decision".to_owned(),
                AttributeValue::S(serde_json::to_string(&record.decision).expect("serialises")),
            ),
            (
                "expires_at".to_owned(),
                AttributeValue::N(expires_at.to_string()),
            ),
        ]);
        if let (Some(feedback), Some(reward)) = (&record.feedback, record.reward) {
            item.insert(
                "feedback".to_owned(),
                AttributeValue::S(serde_json::to_string(feedback).expect("serialises")),
            );
            item.insert("reward".to_owned(), AttributeValue::N(reward.to_string()));
        }
        item
    }

    /// The record an item holds, unless it expired before `now`.
    fn record_of(&self, item: &Item, now: i64) -> Result<Option<FeedbackRecord>> {
        let id = match item.get("request_id") {
            Some(AttributeValue::S(id)) => id.as_str(),
            _ => return Err(self.fail("an item has no `request_id`".into())),
        };
        let expires_at = match item.get("expires_at") {
            Some(AttributeValue::N(n)) => n.parse::<i64>().unwrap_or(0),
            _ => 0,
        };
        if expires_at <= now {
            return Ok(None);
        }
        let json = |name: &str| match item.get(name) {
            Some(AttributeValue::S(text)) => Some(text.as_str()),
            _ => None,
        };
        let decision: Decision = serde_json::from_str(json("decision").unwrap_or(""))
            .map_err(|e| self.fail(format!("`decision` of request `{id}` does not parse: {e}")))?;
        let feedback = json("feedback")
            .map(serde_json::from_str::<Feedback>)
            .transpose()
            .map_err(|e| self.fail(format!("`feedback` of request `{id}` does not parse: {e}")))?;
        let reward = match item.get("reward") {
            Some(AttributeValue::N(n)) => n.parse::<f32>().ok(),
            _ => None,
        };
        Ok(Some(FeedbackRecord {
            decision,
            feedback,
            reward,
        }))
    }

    async fn put(&self, key: &str, record: &FeedbackRecord) -> Result<()> {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(self.item(key, record)))
            .send()
            .await
            .map_err(|e| self.sdk("PutItem", e))?;
        Ok(())
    }

    async fn judge_item(&self, key: &str, feedback: Feedback) -> Result<Option<FeedbackRecord>> {
        let item = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("request_id", AttributeValue::S(key.to_owned()))
            // The answer's PutItem may be milliseconds old: an eventually consistent read
            // could miss it and answer 404.
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| self.sdk("GetItem", e))?
            .item;
        let Some(item) = item else {
            return Ok(None);
        };
        let Some(record) = self.record_of(&item, unix_now())? else {
            return Ok(None);
        };
        let record = judged(record.decision, feedback);
        self.put(key, &record).await?;
        Ok(Some(record))
    }

    async fn scan(&self) -> Result<Vec<FeedbackRecord>> {
        let now = unix_now();
        let mut records = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let page = self
                .client
                .scan()
                .table_name(&self.table)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| self.sdk("Scan", e))?;
            for item in page.items() {
                records.extend(self.record_of(item, now)?);
            }
            match page.last_evaluated_key() {
                Some(key) if !key.is_empty() => start = Some(key.clone()),
                _ => break,
            }
        }
        records.sort_by(|a, b| a.decision.request_id.cmp(&b.decision.request_id));
        Ok(records)
    }
}

impl TableStore for DynamoFeedbackStore {
    fn store_name(&self) -> String {
        format!("feedback table `{}`", self.table)
    }
}

impl FeedbackStore for DynamoFeedbackStore {
    fn record<'a>(&'a self, key: &'a str, decision: Decision) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move { self.put(key, &unjudged(decision)).await })
    }

    fn judge<'a>(
        &'a self,
        key: &'a str,
        feedback: Feedback,
    ) -> BoxFuture<'a, Result<Option<FeedbackRecord>>> {
        Box::pin(self.judge_item(key, feedback))
    }

    fn all(&self) -> BoxFuture<'_, Result<Vec<FeedbackRecord>>> {
        Box::pin(self.scan())
    }
}
