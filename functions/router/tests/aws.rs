//! The router Lambda against real protocol endpoints on 127.0.0.1: `moto_server` for S3 and
//! DynamoDB (`SWITCHYARD_TEST_MOTO_URL`) and `cargo lambda watch` running the adapter
//! binary (`SWITCHYARD_TEST_LAMBDA_URL`); `./infra/scripts/aws-local.sh start` starts both
//! and `./infra/scripts/test.sh` sets the variables. Failure injection (a Lambda endpoint
//! that stalls or fails, a DynamoDB that is not there) uses small servers of its own.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType,
};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::post;
use lambda_http::Body;
use serde_json::{json, Value};
use switchyard_adapters::LocalAdapters;
use switchyard_aws::{
    DynamoFeedbackStore, DynamoRerankCache, DynamoSessionStore, DynamoTopicStore,
    DynamoWorkflowStore, LambdaInvoker, S3IndexStore,
};
use switchyard_core::auth::Access;
use switchyard_core::config::{Config, SessionsConfig};
use switchyard_core::feedback::{Decision, Feedback, FeedbackStore};
use switchyard_core::index::{Index, IndexSource};
use switchyard_core::invoker::{AdapterInvoker, AdapterRequest, AdapterResponse};
use switchyard_core::orchestration::{Checkpoint, TaskState, TaskStatus, WorkflowStore};
use switchyard_core::rerank_cache::{CachedScores, RerankCache};
use switchyard_core::router::{Outcome, Router};
use switchyard_core::service::{unix_now, Answer, Question, Service};
use switchyard_core::session::{MemorySessionStore, SessionStore, Turn, TurnOutcome};
use switchyard_core::template::Catalog;
use switchyard_core::topics::{TopicStore, Topics};
use switchyard_core::Error;
use switchyard_embed::MiniLmEmbedder;
use switchyard_router::{app, cold_start, handle, Clients, IndexLocation, Settings};

fn endpoint(variable: &str) -> String {
    std::env::var(variable).unwrap_or_else(|_| {
        panic!("{variable} is not set: start the emulators with ./infra/scripts/aws-local.sh start and export what `aws-local.sh env` prints (./infra/scripts/test.sh does both)")
    })
}

async fn sdk(url: &str) -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(url)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_s3::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .load()
        .await
}

async fn clients(moto: &str, lambda: &str) -> Clients {
    let moto_config = sdk(moto).await;
    Clients {
        s3: switchyard_aws::s3_client(&moto_config),
        dynamodb: aws_sdk_dynamodb::Client::new(&moto_config),
        lambda: aws_sdk_lambda::Client::new(&sdk(lambda).await),
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The real model, loaded once.
fn embedder() -> Arc<MiniLmEmbedder> {
    static MODEL: OnceLock<Arc<MiniLmEmbedder>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let config = Config::default();
            Arc::new(MiniLmEmbedder::from_config(&config.embedding).expect("the model"))
        })
        .clone()
}

/// The demo catalog's index, built once with the real model.
fn demo_index_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let catalog = Catalog::load(&root().join("templates/demo")).unwrap();
        Index::build(catalog, embedder().as_ref(), &Config::default(), &|_, _| {})
            .unwrap()
            .to_bytes()
            .unwrap()
    })
}

/// A fresh name per test, so tests share the emulator without sharing state.
fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

async fn create_bucket(s3: &aws_sdk_s3::Client) -> String {
    let bucket = unique("index");
    s3.create_bucket().bucket(&bucket).send().await.unwrap();
    bucket
}

