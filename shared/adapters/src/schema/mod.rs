//! Schema introspection of SQL datasources: each table's columns, keys and a short summary
//! of its values, flattened to one line so a later step can index every table as a
//! searchable document (questions name tables and values, not templates).
//!
//! Names come from the database's own catalog. Identifiers cannot be bound as parameters,
//! so the one statement built from them, a table's sample, quotes each of them and splices
//! nothing else. Summaries read at most [`SAMPLE_ROWS`] rows per table, so a large table
//! costs no more than a small one; its ranges and top values describe that sample.

use std::collections::HashMap;
use std::path::Path;

use chrono::NaiveDate;
use rusqlite::types::{FromSql, FromSqlResult, ValueRef};
use rusqlite::Connection;
use serde::{Deserialize, Serialize};
use switchyard_catalog::template::{Datasource, DatasourceKind};
use tokio_postgres::types::{FromSql as PgFromSql, ToSql};
use tokio_postgres::Client;

use crate::error::{AdapterError, Result};
use crate::guard::Engine;
use crate::mysql::MysqlDatasource;
use crate::postgres::PostgresDatasource;
use crate::sql::SqliteDatasource;
use switchyard_catalog::error::describe;

/// Rows read per table for its summaries.
pub const SAMPLE_ROWS: usize = 10_000;
const TOP_VALUES: usize = 5;
const VALUE_CHARS: usize = 40;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableSchema {
    pub datasource: String,
    pub name: String,
    pub alias: String,
    pub columns: Vec<ColumnSchema>,
    pub primary_key: Vec<String>,
    pub foreign_keys: Vec<ForeignKey>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnSchema {
    pub name: String,
    pub data_type: String,
    pub summary: ColumnSummary,
}

/// What a column holds: numbers and dates as a range, anything else as its commonest values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ColumnSummary {
    Samples { values: Vec<String> },
    Range { min: String, max: String },
    Empty,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForeignKey {
    pub columns: Vec<String>,
    pub table: String,
    pub references: Vec<String>,
}

impl TableSchema {
    /// The table as one deterministic line of text: the document the index embeds.
    pub fn flatten(&self) -> String {
        let columns: Vec<String> = self
            .columns
            .iter()
            .map(|column| {
                let head = match column.data_type.as_str() {
                    "" => column.name.clone(),
                    data_type => format!("{}: {data_type}", column.name),
                };
                match &column.summary {
                    ColumnSummary::Samples { values } => {
                        format!("{head}, samples: {}", values.join(", "))
                    }
                    ColumnSummary::Range { min, max } => format!("{head}, range: {min} to {max}"),
                    ColumnSummary::Empty => format!("{head}, empty"),
                }
            })
            .collect();
        let foreign_keys: Vec<String> = self
            .foreign_keys
            .iter()
            .map(|key| {
                let (columns, references) = (key.columns.join(", "), key.references.join(", "));
                format!("{columns} -> {}({references})", key.table)
            })
            .collect();
        format!(
            "Table: {} (Alias: {}). Columns: {}. Primary Key: {}. Foreign Keys: {}.",
            self.name,
            self.alias,
            or_none(&columns, "; "),
            or_none(&self.primary_key, ", "),
            or_none(&foreign_keys, "; "),
        )
        // Names come from the database: one line whatever they hold.
        .replace(['\n', '\r'], " ")
    }
}

fn or_none(items: &[String], separator: &str) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(separator)
    }
}

/// How long reading a server's schema may take, connect included.
const SCHEMA_READ_DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);

