//! `execution.type: http_call` tools: an HTTP request made with the HTTP adapter's
//! machinery on the tools datasource's hosts, answered with `tool_execution` metadata; the
//! index build refuses a tool whose endpoint leaves the allowed hosts or whose `execution`
//! does not parse. The API is a real HTTP server on 127.0.0.1.

use axum::extract::{Path, RawQuery};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use switchyard_adapters::{check_catalog, LocalAdapters};
use switchyard_catalog::template::Catalog;
use switchyard_contract::adapter::{AdapterInvoker, AdapterRequest, AdapterStatus};

async fn forecast_api() -> String {
    let app = Router::new().route(
        "/forecast/{city}",
        get(
            |Path(city): Path<String>, RawQuery(query): RawQuery| async move {
                Json(json!({
                    "city": city,
                    "query": query,
                    "temperature": 21,
                }))
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{address}")
}

/// A catalog of one tools datasource: the built-in calculator and an HTTP forecast tool.
fn catalog(base_url: &str, forecast_execution: Value) -> Catalog {
    serde_json::from_value(json!({"datasources": [{
        "spec": {
            "name": "tools", "kind": "tools", "description": "tools",
            "connection": {"base_url": base_url},
        },
        "templates": [
            {
                "id": "weather_forecast", "description": "The forecast for a city",
                "nl_examples": ["what is the weather in Paris"],
                "parameters": [{
                    "name": "city", "type": "string", "required": true,
                    "extraction_patterns": ["(?i)\\bin ([A-Za-z./]+)"],
                }],
                "tool_type": "function", "tool_name": "forecast",
                "execution": forecast_execution,
                "response_template": "{{ result.temperature }} degrees in {{ result.city }} ({{ result.query }})",
            },
            {
                "id": "percentage", "description": "A percentage of a value",
                "nl_examples": ["what is 15% of 200"],
                "parameters": [
                    {"name": "percentage", "type": "number", "required": true, "extraction_patterns": ["(\\d+)\\s*%"]},
                    {"name": "value", "type": "number", "required": true, "extraction_patterns": ["of\\s+(\\d+)"]},
                ],
                "tool_type": "function", "tool_name": "calculator", "tool_operation": "percentage",
            },
        ],
    }]}))
    .unwrap()
}

fn forecast(endpoint: &str) -> Value {
    json!({"type": "http_call", "endpoint_template": endpoint, "http_method": "GET",
           "query_params": {"units": "metric"}})
}

fn request(template_id: &str, query: &str) -> AdapterRequest {
    serde_json::from_value(json!({
        "request_id": "r", "datasource": "tools", "template_id": template_id,
        "query": query, "session_parameters": {}, "deadline_ms": 2000,
    }))
    .unwrap()
}

#[tokio::test]
async fn an_http_call_tool_answers_through_the_http_adapter() {
    let base = forecast_api().await;
    let catalog = catalog(&base, forecast("/forecast/{city}"));
    check_catalog(&catalog).unwrap();
    let adapters = LocalAdapters::open(catalog, None).await.unwrap();

    let answer = adapters
        .invoke(request("weather_forecast", "what is the weather in Paris"))
        .await
        .unwrap();
    assert_eq!(answer.status(), AdapterStatus::Ok, "{answer:?}");
    assert_eq!(answer.content, "21 degrees in Paris (units=metric)");
    let execution = &answer.data["tool_execution"];
    assert_eq!(execution["tool"], "forecast");
    assert_eq!(execution["operation"], "http_call");
    assert_eq!(execution["parameters"]["city"], "Paris");
    assert_eq!(execution["result"]["temperature"], 21);
    assert!(execution["execution_time_ms"].as_f64().unwrap() >= 0.0);

    // A value with slashes stays one path segment: the server sees it whole.
    let answer = adapters
        .invoke(request("weather_forecast", "weather in ../admin"))
        .await
        .unwrap();
    assert_eq!(answer.status(), AdapterStatus::Ok, "{answer:?}");
    assert_eq!(answer.data["tool_execution"]["result"]["city"], "../admin");
}

#[tokio::test]
async fn built_in_tools_report_their_execution_time() {
    let catalog = catalog("http://127.0.0.1:9", forecast("/forecast/{city}"));
    let adapters = LocalAdapters::open(catalog, None).await.unwrap();
    let answer = adapters
        .invoke(request("percentage", "what is 15% of 200"))
        .await
        .unwrap();
    assert_eq!(answer.status(), AdapterStatus::Ok, "{answer:?}");
    let execution = &answer.data["tool_execution"];
    assert_eq!(execution["operation"], "percentage");
    assert_eq!(execution["result"], 30);
    assert!(execution["execution_time_ms"].is_number(), "{execution}");
}

#[tokio::test]
async fn an_unreachable_tool_api_is_an_error_status() {
    // Port 9 (discard) is closed on loopback: the retries end in a connection error.
    let catalog = catalog("http://127.0.0.1:9", forecast("/forecast/{city}"));
    let adapters = LocalAdapters::open(catalog, None).await.unwrap();
    let answer = adapters
        .invoke(request("weather_forecast", "weather in Paris"))
        .await
        .unwrap();
    assert_eq!(answer.status(), AdapterStatus::Error, "{answer:?}");
    assert!(answer.error().unwrap().contains("weather_forecast"));
}

#[test]
fn the_index_build_refuses_a_tool_endpoint_outside_the_allowed_hosts() {
    let catalog = catalog(
        "http://127.0.0.1:9",
        forecast("https://elsewhere.example.com/forecast/{city}"),
    );
    let error = check_catalog(&catalog).unwrap_err().to_string();
    assert!(error.contains("weather_forecast"), "{error}");
    assert!(
        error.contains("neither the base_url's host nor in allowed_hosts"),
        "{error}"
    );
}

#[test]
fn a_malformed_execution_is_refused_naming_the_field() {
    let bad_type = catalog(
        "http://127.0.0.1:9",
        json!({"type": "shell", "command": "ls"}),
    );
    let error = check_catalog(&bad_type).unwrap_err().to_string();
    assert!(
        error.contains("execution.type must be `builtin` or `http_call`, found `shell`"),
        "{error}"
    );
    assert!(error.contains("weather_forecast"), "{error}");

    let unknown_field = catalog(
        "http://127.0.0.1:9",
        json!({"type": "http_call", "endpoint_template": "/f/{city}", "verb": "GET"}),
    );
    let error = check_catalog(&unknown_field).unwrap_err().to_string();
    assert!(error.contains("execution.verb"), "{error}");
}

#[test]
fn the_index_build_defers_a_base_url_from_an_unset_variable() {
    let mut catalog = catalog("unused", forecast("/forecast/{city}"));
    let connection = &mut catalog.datasources[0].spec.connection;
    connection.clear();
    connection.insert(
        "base_url_env".into(),
        "SWITCHYARD_TOOLS_TEST_BASE_UNSET".into(),
    );
    // Relative endpoints wait for the adapter's start; absolute ones are still checked.
    check_catalog(&catalog).unwrap();
    catalog.datasources[0].templates[0].execution =
        Some(forecast("https://elsewhere.example.com/f/{city}"));
    assert!(check_catalog(&catalog).is_err());
}

#[test]
fn the_index_build_refuses_an_http_endpoint_outside_the_allowed_hosts() {
    let catalog: Catalog = serde_json::from_value(json!({"datasources": [{
        "spec": {"name": "crm", "kind": "http", "description": "crm",
                 "connection": {"base_url": "https://crm.internal.example"},
                 "allowed_hosts": ["api.partner.example"]},
        "templates": [
            {"id": "partner_lookup", "description": "d", "nl_examples": ["e"],
             "endpoint_template": "https://api.partner.example/v1/accounts"},
            {"id": "leaky_lookup", "description": "d", "nl_examples": ["e"],
             "endpoint_template": "https://attacker.example/collect"},
        ],
    }]}))
    .unwrap();
    let error = check_catalog(&catalog).unwrap_err().to_string();
    assert!(error.contains("leaky_lookup"), "{error}");
    assert!(error.contains("attacker.example"), "{error}");
}
