//! The adapter Lambda: one binary for every datasource, configured by environment. At cold
//! start it loads its datasource's templates (`SWITCHYARD_TEMPLATES` catalog folder,
//! `SWITCHYARD_DATASOURCE` name; unset, every datasource of the catalog, as under
//! `cargo lambda watch`), checks them (SQL read-only, HTTP allow-lists) and opens
//! the connection; then each invocation is the adapter contract:
//! `{request_id, datasource, template_id, query, session_parameters, deadline_ms,
//! catalog_hash}` in, `{status, content, data, parameters, missing, error,
//! execution_time_ms}` out. A request routed with another catalog than the function's is
//! refused (`catalog`); metrics leave as CloudWatch EMF (namespace `Switchyard`,
//! `Service: adapter`).

mod catalog;
mod data;
mod settings;

use std::path::{Path, PathBuf};

use anyhow::Context;
use lambda_runtime::LambdaEvent;
use switchyard_adapters::local::{LlmFeatures, Sections, Sources};
use switchyard_adapters::LocalAdapters;
use switchyard_catalog::template::{Catalog, DatasourceKind};
use switchyard_contract::adapter::{
    AdapterInvoker, AdapterOutcome, AdapterRequest, AdapterResponse,
};
use switchyard_documents::ChunkIndex;
use switchyard_s3::{documents_chunks, IndexLocation};

use crate::settings::AdapterSettings;

/// Answer one request with the adapters of the catalog whose hash is `catalog_hash`; a
/// request routed with another catalog, for another datasource, or a transport-level
/// failure, is an `error` answer naming it rather than a Lambda error, so the router
/// shows it as the adapter's error.
async fn handle<I: AdapterInvoker>(
    adapters: &I,
    catalog_hash: &str,
    request: AdapterRequest,
) -> AdapterResponse {
    let answered = match catalog::check(catalog_hash, &request) {
        Ok(()) => adapters.invoke(request).await.map_err(|e| e.to_string()),
        Err(refusal) => Err(refusal),
    };
    match answered {
        Ok(response) => response,
        Err(message) => AdapterResponse {
            outcome: AdapterOutcome::Error(Some(message.clone())),
            content: message,
            data: serde_json::Value::Null,
            parameters: Default::default(),
            missing: Vec::new(),
            execution_time_ms: 0.0,
        },
    }
}

/// The catalog under `templates` narrowed to `datasource` (all of it without one), and the
/// hash of the whole catalog: the router names the whole catalog it routed with.
fn served_catalog(templates: &Path, datasource: Option<&str>) -> anyhow::Result<(Catalog, String)> {
    let mut catalog = Catalog::load(templates)?;
    let hash = catalog.content_hash();
    if let Some(name) = datasource {
        catalog.datasources.retain(|d| d.spec.name == name);
        anyhow::ensure!(
            !catalog.datasources.is_empty(),
            "SWITCHYARD_DATASOURCE: no datasource `{name}` in {}",
            templates.display()
        );
    }
    Ok((catalog, hash))
}

/// The catalog folder and this function's datasource, from the environment: the adapters
/// and the hash of the catalog they come from.
async fn load() -> anyhow::Result<(LocalAdapters, String)> {
    let variable = |name: &str| std::env::var(name).ok();
    let location = IndexLocation::from_env(variable);
    let s3 = match location {
        Some(IndexLocation::S3 { .. }) => {
            Some(switchyard_s3::s3_client(&switchyard_s3::sdk_config().await))
        }
        _ => None,
    };
    let data_root = std::env::temp_dir().join("switchyard-data");
    load_with(variable, location, s3, &data_root).await
}

/// [`load`] with its environment, index location, S3 client and the folder fetched data
/// goes to given.
async fn load_with(
    variable: impl Fn(&str) -> Option<String>,
    location: Option<IndexLocation>,
    s3: Option<aws_sdk_s3::Client>,
    data_root: &Path,
) -> anyhow::Result<(LocalAdapters, String)> {
    let templates = PathBuf::from(
        variable("SWITCHYARD_TEMPLATES")
            .context("SWITCHYARD_TEMPLATES must name the catalog folder")?,
    );
    let datasource = switchyard_s3::variable_set(&variable, "SWITCHYARD_DATASOURCE");
    let (catalog, hash) = served_catalog(&templates, datasource.as_deref())?;
    tracing::info!(catalog = catalog::short(&hash), "catalog loaded");
    switchyard_adapters::check_catalog(&catalog)?;
    let settings = AdapterSettings::from_env()?;
    let retrieval = &settings.composite_retrieval;
    // The model's settings are checked before anything is downloaded.
    let llm = LlmFeatures::from_config(&settings.llm)?;
    let reranker = switchyard_rerank::from_config(&retrieval.reranking)?;
    let documents = load_documents(&catalog, location.as_ref(), s3.as_ref()).await?;
    let fetched =
        data::fetch_duckdb_data(&catalog, location.as_ref(), s3.as_ref(), data_root).await?;
    let sources = Sources {
        templates_dir: Some(&templates),
        fetched: &fetched,
        documents,
    };
    let sections = Sections {
        documents: &settings.documents,
        keywords: &retrieval.keywords,
        reranking: &retrieval.reranking,
    };
    let adapters = LocalAdapters::assemble(catalog, sources, reranker, llm, sections).await?;
    Ok((adapters, hash))
}

