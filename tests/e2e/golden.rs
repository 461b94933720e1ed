//! Golden files: `/v1/query`, `/v1/route`, `/v1/stats` and `/v1/health` answer the demo
//! questions with the same JSON as when the files were written. Volatile values (request
//! ids, timings, build times, today's date) are masked; numbers compare within
//! [`SCORE_TOLERANCE`], everything else exactly.
//!
//! Every answer (and a few refusals) also validates against the OpenAPI document the
//! server publishes at `/v1/openapi.json`.
//!
//! Two files: `demo.json`, the demo catalog as users get it (the encoder adapted to it), and
//! `demo-base.json`, a quarter of the questions on the base model.
//!
//! `SWITCHYARD_BLESS=1 cargo test -p switchyard-e2e --test golden` rewrites the files after
//! an intended change of the wire format or the model.

use std::path::PathBuf;

use serde_json::{json, Value};
use switchyard_e2e::{repo_root, serve, serve_base, Server};

/// Fields whose values change from run to run (or day to day).
const VOLATILE: [&str; 6] = [
    "request_id",
    "timings_ms",
    "execution_time_ms",
    "built_at",
    "index_built_at",
    "session_id",
];

fn mask(value: &mut Value) {
    match value {
        Value::Object(object) => {
            for (key, value) in object.iter_mut() {
                if VOLATILE.contains(&key.as_str()) {
                    *value = json!("<masked>");
                } else {
                    mask(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask),
        _ => {}
    }
}

/// Templates whose answers read the clock.
const CLOCK_TEMPLATES: [&str; 2] = ["datetime_now", "datetime_day_of_week"];

/// An answer of a clock template (an off-topic question may route to one) says what time
/// it is: mask what it computed.
fn mask_clock(body: &mut Value) {
    let template = body["metadata"]["template_id"].as_str().unwrap_or("");
    if CLOCK_TEMPLATES.contains(&template) {
        body["content"] = json!("<masked>");
        body["data"] = json!("<masked>");
    }
}

/// How far a score may move between CPUs. ONNX Runtime picks its float kernels by
/// instruction set (AVX2, AVX-512), and their sums differ in the last bits: the adapted
/// encoder's learned scores moved by up to 1.2e-4 on an AVX2-only EPYC against the file
/// written on the machine that blessed it (base-model scores by less than 1e-5). A routing change moves
/// a route, an answer or a score by far more.
const SCORE_TOLERANCE: f64 = 1e-3;

/// The differences between `expected` and `actual` (numbers within [`SCORE_TOLERANCE`]),
/// by JSON path.
fn differences(path: &str, expected: &Value, actual: &Value, out: &mut Vec<String>) {
    match (expected, actual) {
        (Value::Number(a), Value::Number(b)) => {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            if (a - b).abs() > SCORE_TOLERANCE {
                out.push(format!("{path}: expected {a}, got {b}"));
            }
        }
        (Value::Object(a), Value::Object(b)) => {
            for key in a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))) {
                let (x, y) = (a.get(key), b.get(key));
                match (x, y) {
                    (Some(x), Some(y)) => differences(&format!("{path}.{key}"), x, y, out),
                    _ => out.push(format!("{path}.{key}: expected {x:?}, got {y:?}")),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                differences(&format!("{path}[{i}]"), x, y, out);
            }
        }
        _ if expected == actual => {}
        _ => out.push(format!("{path}: expected {expected}, got {actual}")),
    }
}

/// `body` is what the document says `method path` answers with `status` (unknown paths:
/// the error shape).
fn check_schema(document: &Value, method: &str, path: &str, status: u16, body: &Value) {
    let operation = &document["paths"][path][method];
    let schema = if operation.is_object() {
        let response = &operation["responses"][status.to_string()];
        assert!(
            response.is_object(),
            "{method} {path}: {status} is not documented"
        );
        response["content"]["application/json"]["schema"].clone()
    } else {
        json!({"$ref": "#/components/schemas/ErrorBody"})
    };
    // The response schema, resolved against the whole document.
    let mut root = document.clone();
    root["allOf"] = json!([schema]);
    let validator = jsonschema::validator_for(&root).expect("the document is a schema");
    let errors: Vec<String> = validator
        .iter_errors(body)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{method} {path} ({status}) does not match the document:\n{}",
        errors.join("\n")
    );
}

