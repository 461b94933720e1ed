//! The router on its own: the datasource and template routed to, weights over the enabled
//! stages, ties, term expansion and negative examples.

use std::sync::Arc;

use serde_json::Value;
use switchyard_adapters::respond::IntentInvoker;
use switchyard_catalog::auth::Access;
use switchyard_core::config::Config;
use switchyard_core::service::Service;
use switchyard_index::index::Index;
use switchyard_index::scoring::Weights;
use switchyard_routing::router::Router;
use switchyard_routing::session::MemorySessionStore;

use crate::common;
use crate::setup::{call, config_with, router_for, small_router};

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
    assert!(selected.scores.string_similarity_score.is_some());
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
        assert_eq!(m.scores.combined_score, m.scores.embedding_score);
        assert_eq!(m.scores.string_similarity_score, None);
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
        routing.matches[0].scores.combined_score,
        routing.matches[1].scores.combined_score
    );
    assert_eq!(routing.matches[0].datasource, "alpha");
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
    assert_eq!(best.scores.keyword_score, Some(1.0));

    let plain = router_for(dir.path(), Config::default());
    let routing = plain.route("check NCD", &Access::All).unwrap();
    let claim = routing
        .matches
        .iter()
        .find(|m| m.template_id == "claim_discount")
        .unwrap();
    assert_eq!(
        claim.scores.keyword_score,
        Some(0.0),
        "no shared word without expansion"
    );
}

#[test]
fn a_misspelt_question_routes_as_written_right_and_reads_its_values_as_written() {
    let router = small_router(Config::default());
    let routing = router
        .route("Set a remnder for the dentist", &Access::All)
        .unwrap();
    assert_eq!(routing.query, "Set a remnder for the dentist");
    assert_eq!(
        routing.corrected.as_deref(),
        Some("Set a reminder for the dentist")
    );
    assert_eq!(
        routing.selected_match().unwrap().template_id,
        "set_reminder"
    );
    // A name after the first word and a word the model knows stay as written.
    let routing = router
        .route("whats the wheather in Pariss", &Access::All)
        .unwrap();
    let corrected = routing.corrected.as_deref().unwrap();
    assert!(corrected.contains("weather in Pariss"), "{corrected}");
    assert_eq!(routing.selected_match().unwrap().template_id, "weather");
    let clean = router
        .route("Set a reminder for the dentist", &Access::All)
        .unwrap();
    assert_eq!(clean.corrected, None);
    // Off, the stages read the question as written.
    let off = small_router(config_with(&[(
        "SWITCHYARD__COMPOSITE_RETRIEVAL__SPELLING__ENABLED",
        "false",
    )]));
    let routing = off
        .route("Set a remnder for the dentist", &Access::All)
        .unwrap();
    assert_eq!(routing.corrected, None);
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
    let router = Router::new(
        index,
        Config::default().router(),
        common::embedder(),
        "test",
    )
    .unwrap();
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
    let api = Arc::new(Service::new(
        Config::default(),
        router,
        Arc::new(invoker),
        Arc::new(sessions),
    ));
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
