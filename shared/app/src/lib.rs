//! The composition root: one place that puts the service and the in-process adapters
//! together, for every deployment. The router Lambda (DynamoDB stores; Lambda invokes or
//! in-process adapters) and `switchyard serve` (memory stores, in-process adapters) give
//! their [`Edges`] and files; what the configuration decides (the rerank stage and its
//! cache, the chat decomposer, the adapters' sections) is decided here, once.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use switchyard_catalog::error::Result;
use switchyard_contract::adapter::AdapterInvoker;
use switchyard_contract::rerank::Reranker;
use switchyard_documents::ChunkIndex;
use switchyard_routing::router::Router;
use switchyard_routing::session::SessionStore;
use switchyard_routing::topics::TopicStore;
use switchyard_routing::transitions::TransitionStore;

use switchyard_adapters::local::{LlmFeatures, Sections, Sources};
use switchyard_adapters::LocalAdapters;
use switchyard_catalog::template::Catalog;
use switchyard_core::config::Config;
use switchyard_core::feedback::FeedbackStore;
use switchyard_core::orchestration::{ChatSplitter, WorkflowStore};
use switchyard_core::rerank::RerankStage;
use switchyard_core::rerank_cache::{MemoryRerankCache, RerankCache};
use switchyard_core::service::Service;

/// What a deployment plugs into the service: the adapters' invoker and the stores. A
/// store left `None` is kept in this process's memory.
pub struct Edges {
    pub invoker: Arc<dyn AdapterInvoker>,
    pub sessions: Arc<dyn SessionStore>,
    pub rerank_cache: Option<Arc<dyn RerankCache>>,
    pub feedback: Option<Arc<dyn FeedbackStore>>,
    pub workflows: Option<Arc<dyn WorkflowStore>>,
    pub topics: Option<Arc<dyn TopicStore>>,
    /// The deployment's conversation transition counts.
    pub transitions: Option<Arc<dyn TransitionStore>>,
    /// SQL datasources' tables, searched when no template fits (`index build` wrote them).
    pub schema: Option<ChunkIndex>,
}

impl Edges {
    /// The invoker and the sessions store; everything else in memory.
    pub fn new(invoker: Arc<dyn AdapterInvoker>, sessions: Arc<dyn SessionStore>) -> Edges {
        Edges {
            invoker,
            sessions,
            rerank_cache: None,
            feedback: None,
            workflows: None,
            topics: None,
            transitions: None,
            schema: None,
        }
    }
}

/// The service for `config` and its `router` (built with `config`'s sections), on `edges`.
/// `reranker` is the configured provider (`switchyard_rerank::from_config`), shared with
/// the in-process adapters that rerank passages; with one, close calls are reranked,
/// its answers cached in `edges.rerank_cache` (memory without one). The chat decomposer
/// runs when `orchestration.chat_decomposer` is on.
pub fn assemble(
    config: Config,
    router: Router,
    reranker: Option<Arc<dyn Reranker>>,
    edges: Edges,
) -> Result<Service> {
    let splitter = ChatSplitter::from_config(&config)?;
    let rerank = reranker.map(|reranker| {
        let cache = edges.rerank_cache.unwrap_or_else(|| {
            Arc::new(MemoryRerankCache::new(config.rerank_cache.memory_capacity))
        });
        RerankStage::new(reranker, cache, config.rerank_cache.ttl_seconds)
    });
    let mut service = Service::new(config, router, edges.invoker, edges.sessions);
    if let Some(splitter) = splitter {
        service = service.with_splitter(splitter);
    }
    if let Some(stage) = rerank {
        service = service.with_rerank(stage);
    }
    if let Some(store) = edges.feedback {
        service = service.with_feedback(store);
    }
    if let Some(store) = edges.workflows {
        service = service.with_workflows(store);
    }
    if let Some(store) = edges.topics {
        service = service.with_topics(store);
    }
    if let Some(store) = edges.transitions {
        service = service.with_transitions(store);
    }
    if let Some(schema) = edges.schema {
        service = service.with_schema(schema);
    }
    Ok(service)
}

/// The in-process adapters of `catalog` with `config`'s sections: their files under
/// `templates_dir`, documents from their chunk artifacts, passages reranked by `reranker`.
pub async fn in_process_adapters(
    config: &Config,
    catalog: Catalog,
    templates_dir: &Path,
    documents: Vec<(ChunkIndex, String)>,
    reranker: Option<Arc<dyn Reranker>>,
) -> switchyard_adapters::Result<LocalAdapters> {
    let retrieval = &config.composite_retrieval;
    let sources = Sources {
        templates_dir: Some(templates_dir),
        fetched: &BTreeMap::new(),
        documents,
    };
    let sections = Sections {
        documents: &config.documents,
        keywords: &retrieval.keywords,
        reranking: &retrieval.reranking,
    };
    let llm = LlmFeatures::from_config(&config.llm)?;
    LocalAdapters::assemble(catalog, sources, reranker, llm, sections).await
}
