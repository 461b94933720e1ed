//! Where a split question's workflow resumes from on AWS: its last checkpoint in DynamoDB,
//! one item per workflow under its caller-scoped key (`Checkpoint::key`, in the
//! `workflow_id` attribute) holding the checkpoint (JSON), `updated_at` and the
//! `expires_at` TTL attribute; reads ignore expired items themselves (DynamoDB deletes
//! them late). A run's lease is an item of its own, keyed by the caller-scoped lease key
//! (which no `workflow_id` can equal: ids have no `/` or `#`), written on the condition
//! that no other run holds it.
//!
//! An A2A task is an item of its own too (its caller-scoped task key, the task's JSON in
//! `task`), and its context's item (`orchestration::context_key`) lists the keys of the
//! context's tasks in the string set `tasks` (one `UpdateItem` ADD per save, so concurrent
//! saves all count), each as `<microseconds of the save, 20 digits>|<key>`: forgetting the
//! context deletes what it lists, with each task's workflow checkpoint, then the list.
//! The list is bounded (`orchestration::context_tasks_kept`, the memory store's bound):
//! a save that finds it past the bound deletes the oldest tasks and their checkpoints, and
//! takes them and the earlier saves' entries of a task saved again out of the list.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use switchyard_catalog::BoxFuture;
use switchyard_contract::error::Result;
use switchyard_core::orchestration::{
    context_tasks_kept, task_checkpoint_key, Checkpoint, WorkflowStore,
};

use crate::error::TableStore;

pub struct DynamoWorkflowStore {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

type Item = HashMap<String, AttributeValue>;

impl DynamoWorkflowStore {
    pub fn new(client: aws_sdk_dynamodb::Client, table: &str) -> Self {
        DynamoWorkflowStore {
            client,
            table: table.to_owned(),
        }
    }

    fn item(checkpoint: &Checkpoint) -> Item {
        HashMap::from([
            (
                "workflow_id".to_owned(),
                AttributeValue::S(checkpoint.key()),
            ),
            (
                "checkpoint".to_owned(),
                AttributeValue::S(serde_json::to_string(checkpoint).expect("serialises")),
            ),
            (
                "updated_at".to_owned(),
                AttributeValue::N(checkpoint.updated_at.to_string()),
            ),
            (
                "expires_at".to_owned(),
                AttributeValue::N(checkpoint.expires_at.to_string()),
            ),
        ])
    }

    /// The checkpoint an item holds, unless it expired at `now`. A damaged item is an
    /// error naming the workflow.
    fn checkpoint_of(
        &self,
        workflow_id: &str,
        item: &Item,
        now: i64,
    ) -> Result<Option<Checkpoint>> {
        let expires_at = match item.get("expires_at") {
            Some(AttributeValue::N(n)) => n.parse::<i64>().map_err(|_| {
                self.fail(format!("`expires_at` of workflow `{workflow_id}` is `{n}`"))
            })?,
            _ => {
                return Err(self.fail(format!(
                    "workflow `{workflow_id}` has no number `expires_at`"
                )))
            }
        };
        if expires_at <= now {
            return Ok(None);
        }
        let json = match item.get("checkpoint") {
            Some(AttributeValue::S(text)) => text,
            _ => return Err(self.fail(format!("workflow `{workflow_id}` has no `checkpoint`"))),
        };
        let checkpoint: Checkpoint = serde_json::from_str(json).map_err(|e| {
            self.fail(format!(
                "`checkpoint` of workflow `{workflow_id}` does not parse: {e}"
            ))
        })?;
        if checkpoint.key() != workflow_id {
            return Err(self.fail(format!(
                "the item of workflow `{workflow_id}` holds the checkpoint of workflow `{}`",
                checkpoint.key()
            )));
        }
        Ok(Some(checkpoint))
    }

    async fn put(&self, item: Item) -> Result<()> {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(|e| self.sdk("PutItem", e))?;
        Ok(())
    }

    /// The item under `key`, read consistently: a retry right after a failed phase must
    /// see that phase's checkpoint (or it would run the phases before it again), and a
    /// caller's next message, on any instance, its task.
    async fn get_item(&self, key: &str) -> Result<Option<Item>> {
        Ok(self
            .client
            .get_item()
            .table_name(&self.table)
            .key("workflow_id", AttributeValue::S(key.to_owned()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| self.sdk("GetItem", e))?
            .item)
    }

    async fn put_lease(&self, lease: &str, token: &str, now: i64, until: i64) -> Result<bool> {
        let item = HashMap::from([
            (
                "workflow_id".to_owned(),
                AttributeValue::S(lease.to_owned()),
            ),
            ("token".to_owned(), AttributeValue::S(token.to_owned())),
            (
                "held_until".to_owned(),
                AttributeValue::N(until.to_string()),
            ),
            // DynamoDB removes lapsed leases in its own time; reads go by `held_until`.
            (
                "expires_at".to_owned(),
                AttributeValue::N((until + 3600).to_string()),
            ),
        ]);
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(
                "attribute_not_exists(workflow_id) OR held_until < :now OR #token = :token",
            )
            .expression_attribute_names("#token", "token")
            .expression_attribute_values(":now", AttributeValue::N(now.to_string()))
            .expression_attribute_values(":token", AttributeValue::S(token.to_owned()))
            .send()
            .await;
        match put {
            Ok(_) => Ok(true),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_conditional_check_failed_exception()) =>
            {
                Ok(false)
            }
            Err(e) => Err(self.sdk("PutItem", e)),
        }
    }

