//! The in-process adapters: one `AdapterInvoker` that answers every datasource of a
//! catalog whose adapter runs locally (intent, SQLite, built-in tools). Kinds without a
//! local adapter are refused as unavailable, never answered with a made-up result.

use std::collections::HashMap;
use std::future::Future;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Map, Value};
use switchyard_core::invoker::{
    find, intent_answer, respond, AdapterInvoker, AdapterRequest, AdapterResponse,
};
use switchyard_core::template::{Catalog, DatasourceKind, Template};
use switchyard_core::Error;

use crate::error::AdapterError;
use crate::render::{render, tool_content};
use crate::sql::{text_table, Engine, SqliteDatasource};
use crate::tools;

pub struct LocalAdapters {
    catalog: Catalog,
    sqlite: HashMap<String, SqliteDatasource>,
}

impl LocalAdapters {
    /// Open the local adapters of `catalog`. `templates_dir` is the catalog folder that
    /// holds the datasources' files (SQLite seeds); a SQL datasource without its folder
    /// there is unavailable.
    pub fn open(catalog: Catalog, templates_dir: Option<&Path>) -> crate::Result<LocalAdapters> {
        let mut sqlite = HashMap::new();
        if let Some(root) = templates_dir {
            for datasource in &catalog.datasources {
                let folder = root.join(datasource.name());
                if datasource.spec.kind == DatasourceKind::Sql
                    && folder.is_dir()
                    && Engine::of(datasource)? == Engine::Sqlite
                {
                    let opened = SqliteDatasource::open(datasource, &folder)?;
                    sqlite.insert(datasource.name().to_owned(), opened);
                }
            }
        }
        Ok(LocalAdapters { catalog, sqlite })
    }

    fn answer(&self, request: &AdapterRequest) -> Result<AdapterResponse, Error> {
        let (datasource, template) = find(&self.catalog, request)?;
        let kind = datasource.spec.kind;
        let runs_here = match kind {
            DatasourceKind::Intent | DatasourceKind::Tools => true,
            DatasourceKind::Sql => self.sqlite.contains_key(datasource.name()),
            _ => false,
        };
        if !runs_here {
            return Err(Error::AdapterUnavailable {
                datasource: request.datasource.clone(),
                kind: kind.as_str().to_owned(),
            });
        }
        let deadline = Duration::from_millis(request.deadline_ms.max(1));
        Ok(respond(template, request, |parameters| {
            self.execute(kind, datasource.name(), template, parameters, deadline)
                .map_err(|e| e.to_string())
        }))
    }

    /// Run one template whose parameters are complete: (content, data).
    fn execute(
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
                let outcome = tools::run(template, parameters, chrono::Utc::now())?;
                let content = tool_content(template, parameters, &outcome)?;
                let data = json!({
                    "tool_execution": {
                        "tool": outcome.tool,
                        "operation": outcome.operation,
                        "parameters": parameters,
                        "result": outcome.result,
                        "status": "ok",
                    }
                });
                Ok((content, data))
            }
            DatasourceKind::Sql => {
                let database =
                    self.sqlite
                        .get(datasource)
                        .ok_or_else(|| AdapterError::Datasource {
                            datasource: datasource.to_owned(),
                            message: "no SQLite connection".into(),
                        })?;
                let rows = database.query(template, parameters, deadline)?;
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
            other => Err(AdapterError::Datasource {
                datasource: datasource.to_owned(),
                message: format!("no local adapter for kind `{}`", other.as_str()),
            }),
        }
    }
}

impl AdapterInvoker for LocalAdapters {
    fn invoke(
        &self,
        request: AdapterRequest,
    ) -> impl Future<Output = Result<AdapterResponse, Error>> + Send {
        let answer = self.answer(&request);
        async move { answer }
    }
}
