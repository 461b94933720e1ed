//! Routing decisions without the model: a small catalog indexed with the deterministic
//! `HashingEmbedder`, routed through the public `Index::build` / `Router::new` /
//! `Router::route` and judged on `Routing`'s public fields. Fast: no model to load.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use switchyard_catalog::auth::Access;
use switchyard_catalog::template::Catalog;
use switchyard_core::config::Config;
use switchyard_index::index::Index;
use switchyard_routing::router::{Outcome, Router, Routing};
use switchyard_vectors::embed::{Embedder, HashingEmbedder};

fn config_with(pairs: &[(&str, &str)]) -> Config {
    Config::load(
        None,
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn router(config: Config) -> Router {
    let dir = common::small_catalog();
    let catalog = Catalog::load(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    let embedder: Arc<dyn Embedder> = Arc::new(HashingEmbedder::default());
    let index = Index::build(catalog, embedder.as_ref(), &config.router(), &|_, _| {})
        .unwrap_or_else(|e| panic!("{e}"));
    Router::new(index, config.router(), embedder, "test").unwrap_or_else(|e| panic!("{e}"))
}

fn top(routing: &Routing) -> (&str, &str) {
    let first = routing.matches.first().expect("at least one match");
    (first.datasource.as_str(), first.template_id.as_str())
}

#[test]
fn the_obviously_matching_template_wins() {
    let router = router(Config::default());
    for (query, datasource, template) in [
        (
            "How many employees work in Engineering?",
            "hr",
            "employees_by_department",
        ),
        ("Who are the best paid people?", "hr", "top_earners"),
        ("Remind me to call mom at five", "assistant", "set_reminder"),
        ("What's the weather like in Paris?", "assistant", "weather"),
    ] {
        let routing = router.route(query, &Access::All).unwrap();
        assert_eq!(top(&routing), (datasource, template), "{query}");
        assert_eq!(routing.outcome, Outcome::Execute, "{query}: {routing:?}");
        assert_eq!(routing.selected, Some(0), "{query}");
        assert_eq!(routing.adapters_searched.len(), 2, "{query}");
    }
}

#[test]
fn an_access_restriction_excludes_the_other_datasource() {
    let router = router(Config::default());
    let query = "How many employees work in Engineering?";
    let only_assistant = Access::Only(BTreeSet::from(["assistant".to_owned()]));
    let routing = router.route(query, &only_assistant).unwrap();
    assert_eq!(routing.adapters_searched, vec!["assistant".to_owned()]);
    assert!(
        routing.matches.iter().all(|m| m.datasource == "assistant"),
        "{:?}",
        routing.matches
    );
    // Whatever it picks, it cannot be the hr template the query names.
    assert!(routing
        .matches
        .iter()
        .all(|m| m.template_id != "employees_by_department"));
    // With hr allowed, the same query goes to hr.
    let only_hr = Access::Only(BTreeSet::from(["hr".to_owned()]));
    let routing = router.route(query, &only_hr).unwrap();
    assert_eq!(top(&routing), ("hr", "employees_by_department"));
}

#[test]
fn an_empty_query_is_an_error_naming_query() {
    let router = router(Config::default());
    for query in ["", "   \n\t"] {
        let message = router
            .route(query, &Access::All)
            .expect_err("an empty query is refused")
            .to_string();
        assert!(message.contains("query"), "{message}");
    }
}

#[test]
fn a_threshold_above_every_score_gives_no_match() {
    let router = router(config_with(&[(
        "SWITCHYARD__COMPOSITE_RETRIEVAL__CONFIDENCE_THRESHOLD",
        "1.0",
    )]));
    let routing = router
        .route("Set a reminder to water the plants", &Access::All)
        .unwrap();
    assert!(!routing.matches.is_empty(), "the search still ran");
    assert!(
        routing
            .matches
            .iter()
            .all(|m| m.scores.combined_score < 1.0),
        "{:?}",
        routing.matches
    );
    assert_eq!(routing.threshold, 1.0);
    assert_eq!(routing.outcome, Outcome::NoMatch);
    assert_eq!(routing.selected, None);
}

#[test]
fn the_index_records_the_test_embedder_and_refuses_another() {
    let config = Config::default().router();
    let dir = common::small_catalog();
    let catalog = Catalog::load(dir.path()).unwrap();
    let index = Index::build(catalog, &HashingEmbedder::default(), &config, &|_, _| {}).unwrap();
    assert_eq!(index.manifest.model_id, "hashing-384");
    assert_eq!(index.manifest.dimension, 384);
    let other: Arc<dyn Embedder> = Arc::new(HashingEmbedder::new(128));
    let message = Router::new(index, config, other, "memory")
        .err()
        .expect("a different embedder is refused")
        .to_string();
    assert!(
        message.contains("hashing-384") && message.contains("hashing-128"),
        "{message}"
    );
}
