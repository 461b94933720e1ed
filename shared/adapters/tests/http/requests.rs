//! What the adapter sends: path and query values encoded, never spliced; typed JSON bodies;
//! header secrets from the environment, kept out of answers.

use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Map, Value};
use switchyard_adapters::AdapterError;

use crate::setup::{find, open, params, serve, SECOND};

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
        .call(orders, &params(json!({"user_id": hostile})), "r1", SECOND)
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
            "r1",
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
        .call(orders, &params(json!({"user_id": ".."})), "r1", SECOND)
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
            "r1",
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
        .call(find(&spec, "me"), &Map::new(), "r1", SECOND)
        .await
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), vec!["Bearer s3cr3t-t0ken"]);
    assert_eq!(
        result.data,
        json!({"echo": "Bearer [redacted]", "user": "ann"})
    );

    let error = source
        .call(find(&spec, "me_unset"), &Map::new(), "r1", SECOND)
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

/// A request with a secret header follows a redirect within its origin only: to another
/// allowed host (or port) it would carry the secret there, reqwest dropping only
/// `Authorization` and cookies; a request without secrets still follows.
#[tokio::test]
async fn secret_headers_follow_no_redirect_to_another_origin() {
    let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let other = Router::new()
        .route(
            "/landing",
            get(
                |State(seen): State<Arc<Mutex<Vec<Option<String>>>>>, headers: HeaderMap| async move {
                    let key = headers.get("x-api-key").map(|v| v.to_str().unwrap().to_owned());
                    seen.lock().unwrap().push(key);
                    Json(json!({"landed": true}))
                },
            ),
        )
        .with_state(Arc::clone(&seen));
    let other_base = serve(other).await;
    let target = format!("{other_base}/landing");
    let app = Router::new()
        .route(
            "/away",
            get(move || {
                let target = target.clone();
                async move { (StatusCode::FOUND, [(header::LOCATION, target)]) }
            }),
        )
        .route(
            "/here",
            get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/there")]) }),
        )
        .route("/there", get(|| async { Json(json!({"stayed": true})) }));
    let base = serve(app).await;
    std::env::set_var("SWITCHYARD_HTTP_TEST_KEY", "k3y-value");
    // Plain http: a bare `127.0.0.1:port` entry would mean https.
    let datasource = crate::setup::datasource(
        json!({"connection": {"base_url": base}, "allowed_hosts": [other_base]}),
        vec![
            json!({"id": "keyed", "endpoint_template": "/away",
                   "headers": {"x-api-key": "${SWITCHYARD_HTTP_TEST_KEY}"}}),
            json!({"id": "keyed_here", "endpoint_template": "/here",
                   "headers": {"x-api-key": "${SWITCHYARD_HTTP_TEST_KEY}"}}),
            json!({"id": "plain", "endpoint_template": "/away"}),
        ],
    );
    let source = switchyard_adapters::http::HttpDatasource::open(&datasource).unwrap();

    let error = source
        .call(find(&datasource, "keyed"), &Map::new(), "r1", SECOND)
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("another origin"), "{error}");
    assert!(!error.contains("k3y-value"), "{error}");
    assert!(
        seen.lock().unwrap().is_empty(),
        "the secret reached another origin"
    );

    let stayed = source
        .call(find(&datasource, "keyed_here"), &Map::new(), "r1", SECOND)
        .await
        .unwrap();
    assert_eq!(stayed.data, json!({"stayed": true}));

    let landed = source
        .call(find(&datasource, "plain"), &Map::new(), "r1", SECOND)
        .await
        .unwrap();
    assert_eq!(landed.data, json!({"landed": true}));
    assert_eq!(*seen.lock().unwrap(), vec![None], "followed, without a key");
}
