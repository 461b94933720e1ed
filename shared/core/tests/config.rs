//! Loading and validation of the layered configuration, every section gathered.

use switchyard_core::config::*;
use switchyard_index::config::{AdaptationBatching, AutoThreshold, Threshold};
use switchyard_text::config::StringAlgorithm;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn embedded_defaults_load() {
    let config = Config::load(None, env(&[])).unwrap();
    assert!(config.composite_retrieval.string_similarity.enabled);
    assert!(!config.composite_retrieval.reranking.enabled);
    assert_eq!(
        config.composite_retrieval.confidence_threshold,
        Threshold::Auto(AutoThreshold::Auto)
    );
}

#[test]
fn file_then_environment_override_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("switchyard.yaml");
    std::fs::write(
        &file,
        "composite_retrieval:\n  confidence_threshold: 0.7\n  max_templates_per_source: 5\n",
    )
    .unwrap();
    let config = Config::load(
        Some(&file),
        env(&[
            (
                "SWITCHYARD__COMPOSITE_RETRIEVAL__CONFIDENCE_THRESHOLD",
                "0.65",
            ),
            (
                "SWITCHYARD__COMPOSITE_RETRIEVAL__STRING_SIMILARITY__ALGORITHM",
                "ratio",
            ),
            ("UNRELATED", "1"),
        ]),
    )
    .unwrap();
    let c = &config.composite_retrieval;
    assert_eq!(c.confidence_threshold, Threshold::Fixed(0.65));
    assert_eq!(c.max_templates_per_source, 5);
    assert_eq!(c.string_similarity.algorithm, StringAlgorithm::Ratio);
}

#[test]
fn unknown_field_in_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.yaml");
    std::fs::write(&file, "composite_retrieval:\n  confidence_treshold: 0.7\n").unwrap();
    let message = Config::load(Some(&file), env(&[])).unwrap_err().to_string();
    assert!(message.contains("bad.yaml"), "{message}");
    assert!(message.contains("confidence_treshold"), "{message}");
}

#[test]
fn bad_environment_value_names_field_and_variable() {
    let message = Config::load(
        None,
        env(&[(
            "SWITCHYARD__COMPOSITE_RETRIEVAL__STRING_SIMILARITY__ALGORITHM",
            "soundex",
        )]),
    )
    .unwrap_err()
    .to_string();
    assert!(message.contains("environment"), "{message}");
    assert!(
        message.contains("composite_retrieval.string_similarity.algorithm"),
        "{message}"
    );
}

#[test]
fn out_of_range_threshold_is_refused() {
    let message = Config::load(
        None,
        env(&[(
            "SWITCHYARD__COMPOSITE_RETRIEVAL__CONFIDENCE_THRESHOLD",
            "1.5",
        )]),
    )
    .unwrap_err()
    .to_string();
    assert!(message.contains("confidence_threshold"), "{message}");
    let message = Config::load(
        None,
        env(&[(
            "SWITCHYARD__COMPOSITE_RETRIEVAL__CONFIDENCE_THRESHOLD",
            "sometimes",
        )]),
    )
    .unwrap_err()
    .to_string();
    assert!(message.contains("confidence_threshold"), "{message}");
}

#[test]
fn a_reranker_needs_an_endpoint_and_a_model() {
    let message = Config::load(
        None,
        env(&[
            (
                "SWITCHYARD__COMPOSITE_RETRIEVAL__RERANKING__ENABLED",
                "true",
            ),
            (
                "SWITCHYARD__COMPOSITE_RETRIEVAL__RERANKING__PROVIDER",
                "cohere",
            ),
        ]),
    )
    .unwrap_err()
    .to_string();
    assert!(
        message.contains("composite_retrieval.reranking") && message.contains("endpoint"),
        "{message}"
    );
    let message = Config::load(
        None,
        env(&[(
            "SWITCHYARD__COMPOSITE_RETRIEVAL__RERANKING__PROVIDER",
            "bing",
        )]),
    )
    .unwrap_err()
    .to_string();
    assert!(message.contains("provider"), "{message}");
}

#[test]
fn term_expansion_and_head_settings_load_and_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("switchyard.yaml");
    std::fs::write(
        &file,
        "composite_retrieval:\n  keywords:\n    term_expansion: {ncd: no claim discount}\n",
    )
    .unwrap();
    let config = Config::load(Some(&file), env(&[])).unwrap();
    assert_eq!(
        config.composite_retrieval.keywords.term_expansion["ncd"],
        "no claim discount"
    );
    let message = Config::load(
        None,
        env(&[("SWITCHYARD__INDEX__LEARNED_HEAD__EPOCHS", "0")]),
    )
    .unwrap_err()
    .to_string();
    assert!(message.contains("index.learned_head"), "{message}");
    let message = Config::load(
        None,
        env(&[("SWITCHYARD__INDEX__LEARNED_HEAD__RIVALS", "0")]),
    )
    .unwrap_err()
    .to_string();
    assert!(message.contains("rivals"), "{message}");
}

