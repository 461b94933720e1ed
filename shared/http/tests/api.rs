//! The HTTP app on a small catalog with the real model: every endpoint, the errors, the
//! caller's access, sessions, clarify, rerank. Requests go in as API Gateway events, the
//! way the router Lambda receives them (under `switchyard serve` the same app runs).

#[path = "../../core/tests/common/mod.rs"]
mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use switchyard_core::auth::Identity;
use switchyard_core::config::Config;
use switchyard_core::index::Index;
use switchyard_core::invoker::{AdapterInvoker, IntentInvoker};
use switchyard_core::rerank::{BoxFuture, RerankCandidate, RerankStage, Reranker};
use switchyard_core::rerank_cache::MemoryRerankCache;
use switchyard_core::router::{Access, Outcome, Router, Weights};
use switchyard_core::service::Service;
use switchyard_core::session::{MemorySessionStore, SessionStore, Turn};
use switchyard_core::template::Catalog;
use switchyard_core::Error;
use tower::ServiceExt;

fn config_with(pairs: &[(&str, &str)]) -> Config {
    Config::load(
        None,
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())),
    )
    .unwrap()
}

fn router_for(dir: &std::path::Path, config: Config) -> Router {
    let catalog = Catalog::load(dir).unwrap();
    let embedder = common::embedder();
    let index = Index::build(catalog, embedder.as_ref(), &config, &|_, _| {}).unwrap();
    Router::new(index, config, embedder, "test").unwrap()
}

fn small_router(config: Config) -> Router {
    router_for(common::small_catalog().path(), config)
}

type TestService = Service<IntentInvoker, MemorySessionStore>;
type TestApi = Arc<TestService>;

fn service(config: Config) -> TestService {
    let sessions = MemorySessionStore::new(config.sessions.clone());
    let router = small_router(config);
    let invoker = IntentInvoker::new(router.index().catalog.clone());
    Service::new(router, invoker, sessions)
}

fn api(config: Config) -> TestApi {
    Arc::new(service(config))
}

struct ApiResponse {
    status: u16,
    body: Value,
}

fn call<I: AdapterInvoker + 'static, S: SessionStore + 'static>(
    api: &Arc<Service<I, S>>,
    method: &str,
    path: &str,
    body: &str,
) -> ApiResponse {
    call_as(api, method, path, body, Identity::default())
}

/// One request as an API Gateway (HTTP API v2) event: the key as `x-api-key`, the claims
/// as the JWT authorizer's.
fn call_as<I: AdapterInvoker + 'static, S: SessionStore + 'static>(
    api: &Arc<Service<I, S>>,
    method: &str,
    path: &str,
    body: &str,
    identity: Identity,
) -> ApiResponse {
    let mut headers = json!({"content-type": "application/json"});
    if let Some(key) = &identity.api_key {
        headers["x-api-key"] = json!(key);
    }
    let mut context = json!({"accountId": "1", "apiId": "api", "domainName": "example.com",
        "domainPrefix": "example", "http": {"method": method, "path": path, "protocol": "HTTP/1.1",
        "sourceIp": "127.0.0.1", "userAgent": "test"}, "requestId": "r1", "routeKey": "$default",
        "stage": "$default", "time": "21/Nov/2026:00:00:00 +0000", "timeEpoch": 0});
    if let Some(claims) = &identity.claims {
        context["authorizer"] = json!({"jwt": {"claims": claims, "scopes": null}});
    }
    let event = json!({
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": "",
        "headers": headers, "requestContext": context, "body": body, "isBase64Encoded": false
    });
    let request = lambda_http::request::from_str(&event.to_string()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let response = switchyard_http::app(api.clone())
            .oneshot(request)
            .await
            .unwrap();
        let status = response.status().as_u16();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        ApiResponse { status, body }
    })
}

fn assert_bad_request(response: &ApiResponse, field: &str) {
    assert_eq!(response.status, 400, "{}", response.body);
    assert_eq!(response.body["error"]["field"], field, "{}", response.body);
    let message = response.body["error"]["message"].as_str().unwrap();
    assert!(message.contains(field), "{message}");
}

