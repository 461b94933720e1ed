//! The router Lambda's parts, kept out of `main` so tests drive them against emulators:
//! [`Settings`] from the environment, [`cold_start`] (index from S3 or a file, checked;
//! the model; the stores; the adapter invoker), [`app`] (the HTTP app `switchyard serve`
//! runs too) and [`handle`] (an API Gateway HTTP API event through it).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use lambda_http::{Body, Request, Response};
use switchyard_adapters::LocalAdapters;
use switchyard_app::{assemble, in_process_adapters, Edges};
use switchyard_aws::index::IndexPublishing;
use switchyard_aws::{
    DynamoFeedbackStore, DynamoRerankCache, DynamoSessionStore, DynamoTopicStore,
    DynamoTransitionStore, DynamoWorkflowStore, LambdaInvoker,
};
use switchyard_catalog::error::Error;
use switchyard_catalog::template::Catalog;
use switchyard_contract::adapter::AdapterInvoker;
use switchyard_contract::rerank::Reranker;
use switchyard_core::config::Config;
use switchyard_core::feedback::FeedbackStore;
use switchyard_core::orchestration::WorkflowStore;
use switchyard_core::rerank_cache::RerankCache;
use switchyard_core::service::Service;
use switchyard_documents::schema::SCHEMA_ARTIFACT;
use switchyard_documents::{artifact_beside, ChunkIndex};
use switchyard_embed::MiniLmEmbedder;
use switchyard_index::index::Index;
use switchyard_routing::router::Router;
use switchyard_routing::session::{MemorySessionStore, SessionStore};
use switchyard_routing::topics::TopicStore;
use switchyard_routing::transitions::TransitionStore;
use switchyard_s3::IndexLocation;
use switchyard_s3::{chunks_prefix, documents_chunks, variable_set, S3IndexStore};
use switchyard_vectors::embed::CachedEmbedder;
use switchyard_vectors::VectorsError;
use tower::ServiceExt;

pub use error::ColdStartError;

mod error;

type Result<T, E = ColdStartError> = std::result::Result<T, E>;

/// Where the router's parts live, from the environment.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub index: IndexLocation,
    /// `SWITCHYARD_SESSIONS_TABLE`; without it sessions live in this instance's memory.
    pub sessions_table: Option<String>,
    /// `SWITCHYARD_RERANK_CACHE_TABLE`; without it reranker answers are cached in memory.
    pub rerank_cache_table: Option<String>,
    /// `SWITCHYARD_FEEDBACK_TABLE`; without it decisions for feedback are kept in memory.
    pub feedback_table: Option<String>,
    /// `SWITCHYARD_WORKFLOW_TABLE`; without it split questions' checkpoints are kept in
    /// this instance's memory (a retry on another instance starts the workflow afresh).
    pub workflow_table: Option<String>,
    /// `SWITCHYARD_TOPICS_TABLE`; without it callers' topic words are kept in this
    /// instance's memory.
    pub topics_table: Option<String>,
    /// `SWITCHYARD_TEMPLATES`: the folder of the index's catalog (the TemplatesLayer's
    /// `/opt/templates/<catalog>`, for its datasources' files). Set, the adapters run inside
    /// this function instead of being invoked as adapter functions: one function for a small stack, and how
    /// `sam local` runs the router without a Lambda endpoint to invoke.
    pub templates: Option<PathBuf>,
}