#[test]
fn orchestration_values_are_checked_and_named() {
    for (key, value, field) in [
        (
            "SWITCHYARD__ORCHESTRATION__MIN_SIGNALS",
            "8",
            "orchestration.min_signals",
        ),
        (
            "SWITCHYARD__ORCHESTRATION__MAX_PART_DROP",
            "1.5",
            "orchestration.max_part_drop",
        ),
        (
            "SWITCHYARD__ORCHESTRATION__MAX_PARALLEL_TASKS",
            "0",
            "orchestration",
        ),
        ("SWITCHYARD__ORCHESTRATION__FUSION", "loudest", "fusion"),
    ] {
        assert_refused_naming(key, value, field);
    }
    let config = Config::load(
        None,
        env(&[("SWITCHYARD__ORCHESTRATION__FUSION", "temporal")]),
    )
    .unwrap();
    assert_eq!(config.orchestration.fusion, FusionStrategy::Temporal);
}

#[test]
fn adaptation_values_are_checked_and_named() {
    for (key, value, field) in [
        (
            "SWITCHYARD__EMBEDDING__ADAPTATION__LAYERS",
            "7",
            "embedding.adaptation.layers",
        ),
        (
            "SWITCHYARD__EMBEDDING__ADAPTATION__BATCHING",
            "sorted",
            "batching",
        ),
        (
            "SWITCHYARD__EMBEDDING__ADAPTATION__LEARNING_RATE",
            "2",
            "embedding.adaptation.learning_rate",
        ),
    ] {
        assert_refused_naming(key, value, field);
    }
    let config = Config::load(
        None,
        env(&[
            ("SWITCHYARD__EMBEDDING__ADAPTATION__LAYERS", "3"),
            ("SWITCHYARD__EMBEDDING__ADAPTATION__BATCHING", "nearest"),
        ]),
    )
    .unwrap();
    assert_eq!(config.embedding.adaptation.layers, Some(3));
    assert_eq!(
        config.embedding.adaptation.batching,
        AdaptationBatching::Nearest
    );
    // Training must reach some layer of the cut model.
    let message = Config::load(
        None,
        env(&[
            ("SWITCHYARD__EMBEDDING__ADAPTATION__LAYERS", "3"),
            (
                "SWITCHYARD__EMBEDDING__ADAPTATION__FIRST_TRAINED_LAYER",
                "3",
            ),
        ]),
    )
    .unwrap_err()
    .to_string();
    assert!(message.contains("first_trained_layer"), "{message}");
}

/// `key=value` alone is refused, and the message names `field`.
fn assert_refused_naming(key: &str, value: &str, field: &str) {
    let message = Config::load(None, env(&[(key, value)]))
        .unwrap_err()
        .to_string();
    assert!(message.contains(field), "{key}={value}: {message}");
}

/// A search timeout of 0 would leave every partition out of every question.
#[test]
fn a_zero_search_timeout_is_refused() {
    assert_refused_naming(
        "SWITCHYARD__COMPOSITE_RETRIEVAL__SEARCH_TIMEOUT_MS",
        "0",
        "composite_retrieval.search_timeout_ms",
    );
}

/// The source named is the one that gave the refused value, whatever came after it.
#[test]
fn the_layer_that_gave_the_bad_value_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("deploy.yaml");
    std::fs::write(&file, "sessions:\n  context:\n    stay: 1.5\n").unwrap();
    let message = Config::load(
        Some(&file),
        env(&[("SWITCHYARD__SESSIONS__MAX_TURNS", "4")]),
    )
    .unwrap_err()
    .to_string();
    assert!(
        message.contains("deploy.yaml") && message.contains("sessions.context.stay"),
        "{message}"
    );
    assert!(!message.contains("SWITCHYARD__"), "{message}");

    std::fs::write(&file, "sessions:\n  max_turns: 4\n").unwrap();
    let message = Config::load(
        Some(&file),
        env(&[
            ("SWITCHYARD__SESSIONS__TTL_SECONDS", "0"),
            ("SWITCHYARD__SESSIONS__STORE_TEXT", "true"),
        ]),
    )
    .unwrap_err()
    .to_string();
    assert!(
        message.contains("environment variable SWITCHYARD__SESSIONS__TTL_SECONDS")
            && message.contains("sessions.ttl_seconds"),
        "{message}"
    );
    assert!(!message.contains("deploy.yaml"), "{message}");

    // A value that does not parse names its variable too.
    let message = Config::load(
        None,
        env(&[("SWITCHYARD__FEEDBACK__TTL_SECONDS", "a week")]),
    )
    .unwrap_err()
    .to_string();
    assert!(
        message.contains("SWITCHYARD__FEEDBACK__TTL_SECONDS")
            && message.contains("feedback.ttl_seconds"),
        "{message}"
    );
}

/// Every refused field is named, the first with its reason.
#[test]
fn every_refused_field_is_named() {
    let message = Config::load(
        None,
        env(&[
            ("SWITCHYARD__SERVER__MAX_IN_FLIGHT", "0"),
            ("SWITCHYARD__DOCUMENTS__MMR_LAMBDA", "2"),
        ]),
    )
    .unwrap_err()
    .to_string();
    assert!(
        message.contains("documents.mmr_lambda: must be between 0 and 1, not 2")
            && message.contains("and 1 more: server.max_in_flight"),
        "{message}"
    );
}

/// Lists are read from a variable as YAML.
#[test]
fn a_variable_holds_a_list() {
    let config = Config::load(
        None,
        env(&[(
            "SWITCHYARD__ORCHESTRATION__PARALLEL_CUES",
            "[and, \"as well as\"]",
        )]),
    )
    .unwrap();
    assert_eq!(config.orchestration.parallel_cues, ["and", "as well as"]);
}
