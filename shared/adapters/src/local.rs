//! The in-process adapters: one `AdapterInvoker` that answers every datasource of a
//! catalog whose adapter runs locally (intent, SQLite, PostgreSQL, HTTP/JSON, GraphQL,
//! built-in tools). Kinds
//! without a local adapter are refused as unavailable, never answered with a made-up result.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use switchyard_core::config::LlmConfig;
use switchyard_core::invoker::{
    find, intent_answer, respond, AdapterInvoker, AdapterRequest, AdapterResponse, AdapterStatus,
};
use switchyard_core::params::extract;
use switchyard_core::template::{Catalog, DatasourceKind, Template};
use switchyard_core::Error;

use crate::error::AdapterError;
use crate::http::HttpDatasource;
use crate::llm::ChatClient;
use crate::postgres::PostgresDatasource;
use crate::render::{render, tool_content};
use crate::sql::{text_table, Engine, SqlRows, SqliteDatasource};
use crate::tools;

pub struct LocalAdapters {
    catalog: Catalog,
    sqlite: HashMap<String, SqliteDatasource>,
    postgres: HashMap<String, PostgresDatasource>,
    http: HashMap<String, HttpDatasource>,
    /// The HTTP request of each `execution.type: http_call` tool, by template id.
    http_tools: HashMap<String, Template>,
    llm: Option<LlmFeatures>,
}

/// The optional model behind the adapters and which of its features are on.
pub struct LlmFeatures {
    pub client: ChatClient,
    pub fill_missing_parameters: bool,
    pub synthesize_response: bool,
}

impl LlmFeatures {
    /// From the `llm` configuration: `None` when no feature is on.
    pub fn from_config(config: &LlmConfig) -> crate::Result<Option<LlmFeatures>> {
        let (Some(endpoint), Some(model)) = (&config.endpoint, &config.model) else {
            return Ok(None);
        };
        if !(config.fill_missing_parameters || config.synthesize_response) {
            return Ok(None);
        }
        Ok(Some(LlmFeatures {
            client: ChatClient::new(
                endpoint.clone(),
                model.clone(),
                config.api_key_env.clone(),
                Duration::from_millis(config.timeout_ms),
            )?,
            fill_missing_parameters: config.fill_missing_parameters,
            synthesize_response: config.synthesize_response,
        }))
    }
}

impl LocalAdapters {
    /// Open the local adapters of `catalog`. `templates_dir` is the catalog folder that
    /// holds the datasources' files (SQLite seeds); a SQLite datasource without its folder
    /// there is unavailable. A PostgreSQL datasource connects when the variable its
    /// `connection.url_env` names is set, and is unavailable otherwise.
    pub async fn open(
        catalog: Catalog,
        templates_dir: Option<&Path>,
    ) -> crate::Result<LocalAdapters> {
        let mut sqlite = HashMap::new();
        let mut postgres = HashMap::new();
        let mut http = HashMap::new();
        let mut http_tools = HashMap::new();
        for datasource in &catalog.datasources {
            let name = datasource.name().to_owned();
            if datasource.spec.kind == DatasourceKind::Tools {
                if let Some(calls) = tools::http_call_datasource(datasource)? {
                    http.insert(name.clone(), HttpDatasource::open(&calls)?);
                    for template in calls.templates {
                        http_tools.insert(template.id.clone(), template);
                    }
                }
                continue;
            }
            if matches!(
                datasource.spec.kind,
                DatasourceKind::Http | DatasourceKind::Graphql
            ) {
                http.insert(name, HttpDatasource::open(datasource)?);
                continue;
            }
            if datasource.spec.kind != DatasourceKind::Sql {
                continue;
            }
            match Engine::of(datasource)? {
                Engine::Sqlite => {
                    let folder = templates_dir.map(|root| root.join(&name));
                    if let Some(folder) = folder.filter(|f| f.is_dir()) {
                        sqlite.insert(name, SqliteDatasource::open(datasource, &folder)?);
                    }
                }
                Engine::Postgres => {
                    let configured = datasource
                        .spec
                        .connection
                        .get("url_env")
                        .is_some_and(|variable| std::env::var_os(variable).is_some());
                    if configured {
                        postgres.insert(name, PostgresDatasource::connect(datasource).await?);
                    } else {
                        tracing::warn!(datasource = %name, "PostgreSQL URL variable not set; datasource unavailable");
                    }
                }
            }
        }
        Ok(LocalAdapters {
            catalog,
            sqlite,
            postgres,
            http,
            http_tools,
            llm: None,
        })
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
        match llm
            .client
            .fill_missing(template, &request.query, &missing)
            .await
        {
            Ok(values) => request.session_parameters.extend(values),
            Err(e) => {
                tracing::warn!(template = %template.id, error = %e, "model could not fill parameters")
            }
        }
        request
    }

