//! Bounded property-based fuzzing of the HTTP app's request handling: random and mutated
//! bodies (JSON objects shaped like the requests, any JSON, bytes, oversized bodies),
//! methods, paths and headers, sent through the real axum app over a small intent catalog
//! indexed with the test-only `HashingEmbedder` (no model needed).
//!
//! Property: every answer is 2xx or 4xx, never 5xx, with a JSON body; every 4xx body is
//! the API's error (a code and a message), and a 400 names the field at fault (`body` when
//! the body is not a JSON object of the request).
//!
//! Each property runs a bounded number of cases with a fixed seed (a few seconds in the
//! dev profile); `PROPTEST_CASES` and `PROPTEST_RNG_SEED` run more, or other, cases
//! (`infra/scripts/fuzz.sh`).

#[path = "../../core/tests/common/mod.rs"]
mod common;

use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::http::{Method, Request};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use serde_json::{json, Map, Value};
use switchyard_adapters::respond::IntentInvoker;
use switchyard_catalog::template::Catalog;
use switchyard_core::config::Config;
use switchyard_core::service::Service;
use switchyard_http::wire::{FeedbackRequest, QueryRequest};
use switchyard_index::index::Index;
use switchyard_routing::router::Router;
use switchyard_routing::session::MemorySessionStore;
use switchyard_vectors::embed::{Embedder, HashingEmbedder};
use tower::ServiceExt;

/// `cases` cases with a fixed seed, unless `PROPTEST_CASES` / `PROPTEST_RNG_SEED` say
/// otherwise; no regression files (minimal failures become plain `#[test]`s).
fn config(cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = cases;
    }
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(0x5717_c4a2_d5ee_d003);
    }
    config.failure_persistence = None;
    config
}

type Api = Arc<Service>;

const SMALLTALK_DATASOURCE: &str = "name: smalltalk\nkind: intent\ndescription: Greetings\n";
const SMALLTALK_TEMPLATES: &str = r#"templates:
  - id: greet
    description: Say hello
    nl_examples: [Hello there, Good morning]
  - id: thank
    description: Say thanks
    nl_examples: [Thank you very much, Thanks a lot]
"#;

/// The service over two intent datasources: every template answers without an adapter,
/// so no valid request has a reason to fail with a 5xx.
fn api() -> &'static (Api, tokio::runtime::Runtime) {
    static API: OnceLock<(Api, tokio::runtime::Runtime)> = OnceLock::new();
    API.get_or_init(|| {
        let dir = common::catalog(&[
            ("assistant/datasource.yaml", common::ASSISTANT_DATASOURCE),
            ("assistant/templates.yaml", common::ASSISTANT_TEMPLATES),
            ("smalltalk/datasource.yaml", SMALLTALK_DATASOURCE),
            ("smalltalk/templates.yaml", SMALLTALK_TEMPLATES),
        ]);
        let config = Config::default();
        let catalog = Catalog::load(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let embedder: Arc<dyn Embedder> = Arc::new(HashingEmbedder::new(64));
        let index = Index::build(catalog, embedder.as_ref(), &config.router(), &|_, _| {}).unwrap();
        let sessions = MemorySessionStore::new(config.sessions.clone());
        let router = Router::new(index, config.router(), embedder, "fuzz").unwrap();
        let invoker = IntentInvoker::new(router.index().catalog.clone());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        (
            Arc::new(Service::new(
                config,
                router,
                Arc::new(invoker),
                Arc::new(sessions),
            )),
            runtime,
        )
    })
}

