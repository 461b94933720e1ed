//! Whose records, and what they keep, in the router's tables: a decision is judged only by
//! the caller that got the answer, reading the item consistently; an A2A task without
//! `sessions.store_text` keeps no question or answer, and forgetting its session deletes
//! it.

use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use switchyard_aws::index::IndexPublishing;
use switchyard_core::config::Config;
use switchyard_router::{app, cold_start, Settings};
use switchyard_s3::{IndexLocation, S3IndexStore};

use crate::setup::{
    adapter_functions, clients, create_bucket, create_table, demo_index_bytes, endpoint, sdk,
    send_with, unique,
};

/// The JSON bodies of the `GetItem` calls a client sent.
#[derive(Debug, Default, Clone)]
struct GetItems(Arc<Mutex<Vec<String>>>);

impl aws_sdk_dynamodb::config::Intercept for GetItems {
    fn name(&self) -> &'static str {
        "GetItems"
    }

    fn read_before_transmit(
        &self,
        context: &aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _: &aws_sdk_dynamodb::config::RuntimeComponents,
        _: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let request = context.request();
        let target = request.headers().get("x-amz-target");
        if target.is_some_and(|t| t.ends_with(".GetItem")) {
            let body = request.body().bytes().unwrap_or_default();
            let mut bodies = self.0.lock().unwrap();
            bodies.push(String::from_utf8_lossy(body).into_owned());
        }
        Ok(())
    }
}

/// The router on the demo index in a fresh bucket, with these tables and `config`, its
/// adapters invoked through `cargo lambda watch`; DynamoDB's requests go through
/// `interceptor`.
async fn router(
    settings: impl FnOnce(IndexLocation) -> Settings,
    config: Config,
    interceptor: GetItems,
) -> axum::Router {
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
    let intercepted = aws_sdk_dynamodb::config::Builder::from(&sdk(&moto).await)
        .interceptor(interceptor)
        .build();
    clients.dynamodb = aws_sdk_dynamodb::Client::from_conf(intercepted);
    let settings = settings(IndexLocation::S3 {
        bucket,
        prefix: "indexes".into(),
    });
    let (service, _) = cold_start(&settings, config, clients, adapter_functions)
        .await
        .unwrap();
    app(service)
}

fn settings(index: IndexLocation) -> Settings {
    Settings {
        index,
        sessions_table: None,
        rerank_cache_table: None,
        feedback_table: None,
        workflow_table: None,
        topics_table: None,
        templates: None,
    }
}

/// The DynamoDB client of the emulator, not intercepted.
async fn dynamodb() -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::new(&sdk(&endpoint("SWITCHYARD_TEST_MOTO_URL")).await)
}

#[tokio::test]
async fn feedback_is_taken_from_the_answers_caller_alone_reading_its_decision_consistently() {
    let table = create_table(&dynamodb().await, "request_id").await;
    let hash = |key: &[u8]| hex::encode(Sha256::digest(key));
    let keys = format!("{{{}: ann, {}: bob}}", hash(b"k-ann"), hash(b"k-bob"));
    let config = Config::load(
        None,
        [
            ("SWITCHYARD__AUTH__REQUIRED", "true"),
            ("SWITCHYARD__AUTH__PRINCIPALS", "{ann: ['*'], bob: ['*']}"),
            ("SWITCHYARD__AUTH__API_KEYS", keys.as_str()),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned())),
    )
    .unwrap();
    let reads = GetItems::default();
    let api = router(
        |index| Settings {
            feedback_table: Some(table.clone()),
            ..settings(index)
        },
        config,
        reads.clone(),
    )
    .await;
    let as_caller = |key: &str| json!({"x-api-key": key});
    let (status, answer) = send_with(
        &api,
        "POST",
        "/v1/query",
        Some(json!({"query": "What is 15% of 200?"})),
        as_caller("k-ann"),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let request_id = answer["metadata"]["request_id"].as_str().unwrap();
    let judge = |key: &'static str| {
        let body = json!({"request_id": request_id, "agent_success": key == "k-ann"});
        send_with(&api, "POST", "/v1/feedback", Some(body), as_caller(key))
    };

    let (status, by_bob) = judge("k-bob").await;
    assert_eq!(status, 404, "another caller's answer: {by_bob}");
    assert_eq!(by_bob["error"]["code"], "unknown_request", "{by_bob}");
    let (status, by_ann) = judge("k-ann").await;
    assert_eq!(status, 200, "{by_ann}");
    assert!(by_ann["reward"].as_f64().unwrap() > 0.9, "{by_ann}");

    // Both judgements read the decision's item, each consistently: the answer's write is
    // milliseconds old when feedback follows it at once.
    let bodies = reads.0.lock().unwrap().clone();
    let feedback_reads: Vec<Value> = bodies
        .iter()
        .map(|b| serde_json::from_str::<Value>(b).unwrap())
        .filter(|b| b["TableName"] == table.as_str())
        .collect();
    assert_eq!(feedback_reads.len(), 2, "{bodies:?}");
    for read in &feedback_reads {
        assert_eq!(read["ConsistentRead"], true, "{read}");
    }
}

