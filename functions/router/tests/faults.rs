//! Faults during load, on the real emulators (issue 15, item 2). The router Lambda's app runs
//! in this process against a `moto_server` of its own (S3 and DynamoDB, started on a free
//! port of 127.0.0.1 and killed on drop, so the shared emulators other tests use are never
//! disturbed) and the shared `cargo lambda watch` (`SWITCHYARD_TEST_LAMBDA_URL`), reached
//! through a small Lambda endpoint of this test that can make one datasource's function
//! fail or stall. Eight clients hold conversations of a few turns on the demo catalog
//! (`SWITCHYARD_FAULT_REQUESTS` requests each per phase, 8 by default) while one fault at
//! a time is injected:
//!
//! 1. none (the baseline);
//! 2. moto paused (SIGSTOP), then resumed (SIGCONT);
//! 3. moto killed and restarted, its tables, bucket and index re-created (a region
//!    recovering);
//! 4. the index pointer moved to a new artifact (a new cold start serves it, and traffic
//!    moves to it), then to corrupt artifacts (cold starts refused, naming them; the
//!    running app keeps serving), then published again;
//! 5. the `ev` datasource's adapter function failing (a function error, a 500), then
//!    timing out, then healthy again;
//! 6. the rerank provider answering 500, then too slowly, then not listening, then back.
//!
//! Every answer must be JSON of the documented shape, with no panic and no 500; a turn
//! whose answer said it was saved must be in the sessions table afterwards (turns lost:
//! 0). The table of the run is printed (`--nocapture`); `./infra/scripts/faults.sh` runs
//! it with more requests.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType,
};
use aws_sdk_lambda::primitives::Blob;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Json;
use lambda_http::Body;
use serde_json::{json, Value};
use switchyard_aws::S3IndexStore;
use switchyard_core::config::{Config, RerankProvider};
use switchyard_core::index::Index;
use switchyard_core::session::Turn;
use switchyard_core::template::Catalog;
use switchyard_embed::MiniLmEmbedder;
use switchyard_router::{
    app, cold_start, handle, Clients, ColdStart, IndexLocation, RouterService, Settings,
};

/// Concurrent clients.
const CLIENTS: usize = 8;
/// Requests per client and phase unless `SWITCHYARD_FAULT_REQUESTS` says otherwise.
const DEFAULT_REQUESTS: usize = 8;
/// Requests each client sends after a fault is over (its recovery is checked on them).
const TAIL: usize = 2;

const BUCKET: &str = "faults-index";
const PREFIX: &str = "indexes";
const SESSIONS: &str = "sessions";
const FEEDBACK: &str = "feedback";
const RERANK_CACHE: &str = "rerank-cache";
/// The function every datasource's adapter runs as under `cargo lambda watch`.
const ADAPTER_FUNCTION: &str = "switchyard-adapter";
/// The `ev` datasource's function name: the proxy below forwards it to
/// [`ADAPTER_FUNCTION`] unless told to fail or stall.
const EV_FUNCTION: &str = "switchyard-adapter-ev";

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

// ---------------------------------------------------------------------------------------
// Process-wide counters and shared set-up.

static PANICS: AtomicUsize = AtomicUsize::new(0);

/// Count every panic in the process (a request's task included), then report it as usual.
fn count_panics() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            previous(info);
        }));
    });
}

fn endpoint(variable: &str) -> String {
    std::env::var(variable).unwrap_or_else(|_| {
        panic!("{variable} is not set: start the emulators with ./infra/scripts/aws-local.sh start and export what `aws-local.sh env` prints (./infra/scripts/test.sh and ./infra/scripts/faults.sh do both)")
    })
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn requests_per_client() -> usize {
    match std::env::var("SWITCHYARD_FAULT_REQUESTS") {
        Ok(value) => value
            .parse()
            .ok()
            .filter(|n| *n > 0)
            .unwrap_or_else(|| panic!("SWITCHYARD_FAULT_REQUESTS={value}: a positive number")),
        Err(_) => DEFAULT_REQUESTS,
    }
}

fn embedder() -> Arc<MiniLmEmbedder> {
    static MODEL: OnceLock<Arc<MiniLmEmbedder>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            Arc::new(MiniLmEmbedder::from_config(&Config::default().embedding).expect("the model"))
        })
        .clone()
}

fn index_bytes(catalog: Catalog) -> Vec<u8> {
    Index::build(catalog, embedder().as_ref(), &Config::default(), &|_, _| {})
        .unwrap()
        .to_bytes()
        .unwrap()
}

fn demo_catalog() -> Catalog {
    Catalog::load(&root().join("templates/demo")).unwrap()
}

fn sha256_hex(bytes: &[u8]) -> String {
    use std::io::Write;
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sha256sum (coreutils)");
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let output = child.wait_with_output().unwrap();
    String::from_utf8(output.stdout).unwrap()[..64].to_owned()
}

async fn sdk(url: &str) -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(url)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_s3::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .load()
        .await
}

// ---------------------------------------------------------------------------------------
// A moto_server of this test's own.

