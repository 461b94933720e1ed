//! The one place datasource kinds are told apart: each kind's [`AdapterFactory`], which
//! checks a datasource as an index build needs and opens its [`Adapter`] to serve. A
//! documents datasource is served from its chunk artifact, which needs the embedding model
//! to build: its factory checks it, and the process that holds the artifact opens it
//! ([`crate::LocalAdapters::with_documents`]).

use std::path::Path;
use std::time::Duration;

use crate::respond::intent_answer;
use serde_json::{Map, Value};
use switchyard_catalog::template::{Datasource, DatasourceKind, Template};
use switchyard_catalog::BoxFuture;
use switchyard_contract::adapter::AdapterRequest;

use crate::adapter::{Adapter, AdapterFactory, Answer};
use crate::error::Result;
use crate::guard::Engine;
use crate::http::HttpDatasource;
use crate::mysql::MysqlDatasource;
use crate::postgres::PostgresDatasource;
use crate::sql::{self, SqliteDatasource};
use crate::tools::ToolsAdapter;
use crate::web::WebDatasource;

/// The factory of a datasource kind.
pub fn factory(kind: DatasourceKind) -> &'static dyn AdapterFactory {
    match kind {
        DatasourceKind::Intent => &IntentFactory,
        DatasourceKind::Sql => &SqlFactory,
        DatasourceKind::Http | DatasourceKind::Graphql => &HttpFactory,
        DatasourceKind::Tools => &ToolsFactory,
        DatasourceKind::Documents => &DocumentsFactory,
        DatasourceKind::Web => &WebFactory,
    }
}

/// Check `datasource` as an index build needs (see [`AdapterFactory::check`]).
pub fn check(datasource: &Datasource) -> Result<()> {
    factory(datasource.spec.kind).check(datasource)
}

/// Open the adapter serving `datasource` from its files in `folder` (see
/// [`AdapterFactory::open`]).
pub async fn open(
    datasource: &Datasource,
    folder: Option<&Path>,
) -> Result<Option<Box<dyn Adapter>>> {
    factory(datasource.spec.kind).open(datasource, folder).await
}

/// `intent` datasources: the matched intent is the answer; nothing is executed.
struct IntentFactory;

struct IntentAdapter {
    datasource: String,
}

impl AdapterFactory for IntentFactory {
    fn check(&self, _: &Datasource) -> Result<()> {
        Ok(())
    }

    fn open<'a>(
        &'a self,
        datasource: &'a Datasource,
        _: Option<&'a Path>,
    ) -> BoxFuture<'a, Result<Option<Box<dyn Adapter>>>> {
        let adapter = IntentAdapter {
            datasource: datasource.name().to_owned(),
        };
        Box::pin(async move { Ok(Some(Box::new(adapter) as Box<dyn Adapter>)) })
    }
}

impl Adapter for IntentAdapter {
    fn execute<'a>(
        &'a self,
        template: &'a Template,
        _: &'a Map<String, Value>,
        _: &'a AdapterRequest,
        _: Duration,
    ) -> BoxFuture<'a, Result<Answer>> {
        let answer = intent_answer(&self.datasource, template);
        Box::pin(async move { Ok(answer) })
    }
}

/// `sql` datasources: SQLite (from a file or seed script in the datasource's folder),
/// DuckDB (a database file or CSV files in its folder), or PostgreSQL, MySQL and MariaDB
/// (through the URL in the variable `connection.url_env` names).
struct SqlFactory;

impl AdapterFactory for SqlFactory {
    fn check(&self, datasource: &Datasource) -> Result<()> {
        sql::check_datasource(datasource)
    }

    fn open<'a>(
        &'a self,
        datasource: &'a Datasource,
        folder: Option<&'a Path>,
    ) -> BoxFuture<'a, Result<Option<Box<dyn Adapter>>>> {
        Box::pin(async move {
            let name = datasource.name();
            let engine = Engine::of(datasource)?;
            let folder = folder.filter(|f| f.is_dir());
            Ok(match engine {
                Engine::Sqlite => match folder {
                    Some(folder) => Some(boxed(SqliteDatasource::open(datasource, folder)?)),
                    None => None,
                },
                Engine::Duckdb => match folder {
                    Some(folder) => open_duckdb(datasource, folder)?,
                    None => None,
                },
                Engine::Postgres | Engine::Mysql => {
                    let configured = datasource
                        .spec
                        .connection
                        .get("url_env")
                        .is_some_and(|variable| std::env::var_os(variable).is_some());
                    if !configured {
                        tracing::warn!(datasource = %name, "database URL variable (connection.url_env) not set; datasource unavailable");
                        None
                    } else if engine == Engine::Postgres {
                        Some(boxed(PostgresDatasource::connect(datasource).await?))
                    } else {
                        Some(boxed(MysqlDatasource::connect(datasource).await?))
                    }
                }
            })
        })
    }
}

