//! The committed `openapi.json` is the document the code generates, and the app serves it.

use std::path::Path;

fn committed() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../openapi.json");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_committed_document_is_the_generated_one() {
    assert!(
        committed() == switchyard_http::openapi::document_text(),
        "openapi.json is stale: regenerate it with `cargo run -p switchyard-cli -- openapi > openapi.json`"
    );
}

#[test]
fn the_document_describes_every_endpoint_and_answer() {
    let document = switchyard_http::openapi::document();
    assert!(document["openapi"].as_str().unwrap().starts_with("3.1"));
    for (path, method) in [
        ("/v1/query", "post"),
        ("/v1/route", "post"),
        ("/v1/stats", "get"),
        ("/v1/health", "get"),
        ("/v1/openapi.json", "get"),
    ] {
        assert!(
            document["paths"][path][method].is_object(),
            "{path} {method}"
        );
    }
    let schemas = &document["components"]["schemas"];
    for name in [
        "QueryRequest",
        "QueryAnswer",
        "RouteReport",
        "Stats",
        "Health",
        "ErrorBody",
    ] {
        assert!(schemas[name].is_object(), "{name}");
    }
    // Unknown request fields are refused, and the document says so.
    assert_eq!(schemas["QueryRequest"]["additionalProperties"], false);
}

/// The document lists the fusion strategies a request may name (schemathesis sent an
/// empty string the document allowed and the API refused), and each one parses.
#[test]
fn the_fusion_names_are_the_strategies() {
    let document = switchyard_http::openapi::document();
    let names = document["components"]["schemas"]["Fusion"]["enum"]
        .as_array()
        .expect("Fusion is an enum");
    assert_eq!(names.len(), 6, "{names:?}");
    for name in names {
        serde_json::from_value::<switchyard_core::orchestration::FusionStrategy>(name.clone())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let fusion =
        document["components"]["schemas"]["QueryRequest"]["properties"]["fusion"].to_string();
    assert!(fusion.contains("#/components/schemas/Fusion"), "{fusion}");
}
