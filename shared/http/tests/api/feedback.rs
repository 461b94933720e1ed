//! Feedback: an answer judged by its request id.

use serde_json::json;
use switchyard_core::config::Config;

use crate::setup::{api, assert_bad_request, call};

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
