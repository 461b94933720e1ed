//! Which requests are tried again: idempotent methods always, POST and PATCH only when the
//! template says `idempotent: true`, and then every attempt carries the same
//! `Idempotency-Key` so the server can deduplicate. Requests are counted on the server.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::any;
use axum::{Json, Router};
use serde_json::{json, Map, Value};

use crate::setup::{find, open, serve, GENEROUS};

/// The `Idempotency-Key` of each request the server received (`None`: no such header).
type Seen = Arc<Mutex<Vec<Option<String>>>>;

/// A server whose `/book` answers 503 to the first request and 200 to the later ones,
/// whatever the method, recording each request's `Idempotency-Key`.
async fn flaky_server() -> (String, Seen) {
    let seen: Seen = Arc::default();
    let app = Router::new()
        .route(
            "/book",
            any(|State(seen): State<Seen>, headers: HeaderMap| async move {
                let key = headers
                    .get("idempotency-key")
                    .map(|v| v.to_str().unwrap().to_owned());
                let attempt = {
                    let mut seen = seen.lock().unwrap();
                    seen.push(key);
                    seen.len()
                };
                if attempt == 1 {
                    (StatusCode::SERVICE_UNAVAILABLE, "gateway hiccup").into_response()
                } else {
                    Json(json!({"booked": true, "attempt": attempt})).into_response()
                }
            }),
        )
        .with_state(Arc::clone(&seen));
    (serve(app).await, seen)
}

fn book(method: &str, extra: Value) -> Value {
    let mut template = json!({"id": "book", "endpoint_template": "/book", "http_method": method});
    for (key, value) in extra.as_object().unwrap() {
        template[key] = value.clone();
    }
    template
}

/// 8-4-4-4-12 lowercase hex digits, as a UUID is written.
fn uuid_like(key: &str) -> bool {
    let groups: Vec<&str> = key.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups
            .iter()
            .all(|g| g.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')))
}

#[tokio::test]
async fn a_post_is_sent_once_even_when_the_server_fails() {
    let (base, seen) = flaky_server().await;
    let (source, spec) = open(&base, vec![book("POST", json!({}))]);
    let error = source
        .call(find(&spec, "book"), &Map::new(), "r1", GENEROUS)
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "datasource `api`: template `book`: HTTP 503 Service Unavailable \
         (POST not retried: the template does not declare `idempotent: true`)"
    );
    assert_eq!(
        *seen.lock().unwrap(),
        vec![None],
        "exactly one request, without an Idempotency-Key"
    );
}

#[tokio::test]
async fn a_patch_is_sent_once_too() {
    let (base, seen) = flaky_server().await;
    let (source, spec) = open(&base, vec![book("patch", json!({}))]);
    let error = source
        .call(find(&spec, "book"), &Map::new(), "r1", GENEROUS)
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("HTTP 503 Service Unavailable"), "{error}");
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn an_idempotent_post_is_retried_with_one_idempotency_key() {
    let (base, seen) = flaky_server().await;
    let (source, spec) = open(&base, vec![book("POST", json!({"idempotent": true}))]);
    let result = source
        .call(find(&spec, "book"), &Map::new(), "r1", GENEROUS)
        .await
        .unwrap();
    assert_eq!(result.data, json!({"booked": true, "attempt": 2}));
    let keys = seen.lock().unwrap().clone();
    assert_eq!(keys.len(), 2, "one try and one retry: {keys:?}");
    let first = keys[0].clone().expect("the first attempt carries a key");
    assert!(uuid_like(&first), "{first}");
    assert_eq!(
        keys[1].as_deref(),
        Some(first.as_str()),
        "the same key twice"
    );

    // The same request again (a Lambda invoke retried, a workflow resumed) is the same
    // operation: the same key, so the server can tell it already did it.
    source
        .call(find(&spec, "book"), &Map::new(), "r1", GENEROUS)
        .await
        .unwrap();
    // Another request, or other parameters, is another operation: another key.
    source
        .call(find(&spec, "book"), &Map::new(), "r2", GENEROUS)
        .await
        .unwrap();
    let other = json!({"seats": 2}).as_object().unwrap().clone();
    source
        .call(find(&spec, "book"), &other, "r1", GENEROUS)
        .await
        .unwrap();
    let keys = seen.lock().unwrap().clone();
    assert_eq!(keys.len(), 5);
    assert_eq!(
        keys[2], keys[0],
        "the same operation, the same key: {keys:?}"
    );
    assert!(keys[3].as_deref().is_some_and(uuid_like), "{keys:?}");
    assert_ne!(keys[3], keys[0], "another request id, another key");
    assert_ne!(keys[4], keys[0], "other parameters, another key");
}

#[tokio::test]
async fn a_template_idempotency_key_is_kept() {
    let (base, seen) = flaky_server().await;
    let template = book(
        "PATCH",
        json!({"idempotent": true, "headers": {"Idempotency-Key": "order-7"}}),
    );
    let (source, spec) = open(&base, vec![template]);
    source
        .call(find(&spec, "book"), &Map::new(), "r1", GENEROUS)
        .await
        .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        vec![Some("order-7".to_owned()), Some("order-7".to_owned())]
    );
}

#[tokio::test]
async fn a_get_is_still_retried_without_a_key() {
    let (base, seen) = flaky_server().await;
    let (source, spec) = open(&base, vec![book("GET", json!({}))]);
    let result = source
        .call(find(&spec, "book"), &Map::new(), "r1", GENEROUS)
        .await
        .unwrap();
    assert_eq!(result.data["attempt"], 2);
    assert_eq!(*seen.lock().unwrap(), vec![None, None]);
}

#[tokio::test]
async fn put_and_delete_are_retried() {
    for method in ["PUT", "DELETE"] {
        let (base, seen) = flaky_server().await;
        let (source, spec) = open(&base, vec![book(method, json!({}))]);
        let result = source
            .call(find(&spec, "book"), &Map::new(), "r1", GENEROUS)
            .await
            .unwrap();
        assert_eq!(result.data["attempt"], 2, "{method}");
        assert_eq!(seen.lock().unwrap().len(), 2, "{method}");
    }
}

#[tokio::test]
async fn a_refused_connection_is_retried_even_for_a_post() {
    // Nothing listens on this port: the request is never sent, so trying again cannot
    // make the booking twice.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let (source, spec) = open(&base, vec![book("POST", json!({}))]);
    let error = source
        .call(find(&spec, "book"), &Map::new(), "r1", GENEROUS)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("datasource `api`: template `book`: request failed (after 3 attempts)"),
        "{error}"
    );
}

#[tokio::test]
async fn graphql_posts_follow_the_same_rule() {
    let query = json!({"graphql_template": "query { rooms { id } }"});
    let mut idempotent = query.clone();
    idempotent["idempotent"] = json!(true);
    for (template, requests) in [(query, 1), (idempotent, 2)] {
        let (base, seen) = flaky_server().await;
        let mut template = template;
        template["id"] = json!("rooms");
        let (source, spec) = open(&format!("{base}/book"), vec![template]);
        // The second answer is not GraphQL; only what reached the server matters here.
        let _ = source
            .call(find(&spec, "rooms"), &Map::new(), "r1", GENEROUS)
            .await;
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), requests, "{seen:?}");
        assert!(seen.iter().all(|key| key.is_some() == (requests == 2)));
    }
}
