//! Sessions in DynamoDB: one item per `session_id` holding its recent turns (JSON), a
//! `version` number and the `expires_at` TTL attribute. Appends are optimistic: read,
//! add the turn, write on the condition that `version` is unchanged, and on a conflict
//! read again, so two concurrent requests of one session both keep their turn. Each
//! append carries a random write token, and the item keeps the last few: a write that
//! landed but whose answer was lost (the SDK then retries and finds the version moved)
//! is recognised on the re-read instead of being appended twice. Reads
//! ignore expired items themselves (DynamoDB deletes them up to days late). Throttling is
//! retried with backoff by the SDK's standard retry policy. DynamoDB refuses items over
//! 400 KB, and 50 turns of 4,000 characters in a 4-byte script are 800 KB: `push_bounded`
//! (every store's) cuts a turn's texts and drops the oldest turns until the turns' JSON is
//! under `bounded::MAX_ITEM_BYTES`.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use switchyard_catalog::metric;
use switchyard_catalog::BoxFuture;
use switchyard_contract::error::Result;
use switchyard_routing::config::SessionsConfig;
use switchyard_routing::session::{push_bounded, SessionStore, Turn};

use crate::error::TableStore;

/// Attempts at an append before giving up on a hotly contended session.
const APPEND_ATTEMPTS: usize = 8;

/// Write tokens kept in the item: more than the appends that can race one another.
const WRITE_TOKENS: usize = 16;

pub struct DynamoSessionStore {
    client: aws_sdk_dynamodb::Client,
    table: String,
    config: SessionsConfig,
}

/// A stored session: its turns and the version the next write must find.
struct Stored {
    turns: Vec<Turn>,
    version: Option<u64>,
    expires_at: i64,
    /// Tokens of the latest appends, newest last.
    writes: Vec<String>,
}

impl DynamoSessionStore {
    pub fn new(client: aws_sdk_dynamodb::Client, table: &str, config: SessionsConfig) -> Self {
        DynamoSessionStore {
            client,
            table: table.to_owned(),
            config,
        }
    }

    async fn load(&self, session_id: &str) -> Result<Stored> {
        let item = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("session_id", AttributeValue::S(session_id.to_owned()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| self.sdk("GetItem", e))?
            .item;
        let Some(item) = item else {
            return Ok(Stored {
                turns: Vec::new(),
                version: None,
                expires_at: 0,
                writes: Vec::new(),
            });
        };
        let number = |name: &str| -> Result<i64> {
            match item.get(name) {
                Some(AttributeValue::N(n)) => n
                    .parse()
                    .map_err(|_| self.fail(format!("`{name}` of session `{session_id}` is `{n}`"))),
                _ => Err(self.fail(format!("session `{session_id}` has no number `{name}`"))),
            }
        };
        let turns = match item.get("turns") {
            Some(AttributeValue::S(json)) => serde_json::from_str(json).map_err(|e| {
                self.fail(format!(
                    "`turns` of session `{session_id}` does not parse: {e}"
                ))
            })?,
            _ => return Err(self.fail(format!("session `{session_id}` has no `turns`"))),
        };
        let writes = match item.get("writes") {
            Some(AttributeValue::L(tokens)) => tokens
                .iter()
                .filter_map(|t| t.as_s().ok().cloned())
                .collect(),
            _ => Vec::new(),
        };
        Ok(Stored {
            turns,
            version: Some(number("version")? as u64),
            expires_at: number("expires_at")?,
            writes,
        })
    }
}

impl TableStore for DynamoSessionStore {
    fn store_name(&self) -> String {
        format!("sessions table `{}`", self.table)
    }
}

/// 128 random bits naming one append.
fn write_token() -> String {
    let mut random = [0u8; 16];
    if getrandom::fill(&mut random).is_err() {
        // No entropy source: the time and a process-wide counter are distinct enough.
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let count = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        random[..8].copy_from_slice(&nanos.to_be_bytes());
        random[8..].copy_from_slice(&count.to_be_bytes());
    }
    hex::encode(random)
}

/// The pause before attempt `attempt + 1` of a contended append: 5 ms doubling to at most
/// 160 ms, plus up to as much again at random.
fn backoff(attempt: usize) -> Duration {
    let base = 5u64 << attempt.min(5);
    let mut random = [0u8; 8];
    let jitter = match getrandom::fill(&mut random) {
        Ok(()) => u64::from_le_bytes(random) % base,
        Err(_) => base / 2,
    };
    Duration::from_millis(base + jitter)
}

impl SessionStore for DynamoSessionStore {
    fn recent<'a>(&'a self, session_id: &'a str, now: i64) -> BoxFuture<'a, Result<Vec<Turn>>> {
        Box::pin(async move {
            let stored = self.load(session_id).await?;
            Ok(if stored.expires_at > now {
                stored.turns
            } else {
                Vec::new()
            })
        })
    }

