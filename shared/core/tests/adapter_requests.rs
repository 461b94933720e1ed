//! What the service sends its adapters: every request names the catalog it was routed
//! with, so an adapter function deployed with another catalog can refuse it. Fast: the
//! hashing embedder, no model.

mod common;

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use switchyard_catalog::auth::Access;
use switchyard_catalog::template::Catalog;
use switchyard_catalog::BoxFuture;
use switchyard_contract::adapter::{
    AdapterInvoker, AdapterOutcome, AdapterRequest, AdapterResponse,
};
use switchyard_core::config::Config;
use switchyard_core::service::{Question, Service};
use switchyard_index::index::Index;
use switchyard_routing::router::Router;
use switchyard_routing::session::MemorySessionStore;
use switchyard_vectors::embed::{Embedder, HashingEmbedder};

/// Keeps every request and answers each with `answer` (an adapter's refusal, say).
struct Recording {
    calls: Mutex<Vec<AdapterRequest>>,
    answer: AdapterOutcome,
}

impl AdapterInvoker for Recording {
    fn invoke<'a>(
        &'a self,
        request: AdapterRequest,
    ) -> BoxFuture<'a, switchyard_contract::error::Result<AdapterResponse>> {
        self.calls.lock().unwrap().push(request);
        let outcome = self.answer.clone();
        Box::pin(async move {
            Ok(AdapterResponse {
                content: outcome.error().unwrap_or("done").to_owned(),
                outcome,
                data: Value::Null,
                parameters: Map::new(),
                missing: Vec::new(),
                execution_time_ms: 1.0,
            })
        })
    }
}

/// A service on the small catalog, its adapters answering `answer`; and the catalog's hash.
fn service(answer: AdapterOutcome) -> (Service, Arc<Recording>, String) {
    let dir = common::small_catalog();
    let catalog = Catalog::load(dir.path()).unwrap();
    let config = Config::default();
    let embedder: Arc<dyn Embedder> = Arc::new(HashingEmbedder::default());
    let index = Index::build(catalog, embedder.as_ref(), &config.router(), &|_, _| {}).unwrap();
    let hash = index.catalog.content_hash();
    let router = Router::new(index, config.router(), embedder, "test").unwrap();
    let recording = Arc::new(Recording {
        calls: Mutex::default(),
        answer,
    });
    let sessions = Arc::new(MemorySessionStore::new(config.sessions.clone()));
    let service = Service::new(config, router, recording.clone(), sessions);
    (service, recording, hash)
}

fn question(query: &str) -> Question {
    Question {
        query: query.into(),
        ..Question::default()
    }
}

/// The contract's JSON, as the adapter function receives it.
fn sent_hash(request: &AdapterRequest) -> Value {
    serde_json::to_value(request).unwrap()["catalog_hash"].clone()
}

#[tokio::test]
async fn the_routed_request_names_the_catalog_of_the_index() {
    let (service, recording, hash) = service(AdapterOutcome::Ok);
    let answer = service
        .query(
            &question("How many employees work in Engineering?"),
            &Access::All,
        )
        .await
        .unwrap();
    assert!(answer.execution.is_some(), "{answer:?}");
    let calls = recording.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].template_id, "employees_by_department");
    assert_eq!(sent_hash(&calls[0]), Value::from(hash.clone()));
    assert_eq!(
        service.router().index().manifest.templates_hash,
        hash,
        "the hash /v1/stats shows"
    );
}

/// A split question's tasks go out through the workflow, not `execute`: each names the
/// catalog too.
#[tokio::test]
async fn every_task_of_a_split_question_names_the_catalog() {
    let (service, recording, hash) = service(AdapterOutcome::Ok);
    let answer = service
        .query(
            &question(
                "How many employees work in Engineering? Also, what's the weather like in Paris?",
            ),
            &Access::All,
        )
        .await
        .unwrap();
    assert!(answer.orchestration.is_some(), "not split: {answer:?}");
    let calls = recording.calls.lock().unwrap().clone();
    assert!(calls.len() >= 2, "{calls:?}");
    for call in &calls {
        assert_eq!(sent_hash(call), Value::from(hash.clone()), "{call:?}");
    }
}

/// An adapter's refusal (here the function's catalog check's) reaches the caller as the
/// adapter's `error` answer, its message whole.
#[tokio::test]
async fn an_adapter_refusal_reaches_the_caller_whole() {
    let message = "routed with catalog 0123456789ab, but this function serves catalog ba9876543210: redeploy the adapter functions";
    let (service, _, _) = service(AdapterOutcome::Error(Some(message.into())));
    let answer = service
        .query(
            &question("How many employees work in Engineering?"),
            &Access::All,
        )
        .await
        .unwrap();
    let response = answer.execution.unwrap().adapter.unwrap();
    assert_eq!(response.error(), Some(message));
    assert_eq!(response.content, message);
}
