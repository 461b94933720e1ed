//! The LLM client against a real OpenAI-compatible chat-completions server on 127.0.0.1:
//! the request it sends (model, tool, forced tool choice, Bearer key from the environment),
//! only missing keys returned, and every failure (status, timeout, bad arguments, no tool
//! call, no content) an error. Also the tool schema of templates, exactly.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use switchyard_adapters::llm::{tool_schema, Assistant};
use switchyard_adapters::AdapterError;
use switchyard_catalog::template::Template;

const GENEROUS: Duration = Duration::from_secs(5);

/// What the server received: the Authorization header and the JSON body.
type Seen = Arc<Mutex<Vec<(Option<String>, Value)>>>;

/// Serve a chat-completions endpoint under `/v1` that answers every request with `status`
/// and `reply` after `delay`; gives the base URL and what it receives.
async fn serve(status: StatusCode, reply: Value, delay: Duration) -> (String, Seen) {
    let seen: Seen = Arc::default();
    let record = Arc::clone(&seen);
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move |headers: HeaderMap, Json(body): Json<Value>| {
            let record = Arc::clone(&record);
            let reply = reply.clone();
            async move {
                let auth = headers
                    .get(header::AUTHORIZATION)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                record.lock().unwrap().push((auth, body));
                tokio::time::sleep(delay).await;
                (status, Json(reply)).into_response()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{address}/v1"), seen)
}

fn tool_reply(name: &str, arguments: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": null,
                "tool_calls": [{
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }],
            },
        }],
    })
}

fn content_reply(content: &str) -> Value {
    json!({
        "id": "chatcmpl-2",
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": content},
        }],
    })
}

fn template(fields: Value) -> Template {
    let mut full = json!({"description": "Headcount of a department", "nl_examples": ["x"]});
    for (key, value) in fields.as_object().unwrap() {
        full[key] = value.clone();
    }
    serde_json::from_value(full).unwrap()
}

fn headcount() -> Template {
    template(json!({
        "id": "headcount",
        "parameters": [
            {"name": "department", "required": true, "allowed_values": ["Engineering", "Sales"]},
            {"name": "since", "type": "date"},
            {"name": "limit", "type": "integer"},
        ],
    }))
}

fn client(base: &str, key_env: Option<&str>, timeout: Duration) -> Assistant {
    Assistant::new(base, "test-model", key_env.map(str::to_owned), timeout).unwrap()
}

fn missing(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

fn assert_llm_error(error: AdapterError, needle: &str) {
    match &error {
        AdapterError::Datasource {
            datasource,
            message,
        } => {
            assert_eq!(datasource, "llm");
            assert!(message.contains(needle), "{message:?} lacks {needle:?}");
        }
        other => panic!("unexpected error {other:?}"),
    }
}

#[tokio::test]
async fn fill_missing_sends_a_forced_tool_call_and_returns_only_missing_keys() {
    std::env::set_var("SWITCHYARD_LLM_TEST_KEY", "sk-test-123");
    let arguments = r#"{"department": "Sales", "since": "2024-01-01", "limit": null, "other": 1}"#;
    let (base, seen) = serve(
        StatusCode::OK,
        tool_reply("headcount", arguments),
        Duration::ZERO,
    )
    .await;
    let llm = client(&base, Some("SWITCHYARD_LLM_TEST_KEY"), GENEROUS);
    let template = headcount();
    let filled = llm
        .fill_missing(
            &template,
            "how many in sales?",
            &missing(&["department", "limit"]),
        )
        .await
        .unwrap();
    assert_eq!(Value::Object(filled), json!({"department": "Sales"}));

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    let (auth, body) = &seen[0];
    assert_eq!(auth.as_deref(), Some("Bearer sk-test-123"));
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["temperature"], 0);
    assert_eq!(body["tools"], json!([tool_schema(&template)]));
    assert_eq!(body["tools"][0]["function"]["name"], "headcount");
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "function": {"name": "headcount"}})
    );
    assert_eq!(body["messages"][0]["role"], "system");
    assert!(body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("omit what is not stated"));
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "how many in sales?"})
    );
}

