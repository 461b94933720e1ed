//! The load: clients, their answers, and what is checked on each; the phases they run in.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use lambda_http::Body;
use serde_json::{json, Value};
use switchyard_router::handle;

use crate::setup::PANICS;

/// Concurrent clients.
pub const CLIENTS: usize = 8;
/// Requests per client and phase unless `SWITCHYARD_FAULT_REQUESTS` says otherwise.
const DEFAULT_REQUESTS: usize = 8;
/// Requests each client sends after a fault is over (its recovery is checked on them).
pub const TAIL: usize = 2;

/// Conversations on the demo catalog (hr, ev, tools), a few turns each; a client goes
/// through them in turn, each under a new session id.
const CONVERSATIONS: &[&[&str]] = &[
    &[
        "How many employees work in Engineering?",
        "And in Sales?",
        "What is 15% of 200?",
    ],
    &[
        "how many Nissan EVs are registered",
        "how many Kia electric vehicles are in Pierce County",
        "What is 12 times 7?",
    ],
    &[
        "How many employees work there?",
        "Marketing",
        "who works in the Sales department",
    ],
    &[
        "total electric vehicles registered in Clark County",
        "what's the average electric range of a BMW",
        "how many people are in the Marketing team",
    ],
];

pub fn requests_per_client() -> usize {
    match std::env::var("SWITCHYARD_FAULT_REQUESTS") {
        Ok(value) => value
            .parse()
            .ok()
            .filter(|n| *n > 0)
            .unwrap_or_else(|| panic!("SWITCHYARD_FAULT_REQUESTS={value}: a positive number")),
        Err(_) => DEFAULT_REQUESTS,
    }
}

/// An API Gateway (HTTP API) event through the router Lambda's handler: the status and
/// the body as JSON (or why it is not JSON).
pub async fn send(
    app: axum::Router,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Result<Value, String>) {
    let route = format!("{method} {path}");
    let event = json!({
        "version": "2.0", "routeKey": route, "rawPath": path, "rawQueryString": "",
        "headers": {"content-type": "application/json"},
        "requestContext": {"accountId": "123456789012", "apiId": "api", "domainName": "example.com",
            "domainPrefix": "example", "http": {"method": method, "path": path, "protocol": "HTTP/1.1",
            "sourceIp": "127.0.0.1", "userAgent": "faults"}, "requestId": "r1", "routeKey": route,
            "stage": "$default", "time": "21/Nov/2026:00:00:00 +0000", "timeEpoch": 0},
        "body": body.map(|b| b.to_string()),
        "isBase64Encoded": false
    });
    let request = lambda_http::request::from_str(&event.to_string()).expect("an API Gateway event");
    let response = handle(app, request).await;
    let status = response.status().as_u16();
    let json_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let parsed = match response.body() {
        Body::Text(text) => {
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}: {text}"))
        }
        Body::Binary(bytes) => serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}")),
        Body::Empty => Err("an empty body".into()),
        _ => Err("an unknown body".into()),
    };
    let parsed = match parsed {
        Ok(_) if !json_type => Err("content-type is not application/json".into()),
        other => other,
    };
    (status, parsed)
}

/// The kind of a `/v1/query` answer (`200 ok`, `502 adapter_error`, ...), or why it is
/// not of the documented shape: an answer (`status`, `metadata` with `request_id` and,
/// with a `session_id`, `session.status`), an adapter failure (`status: error` with
/// `error.code` and `error.message`, HTTP 501/502/504), or an error
/// (`{"error": {"code", "message"}}`).
pub fn classify(status: u16, body: &Value) -> Result<String, String> {
    let text = |value: &Value| value.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
    if let Some(answer_status) = body.get("status") {
        let answer_status = text(answer_status).ok_or("`status` is not a string")?;
        let metadata = body.get("metadata").ok_or("no `metadata`")?;
        text(&metadata["request_id"]).ok_or("no `metadata.request_id`")?;
        let session = &metadata["session"];
        let session_status = text(&session["status"]).ok_or("no `metadata.session.status`")?;
        if !["ok", "unavailable"].contains(&session_status.as_str()) {
            return Err(format!("session status `{session_status}`"));
        }
        if let Some(rerank) = rerank_of(body) {
            text(&rerank["status"]).ok_or("no `rerank.status`")?;
        }
        let orchestrated = metadata.get("orchestration").is_some();
        return match status {
            200 => Ok(format!("200 {answer_status}")),
            502 if orchestrated && answer_status == "error" => Ok("502 orchestration".into()),
            501 | 502 | 504 => {
                let code = text(&body["error"]["code"]).ok_or("no `error.code`")?;
                text(&body["error"]["message"]).ok_or("no `error.message`")?;
                let expected = match status {
                    501 => "adapter_unavailable",
                    502 => "adapter_error",
                    _ => "adapter_timeout",
                };
                if answer_status != "error" || code != expected {
                    return Err(format!(
                        "HTTP {status} with status `{answer_status}`, code `{code}`"
                    ));
                }
                Ok(format!("{status} {code}"))
            }
            other => Err(format!("an answer with HTTP {other}")),
        };
    }
    let code = text(&body["error"]["code"]).ok_or("neither an answer nor `error.code`")?;
    text(&body["error"]["message"]).ok_or("no `error.message`")?;
    if status < 400 {
        return Err(format!("an error body with HTTP {status}"));
    }
    Ok(format!("{status} {code}"))
}

