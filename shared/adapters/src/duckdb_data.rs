//! Which data a DuckDB datasource names (`connection.database` or `connection.table.<name>`),
//! read without DuckDB itself: the index build checks it in every build, and only the
//! processes that serve DuckDB link the engine (the `duckdb` feature).

use std::collections::BTreeMap;
use std::path::{Component, Path};

use switchyard_catalog::template::{Datasource, DatasourceKind};

use crate::error::{AdapterError, Result};

/// Where a datasource's data comes from, read from `connection` (paths not yet resolved).
pub enum Data {
    Database(String),
    /// Table name → file.
    Tables(BTreeMap<String, String>),
}

/// The `connection.table.` prefix of a table's file.
pub(crate) const TABLE_PREFIX: &str = "table.";

/// The data a DuckDB datasource names; a clear error for anything else.
pub fn data_of(datasource: &Datasource) -> Result<Data> {
    let fail = |message: String| AdapterError::Datasource {
        datasource: datasource.spec.name.clone(),
        message,
    };
    let connection = &datasource.spec.connection;
    let mut tables = BTreeMap::new();
    for (key, file) in connection {
        let Some(table) = key.strip_prefix(TABLE_PREFIX) else {
            continue;
        };
        let plain = table
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && table.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !plain {
            return Err(fail(format!(
                "connection.{key}: a table name is letters, digits and `_`, not starting with a digit"
            )));
        }
        reader(file).ok_or_else(|| {
            fail(format!(
                "connection.{key}: `{file}` must end in .csv or .parquet"
            ))
        })?;
        inside_folder(file).map_err(|problem| fail(format!("connection.{key}: {problem}")))?;
        tables.insert(table.to_owned(), file.clone());
    }
    match (connection.get("database"), tables.is_empty()) {
        (Some(file), true) => {
            inside_folder(file)
                .map_err(|problem| fail(format!("connection.database: {problem}")))?;
            Ok(Data::Database(file.clone()))
        }
        (None, false) => Ok(Data::Tables(tables)),
        (Some(_), false) => Err(fail(
            "connection has both `database` and `table.<name>` files: name one or the other".into(),
        )),
        (None, true) => Err(fail(
            "connection needs `database` (a DuckDB file) or `table.<name>` (a CSV or Parquet file per table)"
                .into(),
        )),
    }
}

/// DuckDB's reader of a data file, by its extension.
pub(crate) fn reader(file: &str) -> Option<&'static str> {
    let extension = Path::new(file).extension()?.to_str()?.to_ascii_lowercase();
    match extension.as_str() {
        "csv" => Some("read_csv"),
        "parquet" => Some("read_parquet"),
        _ => None,
    }
}

/// One file a DuckDB datasource reads: its `connection` key (`database`, `table.<name>`)
/// and its path relative to the datasource folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataFile {
    pub key: String,
    pub path: String,
}

/// The files a datasource reads when it is a DuckDB one (`None` for any other datasource):
/// what `index push` publishes and the adapter function fetches from S3.
pub fn data_files(datasource: &Datasource) -> Result<Option<Vec<DataFile>>> {
    let engine = datasource.spec.connection.get("engine").map(String::as_str);
    if datasource.spec.kind != DatasourceKind::Sql || engine != Some("duckdb") {
        return Ok(None);
    }
    let files = match data_of(datasource)? {
        Data::Database(path) => vec![DataFile {
            key: "database".into(),
            path,
        }],
        Data::Tables(tables) => tables
            .into_iter()
            .map(|(table, path)| DataFile {
                key: format!("{TABLE_PREFIX}{table}"),
                path,
            })
            .collect(),
    };
    Ok(Some(files))
}

/// A data file stays inside its datasource folder (a relative path without `..`): the
/// folder is what is published and fetched, on S3 as on disk.
fn inside_folder(file: &str) -> std::result::Result<(), String> {
    let path = Path::new(file);
    let plain = path
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if plain && path.components().any(|c| matches!(c, Component::Normal(_))) {
        Ok(())
    } else {
        Err(format!(
            "`{file}` must be a path inside the datasource folder (relative, no `..`)"
        ))
    }
}
