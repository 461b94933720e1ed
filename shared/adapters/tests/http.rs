//! The HTTP/GraphQL adapter against real servers on 127.0.0.1: encoding of path and query
//! values, typed JSON bodies, secrets from the environment, retries, deadlines, the size
//! cap, the host allow-list, GraphQL answers and errors, and response mapping.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Map, Value};
use switchyard_adapters::http::HttpDatasource;
use switchyard_adapters::AdapterError;
use switchyard_core::template::{Datasource, Template};

const SECOND: Duration = Duration::from_secs(1);
const GENEROUS: Duration = Duration::from_secs(5);

/// Serve `app` on a free port of 127.0.0.1; gives its base URL.
async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{address}")
}

fn merge(base: &mut Value, extra: Value) {
    for (key, value) in extra.as_object().unwrap() {
        base[key] = value.clone();
    }
}

fn template(fields: Value) -> Template {
    let mut full = json!({"description": "a call", "nl_examples": ["call it"]});
    merge(&mut full, fields);
    serde_json::from_value(full).unwrap()
}

/// A datasource named `api` with `spec` fields over the defaults.
fn datasource(spec: Value, templates: Vec<Value>) -> Datasource {
    let mut full = json!({"name": "api", "kind": "http", "description": "a test API"});
    merge(&mut full, spec);
    Datasource {
        spec: serde_json::from_value(full).unwrap(),
        templates: templates.into_iter().map(template).collect(),
    }
}

fn open(base: &str, templates: Vec<Value>) -> (HttpDatasource, Datasource) {
    let datasource = datasource(json!({"connection": {"base_url": base}}), templates);
    (HttpDatasource::open(&datasource).unwrap(), datasource)
}

fn find<'a>(datasource: &'a Datasource, id: &str) -> &'a Template {
    datasource.templates.iter().find(|t| t.id == id).unwrap()
}

fn params(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

#[tokio::test]
async fn path_and_query_values_are_encoded_never_spliced() {
    let app = Router::new().route(
        "/users/{id}/orders",
        get(|Path(id): Path<String>, uri: Uri| async move {
            Json(json!({"id": id, "uri": uri.to_string()}))
        }),
    );
    let base = serve(app).await;
    let (source, spec) = open(
        &base,
        vec![json!({
            "id": "orders",
            "endpoint_template": "/users/{user_id}/orders",
            "parameters": [{"name": "user_id"}, {"name": "status"}],
            "query_params": {"q": "{user_id}", "limit": 5, "status": "{status}"},
        })],
    );
    let orders = find(&spec, "orders");

    let hostile = "a/b?c#d";
    let result = source
        .call(orders, &params(json!({"user_id": hostile})), SECOND)
        .await
        .unwrap();
    assert_eq!(result.status, 200);
    // One path segment, decoded back to the exact value; the missing optional is omitted.
    assert_eq!(result.data["id"], hostile);
    assert_eq!(
        result.data["uri"],
        "/users/a%2Fb%3Fc%23d/orders?limit=5&q=a%2Fb%3Fc%23d"
    );
    assert!(!result.truncated);

    let result = source
        .call(
            orders,
            &params(json!({"user_id": "../admin", "status": "open"})),
            SECOND,
        )
        .await
        .unwrap();
    assert_eq!(result.data["id"], "../admin");
    assert_eq!(
        result.data["uri"],
        "/users/..%2Fadmin/orders?limit=5&q=..%2Fadmin&status=open"
    );

    let error = source
        .call(orders, &params(json!({"user_id": ".."})), SECOND)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, AdapterError::Parameter { name, .. } if name == "user_id"),
        "{error}"
    );
}

