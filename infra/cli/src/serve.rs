//! `switchyard serve`: the API on a local HTTP server, the same axum app the router
//! Lambda runs, with adapters in-process.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use switchyard_app::{assemble, in_process_adapters, Edges};
use switchyard_core::config::Config;
use switchyard_core::feedback::{FeedbackStore, JsonLinesFeedbackStore};
use switchyard_documents::ChunkIndex;
use switchyard_routing::router::Router;
use switchyard_routing::session::MemorySessionStore;

pub struct Options {
    pub host: String,
    pub port: u16,
    /// Append the decisions and their feedback to this JSON-lines file.
    pub traffic: Option<PathBuf>,
}

/// Serve `router` (built with `config`'s sections); adapters run in-process with their
/// files under `templates_dir`, and documents datasources from their chunk artifacts.
pub fn run(
    config: Config,
    router: Router,
    templates_dir: &Path,
    documents: Vec<(ChunkIndex, String)>,
    schema: Option<ChunkIndex>,
    options: &Options,
) -> Result<()> {
    let feedback = match &options.traffic {
        Some(path) => Some(Arc::new(JsonLinesFeedbackStore::open(path)?) as Arc<dyn FeedbackStore>),
        None => None,
    };
    let (host, port) = (options.host.as_str(), options.port);
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async move {
        let catalog = router.index().catalog.clone();
        let reranker = switchyard_rerank::from_config(&config.composite_retrieval.reranking)?;
        let invoker =
            in_process_adapters(&config, catalog, templates_dir, documents, reranker.clone())
                .await?;
        let sessions = MemorySessionStore::new(config.sessions.clone());
        let edges = Edges {
            schema,
            feedback,
            ..Edges::new(Arc::new(invoker), Arc::new(sessions))
        };
        let service = assemble(config, router, reranker, edges)?;
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
