//! The index published to S3 and the cold start that reads it: end to end through Lambda to
//! the session table, a missing or corrupt artifact named, and the SQL schema published
//! beside the index.

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::json;
use switchyard_aws::index::IndexPublishing;
use switchyard_catalog::template::Catalog;
use switchyard_core::config::Config;
use switchyard_router::{app, cold_start, Settings};
use switchyard_routing::session::Turn;
use switchyard_s3::IndexLocation;
use switchyard_s3::S3IndexStore;

use crate::setup::{
    adapter_functions, clients, create_bucket, create_table, demo_index_bytes, embedder, endpoint,
    query, root, send,
};

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
        templates: None,
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

    // An EV question: DuckDB over the CSV file, in the adapter function (the router binary
    // links no DuckDB; it invokes the function).
    let (_, body) = query(
        &api,
        json!({"query": "Ford EV registrations in Snohomish county"}),
    )
    .await;
    assert_eq!(
        body["content"], "2 Ford vehicles are registered in Snohomish County.",
        "{body}"
    );

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

/// S3 as it answers a role without s3:ListBucket (the functions' roles): a missing object
/// is 403 AccessDenied. Moto answers 404 NoSuchKey whatever the policy, so the answer is
/// rewritten.
#[derive(Debug)]
struct DeniedWhenMissing;

impl aws_sdk_s3::config::Intercept for DeniedWhenMissing {
    fn name(&self) -> &'static str {
        "DeniedWhenMissing"
    }

    fn modify_before_deserialization(
        &self,
        context: &mut aws_sdk_s3::config::interceptors::BeforeDeserializationInterceptorContextMut<
            '_,
        >,
        _: &aws_sdk_s3::config::RuntimeComponents,
        _: &mut aws_sdk_s3::config::ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let response = context.response_mut();
        if response.status().as_u16() == 404 {
            *response.status_mut() = 403u16.try_into()?;
            *response.body_mut() = aws_sdk_s3::primitives::SdkBody::from(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
                 <Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>",
            );
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_missing_index_read_without_list_bucket_still_says_what_to_publish() {
    let moto = endpoint("SWITCHYARD_TEST_MOTO_URL");
    let clients = clients(&moto, &moto).await;
    let bucket = create_bucket(&clients.s3).await;
    let denying = aws_sdk_s3::Client::from_conf(
        clients
            .s3
            .config()
            .to_builder()
            .interceptor(DeniedWhenMissing)
            .build(),
    );
    let error = S3IndexStore::new(denying, &bucket, "indexes")
        .fetch()
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(&format!("s3://{bucket}/indexes/current"))
            && error.contains("the object is missing (no such object")
            && error.contains("s3:ListBucket"),
        "{error}"
    );
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

    // An artifact corrupted in the bucket after publishing is caught at load, by the
    // frame checksum the pointer names (no SHA-256 of the whole artifact at cold start).
    let pointer = store.push(demo_index_bytes()).await.unwrap();
    let bytes = demo_index_bytes();
    assert_eq!(
        pointer.frame_checksum.as_deref(),
        Some(hex::encode(&bytes[bytes.len() - 8..]).as_str()),
        "the pointer names the artifact's own frame checksum"
    );
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
        templates: None,
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

/// The SQL schema's chunk artifact, published beside the index, is read at cold start: a
/// question no template clears is pointed at the tables that could answer it. A push of
/// anything but a chunk artifact is refused before upload.
#[tokio::test]
async fn the_schema_published_beside_the_index_answers_no_match() {
    use switchyard_documents::schema::{table_documents, TableText, SCHEMA_ARTIFACT};
    use switchyard_documents::ChunkIndex;

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
        &switchyard_s3::chunks_prefix("indexes", SCHEMA_ARTIFACT),
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
        templates: None,
    };
    let mut strict = config;
    strict.composite_retrieval.confidence_threshold =
        switchyard_index::config::Threshold::Fixed(0.99);
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
