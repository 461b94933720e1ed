//! The SQL adapter on DuckDB, embedded: no server beside the Lambda, SQL over CSV files
//! (Parquet once DuckDB's parquet extension is built in). The same templates as SQLite and
//! PostgreSQL (`:name` parameters,
//! rewritten to `$n` and bound), the same read-only check (DuckDB's file readers, `COPY`,
//! `ATTACH`, `INSTALL`, `LOAD`, `SET` refused), a row cap, and the deadline as an
//! interrupt.
//!
//! The data, relative to the datasource folder, one of:
//! - `connection.database: data/ev.duckdb`, a DuckDB file opened read-only;
//! - `connection.table.<name>: data/vehicles.csv`, one key per table, each
//!   file loaded into an in-memory table of that name when the adapter opens.
//!
//! Behind the parser check, DuckDB's own guards: once the data is in, external access is
//! off (no file, no network, no extension is read again) and the configuration is locked,
//! so no statement can turn either back on; each query runs in a transaction that is rolled
//! back. Extensions are never installed or loaded on demand.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::Mutex;
use std::time::Duration;

use duckdb::types::{TimeUnit, Value as DuckValue};
use duckdb::{AccessMode, Config, Connection};
use serde_json::{Map, Value};
use sqlparser::dialect::DuckDbDialect;
use switchyard_catalog::template::{Datasource, Template};
use switchyard_catalog::BoxFuture;

use crate::adapter::{Adapter, Answer};
use crate::duckdb_data::{data_of, reader, Data, TABLE_PREFIX};
use crate::error::{AdapterError, Result};
use crate::guard::{check_read_only, Engine};
use crate::placeholders::{rewrite, Style};
use crate::sql::{self, SqlRows};
use crate::values::{bound, Bound};

/// A template's SQL as DuckDB runs it: `$n` placeholders and the parameter names in order.
struct Prepared {
    sql: String,
    names: Vec<String>,
}

pub struct DuckdbDatasource {
    name: String,
    connection: Mutex<Connection>,
    statements: BTreeMap<String, Prepared>,
    max_rows: usize,
}