    async fn delete_lease(&self, lease: &str, token: &str) -> Result<()> {
        let deleted = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("workflow_id", AttributeValue::S(lease.to_owned()))
            .condition_expression("#token = :token")
            .expression_attribute_names("#token", "token")
            .expression_attribute_values(":token", AttributeValue::S(token.to_owned()))
            .send()
            .await;
        match deleted {
            Ok(_) => Ok(()),
            // Lapsed and taken by another run: theirs now.
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_conditional_check_failed_exception()) =>
            {
                Ok(())
            }
            Err(e) => Err(self.sdk("DeleteItem", e)),
        }
    }

    async fn get(&self, workflow_id: &str, now: i64) -> Result<Option<Checkpoint>> {
        match self.get_item(workflow_id).await? {
            Some(item) => self.checkpoint_of(workflow_id, &item, now),
            None => Ok(None),
        }
    }
}

impl DynamoWorkflowStore {
    /// The task's key in its context's list first: a task whose save failed after it is
    /// only a key too many there, never a task that forgetting misses. Past the context's
    /// bound (`orchestration::context_tasks_kept`), its oldest tasks are deleted with
    /// their checkpoints, then their keys leave the list (a failure between leaves keys of
    /// deleted tasks, which forgetting skips).
    async fn put_task(&self, key: &str, context: &str, task: &str, expires_at: i64) -> Result<()> {
        let listed = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("workflow_id", AttributeValue::S(context.to_owned()))
            .update_expression("ADD tasks :key SET expires_at = :expires_at")
            .expression_attribute_values(":key", AttributeValue::Ss(vec![listed_key(key)]))
            .expression_attribute_values(":expires_at", AttributeValue::N(expires_at.to_string()))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::UpdatedNew)
            .send()
            .await
            .map_err(|e| self.sdk("UpdateItem", e))?;
        let entries = match listed.attributes().and_then(|a| a.get("tasks")) {
            Some(AttributeValue::Ss(entries)) => entries.clone(),
            _ => Vec::new(),
        };
        let (stale, dropped) = beyond_bound(&entries);
        for key in &dropped {
            self.delete(key).await?;
            if let Some(checkpoint) = task_checkpoint_key(key) {
                self.delete(checkpoint).await?;
            }
        }
        if !stale.is_empty() {
            self.client
                .update_item()
                .table_name(&self.table)
                .key("workflow_id", AttributeValue::S(context.to_owned()))
                .update_expression("DELETE tasks :stale")
                .expression_attribute_values(":stale", AttributeValue::Ss(stale))
                .send()
                .await
                .map_err(|e| self.sdk("UpdateItem", e))?;
        }
        let item = HashMap::from([
            ("workflow_id".to_owned(), AttributeValue::S(key.to_owned())),
            ("task".to_owned(), AttributeValue::S(task.to_owned())),
            (
                "expires_at".to_owned(),
                AttributeValue::N(expires_at.to_string()),
            ),
        ]);
        self.put(item).await
    }

    async fn get_task(&self, key: &str, now: i64) -> Result<Option<String>> {
        let Some(item) = self.get_item(key).await? else {
            return Ok(None);
        };
        let expires_at = match item.get("expires_at") {
            Some(AttributeValue::N(n)) => n.parse::<i64>().ok(),
            _ => None,
        };
        let Some(expires_at) = expires_at else {
            return Err(self.fail(format!("task `{key}` has no number `expires_at`")));
        };
        if expires_at <= now {
            return Ok(None);
        }
        match item.get("task") {
            Some(AttributeValue::S(task)) => Ok(Some(task.clone())),
            _ => Err(self.fail(format!("task `{key}` has no `task`"))),
        }
    }
}