    async fn answer(&self, request: &AdapterRequest) -> Result<AdapterResponse, Error> {
        let (datasource, template) = find(&self.catalog, request)?;
        let kind = datasource.spec.kind;
        let name = datasource.name();
        let runs_here = match kind {
            DatasourceKind::Intent | DatasourceKind::Tools => true,
            DatasourceKind::Http | DatasourceKind::Graphql => self.http.contains_key(name),
            DatasourceKind::Sql => {
                self.sqlite.contains_key(name) || self.postgres.contains_key(name)
            }
            _ => false,
        };
        if !runs_here {
            return Err(Error::AdapterUnavailable {
                datasource: request.datasource.clone(),
                kind: kind.as_str().to_owned(),
            });
        }
        let deadline = Duration::from_millis(request.deadline_ms.max(1));
        let request = self.fill_with_model(template, request).await;
        let mut response = respond(template, &request, |parameters| async move {
            self.execute(kind, name, template, &parameters, deadline)
                .await
                .map_err(|e| e.to_string())
        })
        .await;
        if let Some(llm) = self.llm.as_ref().filter(|l| l.synthesize_response) {
            if response.status == AdapterStatus::Ok && kind != DatasourceKind::Intent {
                match llm
                    .client
                    .synthesize(&request.query, &response.content, &response.data)
                    .await
                {
                    Ok(text) => response.content = text,
                    Err(e) => {
                        tracing::warn!(template = %template.id, error = %e, "synthesis failed; answering with the rendered template")
                    }
                }
            }
        }
        Ok(response)
    }

    /// Run one template whose parameters are complete: (content, data).
    async fn execute(
        &self,
        kind: DatasourceKind,
        datasource: &str,
        template: &Template,
        parameters: &Map<String, Value>,
        deadline: Duration,
    ) -> crate::Result<(String, Value)> {
        match kind {
            DatasourceKind::Intent => Ok(intent_answer(datasource, template)),
            DatasourceKind::Tools => {
                let started = Instant::now();
                let outcome = match (self.http_tools.get(&template.id), self.http.get(datasource)) {
                    (Some(call), Some(api)) => {
                        let result = api.call(call, parameters, deadline).await?;
                        tools::ToolOutcome {
                            tool: template.tool_name.clone().unwrap_or_default(),
                            operation: tools::HTTP_CALL.to_owned(),
                            result: result.data,
                        }
                    }
                    _ => tools::run(template, parameters, chrono::Utc::now())?,
                };
                let execution_time_ms = started.elapsed().as_secs_f64() * 1000.0;
                let content = tool_content(template, parameters, &outcome)?;
                let data = json!({
                    "tool_execution": {
                        "tool": outcome.tool,
                        "operation": outcome.operation,
                        "parameters": parameters,
                        "result": outcome.result,
                        "status": "ok",
                        "execution_time_ms": (execution_time_ms * 1000.0).round() / 1000.0,
                    }
                });
                Ok((content, data))
            }
            DatasourceKind::Sql => {
                let rows = match (self.sqlite.get(datasource), self.postgres.get(datasource)) {
                    (Some(sqlite), _) => sqlite.query(template, parameters, deadline)?,
                    (None, Some(postgres)) => {
                        postgres.query(template, parameters, deadline).await?
                    }
                    (None, None) => {
                        return Err(AdapterError::Datasource {
                            datasource: datasource.to_owned(),
                            message: "no connection".into(),
                        })
                    }
                };
                sql_answer(template, parameters, rows)
            }
            DatasourceKind::Http | DatasourceKind::Graphql => {
                let api = self
                    .http
                    .get(datasource)
                    .ok_or_else(|| AdapterError::Datasource {
                        datasource: datasource.to_owned(),
                        message: "not opened".into(),
                    })?;
                let result = api.call(template, parameters, deadline).await?;
                let content = match &template.response_template {
                    Some(source) => {
                        let mut context = parameters.clone();
                        context.insert("result".into(), result.data.clone());
                        render(&template.id, source, &Value::Object(context))?
                    }
                    None => crate::render::plain_text(&result.data),
                };
                let data = json!({
                    "status": result.status,
                    "result": result.data,
                    "truncated": result.truncated,
                });
                Ok((content, data))
            }
            other => Err(AdapterError::Datasource {
                datasource: datasource.to_owned(),
                message: format!("no local adapter for kind `{}`", other.as_str()),
            }),
        }
    }
}

/// Rows as an answer: the `response_template` over the parameters plus `rows` and
/// `row_count`, or a short table.
fn sql_answer(
    template: &Template,
    parameters: &Map<String, Value>,
    rows: SqlRows,
) -> crate::Result<(String, Value)> {
    let content = match &template.response_template {
        Some(source) => {
            let mut context = parameters.clone();
            context.insert("rows".into(), Value::from(rows.rows.clone()));
            context.insert("row_count".into(), Value::from(rows.rows.len()));
            render(&template.id, source, &Value::Object(context))?
        }
        None => text_table(&rows),
    };
    let data = json!({
        "columns": rows.columns,
        "rows": rows.rows,
        "row_count": rows.rows.len(),
        "truncated": rows.truncated,
    });
    Ok((content, data))
}

impl AdapterInvoker for LocalAdapters {
    async fn invoke(&self, request: AdapterRequest) -> Result<AdapterResponse, Error> {
        self.answer(&request).await
    }
}