impl Settings {
    /// The variables [`Settings::from_env`] reads (template.yaml's router declares them;
    /// `tests/template.rs` holds the two together).
    pub const VARIABLES: &'static [&'static str] = &[
        "SWITCHYARD_INDEX_BUCKET",
        "SWITCHYARD_INDEX_PREFIX",
        "SWITCHYARD_INDEX",
        "SWITCHYARD_SESSIONS_TABLE",
        "SWITCHYARD_RERANK_CACHE_TABLE",
        "SWITCHYARD_FEEDBACK_TABLE",
        "SWITCHYARD_WORKFLOW_TABLE",
        "SWITCHYARD_TOPICS_TABLE",
        "SWITCHYARD_TEMPLATES",
    ];

    /// Every variable is read with [`variable_set`]: declared but empty counts as unset.
    pub fn from_env(variable: impl Fn(&str) -> Option<String>) -> Result<Settings, Error> {
        let Some(index) = IndexLocation::from_env(&variable) else {
            return Err(Error::Config {
                origin: "environment".into(),
                field: "SWITCHYARD_INDEX_BUCKET".into(),
                message: "set it (with SWITCHYARD_INDEX_PREFIX) to the index bucket, or SWITCHYARD_INDEX to an artifact file".into(),
            });
        };
        let set = |name: &str| variable_set(&variable, name);
        Ok(Settings {
            index,
            sessions_table: set("SWITCHYARD_SESSIONS_TABLE"),
            rerank_cache_table: set("SWITCHYARD_RERANK_CACHE_TABLE"),
            feedback_table: set("SWITCHYARD_FEEDBACK_TABLE"),
            workflow_table: set("SWITCHYARD_WORKFLOW_TABLE"),
            topics_table: set("SWITCHYARD_TOPICS_TABLE"),
            templates: set("SWITCHYARD_TEMPLATES").map(PathBuf::from),
        })
    }
}

pub type RouterService = Service;

/// The bound on one attempt at a DynamoDB call of the stores (sessions, feedback,
/// workflow checkpoints, rerank cache), and on the call with its retries. The SDK sets
/// neither: without them a table that stalls instead of refusing (a paused or overloaded
/// endpoint, a half-open connection) held every answer until it came back. Sessions and
/// feedback are a help, never a precondition; DynamoDB answers in milliseconds. A client
/// configured with its own operation timeouts keeps them.
pub const STORE_ATTEMPT_TIMEOUT: Duration = Duration::from_millis(500);
pub const STORE_CALL_TIMEOUT: Duration = Duration::from_secs(1);

/// `client` with [`STORE_ATTEMPT_TIMEOUT`] and [`STORE_CALL_TIMEOUT`], unless it has
/// operation timeouts of its own.
fn bounded(client: aws_sdk_dynamodb::Client) -> aws_sdk_dynamodb::Client {
    let config = client.config();
    let given = config.timeout_config();
    if given
        .is_some_and(|t| t.operation_timeout().is_some() || t.operation_attempt_timeout().is_some())
    {
        return client;
    }
    let mut timeouts = TimeoutConfig::builder()
        .operation_attempt_timeout(STORE_ATTEMPT_TIMEOUT)
        .operation_timeout(STORE_CALL_TIMEOUT)
        .build();
    if let Some(given) = given {
        timeouts.take_defaults_from(given);
    }
    aws_sdk_dynamodb::Client::from_conf(config.to_builder().timeout_config(timeouts).build())
}

/// How long each part of the cold start took, in milliseconds.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ColdStart {
    pub index_origin: String,
    pub index_bytes: usize,
    pub fetch_ms: f64,
    pub load_ms: f64,
    pub model_ms: f64,
    /// Embedding the index's probe sentences to check the model against its builder's.
    pub drift_check_ms: f64,
    pub total_ms: f64,
}

/// The model the index was embedded with: the base model of the layer
/// (`SWITCHYARD_MODEL_DIR`), or the adapted int8 graph its manifest names, fetched from
/// `<prefix>/encoders/<sha256>.onnx` (S3) or read from beside the index file, and refused
/// when its checksum is not the manifest's.
async fn load_encoder(
    location: &IndexLocation,
    s3: &aws_sdk_s3::Client,
    index: &Index,
    artifact: &str,
    config: &Config,
) -> Result<MiniLmEmbedder> {
    let Some(manifest) = &index.manifest.encoder else {
        return Ok(MiniLmEmbedder::from_config(&config.embedding)?);
    };
    let (origin, bytes) = match location {
        IndexLocation::S3 { bucket, prefix } => {
            S3IndexStore::new(s3.clone(), bucket, prefix)
                .fetch_encoder(manifest)
                .await?
        }
        IndexLocation::File(path) => {
            let graph = path.with_extension("encoder.onnx");
            let bytes = std::fs::read(&graph).map_err(|e| {
                VectorsError::artifact(
                    artifact,
                    format!(
                        "the index was built with the adapted encoder {}, expected beside it at {}: {e}",
                        manifest.model_id,
                        graph.display()
                    ),
                )
            })?;
            (graph.display().to_string(), bytes)
        }
    };
    Ok(MiniLmEmbedder::adapted(
        &config.embedding,
        manifest,
        bytes,
        &origin,
        artifact,
    )?)
}