/// Open the datasource the way the SQL adapter does (SQLite from its folder under
/// `templates_dir`, PostgreSQL from the URL in the variable `connection.url_env` names) and
/// introspect it. `Ok(None)` when this process cannot reach it (folder absent, variable
/// unset), as the factory's `open`, and for datasources that are not `sql`.
pub async fn introspect(
    datasource: &Datasource,
    templates_dir: Option<&Path>,
) -> Result<Option<Vec<TableSchema>>> {
    if datasource.spec.kind != DatasourceKind::Sql {
        return Ok(None);
    }
    let name = datasource.name();
    match Engine::of(datasource)? {
        Engine::Sqlite => {
            let folder = templates_dir.map(|root| root.join(name));
            let Some(folder) = folder.filter(|f| f.is_dir()) else {
                return Ok(None);
            };
            let db = SqliteDatasource::open(datasource, &folder)?;
            let tables = introspect_sqlite(&db.connection(), name)?;
            Ok(Some(tables))
        }
        Engine::Duckdb => {
            let folder = templates_dir.map(|root| root.join(name));
            let Some(folder) = folder.filter(|f| f.is_dir()) else {
                return Ok(None);
            };
            introspect_duckdb_folder(datasource, &folder)
        }
        Engine::Postgres | Engine::Mysql => {
            let configured = (datasource.spec.connection.get("url_env"))
                .is_some_and(|variable| std::env::var_os(variable).is_some());
            if !configured {
                return Ok(None);
            }
            let read = async {
                if Engine::of(datasource)? == Engine::Postgres {
                    let db = PostgresDatasource::connect(datasource).await?;
                    let client = db.client().await?;
                    introspect_postgres(&client, name).await
                } else {
                    let db = MysqlDatasource::connect(datasource).await?;
                    introspect_mysql(&mut db.conn().await?, name).await
                }
            };
            // A server gone silent after the connect would hang `index build` (each query
            // of the read has no bound of its own).
            let tables = tokio::time::timeout(SCHEMA_READ_DEADLINE, read)
                .await
                .map_err(|_| AdapterError::Datasource {
                    datasource: name.to_owned(),
                    message: format!(
                        "reading the schema: no answer within {} s",
                        SCHEMA_READ_DEADLINE.as_secs()
                    ),
                })??;
            Ok(Some(tables))
        }
    }
}

#[cfg(feature = "duckdb")]
fn introspect_duckdb_folder(
    datasource: &Datasource,
    folder: &Path,
) -> Result<Option<Vec<TableSchema>>> {
    let db = crate::duckdb::DuckdbDatasource::open(datasource, folder)?;
    let tables = introspect_duckdb(&db.connection(), datasource.name())?;
    Ok(Some(tables))
}

#[cfg(not(feature = "duckdb"))]
fn introspect_duckdb_folder(_: &Datasource, _: &Path) -> Result<Option<Vec<TableSchema>>> {
    Ok(None)
}

#[cfg(feature = "duckdb")]
const DUCKDB_TABLES: &str = "SELECT table_name FROM information_schema.tables \
     WHERE table_schema = 'main' AND table_type = 'BASE TABLE'";

#[cfg(feature = "duckdb")]
const DUCKDB_COLUMNS: &str = "SELECT column_name, data_type FROM information_schema.columns \
     WHERE table_schema = 'main' AND table_name = ? ORDER BY ordinal_position";

/// Every base table of DuckDB's `main` schema, sorted by name (CSV and Parquet files load
/// without keys: none are reported).
#[cfg(feature = "duckdb")]
pub fn introspect_duckdb(
    connection: &duckdb::Connection,
    datasource: &str,
) -> Result<Vec<TableSchema>> {
    let rows = |sql: &str, parameter: Option<&str>| -> duckdb::Result<Vec<Vec<String>>> {
        let mut statement = connection.prepare(sql)?;
        let mut cursor = statement.query(duckdb::params_from_iter(parameter))?;
        let mut out = Vec::new();
        while let Some(row) = cursor.next()? {
            let width = row.as_ref().column_count();
            out.push(
                (0..width)
                    .map(|i| row.get(i))
                    .collect::<duckdb::Result<_>>()?,
            );
        }
        Ok(out)
    };
    let names = rows(DUCKDB_TABLES, None).map_err(|e| error(datasource, "listing tables", &e))?;
    let table = |table: &str| -> duckdb::Result<TableSchema> {
        let columns = rows(DUCKDB_COLUMNS, Some(table))?;
        // Every type casts to VARCHAR; NULL stays a null cell.
        let sql = sample_sql(&columns, &quote(table), "::VARCHAR");
        let mut statement = connection.prepare(&sql)?;
        let mut cursor = statement.query([])?;
        let mut sample = Vec::new();
        while let Some(row) = cursor.next()? {
            let cells = (0..columns.len())
                .map(|i| {
                    row.get::<_, Option<String>>(i)
                        .map(|v| v.map_or(Cell::Null, Cell::Text))
                })
                .collect::<duckdb::Result<Vec<Cell>>>()?;
            sample.push(cells);
        }
        Ok(schema(
            datasource,
            table,
            columns,
            &sample,
            Vec::new(),
            Vec::new(),
        ))
    };
    (sorted(names).iter())
        .map(|name| table(name).map_err(|e| error(datasource, &format!("table `{name}`"), &e)))
        .collect()
}

const SQLITE_TABLES: &str =
    r"SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'";