#[tokio::test]
async fn no_key_variable_sends_no_authorization_and_unset_key_is_an_error() {
    let (base, seen) = serve(
        StatusCode::OK,
        tool_reply("headcount", "{}"),
        Duration::ZERO,
    )
    .await;
    let filled = client(&base, None, GENEROUS)
        .fill_missing(&headcount(), "q", &missing(&["department"]))
        .await
        .unwrap();
    assert!(filled.is_empty());
    assert_eq!(seen.lock().unwrap()[0].0, None);

    let error = client(&base, Some("SWITCHYARD_LLM_TEST_UNSET_KEY"), GENEROUS)
        .fill_missing(&headcount(), "q", &missing(&["department"]))
        .await
        .unwrap_err();
    assert_llm_error(error, "SWITCHYARD_LLM_TEST_UNSET_KEY is not set");
    assert_eq!(seen.lock().unwrap().len(), 1, "no request without the key");
}

#[tokio::test]
async fn server_error_is_an_error_and_never_shows_the_key() {
    std::env::set_var("SWITCHYARD_LLM_TEST_ECHO_KEY", "sk-echoed-456");
    let (base, _) = serve(
        StatusCode::INTERNAL_SERVER_ERROR,
        json!({"error": {"message": "model crashed; key was sk-echoed-456"}}),
        Duration::ZERO,
    )
    .await;
    let error = client(&base, Some("SWITCHYARD_LLM_TEST_ECHO_KEY"), GENEROUS)
        .fill_missing(&headcount(), "q", &missing(&["department"]))
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(!text.contains("sk-echoed-456"), "{text}");
    assert_llm_error(error, "500");
}

