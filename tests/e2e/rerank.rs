//! `switchyard serve` with a Cohere-style reranker: a local server speaking the rerank
//! API on 127.0.0.1. Close calls are reranked, a repeated question is answered from the
//! rerank cache, and a slow provider degrades routing to the other stages.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::routing::post;
use axum::Json;
use serde_json::{json, Value};
use switchyard_e2e::serve;

#[derive(Default)]
struct Provider {
    requests: AtomicUsize,
    delay_ms: AtomicU64,
}

/// Scores each document by how many of the query's words it contains.
async fn rerank(State(provider): State<Arc<Provider>>, Json(body): Json<Value>) -> Json<Value> {
    provider.requests.fetch_add(1, Ordering::SeqCst);
    let delay = provider.delay_ms.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(delay)).await;
    let query = body["query"].as_str().unwrap_or_default().to_lowercase();
    let words: Vec<&str> = query.split_whitespace().collect();
    let results: Vec<Value> = body["documents"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(index, document)| {
            let text = document.as_str().unwrap_or_default().to_lowercase();
            let hits = words.iter().filter(|w| text.contains(*w)).count();
            json!({"index": index, "relevance_score": hits as f64 / words.len().max(1) as f64})
        })
        .rev()
        .collect();
    Json(json!({ "results": results }))
}

/// The provider on a free port, served from its own thread.
fn start_provider() -> (Arc<Provider>, String) {
    let provider = Arc::new(Provider::default());
    let state = provider.clone();
    let app = axum::Router::new()
        .route("/v1/rerank", post(rerank))
        .with_state(state);
    let address = switchyard_e2e::serve_app(app);
    (provider, format!("http://{address}"))
}

#[test]
fn close_calls_are_reranked_cached_and_survive_a_slow_provider() {
    let (provider, endpoint) = start_provider();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("switchyard.yaml");
    // A margin wider than any gap: every question is a close call and goes to the reranker.
    std::fs::write(
        &config,
        format!(
            "composite_retrieval:\n  reranking:\n    enabled: true\n    provider: cohere\n    endpoint: {endpoint}\n    model: rerank-test\n    timeout_ms: 400\n    margin: 5\n"
        ),
    )
    .unwrap();
    let server = serve(
        dir.path(),
        &[
            "--templates".as_ref(),
            "templates/demo".as_ref(),
            "--config".as_ref(),
            config.as_os_str(),
        ],
    );
    let client = reqwest::blocking::Client::new();
    let route = |query: &str| -> Value {
        client
            .post(format!("{}/v1/route", server.base))
            .json(&json!({ "query": query }))
            .send()
            .unwrap()
            .json()
            .unwrap()
    };

    let report = route("How many employees work in Engineering?");
    let rerank = &report["configuration"]["rerank"];
    assert_eq!(rerank["status"], "applied", "{report}");
    assert_eq!(rerank["reranker"], "cohere:rerank-test");
    // The cache is every caller's: whether an answer came from it is not said.
    assert!(rerank.get("cached").is_none(), "{report}");
    // Every candidate is judged but those a negative example declined (never chosen).
    let matches = report["all_matches"].as_array().unwrap();
    assert!(
        matches
            .iter()
            .all(|m| m["rerank_score"].is_number() == m["declined_by"].is_null()),
        "{report}"
    );
    assert_eq!(
        report["routing_decision"]["selected_template"],
        "employees_count_by_department"
    );
    assert_eq!(provider.requests.load(Ordering::SeqCst), 1);

    let again = route("how many employees work in engineering?");
    assert_eq!(
        again["configuration"]["rerank"]["status"], "applied",
        "{again}"
    );
    assert_eq!(
        provider.requests.load(Ordering::SeqCst),
        1,
        "answered from the cache"
    );

    // Slower than timeout_ms: the answer comes from the other stages, and says so.
    provider.delay_ms.store(3_000, Ordering::SeqCst);
    let began = std::time::Instant::now();
    let slow = route("What is 15% of 200?");
    assert!(began.elapsed() < Duration::from_millis(2_500));
    let rerank = &slow["configuration"]["rerank"];
    assert_eq!(rerank["status"], "failed", "{slow}");
    assert!(
        rerank["error"].as_str().unwrap().contains("timed out"),
        "{rerank}"
    );
    assert_eq!(
        slow["routing_decision"]["selected_template"],
        "calculator_percentage"
    );
}
