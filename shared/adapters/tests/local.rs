//! The local adapters with a model behind them: a required parameter the question leaves
//! out is asked of the model (and checked like any value); a model failure asks the user;
//! synthesis rewrites answers and falls back to the rendered template. The model is a real
//! OpenAI-compatible HTTP server on 127.0.0.1.

use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use switchyard_adapters::llm::Assistant;
use switchyard_adapters::local::LlmFeatures;
use switchyard_adapters::LocalAdapters;
use switchyard_catalog::template::Catalog;
use switchyard_contract::adapter::{AdapterInvoker, AdapterRequest, AdapterStatus};

/// A chat-completions server answering every call with `status` and `reply`.
async fn model(status: StatusCode, reply: Value) -> String {
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move || {
            let reply = reply.clone();
            async move { (status, Json(reply)).into_response() }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{address}/v1")
}

fn tool_call(arguments: Value) -> Value {
    json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "employees_count_by_department", "arguments": arguments.to_string()}}
    ]}}]})
}

fn demo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo")
}

async fn adapters(endpoint: String, fill: bool, synthesize: bool) -> LocalAdapters {
    let catalog = Catalog::load(&demo_root()).unwrap();
    let assistant = Assistant::new(endpoint, "test-model", None, Duration::from_secs(2)).unwrap();
    LocalAdapters::open(catalog, Some(&demo_root()))
        .await
        .unwrap()
        .with_llm(Some(LlmFeatures {
            assistant,
            fill_missing_parameters: fill,
            synthesize_response: synthesize,
            text_to_sql: false,
        }))
}

fn headcount(query: &str) -> AdapterRequest {
    serde_json::from_value(json!({
        "request_id": "r", "datasource": "hr", "template_id": "employees_count_by_department",
        "query": query, "session_parameters": {}, "deadline_ms": 2000,
    }))
    .unwrap()
}

#[tokio::test]
async fn the_model_fills_a_missing_required_parameter() {
    let endpoint = model(StatusCode::OK, tool_call(json!({"department": "sales"}))).await;
    let answer = adapters(endpoint, true, false)
        .await
        .invoke(headcount("how big is the team of my colleague Ann?"))
        .await
        .unwrap();
    assert_eq!(answer.status(), AdapterStatus::Ok, "{answer:?}");
    // Checked like extracted values: the allowed value's canonical spelling.
    assert_eq!(answer.parameters["department"], "Sales");
    assert_eq!(answer.content, "12 employees work in Sales.");
}

#[tokio::test]
async fn a_model_value_outside_the_allowed_values_is_an_error_not_a_guess() {
    let endpoint = model(StatusCode::OK, tool_call(json!({"department": "Catering"}))).await;
    let answer = adapters(endpoint, true, false)
        .await
        .invoke(headcount("how big is the team of my colleague Ann?"))
        .await
        .unwrap();
    assert_eq!(answer.status(), AdapterStatus::Error, "{answer:?}");
    assert!(answer.content.contains("department") && answer.content.contains("Catering"));
}

#[tokio::test]
async fn a_failing_model_asks_the_user() {
    let endpoint = model(
        StatusCode::INTERNAL_SERVER_ERROR,
        json!({"error": {"message": "down"}}),
    )
    .await;
    let answer = adapters(endpoint, true, false)
        .await
        .invoke(headcount("how big is the team of my colleague Ann?"))
        .await
        .unwrap();
    assert_eq!(answer.status(), AdapterStatus::NeedsClarification);
    assert_eq!(answer.missing[0]["name"], "department");
}

#[tokio::test]
async fn synthesis_rewrites_and_falls_back() {
    let reply = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "Engineering has 14 people."}}]});
    let endpoint = model(StatusCode::OK, reply).await;
    let answer = adapters(endpoint, false, true)
        .await
        .invoke(headcount("How many employees work in Engineering?"))
        .await
        .unwrap();
    assert_eq!(answer.content, "Engineering has 14 people.");

    let endpoint = model(StatusCode::SERVICE_UNAVAILABLE, json!({})).await;
    let answer = adapters(endpoint, false, true)
        .await
        .invoke(headcount("How many employees work in Engineering?"))
        .await
        .unwrap();
    assert_eq!(answer.status(), AdapterStatus::Ok);
    assert_eq!(answer.content, "14 employees work in Engineering.");
}

/// A chat-completions server answering every call with `reply` after `delay`.
async fn slow_model(reply: Value, delay: Duration) -> String {
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move || {
            let reply = reply.clone();
            async move {
                tokio::time::sleep(delay).await;
                (StatusCode::OK, Json(reply)).into_response()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{address}/v1")
}

/// Within `llm.timeout_ms` (2 s here) but past the request's deadline.
const SLOW: Duration = Duration::from_millis(1500);

/// What a deadline may be overrun by.
const MARGIN: Duration = Duration::from_millis(700);

fn within(deadline_ms: u64, query: &str) -> AdapterRequest {
    let mut request = headcount(query);
    request.deadline_ms = deadline_ms;
    request
}

#[tokio::test]
async fn filling_parameters_stops_at_the_request_deadline() {
    let endpoint = slow_model(tool_call(json!({"department": "sales"})), SLOW).await;
    let adapters = adapters(endpoint, true, false).await;
    let started = std::time::Instant::now();
    let answer = (adapters.invoke(within(300, "how big is the team of my colleague Ann?")))
        .await
        .unwrap();
    let elapsed = started.elapsed();
    assert!(
        elapsed < Duration::from_millis(300) + MARGIN,
        "answered after {elapsed:?}"
    );
    // The model's value came too late: the user is asked.
    assert_eq!(
        answer.status(),
        AdapterStatus::NeedsClarification,
        "{answer:?}"
    );
}

#[tokio::test]
async fn synthesis_stops_at_the_request_deadline_with_the_rendered_answer() {
    let reply = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "Engineering has 14 people."}}]});
    let endpoint = slow_model(reply, SLOW).await;
    let adapters = adapters(endpoint, false, true).await;
    let started = std::time::Instant::now();
    let answer = (adapters.invoke(within(300, "How many employees work in Engineering?")))
        .await
        .unwrap();
    let elapsed = started.elapsed();
    assert!(
        elapsed < Duration::from_millis(300) + MARGIN,
        "answered after {elapsed:?}"
    );
    assert_eq!(answer.status(), AdapterStatus::Ok, "{answer:?}");
    assert_eq!(answer.content, "14 employees work in Engineering.");
}
