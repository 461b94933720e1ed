//! What the router sends an adapter and what it answers: one contract for every
//! transport (in-process locally, a Lambda `Invoke` on AWS), its JSON the adapter
//! function's payload, byte for byte between deployments.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::Result;
use switchyard_catalog::BoxFuture;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdapterRequest {
    pub request_id: String,
    pub datasource: String,
    pub template_id: String,
    pub query: String,
    #[serde(default)]
    pub session_parameters: Map<String, Value>,
    pub deadline_ms: u64,
    /// For a sub-question of a split question: the answers of the tasks it depends on,
    /// by task id (`{"t1": {"content", "parameters"}}`).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub upstream: Map<String, Value>,
    /// The question's vector, for a documents datasource: the router has the model, the
    /// adapter searches its chunks with it (and with BM25 alone without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_vector: Option<QueryVector>,
    /// A documents search's metadata filters given with the request (`{"product":
    /// ["car", "home"]}`), beside those the question names.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub filters: Map<String, Value>,
    /// Set for a question no template fits (`llm.text_to_sql`), with `template_id`
    /// [`GENERATED_SQL`]: the flattened tables the chat model may write one read-only
    /// query over, instead of running a template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_context: Option<String>,
    /// `Catalog::content_hash` of the catalog the request was routed with, set on every
    /// request the service sends. The adapter function refuses a request
    /// routed with another catalog than its own (an `index push` without a redeploy);
    /// `None`, an older router's request, is served as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_hash: Option<String>,
    /// What makes two requests one operation to a remote API, so every retry path sends
    /// one `Idempotency-Key` (the HTTP adapter derives it from this, the template and the
    /// parameters): a workflow task's scope (caller, workflow, task: the same when a
    /// workflow resumes or an A2A message is retried). `None`: the request id (the same
    /// when the Lambda SDK retries the invoke).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_scope: Option<String>,
}

impl AdapterRequest {
    /// The operation this request is, for an `Idempotency-Key` (`idempotency_scope`).
    pub fn operation(&self) -> &str {
        self.idempotency_scope
            .as_deref()
            .unwrap_or(&self.request_id)
    }
}

/// The `template_id` of a request whose SQL the chat model writes (see `schema_context`).
pub const GENERATED_SQL: &str = "_generated_sql";

/// A question's unit vector and the model that made it (the chunk artifact refuses
/// another model's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryVector {
    pub model_id: String,
    pub values: Vec<f32>,
}

/// The kind of an adapter's answer (the contract's `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdapterStatus {
    Ok,
    NeedsClarification,
    Error,
}

/// How an adapter's answer ended: the status and, for a refusal or failure, its message,
/// in one value (no `error` beside an `ok`).
#[derive(Debug, Clone, PartialEq)]
pub enum AdapterOutcome {
    Ok,
    /// A required parameter is missing (`missing` names it).
    NeedsClarification,
    /// Refused or failed; the adapter's message (a payload may lack one).
    Error(Option<String>),
}

impl AdapterOutcome {
    pub fn status(&self) -> AdapterStatus {
        match self {
            AdapterOutcome::Ok => AdapterStatus::Ok,
            AdapterOutcome::NeedsClarification => AdapterStatus::NeedsClarification,
            AdapterOutcome::Error(_) => AdapterStatus::Error,
        }
    }

    pub fn error(&self) -> Option<&str> {
        match self {
            AdapterOutcome::Error(message) => message.as_deref(),
            _ => None,
        }
    }
}

/// An adapter's answer. Its JSON (the adapter Lambda's payload) keeps the contract's
/// `status` and `error` fields side by side, byte for byte ([`ResponseJson`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "ResponseJson", from = "ResponseJson")]
pub struct AdapterResponse {
    pub outcome: AdapterOutcome,
    pub content: String,
    pub data: Value,
    pub parameters: Map<String, Value>,
    /// Required parameters the question did not give, by name.
    pub missing: Vec<Value>,
    pub execution_time_ms: f64,
}

impl AdapterResponse {
    pub fn status(&self) -> AdapterStatus {
        self.outcome.status()
    }

    /// The message of a refusal or failure.
    pub fn error(&self) -> Option<&str> {
        self.outcome.error()
    }
}

/// The contract's JSON shape of [`AdapterResponse`], field for field as before the
/// outcome was one enum. An `error` beside another status than `error` is dropped.
#[derive(Serialize, Deserialize)]
struct ResponseJson {
    status: AdapterStatus,
    content: String,
    #[serde(default)]
    data: Value,
    #[serde(default)]
    parameters: Map<String, Value>,
    #[serde(default)]
    missing: Vec<Value>,
    #[serde(default)]
    error: Option<String>,
    execution_time_ms: f64,
}

impl From<AdapterResponse> for ResponseJson {
    fn from(response: AdapterResponse) -> ResponseJson {
        let status = response.status();
        let error = match response.outcome {
            AdapterOutcome::Error(message) => message,
            _ => None,
        };
        ResponseJson {
            status,
            content: response.content,
            data: response.data,
            parameters: response.parameters,
            missing: response.missing,
            error,
            execution_time_ms: response.execution_time_ms,
        }
    }
}

impl From<ResponseJson> for AdapterResponse {
    fn from(json: ResponseJson) -> AdapterResponse {
        let outcome = match json.status {
            AdapterStatus::Ok => AdapterOutcome::Ok,
            AdapterStatus::NeedsClarification => AdapterOutcome::NeedsClarification,
            AdapterStatus::Error => AdapterOutcome::Error(json.error),
        };
        AdapterResponse {
            outcome,
            content: json.content,
            data: json.data,
            parameters: json.parameters,
            missing: json.missing,
            execution_time_ms: json.execution_time_ms,
        }
    }
}

/// Runs a routed request on the datasource's adapter. Transport failures are errors
/// (`ContractError::AdapterUnavailable`, `AdapterTimeout`, `AdapterFailed`);
/// an adapter's own refusal is a response with status `error`.
pub trait AdapterInvoker: Send + Sync {
    fn invoke<'a>(&'a self, request: AdapterRequest) -> BoxFuture<'a, Result<AdapterResponse>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Lambda payload is the contract between router and adapter functions of
    /// different deployments: its bytes do not change with the Rust type.
    #[test]
    fn the_payload_keeps_status_and_error_side_by_side() {
        let failed = r#"{"status":"error","content":"no","data":null,"parameters":{},"missing":[],"error":"no","execution_time_ms":1.5}"#;
        let answered = r#"{"status":"ok","content":"42","data":{"rows":[]},"parameters":{"n":1},"missing":[],"error":null,"execution_time_ms":2.0}"#;
        let unexplained = r#"{"status":"error","content":"","data":null,"parameters":{},"missing":[],"error":null,"execution_time_ms":0.0}"#;
        for payload in [failed, answered, unexplained] {
            let response: AdapterResponse = serde_json::from_str(payload).unwrap();
            assert_eq!(serde_json::to_string(&response).unwrap(), payload);
        }
        let response: AdapterResponse = serde_json::from_str(failed).unwrap();
        assert_eq!(response.outcome, AdapterOutcome::Error(Some("no".into())));
        assert_eq!(response.error(), Some("no"));
        let short: AdapterResponse = serde_json::from_str(
            r#"{"status":"needs_clarification","content":"Which?","execution_time_ms":0.0}"#,
        )
        .unwrap();
        assert_eq!(short.outcome, AdapterOutcome::NeedsClarification);
        assert_eq!(short.data, Value::Null);
    }
}