#[tokio::test]
async fn a_json_body_keeps_the_parameters_types() {
    let app = Router::new().route(
        "/orders",
        post(|Json(body): Json<Value>| async move { (StatusCode::CREATED, Json(body)) }),
    );
    let base = serve(app).await;
    let (source, spec) = open(
        &base,
        vec![json!({
            "id": "create",
            "endpoint_template": "/orders",
            "http_method": "post",
            "parameters": [{"name": "customer"}, {"name": "quantity"}, {"name": "express"}, {"name": "tag"}],
            "body": {
                "customer": "{customer}",
                "quantity": "{quantity}",
                "express": "{express}",
                "tags": ["{tag}", "fixed"],
                "note": "{absent}",
                "literal": "x {customer}",
                "nested": {"count": "{quantity}"}
            },
        })],
    );
    let result = source
        .call(
            find(&spec, "create"),
            &params(json!({"customer": "Ann \"the\" {admin}", "quantity": 3, "express": true, "tag": "red"})),
            SECOND,
        )
        .await
        .unwrap();
    assert_eq!(result.status, 201);
    assert_eq!(
        result.data,
        json!({
            "customer": "Ann \"the\" {admin}",
            "quantity": 3,
            "express": true,
            "tags": ["red", "fixed"],
            "literal": "x {customer}",
            "nested": {"count": 3}
        })
    );
}

#[tokio::test]
async fn header_secrets_come_from_the_environment_and_stay_out_of_answers() {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let app = Router::new()
        .route(
            "/me",
            get(
                |State(seen): State<Arc<Mutex<Vec<String>>>>, headers: HeaderMap| async move {
                    let auth = headers[header::AUTHORIZATION].to_str().unwrap().to_owned();
                    seen.lock().unwrap().push(auth.clone());
                    Json(json!({"echo": auth, "user": "ann"}))
                },
            ),
        )
        .with_state(Arc::clone(&seen));
    let base = serve(app).await;
    std::env::set_var("SWITCHYARD_HTTP_TEST_TOKEN", "s3cr3t-t0ken");
    let (source, spec) = open(
        &base,
        vec![
            json!({
                "id": "me",
                "endpoint_template": "/me",
                "headers": {"Authorization": "Bearer ${SWITCHYARD_HTTP_TEST_TOKEN}"},
            }),
            json!({
                "id": "me_unset",
                "endpoint_template": "/me",
                "headers": {"Authorization": "Bearer ${SWITCHYARD_HTTP_TEST_NEVER_SET}"},
            }),
        ],
    );
    let result = source
        .call(find(&spec, "me"), &Map::new(), SECOND)
        .await
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), vec!["Bearer s3cr3t-t0ken"]);
    assert_eq!(
        result.data,
        json!({"echo": "Bearer [redacted]", "user": "ann"})
    );

    let error = source
        .call(find(&spec, "me_unset"), &Map::new(), SECOND)
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "datasource `api`: template `me_unset`: header `Authorization`: the environment variable SWITCHYARD_HTTP_TEST_NEVER_SET is not set"
    );
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "nothing sent without the secret"
    );
}

#[tokio::test]
async fn server_errors_are_retried_and_other_client_errors_are_not() {
    let hits = Arc::new(AtomicUsize::new(0));
    let app = Router::new()
        .route(
            "/flaky",
            get(|State(hits): State<Arc<AtomicUsize>>| async move {
                let n = hits.fetch_add(1, Ordering::SeqCst) + 1;
                if n <= 2 {
                    (StatusCode::SERVICE_UNAVAILABLE, "busy").into_response()
                } else {
                    Json(json!({"ok": true, "attempt": n})).into_response()
                }
            }),
        )
        .route(
            "/missing",
            get(|State(hits): State<Arc<AtomicUsize>>| async move {
                hits.fetch_add(100, Ordering::SeqCst);
                StatusCode::NOT_FOUND
            }),
        )
        .with_state(Arc::clone(&hits));
    let base = serve(app).await;
    let (source, spec) = open(
        &base,
        vec![
            json!({"id": "flaky", "endpoint_template": "/flaky"}),
            json!({"id": "missing", "endpoint_template": "/missing"}),
        ],
    );
    let result = source
        .call(find(&spec, "flaky"), &Map::new(), GENEROUS)
        .await
        .unwrap();
    assert_eq!(result.data, json!({"ok": true, "attempt": 3}));
    assert_eq!(hits.load(Ordering::SeqCst), 3);

    let error = source
        .call(find(&spec, "missing"), &Map::new(), GENEROUS)
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "datasource `api`: template `missing`: HTTP 404 Not Found"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 103, "a 404 is asked once");
}