/// Foreign key columns; `REFERENCES parent` without columns means the parent's primary key.
const SQLITE_KEYS: &str = r#"SELECT CAST(f.id AS TEXT), f."from", f."table",
    coalesce(f."to", p.name, '') FROM pragma_foreign_key_list(?1) f
    LEFT JOIN pragma_table_info(f."table") p ON p.pk = f.seq + 1 ORDER BY f.id, f.seq"#;

/// Every table of a SQLite database but its internal `sqlite_*` ones, sorted by name.
pub fn introspect_sqlite(connection: &Connection, datasource: &str) -> Result<Vec<TableSchema>> {
    let names = sqlite_rows(connection, SQLITE_TABLES, None)
        .map_err(|e| error(datasource, "listing tables", &e))?;
    let table = |table: &str| -> rusqlite::Result<TableSchema> {
        let rows = |sql: &str| sqlite_rows::<String>(connection, sql, Some(table));
        let columns = rows("SELECT name, type FROM pragma_table_info(?1) ORDER BY cid")?;
        let key = first(rows(
            "SELECT name FROM pragma_table_info(?1) WHERE pk > 0 ORDER BY pk",
        )?);
        let sample = sqlite_rows(connection, &sample_sql(&columns, &quote(table), ""), None)?;
        Ok(schema(
            datasource,
            table,
            columns,
            &sample,
            key,
            rows(SQLITE_KEYS)?,
        ))
    };
    (sorted(names).iter())
        .map(|name| table(name).map_err(|e| error(datasource, &format!("table `{name}`"), &e)))
        .collect()
}

/// The rows of a query with at most one parameter, every column read as `T`.
fn sqlite_rows<T: FromSql>(
    connection: &Connection,
    sql: &str,
    parameter: Option<&str>,
) -> rusqlite::Result<Vec<Vec<T>>> {
    let mut statement = connection.prepare(sql)?;
    let width = statement.column_count();
    let rows = statement.query_map(rusqlite::params_from_iter(parameter), |row| {
        (0..width).map(|i| row.get(i)).collect()
    })?;
    rows.collect()
}

const PG_TABLES: &str = "SELECT table_name::text FROM information_schema.tables \
     WHERE table_schema = 'public' AND table_type = 'BASE TABLE'";

const PG_COLUMNS: &str = "SELECT a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod) \
     FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid \
     JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
     WHERE n.nspname = 'public' AND c.relname = $1 AND a.attnum > 0 AND NOT a.attisdropped \
     ORDER BY a.attnum";

/// Primary and foreign key constraints, one row per column in key order.
const PG_KEYS: &str = "SELECT con.conname::text, a.attname::text, \
     coalesce(r.relname::text, ''), coalesce(ra.attname::text, ''), con.contype::text \
     FROM pg_catalog.pg_constraint con JOIN pg_catalog.pg_class c ON c.oid = con.conrelid \
     JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
     CROSS JOIN LATERAL unnest(con.conkey, con.confkey) WITH ORDINALITY AS k(attnum, refnum, i) \
     JOIN pg_catalog.pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum \
     LEFT JOIN pg_catalog.pg_class r ON r.oid = con.confrelid \
     LEFT JOIN pg_catalog.pg_attribute ra ON ra.attrelid = con.confrelid AND ra.attnum = k.refnum \
     WHERE con.contype IN ('p', 'f') AND n.nspname = 'public' AND c.relname = $1 \
     ORDER BY con.conname, k.i";

/// Every base table of the `public` schema, sorted by name.
pub async fn introspect_postgres(client: &Client, datasource: &str) -> Result<Vec<TableSchema>> {
    let names: Vec<Vec<String>> = (pg_rows(client, PG_TABLES, &[]).await)
        .map_err(|e| error(datasource, "listing tables", &e))?;
    let mut tables = Vec::with_capacity(names.len());
    for name in sorted(names) {
        let table = async {
            let columns = pg_rows(client, PG_COLUMNS, &[&name]).await?;
            let (key, keys): (Vec<Vec<String>>, _) = (pg_rows(client, PG_KEYS, &[&name]).await?)
                .into_iter()
                .partition(|row| row[4] == "p");
            let from = format!("public.{}", quote(&name));
            // Every type casts to text; a table without columns gives `SELECT FROM`, valid here.
            let sample: Vec<Vec<Option<String>>> =
                pg_rows(client, &sample_sql(&columns, &from, "::text"), &[]).await?;
            let sample: Vec<Vec<Cell>> = (sample.into_iter())
                .map(|row| {
                    row.into_iter()
                        .map(|v| v.map_or(Cell::Null, Cell::Text))
                        .collect()
                })
                .collect();
            let key = key.into_iter().map(|mut row| row.swap_remove(1)).collect();
            Ok::<_, tokio_postgres::Error>(schema(datasource, &name, columns, &sample, key, keys))
        };
        let table = table.await;
        tables.push(table.map_err(|e| error(datasource, &format!("table `{name}`"), &e))?);
    }
    Ok(tables)
}