/// The SDK clients the router uses (built once in `main`, or by tests for emulators).
pub struct Clients {
    pub s3: aws_sdk_s3::Client,
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub lambda: aws_sdk_lambda::Client,
}

/// Everything the handler needs, loaded and checked once: the index (verified, and
/// matched against the model), the model, the stores (sessions, rerank cache, feedback,
/// workflow checkpoints) and the adapter invoker.
/// Errors name the bucket and key, the file or the model folder, and why.
pub async fn cold_start(
    settings: &Settings,
    config: Config,
    clients: Clients,
    variable: impl Fn(&str) -> Option<String>,
) -> Result<(RouterService, ColdStart)> {
    let started = Instant::now();
    // `artifact` names the object loaded: a refusal says which one to replace.
    let (origin, artifact, bytes) = match &settings.index {
        IndexLocation::S3 { bucket, prefix } => {
            let store = S3IndexStore::new(clients.s3.clone(), bucket, prefix);
            let (pointer, bytes) = store.fetch_current().await?;
            let artifact = format!(
                "s3://{bucket}/{} (named by {})",
                pointer.key,
                store.origin()
            );
            (store.origin(), artifact, bytes)
        }
        IndexLocation::File(path) => {
            let bytes = std::fs::read(path).map_err(|e| VectorsError::io(path, e))?;
            let origin = path.display().to_string();
            (origin.clone(), origin, bytes)
        }
    };
    let fetch_ms = ms_since(started);
    let loading = Instant::now();
    let index = Index::from_bytes(&bytes, &artifact)?;
    let load_ms = ms_since(loading);
    let model = Instant::now();
    let embedder = CachedEmbedder::wrap(
        Arc::new(load_encoder(&settings.index, &clients.s3, &index, &artifact, &config).await?),
        config.embedding.cache_size,
    );
    // Documents and SQL schemas are searched with the base model (of the layer) when the
    // routing encoder is adapted to the templates: `index build` embedded them with it.
    let documents_embedder = if index.manifest.encoder.is_some() && index.catalog.searches_texts() {
        Some(CachedEmbedder::wrap(
            Arc::new(MiniLmEmbedder::from_config(&config.embedding)?),
            config.embedding.cache_size,
        ))
    } else {
        None
    };
    let model_ms = ms_since(model);
    let reranker = switchyard_rerank::from_config(&config.composite_retrieval.reranking)?;
    let dynamodb = bounded(clients.dynamodb);
    let rerank_cache = settings.rerank_cache_table.as_ref().map(|table| {
        Arc::new(DynamoRerankCache::new(dynamodb.clone(), table)) as Arc<dyn RerankCache>
    });
    let feedback = settings.feedback_table.as_ref().map(|table| {
        Arc::new(DynamoFeedbackStore::new(
            dynamodb.clone(),
            table,
            config.feedback.ttl_seconds,
        )) as Arc<dyn FeedbackStore>
    });
    let workflows = settings.workflow_table.as_ref().map(|table| {
        Arc::new(DynamoWorkflowStore::new(dynamodb.clone(), table)) as Arc<dyn WorkflowStore>
    });
    let topics = settings.topics_table.as_ref().map(|table| {
        Arc::new(DynamoTopicStore::new(
            dynamodb.clone(),
            table,
            config.sessions.topics.ttl_seconds,
        )) as Arc<dyn TopicStore>
    });
    // One item of the topics table that every instance adds to.
    let transitions = settings.topics_table.as_ref().map(|table| {
        Arc::new(DynamoTransitionStore::new(dynamodb.clone(), table)) as Arc<dyn TransitionStore>
    });
    let sessions: Arc<dyn SessionStore> = match &settings.sessions_table {
        Some(table) => Arc::new(DynamoSessionStore::new(
            dynamodb,
            table,
            config.sessions.clone(),
        )),
        None => Arc::new(MemorySessionStore::new(config.sessions.clone())),
    };
    let schema = load_schema(&settings.index, &clients.s3).await?;
    let invoker: Arc<dyn AdapterInvoker> = match &settings.templates {
        Some(folder) => Arc::new(
            adapters_in_this_function(
                folder,
                index.catalog.clone(),
                &settings.index,
                &clients.s3,
                &config,
                reranker.clone(),
            )
            .await?,
        ),
        None => Arc::new(LambdaInvoker::new(
            clients.lambda,
            index.catalog.clone(),
            variable,
        )),
    };
    let mut router = Router::new(index, config.router(), embedder, &artifact)?;
    if let Some(embedder) = documents_embedder {
        router = router.with_documents_embedder(embedder);
    }
    let report = ColdStart {
        index_origin: origin,
        index_bytes: bytes.len(),
        fetch_ms,
        load_ms,
        model_ms,
        drift_check_ms: router.drift().check_ms,
        total_ms: ms_since(started),
    };
    let edges = Edges {
        rerank_cache,
        feedback,
        workflows,
        topics,
        transitions,
        schema,
        ..Edges::new(invoker, sessions)
    };
    let service = assemble(config, router, reranker, edges)?;
    Ok((service, report))
}