impl DynamoWorkflowStore {
    /// Delete the item under `key`: whether there was one.
    async fn delete(&self, key: &str) -> Result<bool> {
        let deleted = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("workflow_id", AttributeValue::S(key.to_owned()))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld)
            .send()
            .await
            .map_err(|e| self.sdk("DeleteItem", e))?;
        Ok(deleted.attributes().is_some_and(|a| !a.is_empty()))
    }

    async fn forget(&self, context: &str) -> Result<usize> {
        let Some(item) = self.get_item(context).await? else {
            return Ok(0);
        };
        let keys: Vec<&str> = match item.get("tasks") {
            Some(AttributeValue::Ss(entries)) => {
                let mut keys: Vec<&str> = entries.iter().map(|e| listed(e).1).collect();
                keys.sort_unstable();
                keys.dedup();
                keys
            }
            _ => Vec::new(),
        };
        let mut forgotten = 0;
        for &key in &keys {
            if !key.ends_with("#task") {
                return Err(self.fail(format!("context `{context}` lists `{key}`, no task")));
            }
            forgotten += usize::from(self.delete(key).await?);
            if let Some(checkpoint) = task_checkpoint_key(key) {
                self.delete(checkpoint).await?;
            }
        }
        // Last: a failure above leaves the list, so forgetting again finds the rest.
        self.delete(context).await?;
        Ok(forgotten)
    }
}

impl TableStore for DynamoWorkflowStore {
    fn store_name(&self) -> String {
        format!("workflow table `{}`", self.table)
    }
}

impl WorkflowStore for DynamoWorkflowStore {
    fn save<'a>(&'a self, checkpoint: &'a Checkpoint) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.put(Self::item(checkpoint)))
    }

    fn load<'a>(
        &'a self,
        workflow_id: &'a str,
        now: i64,
    ) -> BoxFuture<'a, Result<Option<Checkpoint>>> {
        Box::pin(self.get(workflow_id, now))
    }

    fn claim<'a>(
        &'a self,
        lease: &'a str,
        token: &'a str,
        now: i64,
        until: i64,
    ) -> BoxFuture<'a, Result<bool>> {
        Box::pin(self.put_lease(lease, token, now, until))
    }

    fn release<'a>(&'a self, lease: &'a str, token: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.delete_lease(lease, token))
    }

    fn save_task<'a>(
        &'a self,
        key: &'a str,
        context: &'a str,
        task: &'a str,
        expires_at: i64,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.put_task(key, context, task, expires_at))
    }

    fn load_task<'a>(&'a self, key: &'a str, now: i64) -> BoxFuture<'a, Result<Option<String>>> {
        Box::pin(self.get_task(key, now))
    }

    fn forget_context<'a>(&'a self, context: &'a str) -> BoxFuture<'a, Result<usize>> {
        Box::pin(self.forget(context))
    }
}

/// How a task's key is listed in its context's item: after the time of its save, so the
/// list tells the newest.
fn listed_key(key: &str) -> String {
    let micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    format!("{micros:020}|{key}")
}

/// A listed entry's save time and key; an entry listed without a time (before the list was
/// bounded) is the oldest.
fn listed(entry: &str) -> (u128, &str) {
    match entry.split_once('|') {
        Some((micros, key)) if micros.len() == 20 => match micros.parse() {
            Ok(micros) => (micros, key),
            Err(_) => (0, entry),
        },
        _ => (0, entry),
    }
}

/// Of a context's listed entries, those to take out of the list (the older entries of a
/// task saved again, and every entry of the tasks past the bound) and the keys of the tasks
/// past the bound, oldest first.
fn beyond_bound(entries: &[String]) -> (Vec<String>, Vec<String>) {
    let mut entries: Vec<(u128, &str, &String)> = entries
        .iter()
        .map(|e| {
            let (micros, key) = listed(e);
            (micros, key, e)
        })
        .collect();
    entries.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    let mut newest_first: Vec<&str> = Vec::new();
    let mut stale = Vec::new();
    for (_, key, entry) in &entries {
        if newest_first.contains(key) {
            stale.push((*entry).clone());
        } else {
            newest_first.push(key);
        }
    }
    let kept = context_tasks_kept(&newest_first);
    let dropped: Vec<String> = newest_first[kept..]
        .iter()
        .rev()
        .map(|k| (*k).to_owned())
        .collect();
    for (_, key, entry) in &entries {
        if dropped.iter().any(|d| d == key) && !stale.contains(entry) {
            stale.push((*entry).clone());
        }
    }
    (stale, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_core::orchestration::MAX_CONTEXT_TASKS;

    #[test]
    fn a_context_list_past_its_bound_drops_its_oldest_and_its_stale_entries() {
        let entry = |micros: u128, n: usize| format!("{micros:020}|k{n}#task");
        let mut entries: Vec<String> = (0..MAX_CONTEXT_TASKS + 2)
            .map(|n| entry(1_000 + n as u128, n))
            .collect();
        entries.push(entry(5_000, 0)); // k0 saved again: the newest
        entries.push("old#task".into()); // listed before times were
        let (stale, dropped) = beyond_bound(&entries);
        assert_eq!(dropped, ["old#task", "k1#task", "k2#task"]);
        assert!(stale.contains(&entry(1_000, 0)) && !stale.contains(&entry(5_000, 0)));
        assert_eq!(stale.len(), 4, "{stale:?}");
        assert_eq!(listed(&entry(7, 3)), (7, "k3#task"));
        let (stale, dropped) = beyond_bound(&entries[..3]);
        assert!(stale.is_empty() && dropped.is_empty());
    }
}
