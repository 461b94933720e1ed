//! Bad requests: each is refused naming its field, as JSON.

use serde_json::json;
use switchyard_core::config::Config;

use crate::setup::{api, assert_bad_request, call};

#[test]
fn bad_requests_name_the_field() {
    let api = api(Config::default());
    assert_bad_request(&call(&api, "POST", "/v1/query", ""), "body");
    assert_bad_request(&call(&api, "POST", "/v1/query", "{not json"), "body");
    assert_bad_request(&call(&api, "POST", "/v1/query", "[1, 2]"), "body");
    assert_bad_request(&call(&api, "POST", "/v1/query", "{}"), "query");
    assert_bad_request(
        &call(&api, "POST", "/v1/query", r#"{"query": "   "}"#),
        "query",
    );
    assert_bad_request(
        &call(&api, "POST", "/v1/query", r#"{"query": 42}"#),
        "query",
    );
    assert_bad_request(
        &call(&api, "POST", "/v1/route", r#"{"query": "hi", "limit": 3}"#),
        "limit",
    );
    assert_bad_request(
        &call(
            &api,
            "POST",
            "/v1/query",
            r#"{"query": "hi", "session_id": 7}"#,
        ),
        "session_id",
    );
    assert_bad_request(
        &call(
            &api,
            "POST",
            "/v1/query",
            r#"{"query": "hi", "datasources": "hr"}"#,
        ),
        "datasources",
    );
    let long = json!({ "query": "a".repeat(2001) }).to_string();
    let response = call(&api, "POST", "/v1/query", &long);
    assert_bad_request(&response, "query");
    assert!(response.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("2000"));
    let huge = json!({ "query": "x", "session_id": "y".repeat(100_000) }).to_string();
    let response = call(&api, "POST", "/v1/query", &huge);
    assert_eq!(response.status, 413, "{}", response.body);
    assert_eq!(response.body["error"]["field"], "body");
    let response = call(
        &api,
        "POST",
        "/v1/query",
        r#"{"query": "hi", "datasources": ["payroll"]}"#,
    );
    assert_eq!(response.status, 400);
    assert!(response.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("payroll"));
    assert_eq!(call(&api, "GET", "/v1/query", "").status, 405);
    assert_eq!(call(&api, "GET", "/v2/nothing", "").status, 404);
}

/// Found probing the API beside infra/scripts/schemathesis.sh: a session id that is not
/// UTF-8 once percent-decoded was refused by axum in plain text, not the JSON error the
/// document promises; and ids were measured in bytes where the document's `maxLength`
/// (and the message) count characters.
#[test]
fn ids_are_measured_in_characters_and_refused_as_json() {
    let api = api(Config::default());
    assert_bad_request(&call(&api, "DELETE", "/v1/sessions/%FF", ""), "session_id");
    let encoded = |n: usize| format!("/v1/sessions/{}", "%C3%A9".repeat(n));
    let response = call(&api, "DELETE", &encoded(128), "");
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.body["session_id"], "é".repeat(128));
    assert_bad_request(&call(&api, "DELETE", &encoded(129), ""), "session_id");

    let question = |session_id: String| {
        json!({"query": "How many employees work in Engineering?", "session_id": session_id})
            .to_string()
    };
    let response = call(&api, "POST", "/v1/route", &question("é".repeat(128)));
    assert_eq!(response.status, 200, "{}", response.body);
    assert_bad_request(
        &call(&api, "POST", "/v1/route", &question("é".repeat(129))),
        "session_id",
    );

    let feedback =
        |request_id: String| json!({"request_id": request_id, "agent_success": true}).to_string();
    let response = call(&api, "POST", "/v1/feedback", &feedback("é".repeat(128)));
    assert_eq!(response.status, 404, "{}", response.body);
    assert_eq!(response.body["error"]["code"], "unknown_request");
    assert_bad_request(
        &call(&api, "POST", "/v1/feedback", &feedback("é".repeat(129))),
        "request_id",
    );
}