#[test]
fn routes_to_the_right_datasource_and_template() {
    let router = small_router(Config::default());
    let routing = router
        .route("How many employees work in Engineering?", &Access::All)
        .unwrap();
    let selected = routing.selected_match().expect("above threshold");
    assert_eq!(
        (selected.datasource.as_str(), selected.template_id.as_str()),
        ("hr", "employees_by_department")
    );
    assert_eq!(routing.adapters_searched, ["assistant", "hr"]);
    assert!(selected.string_similarity_score.is_some());
    let routing = router
        .route("remind me to feed the cat", &Access::All)
        .unwrap();
    assert_eq!(
        routing.selected_match().unwrap().template_id,
        "set_reminder"
    );
}

#[test]
fn weights_renormalise_over_enabled_stages() {
    let both = small_router(Config::default());
    let w = Weights::for_stages(&both.config().composite_retrieval, false);
    assert!((w.embedding_weight + w.string_similarity_weight - 1.0).abs() < 1e-6);
    assert_eq!(w.rerank_weight, 0.0);
    let embedding_only = small_router(config_with(&[(
        "SWITCHYARD__COMPOSITE_RETRIEVAL__STRING_SIMILARITY__ENABLED",
        "false",
    )]));
    let routing = embedding_only
        .route("Will it rain tomorrow?", &Access::All)
        .unwrap();
    assert_eq!(routing.weights.embedding_weight, 1.0);
    for m in &routing.matches {
        assert_eq!(m.combined_score, m.embedding_score);
        assert_eq!(m.string_similarity_score, None);
    }
}

#[test]
fn ties_go_to_the_earlier_datasource() {
    let same = "templates:\n  - id: ID\n    description: Count the employees\n    nl_examples: [How many employees are there?]\n";
    let dir = common::catalog(&[
        (
            "alpha/datasource.yaml",
            "name: alpha\nkind: intent\ndescription: first\n",
        ),
        // Ids differ only in separators: their id words are the same.
        (
            "alpha/templates.yaml",
            &same.replace("ID", "count_employees"),
        ),
        (
            "beta/datasource.yaml",
            "name: beta\nkind: intent\ndescription: second\n",
        ),
        (
            "beta/templates.yaml",
            &same.replace("ID", "count-employees"),
        ),
    ]);
    // Adam turns the rounding noise of two identical templates' gradients into a small
    // difference in the head's biases: exact ties exist only on the similarity ranking.
    let similarity = config_with(&[(
        "SWITCHYARD__COMPOSITE_RETRIEVAL__LEARNED_SCORING__ENABLED",
        "false",
    )]);
    let router = router_for(dir.path(), similarity);
    let routing = router
        .route("how many employees are there", &Access::All)
        .unwrap();
    assert_eq!(
        routing.matches[0].combined_score,
        routing.matches[1].combined_score
    );
    assert_eq!(routing.matches[0].datasource, "alpha");
}

fn with_key(key: &str) -> Identity {
    Identity {
        api_key: Some(key.into()),
        claims: None,
    }
}

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
    let claims = json!({"sub": "idle"}).as_object().cloned();
    let response = call_as(
        &api,
        "POST",
        "/v1/query",
        query,
        Identity {
            api_key: None,
            claims,
        },
    );
    assert_eq!(response.status, 403, "{}", response.body);
    // A token's own datasources claim.
    let claims = json!({"switchyard_datasources": "hr"}).as_object().cloned();
    let response = call_as(
        &api,
        "POST",
        "/v1/route",
        query,
        Identity {
            api_key: None,
            claims,
        },
    );
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.body["routing_decision"]["would_route_to"], "hr");
    // Health stays open.
    assert_eq!(call(&api, "GET", "/v1/health", "").status, 200);
}

/// A session store that is down.
struct UnreachableSessions;