/// The chunk artifacts of the catalog's documents datasources, published beside the index
/// (`SWITCHYARD_INDEX_BUCKET` and `SWITCHYARD_INDEX_PREFIX`, or the `SWITCHYARD_INDEX`
/// file). Without either, documents datasources are unavailable; a missing or corrupt
/// artifact stops the cold start, naming it.
async fn load_documents(
    catalog: &Catalog,
    location: Option<&IndexLocation>,
    s3: Option<&aws_sdk_s3::Client>,
) -> anyhow::Result<Vec<(ChunkIndex, String)>> {
    let documents = catalog
        .datasources
        .iter()
        .any(|d| d.spec.kind == DatasourceKind::Documents);
    if !documents {
        return Ok(Vec::new());
    }
    let Some(location) = location else {
        tracing::warn!("neither SWITCHYARD_INDEX_BUCKET nor SWITCHYARD_INDEX is set: documents datasources are unavailable");
        return Ok(Vec::new());
    };
    Ok(documents_chunks(catalog, location, s3).await?)
}

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    tracing_subscriber::fmt()
        .json()
        .with_current_span(false)
        .without_time()
        .init();
    // Each invocation's metrics (`CatalogMismatches`) are flushed to stdout when it ends,
    // tagged with its request id, as the router's are.
    let metrics = metrics_cloudwatch_embedded::Builder::new()
        .cloudwatch_namespace("Switchyard")
        .with_dimension("Service", "adapter")
        .with_lambda_request_id("RequestId")
        .init()
        .map_err(|e| format!("installing the metrics recorder: {e}"))?;
    let (adapters, catalog_hash) = load().await.map_err(|e| {
        tracing::error!(error = %format!("{e:#}"), "cold start failed");
        e
    })?;
    let served = std::sync::Arc::new((adapters, catalog_hash));
    metrics_cloudwatch_embedded::lambda::handler::run(
        metrics,
        move |event: LambdaEvent<AdapterRequest>| {
            let served = served.clone();
            async move {
                let (adapters, catalog_hash) = served.as_ref();
                Ok::<_, lambda_runtime::Error>(handle(adapters, catalog_hash, event.payload).await)
            }
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_contract::adapter::AdapterStatus;

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
        let (catalog, hash) = served_catalog(&root, Some("hr")).unwrap();
        let adapters = LocalAdapters::open(catalog, Some(&root)).await.unwrap();

        let answer = handle(
            &adapters,
            &hash,
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
            &hash,
            request("hr", "employees_count_by_department", "How many employees?"),
        )
        .await;
        assert_eq!(answer.status(), AdapterStatus::NeedsClarification);
        assert_eq!(answer.missing[0]["name"], "department");

        let answer = handle(
            &adapters,
            &hash,
            request("ev", "vehicles_count_by_make", "How many Teslas?"),
        )
        .await;
        assert_eq!(answer.status(), AdapterStatus::Error);
        assert!(answer.error().unwrap().contains("`ev`"));
    }

    /// `from` copied into a new temporary folder, with `replace` applied to `file`.
    fn changed_copy(
        from: &std::path::Path,
        file: &str,
        replace: (&str, &str),
    ) -> tempfile::TempDir {
        fn copy(from: &std::path::Path, to: &std::path::Path) {
            std::fs::create_dir_all(to).unwrap();
            for entry in std::fs::read_dir(from).unwrap() {
                let path = entry.unwrap().path();
                let target = to.join(path.file_name().unwrap());
                if path.is_dir() {
                    copy(&path, &target);
                } else {
                    std::fs::copy(&path, &target).unwrap();
                }
            }
        }
        let dir = tempfile::tempdir().unwrap();
        copy(from, dir.path());
        let path = dir.path().join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(replace.0), "{file} has no {:?}", replace.0);
        std::fs::write(&path, text.replace(replace.0, replace.1)).unwrap();
        dir
    }

    /// An index pushed without redeploying the adapter functions: the router routes with
    /// catalog B, this function holds catalog A. B's request is refused naming both
    /// hashes; A's, and an older router's without a hash, are answered.
    #[tokio::test]
    async fn a_request_routed_with_another_catalog_is_refused_naming_both() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo");
        let b = changed_copy(
            &root,
            "hr/templates.yaml",
            ("Count how many employees", "Count the employees"),
        );
        // The function narrows its catalog to its datasource, but holds the whole one's hash.
        let (catalog, hash_a) = served_catalog(&root, Some("hr")).unwrap();
        assert_eq!(hash_a, Catalog::load(&root).unwrap().content_hash());
        let hash_b = Catalog::load(b.path()).unwrap().content_hash();
        assert_ne!(hash_a, hash_b);
        let adapters = LocalAdapters::open(catalog, Some(&root)).await.unwrap();
        let routed_with = |hash: Option<&str>| {
            let mut request = serde_json::json!({
                "request_id": "r1",
                "datasource": "hr",
                "template_id": "employees_count_by_department",
                "query": "How many employees work in Engineering?",
                "session_parameters": {},
                "deadline_ms": 2000,
            });
            if let Some(hash) = hash {
                request["catalog_hash"] = hash.into();
            }
            serde_json::from_value::<AdapterRequest>(request).unwrap()
        };

        let answer = handle(&adapters, &hash_a, routed_with(Some(&hash_b))).await;
        assert_eq!(answer.status(), AdapterStatus::Error, "{answer:?}");
        let error = answer.error().unwrap();
        for named in [
            &hash_a[..12],
            &hash_b[..12],
            "redeploy the adapter functions",
        ] {
            assert!(error.contains(named), "{named:?} missing from: {error}");
        }
        assert_eq!(answer.content, error);
        assert_eq!(answer.data, serde_json::Value::Null, "nothing was executed");

        for hash in [Some(hash_a.as_str()), None] {
            let answer = handle(&adapters, &hash_a, routed_with(hash)).await;
            assert_eq!(answer.status(), AdapterStatus::Ok, "{hash:?}: {answer:?}");
            assert_eq!(answer.content, "14 employees work in Engineering.");
        }
    }

    /// The demo's `policies` chunks, built with the hashing embedder (the adapter checks
    /// the question's model against the artifact's, nothing else about the model).
    fn policies_chunks(catalog: &Catalog, root: &std::path::Path) -> ChunkIndex {
        let policies = catalog.datasource("policies").unwrap();
        let docs = switchyard_documents::load_corpus(
            &switchyard_documents::corpus_path(policies, &root.join("policies")).unwrap(),
        )
        .unwrap();
        let embedder = switchyard_vectors::embed::HashingEmbedder::new(64);
        ChunkIndex::build(
            "policies",
            &docs,
            &embedder,
            &AdapterSettings::default().documents,
            &|_, _| {},
        )
        .unwrap()
    }

    /// On moto_server: the chunk artifact published beside the index is read at cold start
    /// and answers; an absent one stops the cold start naming its place.
    #[tokio::test]
    async fn a_documents_datasource_reads_its_chunks_from_beside_the_index_in_s3() {
        let s3 = crate::data::tests::moto_s3().await;
        let bucket = format!("adapter-chunks-{}", std::process::id());
        s3.create_bucket().bucket(&bucket).send().await.unwrap();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo");
        let (catalog, hash) = served_catalog(&root, Some("policies")).unwrap();
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
        switchyard_s3::S3IndexStore::new(
            s3.clone(),
            &bucket,
            &switchyard_s3::chunks_prefix("demo", "policies"),
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
            .with_documents(
                documents,
                &AdapterSettings::default().documents,
                &AdapterSettings::default().composite_retrieval.keywords,
                None,
            )
            .unwrap();
        // Without the question's vector (a direct invocation) the search is BM25 alone.
        let answer = handle(
            &adapters,
            &hash,
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
        other.query_vector = Some(switchyard_contract::adapter::QueryVector {
            model_id: "another-model".into(),
            values: vec![0.0; 64],
        });
        let answer = handle(&adapters, &hash, other).await;
        assert_eq!(answer.status(), AdapterStatus::Error, "{answer:?}");
        assert!(answer.content.contains("another-model"), "{answer:?}");
    }
}
