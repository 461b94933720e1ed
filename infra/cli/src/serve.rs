//! `switchyard serve`: the API on a local HTTP server. Every request goes to the same
//! transport-independent handler the router Lambda runs.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use switchyard_adapters::local::LlmFeatures;
use switchyard_adapters::LocalAdapters;
use switchyard_core::api::{Api, ApiRequest, ApiResponse, MAX_BODY_BYTES};
use switchyard_core::auth::Identity;
use switchyard_core::rerank::RerankStage;
use switchyard_core::rerank_cache::MemoryRerankCache;
use switchyard_core::router::Router;
use switchyard_core::session::MemorySessionStore;

/// Serve `router`; adapters run in-process with their files under `templates_dir`.
pub fn run(router: Router, templates_dir: &Path, host: &str, port: u16) -> Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async move {
        let catalog = router.index().catalog.clone();
        let llm = LlmFeatures::from_config(&router.config().llm)?;
        let invoker = LocalAdapters::open(catalog, Some(templates_dir))
            .await?
            .with_llm(llm);
        let sessions = MemorySessionStore::new(router.config().sessions.clone());
        let reranker =
            switchyard_rerank::from_config(&router.config().composite_retrieval.reranking)?;
        let ttl = router.config().rerank_cache.ttl_seconds;
        let mut api = Api::new(router, invoker, sessions);
        if let Some(reranker) = reranker {
            let cache = Arc::new(MemoryRerankCache::default());
            api = api.with_rerank(RerankStage::new(reranker, cache, ttl));
        }
        let api = Arc::new(api);
        let app = axum::Router::new().fallback(handle).with_state(api);
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

type LocalApi = Api<LocalAdapters, MemorySessionStore>;

async fn handle(State(api): State<Arc<LocalApi>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let identity = Identity {
        api_key: parts
            .headers
            .get("x-api-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        claims: None,
    };
    let response = match to_bytes(body, MAX_BODY_BYTES).await {
        Ok(bytes) => {
            api.handle(ApiRequest {
                method: parts.method.to_string(),
                path: parts.uri.path().to_owned(),
                body: bytes.to_vec(),
                identity,
            })
            .await
        }
        Err(_) => ApiResponse::error(
            413,
            "invalid_request",
            Some("body"),
            format!("body: larger than {MAX_BODY_BYTES} bytes"),
        ),
    };
    let status = StatusCode::from_u16(response.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        Body::from(response.body.to_string()),
    )
        .into_response()
}