#[tokio::test]
async fn timeout_is_an_error() {
    let (base, _) = serve(
        StatusCode::OK,
        tool_reply("headcount", r#"{"department": "Sales"}"#),
        Duration::from_secs(3),
    )
    .await;
    let started = std::time::Instant::now();
    let error = client(&base, None, Duration::from_millis(200))
        .fill_missing(&headcount(), "q", &missing(&["department"]))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_llm_error(error, "no reply within 200 ms");
}

#[tokio::test]
async fn malformed_or_absent_calls_are_errors() {
    let cases = [
        (
            tool_reply("headcount", "{\"department\": \"Sal"),
            "not JSON",
        ),
        (tool_reply("headcount", "[1, 2]"), "not a JSON object"),
        (
            tool_reply("other_function", "{}"),
            "called `other_function`",
        ),
        (content_reply("Sales, I think"), "no function call"),
        (json!({"choices": []}), "no function call"),
    ];
    for (reply, needle) in cases {
        let (base, _) = serve(StatusCode::OK, reply, Duration::ZERO).await;
        let error = client(&base, None, GENEROUS)
            .fill_missing(&headcount(), "q", &missing(&["department"]))
            .await
            .unwrap_err();
        assert_llm_error(error, needle);
    }
    // A reply that is not JSON at all.
    let app = Router::new().route("/v1/chat/completions", post(|| async { "not json" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let error = client(&format!("http://{address}/v1"), None, GENEROUS)
        .fill_missing(&headcount(), "q", &missing(&["department"]))
        .await
        .unwrap_err();
    assert_llm_error(error, "the reply is not JSON");
}

#[tokio::test]
async fn synthesize_returns_the_content() {
    let (base, seen) = serve(
        StatusCode::OK,
        content_reply("  Sales has 12 people.\n"),
        Duration::ZERO,
    )
    .await;
    let answer = client(&base, None, GENEROUS)
        .synthesize(
            "how many in sales?",
            "12",
            &json!([{"department": "Sales", "n": 12}]),
        )
        .await
        .unwrap();
    assert_eq!(answer, "Sales has 12 people.");
    let seen = seen.lock().unwrap();
    let body = &seen[0].1;
    assert_eq!(body["model"], "test-model");
    assert!(body.get("tools").is_none());
    let prompt = body["messages"][1]["content"].as_str().unwrap();
    assert!(prompt.contains("how many in sales?"), "{prompt}");
    assert!(prompt.contains(r#""n":12"#), "{prompt}");
}

#[tokio::test]
async fn synthesize_failures_are_errors() {
    let (base, _) = serve(
        StatusCode::INTERNAL_SERVER_ERROR,
        json!({"error": {"message": "overloaded"}}),
        Duration::ZERO,
    )
    .await;
    let error = client(&base, None, GENEROUS)
        .synthesize("q", "r", &json!(1))
        .await
        .unwrap_err();
    assert_llm_error(error, "overloaded");

    let (base, _) = serve(StatusCode::OK, content_reply("   "), Duration::ZERO).await;
    let error = client(&base, None, GENEROUS)
        .synthesize("q", "r", &json!(1))
        .await
        .unwrap_err();
    assert_llm_error(error, "no content");
}

#[test]
fn endpoints_must_be_http_urls() {
    for bad in ["", "not a url", "file:///tmp/x", "ftp://host/v1"] {
        assert!(Assistant::new(bad, "m", None, GENEROUS).is_err(), "{bad:?}");
    }
    let ok = Assistant::new("http://127.0.0.1:11434/v1/", "m", None, GENEROUS).unwrap();
    assert_eq!(ok.endpoint(), "http://127.0.0.1:11434/v1");
}

#[test]
fn tool_schema_from_function_schema() {
    let template = template(json!({
        "id": "convert",
        "tool_type": "function",
        "tool_name": "units",
        "parameters": [{"name": "ignored", "required": true}],
        "function_schema": {
            "name": "convert_units",
            "description": "Convert between units",
            "parameters": {
                "type": "object",
                "properties": {"value": {"type": "number"}, "to": {"type": "string"}},
                "required": ["value", "to"],
            },
        },
    }));
    assert_eq!(
        tool_schema(&template),
        json!({
            "type": "function",
            "function": {
                "name": "convert_units",
                "description": "Convert between units",
                "parameters": {
                    "type": "object",
                    "properties": {"value": {"type": "number"}, "to": {"type": "string"}},
                    "required": ["value", "to"],
                },
            },
        })
    );

    // Without name/description, the template's are used.
    let bare = self::template(json!({
        "id": "convert",
        "function_schema": {"parameters": {"type": "object", "properties": {}}},
    }));
    assert_eq!(
        tool_schema(&bare),
        json!({
            "type": "function",
            "function": {
                "name": "convert",
                "description": "Headcount of a department",
                "parameters": {"type": "object", "properties": {}},
            },
        })
    );
}

#[test]
fn tool_schema_derived_from_parameters() {
    let template = template(json!({
        "id": "orders",
        "description": "Orders of a customer",
        "parameters": [
            {"name": "customer", "required": true, "description": "Customer name"},
            {"name": "status", "type": "enum", "allowed_values": ["open", "shipped"]},
            {"name": "since", "type": "date", "required": true, "description": "Start date"},
            {"name": "limit", "type": "integer", "min": 1, "max": 100},
            {"name": "amount", "type": "number"},
            {"name": "paid", "type": "boolean"},
        ],
    }));
    assert_eq!(
        tool_schema(&template),
        json!({
            "type": "function",
            "function": {
                "name": "orders",
                "description": "Orders of a customer",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "customer": {"type": "string", "description": "Customer name"},
                        "status": {"type": "string", "enum": ["open", "shipped"]},
                        "since": {"type": "string", "format": "date", "description": "Start date"},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                        "amount": {"type": "number"},
                        "paid": {"type": "boolean"},
                    },
                    "required": ["customer", "since"],
                },
            },
        })
    );
}