    fn append<'a>(&'a self, session_id: &'a str, turn: Turn) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let token = write_token();
            for attempt in 0..APPEND_ATTEMPTS {
                let stored = self.load(session_id).await?;
                if stored.writes.contains(&token) {
                    // An earlier attempt of ours landed; its answer was lost on the way back.
                    return Ok(());
                }
                // An expired session starts afresh; its item is overwritten.
                let mut turns = if stored.expires_at > turn.at {
                    stored.turns
                } else {
                    Vec::new()
                };
                let expires_at = turn.at + self.config.ttl_seconds as i64;
                let dropped = push_bounded(&mut turns, turn.clone(), self.config.max_turns);
                if dropped > 0 {
                    metrics::counter!(metric::SESSION_TURNS_TRIMMED).increment(dropped as u64);
                }
                let turns_json = serde_json::to_string(&turns).expect("turns serialise");
                let next_version = stored.version.map_or(1, |v| v + 1);
                let mut writes = stored.writes;
                writes.push(token.clone());
                let excess = writes.len().saturating_sub(WRITE_TOKENS);
                writes.drain(..excess);
                let item = HashMap::from([
                    (
                        "session_id".to_owned(),
                        AttributeValue::S(session_id.to_owned()),
                    ),
                    ("turns".to_owned(), AttributeValue::S(turns_json.clone())),
                    (
                        "version".to_owned(),
                        AttributeValue::N(next_version.to_string()),
                    ),
                    (
                        "expires_at".to_owned(),
                        AttributeValue::N(expires_at.to_string()),
                    ),
                    (
                        "writes".to_owned(),
                        AttributeValue::L(writes.into_iter().map(AttributeValue::S).collect()),
                    ),
                ]);
                let mut put = self
                    .client
                    .put_item()
                    .table_name(&self.table)
                    .set_item(Some(item));
                put = match stored.version {
                    None => put.condition_expression("attribute_not_exists(session_id)"),
                    Some(version) => put
                        .condition_expression("version = :expected")
                        .expression_attribute_values(
                            ":expected",
                            AttributeValue::N(version.to_string()),
                        ),
                };
                match put.send().await {
                    Ok(_) => return Ok(()),
                    Err(e)
                        if e.as_service_error()
                            .is_some_and(|s| s.is_conditional_check_failed_exception()) =>
                    {
                        // Someone else wrote first: read their turn and try again, after a
                        // pause that doubles and is jittered, so writers that raced once
                        // spread out instead of racing again in step.
                        tokio::time::sleep(backoff(attempt)).await;
                    }
                    Err(e) => return Err(self.sdk("PutItem", e)),
                }
            }
            Err(self.fail(format!(
                "session `{session_id}`: {APPEND_ATTEMPTS} concurrent writers in a row; the turn was not saved"
            )))
        })
    }

    fn delete<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            let deleted = self
                .client
                .delete_item()
                .table_name(&self.table)
                .key("session_id", AttributeValue::S(session_id.to_owned()))
                .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld)
                .send()
                .await
                .map_err(|e| self.sdk("DeleteItem", e))?;
            Ok(deleted.attributes().is_some_and(|a| !a.is_empty()))
        })
    }
}
