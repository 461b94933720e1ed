//! `switchyard serve`: the API on a local HTTP server, the same axum app the router
//! Lambda runs, with adapters in-process.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use switchyard_adapters::local::LlmFeatures;
use switchyard_adapters::LocalAdapters;
use switchyard_core::config::Config;
use switchyard_core::rerank::RerankStage;
use switchyard_core::rerank_cache::MemoryRerankCache;
use switchyard_core::service::Service;
use switchyard_documents::ChunkIndex;
use switchyard_routing::router::Router;
use switchyard_routing::session::MemorySessionStore;

/// Serve `router` (built with `config`'s sections); adapters run in-process with their
/// files under `templates_dir`, and documents datasources from their chunk artifacts.
pub fn run(
    config: Config,
    router: Router,
    templates_dir: &Path,
    documents: Vec<(ChunkIndex, String)>,
    schema: Option<ChunkIndex>,
    host: &str,
    port: u16,
) -> Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async move {
        let catalog = router.index().catalog.clone();
        let llm = LlmFeatures::from_config(&config.llm)?;
        let reranker = switchyard_rerank::from_config(&config.composite_retrieval.reranking)?;
        let invoker = LocalAdapters::open(catalog, Some(templates_dir))
            .await?
            .with_documents(documents, &config, reranker.clone())?
            .with_llm(llm);
        let sessions = MemorySessionStore::new(config.sessions.clone());
        let ttl = config.rerank_cache.ttl_seconds;
        let cache_capacity = config.rerank_cache.memory_capacity;
        let splitter = switchyard_rerank::ChatSplitter::from_config(&config)?;
        let mut service = Service::new(config, router, Arc::new(invoker), Arc::new(sessions));
        if let Some(schema) = schema {
            service = service.with_schema(schema);
        }
        if let Some(splitter) = splitter {
            service = service.with_splitter(splitter);
        }
        if let Some(reranker) = reranker {
            let cache = Arc::new(MemoryRerankCache::new(cache_capacity));
            service = service.with_rerank(RerankStage::new(reranker, cache, ttl));
        }
        let app = switchyard_http::app(Arc::new(service));
        let listener = tokio::net::TcpListener::bind((host, port))
            .await
            .with_context(|| format!("binding {host}:{port}"))?;
        let address = listener.local_addr()?;
        // Tests and scripts wait for this line.
        println!("switchyard listening on http://{address}");
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .context("serving")
    })
}
