//! Agent2Agent (A2A 1.0, the JSON-RPC binding) on the same app as `/v1` and `/mcp`, so
//! `serve` and the router Lambda behind API Gateway both have it: the Agent Card at
//! `/.well-known/agent-card.json` (and the older `agent.json`), JSON-RPC at `POST /a2a`.
//!
//! A message's text is a question; its `contextId` is the session. The answer is a task:
//! completed with the answer's text and its structured result (template, confidence, rows
//! or passages) as an artifact; waiting for input (`TASK_STATE_INPUT_REQUIRED`) after a
//! clarify question, a missing parameter or a partial answer of a split question, which the
//! caller's next message in the same task answers or resumes. A split question's workflow
//! is the task (its id is the workflow id). Tasks are kept in the workflow store (DynamoDB
//! on AWS), so any Lambda instance answers `GetTask` and the next message; with
//! `sessions.store_text` off without any question or answer text (`storage`), and
//! forgetting the session (`DELETE /v1/sessions/{contextId}`) deletes its context's tasks.
//!
//! Not served: streaming (`SendStreamingMessage`): the router Lambda answers whole through
//! API Gateway's buffered integration and an answer is computed whole, so a stream would
//! carry one event; push notifications; `ListTasks`; cancelling (an answer is computed
//! within its request, so there is never a running task to cancel).

mod card;
mod storage;
mod task;
pub mod wire;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::extract::MAX_BODY_BYTES;
use crate::{Authorized, Endpoint, Shared};

/// The JSON-RPC endpoint's path (the card names it).
pub const ENDPOINT: &str = "/a2a";

/// The card's paths: the specification's, and the one clients before 0.3 fetch.
const CARD_PATHS: [&str; 2] = ["/.well-known/agent-card.json", "/.well-known/agent.json"];

pub(crate) fn endpoints() -> Vec<Endpoint> {
    let mut endpoints = vec![Endpoint::new(ENDPOINT, Method::POST, rpc)];
    for path in CARD_PATHS {
        endpoints.push(Endpoint::new(path, Method::GET, card::serve));
    }
    endpoints
}

/// A JSON-RPC error: the protocol's code, a message for people, and (A2A's form) an
/// `ErrorInfo` naming the reason.
#[derive(Debug)]
pub(crate) struct RpcError {
    code: i64,
    reason: &'static str,
    message: String,
}

impl RpcError {
    fn new(code: i64, reason: &'static str, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            reason,
            message: message.into(),
        }
    }

    pub(crate) fn parse(message: impl Into<String>) -> RpcError {
        RpcError::new(-32700, "PARSE_ERROR", message)
    }

    pub(crate) fn invalid_request(message: impl Into<String>) -> RpcError {
        RpcError::new(-32600, "INVALID_REQUEST", message)
    }

    pub(crate) fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(-32602, "INVALID_PARAMS", message)
    }

    pub(crate) fn internal(message: impl Into<String>) -> RpcError {
        RpcError::new(-32603, "INTERNAL_ERROR", message)
    }

    pub(crate) fn task_not_found(id: &str) -> RpcError {
        RpcError::new(
            -32001,
            "TASK_NOT_FOUND",
            format!("no task `{id}` is kept for this caller"),
        )
    }

    pub(crate) fn unsupported(message: impl Into<String>) -> RpcError {
        RpcError::new(-32004, "UNSUPPORTED_OPERATION", message)
    }

    fn body(&self, id: Value) -> Value {
        json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": self.code,
                "message": self.message,
                "data": [{
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": self.reason,
                    "domain": "a2a-protocol.org",
                }],
            },
        })
    }
}

/// A question the service refused (a bad field, an overloaded store): the field's problem is
/// the caller's (invalid params), anything else the server's.
impl From<ApiError> for RpcError {
    fn from(error: ApiError) -> RpcError {
        let (status, code, field) = error.parts();
        match (status, field) {
            (StatusCode::BAD_REQUEST, Some(field)) => {
                RpcError::invalid_params(format!("{field}: {error}"))
            }
            _ => RpcError::new(-32603, "INTERNAL_ERROR", format!("{code}: {error}")),
        }
    }
}