/// `moto_server` on PATH (the project virtualenv's `bin/` is there under the scripts),
/// else in the virtualenv `infra/scripts/venv.sh` makes.
fn moto_binary() -> PathBuf {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("moto_server"))
            .find(|candidate| candidate.is_file())
    });
    on_path.unwrap_or_else(|| {
        let cache = std::env::var_os("SWITCHYARD_CACHE_DIR")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("switchyard"))
            })
            .unwrap_or_else(|| {
                PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/switchyard")
            });
        let candidate = cache.join("venv/bin/moto_server");
        assert!(
            candidate.is_file(),
            "moto_server is neither on PATH nor at {}: run ./infra/scripts/aws-tools.sh",
            candidate.display()
        );
        candidate
    })
}

/// A moto_server in its own process group on 127.0.0.1; killed (the whole group) on drop.
struct Moto {
    port: u16,
    url: String,
    child: Option<Child>,
    log: PathBuf,
}

impl Moto {
    async fn start(log_dir: &Path) -> Moto {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut moto = Moto {
            port,
            url: format!("http://127.0.0.1:{port}"),
            child: None,
            log: log_dir.join("moto.log"),
        };
        moto.spawn().await;
        moto
    }

    /// Start moto on this port and wait until DynamoDB answers.
    async fn spawn(&mut self) {
        use std::os::unix::process::CommandExt;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let child = Command::new(moto_binary())
            .args(["-H", "127.0.0.1", "-p", &self.port.to_string()])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("moto_server starts");
        self.child = Some(child);
        let probe = probe_client(&self.url).await;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if probe.list_tables().send().await.is_ok() {
                return;
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("moto_server exited ({status}); see {}", self.log.display());
            }
            assert!(
                Instant::now() < deadline,
                "moto_server not answering after 60 s; see {}",
                self.log.display()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn signal(&self, signal: &str) {
        if let Some(child) = &self.child {
            let status = Command::new("kill")
                .args([
                    format!("-{signal}"),
                    "--".into(),
                    format!("-{}", child.id()),
                ])
                .status()
                .unwrap();
            assert!(status.success(), "kill -{signal} moto_server");
        }
    }

    fn pause(&self) {
        self.signal("STOP");
    }

    fn resume(&self) {
        self.signal("CONT");
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A DynamoDB client that gives up fast: readiness probes.
async fn probe_client(url: &str) -> aws_sdk_dynamodb::Client {
    let config = aws_sdk_dynamodb::config::Builder::from(&sdk(url).await)
        .retry_config(RetryConfig::disabled())
        .timeout_config(
            TimeoutConfig::builder()
                .operation_timeout(Duration::from_secs(1))
                .build(),
        )
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

async fn create_table(dynamodb: &aws_sdk_dynamodb::Client, table: &str, key: &str) {
    dynamodb
        .create_table()
        .table_name(table)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name(key)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name(key)
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await
        .unwrap();
}

/// The region's resources, as a deployment (or its recovery) creates them: the bucket
/// with `index` published, the sessions, feedback and rerank cache tables.
async fn provision(s3: &aws_sdk_s3::Client, dynamodb: &aws_sdk_dynamodb::Client, index: &[u8]) {
    s3.create_bucket().bucket(BUCKET).send().await.unwrap();
    create_table(dynamodb, SESSIONS, "session_id").await;
    create_table(dynamodb, FEEDBACK, "request_id").await;
    create_table(dynamodb, RERANK_CACHE, "cache_key").await;
    S3IndexStore::new(s3.clone(), BUCKET, PREFIX)
        .push(index)
        .await
        .unwrap();
}

// ---------------------------------------------------------------------------------------
// A Lambda Invoke endpoint in front of `cargo lambda watch`: every function is forwarded
// to the adapter there, except that the `ev` datasource's can be made to fail or stall.

const HEALTHY: u8 = 0;
const FAILING: u8 = 1;
const STALLING: u8 = 2;

#[derive(Clone)]
struct LambdaProxy {
    upstream: aws_sdk_lambda::Client,
    ev_mode: Arc<AtomicU8>,
    ev_failures: Arc<AtomicUsize>,
}

async fn proxy_invoke(
    State(proxy): State<LambdaProxy>,
    axum::extract::Path(function): axum::extract::Path<String>,
    payload: Bytes,
) -> Response {
    if function == EV_FUNCTION {
        match proxy.ev_mode.load(Ordering::SeqCst) {
            FAILING => {
                // Alternately a function error (as Lambda reports an unhandled one) and a
                // 500 with the runtime's error shape (as emulators answer a crash).
                return if proxy.ev_failures.fetch_add(1, Ordering::SeqCst) % 2 == 0 {
                    let mut response = (
                        StatusCode::OK,
                        r#"{"errorType": "Unhandled", "errorMessage": "injected: the ev adapter crashed"}"#,
                    )
                        .into_response();
                    response
                        .headers_mut()
                        .insert("x-amz-function-error", "Unhandled".parse().unwrap());
                    response
                } else {
                    (
                        StatusCode::INTERNAL_SERVER_ERROR,
                        r#"{"errorType": "Runtime.ExitError", "errorMessage": "injected: exited with status 101"}"#,
                    )
                        .into_response()
                };
            }
            STALLING => {
                tokio::time::sleep(Duration::from_secs(60)).await;
                return (StatusCode::OK, "{}").into_response();
            }
            _ => {}
        }
    }
    let forwarded = proxy
        .upstream
        .invoke()
        .function_name(ADAPTER_FUNCTION)
        .payload(Blob::new(payload.to_vec()))
        .send()
        .await;
    match forwarded {
        Ok(output) => {
            let body = output.payload.map(Blob::into_inner).unwrap_or_default();
            let mut response = (StatusCode::OK, body).into_response();
            if let Some(kind) = output.function_error {
                response
                    .headers_mut()
                    .insert("x-amz-function-error", kind.parse().unwrap());
            }
            response
        }
        Err(e) => match e.raw_response() {
            Some(raw) => (
                StatusCode::from_u16(raw.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY),
                raw.body().bytes().unwrap_or_default().to_vec(),
            )
                .into_response(),
            None => (
                StatusCode::BAD_GATEWAY,
                json!({"errorType": "Proxy", "errorMessage": format!("{e:?}")}).to_string(),
            )
                .into_response(),
        },
    }
}

async fn start_lambda_proxy(proxy: LambdaProxy) -> String {
    let app = axum::Router::new()
        .route(
            "/2015-03-31/functions/{function}/invocations",
            post(proxy_invoke),
        )
        .with_state(proxy);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{address}")
}

/// Every datasource's function is the adapter; `ev`'s under a name of its own.
fn adapter_functions(name: &str) -> Option<String> {
    if name == "SWITCHYARD_ADAPTER_FUNCTION_EV" {
        return Some(EV_FUNCTION.into());
    }
    name.starts_with("SWITCHYARD_ADAPTER_FUNCTION_")
        .then(|| ADAPTER_FUNCTION.to_owned())
}

// ---------------------------------------------------------------------------------------
// A Cohere-style rerank provider that can answer 500, stall, or stop listening.

const RERANK_ERROR: u8 = 1;
const RERANK_SLOW: u8 = 2;

#[derive(Default)]
struct FakeReranker {
    mode: AtomicU8,
    calls: AtomicUsize,
}

/// Scores each document by the share of the query's words it contains.
async fn fake_rerank(
    State(provider): State<Arc<FakeReranker>>,
    Json(body): Json<Value>,
) -> Response {
    provider.calls.fetch_add(1, Ordering::SeqCst);
    match provider.mode.load(Ordering::SeqCst) {
        RERANK_ERROR => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                r#"{"message": "injected: the provider is down"}"#,
            )
                .into_response()
        }
        RERANK_SLOW => tokio::time::sleep(Duration::from_secs(3)).await,
        _ => {}
    }
    let query = body["query"].as_str().unwrap_or_default().to_lowercase();
    let words: Vec<&str> = query.split_whitespace().collect();
    let results: Vec<Value> = body["documents"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(index, document)| {
            let text = document.as_str().unwrap_or_default().to_lowercase();
            let hits = words.iter().filter(|w| text.contains(*w)).count();
            json!({"index": index, "relevance_score": hits as f64 / words.len().max(1) as f64})
        })
        .collect();
    Json(json!({ "results": results })).into_response()
}

/// The provider listening on `port` (0: any) until `stop` is sent.
async fn serve_reranker(
    provider: Arc<FakeReranker>,
    port: u16,
) -> (
    u16,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
) {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new()
        .route("/v1/rerank", post(fake_rerank))
        .with_state(provider);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await
            .unwrap();
    });
    (port, stop, server)
}

// ---------------------------------------------------------------------------------------
// The load: clients, their answers, and what is checked on each.

/// An API Gateway (HTTP API) event through the router Lambda's handler: the status and
/// the body as JSON (or why it is not JSON).
async fn send(
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
fn classify(status: u16, body: &Value) -> Result<String, String> {
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

fn rerank_of(body: &Value) -> Option<&Value> {
    body["metadata"]["composite_routing"]["multistage_scoring"]
        .get("rerank")
        .filter(|r| r.is_object())
}

fn session_status(body: &Value) -> &str {
    body["metadata"]["session"]["status"]
        .as_str()
        .unwrap_or_default()
}

fn saved(body: &Value) -> Option<bool> {
    body["metadata"]["session"]["saved"].as_bool()
}

fn adapter_of(body: &Value) -> &str {
    body["metadata"]["composite_routing"]["selected_adapter"]
        .as_str()
        .unwrap_or_default()
}

#[derive(Debug, Clone)]
struct Reply {
    phase: usize,
    session: String,
    query: String,
    sent: Instant,
    answered: Instant,
    /// Sent after the phase's fault was over.
    after: bool,
    status: u16,
    body: Value,
    /// `200 ok`, `502 adapter_error`, ... or why the answer is malformed.
    kind: Result<String, String>,
}

impl Reply {
    fn within(&self, window: (Instant, Instant)) -> bool {
        self.sent >= window.0 && self.answered <= window.1
    }
    fn overlaps(&self, window: (Instant, Instant)) -> bool {
        self.sent <= window.1 && self.answered >= window.0
    }
}

/// What the clients share with the test: where to send, what came back, how far along.
#[derive(Clone)]
struct Load {
    target: Arc<RwLock<axum::Router>>,
    replies: Arc<Mutex<Vec<Reply>>>,
    done: Arc<AtomicUsize>,
    fault_over: Arc<AtomicBool>,
    requests: usize,
}

impl Load {
    fn switch_to(&self, app: axum::Router) {
        *self.target.write().unwrap() = app;
    }

    /// Until `count` answers of this phase are in, or `limit` has passed.
    async fn answered(&self, count: usize, limit: Duration) {
        let deadline = Instant::now() + limit;
        while self.done.load(Ordering::SeqCst) < count && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn total(&self) -> usize {
        CLIENTS * self.requests
    }

    fn replies_of(&self, phase: usize) -> Vec<Reply> {
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

struct Phase {
    name: &'static str,
    /// When the fault held: answers in flight then are "during" it.
    windows: Vec<(Instant, Instant)>,
    notes: Vec<String>,
    panics: usize,
}

/// Run the clients of phase `index` while `inject` injects its fault and recovers from it.
async fn run_phase<F>(
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

// ---------------------------------------------------------------------------------------
// Turns: what the answers said was saved, against what the table holds.

/// The turns (their questions) each session's item holds: one consistent scan of the
/// table, so the snapshot is taken in one short moment.
async fn stored_turns(dynamodb: &aws_sdk_dynamodb::Client) -> HashMap<String, Vec<String>> {
    let mut stored = HashMap::new();
    let mut start = None;
    loop {
        let page = dynamodb
            .scan()
            .table_name(SESSIONS)
            .consistent_read(true)
            .set_exclusive_start_key(start)
            .send()
            .await
            .unwrap();
        for item in page.items() {
            let (Some(AttributeValue::S(session)), Some(AttributeValue::S(json))) =
                (item.get("session_id"), item.get("turns"))
            else {
                panic!("a session item without its id or turns: {item:?}");
            };
            let turns: Vec<Turn> = serde_json::from_str(json).unwrap();
            stored.insert(
                session.clone(),
                turns.into_iter().filter_map(|t| t.query).collect(),
            );
        }
        start = page.last_evaluated_key;
        if start.is_none() {
            return stored;
        }
    }
}

/// Turns lost per phase: answers in `claims` said `saved: true`, and the session's item
/// holds fewer turns of that question than such answers. Also the turns stored more often
/// than the question was asked (duplicates).
async fn turns_lost(
    dynamodb: &aws_sdk_dynamodb::Client,
    claims: &[&Reply],
    asked: &[Reply],
) -> (BTreeMap<usize, usize>, usize) {
    let mut claimed: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
    for reply in claims {
        claimed
            .entry((&reply.session, &reply.query))
            .or_default()
            .push(reply.phase);
    }
    let mut times_asked: HashMap<(&str, &str), usize> = HashMap::new();
    for reply in asked {
        *times_asked
            .entry((&reply.session, &reply.query))
            .or_default() += 1;
    }
    let stored = stored_turns(dynamodb).await;
    let mut lost = BTreeMap::new();
    let mut duplicated = 0;
    for ((session, query), phases) in &claimed {
        let held = stored
            .get(*session)
            .map_or(0, |turns| turns.iter().filter(|q| q == query).count());
        for phase in phases.iter().skip(held) {
            *lost.entry(*phase).or_default() += 1;
        }
        if let Some(times) = times_asked.get(&(*session, *query)) {
            duplicated += held.saturating_sub(*times);
        }
    }
    (lost, duplicated)
}

// ---------------------------------------------------------------------------------------
// The test.

struct Region {
    s3: aws_sdk_s3::Client,
    dynamodb: aws_sdk_dynamodb::Client,
}

async fn region(moto: &Moto) -> Region {
    let config = sdk(&moto.url).await;
    let dynamodb = aws_sdk_dynamodb::config::Builder::from(&config)
        .timeout_config(
            TimeoutConfig::builder()
                .operation_timeout(Duration::from_secs(10))
                .build(),
        )
        .build();
    Region {
        s3: switchyard_aws::s3_client(&config),
        dynamodb: aws_sdk_dynamodb::Client::from_conf(dynamodb),
    }
}

fn settings() -> Settings {
    Settings {
        index: IndexLocation::S3 {
            bucket: BUCKET.into(),
            prefix: PREFIX.into(),
        },
        sessions_table: Some(SESSIONS.into()),
        rerank_cache_table: Some(RERANK_CACHE.into()),
        feedback_table: Some(FEEDBACK.into()),
        workflow_table: None,
    }
}

async fn health(app: &axum::Router) -> Value {
    let (status, body) = send(app.clone(), "GET", "/v1/health", None).await;
    assert_eq!(status, 200);
    body.unwrap()
}

/// When a fault held, and what is worth saying about it.
type Injected = (Vec<(Instant, Instant)>, Vec<String>);

/// What the faults act on: the moto of this test, the region's resources in it, the
/// Lambda proxy's switch for `ev`, the two indexes; and the turns checked before the kill.
struct Bench {
    moto: Moto,
    admin: Region,
    proxy_url: String,
    ev_mode: Arc<AtomicU8>,
    index_a: Vec<u8>,
    index_b: Vec<u8>,
    /// When the turns saved so far were read back, just before the kill.
    cut: Instant,
    killed: Instant,
    checked_before_kill: usize,
    lost_before_kill: BTreeMap<usize, usize>,
}

impl Bench {
    /// A cold start of the router Lambda with the clients `main` builds (the SDK's
    /// defaults) on the emulators.
    async fn cold_start(
        &self,
        config: Config,
    ) -> switchyard_core::Result<(RouterService, ColdStart)> {
        let moto = sdk(&self.moto.url).await;
        let clients = Clients {
            s3: switchyard_aws::s3_client(&moto),
            dynamodb: aws_sdk_dynamodb::Client::new(&moto),
            lambda: aws_sdk_lambda::Client::new(&sdk(&self.proxy_url).await),
        };
        cold_start(&settings(), config, clients, adapter_functions).await
    }

    async fn refused_cold_start(&self) -> String {
        match self.cold_start(Config::default()).await {
            Ok(_) => panic!("a corrupt index must not load"),
            Err(e) => e.to_string(),
        }
    }

    /// moto stopped (SIGSTOP) for 3 s a quarter into the phase, then continued.
    async fn pause_moto(&self, load: &Load) -> Injected {
        load.answered(load.total() / 4, Duration::from_secs(30))
            .await;
        let from = Instant::now();
        self.moto.pause();
        tokio::time::sleep(Duration::from_secs(3)).await;
        self.moto.resume();
        let to = Instant::now();
        let probe = probe_client(&self.moto.url).await;
        while probe.list_tables().send().await.is_err() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        (vec![(from, to)], vec![])
    }

    /// moto killed a quarter into the phase, started again a second later on the same
    /// port, empty; the harness re-creates the bucket, the index and the tables. The turns
    /// saved until then are read back first: the restart wipes them.
    async fn kill_moto(&mut self, load: &Load) -> Injected {
        load.answered(load.total() / 4, Duration::from_secs(30))
            .await;
        self.cut = Instant::now();
        let replies: Vec<Reply> = load.replies.lock().unwrap().clone();
        let claims: Vec<&Reply> = replies
            .iter()
            .filter(|r| r.answered < self.cut && saved(&r.body) == Some(true))
            .collect();
        self.checked_before_kill = claims.len();
        // Questions still in flight may be stored already: duplicates are counted at the end.
        self.lost_before_kill = turns_lost(&self.admin.dynamodb, &claims, &[]).await.0;
        self.moto.kill();
        self.killed = Instant::now();
        tokio::time::sleep(Duration::from_secs(1)).await;
        self.moto.spawn().await;
        self.admin = region(&self.moto).await;
        provision(&self.admin.s3, &self.admin.dynamodb, &self.index_a).await;
        let ready = Instant::now();
        let note = format!(
            "moto down {:.1} s (killed, restarted, bucket, index and tables re-created)",
            (ready - self.killed).as_secs_f64()
        );
        (vec![(self.killed, ready)], vec![note])
    }

    /// The pointer moved to index B a quarter into the phase: a new cold start serves it
    /// and traffic moves to it. Half-way, corrupt artifacts behind the pointer: cold
    /// starts are refused, the running app keeps serving. Then B is published again.
    async fn move_pointer(&self, load: &Load) -> Injected {
        let store = S3IndexStore::new(self.admin.s3.clone(), BUCKET, PREFIX);
        let templates_of = |bytes: &[u8]| {
            Index::from_bytes(bytes, "test")
                .unwrap()
                .catalog
                .template_count()
        };
        let (templates_a, templates_b) = (templates_of(&self.index_a), templates_of(&self.index_b));
        load.answered(load.total() / 4, Duration::from_secs(30))
            .await;
        let from = Instant::now();
        let pointer_b = store.push(&self.index_b).await.unwrap();
        let (service, report) = self.cold_start(Config::default()).await.unwrap();
        assert_eq!(report.index_bytes, self.index_b.len());
        let app_b = app(service);
        assert_eq!(health(&app_b).await["templates"], templates_b);
        let running = load.target.read().unwrap().clone();
        assert_eq!(health(&running).await["templates"], templates_a);
        load.switch_to(app_b);
        let mut notes = vec![format!(
            "a new cold start serves the new artifact ({templates_b} templates, was {templates_a}); traffic moved to it"
        )];

        load.answered(load.total() / 2, Duration::from_secs(30))
            .await;
        let mut corrupt = self.index_b.clone();
        let middle = corrupt.len() / 2;
        corrupt[middle] ^= 0xff;
        let put = |key: String, bytes: Vec<u8>| {
            self.admin
                .s3
                .put_object()
                .bucket(BUCKET)
                .key(key)
                .body(bytes.into())
                .send()
        };
        // (a) The pointer names a corrupt artifact, with that artifact's own hash (a
        // pointer written by hand, or by a tool that does not check what it publishes).
        let key = format!("{PREFIX}/corrupt.idx");
        put(key.clone(), corrupt.clone()).await.unwrap();
        let pointer = json!({"key": key, "sha256": sha256_hex(&corrupt), "bytes": corrupt.len()});
        put(store.pointer_key(), pointer.to_string().into_bytes())
            .await
            .unwrap();
        let refused = self.refused_cold_start().await;
        assert!(
            refused.contains(&format!("s3://{BUCKET}/{key}")),
            "{refused}"
        );
        assert!(refused.contains("checksum mismatch"), "{refused}");
        notes.push(format!(
            "a corrupt artifact named by the pointer: cold start refused: `{refused}`"
        ));
        // (b) The artifact the pointer names overwritten with corrupt bytes.
        store.push(&self.index_b).await.unwrap();
        put(pointer_b.key.clone(), corrupt).await.unwrap();
        let refused = self.refused_cold_start().await;
        assert!(
            refused.contains(&format!("s3://{BUCKET}/{}", pointer_b.key)),
            "{refused}"
        );
        assert!(refused.contains("does not match the pointer"), "{refused}");
        notes.push(format!(
            "the artifact overwritten under the pointer: cold start refused: `{refused}`"
        ));
        // Published again, it loads again.
        store.push(&self.index_b).await.unwrap();
        let (_, report) = self.cold_start(Config::default()).await.unwrap();
        assert_eq!(report.index_bytes, self.index_b.len());
        notes.push("published again, it loads again; the running app answered throughout".into());
        (vec![(from, Instant::now())], notes)
    }

    /// The `ev` function fails (a function error, a 500, alternately) from a quarter to
    /// half-way, then stalls (past the 5 s deadline plus the invoke grace) until
    /// three quarters, or 12 s; then it is healthy again.
    async fn fail_ev(&self, load: &Load) -> Injected {
        load.answered(load.total() / 4, Duration::from_secs(30))
            .await;
        let from = Instant::now();
        self.ev_mode.store(FAILING, Ordering::SeqCst);
        load.answered(load.total() / 2, Duration::from_secs(30))
            .await;
        let failing = (from, Instant::now());
        self.ev_mode.store(STALLING, Ordering::SeqCst);
        load.answered(3 * load.total() / 4, Duration::from_secs(12))
            .await;
        self.ev_mode.store(HEALTHY, Ordering::SeqCst);
        let stalling = (failing.1, Instant::now());
        (vec![failing, stalling], vec![])
    }
}

/// A running provider: its port, what stops it, its task.
type Provider = (
    u16,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
);

/// From a fifth of the phase the provider answers 500, from two fifths too slowly (3 s,
/// past the 1 s timeout), from three fifths it no longer listens; from four fifths it
/// answers again, on the same port (the provider running then is returned too).
async fn take_reranker_down(
    load: &Load,
    reranker: &Arc<FakeReranker>,
    running: Provider,
    restarted: &mut Option<Provider>,
) -> Injected {
    let (port, stop, server) = running;
    let step = load.total() / 5;
    load.answered(step, Duration::from_secs(30)).await;
    let from = Instant::now();
    reranker.mode.store(RERANK_ERROR, Ordering::SeqCst);
    load.answered(2 * step, Duration::from_secs(30)).await;
    reranker.mode.store(RERANK_SLOW, Ordering::SeqCst);
    load.answered(3 * step, Duration::from_secs(30)).await;
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("the provider stops")
        .unwrap();
    load.answered(4 * step, Duration::from_secs(30)).await;
    reranker.mode.store(HEALTHY, Ordering::SeqCst);
    *restarted = Some(serve_reranker(reranker.clone(), port).await);
    (vec![(from, Instant::now())], vec![])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_during_load_keep_answers_well_formed_and_turns_kept() {
    count_panics();
    let lambda_url = endpoint("SWITCHYARD_TEST_LAMBDA_URL");
    let requests = requests_per_client();
    let started = Instant::now();
    let scratch = tempfile::tempdir().unwrap();
    let moto = Moto::start(scratch.path()).await;

    // The indexes: the demo catalog (A), and the same without `policies` (B).
    let index_a = index_bytes(demo_catalog());
    let mut catalog_b = demo_catalog();
    catalog_b.datasources.retain(|d| d.name() != "policies");
    let index_b = index_bytes(catalog_b);
    let admin = region(&moto).await;
    provision(&admin.s3, &admin.dynamodb, &index_a).await;

    // The adapter function under cargo lambda watch answers before the clock starts (its
    // first invoke may build the binary).
    let upstream = aws_sdk_lambda::Client::new(&sdk(&lambda_url).await);
    let warm_up = json!({"request_id": "warm-up", "datasource": "tools",
        "template_id": "calculator_percentage", "query": "What is 15% of 200?",
        "session_parameters": {}, "deadline_ms": 5000});
    tokio::time::timeout(
        Duration::from_secs(600),
        upstream
            .invoke()
            .function_name(ADAPTER_FUNCTION)
            .payload(Blob::new(warm_up.to_string()))
            .send(),
    )
    .await
    .expect("cargo lambda watch answers within 10 minutes")
    .expect("the adapter function answers");
    let ev_mode = Arc::new(AtomicU8::new(HEALTHY));
    let proxy_url = start_lambda_proxy(LambdaProxy {
        upstream,
        ev_mode: ev_mode.clone(),
        ev_failures: Arc::default(),
    })
    .await;
    let mut bench = Bench {
        moto,
        admin,
        proxy_url,
        ev_mode,
        index_a,
        index_b,
        cut: Instant::now(),
        killed: Instant::now(),
        checked_before_kill: 0,
        lost_before_kill: BTreeMap::new(),
    };

    let (service, report) = bench.cold_start(Config::default()).await.unwrap();
    assert_eq!(report.index_bytes, bench.index_a.len());
    let load = Load {
        target: Arc::new(RwLock::new(app(service))),
        replies: Arc::default(),
        done: Arc::default(),
        fault_over: Arc::default(),
        requests,
    };
    let setup = started.elapsed();
    let mut phases = Vec::new();

    let none = async { (vec![], vec![]) };
    phases.push(run_phase(&load, 0, "none (baseline)", "base", none).await);
    for reply in load.replies_of(0) {
        assert_eq!(reply.status, 200, "{} → {}", reply.query, reply.body);
        assert_eq!(session_status(&reply.body), "ok", "{}", reply.body);
        assert_eq!(saved(&reply.body), Some(true), "{}", reply.body);
    }

    let name = "moto paused (SIGSTOP 3 s), resumed";
    let phase = run_phase(&load, 1, name, "pause", bench.pause_moto(&load)).await;
    check_store_outage(&load.replies_of(1), &phase);
    phases.push(phase);

    let name = "moto killed, restarted, tables re-created";
    let phase = run_phase(&load, 2, name, "kill", bench.kill_moto(&load)).await;
    check_store_outage(&load.replies_of(2), &phase);
    phases.push(phase);

    let name = "index pointer moved: new, then corrupt artifacts";
    let phase = run_phase(&load, 3, name, "pointer", bench.move_pointer(&load)).await;
    for reply in load.replies_of(3) {
        assert_eq!(
            reply.status, 200,
            "the running app keeps serving: {}",
            reply.body
        );
        assert_eq!(session_status(&reply.body), "ok", "{}", reply.body);
    }
    phases.push(phase);

    let name = "ev adapter failing, then timing out";
    let phase = run_phase(&load, 4, name, "adapter", bench.fail_ev(&load)).await;
    check_adapter_fault(&load.replies_of(4), &phase);
    phases.push(phase);

    // An app whose reranker is the fake provider: every question is a close call (margin
    // 5), and nothing is cached, so each asks the provider.
    let reranker = Arc::new(FakeReranker::default());
    let provider = serve_reranker(reranker.clone(), 0).await;
    let mut config = Config::default();
    let reranking = &mut config.composite_retrieval.reranking;
    reranking.enabled = true;
    reranking.provider = Some(RerankProvider::Cohere);
    reranking.endpoint = Some(format!("http://127.0.0.1:{}", provider.0));
    reranking.model = Some("rerank-fake".into());
    reranking.timeout_ms = 1000;
    reranking.margin = 5.0;
    config.rerank_cache.ttl_seconds = 0;
    let (service, _) = bench.cold_start(config).await.unwrap();
    load.switch_to(app(service));
    let mut restarted = None;
    let name = "rerank provider: 500, slow, port closed";
    let down = take_reranker_down(&load, &reranker, provider, &mut restarted);
    let phase = run_phase(&load, 5, name, "rerank", down).await;
    check_rerank_fault(&load.replies_of(5), &phase);
    phases.push(phase);
    drop(restarted);

    // Every turn an answer said was saved since the kill is in the new table. (Asked
    // before the kill and answered after the check, a turn may have gone to the old one.)
    let replies: Vec<Reply> = load.replies.lock().unwrap().clone();
    let (cut, killed) = (bench.cut, bench.killed);
    let claims: Vec<&Reply> = replies
        .iter()
        .filter(|r| r.sent > killed && saved(&r.body) == Some(true))
        .collect();
    let (mut lost, duplicated) = turns_lost(&bench.admin.dynamodb, &claims, &replies).await;
    for (phase, count) in &bench.lost_before_kill {
        *lost.entry(*phase).or_default() += count;
    }
    let wiped = replies
        .iter()
        .filter(|r| r.answered >= cut && r.sent <= killed && saved(&r.body) == Some(true))
        .count();
    let checked = bench.checked_before_kill + claims.len();

    print_table(&phases, &replies, &lost, requests);
    println!(
        "\n{checked} turns answered as saved were read back from the sessions table ({} before the kill, {} after it); {wiped} asked before the kill and answered after that read went with the emulator, unchecked; {duplicated} stored twice. Set-up {:.1} s, total {:.1} s.",
        bench.checked_before_kill,
        claims.len(),
        setup.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );

    for reply in &replies {
        assert!(
            reply.kind.is_ok(),
            "malformed answer to {}: {:?} {}",
            reply.query,
            reply.kind,
            reply.body
        );
        assert_ne!(reply.status, 500, "{}", reply.body);
    }
    for phase in &phases {
        assert_eq!(phase.panics, 0, "panics during {}", phase.name);
    }
    assert!(lost.values().all(|n| *n == 0), "turns lost: {lost:?}");
    assert!(checked > 0);
}

/// During a store outage answers continue, saying the session is unavailable (or the turn
/// not saved); once the store is back, sessions are read and turns saved again.
fn check_store_outage(replies: &[Reply], phase: &Phase) {
    let window = phase.windows[0];
    let degraded = replies
        .iter()
        .filter(|r| r.overlaps(window))
        .filter(|r| session_status(&r.body) == "unavailable" || saved(&r.body) == Some(false))
        .count();
    let slowest = replies
        .iter()
        .filter(|r| r.overlaps(window))
        .map(|r| r.answered - r.sent)
        .max()
        .unwrap_or_default();
    assert!(
        degraded > 0,
        "{}: no answer during the outage ({:.1} s) said the session was unavailable; the slowest took {:.1} s",
        phase.name,
        (window.1 - window.0).as_secs_f64(),
        slowest.as_secs_f64()
    );
    for reply in replies {
        assert_eq!(reply.status, 200, "{}: {}", phase.name, reply.body);
    }
    let after: Vec<&Reply> = replies.iter().filter(|r| r.after).collect();
    assert!(!after.is_empty());
    for reply in &after {
        assert_eq!(
            session_status(&reply.body),
            "ok",
            "{} after recovery: {}",
            phase.name,
            reply.body
        );
        assert_eq!(
            saved(&reply.body),
            Some(true),
            "{} after recovery: {}",
            phase.name,
            reply.body
        );
    }
    assert!(
        after
            .iter()
            .any(|r| r.body["metadata"]["session"]["turns"].as_u64() > Some(0)),
        "{}: sessions resume: a turn after recovery reads earlier turns",
        phase.name
    );
}

/// Answers routed to `ev` while its function failed are 502/504 adapter errors; every
/// other datasource's answers are unaffected; `ev` answers again afterwards.
fn check_adapter_fault(replies: &[Reply], phase: &Phase) {
    let (failing, stalling) = (phase.windows[0], phase.windows[1]);
    let mut kinds = BTreeMap::<String, usize>::new();
    for reply in replies {
        let kind = reply.kind.clone().unwrap_or_default();
        // Clarify and no_match answers name a datasource but call no adapter.
        let invoked = reply.body["metadata"].get("adapter").is_some();
        if adapter_of(&reply.body) == "ev" && invoked {
            if reply.within(failing) {
                assert_eq!(kind, "502 adapter_error", "{}", reply.body);
            }
            if reply.within(stalling) {
                assert!(
                    kind == "504 adapter_timeout" || kind == "502 adapter_error",
                    "{}",
                    reply.body
                );
            }
            if reply.sent > stalling.1 {
                assert_eq!(reply.status, 200, "ev after recovery: {}", reply.body);
            }
            *kinds.entry(kind).or_default() += 1;
        } else {
            assert_eq!(
                reply.status, 200,
                "other datasources unaffected: {}",
                reply.body
            );
        }
    }
    assert!(kinds.get("502 adapter_error") > Some(&0), "{kinds:?}");
    assert!(kinds.get("504 adapter_timeout") > Some(&0), "{kinds:?}");
}

/// With the provider down, answers continue on the other stages with `rerank.status:
/// failed`; before and after, it is applied.
fn check_rerank_fault(replies: &[Reply], phase: &Phase) {
    let window = phase.windows[0];
    let mut failed = 0;
    for reply in replies {
        assert_eq!(reply.status, 200, "{}: {}", phase.name, reply.body);
        let Some(rerank) = rerank_of(&reply.body) else {
            continue;
        };
        if reply.within(window) {
            assert_eq!(rerank["status"], "failed", "{}", reply.body);
            failed += 1;
        }
        if reply.sent > window.1 || reply.answered < window.0 {
            assert_eq!(rerank["status"], "applied", "{}", reply.body);
        }
    }
    assert!(failed > 0, "no answer while the provider was down");
}

fn print_table(
    phases: &[Phase],
    replies: &[Reply],
    lost: &BTreeMap<usize, usize>,
    requests: usize,
) {
    println!(
        "\nFaults during load: {CLIENTS} clients x {requests} requests (+{TAIL} after each fault) per phase\n"
    );
    println!("| fault | requests (during it) | ok (200) | errors by kind | degraded answers | latency p50 / max | panics | turns lost |");
    println!("|---|---|---|---|---|---|---|---|");
    for (index, phase) in phases.iter().enumerate() {
        let mine: Vec<&Reply> = replies.iter().filter(|r| r.phase == index).collect();
        let during = mine
            .iter()
            .filter(|r| phase.windows.iter().any(|w| r.overlaps(*w)))
            .count();
        let ok = mine.iter().filter(|r| r.status == 200).count();
        let mut errors = BTreeMap::<String, usize>::new();
        for reply in &mine {
            match &reply.kind {
                Ok(kind) if reply.status != 200 => *errors.entry(kind.clone()).or_default() += 1,
                Ok(_) => {}
                Err(_) => *errors.entry("malformed".into()).or_default() += 1,
            }
        }
        let errors = if errors.is_empty() {
            "none".to_owned()
        } else {
            errors
                .iter()
                .map(|(kind, n)| format!("{kind}: {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let unavailable = mine
            .iter()
            .filter(|r| session_status(&r.body) == "unavailable")
            .count();
        let unsaved = mine
            .iter()
            .filter(|r| saved(&r.body) == Some(false))
            .count();
        let rerank_failed = mine
            .iter()
            .filter(|r| rerank_of(&r.body).is_some_and(|x| x["status"] == "failed"))
            .count();
        let mut degraded = Vec::new();
        if unavailable > 0 {
            degraded.push(format!("session unavailable: {unavailable}"));
        }
        if unsaved > 0 {
            degraded.push(format!("turn not saved: {unsaved}"));
        }
        if rerank_failed > 0 {
            degraded.push(format!("rerank failed: {rerank_failed}"));
        }
        let degraded = if degraded.is_empty() {
            "none".into()
        } else {
            degraded.join(", ")
        };
        let mut latencies: Vec<Duration> = mine.iter().map(|r| r.answered - r.sent).collect();
        latencies.sort();
        let latency = format!(
            "{} / {} ms",
            latencies[latencies.len() / 2].as_millis(),
            latencies[latencies.len() - 1].as_millis()
        );
        println!(
            "| {} | {} ({during}) | {ok} | {errors} | {degraded} | {latency} | {} | {} |",
            phase.name,
            mine.len(),
            phase.panics,
            lost.get(&index).copied().unwrap_or(0)
        );
    }
    for phase in phases {
        for note in &phase.notes {
            println!("- {}: {note}", phase.name);
        }
    }
}
