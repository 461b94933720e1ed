//! The HTTP adapter's placeholders: hostile values sent to an echo server on 127.0.0.1 never
//! leave its host and port, their one path segment or their one query parameter.

use std::sync::OnceLock;
use std::time::Duration;

use axum::extract::Request;
use axum::Json;
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use switchyard_adapters::http::HttpDatasource;
use switchyard_adapters::AdapterError;
use switchyard_catalog::template::{Datasource, Template};

use crate::setup::config;

/// The echo server on 127.0.0.1 (port) and the runtime it runs on; it answers every
/// request with what it received.
fn echo() -> &'static (tokio::runtime::Runtime, u16) {
    static ECHO: OnceLock<(tokio::runtime::Runtime, u16)> = OnceLock::new();
    ECHO.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let app = axum::Router::new().fallback(|request: Request| async move {
            let host = request
                .headers()
                .get("host")
                .and_then(|h| h.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            Json(json!({
                "path": request.uri().path(),
                "query": request.uri().query(),
                "host": host,
            }))
        });
        runtime.spawn(async move { axum::serve(listener, app).await.unwrap() });
        (runtime, port)
    })
}

fn template(fields: Value) -> Template {
    let mut full = json!({"description": "a call", "nl_examples": ["call it"]});
    for (key, value) in fields.as_object().unwrap() {
        full[key] = value.clone();
    }
    serde_json::from_value(full).unwrap()
}

/// The datasource `api` on the echo server, its base URL with a path.
fn source() -> &'static (HttpDatasource, Datasource) {
    static SOURCE: OnceLock<(HttpDatasource, Datasource)> = OnceLock::new();
    SOURCE.get_or_init(|| {
        let port = echo().1;
        let spec = json!({
            "name": "api", "kind": "http", "description": "the echo server",
            "connection": {"base_url": format!("http://127.0.0.1:{port}/api/v1/")},
        });
        let parameters = json!([{"name": "id"}, {"name": "n"}, {"name": "q"}]);
        let datasource = Datasource {
            spec: serde_json::from_value(spec).unwrap(),
            templates: vec![
                template(json!({
                    "id": "segment",
                    "endpoint_template": "/items/{id}/tail",
                    "parameters": parameters,
                    "query_params": {"q": "{q}", "fixed": "1"},
                })),
                template(json!({
                    "id": "joined",
                    "endpoint_template": "items/{id}-{n}/x",
                    "parameters": parameters,
                    "query_params": {"q": "{q}"},
                })),
                template(json!({
                    "id": "absolute",
                    "endpoint_template": format!("http://127.0.0.1:{port}/abs/{{id}}"),
                    "parameters": parameters,
                    "query_params": {"q": "{q}", "n": "{n}"},
                })),
            ],
        };
        (HttpDatasource::open(&datasource).unwrap(), datasource)
    })
}

/// Hostile text: separators, dot segments, encodings, authority characters, controls.
fn hostile_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        prop::sample::select(
            &[
                "/",
                "..",
                ".",
                "?",
                "#",
                "%",
                "%2F",
                "%2f",
                "%2E%2E",
                "%00",
                "@",
                ":",
                "\\",
                "&",
                "=",
                "+",
                ";",
                " ",
                "\r\n",
                "\n",
                "\t",
                "\0",
                "é",
                "🙂",
                "\u{202e}",
                "\u{ff0f}",
                "{id}",
                "{q}",
                "http://evil.test/",
                "//evil.test",
                "[::1]",
                "127.0.0.1:1",
                "~",
                "-",
                "_",
                "*",
                "'",
                "\"",
                "<",
                ">",
                "`",
                "|",
                "^",
            ][..]
        )
        .prop_map(str::to_owned),
        "[a-zA-Z0-9]{1,4}",
        any::<String>(),
    ];
    prop::collection::vec(piece, 0..6).prop_map(|p| p.concat())
}

fn parameter_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => hostile_text().prop_map(Value::from),
        1 => any::<i64>().prop_map(Value::from),
        1 => any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        1 => any::<bool>().prop_map(Value::from),
    ]
}

/// A value as the adapter writes it into a URL.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Percent-decoding; `None` for bytes that are not UTF-8 or a bad escape.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `key=value` pairs of a query string, form-decoded.
fn query_pairs(query: &str) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = reqwest::Url::parse(&format!("http://x/?{query}"))
        .unwrap()
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    pairs.sort();
    pairs
}

proptest! {
    #![proptest_config(config(1000))]

    /// Hostile values never move the request off its host and port, fill exactly their
    /// one path segment, and exactly their one query parameter.
    #[test]
    fn placeholder_values_stay_in_their_place(
        which in 0usize..3,
        id in parameter_value(),
        n in parameter_value(),
        q in parameter_value(),
    ) {
        let (runtime, port) = echo();
        let (source, datasource) = source();
        let template = &datasource.templates[which];
        let parameters: Map<String, Value> =
            [("id".to_owned(), id.clone()), ("n".to_owned(), n.clone()), ("q".to_owned(), q.clone())]
                .into_iter()
                .collect();
        let result = runtime.block_on(source.call(template, &parameters, "r1", Duration::from_secs(5)));
        let (id_text, n_text) = (text_of(&id), text_of(&n));
        let in_path: &[&str] = if which == 1 { &[&id_text, &n_text] } else { &[&id_text] };
        if in_path.iter().any(|t| t.is_empty() || *t == "." || *t == "..") {
            let refused = matches!(&result, Err(AdapterError::Parameter { name, .. })
                if name == "id" || name == "n");
            prop_assert!(refused, "{:?}", result.map(|r| r.data));
            return Ok(());
        }
        let answer = match result {
            Ok(answer) => answer,
            Err(e) => return Err(TestCaseError::fail(format!("refused: {e}"))),
        };
        prop_assert_eq!(answer.status, 200);
        let echoed = answer.data;
        let host = format!("127.0.0.1:{port}");
        prop_assert_eq!(echoed["host"].as_str(), Some(host.as_str()));

        let path = echoed["path"].as_str().unwrap();
        let segments: Vec<&str> = path.split('/').collect();
        let (expected_shape, at, value): (&[&str], usize, String) = match which {
            0 => (&["", "api", "v1", "items", "*", "tail"], 4, id_text.clone()),
            1 => (&["", "api", "v1", "items", "*", "x"], 4, format!("{id_text}-{n_text}")),
            _ => (&["", "abs", "*"], 2, id_text.clone()),
        };
        prop_assert_eq!(segments.len(), expected_shape.len(), "path {}", path);
        for (segment, expected) in segments.iter().zip(expected_shape) {
            prop_assert!(*expected == "*" || segment == expected, "path {}", path);
        }
        prop_assert_eq!(percent_decode(segments[at]), Some(value), "path {}", path);

        let query = echoed["query"].as_str().unwrap_or_default();
        let mut expected = vec![("q".to_owned(), text_of(&q))];
        match which {
            0 => expected.push(("fixed".to_owned(), "1".to_owned())),
            2 => expected.push(("n".to_owned(), n_text.clone())),
            _ => {}
        }
        expected.sort();
        prop_assert_eq!(query_pairs(query), expected, "query {}", query);
    }
}
