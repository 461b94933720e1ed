//! The adapter Lambda: one binary for every datasource, configured by environment. At cold
//! start it loads its datasource's templates (`SWITCHYARD_TEMPLATES` catalog folder,
//! `SWITCHYARD_DATASOURCE` name; unset, every datasource of the catalog, as under
//! `cargo lambda watch`), checks them (SQL read-only, HTTP allow-lists) and opens
//! the connection; then each invocation is the adapter contract:
//! `{request_id, datasource, template_id, query, session_parameters, deadline_ms}` in,
//! `{status, content, data, parameters, missing, error, execution_time_ms}` out.

use std::path::PathBuf;

use anyhow::Context;
use lambda_runtime::{service_fn, LambdaEvent};
use switchyard_adapters::local::LlmFeatures;
use switchyard_adapters::LocalAdapters;
use switchyard_aws::{documents_chunks, IndexLocation};
use switchyard_core::config::Config;
use switchyard_core::documents::ChunkIndex;
use switchyard_core::invoker::{AdapterInvoker, AdapterOutcome, AdapterRequest, AdapterResponse};
use switchyard_core::template::{Catalog, DatasourceKind};

/// Answer one request; a request for another datasource, or a transport-level failure,
/// is an `error` answer naming it rather than a Lambda error, so the router can show it.
async fn handle<I: AdapterInvoker>(adapters: &I, request: AdapterRequest) -> AdapterResponse {
    match adapters.invoke(request).await {
        Ok(response) => response,
        Err(e) => AdapterResponse {
            outcome: AdapterOutcome::Error(Some(e.to_string())),
            content: e.to_string(),
            data: serde_json::Value::Null,
            parameters: Default::default(),
            missing: Vec::new(),
            execution_time_ms: 0.0,
        },
    }
}

/// The catalog folder and this function's datasource, from the environment.
async fn load() -> anyhow::Result<LocalAdapters> {
    let templates = PathBuf::from(
        std::env::var_os("SWITCHYARD_TEMPLATES")
            .context("SWITCHYARD_TEMPLATES must name the catalog folder")?,
    );
    let mut catalog = Catalog::load(&templates)?;
    if let Some(name) =
        switchyard_aws::variable_set(|n| std::env::var(n).ok(), "SWITCHYARD_DATASOURCE")
    {
        catalog.datasources.retain(|d| d.spec.name == name);
        anyhow::ensure!(
            !catalog.datasources.is_empty(),
            "SWITCHYARD_DATASOURCE: no datasource `{name}` in {}",
            templates.display()
        );
    }
    switchyard_adapters::check_catalog(&catalog)?;
    let config = Config::from_env(None)?;
    let llm = LlmFeatures::from_config(&config.llm)?;
    let documents = load_documents(&catalog).await?;
    let reranker = switchyard_rerank::from_config(&config.composite_retrieval.reranking)?;
    Ok(LocalAdapters::open(catalog, Some(&templates))
        .await?
        .with_documents(documents, &config, reranker)?
        .with_llm(llm))
}