#[tokio::test]
async fn too_many_requests_exhausts_the_retries() {
    let hits = Arc::new(AtomicUsize::new(0));
    let app = Router::new()
        .route(
            "/limited",
            get(|State(hits): State<Arc<AtomicUsize>>| async move {
                hits.fetch_add(1, Ordering::SeqCst);
                StatusCode::TOO_MANY_REQUESTS
            }),
        )
        .with_state(Arc::clone(&hits));
    let base = serve(app).await;
    let (source, spec) = open(
        &base,
        vec![json!({"id": "limited", "endpoint_template": "/limited"})],
    );
    let limited = find(&spec, "limited");
    let started = Instant::now();
    let error = source
        .call(limited, &Map::new(), GENEROUS)
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "datasource `api`: template `limited`: HTTP 429 Too Many Requests (after 3 attempts)"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 3, "one try and two retries");
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "backoff 100 + 200 ms"
    );

    // A retry whose pause would end past the deadline is not made: 100 ms fits in 250 ms,
    // the second pause of 200 ms does not.
    hits.store(0, Ordering::SeqCst);
    let error = source
        .call(limited, &Map::new(), Duration::from_millis(250))
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(hits.load(Ordering::SeqCst), 2, "{error}");
    assert!(
        error.ends_with("HTTP 429 Too Many Requests (after 2 attempts)"),
        "{error}"
    );
}

#[tokio::test]
async fn a_slow_server_is_cut_off_at_the_deadline() {
    let app = Router::new().route(
        "/slow",
        get(|| async {
            tokio::time::sleep(Duration::from_secs(3)).await;
            Json(json!({"late": true}))
        }),
    );
    let base = serve(app).await;
    let (source, spec) = open(
        &base,
        vec![json!({"id": "slow", "endpoint_template": "/slow"})],
    );
    let started = Instant::now();
    let error = source
        .call(find(&spec, "slow"), &Map::new(), Duration::from_millis(300))
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "datasource `api`: template `slow`: no complete answer within the deadline of 300 ms"
    );
    assert!(started.elapsed() < Duration::from_millis(1500));

    // The datasource's own limit caps a longer deadline.
    let limited = datasource(
        json!({"connection": {"base_url": base}, "limits": {"max_rows": 10, "timeout_ms": 200}}),
        vec![json!({"id": "slow", "endpoint_template": "/slow"})],
    );
    let error = HttpDatasource::open(&limited)
        .unwrap()
        .call(find(&limited, "slow"), &Map::new(), GENEROUS)
        .await
        .unwrap_err()
        .to_string();
    assert!(error.ends_with("within the deadline of 200 ms"), "{error}");
}

#[tokio::test]
async fn responses_are_capped_at_max_response_bytes() {
    fn raw(body: String) -> impl IntoResponse {
        ([(header::CONTENT_TYPE, "application/json")], body)
    }
    let app = Router::new()
        .route(
            "/big",
            get(|| async { raw(serde_json::to_string(&(0..100).collect::<Vec<_>>()).unwrap()) }),
        )
        .route(
            "/padded",
            get(|| async { raw(format!("{{\"a\":1}}{}", " ".repeat(500))) }),
        )
        .route(
            "/fits",
            get(|| async { raw(format!("{{\"k\":\"{}\"}}", "x".repeat(56))) }),
        );
    let base = serve(app).await;
    let spec = datasource(
        json!({"connection": {"base_url": base, "max_response_bytes": "64"}}),
        vec![
            json!({"id": "big", "endpoint_template": "/big"}),
            json!({"id": "padded", "endpoint_template": "/padded"}),
            json!({"id": "fits", "endpoint_template": "/fits"}),
        ],
    );
    let source = HttpDatasource::open(&spec).unwrap();

    let error = source
        .call(find(&spec, "big"), &Map::new(), SECOND)
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("the response exceeded 64 bytes"), "{error}");

    let cut = source
        .call(find(&spec, "padded"), &Map::new(), SECOND)
        .await
        .unwrap();
    assert_eq!((cut.data, cut.truncated), (json!({"a": 1}), true));

    let whole = source
        .call(find(&spec, "fits"), &Map::new(), SECOND)
        .await
        .unwrap();
    assert_eq!(whole.data["k"].as_str().unwrap().len(), 56);
    assert!(!whole.truncated, "exactly 64 bytes is not cut");
}

