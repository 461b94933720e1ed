//! `web` datasources: saved real pages (tests/data/web: the Rust toolchain's own
//! documentation, with its navigation, scripts and menus) served by a real HTTP server on
//! 127.0.0.1, fetched on demand, reduced to their main text, searched for the question and
//! cached; the HTTP adapter's host rules hold for every request and redirect.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use switchyard_adapters::{check_catalog, LocalAdapters};
use switchyard_catalog::template::Catalog;
use switchyard_contract::adapter::{AdapterInvoker, AdapterRequest, AdapterStatus};

/// Requests the server answered, by path.
type Hits = Arc<Mutex<BTreeMap<String, usize>>>;

fn pages_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/web")
}

async fn page(State(hits): State<Hits>, Path(path): Path<String>) -> Response {
    *hits.lock().unwrap().entry(path.clone()).or_default() += 1;
    // The saved pages only: no `..` ever reaches the file system.
    if path.split('/').any(|part| part == ".." || part.is_empty()) {
        return StatusCode::NOT_FOUND.into_response();
    }
    match std::fs::read(pages_dir().join(&path)) {
        Ok(body) => ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response(),
        Err(_) => StatusCode::NOT_FOUND.into_response(),
    }
}

/// The saved pages under /pages/, a redirect off the allowed host, a page too slow for
/// any deadline and a body that is no page.
async fn site() -> (String, Hits) {
    let hits: Hits = Arc::default();
    let app = Router::new()
        .route("/pages/{*path}", get(page))
        .route(
            "/moved",
            get(|| async { Redirect::temporary("http://169.254.169.254/latest/meta-data/") }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(10)).await;
                "late"
            }),
        )
        .route(
            "/deep",
            get(|| async {
                // Nested as deep as the 1 MiB cap allows, with the text at the bottom.
                let depth = 200_000;
                let page = format!(
                    "<html><head><title>Deep</title></head><body>{}<p>{}</p>{}</body></html>",
                    "<div>".repeat(depth),
                    "The bottom of a very deep page holds these words. ".repeat(20),
                    "</div>".repeat(depth)
                );
                ([(header::CONTENT_TYPE, "text/html")], page)
            }),
        )
        .route(
            "/blank",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/html")],
                    "<html><body></body></html>",
                )
            }),
        )
        .with_state(Arc::clone(&hits));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{address}"), hits)
}

/// One web datasource over the saved pages; `connection` adds to its connection settings.
fn catalog(base_url: &str, connection: Value, extra: Vec<Value>) -> Catalog {
    let mut settings = json!({"base_url": base_url});
    settings
        .as_object_mut()
        .unwrap()
        .extend(connection.as_object().unwrap().clone());
    let mut templates = vec![
        json!({
            "id": "cargo_profiles", "description": "Cargo's build profiles and their settings",
            "nl_examples": ["what does opt-level do in a cargo profile"],
            "endpoint_template": "/pages/cargo/profiles.html",
        }),
        json!({
            "id": "rustc_book", "description": "A chapter of the rustc book",
            "nl_examples": ["how does the rustc jobserver work"],
            "parameters": [{
                "name": "chapter", "type": "string", "required": true,
                "allowed_values": ["jobserver", "codegen-options"],
                "aliases": {"codegen": "codegen-options", "code generation": "codegen-options"},
            }],
            "endpoint_template": "/pages/rustc/{chapter}.html",
        }),
    ];
    templates.extend(extra);
    serde_json::from_value(json!({"datasources": [{
        "spec": {
            "name": "rust_docs", "kind": "web", "description": "The Rust documentation",
            "connection": settings,
        },
        "templates": templates,
    }]}))
    .unwrap()
}

fn request(template_id: &str, query: &str, deadline_ms: u64) -> AdapterRequest {
    serde_json::from_value(json!({
        "request_id": "r", "datasource": "rust_docs", "template_id": template_id,
        "query": query, "session_parameters": {}, "deadline_ms": deadline_ms,
    }))
    .unwrap()
}

