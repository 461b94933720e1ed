//! The in-process adapters: one `AdapterInvoker` that answers every datasource of a
//! catalog whose adapter runs locally (intent, SQLite, PostgreSQL, HTTP/JSON, GraphQL,
//! built-in tools), each opened by [`crate::registry::open`]. Kinds without a local adapter
//! are refused as unavailable, never answered with a made-up result.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::{timeout_at, Instant};

use crate::respond::{find, respond};
use switchyard_catalog::blocking::run_blocking;
use switchyard_catalog::error::Error;
use switchyard_catalog::template::{Catalog, DatasourceKind, Template};
use switchyard_catalog::BoxFuture;
use switchyard_contract::adapter::{
    AdapterInvoker, AdapterOutcome, AdapterRequest, AdapterResponse, AdapterStatus, GENERATED_SQL,
};
use switchyard_contract::rerank::{Reranker, Reranking};
use switchyard_contract::ContractError;
use switchyard_documents::config::DocumentsConfig;
use switchyard_documents::ChunkIndex;
use switchyard_llm::config::LlmConfig;
use switchyard_text::config::Keywords;
use switchyard_text::params::extract;

use crate::adapter::Adapter;
use crate::documents::{ChunkRerank, DocumentsAdapter};
use crate::llm::Assistant;
use crate::registry;

pub struct LocalAdapters {
    catalog: Catalog,
    /// The adapter of each datasource this process serves, by datasource name.
    adapters: HashMap<String, Box<dyn Adapter>>,
    llm: Option<LlmFeatures>,
}

/// The optional model behind the adapters and which of its features are on.
pub struct LlmFeatures {
    pub assistant: Assistant,
    pub fill_missing_parameters: bool,
    pub synthesize_response: bool,
    pub text_to_sql: bool,
}

impl LlmFeatures {
    /// From the `llm` configuration: `None` when no feature is on.
    pub fn from_config(config: &LlmConfig) -> crate::Result<Option<LlmFeatures>> {
        let (Some(endpoint), Some(model)) = (&config.endpoint, &config.model) else {
            return Ok(None);
        };
        if !(config.fill_missing_parameters || config.synthesize_response || config.text_to_sql) {
            return Ok(None);
        }
        Ok(Some(LlmFeatures {
            assistant: Assistant::new(
                endpoint.clone(),
                model.clone(),
                config.api_key_env.clone(),
                Duration::from_millis(config.timeout_ms),
            )?,
            fill_missing_parameters: config.fill_missing_parameters,
            synthesize_response: config.synthesize_response,
            text_to_sql: config.text_to_sql,
        }))
    }
}

/// The configuration's sections in-process adapters read (the `llm` section as the
/// [`LlmFeatures`] it gives, built first, so a bad one stops a cold start before any
/// download).
pub struct Sections<'a> {
    pub documents: &'a DocumentsConfig,
    pub keywords: &'a Keywords,
    pub reranking: &'a Reranking,
}

/// Where in-process adapters find their files: the catalog folder, the datasources whose
/// files were fetched elsewhere (DuckDB data from S3), and the documents' chunk artifacts
/// (each with where it came from).
pub struct Sources<'a> {
    pub templates_dir: Option<&'a Path>,
    pub fetched: &'a BTreeMap<String, PathBuf>,
    pub documents: Vec<(ChunkIndex, String)>,
}

impl LocalAdapters {
    /// The in-process adapters of `catalog`, set up the one way the router Lambda,
    /// `switchyard serve` and the adapter function all use: opened from `sources`, the
    /// documents' passages reranked by `reranker` when there is one, the chat model's
    /// `llm` features when there are some.
    pub async fn assemble(
        catalog: Catalog,
        sources: Sources<'_>,
        reranker: Option<Arc<dyn Reranker>>,
        llm: Option<LlmFeatures>,
        sections: Sections<'_>,
    ) -> crate::Result<LocalAdapters> {
        let rerank = reranker.map(|reranker| ChunkRerank::new(reranker, sections.reranking));
        Ok(
            Self::open_with_files(catalog, sources.templates_dir, sources.fetched)
                .await?
                .with_documents(
                    sources.documents,
                    sections.documents,
                    sections.keywords,
                    rerank,
                )?
                .with_llm(llm),
        )
    }

    /// Open the local adapters of `catalog`. `templates_dir` is the catalog folder that
    /// holds the datasources' files (SQLite seeds, DuckDB data), each in the folder named
    /// after its datasource; a SQLite or DuckDB datasource without its folder there is
    /// unavailable. A server-backed datasource connects when the variable its
    /// `connection.url_env` names is set, and is unavailable otherwise.
    pub async fn open(
        catalog: Catalog,
        templates_dir: Option<&Path>,
    ) -> crate::Result<LocalAdapters> {
        Self::open_with_files(catalog, templates_dir, &BTreeMap::new()).await
    }

