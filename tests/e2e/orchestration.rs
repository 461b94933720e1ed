//! Questions that ask for several things, on the demo catalog through `switchyard serve`:
//! split, planned in phases, run, checkpointed, fused; and single questions left whole.
//! Answers come from the demo's sample data (`templates/demo/hr/data/hr.sql`, the EV
//! registrations in `templates/demo/ev/data`).

use serde_json::{json, Value};
use switchyard_e2e::{serve, Server};

fn demo() -> (tempfile::TempDir, Server) {
    let cache = tempfile::tempdir().unwrap();
    let server = serve(cache.path(), &["--templates", "templates/demo"]);
    (cache, server)
}

fn templates(answer: &Value) -> Vec<String> {
    answer["metadata"]["orchestration"]["sub_questions"]
        .as_array()
        .unwrap_or_else(|| panic!("no sub_questions in {answer}"))
        .iter()
        .map(|s| s["template_id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn two_requests_joined_by_and_run_together_and_are_fused() {
    let (_cache, server) = demo();
    let (status, answer) = server.post(
        "/v1/query",
        json!({"query": "How many employees work in Sales and what is 15% of 200?"}),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["status"], "ok", "{answer}");
    assert_eq!(answer["metadata"]["source"], "orchestration");
    assert_eq!(
        templates(&answer),
        ["employees_count_by_department", "calculator_percentage"]
    );
    let orchestration = &answer["metadata"]["orchestration"];
    assert_eq!(orchestration["phases"], json!([["t1", "t2"]]));
    assert_eq!(orchestration["fusion"]["strategy"], "hierarchical");
    assert_eq!(orchestration["fusion"]["coverage"], 1.0);
    assert!(orchestration["signals"]["conjunctions"]["fired"]
        .as_bool()
        .unwrap());
    let content = answer["content"].as_str().unwrap();
    assert!(content.contains("12 employees work in Sales."), "{content}");
    assert!(content.contains("30"), "{content}");
    // Each sub-question carries its own routing.
    let first = &orchestration["sub_questions"][0];
    assert_eq!(first["status"], "ok");
    assert_eq!(
        first["composite_routing"]["selected_adapter"], "hr",
        "{first}"
    );
    assert_eq!(answer["data"]["sections"].as_array().unwrap().len(), 2);
}

#[test]
fn then_and_their_make_a_later_phase_that_gets_the_earlier_answer() {
    let (_cache, server) = demo();
    let (status, answer) = server.post("/v1/query",
        json!({"query": "How many employees work in Engineering and what is their average salary?"}),
    );
    assert_eq!(status, 200, "{answer}");
    let orchestration = &answer["metadata"]["orchestration"];
    assert_eq!(orchestration["phases"], json!([["t1"], ["t2"]]), "{answer}");
    let second = &orchestration["sub_questions"][1];
    assert_eq!(second["depends_on"], json!(["t1"]));
    // "their" is Engineering: the department came from the first answer.
    assert_eq!(
        second["parameters"]["department"], "Engineering",
        "{second}"
    );
    assert_eq!(second["status"], "ok");

    let (status, answer) = server.post("/v1/query",
        json!({"query": "Find the five highest paid people in Sales, then count the Teslas registered in King County"}),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        templates(&answer),
        [
            "employees_top_paid_in_department",
            "vehicles_count_by_make_in_county"
        ]
    );
    let orchestration = &answer["metadata"]["orchestration"];
    assert_eq!(orchestration["phases"], json!([["t1"], ["t2"]]));
    let checkpoints = orchestration["checkpoints"].as_array().unwrap();
    assert_eq!(
        checkpoints.len(),
        2,
        "one checkpoint per phase: {orchestration}"
    );
}

#[test]
fn route_shows_the_plan_and_single_questions_stay_whole() {
    let (_cache, server) = demo();
    let (status, report) = server.post(
        "/v1/route",
        json!({"query": "How many employees work in Sales and what is 15% of 200?"}),
    );
    assert_eq!(status, 200);
    let plan = &report["orchestration"];
    assert_eq!(plan["phases"], json!([["t1", "t2"]]), "{report}");
    // Nothing ran.
    assert!(plan["sub_questions"][0].get("status").is_none());
    assert!(plan.get("workflow_id").is_none());

    for single in [
        "How many employees work in Engineering?",
        "List all employees in the Sales department and the HR department",
        "What is 15% of 200?",
    ] {
        let (_, report) = server.post("/v1/route", json!({"query": single}));
        assert!(report.get("orchestration").is_none(), "{single}: {report}");
        let (status, answer) = server.post("/v1/query", json!({"query": single}));
        assert_eq!(status, 200);
        assert_ne!(answer["metadata"]["source"], "orchestration", "{single}");
        assert!(answer["metadata"].get("orchestration").is_none());
    }
}

#[test]
fn fusion_can_be_chosen_and_a_finished_workflow_is_not_run_again() {
    let (_cache, server) = demo();
    let question = "How many employees work in Sales and what is 15% of 200?";
    let (status, answer) = server.post(
        "/v1/query",
        json!({"query": question, "fusion": "simple", "workflow_id": "wf-e2e-1"}),
    );
    assert_eq!(status, 200, "{answer}");
    let orchestration = &answer["metadata"]["orchestration"];
    assert_eq!(orchestration["workflow_id"], "wf-e2e-1");
    assert_eq!(orchestration["fusion"]["strategy"], "simple");
    assert_eq!(orchestration["fusion"]["automatic"], false);
    assert!(answer["content"]
        .as_str()
        .unwrap()
        .starts_with("12 employees work in Sales."));

    // Again with the same workflow id: resumed after its last phase, nothing re-run.
    let (status, again) = server.post(
        "/v1/query",
        json!({"query": question, "workflow_id": "wf-e2e-1"}),
    );
    assert_eq!(status, 200, "{again}");
    let orchestration = &again["metadata"]["orchestration"];
    assert_eq!(orchestration["resumed_from_phase"], 1);
    assert_eq!(orchestration["sub_questions"][0]["attempts"], 1);
    assert_eq!(orchestration["checkpoints"], json!([]));

    // Another question under that id is refused; so is a malformed id.
    let (status, refused) = server.post(
        "/v1/query",
        json!({"query": "What is 2 plus 2 and who works in HR?", "workflow_id": "wf-e2e-1"}),
    );
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["field"], "workflow_id");
    let (status, refused) = server.post(
        "/v1/query",
        json!({"query": question, "workflow_id": "no spaces/please"}),
    );
    assert_eq!(status, 400);
    assert_eq!(refused["error"]["field"], "workflow_id");
}

/// An OpenAI-compatible chat server on 127.0.0.1 that splits every question into `parts`
/// (or fails with 500 when `parts` is empty), counting its calls.
fn fake_chat_model(
    parts: &'static [&'static str],
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move || {
            let counted = counted.clone();
            async move {
                counted.fetch_add(1, Ordering::SeqCst);
                if parts.is_empty() {
                    return (axum::http::StatusCode::INTERNAL_SERVER_ERROR, axum::Json(json!({"error": "down"})));
                }
                let arguments = json!({ "sub_questions": parts }).to_string();
                let reply = json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                    "role": "assistant", "content": null,
                    "tool_calls": [{"id": "c1", "type": "function",
                        "function": {"name": "split_question", "arguments": arguments}}]}}]});
                (axum::http::StatusCode::OK, axum::Json(reply))
            }
        }),
    );
    let address = switchyard_e2e::serve_app(app);
    (format!("http://{address}/v1"), calls)
}

