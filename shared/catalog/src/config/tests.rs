//! The layering machinery on a small tree holding part of one section; the full
//! configuration's tests are `switchyard_core::config`'s.

use serde::Deserialize;
use validator::{Validate, ValidationError};

use super::rules::refuse;
use super::{embedded, load};

/// Part of the `server` section (the rest of the embedded defaults is ignored).
#[derive(Debug, PartialEq, Deserialize, Validate)]
#[validate(schema(function = "queue_within_reason"))]
struct Server {
    #[validate(range(min = 1, message = "must be at least 1"))]
    max_in_flight: usize,
    max_queued: usize,
}

fn queue_within_reason(s: &Server) -> Result<(), ValidationError> {
    if s.max_queued > 1000 * s.max_in_flight {
        return Err(refuse(
            "max_queued",
            "must be at most 1000 per request in flight",
        ));
    }
    Ok(())
}

#[derive(Debug, Deserialize, Validate)]
struct Tree {
    #[validate(nested)]
    server: Server,
}

#[test]
fn a_section_of_the_embedded_defaults_is_its_default() {
    let server: Server = embedded("server");
    assert!(server.max_in_flight >= 1);
    let tree: Tree = load(None, std::iter::empty::<(String, String)>()).unwrap();
    assert_eq!(tree.server, server);
}

#[test]
fn a_variable_overrides_the_defaults_and_a_bad_one_is_named() {
    let tree: Tree = load(None, [("SWITCHYARD__SERVER__MAX_IN_FLIGHT", "7")]).unwrap();
    assert_eq!(tree.server.max_in_flight, 7);
    let message = load::<Tree, _, _, _>(None, [("SWITCHYARD__SERVER__MAX_IN_FLIGHT", "0")])
        .unwrap_err()
        .to_string();
    assert!(message.contains("server.max_in_flight"), "{message}");
    assert!(
        message.contains("environment variable SWITCHYARD__SERVER__MAX_IN_FLIGHT"),
        "{message}"
    );
}

#[test]
fn a_check_across_fields_names_its_field_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("switchyard.yaml");
    std::fs::write(&file, "server:\n  max_in_flight: 1\n  max_queued: 5000\n").unwrap();
    let message = load::<Tree, _, _, _>(Some(&file), std::iter::empty::<(String, String)>())
        .unwrap_err()
        .to_string();
    assert!(message.contains("server.max_queued"), "{message}");
    assert!(message.contains("switchyard.yaml"), "{message}");
}