    /// [`LocalAdapters::open`], with the files of the datasources `fetched` names read from
    /// the folder it gives instead (DuckDB data fetched from S3 by the adapter function).
    pub async fn open_with_files(
        catalog: Catalog,
        templates_dir: Option<&Path>,
        fetched: &BTreeMap<String, PathBuf>,
    ) -> crate::Result<LocalAdapters> {
        let mut adapters = HashMap::new();
        for datasource in &catalog.datasources {
            let name = datasource.name();
            let folder = match fetched.get(name) {
                Some(folder) => Some(folder.clone()),
                None => templates_dir.map(|root| root.join(name)),
            };
            if let Some(opened) = registry::open(datasource, folder.as_deref()).await? {
                adapters.insert(datasource.name().to_owned(), opened);
            }
        }
        Ok(LocalAdapters {
            catalog,
            adapters,
            llm: None,
        })
    }

    /// Serve documents datasources from their chunk artifacts: (artifact, where it came
    /// from), searched with the `documents` section and the keywords' term expansion,
    /// their answers' chunks reranked when `rerank` is given. An artifact for a datasource
    /// the catalog has not, or not of kind documents, or built for another datasource, is
    /// refused.
    pub fn with_documents(
        mut self,
        artifacts: Vec<(ChunkIndex, String)>,
        documents: &DocumentsConfig,
        keywords: &Keywords,
        rerank: Option<ChunkRerank>,
    ) -> crate::Result<LocalAdapters> {
        for (chunks, origin) in artifacts {
            let name = chunks.manifest.datasource.clone();
            let datasource = self
                .catalog
                .datasource(&name)
                .filter(|d| d.spec.kind == DatasourceKind::Documents)
                .ok_or_else(|| crate::AdapterError::Datasource {
                    datasource: name.clone(),
                    message: format!(
                        "{origin}: no documents datasource of this name in the catalog"
                    ),
                })?;
            let adapter = DocumentsAdapter::new(datasource, chunks, &origin, documents, keywords)?
                .with_rerank(rerank.clone());
            self.adapters.insert(name, Box::new(adapter));
        }
        Ok(self)
    }

    /// Use a model to fill missing parameters and/or rewrite answers.
    pub fn with_llm(mut self, llm: Option<LlmFeatures>) -> LocalAdapters {
        self.llm = llm;
        self
    }

    /// Required parameters the question leaves out, asked of the model when that is on.
    /// They join the request's supplied values and are checked like any other; a model
    /// failure leaves them missing, so the answer asks the user.
    async fn fill_with_model(
        &self,
        template: &Template,
        request: &AdapterRequest,
        end: Instant,
    ) -> AdapterRequest {
        let mut request = request.clone();
        let Some(llm) = self.llm.as_ref().filter(|l| l.fill_missing_parameters) else {
            return request;
        };
        let missing: Vec<String> = extract(template, &request.query, &request.session_parameters)
            .missing
            .into_iter()
            .map(|m| m.name)
            .collect();
        if missing.is_empty() {
            return request;
        }
        let asked = llm
            .assistant
            .fill_missing(template, &request.query, &missing);
        match timeout_at(end, asked).await {
            Ok(Ok(values)) => request.session_parameters.extend(values),
            Ok(Err(e)) => {
                tracing::warn!(template = %template.id, error = %e, "model could not fill parameters")
            }
            Err(_) => {
                tracing::warn!(template = %template.id, "model filled no parameters within the request's deadline")
            }
        }
        request
    }

    /// The model's phrasing of a successful answer, when that is on; the rendered answer
    /// stays when the model fails. Intent answers are not rephrased.
    async fn synthesize(
        &self,
        kind: DatasourceKind,
        template: &Template,
        query: &str,
        response: &mut AdapterResponse,
        end: Instant,
    ) {
        let Some(llm) = self.llm.as_ref().filter(|l| l.synthesize_response) else {
            return;
        };
        if response.status() != AdapterStatus::Ok || kind == DatasourceKind::Intent {
            return;
        }
        let asked = llm
            .assistant
            .synthesize(query, &response.content, &response.data);
        match timeout_at(end, asked).await {
            Ok(Ok(text)) => response.content = text,
            Ok(Err(e)) => {
                tracing::warn!(template = %template.id, error = %e, "synthesis failed; answering with the rendered template")
            }
            Err(_) => {
                tracing::warn!(template = %template.id, "no synthesis within the request's deadline; answering with the rendered template")
            }
        }
    }

