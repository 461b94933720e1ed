//! The MCP server at `/mcp` as the router Lambda serves it (API Gateway events, the API's
//! domain as host): stateless JSON-RPC, the caller authorized first, access applied. The
//! official Python client drives it under `serve` in `infra/scripts/chat-clients.sh`.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use switchyard_catalog::auth::Identity;

use crate::setup::{api, call_as, config_with, with_key, TestApi};

/// Auth on: "k-helper" may use only `assistant`.
fn guarded_api() -> TestApi {
    let hash = hex::encode(Sha256::digest(b"k-helper"));
    api(config_with(&[
        ("SWITCHYARD__AUTH__REQUIRED", "true"),
        ("SWITCHYARD__AUTH__PRINCIPALS", "{helper: [assistant]}"),
        ("SWITCHYARD__AUTH__API_KEYS", &format!("{{{hash}: helper}}")),
    ]))
}

fn rpc(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string()
}

#[test]
fn tools_are_listed_and_called_within_the_callers_access() {
    let api = guarded_api();
    let response = call_as(
        &api,
        "POST",
        "/mcp",
        &rpc("tools/list", json!({})),
        with_key("k-helper"),
    );
    assert_eq!(response.status, 200, "{}", response.body);
    let names: Vec<&str> = response.body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ask", "route", "list_datasources"]);
    // ask's input schema is the API's QueryRequest, references inlined.
    let ask = &response.body["result"]["tools"][0]["inputSchema"];
    assert!(ask["properties"]["query"].is_object(), "{ask}");
    assert!(!ask.to_string().contains("$ref"), "{ask}");

    let listed = call_as(
        &api,
        "POST",
        "/mcp",
        &rpc(
            "tools/call",
            json!({"name": "list_datasources", "arguments": {}}),
        ),
        with_key("k-helper"),
    );
    let datasources = &listed.body["result"]["structuredContent"]["datasources"];
    assert_eq!(
        datasources.as_array().map(Vec::len),
        Some(1),
        "{}",
        listed.body
    );
    assert_eq!(datasources[0]["name"], "assistant");

    let routed = call_as(
        &api,
        "POST",
        "/mcp",
        &rpc(
            "tools/call",
            json!({"name": "route", "arguments": {"query": "How many employees work in Engineering?"}}),
        ),
        with_key("k-helper"),
    );
    assert!(
        !routed.body.to_string().contains("\"hr\""),
        "{}",
        routed.body
    );
}

#[test]
fn an_unknown_caller_gets_a_protocol_error_not_a_tool_list() {
    let api = guarded_api();
    for identity in [Identity::default(), with_key("not-a-key")] {
        let response = call_as(
            &api,
            "POST",
            "/mcp",
            &rpc("tools/list", json!({})),
            identity,
        );
        assert_eq!(response.status, 401, "{}", response.body);
        assert_eq!(response.body["jsonrpc"], "2.0");
        assert!(response.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unauthenticated"));
        assert!(response.body.get("result").is_none());
    }
}

#[test]
fn bad_arguments_name_the_field_and_an_unknown_tool_names_the_tools() {
    let api = guarded_api();
    let call = |params: Value| {
        call_as(
            &api,
            "POST",
            "/mcp",
            &rpc("tools/call", params),
            with_key("k-helper"),
        )
        .body
    };
    let message = |params: Value| {
        let body = call(params);
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    for (params, says) in [
        (json!({"name": "ask", "arguments": {"query": 42}}), "query:"),
        (json!({"name": "ask", "arguments": {}}), "query:"),
        (
            json!({"name": "forecast", "arguments": {}}),
            "ask, route, list_datasources",
        ),
    ] {
        let said = message(params.clone());
        assert!(said.contains(says), "{params}: {said}");
    }
}