pub fn rerank_of(body: &Value) -> Option<&Value> {
    body["metadata"]["composite_routing"]["multistage_scoring"]
        .get("rerank")
        .filter(|r| r.is_object())
}

pub fn session_status(body: &Value) -> &str {
    body["metadata"]["session"]["status"]
        .as_str()
        .unwrap_or_default()
}

pub fn saved(body: &Value) -> Option<bool> {
    body["metadata"]["session"]["saved"].as_bool()
}

pub fn adapter_of(body: &Value) -> &str {
    body["metadata"]["composite_routing"]["selected_adapter"]
        .as_str()
        .unwrap_or_default()
}

#[derive(Debug, Clone)]
pub struct Reply {
    pub phase: usize,
    pub session: String,
    pub query: String,
    pub sent: Instant,
    pub answered: Instant,
    /// Sent after the phase's fault was over.
    pub after: bool,
    pub status: u16,
    pub body: Value,
    /// `200 ok`, `502 adapter_error`, ... or why the answer is malformed.
    pub kind: Result<String, String>,
}

impl Reply {
    pub fn within(&self, window: (Instant, Instant)) -> bool {
        self.sent >= window.0 && self.answered <= window.1
    }
    pub fn overlaps(&self, window: (Instant, Instant)) -> bool {
        self.sent <= window.1 && self.answered >= window.0
    }
}

/// What the clients share with the test: where to send, what came back, how far along.
#[derive(Clone)]
pub struct Load {
    pub target: Arc<RwLock<axum::Router>>,
    pub replies: Arc<Mutex<Vec<Reply>>>,
    pub done: Arc<AtomicUsize>,
    pub fault_over: Arc<AtomicBool>,
    pub requests: usize,
}

impl Load {
    pub fn switch_to(&self, app: axum::Router) {
        *self.target.write().unwrap() = app;
    }

    /// Until `count` answers of this phase are in, or `limit` has passed.
    pub async fn answered(&self, count: usize, limit: Duration) {
        let deadline = Instant::now() + limit;
        while self.done.load(Ordering::SeqCst) < count && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    pub fn total(&self) -> usize {
        CLIENTS * self.requests
    }

    pub fn replies_of(&self, phase: usize) -> Vec<Reply> {
        let replies = self.replies.lock().unwrap();
        replies
            .iter()
            .filter(|r| r.phase == phase)
            .cloned()
            .collect()
    }
}

/// One client: conversations in turn, each under its own session id, `requests` in all,
/// and at least [`TAIL`] more once the fault is over.
async fn client(load: Load, phase: usize, slug: &'static str, id: usize) {
    let (mut sent, mut after_fault) = (0, 0);
    let (mut conversation, mut turn) = (id, 0);
    let mut session = format!("{slug}-{id}-{conversation}");
    loop {
        let fault_over = load.fault_over.load(Ordering::SeqCst);
        if (sent >= load.requests && fault_over && after_fault >= TAIL)
            || sent >= 20 * load.requests + 100
        {
            break;
        }
        let script = CONVERSATIONS[conversation % CONVERSATIONS.len()];
        let query = script[turn];
        let app = load.target.read().unwrap().clone();
        let started = Instant::now();
        let (status, body) = send(
            app,
            "POST",
            "/v1/query",
            Some(json!({"query": query, "session_id": session})),
        )
        .await;
        let answered = Instant::now();
        let (body, kind) = match body {
            Ok(body) => {
                let kind = classify(status, &body);
                (body, kind)
            }
            Err(why) => (Value::Null, Err(why)),
        };
        load.replies.lock().unwrap().push(Reply {
            phase,
            session: session.clone(),
            query: query.to_owned(),
            sent: started,
            answered,
            after: fault_over,
            status,
            body,
            kind,
        });
        load.done.fetch_add(1, Ordering::SeqCst);
        sent += 1;
        if fault_over {
            after_fault += 1;
        }
        turn += 1;
        if turn == script.len() {
            turn = 0;
            conversation += 1;
            session = format!("{slug}-{id}-{conversation}");
        }
    }
}

pub struct Phase {
    pub name: &'static str,
    /// When the fault held: answers in flight then are "during" it.
    pub windows: Vec<(Instant, Instant)>,
    pub notes: Vec<String>,
    pub panics: usize,
}

/// Run the clients of phase `index` while `inject` injects its fault and recovers from it.
pub async fn run_phase<F>(
    load: &Load,
    index: usize,
    name: &'static str,
    slug: &'static str,
    inject: F,
) -> Phase
where
    F: Future<Output = (Vec<(Instant, Instant)>, Vec<String>)>,
{
    load.done.store(0, Ordering::SeqCst);
    load.fault_over.store(false, Ordering::SeqCst);
    let panics = PANICS.load(Ordering::SeqCst);
    let clients: Vec<_> = (0..CLIENTS)
        .map(|id| tokio::spawn(client(load.clone(), index, slug, id)))
        .collect();
    let injected = async {
        let result = inject.await;
        load.fault_over.store(true, Ordering::SeqCst);
        result
    };
    let finished = async {
        for client in clients {
            client.await.expect("a client task");
        }
    };
    let ((windows, notes), ()) = tokio::join!(injected, finished);
    Phase {
        name,
        windows,
        notes,
        panics: PANICS.load(Ordering::SeqCst) - panics,
    }
}