/// A DuckDB datasource from its folder, in builds that link DuckDB (the `duckdb` feature:
/// the adapter function and the CLI); others say it is served elsewhere.
#[cfg(feature = "duckdb")]
fn open_duckdb(datasource: &Datasource, folder: &Path) -> Result<Option<Box<dyn Adapter>>> {
    let opened = crate::duckdb::DuckdbDatasource::open(datasource, folder)?;
    Ok(Some(boxed(opened)))
}

#[cfg(not(feature = "duckdb"))]
fn open_duckdb(datasource: &Datasource, _: &Path) -> Result<Option<Box<dyn Adapter>>> {
    tracing::warn!(
        datasource = %datasource.name(),
        "DuckDB is not in this build (the adapter function and the CLI serve it); datasource unavailable here"
    );
    Ok(None)
}

/// `http` and `graphql` datasources.
struct HttpFactory;

impl AdapterFactory for HttpFactory {
    fn check(&self, datasource: &Datasource) -> Result<()> {
        HttpDatasource::check(datasource)
    }

    fn open<'a>(
        &'a self,
        datasource: &'a Datasource,
        _: Option<&'a Path>,
    ) -> BoxFuture<'a, Result<Option<Box<dyn Adapter>>>> {
        let opened = HttpDatasource::open(datasource).map(|api| Some(boxed(api)));
        Box::pin(async move { opened })
    }
}

/// `web` datasources: pages fetched on demand (the HTTP adapter's rules) and searched.
struct WebFactory;

impl AdapterFactory for WebFactory {
    fn check(&self, datasource: &Datasource) -> Result<()> {
        WebDatasource::check(datasource)
    }

    fn open<'a>(
        &'a self,
        datasource: &'a Datasource,
        _: Option<&'a Path>,
    ) -> BoxFuture<'a, Result<Option<Box<dyn Adapter>>>> {
        let opened = WebDatasource::open(datasource).map(|web| Some(boxed(web)));
        Box::pin(async move { opened })
    }
}

/// `tools` datasources: built-in tools, and `http_call` tools through the HTTP adapter.
struct ToolsFactory;

impl AdapterFactory for ToolsFactory {
    fn check(&self, datasource: &Datasource) -> Result<()> {
        ToolsAdapter::check(datasource)
    }

    fn open<'a>(
        &'a self,
        datasource: &'a Datasource,
        _: Option<&'a Path>,
    ) -> BoxFuture<'a, Result<Option<Box<dyn Adapter>>>> {
        let opened = ToolsAdapter::open(datasource).map(|tools| Some(boxed(tools)));
        Box::pin(async move { opened })
    }
}

/// `documents` datasources: checked here; opened from their chunk artifact by whoever
/// holds it (`LocalAdapters::with_documents`), so `open` finds nothing to open.
struct DocumentsFactory;

impl AdapterFactory for DocumentsFactory {
    fn check(&self, datasource: &Datasource) -> Result<()> {
        match datasource.spec.connection.get("corpus") {
            Some(corpus) if !corpus.trim().is_empty() => Ok(()),
            _ => Err(crate::AdapterError::Datasource {
                datasource: datasource.name().to_owned(),
                message: "connection.corpus must name the corpus: a folder of .md/.txt files or a .jsonl file".into(),
            }),
        }
    }

    fn open<'a>(
        &'a self,
        _: &'a Datasource,
        _: Option<&'a Path>,
    ) -> BoxFuture<'a, Result<Option<Box<dyn Adapter>>>> {
        Box::pin(async { Ok(None) })
    }
}

fn boxed(adapter: impl Adapter + 'static) -> Box<dyn Adapter> {
    Box::new(adapter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_documents_datasource_names_its_corpus_and_opens_from_its_artifact() {
        let datasource = |connection: serde_json::Value| -> Datasource {
            serde_json::from_value(serde_json::json!({
                "spec": {"name": "docs", "kind": "documents", "description": "d", "connection": connection},
                "templates": []
            }))
            .unwrap()
        };
        let error = check(&datasource(serde_json::json!({})))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("docs") && error.contains("connection.corpus"),
            "{error}"
        );
        check(&datasource(serde_json::json!({"corpus": "docs"}))).unwrap();
    }
}
