//! Sessions and topics: kept per caller, their turns counted, and a session store that is
//! down.

use std::sync::Arc;

use serde_json::json;
use sha2::{Digest, Sha256};
use switchyard_adapters::respond::IntentInvoker;
use switchyard_catalog::BoxFuture;
use switchyard_contract::ContractError;
use switchyard_core::config::Config;
use switchyard_core::service::Service;
use switchyard_routing::session::{SessionStore, Turn};

use crate::setup::{api, call, call_as, config_with, small_router, with_key, ApiResponse, TestApi};

/// Auth on: keys "k-ann" and "k-bob" identify principals `ann` and `bob`, both allowed
/// everything.
fn two_callers_api() -> TestApi {
    let hash = |key: &[u8]| hex::encode(Sha256::digest(key));
    api(config_with(&[
        ("SWITCHYARD__AUTH__REQUIRED", "true"),
        ("SWITCHYARD__AUTH__PRINCIPALS", "{ann: ['*'], bob: ['*']}"),
        (
            "SWITCHYARD__AUTH__API_KEYS",
            &format!("{{{}: ann, {}: bob}}", hash(b"k-ann"), hash(b"k-bob")),
        ),
    ]))
}

/// Two callers using the same session id have two sessions: neither reads the other's
/// turns, and forgetting one leaves the other.
#[test]
fn session_ids_are_scoped_by_caller() {
    let api = two_callers_api();
    let ask = |key: &str| {
        call_as(
            &api,
            "POST",
            "/v1/query",
            r#"{"query": "remind me to feed the cat", "session_id": "shared-id"}"#,
            with_key(key),
        )
    };
    let turns = |response: &ApiResponse| response.body["metadata"]["session"]["turns"].clone();
    assert_eq!(turns(&ask("k-ann")), 0);
    assert_eq!(turns(&ask("k-ann")), 1);
    assert_eq!(turns(&ask("k-bob")), 0, "bob does not see ann's turns");
    let forget = |key: &str| call_as(&api, "DELETE", "/v1/sessions/shared-id", "", with_key(key));
    assert_eq!(forget("k-bob").body["deleted"], true, "bob's own session");
    assert_eq!(forget("k-bob").body["deleted"], false);
    assert_eq!(turns(&ask("k-ann")), 2, "ann's session is untouched");
    // The same key twice is the same caller.
    assert_eq!(turns(&ask("k-bob")), 0);
    assert_eq!(turns(&ask("k-bob")), 1);
}

/// A caller's topic words outlive its sessions and stay its own: a new session of the same
/// caller starts with them (and the template on them gets the prior), another caller's
/// does not.
#[test]
fn topics_follow_a_caller_across_its_sessions() {
    let api = two_callers_api();
    let ask = |key: &str, session: &str| {
        let body =
            format!(r#"{{"query": "remind me to feed the cat", "session_id": "{session}"}}"#);
        let response = call_as(&api, "POST", "/v1/query", &body, with_key(key));
        response.body["metadata"]["session"]["context"].clone()
    };
    let first = ask("k-ann", "one");
    assert_eq!(first["topic_words"], 0, "{first}");
    let next = ask("k-ann", "two");
    assert!(next["topic_words"].as_u64().unwrap() >= 2, "{next}");
    let boost = next["topic_boost"].as_f64().unwrap();
    assert!(
        boost > 1.0 && boost <= 1.5,
        "a weak prior on the reminder: {next}"
    );
    assert_eq!(
        next["context"]["template_id"], first["turn"]["template_id"],
        "{next}"
    );
    let stranger = ask("k-bob", "two");
    assert_eq!(
        stranger["topic_words"], 0,
        "ann's topics are hers: {stranger}"
    );
}

/// A session store that is down.
struct UnreachableSessions;

impl SessionStore for UnreachableSessions {
    fn recent<'a>(&'a self, _: &'a str, _: i64) -> BoxFuture<'a, Result<Vec<Turn>, ContractError>> {
        Box::pin(async move {
            Err(ContractError::Store {
                store: "sessions".into(),
                message: "connection refused".into(),
                source: None,
            })
        })
    }
    fn append<'a>(&'a self, _: &'a str, _: Turn) -> BoxFuture<'a, Result<(), ContractError>> {
        Box::pin(async move {
            Err(ContractError::Store {
                store: "sessions".into(),
                message: "connection refused".into(),
                source: None,
            })
        })
    }
    fn delete<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<bool, ContractError>> {
        Box::pin(async move {
            Err(ContractError::Store {
                store: "sessions".into(),
                message: "connection refused".into(),
                source: None,
            })
        })
    }
}

#[test]
fn a_failing_session_store_still_answers_and_says_so() {
    let router = small_router(Config::default());
    let invoker = IntentInvoker::new(router.index().catalog.clone());
    let api = Arc::new(Service::new(
        Config::default(),
        router,
        Arc::new(invoker),
        Arc::new(UnreachableSessions),
    ));
    let response = call(
        &api,
        "POST",
        "/v1/query",
        r#"{"query": "remind me to feed the cat", "session_id": "s1"}"#,
    );
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.body["status"], "ok");
    assert_eq!(
        response.body["metadata"]["session"]["status"],
        "unavailable"
    );
    assert!(response.body["metadata"]["session"]["error"]
        .as_str()
        .unwrap()
        .contains("connection refused"));
    assert!(
        response.body["metadata"]["session"]["context"].is_null(),
        "no context was used: {}",
        response.body
    );
    // Forgetting needs the store: 503, named.
    let response = call(&api, "DELETE", "/v1/sessions/s1", "");
    assert_eq!(response.status, 503, "{}", response.body);
    assert_eq!(response.body["error"]["code"], "store_unavailable");
}

#[test]
fn a_session_keeps_its_turns() {
    let api = api(Config::default());
    let body = r#"{"query": "remind me to feed the cat", "session_id": "s1"}"#;
    let first = call(&api, "POST", "/v1/query", body);
    let session = &first.body["metadata"]["session"];
    assert_eq!(
        (&session["status"], &session["turns"], &session["saved"]),
        (&json!("ok"), &json!(0), &json!(true)),
        "{session}"
    );
    assert_eq!(
        session["context"]["used"], "turn",
        "a first turn stands alone"
    );
    let second = call(&api, "POST", "/v1/query", body);
    assert_eq!(second.body["metadata"]["session"]["turns"], 1);
    let alone = call(
        &api,
        "POST",
        "/v1/query",
        r#"{"query": "remind me to feed the cat"}"#,
    );
    assert!(alone.body["metadata"]["session"].is_null());
}