#[test]
fn endpoints_outside_the_allowed_hosts_are_refused_at_open() {
    let refused = |templates: Vec<Value>, allowed: Value| {
        let spec = datasource(
            json!({"connection": {"base_url": "http://127.0.0.1:9/api"}, "allowed_hosts": allowed}),
            templates,
        );
        HttpDatasource::open(&spec).err().map(|e| e.to_string())
    };
    let fine = json!({"id": "fine", "endpoint_template": "/x"});

    let error = refused(
        vec![
            fine.clone(),
            json!({"id": "leaky", "endpoint_template": "http://evil.example.com/steal"}),
        ],
        json!([]),
    )
    .unwrap();
    assert_eq!(
        error,
        "datasource `api`: template `leaky`: endpoint host `evil.example.com` is neither the base_url's host nor in allowed_hosts"
    );

    // Listed hosts, the base_url's host (absolute too) and wildcard subdomains are allowed.
    assert_eq!(
        refused(
            vec![
                fine.clone(),
                json!({"id": "partner", "endpoint_template": "https://api.partner.test/v1/{id}", "parameters": [{"name": "id"}]}),
                json!({"id": "same", "endpoint_template": "http://127.0.0.1:9/other"}),
                json!({"id": "sub", "endpoint_template": "https://eu.cdn.test/x"}),
            ],
            json!(["api.partner.test", "*.cdn.test"]),
        ),
        None
    );

    let error = refused(
        vec![json!({"id": "port", "endpoint_template": "http://127.0.0.1:10/x"})],
        json!([]),
    )
    .unwrap();
    assert!(error.contains("template `port`"), "{error}");

    let error = refused(
        vec![
            json!({"id": "tenant", "endpoint_template": "http://{tenant}.example.com/x", "parameters": [{"name": "tenant"}]}),
        ],
        json!(["*.example.com"]),
    )
    .unwrap();
    assert!(
        error.contains("template `tenant`") && error.contains("only fill the path"),
        "{error}"
    );

    let error = refused(
        vec![json!({"id": "file", "endpoint_template": "file:///etc/passwd"})],
        json!([]),
    )
    .unwrap();
    assert!(
        error.contains("template `file`") && error.contains("only http and https"),
        "{error}"
    );

    let error = refused(
        vec![json!({"id": "undeclared", "endpoint_template": "/users/{user}"})],
        json!([]),
    )
    .unwrap();
    assert!(
        error.contains("`{user}`, which is not one of its parameters"),
        "{error}"
    );

    let error = refused(
        vec![
            json!({"id": "mapped", "endpoint_template": "/x", "response_mapping": {"itemz": "a"}}),
        ],
        json!([]),
    )
    .unwrap();
    assert!(
        error.contains("response_mapping.itemz is unknown"),
        "{error}"
    );
}

#[test]
fn the_base_url_may_come_from_the_environment() {
    std::env::set_var("SWITCHYARD_HTTP_TEST_BASE", "http://127.0.0.1:9");
    let spec = datasource(
        json!({"connection": {"base_url_env": "SWITCHYARD_HTTP_TEST_BASE"}}),
        vec![json!({"id": "x", "endpoint_template": "/x"})],
    );
    assert!(HttpDatasource::open(&spec).is_ok());
    let spec = datasource(
        json!({"connection": {"base_url_env": "SWITCHYARD_HTTP_TEST_BASE_UNSET"}}),
        vec![json!({"id": "x", "endpoint_template": "/x"})],
    );
    assert_eq!(
        HttpDatasource::open(&spec).err().unwrap().to_string(),
        "datasource `api`: connection.base_url_env: the variable SWITCHYARD_HTTP_TEST_BASE_UNSET is not set"
    );
    let spec = datasource(
        json!({"connection": {"base_url": "ftp://127.0.0.1/"}}),
        vec![json!({"id": "x", "endpoint_template": "/x"})],
    );
    assert!(HttpDatasource::open(&spec)
        .err()
        .unwrap()
        .to_string()
        .contains("only http and https"));
}

const USER_QUERY: &str = "query($id: ID!) { user(id: $id) { id name } }";