/// The adapters of the index's catalog, run in this function as `switchyard serve` runs
/// them: their files (SQLite seeds) under `folder`, checked like the adapter function's
/// (SQL read-only, HTTP allow-lists), documents from the chunk artifacts published beside
/// the index. The index's own catalog, so the adapters know exactly the templates routed to.
async fn adapters_in_this_function(
    folder: &Path,
    catalog: Catalog,
    location: &IndexLocation,
    s3: &aws_sdk_s3::Client,
    config: &Config,
    reranker: Option<Arc<dyn Reranker>>,
) -> Result<LocalAdapters> {
    let refused = |e: switchyard_adapters::AdapterError| {
        ColdStartError::from(Error::Config {
            origin: "environment".into(),
            field: "SWITCHYARD_TEMPLATES".into(),
            message: format!("{}: {e}", folder.display()),
        })
    };
    switchyard_adapters::check_catalog(&catalog).map_err(refused)?;
    let documents = documents_chunks(&catalog, location, Some(s3)).await?;
    in_process_adapters(config, catalog, folder, documents, reranker)
        .await
        .map_err(refused)
}

/// The SQL schema's chunk artifact published beside the index, if any: it only helps
/// `no_match` answers, so an unpublished or unreachable one is a warning; a corrupt one
/// stops the cold start like a corrupt index.
async fn load_schema(
    location: &IndexLocation,
    s3: &aws_sdk_s3::Client,
) -> Result<Option<ChunkIndex>> {
    match location {
        IndexLocation::S3 { bucket, prefix } => {
            let prefix = chunks_prefix(prefix, SCHEMA_ARTIFACT);
            let store = S3IndexStore::new(s3.clone(), bucket, &prefix);
            match store.fetch().await {
                Ok(bytes) => Ok(Some(ChunkIndex::from_bytes(&bytes, &store.origin())?)),
                Err(e) => {
                    tracing::warn!(error = %e, "no SQL schema artifact; no_match answers suggest no tables");
                    Ok(None)
                }
            }
        }
        IndexLocation::File(path) => {
            let path = artifact_beside(path, SCHEMA_ARTIFACT);
            if path.is_file() {
                Ok(Some(ChunkIndex::read(&path)?))
            } else {
                Ok(None)
            }
        }
    }
}

fn ms_since(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}

/// The router's HTTP app: the same one `switchyard serve` runs.
pub fn app(service: RouterService) -> axum::Router {
    switchyard_http::app(Arc::new(service))
}

/// One API Gateway event through the app, answered as API Gateway expects it.
pub async fn handle(app: axum::Router, event: Request) -> Response<Body> {
    let response = match app.oneshot(event).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    lambda_http::IntoResponse::into_response(response).await
}
