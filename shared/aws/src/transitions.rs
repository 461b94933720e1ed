//! The deployment's transition counts on AWS: one item of the topics table, under a key
//! no caller's digest can take (`#transitions`: digests are hex), that every router
//! instance adds its new counts to with one `UpdateItem` (`ADD`, atomic) and reads the
//! sum back from in the same call. It has no `expires_at`: the counts outlive any caller.
//! A retried `UpdateItem` whose first try did land counts that minute's transitions twice:
//! rates, not totals, are what the counts are for.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use switchyard_catalog::BoxFuture;
use switchyard_contract::error::Result;
use switchyard_routing::transitions::{TransitionCounts, TransitionStore};

use crate::error::TableStore;

/// The item's key in the topics table's `owner` attribute.
pub const TRANSITIONS_KEY: &str = "#transitions";

pub struct DynamoTransitionStore {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

impl DynamoTransitionStore {
    /// On the topics table (`SWITCHYARD_TOPICS_TABLE`).
    pub fn new(client: aws_sdk_dynamodb::Client, table: &str) -> Self {
        DynamoTransitionStore {
            client,
            table: table.to_owned(),
        }
    }

    async fn update(&self, delta: TransitionCounts) -> Result<TransitionCounts> {
        let number = |n: u64| AttributeValue::N(n.to_string());
        let attributes = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("owner", AttributeValue::S(TRANSITIONS_KEY.to_owned()))
            .update_expression("ADD stay :stay, same_datasource :same, other_datasource :other")
            .expression_attribute_values(":stay", number(delta.stay))
            .expression_attribute_values(":same", number(delta.same_datasource))
            .expression_attribute_values(":other", number(delta.other_datasource))
            .return_values(ReturnValue::AllNew)
            .send()
            .await
            .map_err(|e| self.sdk("UpdateItem", e))?
            .attributes
            .unwrap_or_default();
        Ok(TransitionCounts {
            stay: self.count(&attributes, "stay")?,
            same_datasource: self.count(&attributes, "same_datasource")?,
            other_datasource: self.count(&attributes, "other_datasource")?,
        })
    }

    fn count(&self, item: &HashMap<String, AttributeValue>, name: &str) -> Result<u64> {
        match item.get(name) {
            Some(AttributeValue::N(n)) => n.parse().map_err(|e| {
                self.fail(format!(
                    "the transitions item's `{name}` is not a count: {e}"
                ))
            }),
            Some(_) => Err(self.fail(format!("the transitions item's `{name}` is not a number"))),
            None => Err(self.fail(format!("the transitions item has no `{name}`"))),
        }
    }
}

impl TableStore for DynamoTransitionStore {
    fn store_name(&self) -> String {
        format!("topics table `{}` (transitions)", self.table)
    }
}

impl TransitionStore for DynamoTransitionStore {
    fn add(&self, delta: TransitionCounts) -> BoxFuture<'_, Result<TransitionCounts>> {
        Box::pin(self.update(delta))
    }
}
