//! An index built with an adapted encoder: `index push` publishes the graph under
//! `<prefix>/encoders/<sha256>.onnx`, the cold start fetches it from S3 and embeds with it,
//! and a graph that is not the one the index names is refused, naming both.
//!
//! The stand-in "adapted" graph is the base model's own int8 graph under an adapted
//! manifest: what is tested here is that the router takes its encoder from the index's
//! manifest and S3, not from the layer. Training itself is tested in
//! `switchyard-adapt` and, end to end with the graph build, in the CLI's tests.

use serde_json::json;
use switchyard_aws::index::IndexPublishing;
use switchyard_catalog::template::Catalog;
use switchyard_core::config::Config;
use switchyard_embed::{adapted_model_id, Graph, MiniLmEmbedder, MINILM_MODEL_ID};
use switchyard_index::index::{EncoderManifest, Index};
use switchyard_router::{app, cold_start, Settings};
use switchyard_s3::IndexLocation;
use switchyard_s3::S3IndexStore;

use crate::setup::{adapter_functions, clients, create_bucket, endpoint, query, root};

/// The stand-in graph and the demo index embedded with it under its adapted id.
fn adapted_demo() -> (Vec<u8>, Vec<u8>, EncoderManifest) {
    let config = Config::default();
    let model_dir = config.embedding.resolved_model_dir();
    let graph = std::fs::read(model_dir.join("model.onnx")).expect("the model");
    let sha = sha256_hex(&graph);
    let manifest = EncoderManifest {
        base_model: MINILM_MODEL_ID.to_owned(),
        model_id: adapted_model_id(&sha),
        onnx_sha256: sha,
        weights_sha256: "stand-in".into(),
        loss: "none (stand-in)".into(),
        seed: 0,
        steps: 0,
        pairs: 0,
        epochs: 0,
        learning_rate: 0.0,
        first_trained_layer: 0,
        layers: 6,
        batching: "random".into(),
        held_out: 0,
        training_seconds: 0.0,
        incremental: Vec::new(),
    };
    let embedder = MiniLmEmbedder::load_adapted(
        &model_dir,
        Graph {
            bytes: graph.clone(),
            origin: "stand-in".into(),
            model_id: manifest.model_id.clone(),
        },
        1,
        1,
    )
    .unwrap();
    let catalog = Catalog::load(&root().join("templates/demo")).unwrap();
    let index = Index::build_with_encoder(
        catalog,
        &embedder,
        Some(manifest.clone()),
        &config.router(),
        &|_, _| {},
    )
    .unwrap();
    (graph, index.to_bytes().unwrap(), manifest)
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(bytes))
}

fn settings(bucket: &str) -> Settings {
    Settings {
        index: IndexLocation::S3 {
            bucket: bucket.to_owned(),
            prefix: "adapted".into(),
        },
        sessions_table: None,
        rerank_cache_table: None,
        feedback_table: None,
        workflow_table: None,
        topics_table: None,
        templates: None,
    }
}

#[tokio::test]
async fn the_cold_start_loads_the_adapted_encoder_the_index_names_from_s3() {
    let (moto, lambda) = (
        endpoint("SWITCHYARD_TEST_MOTO_URL"),
        endpoint("SWITCHYARD_TEST_LAMBDA_URL"),
    );
    let clients = clients(&moto, &lambda).await;
    let bucket = create_bucket(&clients.s3).await;
    let (graph, index, manifest) = adapted_demo();
    let store = S3IndexStore::new(clients.s3.clone(), &bucket, "adapted");
    let place = store.push_encoder(&graph, &manifest).await.unwrap();
    assert_eq!(
        place,
        format!(
            "s3://{bucket}/adapted/encoders/{}.onnx",
            manifest.onnx_sha256
        )
    );
    store.push(&index).await.unwrap();

    let (service, _) = cold_start(
        &settings(&bucket),
        Config::default(),
        clients,
        adapter_functions,
    )
    .await
    .unwrap();
    let (status, body) = query(&app(service), json!({"query": "What is 15% of 200?"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["metadata"]["template_id"], "calculator_percentage",
        "{body}"
    );
    assert_eq!(body["data"]["tool_execution"]["result"], 30, "{body}");
}

#[tokio::test]
async fn a_graph_other_than_the_one_the_index_names_is_refused_naming_both() {
    let (moto, lambda) = (
        endpoint("SWITCHYARD_TEST_MOTO_URL"),
        endpoint("SWITCHYARD_TEST_LAMBDA_URL"),
    );
    let clients = clients(&moto, &lambda).await;
    let bucket = create_bucket(&clients.s3).await;
    let (graph, index, manifest) = adapted_demo();
    let store = S3IndexStore::new(clients.s3.clone(), &bucket, "adapted");

    // push_encoder itself refuses bytes that are not the manifest's graph.
    let mut other = graph.clone();
    other.truncate(other.len() - 1);
    let refused = store.push_encoder(&other, &manifest).await.unwrap_err();
    assert!(
        refused.to_string().contains(&manifest.onnx_sha256),
        "{refused}"
    );

    // A graph replaced behind the index's back (written straight to its key).
    clients
        .s3
        .put_object()
        .bucket(&bucket)
        .key(store.encoder_key(&manifest.onnx_sha256))
        .body(other.clone().into())
        .send()
        .await
        .unwrap();
    store.push(&index).await.unwrap();
    let error = cold_start(
        &settings(&bucket),
        Config::default(),
        clients,
        adapter_functions,
    )
    .await
    .err()
    .expect("a mismatched encoder is refused");
    let message = error.to_string();
    let found = sha256_hex(&other);
    assert!(
        message.contains(&manifest.onnx_sha256) && message.contains(&found),
        "{message}"
    );
    assert!(message.contains("different builds"), "{message}");
}