/// The chunk artifacts of the catalog's documents datasources, published beside the index
/// (`SWITCHYARD_INDEX_BUCKET` and `SWITCHYARD_INDEX_PREFIX`, or the `SWITCHYARD_INDEX`
/// file). Without either, documents datasources are unavailable; a missing or corrupt
/// artifact stops the cold start, naming it.
async fn load_documents(catalog: &Catalog) -> anyhow::Result<Vec<(ChunkIndex, String)>> {
    let documents = catalog
        .datasources
        .iter()
        .any(|d| d.spec.kind == DatasourceKind::Documents);
    if !documents {
        return Ok(Vec::new());
    }
    let Some(location) = IndexLocation::from_env(|name| std::env::var(name).ok()) else {
        tracing::warn!("neither SWITCHYARD_INDEX_BUCKET nor SWITCHYARD_INDEX is set: documents datasources are unavailable");
        return Ok(Vec::new());
    };
    let s3 = match location {
        IndexLocation::S3 { .. } => Some(switchyard_aws::s3_client(
            &switchyard_aws::sdk_config().await,
        )),
        IndexLocation::File(_) => None,
    };
    Ok(documents_chunks(catalog, &location, s3.as_ref()).await?)
}

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    tracing_subscriber::fmt()
        .json()
        .with_current_span(false)
        .without_time()
        .init();
    let adapters = std::sync::Arc::new(load().await.map_err(|e| {
        tracing::error!(error = %format!("{e:#}"), "cold start failed");
        e
    })?);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<AdapterRequest>| {
        let adapters = adapters.clone();
        async move { Ok::<_, lambda_runtime::Error>(handle(adapters.as_ref(), event.payload).await) }
    }))
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_core::invoker::AdapterStatus;

    fn request(datasource: &str, template_id: &str, query: &str) -> AdapterRequest {
        serde_json::from_value(serde_json::json!({
            "request_id": "r1",
            "datasource": datasource,
            "template_id": template_id,
            "query": query,
            "session_parameters": {},
            "deadline_ms": 2000,
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn answers_its_datasource_and_names_others() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo");
        let mut catalog = Catalog::load(&root).unwrap();
        catalog.datasources.retain(|d| d.spec.name == "hr");
        let adapters = LocalAdapters::open(catalog, Some(&root)).await.unwrap();

        let answer = handle(
            &adapters,
            request(
                "hr",
                "employees_count_by_department",
                "How many employees work in Engineering?",
            ),
        )
        .await;
        assert_eq!(answer.status(), AdapterStatus::Ok, "{answer:?}");
        assert_eq!(answer.content, "14 employees work in Engineering.");

        let answer = handle(
            &adapters,
            request("hr", "employees_count_by_department", "How many employees?"),
        )
        .await;
        assert_eq!(answer.status(), AdapterStatus::NeedsClarification);
        assert_eq!(answer.missing[0]["name"], "department");

        let answer = handle(
            &adapters,
            request("ev", "vehicles_count_by_make", "How many Teslas?"),
        )
        .await;
        assert_eq!(answer.status(), AdapterStatus::Error);
        assert!(answer.error().unwrap().contains("`ev`"));
    }

    /// The demo's `policies` chunks, built with the hashing embedder (the adapter checks
    /// the question's model against the artifact's, nothing else about the model).
    fn policies_chunks(catalog: &Catalog, root: &std::path::Path) -> ChunkIndex {
        let policies = catalog.datasource("policies").unwrap();
        let docs = switchyard_core::documents::load_corpus(
            &switchyard_core::documents::corpus_path(policies, &root.join("policies")).unwrap(),
        )
        .unwrap();
        let embedder = switchyard_core::embed::HashingEmbedder::new(64);
        ChunkIndex::build(
            "policies",
            &docs,
            &embedder,
            &Config::default().documents,
            &|_, _| {},
        )
        .unwrap()
    }

    /// On moto_server: the chunk artifact published beside the index is read at cold start
    /// and answers; an absent one stops the cold start naming its place.
    #[tokio::test]
    async fn a_documents_datasource_reads_its_chunks_from_beside_the_index_in_s3() {
        let moto = std::env::var("SWITCHYARD_TEST_MOTO_URL").expect(
            "SWITCHYARD_TEST_MOTO_URL is not set: start the emulators with ./infra/scripts/aws-local.sh start (./infra/scripts/test.sh does)",
        );
        let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .endpoint_url(&moto)
            .region(aws_config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_s3::config::Credentials::new(
                "test", "test", None, None, "tests",
            ))
            .load()
            .await;
        let s3 = switchyard_aws::s3_client(&sdk);
        let bucket = format!("adapter-chunks-{}", std::process::id());
        s3.create_bucket().bucket(&bucket).send().await.unwrap();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo");
        let mut catalog = Catalog::load(&root).unwrap();
        catalog.datasources.retain(|d| d.spec.name == "policies");
        let location = IndexLocation::S3 {
            bucket: bucket.clone(),
            prefix: "demo".into(),
        };

        let error = match documents_chunks(&catalog, &location, Some(&s3)).await {
            Ok(_) => panic!("no artifact was published"),
            Err(e) => format!("{e:#}"),
        };
        assert!(
            error.contains(&format!("s3://{bucket}/demo/chunks/policies/current")),
            "{error}"
        );

        let chunks = policies_chunks(&catalog, &root);
        switchyard_aws::S3IndexStore::new(
            s3.clone(),
            &bucket,
            &switchyard_aws::chunks_prefix("demo", "policies"),
        )
        .push_chunks(&chunks.to_bytes().unwrap())
        .await
        .unwrap();
        let documents = documents_chunks(&catalog, &location, Some(&s3))
            .await
            .unwrap();
        assert_eq!(documents.len(), 1);
        let adapters = LocalAdapters::open(catalog, Some(&root))
            .await
            .unwrap()
            .with_documents(documents, &Config::default(), None)
            .unwrap();
        // Without the question's vector (a direct invocation) the search is BM25 alone.
        let answer = handle(
            &adapters,
            request(
                "policies",
                "policy_question",
                "Is windscreen damage covered?",
            ),
        )
        .await;
        assert_eq!(answer.status(), AdapterStatus::Ok, "{answer:?}");
        assert_eq!(answer.data["chunks"][0]["document"], "car", "{answer:?}");
        assert!(answer.data["search"].as_str().unwrap().starts_with("bm25"));

        // A vector from another model than the artifact's is refused by name.
        let mut other = request(
            "policies",
            "policy_question",
            "Is windscreen damage covered?",
        );
        other.query_vector = Some(switchyard_core::invoker::QueryVector {
            model_id: "another-model".into(),
            values: vec![0.0; 64],
        });
        let answer = handle(&adapters, other).await;
        assert_eq!(answer.status(), AdapterStatus::Error, "{answer:?}");
        assert!(answer.content.contains("another-model"), "{answer:?}");
    }
}
