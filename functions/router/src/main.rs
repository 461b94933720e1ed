//! The router Lambda. At cold start, in `main`: configuration, the embedding model and the
//! index artifact are loaded and verified once, then moved into the handler, which is the
//! same transport-independent API that `switchyard serve` runs.
//!
//! Environment: `SWITCHYARD_INDEX` (artifact path; the S3 source arrives with the AWS
//! issue), `SWITCHYARD_MODEL_DIR` (the model layer), `SWITCHYARD__…` configuration.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use lambda_http::{service_fn, Body, Request, Response};
use switchyard_adapters::local::LlmFeatures;
use switchyard_adapters::LocalAdapters;
use switchyard_core::api::{Api, ApiRequest};
use switchyard_core::config::Config;
use switchyard_core::embed::MiniLmEmbedder;
use switchyard_core::index::Index;
use switchyard_core::invoker::AdapterInvoker;
use switchyard_core::router::{Access, Router};

/// Turn an API Gateway request into the API's request, and its answer into a response.
async fn handle<I: AdapterInvoker>(
    api: &Api<I>,
    event: Request,
) -> Result<Response<Body>, lambda_http::Error> {
    let body = match event.body() {
        Body::Empty => Vec::new(),
        Body::Text(text) => text.as_bytes().to_vec(),
        Body::Binary(bytes) => bytes.clone(),
        _ => Vec::new(),
    };
    let answer = api
        .handle(ApiRequest {
            method: event.method().to_string(),
            path: event.uri().path().to_owned(),
            body,
            // Callers' identities map to datasources with the AWS issue; until then all.
            access: Access::All,
        })
        .await;
    Ok(Response::builder()
        .status(answer.status)
        .header("content-type", "application/json")
        .body(Body::Text(answer.body.to_string()))?)
}

async fn load_api() -> anyhow::Result<Api<LocalAdapters>> {
    let config = Config::from_env(None)?;
    config.embedding.apply_threads();
    let index_path = PathBuf::from(
        std::env::var_os("SWITCHYARD_INDEX")
            .context("SWITCHYARD_INDEX must name the index artifact")?,
    );
    let index = Index::read(&index_path)?;
    let model_dir = config.embedding.resolved_model_dir();
    let embedder = Arc::new(MiniLmEmbedder::load(
        &model_dir,
        config.embedding.batch_size,
    )?);
    // Adapters run in-process until the per-datasource adapter functions exist; SQLite
    // seeds are read from SWITCHYARD_TEMPLATES when set.
    let templates = std::env::var_os("SWITCHYARD_TEMPLATES").map(PathBuf::from);
    let llm = LlmFeatures::from_config(&config.llm)?;
    let invoker = LocalAdapters::open(index.catalog.clone(), templates.as_deref())
        .await?
        .with_llm(llm);
    let router = Router::new(index, config, embedder, &index_path.display().to_string())?;
    Ok(Api::new(router, invoker))
}

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    tracing_subscriber::fmt()
        .json()
        .with_current_span(false)
        .without_time()
        .init();
    let api = Arc::new(load_api().await.map_err(|e| {
        tracing::error!(error = %format!("{e:#}"), "cold start failed");
        e
    })?);
    lambda_http::run(service_fn(move |event: Request| {
        let api = api.clone();
        async move { handle(&api, event).await }
    }))
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An API Gateway HTTP API (v2) event for `POST /v1/route`.
    const EVENT: &str = r#"{
        "version": "2.0", "routeKey": "POST /v1/route", "rawPath": "/v1/route", "rawQueryString": "",
        "headers": {"content-type": "application/json"},
        "requestContext": {"accountId": "123456789012", "apiId": "api", "domainName": "example.com",
            "domainPrefix": "example", "http": {"method": "POST", "path": "/v1/route", "protocol": "HTTP/1.1",
            "sourceIp": "127.0.0.1", "userAgent": "test"}, "requestId": "r1", "routeKey": "POST /v1/route",
            "stage": "$default", "time": "21/Nov/2026:00:00:00 +0000", "timeEpoch": 0},
        "body": "{\"query\": \"what is the balance in my checking account\"}",
        "isBase64Encoded": false
    }"#;

    #[tokio::test]
    async fn api_gateway_event_is_routed_by_the_shared_handler() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let config = Config::default();
        let embedder =
            Arc::new(MiniLmEmbedder::load(&config.embedding.resolved_model_dir(), 32).unwrap());
        let catalog =
            switchyard_core::template::Catalog::load(&root.join("templates/clinc150")).unwrap();
        let index = Index::build(catalog, embedder.as_ref(), &config.index, &|_, _| {}).unwrap();
        let invoker = LocalAdapters::open(index.catalog.clone(), None)
            .await
            .unwrap();
        let api = Api::new(
            Router::new(index, config, embedder, "test").unwrap(),
            invoker,
        );

        let request = lambda_http::request::from_str(EVENT).unwrap();
        let response = handle(&api, request).await.unwrap();
        assert_eq!(response.status(), 200);
        let Body::Text(text) = response.body() else {
            panic!("a text body")
        };
        let report: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(report["routing_decision"]["would_route_to"], "banking");
        assert_eq!(report["routing_decision"]["selected_template"], "balance");
    }
}
