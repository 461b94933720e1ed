//! Retries and their backoff, the deadline, and the response size cap.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Map};
use switchyard_adapters::http::HttpDatasource;

use crate::setup::{datasource, find, open, serve, GENEROUS, SECOND};

#[tokio::test]
async fn server_errors_are_retried_and_other_client_errors_are_not() {
    let hits = Arc::new(AtomicUsize::new(0));
    let app = Router::new()
        .route(
            "/flaky",
            get(|State(hits): State<Arc<AtomicUsize>>| async move {
                let n = hits.fetch_add(1, Ordering::SeqCst) + 1;
                if n <= 2 {
                    (StatusCode::SERVICE_UNAVAILABLE, "busy").into_response()
                } else {
                    Json(json!({"ok": true, "attempt": n})).into_response()
                }
            }),
        )
        .route(
            "/missing",
            get(|State(hits): State<Arc<AtomicUsize>>| async move {
                hits.fetch_add(100, Ordering::SeqCst);
                StatusCode::NOT_FOUND
            }),
        )
        .with_state(Arc::clone(&hits));
    let base = serve(app).await;
    let (source, spec) = open(
        &base,
        vec![
            json!({"id": "flaky", "endpoint_template": "/flaky"}),
            json!({"id": "missing", "endpoint_template": "/missing"}),
        ],
    );
    let result = source
        .call(find(&spec, "flaky"), &Map::new(), "r1", GENEROUS)
        .await
        .unwrap();
    assert_eq!(result.data, json!({"ok": true, "attempt": 3}));
    assert_eq!(hits.load(Ordering::SeqCst), 3);

    let error = source
        .call(find(&spec, "missing"), &Map::new(), "r1", GENEROUS)
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "datasource `api`: template `missing`: HTTP 404 Not Found"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 103, "a 404 is asked once");
}

#[tokio::test]
async fn too_many_requests_exhausts_the_retries() {
    let hits = Arc::new(AtomicUsize::new(0));
    let app = Router::new()
        .route(
            "/limited",
            get(|State(hits): State<Arc<AtomicUsize>>| async move {
                hits.fetch_add(1, Ordering::SeqCst);
                StatusCode::TOO_MANY_REQUESTS
            }),
        )
        .with_state(Arc::clone(&hits));
    let base = serve(app).await;
    let (source, spec) = open(
        &base,
        vec![json!({"id": "limited", "endpoint_template": "/limited"})],
    );
    let limited = find(&spec, "limited");
    let started = Instant::now();
    let error = source
        .call(limited, &Map::new(), "r1", GENEROUS)
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "datasource `api`: template `limited`: HTTP 429 Too Many Requests (after 3 attempts)"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 3, "one try and two retries");
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "backoff 100 + 200 ms"
    );

    // A retry whose pause would end past the deadline is not made: 100 ms fits in 250 ms,
    // the second pause of 200 ms does not.
    hits.store(0, Ordering::SeqCst);
    let error = source
        .call(limited, &Map::new(), "r1", Duration::from_millis(250))
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(hits.load(Ordering::SeqCst), 2, "{error}");
    assert!(
        error.ends_with("HTTP 429 Too Many Requests (after 2 attempts)"),
        "{error}"
    );
}

#[tokio::test]
async fn a_slow_server_is_cut_off_at_the_deadline() {
    let app = Router::new().route(
        "/slow",
        get(|| async {
            tokio::time::sleep(Duration::from_secs(3)).await;
            Json(json!({"late": true}))
        }),
    );
    let base = serve(app).await;
    let (source, spec) = open(
        &base,
        vec![json!({"id": "slow", "endpoint_template": "/slow"})],
    );
    let started = Instant::now();
    let error = source
        .call(
            find(&spec, "slow"),
            &Map::new(),
            "r1",
            Duration::from_millis(300),
        )
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "datasource `api`: template `slow`: no complete answer within the deadline of 300 ms"
    );
    assert!(started.elapsed() < Duration::from_millis(1500));

    // The datasource's own limit caps a longer deadline.
    let limited = datasource(
        json!({"connection": {"base_url": base}, "limits": {"max_rows": 10, "timeout_ms": 200}}),
        vec![json!({"id": "slow", "endpoint_template": "/slow"})],
    );
    let error = HttpDatasource::open(&limited)
        .unwrap()
        .call(find(&limited, "slow"), &Map::new(), "r1", GENEROUS)
        .await
        .unwrap_err()
        .to_string();
    assert!(error.ends_with("within the deadline of 200 ms"), "{error}");
}

#[tokio::test]
async fn responses_are_capped_at_max_response_bytes() {
    fn raw(body: String) -> impl IntoResponse {
        ([(header::CONTENT_TYPE, "application/json")], body)
    }
    let app = Router::new()
        .route(
            "/big",
            get(|| async { raw(serde_json::to_string(&(0..100).collect::<Vec<_>>()).unwrap()) }),
        )
        .route(
            "/padded",
            get(|| async { raw(format!("{{\"a\":1}}{}", " ".repeat(500))) }),
        )
        .route(
            "/fits",
            get(|| async { raw(format!("{{\"k\":\"{}\"}}", "x".repeat(56))) }),
        );
    let base = serve(app).await;
    let spec = datasource(
        json!({"connection": {"base_url": base, "max_response_bytes": "64"}}),
        vec![
            json!({"id": "big", "endpoint_template": "/big"}),
            json!({"id": "padded", "endpoint_template": "/padded"}),
            json!({"id": "fits", "endpoint_template": "/fits"}),
        ],
    );
    let source = HttpDatasource::open(&spec).unwrap();

    let error = source
        .call(find(&spec, "big"), &Map::new(), "r1", SECOND)
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("the response exceeded 64 bytes"), "{error}");

    let cut = source
        .call(find(&spec, "padded"), &Map::new(), "r1", SECOND)
        .await
        .unwrap();
    assert_eq!((cut.data, cut.truncated), (json!({"a": 1}), true));

    let whole = source
        .call(find(&spec, "fits"), &Map::new(), "r1", SECOND)
        .await
        .unwrap();
    assert_eq!(whole.data["k"].as_str().unwrap().len(), 56);
    assert!(!whole.truncated, "exactly 64 bytes is not cut");
}