    /// A question no template fits: the model writes one query over the tables in
    /// `schema`, which must pass the templates' read-only check and runs with the
    /// datasource's row cap and deadline. Every refusal is an `error` answer saying why.
    async fn answer_generated(
        &self,
        request: &AdapterRequest,
        schema: &str,
    ) -> Result<AdapterResponse, ContractError> {
        let started = std::time::Instant::now();
        let refuse = |message: String, sql: Option<&str>| {
            refusal(
                message,
                serde_json::json!({"generated": true, "sql": sql}),
                started.elapsed().as_secs_f64() * 1000.0,
            )
        };
        let Some(datasource) = self.catalog.datasource(&request.datasource) else {
            return Err(Error::UnknownDatasource(request.datasource.clone()).into());
        };
        let Some(llm) = self.llm.as_ref().filter(|l| l.text_to_sql) else {
            return Ok(refuse("text-to-SQL is off (llm.text_to_sql)".into(), None));
        };
        let (Some(adapter), Ok(engine)) = (
            self.adapters.get(datasource.name()),
            crate::guard::Engine::of(datasource),
        ) else {
            return Ok(refuse(
                format!(
                    "`{}` is not a SQL datasource this process serves",
                    request.datasource
                ),
                None,
            ));
        };
        let dialect = match engine {
            crate::guard::Engine::Sqlite => "SQLite",
            crate::guard::Engine::Postgres => "PostgreSQL",
            crate::guard::Engine::Duckdb => "DuckDB",
            crate::guard::Engine::Mysql => "MySQL",
        };
        let deadline = Duration::from_millis(request.deadline_ms.max(1));
        let end = Instant::now() + deadline;
        let written = llm.assistant.generate_sql(&request.query, schema, dialect);
        let sql = match timeout_at(end, written).await {
            Ok(Ok(sql)) => sql,
            Ok(Err(e)) => return Ok(refuse(format!("the model wrote no query: {e}"), None)),
            Err(_) => {
                return Ok(refuse(
                    format!(
                        "datasource `{}`: the model wrote no query within the deadline of {} ms",
                        request.datasource,
                        deadline.as_millis()
                    ),
                    None,
                ))
            }
        };
        if let Err(e) = crate::guard::check_read_only(GENERATED_SQL, &sql, engine) {
            return Ok(refuse(format!("generated SQL refused: {e}"), Some(&sql)));
        }
        let template: Template = serde_json::from_value(serde_json::json!({
            "id": GENERATED_SQL,
            "description": "a query written by the chat model",
            "nl_examples": [request.query],
            "sql_template": sql,
        }))
        .expect("a valid template");
        let left = match left_of(end, deadline, datasource.name()) {
            Ok(left) => left,
            Err(message) => return Ok(refuse(message, Some(&sql))),
        };
        match adapter
            .execute(&template, &Default::default(), request, left)
            .await
        {
            Ok((content, mut data)) => {
                data["generated"] = true.into();
                data["sql"] = sql.clone().into();
                Ok(AdapterResponse {
                    outcome: AdapterOutcome::Ok,
                    content: format!("(generated SQL) {content}"),
                    data,
                    parameters: Default::default(),
                    missing: Vec::new(),
                    execution_time_ms: started.elapsed().as_secs_f64() * 1000.0,
                })
            }
            Err(e) => Ok(refuse(e.to_string(), Some(&sql))),
        }
    }

    async fn answer(&self, request: &AdapterRequest) -> Result<AdapterResponse, ContractError> {
        if let Some(schema) = &request.schema_context {
            return self.answer_generated(request, schema).await;
        }
        let (datasource, template) = find(&self.catalog, request)?;
        let kind = datasource.spec.kind;
        let Some(adapter) = self.adapters.get(datasource.name()) else {
            return Err(ContractError::AdapterUnavailable {
                datasource: request.datasource.clone(),
                kind: kind.as_str().to_owned(),
            });
        };
        if let Some(message) = adapter.refuse_before_extraction(template, &request.query) {
            return Ok(refusal(message, serde_json::Value::Null, 0.0));
        }
        // One deadline over the whole answer: the model's parameters, the adapter's call
        // with what is left of it, and the model's phrasing, each cut off at its end.
        let deadline = Duration::from_millis(request.deadline_ms.max(1));
        let end = Instant::now() + deadline;
        let request = self.fill_with_model(template, request, end).await;
        let routed = &request;
        let name = datasource.name();
        let mut response = respond(template, &request, |parameters| async move {
            let left = left_of(end, deadline, name)?;
            // An in-process adapter may do its work as it is called (SQLite): off the
            // runtime's workers, like the router's embedding.
            run_blocking(|| adapter.execute(template, &parameters, routed, left))
                .await
                .map_err(|e| e.to_string())
        })
        .await;
        self.synthesize(kind, template, &request.query, &mut response, end)
            .await;
        Ok(response)
    }
}

impl AdapterInvoker for LocalAdapters {
    fn invoke<'a>(
        &'a self,
        request: AdapterRequest,
    ) -> BoxFuture<'a, Result<AdapterResponse, ContractError>> {
        Box::pin(async move { self.answer(&request).await })
    }
}

/// What is left of `deadline` until `end`, or the error naming `datasource` when nothing
/// is (the model's work took it all).
fn left_of(end: Instant, deadline: Duration, datasource: &str) -> Result<Duration, String> {
    let left = end.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(format!(
            "datasource `{datasource}`: the deadline of {} ms passed before the query ran",
            deadline.as_millis()
        ));
    }
    Ok(left)
}

/// An `error` answer saying `message`: nothing was executed.
fn refusal(message: String, data: serde_json::Value, execution_time_ms: f64) -> AdapterResponse {
    AdapterResponse {
        content: message.clone(),
        outcome: AdapterOutcome::Error(Some(message)),
        data,
        parameters: Default::default(),
        missing: Vec::new(),
        execution_time_ms,
    }
}