fn serve_with_chat_decomposer(cache: &std::path::Path, endpoint: &str) -> Server {
    let config = cache.join("chat.yaml");
    std::fs::write(
        &config,
        format!("llm:\n  endpoint: {endpoint}\n  model: test-model\n  timeout_ms: 2000\norchestration:\n  chat_decomposer: true\n"),
    )
    .unwrap();
    let config = config.to_str().unwrap().to_owned();
    serve(
        cache,
        &["--templates", "templates/demo", "--config", &config],
    )
}

/// No cue to cut at, but long and unsure: the rules cannot split it; the chat model can.
const UNCUT: &str = "Give me the headcount of the Sales department together with fifteen percent of two hundred for my report today";

#[test]
fn the_chat_decomposer_splits_what_the_rules_cannot_and_is_checked_like_them() {
    let cache = tempfile::tempdir().unwrap();
    let (endpoint, calls) = fake_chat_model(&[
        "How many employees work in the Sales department?",
        "What is fifteen percent of 200?",
    ]);
    let server = serve_with_chat_decomposer(cache.path(), &endpoint);
    let (status, answer) = server.post("/v1/query", json!({"query": UNCUT}));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["metadata"]["orchestration"]["split_by"], "chat:test-model",
        "{answer}"
    );
    assert_eq!(
        templates(&answer),
        ["employees_count_by_department", "calculator_percentage"]
    );
    assert!(answer["content"]
        .as_str()
        .unwrap()
        .contains("12 employees work in Sales."));
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    // Questions the rules split, or that are single, never reach the model.
    let (_, split) = server.post(
        "/v1/query",
        json!({"query": "How many employees work in Sales and what is 15% of 200?"}),
    );
    assert_eq!(
        split["metadata"]["orchestration"]["split_by"], "rules",
        "{split}"
    );
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    let (_, single) = server.post("/v1/query", json!({"query": "Who works in Marketing?"}));
    assert_eq!(
        calls.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "{single}"
    );
}

#[test]
fn a_chat_split_that_fails_the_checks_or_a_failing_model_leaves_the_question_whole() {
    let cases: [(&str, &'static [&'static str]); 3] = [
        // Parts about something the question never mentions are not its parts.
        (
            "unrelated parts",
            &["Who works in HR?", "What is 2 plus 2?"],
        ),
        // Two parts asking for the same template are one request.
        (
            "one template twice",
            &[
                "How many employees work in Sales?",
                "What is the headcount of Sales?",
            ],
        ),
        // The model fails (HTTP 500).
        ("a failing model", &[]),
    ];
    for (case, parts) in cases {
        let cache = tempfile::tempdir().unwrap();
        let (endpoint, calls) = fake_chat_model(parts);
        let server = serve_with_chat_decomposer(cache.path(), &endpoint);
        let (status, answer) = server.post("/v1/query", json!({"query": UNCUT}));
        assert_eq!(status, 200, "{case}: {answer}");
        assert!(
            answer["metadata"].get("orchestration").is_none(),
            "{case}: {answer}"
        );
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1, "{case}");
    }
}