/// The rows of a query, every column read as `T`.
async fn pg_rows<T: for<'a> PgFromSql<'a>>(
    client: &Client,
    sql: &str,
    parameters: &[&(dyn ToSql + Sync)],
) -> std::result::Result<Vec<Vec<T>>, tokio_postgres::Error> {
    let rows = client.query(sql, parameters).await?;
    (rows.iter())
        .map(|row| (0..row.len()).map(|i| row.try_get(i)).collect())
        .collect()
}

/// The bounded sample of a table; `from` is its quoted name, `cast` applies to each column.
fn sample_sql(columns: &[Vec<String>], from: &str, cast: &str) -> String {
    let list: Vec<String> = columns
        .iter()
        .map(|c| format!("{}{cast}", quote(&c[0])))
        .collect();
    format!("SELECT {} FROM {from} LIMIT {SAMPLE_ROWS}", list.join(", "))
}

/// An identifier as SQL text: in double quotes, inner quotes doubled.
fn quote(identifier: &str) -> String {
    format!("\"{}\"", identifier.replace('"', "\"\""))
}

/// The first column of `rows`; table names are sorted (catalogs promise no order), key
/// columns stay in key order.
fn first(rows: Vec<Vec<String>>) -> Vec<String> {
    rows.into_iter().map(|mut row| row.swap_remove(0)).collect()
}

fn sorted(rows: Vec<Vec<String>>) -> Vec<String> {
    let mut names = first(rows);
    names.sort();
    names
}

fn error(datasource: &str, what: &str, e: &dyn std::error::Error) -> AdapterError {
    AdapterError::Datasource {
        datasource: datasource.to_owned(),
        message: format!("introspection, {what}: {}", describe(e)),
    }
}

/// A table from its catalog rows: `columns` (name, type), `keys` (constraint,
/// column, parent table, parent column) in key order, and the `sample` rows.
fn schema(
    datasource: &str,
    table: &str,
    columns: Vec<Vec<String>>,
    sample: &[Vec<Cell>],
    primary_key: Vec<String>,
    keys: Vec<Vec<String>>,
) -> TableSchema {
    let mut foreign_keys: Vec<ForeignKey> = (keys.chunk_by(|a, b| a[0] == b[0]))
        .map(|key| ForeignKey {
            columns: key.iter().map(|k| k[1].clone()).collect(),
            table: key[0][2].clone(),
            references: key.iter().map(|k| k[3].clone()).collect(),
        })
        .collect();
    // Catalogs list foreign keys in no promised order.
    foreign_keys.sort_by(|a, b| (&a.columns, &a.table).cmp(&(&b.columns, &b.table)));
    let columns = (columns.into_iter().enumerate())
        .map(|(i, column)| ColumnSchema {
            summary: summarize(&column[1], sample.iter().map(|row| &row[i])),
            name: column[0].clone(),
            data_type: column[1].clone(),
        })
        .collect();
    TableSchema {
        datasource: datasource.to_owned(),
        name: table.to_owned(),
        alias: alias(table),
        columns,
        primary_key,
        foreign_keys,
    }
}

/// The table's name as people say it: `ev_registrations` → `ev registration`.
fn alias(table: &str) -> String {
    let lower = table.to_lowercase();
    let mut words: Vec<&str> = lower.split(['_', ' ']).filter(|w| !w.is_empty()).collect();
    let singular = words.last().map(|last| {
        if last.chars().count() > 4 && last.ends_with("ies") {
            format!("{}y", &last[..last.len() - 3])
        } else if last.chars().count() > 3
            && last.ends_with('s')
            && !last.ends_with("ss")
            && !last.ends_with("us")
        {
            last[..last.len() - 1].to_owned()
        } else {
            (*last).to_owned()
        }
    });
    if let Some(singular) = singular {
        words.pop();
        let mut out = words.join(" ");
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&singular);
        return out;
    }
    String::new()
}

