//! The caller's access: what a caller may see and reach, and callers refused (401, 403).

use std::collections::BTreeSet;

use serde_json::json;
use sha2::{Digest, Sha256};
use switchyard_catalog::auth::Access;
use switchyard_catalog::auth::Identity;

use crate::setup::{api, call, call_as, config_with, with_key, TestApi};

/// Auth on: the key "k-helper" identifies principal `helper`, which may use `assistant`.
fn guarded_api() -> TestApi {
    let hash = hex::encode(Sha256::digest(b"k-helper"));
    api(config_with(&[
        ("SWITCHYARD__AUTH__REQUIRED", "true"),
        (
            "SWITCHYARD__AUTH__PRINCIPALS",
            "{helper: [assistant], idle: []}",
        ),
        ("SWITCHYARD__AUTH__API_KEYS", &format!("{{{hash}: helper}}")),
    ]))
}

#[test]
fn a_caller_sees_only_its_datasources() {
    let api = guarded_api();
    let caller = || with_key("k-helper");
    let only_assistant = Access::Only(BTreeSet::from(["assistant".to_owned()]));
    let routing = api
        .router()
        .route("How many employees work in Engineering?", &only_assistant)
        .unwrap();
    assert!(routing.matches.iter().all(|m| m.datasource == "assistant"));
    assert_eq!(routing.adapters_searched, ["assistant"]);

    let response = call_as(
        &api,
        "POST",
        "/v1/route",
        r#"{"query": "How many employees work in Engineering?"}"#,
        caller(),
    );
    assert!(!response
        .body
        .to_string()
        .contains("employees_by_department"));
    let response = call_as(&api, "GET", "/v1/stats", "", caller());
    assert_eq!(response.body["child_adapter_count"], 1);
    assert!(response.body["child_adapters"].get("hr").is_none());
    let response = call_as(
        &api,
        "POST",
        "/v1/query",
        r#"{"query": "How many employees?", "datasources": ["hr"]}"#,
        caller(),
    );
    assert_eq!(response.status, 400);
    assert_eq!(response.body["error"]["code"], "unknown_datasource");
    // Executing: only the caller's datasources can be reached.
    let response = call_as(
        &api,
        "POST",
        "/v1/query",
        r#"{"query": "How many employees work in Engineering?"}"#,
        caller(),
    );
    assert_ne!(
        response.body["metadata"]["composite_routing"]["selected_adapter"],
        "hr"
    );
    assert!(!response
        .body
        .to_string()
        .contains("employees_by_department"));
}

#[test]
fn unknown_callers_get_401_and_callers_without_datasources_403() {
    let api = guarded_api();
    let query = r#"{"query": "How many employees work in Engineering?"}"#;
    for identity in [Identity::default(), with_key("wrong")] {
        for (method, path, body) in [
            ("POST", "/v1/query", query),
            ("POST", "/v1/route", query),
            ("GET", "/v1/stats", ""),
        ] {
            let response = call_as(&api, method, path, body, identity.clone());
            assert_eq!(response.status, 401, "{path}: {}", response.body);
            assert_eq!(response.body["error"]["code"], "unauthenticated");
        }
    }
    let with_token = |path: &str, claims: serde_json::Value| {
        let identity = Identity {
            api_key: None,
            claims: claims.as_object().cloned(),
        };
        call_as(&api, "POST", path, query, identity)
    };
    let response = with_token("/v1/query", json!({"sub": "idle"}));
    assert_eq!(response.status, 403, "{}", response.body);
    // A token's own datasources claim, for no one: refused, naming the claim it lacks.
    let response = with_token("/v1/route", json!({"switchyard_datasources": "hr"}));
    assert_eq!(response.status, 403, "{}", response.body);
    assert!(
        response.body.to_string().contains("`sub`"),
        "{}",
        response.body
    );
    // The same claim with the caller named.
    let response = with_token(
        "/v1/route",
        json!({"sub": "ann", "switchyard_datasources": "hr"}),
    );
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.body["routing_decision"]["would_route_to"], "hr");
    // Health stays open.
    assert_eq!(call(&api, "GET", "/v1/health", "").status, 200);
}
