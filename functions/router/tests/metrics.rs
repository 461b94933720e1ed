//! Each request's metrics leave as CloudWatch Embedded Metric Format: the recorder the
//! router's `main` installs, flushed after a request through the real handler.

use std::path::Path;

use serde_json::{json, Value};
use switchyard_catalog::template::Catalog;
use switchyard_core::config::Config;
use switchyard_embed::MiniLmEmbedder;
use switchyard_index::index::Index;
use switchyard_router::{app, cold_start, handle, Clients, Settings};
use switchyard_s3::IndexLocation;

#[tokio::test]
async fn a_request_flushes_emf_with_stage_latencies_and_the_datasource() {
    let metrics = metrics_cloudwatch_embedded::Builder::new()
        .cloudwatch_namespace("Switchyard")
        .with_dimension("Service", "router")
        .init()
        .unwrap();

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let config = Config::default();
    let embedder = MiniLmEmbedder::from_config(&config.embedding).unwrap();
    let catalog = Catalog::load(&root.join("templates/demo")).unwrap();
    let index = Index::build(catalog, &embedder, &config.router(), &|_, _| {}).unwrap();
    let file = tempfile::NamedTempFile::new().unwrap();
    index.write(file.path()).unwrap();

    // No AWS is reached: the index is a file, sessions stay in memory and no datasource
    // has an adapter function (the query answers 501, its metrics are still recorded).
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url("http://127.0.0.1:9")
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_s3::config::Credentials::new(
            "t", "t", None, None, "t",
        ))
        .load()
        .await;
    let clients = Clients {
        s3: aws_sdk_s3::Client::new(&sdk),
        dynamodb: aws_sdk_dynamodb::Client::new(&sdk),
        lambda: aws_sdk_lambda::Client::new(&sdk),
    };
    let settings = Settings {
        index: IndexLocation::File(file.path().to_owned()),
        sessions_table: None,
        rerank_cache_table: None,
        feedback_table: None,
        workflow_table: None,
        topics_table: None,
        templates: None,
    };
    let (api, _) = cold_start(&settings, config, clients, |_| None)
        .await
        .unwrap();
    let event = json!({
        "version": "2.0", "routeKey": "POST /v1/query", "rawPath": "/v1/query", "rawQueryString": "",
        "headers": {},
        "requestContext": {"accountId": "1", "apiId": "api", "domainName": "example.com",
            "domainPrefix": "example", "http": {"method": "POST", "path": "/v1/query", "protocol": "HTTP/1.1",
            "sourceIp": "127.0.0.1", "userAgent": "test"}, "requestId": "r1", "routeKey": "POST /v1/query",
            "stage": "$default", "time": "21/Nov/2026:00:00:00 +0000", "timeEpoch": 0},
        "body": json!({"query": "What is 15% of 200?"}).to_string(),
        "isBase64Encoded": false
    });
    let response = handle(
        app(api),
        lambda_http::request::from_str(&event.to_string()).unwrap(),
    )
    .await;
    assert_eq!(response.status(), 501);

    let mut out = Vec::new();
    metrics
        .set_property("RequestId", "r1")
        .flush(&mut out)
        .unwrap();
    let documents: Vec<Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let names = |document: &Value| -> Vec<String> {
        document["_aws"]["CloudWatchMetrics"][0]["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["Name"].as_str().unwrap().to_owned())
            .collect()
    };
    let all: Vec<String> = documents.iter().flat_map(names).collect();
    for metric in [
        "RequestLatencyMs",
        "EmbedLatencyMs",
        "SearchLatencyMs",
        "RouteLatencyMs",
        "Confidence",
        "Requests",
        "AdapterLatencyMs",
        "AdapterErrors",
    ] {
        assert!(
            all.iter().any(|n| n == metric),
            "{metric} missing from {documents:?}"
        );
    }
    assert!(documents
        .iter()
        .all(|d| d["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "Switchyard"));
    assert!(documents
        .iter()
        .all(|d| d["Service"] == "router" && d["RequestId"] == "r1"));
    // Per-datasource metrics carry the datasource as a dimension.
    assert!(documents
        .iter()
        .any(|d| d["Datasource"] == "tools" && names(d).contains(&"AdapterErrors".to_owned())));
}
