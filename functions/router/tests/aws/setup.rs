//! Shared set-up: the emulators' endpoints and clients, fresh buckets and tables, the demo
//! catalog's index built once with the real model, and requests through the router's
//! handler.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
};
use lambda_http::Body;
use serde_json::{json, Value};
use switchyard_catalog::template::Catalog;
use switchyard_core::config::Config;
use switchyard_embed::MiniLmEmbedder;
use switchyard_index::index::Index;
use switchyard_router::{handle, Clients};

pub fn endpoint(variable: &str) -> String {
    std::env::var(variable).unwrap_or_else(|_| {
        panic!("{variable} is not set: start the emulators with ./infra/scripts/aws-local.sh start and export what `aws-local.sh env` prints (./infra/scripts/test.sh does both)")
    })
}

pub async fn sdk(url: &str) -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(url)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_s3::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .load()
        .await
}

pub async fn clients(moto: &str, lambda: &str) -> Clients {
    let moto_config = sdk(moto).await;
    Clients {
        s3: switchyard_s3::s3_client(&moto_config),
        dynamodb: aws_sdk_dynamodb::Client::new(&moto_config),
        lambda: aws_sdk_lambda::Client::new(&sdk(lambda).await),
    }
}

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The real model, loaded once.
pub fn embedder() -> Arc<MiniLmEmbedder> {
    static MODEL: OnceLock<Arc<MiniLmEmbedder>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let config = Config::default();
            Arc::new(MiniLmEmbedder::from_config(&config.embedding).expect("the model"))
        })
        .clone()
}

/// The demo catalog's index, built once with the real model.
pub fn demo_index_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let catalog = Catalog::load(&root().join("templates/demo")).unwrap();
        Index::build(
            catalog,
            embedder().as_ref(),
            &Config::default().router(),
            &|_, _| {},
        )
        .unwrap()
        .to_bytes()
        .unwrap()
    })
}

/// A fresh name per test, so tests share the emulator without sharing state.
pub fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

pub async fn create_bucket(s3: &aws_sdk_s3::Client) -> String {
    let bucket = unique("index");
    s3.create_bucket().bucket(&bucket).send().await.unwrap();
    bucket
}

pub async fn create_table(dynamodb: &aws_sdk_dynamodb::Client, key: &str) -> String {
    let table = unique(key);
    dynamodb
        .create_table()
        .table_name(&table)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name(key)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name(key)
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await
        .unwrap();
    table
}

/// `POST /v1/query` with `body`, as an API Gateway HTTP API (v2) event through the
/// router's handler: the status and the JSON answer.
pub async fn query(app: &axum::Router, body: Value) -> (u16, Value) {
    send(app, "POST", "/v1/query", Some(body)).await
}

/// An API Gateway (HTTP API) event through the router Lambda's handler.
pub async fn send(
    app: &axum::Router,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    send_with(app, method, path, body, json!({})).await
}

/// [`send`] with these headers too (an API key, `A2A-Version`).
pub async fn send_with(
    app: &axum::Router,
    method: &str,
    path: &str,
    body: Option<Value>,
    headers: Value,
) -> (u16, Value) {
    let route = format!("{method} {path}");
    let mut all = json!({"content-type": "application/json"});
    for (name, value) in headers.as_object().into_iter().flatten() {
        all[name] = value.clone();
    }
    let event = json!({
        "version": "2.0", "routeKey": route, "rawPath": path, "rawQueryString": "",
        "headers": all,
        "requestContext": {"accountId": "123456789012", "apiId": "api", "domainName": "example.com",
            "domainPrefix": "example", "http": {"method": method, "path": path, "protocol": "HTTP/1.1",
            "sourceIp": "127.0.0.1", "userAgent": "test"}, "requestId": "r1", "routeKey": route,
            "stage": "$default", "time": "21/Nov/2026:00:00:00 +0000", "timeEpoch": 0},
        "body": body.map(|b| b.to_string()),
        "isBase64Encoded": false
    });
    let response = handle(
        app.clone(),
        lambda_http::request::from_str(&event.to_string()).unwrap(),
    )
    .await;
    let body = match response.body() {
        Body::Text(text) => serde_json::from_str(text).unwrap(),
        other => panic!("a text body, got {other:?}"),
    };
    (response.status().as_u16(), body)
}

/// Every adapter function is the `switchyard-adapter` binary under `cargo lambda watch`.
pub fn adapter_functions(name: &str) -> Option<String> {
    name.starts_with("SWITCHYARD_ADAPTER_FUNCTION_")
        .then(|| "switchyard-adapter".to_owned())
}