#[tokio::test]
async fn graphql_returns_data_and_reports_errors() {
    let received: Arc<Mutex<Vec<Value>>> = Arc::default();
    let app = Router::new()
        .route(
            "/graphql",
            post(
                |State(received): State<Arc<Mutex<Vec<Value>>>>, Json(request): Json<Value>| async move {
                    received.lock().unwrap().push(request.clone());
                    let id = &request["variables"]["id"];
                    if id == "42" {
                        Json(json!({"data": {"user": {"id": "42", "name": "Ann"}}}))
                    } else {
                        Json(json!({
                            "data": null,
                            "errors": [{"message": format!("user {id} not found")}, {"message": "second problem"}]
                        }))
                    }
                },
            ),
        )
        .with_state(Arc::clone(&received));
    let base = serve(app).await;
    let spec = datasource(
        json!({"kind": "graphql", "connection": {"base_url": format!("{base}/graphql")}}),
        vec![
            json!({
                "id": "user",
                "graphql_template": USER_QUERY,
                "parameters": [{"name": "user_id"}],
                "variables": {"id": "{user_id}"},
            }),
            json!({
                "id": "user_all_params",
                "graphql_template": USER_QUERY,
                "parameters": [{"name": "user_id"}, {"name": "limit"}],
            }),
        ],
    );
    let source = HttpDatasource::open(&spec).unwrap();
    let result = source
        .call(
            find(&spec, "user"),
            &params(json!({"user_id": "42"})),
            SECOND,
        )
        .await
        .unwrap();
    assert_eq!(result.data, json!({"user": {"id": "42", "name": "Ann"}}));
    assert_eq!(
        received.lock().unwrap()[0],
        json!({"query": USER_QUERY, "variables": {"id": "42"}})
    );

    let error = source
        .call(
            find(&spec, "user"),
            &params(json!({"user_id": "7"})),
            SECOND,
        )
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "datasource `api`: template `user`: GraphQL errors: user \"7\" not found; second problem"
    );

    // Without `variables`, every parameter is sent, typed.
    let _ = source
        .call(
            find(&spec, "user_all_params"),
            &params(json!({"user_id": "9", "limit": 3})),
            SECOND,
        )
        .await;
    assert_eq!(
        received.lock().unwrap()[2]["variables"],
        json!({"user_id": "9", "limit": 3})
    );
}

#[tokio::test]
async fn response_mapping_picks_items_and_fields() {
    let app = Router::new().route(
        "/items",
        get(|| async {
            Json(json!({
                "data": {"items": [
                    {"id": 1, "name": "a", "meta": {"owner": "x"}},
                    {"id": 2, "name": "b", "meta": {"owner": "y"}},
                    {"id": 3, "name": "c", "meta": {}}
                ]},
                "total": 3
            }))
        }),
    );
    let base = serve(app).await;
    let templates = vec![
        json!({"id": "listed", "endpoint_template": "/items",
               "response_mapping": {"items_path": "data.items", "fields": ["id", "name"]}}),
        json!({"id": "named", "endpoint_template": "/items",
               "response_mapping": {"items_path": "data.items", "fields": {"who": "meta.owner"}}}),
        json!({"id": "object", "endpoint_template": "/items",
               "response_mapping": {"fields": {"count": "total", "first": "data.items.0.name"}}}),
        json!({"id": "absent", "endpoint_template": "/items",
               "response_mapping": {"items_path": "data.missing"}}),
    ];
    let (source, spec) = open(&base, templates.clone());
    let nothing = Map::new();
    let call = |id: &'static str| source.call(find(&spec, id), &nothing, SECOND);

    let listed = call("listed").await.unwrap();
    assert_eq!(
        listed.data,
        json!([{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": "c"}])
    );
    assert!(!listed.truncated);
    assert_eq!(
        call("named").await.unwrap().data,
        json!([{"who": "x"}, {"who": "y"}, {"who": null}])
    );
    assert_eq!(
        call("object").await.unwrap().data,
        json!({"count": 3, "first": "a"})
    );
    let error = call("absent").await.unwrap_err().to_string();
    assert!(
        error.contains("response_mapping.items_path `data.missing` is not in the response"),
        "{error}"
    );

    // limits.max_rows caps the returned list.
    let capped = datasource(
        json!({"connection": {"base_url": base}, "limits": {"max_rows": 2, "timeout_ms": 5000}}),
        templates,
    );
    let result = HttpDatasource::open(&capped)
        .unwrap()
        .call(find(&capped, "listed"), &Map::new(), SECOND)
        .await
        .unwrap();
    assert_eq!(
        (result.data, result.truncated),
        (
            json!([{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]),
            true
        )
    );
}
