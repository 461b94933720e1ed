//! The DynamoDB tables of conversations: sessions (an unreachable table, concurrent turns, a
//! write whose answer is lost), topics and feedback.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::json;
use switchyard_aws::index::IndexPublishing;
use switchyard_aws::{DynamoFeedbackStore, DynamoSessionStore, DynamoTopicStore};
use switchyard_catalog::clock::unix_now;
use switchyard_core::config::Config;
use switchyard_core::feedback::{Decision, Feedback, FeedbackStore};
use switchyard_router::{app, cold_start, Settings};
use switchyard_routing::config::SessionsConfig;
use switchyard_routing::router::Outcome;
use switchyard_routing::session::{SessionStore, Turn, TurnOutcome};
use switchyard_routing::topics::{TopicStore, Topics};
use switchyard_s3::IndexLocation;
use switchyard_s3::S3IndexStore;

use crate::setup::{
    adapter_functions, clients, create_bucket, create_table, demo_index_bytes, endpoint, query, sdk,
};

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
        templates: None,
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
        query: None,
        session_id: None,
    };
    store.record("req-1", decision.clone()).await.unwrap();
    let feedback = Feedback {
        user_satisfaction: Some(1.0),
        agent_success: Some(true),
        search_quality: None,
        expected_template: None,
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
            tokio::spawn(async move { store.append("busy", executed(n, now)).await })
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
    store.append("lossy", executed(1, now)).await.unwrap();
    assert!(losing.lost.load(Ordering::SeqCst), "the answer was lost");
    store.append("lossy", executed(2, now)).await.unwrap();
    let queries: Vec<_> = store
        .recent("lossy", now)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.query.unwrap_or_default())
        .collect();
    assert_eq!(queries, ["question 1", "question 2"], "stored once each");
}

/// An executed turn asking "question {n}" at `at`.
pub fn executed(n: usize, at: i64) -> Turn {
    Turn {
        query: Some(format!("question {n}")),
        datasource: Some("hr".into()),
        template_id: Some("t".into()),
        parameters: Default::default(),
        outcome: TurnOutcome::Execute,
        confidence: 0.9,
        belief: Vec::new(),
        choices: Vec::new(),
        answer: None,
        at,
    }
}

/// DynamoDB refuses an item over 400 KB: a session of 50 long turns in a 4-byte script
/// (800 KB of text) keeps being saved, its oldest turns giving way.
#[tokio::test]
async fn a_long_session_in_a_four_byte_script_keeps_being_saved() {
    let moto = endpoint("SWITCHYARD_TEST_MOTO_URL");
    let client = aws_sdk_dynamodb::Client::new(&sdk(&moto).await);
    let table = create_table(&client, "session_id").await;
    let config = Config::default().sessions;
    let max_turns = config.max_turns;
    assert_eq!(max_turns, 50, "the default this test is about");
    let store = DynamoSessionStore::new(client.clone(), &table, config);
    let now = unix_now();
    // The longest turn a request can leave: 2,000 characters asked and 2,000 answered,
    // each character 4 bytes in UTF-8.
    let long = |n: usize| Turn {
        query: Some(format!("{n} {}", "𝄞".repeat(1_990))),
        answer: Some("𓀀".repeat(2_000)),
        ..executed(n, now)
    };
    for n in 0..max_turns {
        store
            .append("long", long(n))
            .await
            .unwrap_or_else(|e| panic!("turn {n} was not saved: {e}"));
    }
    let turns = store.recent("long", now).await.unwrap();
    let newest = turns
        .last()
        .and_then(|t| t.query.clone())
        .unwrap_or_default();
    assert!(
        newest.starts_with(&format!("{} ", max_turns - 1)),
        "the newest turn is kept"
    );
    assert!(
        turns.len() >= 10 && turns.len() < max_turns,
        "the oldest turns gave way, the recent ones stayed: {} kept",
        turns.len()
    );
    // Well under the limit, whatever the script: the whole item, as DynamoDB counts it
    // (names and values in UTF-8), is the turns' budget and a few KB of key, write tokens
    // and numbers, under DynamoDB's 409,600 bytes.
    let item = client
        .get_item()
        .table_name(&table)
        .key(
            "session_id",
            aws_sdk_dynamodb::types::AttributeValue::S("long".into()),
        )
        .send()
        .await
        .unwrap()
        .item
        .unwrap();
    let bytes: usize = item
        .iter()
        .map(|(name, value)| {
            name.len()
                + match value {
                    aws_sdk_dynamodb::types::AttributeValue::S(s) => s.len(),
                    aws_sdk_dynamodb::types::AttributeValue::N(n) => n.len(),
                    aws_sdk_dynamodb::types::AttributeValue::L(l) => {
                        l.iter().map(|v| v.as_s().map_or(8, String::len)).sum()
                    }
                    _ => 0,
                }
        })
        .sum();
    let budget = switchyard_catalog::bounded::MAX_ITEM_BYTES + 4_096;
    assert!(bytes < budget, "the item holds {bytes} bytes");
}
