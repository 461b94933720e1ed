//! The fakes the faults act through: a Lambda Invoke endpoint in front of `cargo lambda
//! watch` that can make the `ev` datasource's function fail or stall, and a rerank
//! provider that can answer 500, stall, or stop listening.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_lambda::primitives::Blob;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Json;
use serde_json::{json, Value};

/// The function every datasource's adapter runs as under `cargo lambda watch`.
pub const ADAPTER_FUNCTION: &str = "switchyard-adapter";
/// The `ev` datasource's function name: the proxy below forwards it to
/// [`ADAPTER_FUNCTION`] unless told to fail or stall.
const EV_FUNCTION: &str = "switchyard-adapter-ev";

// ---------------------------------------------------------------------------------------
// A Lambda Invoke endpoint in front of `cargo lambda watch`: every function is forwarded
// to the adapter there, except that the `ev` datasource's can be made to fail or stall.

pub const HEALTHY: u8 = 0;
pub const FAILING: u8 = 1;
pub const STALLING: u8 = 2;

#[derive(Clone)]
pub struct LambdaProxy {
    pub upstream: aws_sdk_lambda::Client,
    pub ev_mode: Arc<AtomicU8>,
    pub ev_failures: Arc<AtomicUsize>,
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

pub async fn start_lambda_proxy(proxy: LambdaProxy) -> String {
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
pub fn adapter_functions(name: &str) -> Option<String> {
    if name == "SWITCHYARD_ADAPTER_FUNCTION_EV" {
        return Some(EV_FUNCTION.into());
    }
    name.starts_with("SWITCHYARD_ADAPTER_FUNCTION_")
        .then(|| ADAPTER_FUNCTION.to_owned())
}

// ---------------------------------------------------------------------------------------
// A Cohere-style rerank provider that can answer 500, stall, or stop listening.

pub const RERANK_ERROR: u8 = 1;
pub const RERANK_SLOW: u8 = 2;

#[derive(Default)]
pub struct FakeReranker {
    pub mode: AtomicU8,
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
pub async fn serve_reranker(
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

/// A running provider: its port, what stops it, its task.
pub type Provider = (
    u16,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
);