impl SessionStore for UnreachableSessions {
    async fn recent(&self, _: &str, _: i64) -> Result<Vec<Turn>, Error> {
        Err(Error::Store {
            store: "sessions".into(),
            message: "connection refused".into(),
        })
    }
    async fn append(&self, _: &str, _: Turn) -> Result<(), Error> {
        Err(Error::Store {
            store: "sessions".into(),
            message: "connection refused".into(),
        })
    }
    async fn delete(&self, _: &str) -> Result<bool, Error> {
        Err(Error::Store {
            store: "sessions".into(),
            message: "connection refused".into(),
        })
    }
}

#[test]
fn a_failing_session_store_still_answers_and_says_so() {
    let router = small_router(Config::default());
    let invoker = IntentInvoker::new(router.index().catalog.clone());
    let api = Arc::new(Service::new(router, invoker, UnreachableSessions));
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

#[test]
fn intent_queries_answer_with_parameters_and_metadata() {
    let api = api(Config::default());
    let response = call(
        &api,
        "POST",
        "/v1/query",
        r#"{"query": "Remind me to water the plants", "session_id": "s1"}"#,
    );
    assert_eq!(response.status, 200, "{}", response.body);
    let body = &response.body;
    assert_eq!(body["status"], "ok");
    assert_eq!(body["parameters"]["task"], "water the plants");
    let routing = &body["metadata"]["composite_routing"];
    assert_eq!(routing["selected_adapter"], "assistant");
    assert_eq!(routing["template_id"], "set_reminder");
    assert_eq!(routing["adapters_searched"], json!(["assistant", "hr"]));
    assert!(routing["total_matches_found"].as_u64().unwrap() >= 2);
    let stages = &routing["multistage_scoring"];
    assert_eq!(stages["enabled"], true);
    for key in [
        "combined_score",
        "embedding_score",
        "string_similarity_score",
    ] {
        assert!(stages[key].is_number(), "{key}: {stages}");
    }
    assert!(stages["rerank_score"].is_null());
    assert_eq!(body["confidence"], stages["combined_score"]);
    // Weights read as written in the configuration, not as widened f32s.
    assert_eq!(stages["scoring_details"]["embedding_weight"], json!(0.8));
    assert_eq!(
        stages["scoring_details"]["string_similarity_weight"],
        json!(0.2)
    );
}

#[test]
fn missing_required_parameter_asks_for_it() {
    let api = api(Config::default());
    let response = call(
        &api,
        "POST",
        "/v1/query",
        r#"{"query": "set a reminder please"}"#,
    );
    assert_eq!(
        response.body["status"], "needs_clarification",
        "{}",
        response.body
    );
    assert_eq!(response.body["missing"][0]["name"], "task");
    assert!(response.body["content"]
        .as_str()
        .unwrap()
        .contains("What to be reminded of"));
}

#[test]
fn kinds_without_an_adapter_answer_501_with_routing() {
    let api = api(Config::default());
    let response = call(
        &api,
        "POST",
        "/v1/query",
        r#"{"query": "How many employees work in Engineering?"}"#,
    );
    assert_eq!(response.status, 501, "{}", response.body);
    assert_eq!(response.body["error"]["code"], "adapter_unavailable");
    let message = response.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("`hr`") && message.contains("`sql`"),
        "{message}"
    );
    assert_eq!(
        response.body["metadata"]["composite_routing"]["template_id"],
        "employees_by_department"
    );
}