impl DuckdbDatasource {
    /// Open the datasource's data from `folder` (its datasource folder) and prepare every
    /// template: a missing or corrupt file names its `connection` key and path, and a
    /// template naming an unknown table or column fails here, not at its first question.
    pub fn open(datasource: &Datasource, folder: &Path) -> Result<DuckdbDatasource> {
        let name = datasource.spec.name.clone();
        let fail = |message: String| AdapterError::Datasource {
            datasource: name.clone(),
            message,
        };
        let duck = |e: duckdb::Error| fail(e.to_string());
        // No extension is fetched or loaded on demand; spills go to the temporary directory
        // (a Lambda's working directory is read-only).
        let spill = std::env::temp_dir().join(format!("switchyard-duckdb-{name}"));
        let config = || {
            Config::default()
                .enable_autoload_extension(false)
                .and_then(|c| c.with("autoinstall_known_extensions", "false"))
                .and_then(|c| c.with("temp_directory", spill.display().to_string()))
                .map_err(duck)
        };
        let connection = match data_of(datasource)? {
            Data::Database(file) => {
                let path = folder.join(&file);
                let missing = |path: &PathBuf| {
                    fail(format!(
                        "connection.database {}: no such file",
                        path.display()
                    ))
                };
                if !path.is_file() {
                    return Err(missing(&path));
                }
                let config = config()?.access_mode(AccessMode::ReadOnly).map_err(duck)?;
                Connection::open_with_flags(&path, config)
                    .map_err(|e| fail(format!("connection.database {}: {e}", path.display())))?
            }
            Data::Tables(tables) => {
                let db = Connection::open_in_memory_with_flags(config()?).map_err(duck)?;
                for (table, file) in &tables {
                    let path = folder.join(file);
                    let at = |problem: String| {
                        fail(format!(
                            "connection.{TABLE_PREFIX}{table} {}: {problem}",
                            path.display()
                        ))
                    };
                    if !path.is_file() {
                        return Err(at("no such file".into()));
                    }
                    let reader = reader(file).unwrap_or("read_csv");
                    // The table name was checked to be plain; the path is bound.
                    db.execute(
                        &format!("CREATE TABLE \"{table}\" AS SELECT * FROM {reader}(?)"),
                        [path.display().to_string()],
                    )
                    .map_err(|e| at(e.to_string()))?;
                }
                db
            }
        };
        connection
            .execute_batch("SET enable_external_access = false; SET lock_configuration = true;")
            .map_err(duck)?;
        let mut statements = BTreeMap::new();
        for template in &datasource.templates {
            let Some(sql) = &template.sql_template else {
                continue;
            };
            let sql = check_read_only(&template.id, sql, Engine::Duckdb)?;
            let (sql, names) = rewrite(&DuckDbDialect {}, Style::Numbered, &template.id, &sql)?;
            connection.prepare(&sql).map_err(|e| AdapterError::Sql {
                template: template.id.clone(),
                message: format!("does not prepare on the datasource's data: {e}"),
            })?;
            statements.insert(template.id.clone(), Prepared { sql, names });
        }
        Ok(DuckdbDatasource {
            name,
            connection: Mutex::new(connection),
            statements,
            max_rows: datasource.spec.limits.max_rows as usize,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Run `template` with `parameters` bound in order; parameters the question did not
    /// give are bound as NULL. Interrupted at `deadline`.
    pub fn query(
        &self,
        template: &Template,
        parameters: &Map<String, Value>,
        deadline: Duration,
    ) -> Result<SqlRows> {
        let sql_error = |message: String| AdapterError::Sql {
            template: template.id.clone(),
            message,
        };
        // A template of the catalog was checked and rewritten at open; another one (a query
        // the chat model wrote) is checked now.
        let written;
        let prepared = match self.statements.get(&template.id) {
            Some(prepared) => prepared,
            None => {
                let sql = (template.sql_template.as_deref())
                    .ok_or_else(|| sql_error("has no sql_template".into()))?;
                let sql = check_read_only(&template.id, sql, Engine::Duckdb)?;
                let (sql, names) = rewrite(&DuckDbDialect {}, Style::Numbered, &template.id, &sql)?;
                written = Prepared { sql, names };
                &written
            }
        };
        let values = (prepared.names.iter())
            .map(|name| typed(template, name, parameters.get(name)))
            .collect::<Result<Vec<DuckValue>>>()?;
        let connection = self.connection.lock().unwrap_or_else(|p| p.into_inner());
        // A thread that interrupts the query at the deadline unless told it finished.
        let interrupt = connection.interrupt_handle();
        let (finished, wait) = channel::<()>();
        let watchdog = std::thread::spawn(move || {
            let timed_out = matches!(wait.recv_timeout(deadline), Err(RecvTimeoutError::Timeout));
            if timed_out {
                interrupt.interrupt();
            }
            timed_out
        });
        let result = run(&connection, &prepared.sql, values, self.max_rows);
        let _ = finished.send(());
        let timed_out = watchdog.join().unwrap_or(false);
        // Whatever happened, nothing of the query's transaction stays.
        let _ = connection.execute_batch("ROLLBACK");
        result.map_err(|e| {
            if timed_out {
                sql_error(format!(
                    "cancelled at the deadline of {} ms",
                    deadline.as_millis()
                ))
            } else {
                sql_error(e.to_string())
            }
        })
    }

    /// The connection, for schema introspection (`crate::schema`) to reuse the adapter's
    /// way of opening the data.
    pub(crate) fn connection(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.connection.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The query in a transaction (rolled back by the caller), its rows up to `max_rows`.
fn run(
    connection: &Connection,
    sql: &str,
    values: Vec<DuckValue>,
    max_rows: usize,
) -> duckdb::Result<SqlRows> {
    connection.execute_batch("BEGIN TRANSACTION")?;
    let mut statement = connection.prepare(sql)?;
    for (index, value) in values.into_iter().enumerate() {
        statement.raw_bind_parameter(index + 1, value)?;
    }
    statement.raw_execute()?;
    let columns = statement.column_names();
    let mut cursor = statement.raw_query();
    let mut rows = Vec::new();
    let mut truncated = false;
    while let Some(row) = cursor.next()? {
        if rows.len() == max_rows {
            truncated = true;
            break;
        }
        let mut object = Map::new();
        for (i, column) in columns.iter().enumerate() {
            object.insert(column.clone(), to_json(row.get::<_, DuckValue>(i)?));
        }
        rows.push(object);
    }
    drop(cursor);
    Ok(SqlRows {
        columns,
        rows,
        truncated,
    })
}

/// A parameter's value as its declared type ([`bound`]), its text checked for NUL, which
/// DuckDB's C API would silently cut it at.
fn typed(template: &Template, name: &str, value: Option<&Value>) -> Result<DuckValue> {
    Ok(match bound(template, name, value)? {
        Bound::Null => DuckValue::Null,
        Bound::Integer(i) => DuckValue::BigInt(i),
        Bound::Float(f) => DuckValue::Double(f),
        Bound::Boolean(b) => DuckValue::Boolean(b),
        Bound::Text(text) if text.contains('\0') => {
            return Err(AdapterError::Parameter {
                name: name.to_owned(),
                message: "contains a NUL character, which DuckDB text cannot take".into(),
            })
        }
        Bound::Text(text) => DuckValue::Text(text),
    })
}

/// A DuckDB value as JSON: numbers as numbers (128-bit ones too, when they fit), dates and
/// times as ISO 8601 text, anything else as DuckDB prints it.
pub(crate) fn to_json(value: DuckValue) -> Value {
    let float = |f: f64| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number);
    match value {
        DuckValue::Null => Value::Null,
        DuckValue::Boolean(b) => Value::Bool(b),
        DuckValue::TinyInt(i) => Value::from(i),
        DuckValue::SmallInt(i) => Value::from(i),
        DuckValue::Int(i) => Value::from(i),
        DuckValue::BigInt(i) => Value::from(i),
        DuckValue::HugeInt(i) => {
            i64::try_from(i).map_or_else(|_| Value::String(i.to_string()), Value::from)
        }
        DuckValue::UTinyInt(i) => Value::from(i),
        DuckValue::USmallInt(i) => Value::from(i),
        DuckValue::UInt(i) => Value::from(i),
        DuckValue::UBigInt(i) => Value::from(i),
        DuckValue::UHugeInt(i) => {
            u64::try_from(i).map_or_else(|_| Value::String(i.to_string()), Value::from)
        }
        DuckValue::Float(f) => float(f64::from(f)),
        DuckValue::Double(f) => float(f),
        DuckValue::Decimal(d) => d.to_string().parse::<f64>().map_or(Value::Null, float),
        DuckValue::Text(s) | DuckValue::Enum(s) => Value::String(s),
        DuckValue::Blob(b) => Value::String(format!("<{} bytes>", b.len())),
        DuckValue::Date32(days) => chrono::NaiveDate::from_num_days_from_ce_opt(days + 719_163)
            .map_or(Value::Null, |d| Value::String(d.to_string())),
        DuckValue::Timestamp(unit, value) => {
            let micros = match unit {
                TimeUnit::Second => value.saturating_mul(1_000_000),
                TimeUnit::Millisecond => value.saturating_mul(1_000),
                TimeUnit::Microsecond => value,
                TimeUnit::Nanosecond => value / 1_000,
            };
            chrono::DateTime::from_timestamp_micros(micros)
                .map_or(Value::Null, |t| Value::String(t.naive_utc().to_string()))
        }
        DuckValue::List(items) => Value::Array(items.into_iter().map(to_json).collect()),
        other => Value::String(format!("{other:?}")),
    }
}

impl Adapter for DuckdbDatasource {
    fn execute<'a>(
        &'a self,
        template: &'a Template,
        parameters: &'a Map<String, Value>,
        _: &'a switchyard_contract::adapter::AdapterRequest,
        deadline: Duration,
    ) -> BoxFuture<'a, Result<Answer>> {
        let answer = self
            .query(template, parameters, deadline)
            .and_then(|rows| sql::answer(template, parameters, rows));
        Box::pin(async move { answer })
    }
}
