//! The signals that a question may hold more than one request.

use crate::helpers::{config, cues};
use switchyard_core::orchestration::*;

fn catalog() -> switchyard_catalog::template::Catalog {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo");
    switchyard_catalog::template::Catalog::load(&dir).expect("demo catalog")
}

#[test]
fn signals_fire_on_verbs_cues_entities_and_low_confidence() {
    let config = config();
    let vocabulary = Vocabulary::new(&catalog(), &config);
    let q = "First find the five highest paid people in Sales, then count the Teslas registered in King County";
    let signals = detect(q, 0.5, &vocabulary, &cues(), &config);
    assert!(signals.action_verbs.fired, "{signals:?}");
    assert!(signals.action_verbs.found.contains(&"count".to_owned()));
    assert!(signals.sequential.fired);
    assert!(signals.sequential.found.contains(&"first".to_owned()));
    assert!(signals.long_question.fired);
    assert!(signals.low_confidence.fired);
    assert!(
        signals.entities.found.iter().any(|e| e == "sales"),
        "{:?}",
        signals.entities
    );
    // "King" is one of the catalog's county values; "Teslas" a capitalised name.
    assert!(
        signals.entities.found.iter().any(|e| e == "king"),
        "{:?}",
        signals.entities
    );
    assert!(
        signals.entities.found.iter().any(|e| e == "County"),
        "{:?}",
        signals.entities
    );
    assert!(signals.considered);
    assert_eq!(
        signals.fired,
        [
            &signals.action_verbs,
            &signals.conjunctions,
            &signals.long_question,
            &signals.entities,
            &signals.relationships,
            &signals.sequential,
            &signals.low_confidence,
        ]
        .iter()
        .filter(|s| s.fired)
        .count()
    );

    let plain = detect(
        "Who works in Marketing?",
        0.8,
        &vocabulary,
        &cues(),
        &config,
    );
    assert!(!plain.considered, "{plain:?}");
    assert!(plain.fired < config.min_signals && !plain.conjunctions.fired);
}