#[test]
fn below_threshold_is_no_match_with_three_suggestions() {
    let api = api(config_with(&[(
        "SWITCHYARD__COMPOSITE_RETRIEVAL__CONFIDENCE_THRESHOLD",
        "0.99",
    )]));
    let response = call(
        &api,
        "POST",
        "/v1/query",
        r#"{"query": "What is the capital of Peru?"}"#,
    );
    assert_eq!(response.status, 200);
    assert_eq!(response.body["status"], "no_match");
    let suggestions = response.body["suggestions"].as_array().unwrap();
    assert_eq!(suggestions.len(), 3);
    let scores: Vec<f64> = suggestions
        .iter()
        .map(|s| s["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    let report = call(
        &api,
        "POST",
        "/v1/route",
        r#"{"query": "What is the capital of Peru?"}"#,
    )
    .body;
    assert_eq!(
        report["routing_decision"]["reason"],
        "best_confidence_below_threshold"
    );
    assert!(report["routing_decision"]["would_route_to"].is_null());
    assert_eq!(report["matches_above_threshold"], 0);
}

#[test]
fn route_report_and_stats_have_the_known_shape() {
    let api = api(Config::default());
    let report = call(
        &api,
        "POST",
        "/v1/route",
        r#"{"query": "Top five salaries"}"#,
    )
    .body;
    assert_eq!(report["query"], "Top five salaries");
    let all: &Vec<Value> = report["all_matches"].as_array().unwrap();
    assert_eq!(
        report["total_matches"].as_u64().unwrap() as usize,
        all.len()
    );
    for key in [
        "template_id",
        "source_adapter",
        "embedding_score",
        "combined_score",
        "rerank_score",
        "string_similarity_score",
        "description",
        "nl_examples",
        "above_threshold",
        "scoring_details",
    ] {
        assert!(all[0].get(key).is_some(), "all_matches[0] lacks {key}");
    }
    let decision = &report["routing_decision"];
    assert_eq!(decision["would_route_to"], "hr");
    assert_eq!(decision["selected_template"], "top_earners");
    assert_eq!(
        decision["reason"],
        "highest_ranked_confidence_above_threshold"
    );
    assert!(report["configuration"]["confidence_threshold"].is_number());
    assert_eq!(
        report["configuration"]["adapters_searched"],
        json!(["assistant", "hr"])
    );

    let stats = call(&api, "GET", "/v1/stats", "").body;
    assert_eq!(stats["child_adapters"]["hr"]["total_templates"], 2);
    assert_eq!(stats["child_adapters"]["assistant"]["kind"], "intent");
    assert!(stats["configuration"]["max_templates_per_source"].is_number());
    let health = call(&api, "GET", "/v1/health", "").body;
    assert_eq!(health["status"], "ok");
    assert_eq!(health["templates"], 4);
}

#[test]
fn close_candidates_get_a_clarify_answer_listing_them() {
    // A margin wider than any gap: every routed query is a close call.
    let api = api(config_with(&[
        ("SWITCHYARD__COMPOSITE_RETRIEVAL__CLARIFY__MARGIN", "5"),
        (
            "SWITCHYARD__COMPOSITE_RETRIEVAL__CONFIDENCE_THRESHOLD",
            "0.2",
        ),
    ]));
    let response = call(
        &api,
        "POST",
        "/v1/query",
        r#"{"query": "How many people work in Sales?"}"#,
    );
    assert_eq!(response.status, 200);
    assert_eq!(response.body["status"], "clarify", "{}", response.body);
    let choices = response.body["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 3);
    assert_eq!(choices[0]["template_id"], "employees_by_department");
    let ids: BTreeSet<&str> = choices
        .iter()
        .map(|c| c["template_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 3, "the choices are different templates");
    for choice in choices {
        assert!(choice["description"].is_string() && choice["datasource"].is_string());
        assert!(choice["probability"].as_f64().unwrap() > 0.0);
    }
    let content = response.body["content"].as_str().unwrap();
    assert!(content.starts_with("Which did you mean"), "{content}");

    // The default margin: a clear question executes.
    let api = self::api(Config::default());
    let response = call(
        &api,
        "POST",
        "/v1/query",
        r#"{"query": "Will it rain tomorrow?"}"#,
    );
    assert_eq!(response.status, 200, "{}", response.body);
    assert_ne!(response.body["status"], "clarify", "{}", response.body);
    let routing = api
        .router()
        .route("How many people work in Sales?", &Access::All)
        .unwrap();
    assert_eq!(routing.outcome, Outcome::Execute);
    assert!(routing.clarify_choices().is_empty());
}

/// A reranker that counts its calls and answers after `delay`, or fails.
struct ScriptedReranker {
    calls: AtomicUsize,
    delay: Duration,
    fail: bool,
}

impl ScriptedReranker {
    fn new(delay_ms: u64, fail: bool) -> Arc<ScriptedReranker> {
        Arc::new(ScriptedReranker {
            calls: AtomicUsize::new(0),
            delay: Duration::from_millis(delay_ms),
            fail,
        })
    }
}

impl Reranker for ScriptedReranker {
    fn id(&self) -> &str {
        "scripted"
    }

    fn rerank<'a>(
        &'a self,
        _query: &'a str,
        candidates: &'a [RerankCandidate],
    ) -> BoxFuture<'a, switchyard_core::Result<Vec<f32>>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            if self.fail {
                return Err(Error::Rerank {
                    reranker: "scripted".into(),
                    message: "HTTP 503 from the provider".into(),
                });
            }
            // Prefer the last candidate, so applying the scores is visible.
            Ok((0..candidates.len())
                .map(|i| (i + 1) as f32 / candidates.len() as f32)
                .collect())
        })
    }
}

