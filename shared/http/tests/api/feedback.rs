//! Feedback: an answer judged by its request id, by the caller that got it.

use serde_json::{json, Value};
use sha2::Digest;
use switchyard_core::config::Config;

use crate::setup::{api, assert_bad_request, call, call_as, config_with, with_key, ApiResponse};

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

/// Each constraint the OpenAPI document states on `FeedbackRequest` is the one the API
/// enforces (schemathesis found most bodies the document allowed refused): a value at a
/// bound passes validation, one past it is refused 400 naming the field.
#[test]
fn the_documented_feedback_constraints_are_enforced() {
    let api = api(Config::default());
    let answer = call(
        &api,
        "POST",
        "/v1/query",
        r#"{"query": "remind me to feed the cat"}"#,
    );
    let request_id = answer.body["metadata"]["request_id"].as_str().unwrap();
    let document = switchyard_http::openapi::document();
    let schema = &document["components"]["schemas"]["FeedbackRequest"];
    let feedback = |body: Value| call(&api, "POST", "/v1/feedback", &body.to_string());
    let judged = |body: Value| {
        let response = feedback(body.clone());
        assert_eq!(response.status, 200, "{body}: {}", response.body);
    };

    // The parts' ranges: the ends judged, just past them refused.
    let mut ranges = 0;
    for (field, property) in schema["properties"].as_object().unwrap() {
        let (Some(min), Some(max)) = (property["minimum"].as_f64(), property["maximum"].as_f64())
        else {
            continue;
        };
        ranges += 1;
        for value in [min, max] {
            judged(json!({"request_id": request_id, field.as_str(): value}));
        }
        for value in [min - 0.001, max + 0.001] {
            let body = json!({"request_id": request_id, field.as_str(): value});
            assert_bad_request(&feedback(body), field);
        }
    }
    assert_eq!(ranges, 2, "{schema}");

    // `request_id`'s length: at the bound it passes validation (and is not an answer's),
    // past it, or empty, it is refused.
    let id = &schema["properties"]["request_id"];
    let longest = id["maxLength"].as_u64().unwrap() as usize;
    let shortest = id["minLength"].as_u64().unwrap() as usize;
    assert_eq!(shortest, 1, "{id}");
    let unknown = feedback(json!({"request_id": "r".repeat(longest), "agent_success": true}));
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    for length in [0, longest + 1] {
        let body = json!({"request_id": "r".repeat(length), "agent_success": true});
        assert_bad_request(&feedback(body), "request_id");
    }

    // `request_id` is required; with it, at least one part (`minProperties`), and no
    // other property (`additionalProperties`).
    assert_eq!(schema["required"], json!(["request_id"]));
    assert_bad_request(&feedback(json!({"agent_success": true})), "request_id");
    assert_eq!(schema["minProperties"], 2, "{schema}");
    assert_bad_request(&feedback(json!({"request_id": request_id})), "body");
    judged(json!({"request_id": request_id, "agent_success": false}));
    assert_eq!(schema["additionalProperties"], false, "{schema}");
    let extra = json!({"request_id": request_id, "agent_success": true, "stars": 5});
    assert_bad_request(&feedback(extra), "stars");

    // A part given as null counts as absent, so the document does not offer null: a body
    // of the id and a null part has two properties and is still refused.
    for part in ["user_satisfaction", "agent_success", "search_quality"] {
        let types = schema["properties"][part]["type"].to_string();
        assert!(!types.contains("null"), "{part}: {types}");
        assert_bad_request(
            &feedback(json!({"request_id": request_id, part: null})),
            "body",
        );
    }
}

/// Feedback is taken from the caller that got the answer alone (its owner, as a session's):
/// another caller naming the answer's request id is answered `404 unknown_request`,
/// exactly as for an id never given, and its judgement is not kept.
#[test]
fn only_the_caller_that_got_an_answer_may_judge_it() {
    let hash = |key: &[u8]| hex::encode(sha2::Sha256::digest(key));
    let api = api(config_with(&[
        ("SWITCHYARD__AUTH__REQUIRED", "true"),
        ("SWITCHYARD__AUTH__PRINCIPALS", "{ann: ['*'], bob: ['*']}"),
        (
            "SWITCHYARD__AUTH__API_KEYS",
            &format!("{{{}: ann, {}: bob}}", hash(b"k-ann"), hash(b"k-bob")),
        ),
    ]));
    let answer = call_as(
        &api,
        "POST",
        "/v1/query",
        r#"{"query": "remind me to feed the cat"}"#,
        with_key("k-ann"),
    );
    assert_eq!(answer.status, 200, "{}", answer.body);
    let request_id = answer.body["metadata"]["request_id"].as_str().unwrap();
    let judge = |id: &str, success: bool, key: &str| {
        let body = json!({"request_id": id, "agent_success": success});
        call_as(
            &api,
            "POST",
            "/v1/feedback",
            &body.to_string(),
            with_key(key),
        )
    };

    let by_bob = judge(request_id, false, "k-bob");
    assert_eq!(by_bob.status, 404, "{}", by_bob.body);
    let never_given = judge("never-given", false, "k-bob");
    assert_eq!(never_given.status, 404, "{}", never_given.body);
    let error = |response: &ApiResponse, id: &str| {
        let message = response.body["error"]["message"].as_str().unwrap();
        (
            response.body["error"]["code"].clone(),
            message.replace(id, "<id>"),
        )
    };
    assert_eq!(
        error(&by_bob, request_id),
        error(&never_given, "never-given"),
        "another caller's answer is answered as an unknown one"
    );
    assert_eq!(by_bob.body["error"]["code"], "unknown_request");

    let by_ann = judge(request_id, true, "k-ann");
    assert_eq!(by_ann.status, 200, "{}", by_ann.body);
    assert_eq!(by_ann.body["request_id"], request_id);
    // Only ann's judgement counts: success, less at most 0.1 for the time taken.
    let reward = by_ann.body["reward"].as_f64().unwrap();
    assert!(reward > 0.9, "{}", by_ann.body);
}