async fn create_table(dynamodb: &aws_sdk_dynamodb::Client, key: &str) -> String {
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
async fn query(app: &axum::Router, body: Value) -> (u16, Value) {
    send(app, "POST", "/v1/query", Some(body)).await
}

/// An API Gateway (HTTP API) event through the router Lambda's handler.
async fn send(app: &axum::Router, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let route = format!("{method} {path}");
    let event = json!({
        "version": "2.0", "routeKey": route, "rawPath": path, "rawQueryString": "",
        "headers": {"content-type": "application/json"},
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
fn adapter_functions(name: &str) -> Option<String> {
    name.starts_with("SWITCHYARD_ADAPTER_FUNCTION_")
        .then(|| "switchyard-adapter".to_owned())
}

#[tokio::test]
async fn end_to_end_from_s3_through_lambda_to_the_session_table() {
    let (moto, lambda) = (
        endpoint("SWITCHYARD_TEST_MOTO_URL"),
        endpoint("SWITCHYARD_TEST_LAMBDA_URL"),
    );
    let clients = clients(&moto, &lambda).await;
    let bucket = create_bucket(&clients.s3).await;
    let sessions_table = create_table(&clients.dynamodb, "session_id").await;
    let pointer = S3IndexStore::new(clients.s3.clone(), &bucket, "indexes")
        .push(demo_index_bytes())
        .await
        .unwrap();
    assert!(pointer.key.starts_with("indexes/") && pointer.key.ends_with(".idx"));
    let dynamodb = clients.dynamodb.clone();

    let settings = Settings {
        index: IndexLocation::S3 {
            bucket: bucket.clone(),
            prefix: "indexes".into(),
        },
        sessions_table: Some(sessions_table.clone()),
        rerank_cache_table: None,
        feedback_table: None,
        workflow_table: None,
        topics_table: None,
    };
    let (service, report) = cold_start(&settings, Config::default(), clients, adapter_functions)
        .await
        .unwrap();
    let api = app(service);
    assert_eq!(report.index_bytes, demo_index_bytes().len());
    assert_eq!(
        report.index_origin,
        format!("s3://{bucket}/indexes/current")
    );

    let (status, body) = query(
        &api,
        json!({"query": "How many employees work in Engineering?", "session_id": "e2e-1"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "ok", "{body}");
    assert_eq!(body["content"], "14 employees work in Engineering.");
    assert_eq!(
        body["metadata"]["composite_routing"]["selected_adapter"],
        "hr"
    );
    assert_eq!(
        body["metadata"]["template_id"],
        "employees_count_by_department"
    );
    assert_eq!(body["metadata"]["adapter"]["status"], "ok");
    assert_eq!(body["metadata"]["session"]["saved"], true, "{body}");

    // The turn is in the table.
    let item = dynamodb
        .get_item()
        .table_name(&sessions_table)
        .key("session_id", AttributeValue::S("e2e-1".into()))
        .send()
        .await
        .unwrap()
        .item
        .expect("the session item");
    let turns: Vec<Turn> = serde_json::from_str(item["turns"].as_s().unwrap()).unwrap();
    assert_eq!(turns.len(), 1);
    assert_eq!(
        turns[0].template_id.as_deref(),
        Some("employees_count_by_department")
    );
    assert_eq!(turns[0].parameters["department"], "Engineering");
    assert!(item["expires_at"].as_n().unwrap().parse::<i64>().unwrap() > turns[0].at);

    // A follow-up that leaves the department out takes it from the session.
    let (_, body) = query(
        &api,
        json!({"query": "How many employees work there?", "session_id": "e2e-1"}),
    )
    .await;
    assert_eq!(body["metadata"]["session"]["turns"], 1, "{body}");
    assert_eq!(
        body["metadata"]["template_id"],
        "employees_count_by_department"
    );
    assert_eq!(body["parameters"]["department"], "Engineering", "{body}");
    assert_eq!(body["content"], "14 employees work in Engineering.");

    // A tools question through the same adapter function.
    let (_, body) = query(&api, json!({"query": "What is 15% of 200?"})).await;
    assert_eq!(body["content"], "15% of 200 is **30**", "{body}");

    // Forgetting the session deletes its item; a second delete finds nothing.
    let (status, body) = send(&api, "DELETE", "/v1/sessions/e2e-1", None).await;
    assert_eq!((status, &body["deleted"]), (200, &json!(true)), "{body}");
    let item = dynamodb
        .get_item()
        .table_name(&sessions_table)
        .key("session_id", AttributeValue::S("e2e-1".into()))
        .send()
        .await
        .unwrap()
        .item;
    assert!(item.is_none(), "the session item is gone: {item:?}");
    let (status, body) = send(&api, "DELETE", "/v1/sessions/e2e-1", None).await;
    assert_eq!((status, &body["deleted"]), (200, &json!(false)), "{body}");
    // The next turn starts afresh: nothing to carry.
    let (_, body) = query(
        &api,
        json!({"query": "How many employees work there?", "session_id": "e2e-1"}),
    )
    .await;
    assert_eq!(body["metadata"]["session"]["turns"], 0, "{body}");
}

#[tokio::test]
async fn a_missing_or_corrupt_index_names_the_bucket_and_key() {
    let moto = endpoint("SWITCHYARD_TEST_MOTO_URL");
    let clients = clients(&moto, &moto).await;
    let bucket = create_bucket(&clients.s3).await;
    let store = S3IndexStore::new(clients.s3.clone(), &bucket, "indexes");

    let error = store.fetch().await.unwrap_err().to_string();
    assert_eq!(
        error,
        format!("index s3://{bucket}/indexes/current: no such object")
    );

    // A corrupt artifact is refused before any upload; the pointer does not move.
    let mut corrupt = demo_index_bytes().to_vec();
    let middle = corrupt.len() / 2;
    corrupt[middle] ^= 0xff;
    let error = store.push(&corrupt).await.unwrap_err().to_string();
    assert!(error.contains("the artifact to push"), "{error}");
    assert!(
        store.current().await.is_err(),
        "no pointer after a refused push"
    );

    // An artifact corrupted in the bucket after publishing is caught at load.
    let pointer = store.push(demo_index_bytes()).await.unwrap();
    clients
        .s3
        .put_object()
        .bucket(&bucket)
        .key(&pointer.key)
        .body(corrupt.into())
        .send()
        .await
        .unwrap();
    let settings = Settings {
        index: IndexLocation::S3 {
            bucket: bucket.clone(),
            prefix: "indexes".into(),
        },
        sessions_table: None,
        rerank_cache_table: None,
        feedback_table: None,
        workflow_table: None,
        topics_table: None,
    };
    let error = match cold_start(&settings, Config::default(), clients, adapter_functions).await {
        Ok(_) => panic!("a corrupt index must not load"),
        Err(e) => e.to_string(),
    };
    assert!(
        error.contains(&format!("s3://{bucket}/{}", pointer.key)),
        "{error}"
    );
    assert!(error.contains("does not match the pointer"), "{error}");
}

#[tokio::test]
async fn an_unreachable_session_table_still_answers() {
    let (moto, lambda) = (
        endpoint("SWITCHYARD_TEST_MOTO_URL"),
        endpoint("SWITCHYARD_TEST_LAMBDA_URL"),
    );
    let mut clients = clients(&moto, &lambda).await;
    let bucket = create_bucket(&clients.s3).await;
    S3IndexStore::new(clients.s3.clone(), &bucket, "indexes")
        .push(demo_index_bytes())
        .await
        .unwrap();
    // Nothing listens on port 9 of loopback.
    let nowhere = aws_sdk_dynamodb::config::Builder::from(&sdk("http://127.0.0.1:9").await)
        .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
        .build();
    clients.dynamodb = aws_sdk_dynamodb::Client::from_conf(nowhere);
    let settings = Settings {
        index: IndexLocation::S3 {
            bucket,
            prefix: "indexes".into(),
        },
        sessions_table: Some("sessions".into()),
        rerank_cache_table: None,
        feedback_table: None,
        workflow_table: None,
        topics_table: None,
    };
    let (service, _) = cold_start(&settings, Config::default(), clients, adapter_functions)
        .await
        .unwrap();
    let api = app(service);
    let (status, body) = query(
        &api,
        json!({"query": "What is 15% of 200?", "session_id": "s-down"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["content"], "15% of 200 is **30**");
    assert_eq!(body["metadata"]["session"]["status"], "unavailable");
    assert!(body["metadata"]["session"]["error"]
        .as_str()
        .unwrap()
        .contains("sessions table `sessions`"));
}

#[tokio::test]
async fn topics_are_kept_per_owner_and_expire() {
    let moto = endpoint("SWITCHYARD_TEST_MOTO_URL");
    let client = aws_sdk_dynamodb::Client::new(&sdk(&moto).await);
    let table = create_table(&client, "owner").await;
    let config = Config::default().sessions.topics;
    let store = DynamoTopicStore::new(client.clone(), &table, config.ttl_seconds);
    let now = unix_now();
    let mut topics = Topics::default();
    topics.add(
        "How many Teslas are registered in King County?",
        now,
        &config,
    );
    store.save("principal:ann", &topics, now).await.unwrap();
    assert_eq!(store.load("principal:ann", now + 1).await.unwrap(), topics);
    assert!(store.load("principal:bob", now).await.unwrap().is_empty());
    let later = now + config.ttl_seconds as i64;
    assert!(store.load("principal:ann", later).await.unwrap().is_empty());
    // The table holds a digest of the owner, not the principal's name.
    let items = client.scan().table_name(&table).send().await.unwrap();
    let owners: Vec<&str> = items
        .items()
        .iter()
        .filter_map(|item| item.get("owner")?.as_s().ok().map(String::as_str))
        .collect();
    assert_eq!(owners.len(), 1);
    assert!(
        !owners[0].contains("ann") && owners[0].len() == 64,
        "{owners:?}"
    );
}

#[tokio::test]
async fn feedback_is_stored_with_its_decision_and_read_back() {
    let moto = endpoint("SWITCHYARD_TEST_MOTO_URL");
    let client = aws_sdk_dynamodb::Client::new(&sdk(&moto).await);
    let table = create_table(&client, "request_id").await;
    let store = DynamoFeedbackStore::new(client, &table, 3600);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let decision = Decision {
        request_id: "req-1".into(),
        datasource: Some("hr".into()),
        template_id: Some("employees_count_by_department".into()),
        outcome: Outcome::Execute,
        confidence: 0.62,
        margin: Some(0.4),
        threshold: 0.4,
        processing_ms: 120.0,
        at: now,
    };
    store.record(decision.clone()).await.unwrap();
    let feedback = Feedback {
        user_satisfaction: Some(1.0),
        agent_success: Some(true),
        search_quality: None,
    };
    let judged = store
        .judge("req-1", feedback.clone())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(judged.decision, decision);
    let reward = judged.reward.unwrap();
    assert!(reward > 0.99 && reward < 1.0, "{reward}");
    assert!(store
        .judge("req-unknown", feedback)
        .await
        .unwrap()
        .is_none());
    let all = store.all().await.unwrap();
    assert_eq!(all, vec![judged], "read back from the table");
}

#[tokio::test]
async fn concurrent_turns_of_one_session_are_all_kept() {
    let moto = endpoint("SWITCHYARD_TEST_MOTO_URL");
    let client = aws_sdk_dynamodb::Client::new(&sdk(&moto).await);
    let table = create_table(&client, "session_id").await;
    let store = Arc::new(DynamoSessionStore::new(
        client,
        &table,
        SessionsConfig {
            max_turns: 50,
            ttl_seconds: 3600,
            ..Config::default().sessions
        },
    ));
    let now = 1_900_000_000;
    let writers: Vec<_> = (0..12)
        .map(|n| {
            let store = store.clone();
            tokio::spawn(async move {
                let turn = Turn {
                    query: Some(format!("question {n}")),
                    datasource: Some("hr".into()),
                    template_id: Some("t".into()),
                    parameters: Default::default(),
                    outcome: TurnOutcome::Execute,
                    confidence: 0.9,
                    belief: Vec::new(),
                    choices: Vec::new(),
                    at: now,
                };
                store.append("busy", turn).await
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap().unwrap();
    }
    let turns = store.recent("busy", now).await.unwrap();
    let mut queries: Vec<_> = turns.iter().map(|t| t.query.clone()).collect();
    queries.sort();
    let mut expected: Vec<_> = (0..12).map(|n| Some(format!("question {n}"))).collect();
    expected.sort();
    assert_eq!(queries, expected, "every concurrent turn is kept");
    // Past its expiry the session reads as empty, though moto never deletes the item.
    assert!(store.recent("busy", now + 3600).await.unwrap().is_empty());
}

/// Failure injection: the first `PutItem` reaches the table, and its answer is turned
/// into a 500 on the way back, as when a connection drops after the write. The SDK retries.
#[derive(Debug, Default, Clone)]
struct LoseFirstPutAnswer {
    put_in_flight: Arc<AtomicBool>,
    lost: Arc<AtomicBool>,
}

impl aws_sdk_dynamodb::config::Intercept for LoseFirstPutAnswer {
    fn name(&self) -> &'static str {
        "LoseFirstPutAnswer"
    }

    fn read_before_transmit(
        &self,
        context: &aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _: &aws_sdk_dynamodb::config::RuntimeComponents,
        _: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let target = context.request().headers().get("x-amz-target");
        let is_put = target.is_some_and(|t| t.ends_with(".PutItem"));
        self.put_in_flight.store(is_put, Ordering::SeqCst);
        Ok(())
    }

    fn modify_before_deserialization(
        &self,
        context: &mut aws_sdk_dynamodb::config::interceptors::BeforeDeserializationInterceptorContextMut<'_>,
        _: &aws_sdk_dynamodb::config::RuntimeComponents,
        _: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        if self.put_in_flight.load(Ordering::SeqCst) && !self.lost.swap(true, Ordering::SeqCst) {
            *context.response_mut().status_mut() = 500u16.try_into()?;
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_turn_whose_write_answer_is_lost_is_stored_once() {
    let moto = endpoint("SWITCHYARD_TEST_MOTO_URL");
    let sdk = sdk(&moto).await;
    let table = create_table(&aws_sdk_dynamodb::Client::new(&sdk), "session_id").await;
    let losing = LoseFirstPutAnswer::default();
    let client = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(&sdk)
            .interceptor(losing.clone())
            .build(),
    );
    let store = DynamoSessionStore::new(client, &table, Config::default().sessions);
    let now = unix_now();
    let turn = |n: usize| Turn {
        query: Some(format!("question {n}")),
        datasource: Some("hr".into()),
        template_id: Some("t".into()),
        parameters: Default::default(),
        outcome: TurnOutcome::Execute,
        confidence: 0.9,
        belief: Vec::new(),
        choices: Vec::new(),
        at: now,
    };
    store.append("lossy", turn(1)).await.unwrap();
    assert!(losing.lost.load(Ordering::SeqCst), "the answer was lost");
    store.append("lossy", turn(2)).await.unwrap();
    let queries: Vec<_> = store
        .recent("lossy", now)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.query.unwrap_or_default())
        .collect();
    assert_eq!(queries, ["question 1", "question 2"], "stored once each");
}

#[tokio::test]
async fn expired_rerank_cache_entries_are_ignored() {
    let moto = endpoint("SWITCHYARD_TEST_MOTO_URL");
    let client = aws_sdk_dynamodb::Client::new(&sdk(&moto).await);
    let table = create_table(&client, "cache_key").await;
    let cache = DynamoRerankCache::new(client.clone(), &table);
    let entry = CachedScores {
        scores: vec![0.75, 0.5],
        expires_at: 1_000,
    };
    cache.put("k1", entry).await.unwrap();
    assert_eq!(cache.get("k1", 999).await.unwrap(), Some(vec![0.75, 0.5]));
    assert_eq!(cache.get("k1", 1_000).await.unwrap(), None);
    assert_eq!(cache.get("absent", 0).await.unwrap(), None);
    // The item is still stored: the filtering is ours.
    let item = client
        .get_item()
        .table_name(&table)
        .key("cache_key", AttributeValue::S("k1".into()))
        .send()
        .await
        .unwrap()
        .item;
    assert!(item.is_some());
}

/// A Lambda Invoke endpoint that answers every call with `status`, `headers` and `body`
/// after `delay`: failure injection for what a real function rarely does on demand.
async fn fake_lambda(
    status: StatusCode,
    headers: Vec<(&'static str, &'static str)>,
    body: &'static str,
    delay: Duration,
) -> String {
    let app = axum::Router::new().route(
        "/2015-03-31/functions/{name}/invocations",
        post(move || {
            let headers = headers.clone();
            async move {
                tokio::time::sleep(delay).await;
                let mut response = (status, body).into_response();
                for (name, value) in headers {
                    response.headers_mut().insert(name, value.parse().unwrap());
                }
                response
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{address}")
}

async fn invoker_at(url: &str) -> LambdaInvoker {
    let catalog = Catalog::load(&root().join("templates/demo")).unwrap();
    let config = aws_sdk_lambda::config::Builder::from(&sdk(url).await)
        .retry_config(aws_sdk_lambda::config::retry::RetryConfig::standard().with_max_attempts(2))
        .build();
    LambdaInvoker::new(
        aws_sdk_lambda::Client::from_conf(config),
        catalog,
        adapter_functions,
    )
}

fn tools_request(deadline_ms: u64) -> AdapterRequest {
    serde_json::from_value(json!({
        "request_id": "r", "datasource": "tools", "template_id": "calculator_percentage",
        "query": "What is 15% of 200?", "session_parameters": {}, "deadline_ms": deadline_ms,
    }))
    .unwrap()
}

#[tokio::test]
async fn adapter_failures_are_named() {
    // A function error, as Lambda reports it.
    let url = fake_lambda(
        StatusCode::OK,
        vec![("x-amz-function-error", "Unhandled")],
        r#"{"errorType": "PanicError", "errorMessage": "adapter blew up"}"#,
        Duration::ZERO,
    )
    .await;
    let error = invoker_at(&url)
        .await
        .invoke(tools_request(1000))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::AdapterFailed { .. }), "{error}");
    assert!(
        error.to_string().contains("PanicError: adapter blew up"),
        "{error}"
    );

    // A 5xx carrying the runtime's error shape (as emulators answer).
    let url = fake_lambda(
        StatusCode::INTERNAL_SERVER_ERROR,
        vec![],
        r#"{"errorType": "Runtime.ExitError", "errorMessage": "exited with status 101"}"#,
        Duration::ZERO,
    )
    .await;
    let error = invoker_at(&url)
        .await
        .invoke(tools_request(1000))
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("exited with status 101"),
        "{error}"
    );

    // An answer that is not an adapter response.
    let url = fake_lambda(StatusCode::OK, vec![], r#"{"hello": 1}"#, Duration::ZERO).await;
    let error = invoker_at(&url)
        .await
        .invoke(tools_request(1000))
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("not an adapter response"),
        "{error}"
    );

    // No answer within the deadline (plus the invoke grace).
    let url = fake_lambda(StatusCode::OK, vec![], "{}", Duration::from_secs(30)).await;
    let started = std::time::Instant::now();
    let error = invoker_at(&url)
        .await
        .invoke(tools_request(100))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::AdapterTimeout { .. }), "{error}");
    assert!(started.elapsed() < Duration::from_secs(10));

    // A datasource without a function is unavailable, not guessed.
    let catalog = Catalog::load(&root().join("templates/demo")).unwrap();
    let none = LambdaInvoker::new(
        aws_sdk_lambda::Client::new(&sdk(&url).await),
        catalog,
        |_| None,
    );
    let error = none.invoke(tools_request(100)).await.unwrap_err();
    assert!(matches!(error, Error::AdapterUnavailable { .. }), "{error}");
}

/// The demo catalog's adapters in this process, counting calls by template and failing
/// the first call of one template as a transport failure would.
struct FlakyInvoker {
    adapters: LocalAdapters,
    fail_first_call_of: String,
    calls: Arc<Mutex<HashMap<String, u32>>>,
}

impl AdapterInvoker for FlakyInvoker {
    async fn invoke(&self, request: AdapterRequest) -> switchyard_core::Result<AdapterResponse> {
        let call = {
            let mut calls = self.calls.lock().unwrap();
            let count = calls.entry(request.template_id.clone()).or_default();
            *count += 1;
            *count
        };
        if request.template_id == self.fail_first_call_of && call == 1 {
            return Err(Error::AdapterFailed {
                datasource: request.datasource,
                message: "injected failure of the first call".into(),
            });
        }
        self.adapters.invoke(request).await
    }
}

fn task<'a>(answer: &'a Answer, id: &str) -> &'a TaskState {
    let orchestrated = answer.orchestration.as_ref().expect("a split question");
    orchestrated
        .run
        .checkpoint
        .tasks
        .iter()
        .find(|t| t.task.id == id)
        .unwrap_or_else(|| panic!("no task `{id}`"))
}

/// The demo catalog's service whose `ev` count fails its first call, checkpointing in
/// `store`, counting calls per template in `calls`.
async fn flaky_service(
    config: Config,
    store: Arc<DynamoWorkflowStore>,
    calls: Arc<Mutex<HashMap<String, u32>>>,
) -> Service<FlakyInvoker, MemorySessionStore> {
    let index = Index::from_bytes(demo_index_bytes(), "demo index").unwrap();
    let templates = root().join("templates/demo");
    let adapters = LocalAdapters::open(index.catalog.clone(), Some(&templates))
        .await
        .unwrap();
    let invoker = FlakyInvoker {
        adapters,
        fail_first_call_of: "vehicles_count_by_make_in_county".into(),
        calls,
    };
    let sessions = MemorySessionStore::new(config.sessions.clone());
    let router = Router::new(index, config, embedder(), "demo index").unwrap();
    Service::new(router, invoker, sessions).with_workflows(store as Arc<dyn WorkflowStore>)
}

#[tokio::test]
async fn without_store_text_a_checkpoint_holds_no_question_text_and_still_resumes() {
    let moto = endpoint("SWITCHYARD_TEST_MOTO_URL");
    let client = aws_sdk_dynamodb::Client::new(&sdk(&moto).await);
    let table = create_table(&client, "workflow_id").await;
    let store = Arc::new(DynamoWorkflowStore::new(client.clone(), &table));
    let calls = Arc::new(Mutex::new(HashMap::new()));
    let mut config = Config::default();
    config.sessions.store_text = false;
    let service = flaky_service(config, store, calls.clone()).await;
    let workflow_id = unique("wf-notext");
    let question = Question {
        query: TWO_PART_QUESTION.into(),
        workflow_id: Some(workflow_id.clone()),
        ..Question::default()
    };
    let first = service.query(&question, &Access::All).await.unwrap();
    assert_eq!(task(&first, "t2").status, TaskStatus::Failed);

    let item = client
        .get_item()
        .table_name(&table)
        .key("workflow_id", AttributeValue::S(workflow_id.clone()))
        .send()
        .await
        .unwrap()
        .item
        .expect("the checkpoint item");
    let stored = format!("{item:?}");
    for words in ["highest paid", "Teslas", "King County"] {
        assert!(!stored.contains(words), "`{words}` is stored: {stored}");
    }

    let resumed = service.query(&question, &Access::All).await.unwrap();
    let (t1, t2) = (task(&resumed, "t1"), task(&resumed, "t2"));
    assert_eq!((t1.status, t2.status), (TaskStatus::Ok, TaskStatus::Ok));
    assert_eq!(
        (t1.attempts, t2.attempts),
        (1, 2),
        "phase one is not run again"
    );
    assert_eq!(
        t2.task.question, "count the Teslas registered in King County",
        "the task's text comes back from the question"
    );
    let calls = calls.lock().unwrap();
    assert_eq!(calls["employees_top_paid_in_department"], 1);
}

const TWO_PART_QUESTION: &str =
    "Find the five highest paid people in Sales, then count the Teslas registered in King County";

#[tokio::test]
async fn a_failed_phase_resumes_from_its_checkpoint_without_rerunning_phase_one() {
    let moto = endpoint("SWITCHYARD_TEST_MOTO_URL");
    let client = aws_sdk_dynamodb::Client::new(&sdk(&moto).await);
    let table = create_table(&client, "workflow_id").await;
    let store = Arc::new(DynamoWorkflowStore::new(client.clone(), &table));
    let calls = Arc::new(Mutex::new(HashMap::new()));
    let service = flaky_service(Config::default(), store.clone(), calls.clone()).await;
    let calls_of = |template: &str| calls.lock().unwrap().get(template).copied().unwrap_or(0);

    let workflow_id = unique("wf-test");
    let question = Question {
        query: TWO_PART_QUESTION.into(),
        workflow_id: Some(workflow_id.clone()),
        ..Question::default()
    };

    // First run: phase 1 (t1, hr) answers, phase 2 (t2, ev) fails.
    let answer = service.query(&question, &Access::All).await.unwrap();
    let (t1, t2) = (task(&answer, "t1"), task(&answer, "t2"));
    assert_eq!(
        (t1.task.datasource.as_str(), t1.task.template_id.as_str()),
        ("hr", "employees_top_paid_in_department")
    );
    assert_eq!(
        (t2.task.datasource.as_str(), t2.task.template_id.as_str()),
        ("ev", "vehicles_count_by_make_in_county")
    );
    assert_eq!(t1.status, TaskStatus::Ok, "{:?}", t1.error);
    assert_eq!(t2.status, TaskStatus::Failed);
    assert!(
        t2.error
            .as_deref()
            .unwrap_or("")
            .contains("injected failure"),
        "{:?}",
        t2.error
    );
    let run = &answer.orchestration.as_ref().unwrap().run;
    assert_eq!(run.started_at_phase, 0);
    assert_eq!(run.checkpoint.completed_phases, 1);
    assert_eq!(run.checkpoint_error, None);
    assert_eq!(
        run.checkpoints,
        vec![format!("{workflow_id}#1"), format!("{workflow_id}#2")]
    );

    // The checkpoint is in the table, as the store reads it back.
    let now = unix_now();
    let stored = store
        .load(&workflow_id, now)
        .await
        .unwrap()
        .expect("the checkpoint item");
    assert_eq!(stored.workflow_id, workflow_id);
    assert_eq!(stored.question, TWO_PART_QUESTION);
    assert_eq!(stored.completed_phases, 1);
    assert_eq!(stored.phases, run.checkpoint.phases);
    let statuses: Vec<_> = stored.tasks.iter().map(|t| t.status).collect();
    assert_eq!(statuses, vec![TaskStatus::Ok, TaskStatus::Failed]);
    assert!(stored.expires_at > now, "{} > {now}", stored.expires_at);
    let item = client
        .get_item()
        .table_name(&table)
        .key("workflow_id", AttributeValue::S(workflow_id.clone()))
        .send()
        .await
        .unwrap()
        .item
        .unwrap();
    assert_eq!(
        item["expires_at"].as_n().unwrap(),
        &stored.expires_at.to_string()
    );
    assert_eq!(
        item["updated_at"].as_n().unwrap(),
        &stored.updated_at.to_string()
    );

    // The retry resumes at phase 2: t1 is not run again, t2 is and answers.
    let answer = service.query(&question, &Access::All).await.unwrap();
    assert_eq!(calls_of("employees_top_paid_in_department"), 1);
    assert_eq!(calls_of("vehicles_count_by_make_in_county"), 2);
    let (t1, t2) = (task(&answer, "t1"), task(&answer, "t2"));
    assert_eq!(t1.status, TaskStatus::Ok);
    assert_eq!(t2.status, TaskStatus::Ok, "{:?}", t2.error);
    assert_eq!((t1.attempts, t2.attempts), (1, 2));
    let orchestrated = answer.orchestration.as_ref().unwrap();
    assert!(
        orchestrated.decomposition.is_none(),
        "a resumed workflow is not decomposed again"
    );
    assert_eq!(orchestrated.run.started_at_phase, 1);
    assert_eq!(orchestrated.run.checkpoint.completed_phases, 2);
    assert_eq!(
        orchestrated.run.checkpoints,
        vec![format!("{workflow_id}#2")]
    );
    let stored = store.load(&workflow_id, unix_now()).await.unwrap().unwrap();
    assert!(stored.is_complete());

    // The workflow belongs to its question: another one under its id is refused.
    let other = Question {
        query: "How many employees work in Engineering?".into(),
        workflow_id: Some(workflow_id.clone()),
        ..Question::default()
    };
    let error = match service.query(&other, &Access::All).await {
        Ok(_) => panic!("a workflow of another question must not resume"),
        Err(e) => e,
    };
    assert!(
        matches!(&error, Error::InvalidRequest { field, .. } if field == "workflow_id"),
        "{error}"
    );
    assert!(error.to_string().contains("workflow_id"), "{error}");
    assert_eq!(
        calls_of("employees_count_by_department"),
        0,
        "nothing ran for the refused question"
    );
    // ... and to its caller: the same question from someone else is refused the same way
    // (neither its results nor whether it exists are told).
    let stranger = Question {
        owner: "sub:someone-else".into(),
        ..question.clone()
    };
    let refused = service.query(&stranger, &Access::All).await;
    assert!(
        matches!(&refused, Err(Error::InvalidRequest { field, .. }) if field == "workflow_id"),
        "{:?}",
        refused.map(|a| a.request_id)
    );
    assert_eq!(
        calls_of("employees_top_paid_in_department"),
        1,
        "nothing re-ran"
    );
}

fn checkpoint(workflow_id: &str, updated_at: i64, expires_at: i64) -> Checkpoint {
    Checkpoint {
        workflow_id: workflow_id.into(),
        question: TWO_PART_QUESTION.into(),
        owner: String::new(),
        text_kept: true,
        task_spans: Vec::new(),
        tasks: Vec::new(),
        phases: Vec::new(),
        completed_phases: 0,
        updated_at,
        expires_at,
    }
}

#[tokio::test]
async fn expired_or_unknown_workflows_are_not_loaded() {
    let moto = endpoint("SWITCHYARD_TEST_MOTO_URL");
    let client = aws_sdk_dynamodb::Client::new(&sdk(&moto).await);
    let table = create_table(&client, "workflow_id").await;
    let store = DynamoWorkflowStore::new(client.clone(), &table);
    let now = unix_now();

    // Expired: DynamoDB may keep the item for days; the store does not return it.
    store
        .save(&checkpoint("wf-old", now - 7200, now - 3600))
        .await
        .unwrap();
    assert_eq!(store.load("wf-old", now).await.unwrap(), None);
    let kept = store.load("wf-old", now - 3601).await.unwrap();
    assert_eq!(kept, Some(checkpoint("wf-old", now - 7200, now - 3600)));
    assert_eq!(store.load("wf-old", now - 3600).await.unwrap(), None);
    assert_eq!(store.load("wf-unknown", now).await.unwrap(), None);

    // A damaged item is an error naming the table and the workflow, not a panic.
    client
        .put_item()
        .table_name(&table)
        .item("workflow_id", AttributeValue::S("wf-corrupt".into()))
        .item("checkpoint", AttributeValue::S("{not json".into()))
        .item("expires_at", AttributeValue::N((now + 3600).to_string()))
        .send()
        .await
        .unwrap();
    match store.load("wf-corrupt", now).await {
        Err(Error::Store { store, message }) => {
            assert_eq!(store, format!("workflow table `{table}`"));
            assert!(message.contains("`wf-corrupt`"), "{message}");
        }
        other => panic!("a store error, got {other:?}"),
    }

    // A table that cannot be reached: errors name it, both ways.
    let nowhere = aws_sdk_dynamodb::config::Builder::from(&sdk("http://127.0.0.1:9").await)
        .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
        .build();
    let down = DynamoWorkflowStore::new(aws_sdk_dynamodb::Client::from_conf(nowhere), "workflows");
    for error in [
        down.load("wf-1", now).await.unwrap_err(),
        down.save(&checkpoint("wf-1", now, now + 60))
            .await
            .unwrap_err(),
    ] {
        assert!(
            matches!(&error, Error::Store { store, .. } if store == "workflow table `workflows`"),
            "{error}"
        );
    }
}

#[tokio::test]
async fn the_router_checkpoints_split_questions_in_its_workflow_table() {
    let moto = endpoint("SWITCHYARD_TEST_MOTO_URL");
    let clients = clients(&moto, &moto).await;
    let bucket = create_bucket(&clients.s3).await;
    let table = create_table(&clients.dynamodb, "workflow_id").await;
    S3IndexStore::new(clients.s3.clone(), &bucket, "indexes")
        .push(demo_index_bytes())
        .await
        .unwrap();
    let store = DynamoWorkflowStore::new(clients.dynamodb.clone(), &table);
    let variables = HashMap::from([
        ("SWITCHYARD_INDEX_BUCKET", bucket.clone()),
        ("SWITCHYARD_WORKFLOW_TABLE", table.clone()),
    ]);
    let settings = Settings::from_env(|name| variables.get(name).cloned()).unwrap();
    assert_eq!(settings.workflow_table.as_deref(), Some(table.as_str()));
    // No adapter function: every task fails, and each phase is still checkpointed.
    let (service, _) = cold_start(&settings, Config::default(), clients, |_| None)
        .await
        .unwrap();
    let api = app(service);
    let workflow_id = unique("wf-router");
    let (status, body) = query(
        &api,
        json!({"query": TWO_PART_QUESTION, "workflow_id": workflow_id}),
    )
    .await;
    assert_eq!(status, 502, "{body}");
    let report = &body["metadata"]["orchestration"];
    assert_eq!(report["workflow_id"], workflow_id.as_str(), "{body}");
    assert_eq!(
        report["checkpoints"],
        json!([format!("{workflow_id}#1"), format!("{workflow_id}#2")]),
        "{body}"
    );
    assert!(report.get("checkpoint_error").is_none(), "{body}");
    let stored = store
        .load(&workflow_id, unix_now())
        .await
        .unwrap()
        .expect("the checkpoint item");
    assert_eq!(stored.question, TWO_PART_QUESTION);
    assert_eq!(stored.completed_phases, 0);
}

/// The SQL schema's chunk artifact, published beside the index, is read at cold start: a
/// question no template clears is pointed at the tables that could answer it. A push of
/// anything but a chunk artifact is refused before upload.
#[tokio::test]
async fn the_schema_published_beside_the_index_answers_no_match() {
    use switchyard_core::documents::schema::{table_documents, TableText, SCHEMA_ARTIFACT};
    use switchyard_core::documents::ChunkIndex;

    let moto = endpoint("SWITCHYARD_TEST_MOTO_URL");
    let clients = clients(&moto, &moto).await;
    let bucket = create_bucket(&clients.s3).await;
    S3IndexStore::new(clients.s3.clone(), &bucket, "indexes")
        .push(demo_index_bytes())
        .await
        .unwrap();
    let schema_store = S3IndexStore::new(
        clients.s3.clone(),
        &bucket,
        &switchyard_aws::chunks_prefix("indexes", SCHEMA_ARTIFACT),
    );
    let error = schema_store
        .push_chunks(demo_index_bytes())
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("the chunk artifact to push"), "{error}");

    let catalog = Catalog::load(&root().join("templates/demo")).unwrap();
    let hr = catalog.datasource("hr").unwrap();
    let tables: Vec<TableText> =
        switchyard_adapters::schema::introspect(hr, Some(&root().join("templates/demo")))
            .await
            .unwrap()
            .unwrap()
            .into_iter()
            .map(|t| TableText {
                datasource: "hr".into(),
                table: t.name.clone(),
                text: t.flatten(),
            })
            .collect();
    let config = Config::default();
    let schema = ChunkIndex::build(
        SCHEMA_ARTIFACT,
        &table_documents(&tables),
        embedder().as_ref(),
        &config.documents,
        &|_, _| {},
    )
    .unwrap();
    schema_store
        .push_chunks(&schema.to_bytes().unwrap())
        .await
        .unwrap();

    let settings = Settings {
        index: IndexLocation::S3 {
            bucket,
            prefix: "indexes".into(),
        },
        sessions_table: None,
        rerank_cache_table: None,
        feedback_table: None,
        workflow_table: None,
        topics_table: None,
    };
    let mut strict = config;
    strict.composite_retrieval.confidence_threshold =
        switchyard_core::config::Threshold::Fixed(0.99);
    let (service, _) = cold_start(&settings, strict, clients, adapter_functions)
        .await
        .unwrap();
    let (status, answer) = query(
        &app(service),
        json!({"query": "In which currency are the salaries paid?"}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["status"], "no_match", "{answer}");
    assert_eq!(answer["suggested_datasource"], "hr", "{answer}");
    assert_eq!(answer["schema_context"][0]["table"], "salaries", "{answer}");
}