/// One sampled value as the engine typed it (PostgreSQL's all come as text).
enum Cell {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

impl FromSql for Cell {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Cell> {
        Ok(match value {
            ValueRef::Null => Cell::Null,
            ValueRef::Integer(n) => Cell::Int(n),
            ValueRef::Real(f) => Cell::Real(f),
            ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
            ValueRef::Blob(b) => Cell::Text(format!("<{} bytes>", b.len())),
        })
    }
}

impl Cell {
    /// The value as a number to compare and as the text to show.
    fn number(&self) -> Option<(f64, String)> {
        match self {
            Cell::Int(n) => Some((*n as f64, n.to_string())),
            // Display writes whole floats without `.0`: `2`, not `2.0`.
            Cell::Real(f) if f.is_finite() => Some((*f, f.to_string())),
            Cell::Text(t) => (t.trim().parse().map(Cell::Int))
                .or_else(|_| t.trim().parse().map(Cell::Real))
                .ok()?
                .number(),
            Cell::Real(_) | Cell::Null => None,
        }
    }

    fn text(&self) -> String {
        match self {
            Cell::Int(n) => n.to_string(),
            Cell::Real(f) => f.to_string(),
            Cell::Text(t) => t.clone(),
            Cell::Null => String::new(),
        }
    }
}

/// Words of a declared type that make it numeric (`INTEGER`, `numeric(10,2)`,
/// `double precision`); whole words, so `POINT` and `INTERVAL` are not.
const NUMERIC_WORDS: &str = "INT INTEGER INT2 INT4 INT8 TINYINT SMALLINT MEDIUMINT BIGINT REAL \
     NUMERIC DECIMAL FLOAT FLOAT4 FLOAT8 DOUBLE SERIAL SMALLSERIAL BIGSERIAL";

/// `YYYY-MM-DD`, a valid date, optionally followed by a time.
fn is_iso_date(value: &str) -> bool {
    let (Some(day), Some(rest)) = (value.get(..10), value.get(10..)) else {
        return false;
    };
    let dashes = day
        .bytes()
        .enumerate()
        .filter(|(_, b)| *b == b'-')
        .map(|(i, _)| i);
    dashes.eq([4, 7])
        && (rest.is_empty() || rest.starts_with(['T', ' ']))
        && NaiveDate::parse_from_str(day, "%Y-%m-%d").is_ok()
}

fn summarize<'a>(data_type: &str, cells: impl Iterator<Item = &'a Cell>) -> ColumnSummary {
    let values: Vec<&Cell> = cells.filter(|c| !matches!(c, Cell::Null)).collect();
    if values.is_empty() {
        return ColumnSummary::Empty;
    }
    let kind = data_type.to_uppercase();
    let temporal = kind.contains("DATE") || kind.contains("TIME");
    let mut words = kind.split(|c: char| !c.is_ascii_alphanumeric());
    if temporal || words.any(|w| NUMERIC_WORDS.split_whitespace().any(|n| n == w)) {
        // A value that is not a number (SQLite does not enforce types) falls through.
        let numbers: Option<Vec<_>> = values.iter().map(|c| c.number()).collect();
        let numbers = numbers.unwrap_or_default();
        let min = numbers.iter().min_by(|a, b| a.0.total_cmp(&b.0));
        if let (Some(min), Some(max)) = (min, numbers.iter().max_by(|a, b| a.0.total_cmp(&b.0))) {
            let (min, max) = (min.1.clone(), max.1.clone());
            return ColumnSummary::Range { min, max };
        }
    }
    let texts: Vec<String> = values.iter().map(|c| c.text()).collect();
    let textual = ["CHAR", "TEXT", "CLOB"].iter().any(|t| kind.contains(t));
    if temporal || (textual && texts.iter().all(|t| is_iso_date(t))) {
        // ISO dates and times sort as text.
        if let (Some(min), Some(max)) = (texts.iter().min(), texts.iter().max()) {
            return range(min, max);
        }
    }
    // Counted as shown, so values that differ only in spacing or past the cut are one.
    let mut counts: HashMap<String, usize> = HashMap::new();
    for text in &texts {
        *counts.entry(clean(text)).or_default() += 1;
    }
    let mut ranked: Vec<(String, usize)> = counts.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let top = ranked.into_iter().take(TOP_VALUES).map(|(value, _)| value);
    ColumnSummary::Samples {
        values: top.collect(),
    }
}

fn range(min: &str, max: &str) -> ColumnSummary {
    let (min, max) = (clean(min), clean(max));
    ColumnSummary::Range { min, max }
}

/// A value as a short single line of the document.
fn clean(value: &str) -> String {
    let words: Vec<&str> = value.split_whitespace().collect();
    words.join(" ").chars().take(VALUE_CHARS).collect()
}

mod mysql;
#[cfg(test)]
mod tests;

pub use mysql::introspect_mysql;