/// Send one request through the app: (status, body bytes).
fn send(method: Method, path: &str, headers: &[(String, String)], body: Vec<u8>) -> (u16, Vec<u8>) {
    let (api, runtime) = api();
    let mut request = Request::builder().method(method).uri(path);
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let request = request.body(Body::from(body)).unwrap();
    runtime.block_on(async {
        let response = switchyard_http::app(api.clone())
            .oneshot(request)
            .await
            .unwrap();
        let status = response.status().as_u16();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 24)
            .await
            .unwrap();
        (status, bytes.to_vec())
    })
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(&[
            "Hello there", "remind me to call mom", "What's the weather in Paris?",
            "hello and then remind me to buy milk", "", " ", "\u{0}", "🙂", "a\nb",
            "assistant", "smalltalk", "hr", "auto", "simple", "semantic", "temporal",
            "wf-1", "../x", "%2F",
        ][..]).prop_map(str::to_owned),
        3 => any::<String>(),
        1 => (1usize..3000).prop_map(|n| "weather ".repeat(n / 8 + 1)),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        Just(json!(u64::MAX)),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map(text(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A value for one of the requests' fields: mostly the right type, sometimes not.
fn field_value(field: &'static str) -> BoxedStrategy<Value> {
    let typical: BoxedStrategy<Value> = match field {
        "datasources" => prop::collection::vec(text(), 0..4)
            .prop_map(Value::from)
            .boxed(),
        "filters" => prop::collection::btree_map(text(), json_value(), 0..3)
            .prop_map(|m| Value::Object(m.into_iter().collect()))
            .boxed(),
        "user_satisfaction" | "search_quality" => {
            prop_oneof![(-1.0f64..2.0).prop_map(Value::from), Just(json!(f64::MAX)),].boxed()
        }
        "agent_success" => any::<bool>().prop_map(Value::from).boxed(),
        _ => text().prop_map(Value::from).boxed(),
    };
    prop_oneof![4 => typical, 1 => json_value()].boxed()
}

const QUERY_FIELDS: &[&str] = &[
    "query",
    "session_id",
    "datasources",
    "workflow_id",
    "fusion",
    "filters",
];
const FEEDBACK_FIELDS: &[&str] = &[
    "request_id",
    "user_satisfaction",
    "agent_success",
    "search_quality",
];

/// A JSON object shaped like a request of `fields` (the first nearly always there): some
/// of them, rarely one of the other request's or an unknown one.
fn request_object(fields: &'static [&'static str]) -> impl Strategy<Value = Value> {
    let present: Vec<BoxedStrategy<Option<(String, Value)>>> = fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let p = if i == 0 { 0.9 } else { 0.3 };
            prop::option::weighted(p, field_value(f))
                .prop_map(move |v| v.map(|v| (f.to_string(), v)))
                .boxed()
        })
        .collect();
    let other = prop_oneof![
        prop::sample::select(QUERY_FIELDS).prop_map(str::to_owned),
        prop::sample::select(FEEDBACK_FIELDS).prop_map(str::to_owned),
        text(),
    ];
    let extra = prop::option::weighted(0.1, (other, json_value()));
    (present, extra).prop_map(|(present, extra)| {
        let mut object: Map<String, Value> = present.into_iter().flatten().collect();
        if let Some((key, value)) = extra {
            object.insert(key, value);
        }
        Value::Object(object)
    })
}

const SHORT_BODIES: &[&str] = &[
    "",
    " ",
    "\n\t ",
    "{",
    "null",
    "[]",
    "\"x\"",
    "{}",
    "{\"query\":}",
];

/// Bytes of a body: request-shaped JSON (sometimes edited), any JSON, or any bytes.
fn body(fields: &'static [&'static str]) -> impl Strategy<Value = Vec<u8>> {
    let edits = prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..4);
    prop_oneof![
        6 => request_object(fields).prop_map(|v| serde_json::to_vec(&v).unwrap()),
        2 => (request_object(fields), edits).prop_map(|(v, edits)| {
            let mut bytes = serde_json::to_vec(&v).unwrap();
            for (at, byte, kind) in edits {
                let i = at.index(bytes.len() + 1);
                match kind {
                    0 if i < bytes.len() => bytes[i] = byte,
                    1 if i < bytes.len() => {
                        bytes.remove(i);
                    }
                    _ => bytes.insert(i, byte),
                }
            }
            bytes
        }),
        2 => json_value().prop_map(|v| serde_json::to_vec(&v).unwrap()),
        1 => prop::collection::vec(any::<u8>(), 0..64),
        1 => prop::sample::select(SHORT_BODIES).prop_map(|b| b.as_bytes().to_vec()),
        1 => (60_000usize..70_000).prop_map(|n| {
            let mut bytes = br#"{"query": ""#.to_vec();
            bytes.resize(n, b'a');
            bytes.extend_from_slice(br#""}"#);
            bytes
        }),
    ]
}

