//! What comes back: GraphQL data and errors, and response mapping picking items and fields.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Map, Value};
use switchyard_adapters::http::HttpDatasource;

use crate::setup::{datasource, find, open, params, serve, SECOND};

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
            "r1",
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
            "r1",
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
            "r1",
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
    let call = |id: &'static str| source.call(find(&spec, id), &nothing, "r1", SECOND);

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
        .call(find(&capped, "listed"), &Map::new(), "r1", SECOND)
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