fn golden_file(name: &str) -> PathBuf {
    repo_root().join("tests/data/golden").join(name)
}

/// The demo questions, except those whose answer depends on today's date.
fn questions() -> Vec<String> {
    let text = std::fs::read_to_string(repo_root().join("tests/data/demo/queries.jsonl")).unwrap();
    let mut questions: Vec<String> = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|q| !CLOCK_TEMPLATES.contains(&q["intent"].as_str().unwrap()))
        .map(|q| q["text"].as_str().unwrap().to_owned())
        .collect();
    // A clarify answer and a hostile question.
    questions.push("What is the weather".to_owned());
    questions.push("How many employees work in Engineering'; DROP TABLE employees; --".to_owned());
    questions
}

/// The demo catalog as users get it: routed with the encoder adapted to it.
#[test]
fn demo_answers_match_the_golden_file() {
    let cache = tempfile::tempdir().unwrap();
    let server = serve(cache.path(), &["--templates", "templates/demo"]);
    check_golden(&server, "demo.json", questions());
}

/// A quarter of the questions on the base model (`embedding.adaptation.mode: base`), which
/// catalogs of fewer than five templates get and any catalog can choose.
#[test]
fn demo_answers_on_the_base_model_match_their_golden_file() {
    let cache = tempfile::tempdir().unwrap();
    let server = serve_base(cache.path(), &["--templates", "templates/demo"]);
    let questions = questions().into_iter().step_by(4).collect();
    check_golden(&server, "demo-base.json", questions);
}

/// `server`'s answers to `questions` (and its health, stats and a few refusals) match the
/// golden file `name` and the OpenAPI document it serves.
fn check_golden(server: &Server, name: &str, questions: Vec<String>) {
    let client = reqwest::blocking::Client::new();
    let answers = std::cell::RefCell::new(Vec::new());
    let call = |method: &str, path: &str, body: Option<Value>| {
        let url = format!("{}{path}", server.base);
        let request = match body {
            Some(body) => client.post(url).body(body.to_string()),
            None => client.get(url),
        };
        let response = request.send().unwrap();
        let status = response.status().as_u16();
        let mut body: Value = response.json().unwrap();
        answers
            .borrow_mut()
            .push((method.to_lowercase(), path.to_owned(), status, body.clone()));
        mask(&mut body);
        mask_clock(&mut body);
        json!({ "status": status, "body": body })
    };
    let mut actual = serde_json::Map::new();
    actual.insert("GET /v1/health".into(), call("GET", "/v1/health", None));
    actual.insert("GET /v1/stats".into(), call("GET", "/v1/stats", None));
    for question in questions {
        let body = json!({ "query": question });
        actual.insert(
            format!("POST /v1/route {question}"),
            call("POST", "/v1/route", Some(body.clone())),
        );
        actual.insert(
            format!("POST /v1/query {question}"),
            call("POST", "/v1/query", Some(body)),
        );
    }
    let actual = Value::Object(actual);
    // Refusals are described too.
    call("POST", "/v1/query", Some(json!("not an object")));
    call(
        "POST",
        "/v1/route",
        Some(json!({"query": "hi", "limit": 3})),
    );
    call("GET", "/v1/nothing", None);
    let document = client
        .get(format!("{}/v1/openapi.json", server.base))
        .send()
        .unwrap()
        .json::<Value>()
        .unwrap();
    for (method, path, status, body) in answers.borrow().iter() {
        check_schema(&document, method, path, *status, body);
    }
    if std::env::var_os("SWITCHYARD_BLESS").is_some() {
        std::fs::write(
            golden_file(name),
            serde_json::to_string_pretty(&actual).unwrap() + "\n",
        )
        .unwrap();
        return;
    }
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(golden_file(name)).unwrap()).unwrap();
    let mut out = Vec::new();
    differences("", &expected, &actual, &mut out);
    assert!(
        out.is_empty(),
        "{} differences from {}:\n{}",
        out.len(),
        golden_file(name).display(),
        out.iter().take(40).cloned().collect::<Vec<_>>().join("\n")
    );
}