async fn adapters(catalog: Catalog) -> LocalAdapters {
    check_catalog(&catalog).unwrap();
    LocalAdapters::open(catalog, None).await.unwrap()
}

fn passages(data: &Value) -> Vec<String> {
    data["passages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["text"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_page_is_fetched_reduced_to_its_main_text_and_searched() {
    let (base, hits) = site().await;
    let adapters = adapters(catalog(&base, json!({}), vec![])).await;
    let answer = adapters
        .invoke(request(
            "cargo_profiles",
            "What does the opt-level setting do in a profile?",
            5000,
        ))
        .await
        .unwrap();
    assert_eq!(answer.status(), AdapterStatus::Ok, "{answer:?}");
    let data = &answer.data;
    assert_eq!(data["url"], format!("{base}/pages/cargo/profiles.html"));
    assert!(
        data["title"].as_str().unwrap().contains("Profiles"),
        "{data}"
    );
    assert_eq!(data["matched"], true);
    assert_eq!(data["cached"], false);
    let found = passages(data);
    assert!(!found.is_empty() && found.len() <= 3, "{found:?}");
    assert!(found[0].contains("opt-level"), "{found:?}");
    // The page's menus, theme names and scripts are not its text.
    let all = found.join(" ") + &answer.content;
    for boilerplate in [
        "Keyboard shortcuts",
        "Ayu",
        "Coal",
        "function(",
        "<script",
        "<a ",
    ] {
        assert!(!all.contains(boilerplate), "`{boilerplate}` in {all}");
    }
    assert!(
        answer.content.contains("/pages/cargo/profiles.html"),
        "{}",
        answer.content
    );

    // The second question on the page within the TTL is answered from the cache.
    let answer = adapters
        .invoke(request(
            "cargo_profiles",
            "Which profile does cargo test use?",
            5000,
        ))
        .await
        .unwrap();
    assert_eq!(answer.status(), AdapterStatus::Ok, "{answer:?}");
    assert_eq!(answer.data["cached"], true);
    assert_eq!(hits.lock().unwrap()["cargo/profiles.html"], 1);
}

#[tokio::test]
async fn the_page_is_named_by_the_questions_parameter() {
    let (base, hits) = site().await;
    let adapters = adapters(catalog(&base, json!({"cache_ttl_seconds": "0"}), vec![])).await;
    let answer = adapters
        .invoke(request(
            "rustc_book",
            "How does the jobserver limit rustc's parallelism?",
            5000,
        ))
        .await
        .unwrap();
    assert_eq!(answer.status(), AdapterStatus::Ok, "{answer:?}");
    assert_eq!(
        answer.data["url"],
        format!("{base}/pages/rustc/jobserver.html")
    );
    assert!(passages(&answer.data)[0]
        .to_lowercase()
        .contains("jobserver"));

    let answer = adapters
        .invoke(request(
            "rustc_book",
            "In the codegen options, what does the linker flag choose?",
            5000,
        ))
        .await
        .unwrap();
    assert_eq!(answer.status(), AdapterStatus::Ok, "{answer:?}");
    assert_eq!(
        answer.data["url"],
        format!("{base}/pages/rustc/codegen-options.html")
    );
    assert!(passages(&answer.data).iter().any(|p| p.contains("linker")));

    // Without a cache, each question fetches the page again.
    adapters
        .invoke(request("rustc_book", "jobserver tokens", 5000))
        .await
        .unwrap();
    assert_eq!(hits.lock().unwrap()["rustc/jobserver.html"], 2);
}

#[tokio::test]
async fn redirects_off_the_allowed_hosts_missing_pages_and_slow_ones_are_errors() {
    let (base, _) = site().await;
    let extra = |id: &str, endpoint: &str| json!({"id": id, "description": id, "nl_examples": [id], "endpoint_template": endpoint});
    let adapters = adapters(catalog(
        &base,
        json!({}),
        vec![
            extra("moved", "/moved"),
            extra("missing", "/pages/none.html"),
            extra("slow", "/slow"),
            extra("blank", "/blank"),
        ],
    ))
    .await;
    for (template, deadline_ms, expected) in [
        ("moved", 5000, "169.254.169.254"),
        ("missing", 5000, "404"),
        ("slow", 500, "deadline"),
        ("blank", 5000, "no main text"),
    ] {
        let answer = adapters
            .invoke(request(template, "anything at all", deadline_ms))
            .await
            .unwrap();
        assert_eq!(
            answer.status(),
            AdapterStatus::Error,
            "{template}: {answer:?}"
        );
        let error = answer.error().unwrap();
        assert!(
            error.contains(template) && error.contains(expected),
            "{template}: {error}"
        );
    }
    // The server keeps answering the pages after all that.
    let answer = adapters
        .invoke(request("cargo_profiles", "debug assertions", 5000))
        .await
        .unwrap();
    assert_eq!(answer.status(), AdapterStatus::Ok, "{answer:?}");
}

#[tokio::test]
async fn a_page_over_the_size_cap_is_cut_and_says_so() {
    let (base, _) = site().await;
    let adapters = adapters(catalog(
        &base,
        json!({"max_response_bytes": "20000"}),
        vec![],
    ))
    .await;
    let answer = adapters
        .invoke(request("cargo_profiles", "opt-level", 5000))
        .await
        .unwrap();
    assert_eq!(answer.status(), AdapterStatus::Ok, "{answer:?}");
    assert_eq!(answer.data["truncated"], true);
}

#[test]
fn the_index_build_refuses_what_a_web_datasource_could_never_fetch() {
    let base = "http://127.0.0.1:9";
    let refused = |catalog: Catalog| check_catalog(&catalog).unwrap_err().to_string();

    let other_host = json!({"id": "elsewhere", "description": "d", "nl_examples": ["x"],
                            "endpoint_template": "https://elsewhere.example.com/page.html"});
    let error = refused(catalog(base, json!({}), vec![other_host]));
    assert!(
        error.contains("elsewhere") && error.contains("allowed_hosts"),
        "{error}"
    );

    let post = json!({"id": "post", "description": "d", "nl_examples": ["x"],
                      "endpoint_template": "/pages/x.html", "http_method": "POST"});
    let error = refused(catalog(base, json!({}), vec![post]));
    assert!(error.contains("post") && error.contains("GET"), "{error}");

    for (field, value) in [("cache_ttl_seconds", "soon"), ("passages", "0")] {
        let error = refused(catalog(base, json!({ field: value }), vec![]));
        assert!(
            error.contains("rust_docs") && error.contains(&format!("connection.{field}")),
            "{error}"
        );
    }
}

#[tokio::test]
async fn a_page_nested_past_any_real_one_is_refused_before_it_is_parsed() {
    let (base, _) = site().await;
    let deep = json!({"id": "deep", "description": "deep", "nl_examples": ["deep"], "endpoint_template": "/deep"});
    let adapters = adapters(catalog(&base, json!({}), vec![deep])).await;
    let started = std::time::Instant::now();
    let answer = adapters
        .invoke(request("deep", "the bottom of the page", 60_000))
        .await
        .unwrap();
    // Parsed, a megabyte of nested elements took minutes here (the parser scans its open
    // elements for each tag) and could overflow a reader's stack.
    assert_eq!(answer.status(), AdapterStatus::Error, "{answer:?}");
    let error = answer.error().unwrap();
    assert!(
        error.contains("deep") && error.contains("past the 1000"),
        "{error}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let answer = adapters
        .invoke(request("cargo_profiles", "debug assertions", 5000))
        .await
        .unwrap();
    assert_eq!(answer.status(), AdapterStatus::Ok, "{answer:?}");
}