/// A method and path, and a body for it.
fn request() -> impl Strategy<Value = (Method, String, Vec<u8>)> {
    endpoint().prop_flat_map(|(method, path)| {
        let fields = if path == "/v1/feedback" {
            FEEDBACK_FIELDS
        } else {
            QUERY_FIELDS
        };
        (Just(method), Just(path), body(fields))
    })
}

fn endpoint() -> impl Strategy<Value = (Method, String)> {
    prop_oneof![
        4 => Just((Method::POST, "/v1/route".to_owned())),
        4 => Just((Method::POST, "/v1/query".to_owned())),
        2 => Just((Method::POST, "/v1/feedback".to_owned())),
        1 => "[a-zA-Z0-9._%~-]{1,140}".prop_map(|id| (Method::DELETE, format!("/v1/sessions/{id}"))),
        1 => prop::sample::select(&[
            (Method::GET, "/v1/health"),
            (Method::GET, "/v1/stats"),
            (Method::GET, "/v1/query"),
            (Method::PUT, "/v1/route"),
            (Method::POST, "/v1/nothing"),
            (Method::POST, "/v1/route/"),
            (Method::POST, "/"),
        ][..])
        .prop_map(|(m, p)| (m, p.to_owned())),
    ]
}

fn headers() -> impl Strategy<Value = Vec<(String, String)>> {
    let content_type = prop::option::weighted(
        0.8,
        prop::sample::select(
            &[
                "application/json",
                "text/plain",
                "application/x-www-form-urlencoded",
                "application/json; charset=latin1",
            ][..],
        ),
    );
    let api_key = prop::option::weighted(0.2, "[ -~]{0,40}");
    (content_type, api_key).prop_map(|(content_type, api_key)| {
        let mut headers = Vec::new();
        if let Some(c) = content_type {
            headers.push(("content-type".to_owned(), c.to_owned()));
        }
        if let Some(k) = api_key {
            headers.push(("x-api-key".to_owned(), k));
        }
        headers
    })
}

fn check_answer(status: u16, bytes: &[u8]) -> Result<(), TestCaseError> {
    prop_assert!(
        (200..300).contains(&status) || (400..500).contains(&status),
        "status {status}: {}",
        String::from_utf8_lossy(bytes)
    );
    let body: Value = serde_json::from_slice(bytes)
        .map_err(|e| TestCaseError::fail(format!("status {status}, body not JSON ({e})")))?;
    if status >= 400 {
        let error = &body["error"];
        let code = error["code"].as_str().unwrap_or_default();
        let message = error["message"].as_str().unwrap_or_default();
        prop_assert!(!code.is_empty() && !message.is_empty(), "{body}");
        if status == 400 {
            let field = error["field"].as_str().unwrap_or_default();
            prop_assert!(!field.is_empty(), "a 400 names no field: {body}");
            if code == "invalid_request" {
                prop_assert!(message.starts_with(field), "{body}");
            }
        }
    }
    Ok(())
}

#[test]
fn a_valid_request_is_answered() {
    let headers = [("content-type".to_owned(), "application/json".to_owned())];
    for path in ["/v1/route", "/v1/query"] {
        let body = serde_json::to_vec(&json!({"query": "Hello there"})).unwrap();
        let (status, bytes) = send(Method::POST, path, &headers, body);
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    }
    let (status, bytes) = send(Method::POST, "/v1/route", &headers, b"{".to_vec());
    assert_eq!(status, 400);
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(body["error"]["field"], "body", "{body}");
}

proptest! {
    #![proptest_config(config(2000))]

    /// Any request is answered 2xx or 4xx with a JSON body; errors name their field.
    #[test]
    fn bad_requests_are_4xx_naming_the_field(
        (method, path, body) in request(),
        headers in headers(),
    ) {
        let _ = serde_json::from_slice::<QueryRequest>(&body);
        let _ = serde_json::from_slice::<FeedbackRequest>(&body);
        let (status, bytes) = send(method, &path, &headers, body);
        check_answer(status, &bytes)?;
    }
}
