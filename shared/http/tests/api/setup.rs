//! Shared set-up: the router and the app on the small catalog, one request as an API
//! Gateway event, and the callers' identities.

use std::sync::Arc;

use serde_json::{json, Value};
use switchyard_adapters::respond::IntentInvoker;
use switchyard_catalog::auth::Identity;
use switchyard_catalog::template::Catalog;
use switchyard_core::config::Config;
use switchyard_core::service::Service;
use switchyard_index::index::Index;
use switchyard_routing::router::Router;
use switchyard_routing::session::MemorySessionStore;
use tower::ServiceExt;

use crate::common;

pub fn config_with(pairs: &[(&str, &str)]) -> Config {
    Config::load(
        None,
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())),
    )
    .unwrap()
}

pub fn router_for(dir: &std::path::Path, config: Config) -> Router {
    let catalog = Catalog::load(dir).unwrap();
    let embedder = common::embedder();
    let index = Index::build(catalog, embedder.as_ref(), &config.router(), &|_, _| {}).unwrap();
    Router::new(index, config.router(), embedder, "test").unwrap()
}

pub fn small_router(config: Config) -> Router {
    router_for(common::small_catalog().path(), config)
}

pub type TestService = Service;
pub type TestApi = Arc<TestService>;

pub fn service(config: Config) -> TestService {
    let sessions = MemorySessionStore::new(config.sessions.clone());
    let router = small_router(config.clone());
    let invoker = IntentInvoker::new(router.index().catalog.clone());
    Service::new(config, router, Arc::new(invoker), Arc::new(sessions))
}

pub fn api(config: Config) -> TestApi {
    Arc::new(service(config))
}

pub struct ApiResponse {
    pub status: u16,
    pub body: Value,
}

pub fn call(api: &Arc<Service>, method: &str, path: &str, body: &str) -> ApiResponse {
    call_as(api, method, path, body, Identity::default())
}

/// One request as an API Gateway (HTTP API v2) event: the key as `x-api-key`, the claims
/// as the JWT authorizer's.
pub fn call_as(
    api: &Arc<Service>,
    method: &str,
    path: &str,
    body: &str,
    identity: Identity,
) -> ApiResponse {
    send(
        &switchyard_http::app(api.clone()),
        method,
        path,
        body,
        identity,
    )
}

/// One request, as [`call_as`] sends it, through an app already built: what one request
/// leaves behind shows in the next one's answer.
pub fn send(
    app: &axum::Router,
    method: &str,
    path: &str,
    body: &str,
    identity: Identity,
) -> ApiResponse {
    // MCP's streamable HTTP wants both accepts, A2A its version; the /v1 endpoints ignore them.
    let mut headers = json!({"content-type": "application/json",
        "accept": "application/json, text/event-stream", "a2a-version": "1.0"});
    if let Some(key) = &identity.api_key {
        headers["x-api-key"] = json!(key);
    }
    let mut context = json!({"accountId": "1", "apiId": "api", "domainName": "example.com",
        "domainPrefix": "example", "http": {"method": method, "path": path, "protocol": "HTTP/1.1",
        "sourceIp": "127.0.0.1", "userAgent": "test"}, "requestId": "r1", "routeKey": "$default",
        "stage": "$default", "time": "21/Nov/2026:00:00:00 +0000", "timeEpoch": 0});
    if let Some(claims) = &identity.claims {
        context["authorizer"] = json!({"jwt": {"claims": claims, "scopes": null}});
    }
    let event = json!({
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": "",
        "headers": headers, "requestContext": context, "body": body, "isBase64Encoded": false
    });
    let request = lambda_http::request::from_str(&event.to_string()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let response = app.clone().oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        ApiResponse { status, body }
    })
}

pub fn assert_bad_request(response: &ApiResponse, field: &str) {
    assert_eq!(response.status, 400, "{}", response.body);
    assert_eq!(response.body["error"]["field"], field, "{}", response.body);
    let message = response.body["error"]["message"].as_str().unwrap();
    assert!(message.contains(field), "{message}");
}

pub fn with_key(key: &str) -> Identity {
    Identity {
        api_key: Some(key.into()),
        claims: None,
    }
}