#[tokio::test]
async fn without_store_text_an_a2a_task_keeps_no_texts_and_goes_with_its_session() {
    let client = dynamodb().await;
    let sessions = create_table(&client, "session_id").await;
    let workflows = create_table(&client, "workflow_id").await;
    let mut config = Config::default();
    config.sessions.store_text = false;
    let api = router(
        |index| Settings {
            sessions_table: Some(sessions.clone()),
            workflow_table: Some(workflows.clone()),
            ..settings(index)
        },
        config,
        GetItems::default(),
    )
    .await;
    let context = unique("ctx");
    let rpc = |method: &str, params: Value| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let api = api.clone();
        async move {
            let headers = json!({"a2a-version": "1.0"});
            let (status, answer) = send_with(&api, "POST", "/a2a", Some(body), headers).await;
            assert_eq!(status, 200, "{answer}");
            answer
        }
    };
    let message = json!({"messageId": unique("m"), "contextId": context, "role": "ROLE_USER",
        "parts": [{"text": "What is 15% of 200?"}]});
    let sent = rpc("SendMessage", json!({ "message": message })).await;
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"], "15% of 200 is **30**",
        "the answer, in the result"
    );
    let id = task["id"].as_str().unwrap();

    let scan = |table: String| {
        let client = client.clone();
        async move {
            let items = client.scan().table_name(table).send().await.unwrap();
            items.items().to_vec()
        }
    };
    let items = scan(workflows.clone()).await;
    let stored = format!("{items:?}");
    for said in ["15% of 200", "**30**"] {
        assert!(!stored.contains(said), "`{said}` is stored: {stored}");
    }
    // The task, the message's record of it, and the context listing both.
    let key = |item: &std::collections::HashMap<String, AttributeValue>| {
        item["workflow_id"].as_s().unwrap().clone()
    };
    let mut keys: Vec<String> = items.iter().map(key).collect();
    keys.sort();
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert!(keys.contains(&format!("{context}#context")), "{keys:?}");
    let kept = rpc("GetTask", json!({ "id": id })).await;
    assert_eq!(kept["result"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert!(
        kept["result"]["metadata"]["textsNotKept"].is_string(),
        "{kept}"
    );

    let path = format!("/v1/sessions/{context}");
    let (status, forgotten) = send_with(&api, "DELETE", &path, None, json!({})).await;
    assert_eq!(status, 200, "{forgotten}");
    assert_eq!(forgotten["deleted"], true);
    let gone = rpc("GetTask", json!({ "id": id })).await;
    assert_eq!(gone["error"]["code"], -32001, "{gone}");
    assert!(
        scan(workflows).await.is_empty(),
        "the task's items are deleted"
    );
    assert!(scan(sessions).await.is_empty(), "and the session's");
}