fn rerank_api(reranker: Arc<ScriptedReranker>, margin: &str) -> TestApi {
    let config = config_with(&[
        (
            "SWITCHYARD__COMPOSITE_RETRIEVAL__RERANKING__ENABLED",
            "true",
        ),
        ("SWITCHYARD__COMPOSITE_RETRIEVAL__RERANKING__MARGIN", margin),
        (
            "SWITCHYARD__COMPOSITE_RETRIEVAL__RERANKING__TIMEOUT_MS",
            "200",
        ),
        ("SWITCHYARD__COMPOSITE_RETRIEVAL__RERANKING__WEIGHT", "3"),
    ]);
    let cache = Arc::new(MemoryRerankCache::default());
    Arc::new(service(config).with_rerank(RerankStage::new(reranker, cache, 300)))
}

fn rerank_status(api: &TestApi, query: &str) -> (Value, Value) {
    let report = call(
        api,
        "POST",
        "/v1/route",
        &json!({ "query": query }).to_string(),
    )
    .body;
    (report["configuration"]["rerank"].clone(), report)
}

#[test]
fn reranker_answers_are_applied_and_cached() {
    let reranker = ScriptedReranker::new(0, false);
    let api = rerank_api(reranker.clone(), "5");
    let (status, report) = rerank_status(&api, "Top five salaries");
    assert_eq!(status["status"], "applied", "{report}");
    assert_eq!(status["cached"], false);
    let matches = report["all_matches"].as_array().unwrap();
    assert!(matches.iter().all(|m| m["rerank_score"].is_number()));
    assert!(
        report["configuration"]["scoring_weights"]["reranking"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    // A weight of 3 on scores that favour the last candidate reorders the ranking.
    let last = rerank_status(&api, "Top five salaries").1["all_matches"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(last[0]["rerank_score"], 1.0, "{last:?}");

    // The repeated query was answered from the cache: one provider call in all.
    let (status, _) = rerank_status(&api, "  top five SALARIES ");
    assert_eq!(status["cached"], true);
    assert_eq!(reranker.calls.load(Ordering::SeqCst), 1);
}

#[test]
fn clear_winners_skip_the_reranker() {
    let reranker = ScriptedReranker::new(0, false);
    let api = rerank_api(reranker.clone(), "0");
    let (status, _) = rerank_status(&api, "Top five salaries");
    assert_eq!(status["status"], "not_needed");
    assert_eq!(reranker.calls.load(Ordering::SeqCst), 0);
}

#[test]
fn failing_or_slow_rerankers_degrade_to_the_other_stages() {
    let plain = api(Config::default());
    let expected = plain
        .router()
        .route("Top five salaries", &Access::All)
        .unwrap();
    for (reranker, error) in [
        (ScriptedReranker::new(0, true), "HTTP 503"),
        (
            ScriptedReranker::new(2_000, false),
            "timed out after 200 ms",
        ),
    ] {
        let api = rerank_api(reranker, "5");
        let began = std::time::Instant::now();
        let (status, report) = rerank_status(&api, "Top five salaries");
        assert!(began.elapsed() < Duration::from_millis(1_500));
        assert_eq!(status["status"], "failed", "{report}");
        assert!(
            status["error"].as_str().unwrap().contains(error),
            "{status}"
        );
        assert_eq!(
            report["routing_decision"]["selected_template"],
            expected.best().unwrap().template_id.as_str()
        );
        assert_eq!(report["configuration"]["scoring_weights"]["reranking"], 0.0);
        let response = call(
            &api,
            "POST",
            "/v1/query",
            r#"{"query": "Will it rain tomorrow?"}"#,
        );
        assert_eq!(response.status, 200, "{}", response.body);
        assert_eq!(
            response.body["metadata"]["composite_routing"]["multistage_scoring"]["rerank"]
                ["status"],
            "failed"
        );
    }
}

#[test]
fn term_expansion_routes_an_abbreviation() {
    let dir = common::catalog(&[
        (
            "motor/datasource.yaml",
            "name: motor\nkind: intent\ndescription: motor insurance\n",
        ),
        (
            "motor/templates.yaml",
            "templates:\n  - id: claim_discount\n    description: How many years of no claim discount a policy has\n    nl_examples: [how many years of no claim discount do I have, show my no claim discount]\n  - id: renew_policy\n    description: Renew a motor policy\n    nl_examples: [renew my car insurance, my policy ends soon, I want to renew]\n",
        ),
        (
            "travel/datasource.yaml",
            "name: travel\nkind: intent\ndescription: travel\n",
        ),
        (
            "travel/templates.yaml",
            "templates:\n  - id: book_flight\n    description: Book a flight\n    nl_examples: [book me a flight to Paris, I need a plane ticket]\n",
        ),
    ]);
    let expanded = config_with(&[(
        "SWITCHYARD__COMPOSITE_RETRIEVAL__KEYWORDS__TERM_EXPANSION__NCD",
        "no claim discount",
    )]);
    let router = router_for(dir.path(), expanded);
    assert_eq!(
        router.embedding_text("check NCD"),
        "check NCD (no claim discount)"
    );
    let routing = router.route("check NCD", &Access::All).unwrap();
    let best = routing.best().unwrap();
    assert_eq!(best.template_id, "claim_discount", "{routing:?}");
    assert_eq!(best.keyword_score, Some(1.0));

    let plain = router_for(dir.path(), Config::default());
    let routing = plain.route("check NCD", &Access::All).unwrap();
    let claim = routing
        .matches
        .iter()
        .find(|m| m.template_id == "claim_discount")
        .unwrap();
    assert_eq!(
        claim.keyword_score,
        Some(0.0),
        "no shared word without expansion"
    );
}

#[test]
fn negative_examples_decline_their_datasource() {
    let question = "How many people work at Microsoft?";
    let with_negatives = common::catalog(&[
        ("assistant/datasource.yaml", common::ASSISTANT_DATASOURCE),
        ("assistant/templates.yaml", common::ASSISTANT_TEMPLATES),
        (
            "hr/datasource.yaml",
            &format!(
                "{}negative_examples:\n  - How many employees does Google have?\n  - Who is the CEO of Apple?\n",
                common::HR_DATASOURCE
            ),
        ),
        ("hr/templates.yaml", common::HR_TEMPLATES),
    ]);

    // Without negative examples, the question about another company goes to hr.
    let plain = small_router(Config::default());
    let routing = plain.route(question, &Access::All).unwrap();
    assert_eq!(routing.best().unwrap().datasource, "hr");
    assert!(routing.matches.iter().all(|m| m.declined_by.is_none()));

    // With them, hr's templates are declined (and survive the artifact's round trip).
    let built = router_for(with_negatives.path(), Config::default());
    let bytes = built.index().to_bytes().unwrap();
    let index = Index::from_bytes(&bytes, "test").unwrap();
    let router = Router::new(index, Config::default(), common::embedder(), "test").unwrap();
    let routing = router.route(question, &Access::All).unwrap();
    let hr: Vec<_> = routing
        .matches
        .iter()
        .filter(|m| m.datasource == "hr")
        .collect();
    assert!(!hr.is_empty());
    for m in &hr {
        let declined = m.declined_by.as_ref().expect("hr is declined");
        assert_eq!(
            declined.negative_example,
            "How many employees does Google have?"
        );
        assert!(declined.similarity >= declined.template_similarity);
    }
    assert!(
        routing
            .selected_match()
            .is_none_or(|m| m.datasource != "hr"),
        "{routing:?}"
    );
    // Declined matches are listed last, never offered as suggestions.
    let first_declined = routing
        .matches
        .iter()
        .position(|m| m.is_declined())
        .unwrap();
    assert!(routing.matches[first_declined..]
        .iter()
        .all(|m| m.is_declined()));

    // The datasource's own questions still route to it.
    let routing = router
        .route("How many employees work in Engineering?", &Access::All)
        .unwrap();
    let selected = routing.selected_match().expect("routed");
    assert_eq!(selected.template_id, "employees_by_department");
    assert!(selected.declined_by.is_none());

    // The route report shows why.
    let sessions = MemorySessionStore::new(Config::default().sessions.clone());
    let invoker = IntentInvoker::new(router.index().catalog.clone());
    let api = Arc::new(Service::new(router, invoker, sessions));
    let report = call(
        &api,
        "POST",
        "/v1/route",
        &format!(r#"{{"query": "{question}"}}"#),
    )
    .body;
    let declined: Vec<&Value> = report["all_matches"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["source_adapter"] == "hr")
        .collect();
    assert!(!declined.is_empty(), "{report}");
    for m in declined {
        assert_eq!(
            m["declined_by"]["negative_example"], "How many employees does Google have?",
            "{report}"
        );
    }
    let answer = call(
        &api,
        "POST",
        "/v1/query",
        &format!(r#"{{"query": "{question}"}}"#),
    )
    .body;
    if answer["status"] == "no_match" {
        let suggestions = answer["suggestions"].as_array().unwrap();
        assert!(
            suggestions.iter().all(|s| s["datasource"] != "hr"),
            "{answer}"
        );
    }
}

#[test]
fn feedback_judges_an_answer_by_its_request_id() {
    let api = api(Config::default());
    let answer = call(
        &api,
        "POST",
        "/v1/query",
        r#"{"query": "remind me to feed the cat"}"#,
    );
    let request_id = answer.body["metadata"]["request_id"].as_str().unwrap();
    let body = json!({"request_id": request_id, "agent_success": true, "search_quality": 0.5});
    let judged = call(&api, "POST", "/v1/feedback", &body.to_string());
    assert_eq!(judged.status, 200, "{}", judged.body);
    // (0.4 × 0.5 + 0.3 × 1) / 0.7, less the processing penalty (at most 0.1; the exact
    // formula is unit-tested in `switchyard_core::feedback`).
    let reward = judged.body["reward"].as_f64().unwrap();
    let full = 0.5 / 0.7;
    assert!(
        reward <= full + 1e-6 && reward > full - 0.1,
        "{}",
        judged.body
    );
    assert_eq!(
        judged.body["template_id"],
        answer.body["metadata"]["template_id"]
    );

    let unknown = call(
        &api,
        "POST",
        "/v1/feedback",
        r#"{"request_id": "nope", "agent_success": false}"#,
    );
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    assert_eq!(unknown.body["error"]["code"], "unknown_request");
    let out_of_range = json!({"request_id": request_id, "user_satisfaction": 2});
    assert_bad_request(
        &call(&api, "POST", "/v1/feedback", &out_of_range.to_string()),
        "user_satisfaction",
    );
    let empty = json!({"request_id": request_id});
    assert_bad_request(
        &call(&api, "POST", "/v1/feedback", &empty.to_string()),
        "body",
    );
    assert_bad_request(
        &call(
            &api,
            "POST",
            "/v1/feedback",
            r#"{"request_id": "x", "stars": 5}"#,
        ),
        "stars",
    );
}
