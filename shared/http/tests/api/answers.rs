//! What `/v1/query` answers (parameters and metadata, a missing parameter asked for, no
//! adapter, no match, clarify), and the route report and stats.

use std::collections::BTreeSet;

use serde_json::{json, Value};
use switchyard_catalog::auth::Access;
use switchyard_core::config::Config;
use switchyard_routing::router::Outcome;

use crate::setup::{api, call, config_with};

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