/// `POST /a2a`: authorize, read one JSON-RPC request, answer it. Protocol errors are
/// answered with HTTP 200 and the JSON-RPC error (as the SDK's own server does); an
/// unknown caller gets 401 (403 without datasources) with a JSON-RPC error body.
async fn rpc(State(service): State<Shared>, request: Request) -> Response {
    let (mut parts, body) = request.into_parts();
    let authorized = match Authorized::from_request_parts(&mut parts, &service).await {
        Ok(authorized) => authorized,
        Err(error) => return refused(error),
    };
    let answer = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(bytes) => handle(&service, &authorized, &parts.headers, &bytes).await,
        Err(_) => Err((
            Value::Null,
            RpcError::invalid_request(format!("the body is over {MAX_BODY_BYTES} bytes")),
        )),
    };
    match answer {
        Ok((id, result)) => Json(json!({"jsonrpc": "2.0", "id": id, "result": result})),
        Err((id, error)) => Json(error.body(id)),
    }
    .into_response()
}

type Answered = Result<(Value, Value), (Value, RpcError)>;

async fn handle(
    service: &Shared,
    authorized: &Authorized,
    headers: &HeaderMap,
    bytes: &[u8],
) -> Answered {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        (
            Value::Null,
            RpcError::parse(format!("the body is not JSON: {e}")),
        )
    })?;
    let Value::Object(request) = value else {
        return Err((
            Value::Null,
            RpcError::invalid_request("send one JSON-RPC request object (batches are not taken)"),
        ));
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let fail = |error: RpcError| Err((id.clone(), error));
    if !matches!(id, Value::String(_) | Value::Number(_) | Value::Null) {
        return Err((
            Value::Null,
            RpcError::invalid_request("`id` must be a string, a number or null"),
        ));
    }
    if request.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return fail(RpcError::invalid_request("`jsonrpc` must be \"2.0\""));
    }
    let Some(method) = request.get("method").and_then(Value::as_str) else {
        return fail(RpcError::invalid_request("`method` must be a string"));
    };
    if let Err(error) = check_version(headers) {
        return fail(error);
    }
    let params = request.get("params").cloned().unwrap_or(Value::Null);
    let result = match method {
        "SendMessage" => task::send(service, authorized, params).await,
        "GetTask" => task::get(service, authorized, params).await,
        "CancelTask" => task::cancel(service, authorized, params).await,
        "SendStreamingMessage" | "SubscribeToTask" => Err(RpcError::unsupported(
            "streaming is not offered (the card says so): an answer is computed whole; use SendMessage",
        )),
        "ListTasks" | "GetExtendedAgentCard" => Err(RpcError::unsupported(format!(
            "`{method}` is not offered by this agent"
        ))),
        m if m.contains("PushNotificationConfig") => Err(RpcError::new(
            -32003,
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
            "push notifications are not offered (the card says so)",
        )),
        other => Err(RpcError::new(
            -32601,
            "METHOD_NOT_FOUND",
            format!("no method `{other}` (A2A 1.0: SendMessage, GetTask, CancelTask)"),
        )),
    };
    match result {
        Ok(result) => Ok((id, result)),
        Err(error) => fail(error),
    }
}

/// The `A2A-Version` header: 1.x is spoken here; an absent header means 0.3 (the
/// specification's rule), whose wire differs, so it is refused with what to send.
fn check_version(headers: &HeaderMap) -> Result<(), RpcError> {
    let version = headers
        .get("a2a-version")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim();
    let major = version.split('.').next().unwrap_or("");
    if major == "1" {
        return Ok(());
    }
    let sent = if version.is_empty() {
        "no A2A-Version header (which means 0.3)".to_owned()
    } else {
        format!("A2A-Version `{version}`")
    };
    Err(RpcError::new(
        -32009,
        "VERSION_NOT_SUPPORTED",
        format!(
            "{sent}: this agent speaks A2A {}; send `A2A-Version: {}`",
            wire::PROTOCOL_VERSION,
            wire::PROTOCOL_VERSION
        ),
    ))
}

/// An unknown caller (401, with the key's challenge) or one without datasources (403).
fn refused(error: ApiError) -> Response {
    let (status, code, _) = error.parts();
    let body = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32000, "message": error.to_string(), "data": [{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": code.to_uppercase(),
            "domain": "switchyard",
        }]},
    });
    let mut response = (status, Json(body)).into_response();
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            "www-authenticate",
            HeaderValue::from_static("ApiKey header=\"x-api-key\""),
        );
    }
    response
}
