//! The SQL adapter: one read-only statement per template, named parameters always bound,
//! results capped at the datasource's row limit and cut off at its deadline.
//!
//! SQLite is embedded: a datasource names a database file (`connection.database`, opened
//! read-only) or a seed script (`connection.seed_sql`, loaded into memory, then the
//! connection is made `query_only`).

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::{Connection, OpenFlags};
use serde_json::{json, Map, Value};
use switchyard_catalog::template::{Datasource, Template};
use switchyard_catalog::BoxFuture;

use crate::adapter::{Adapter, Answer};
use crate::error::{AdapterError, Result};
use crate::guard::{check_read_only, check_templates, Engine};
use crate::render::render;

/// The URL of a server-backed datasource, from the variable `connection.url_env` names
/// (never from the template files): the variable's name and its value. `server` names the
/// engine in the errors.
pub fn connection_url(datasource: &Datasource, server: &str) -> Result<(String, String)> {
    let fail = |message: String| AdapterError::Datasource {
        datasource: datasource.spec.name.clone(),
        message,
    };
    let variable = datasource.spec.connection.get("url_env").ok_or_else(|| {
        fail(format!(
            "connection.url_env must name the variable holding the {server} URL"
        ))
    })?;
    let url = std::env::var(variable).map_err(|_| {
        fail(format!(
            "connection.url_env: the variable {variable} is not set"
        ))
    })?;
    Ok((variable.clone(), url))
}

/// The error of a call to a server-backed datasource that ran past its deadline: names
/// the datasource, the template and the step it was waiting on.
pub fn deadline_error(
    datasource: &str,
    template_id: &str,
    deadline: std::time::Duration,
    step: &str,
) -> AdapterError {
    AdapterError::Datasource {
        datasource: datasource.to_owned(),
        message: format!(
            "template `{template_id}`: no answer within the deadline of {} ms ({step})",
            deadline.as_millis()
        ),
    }
}

/// Rows as returned to callers: column names, row objects, and whether the cap cut them.
#[derive(Debug, Clone, PartialEq)]
pub struct SqlRows {
    pub columns: Vec<String>,
    pub rows: Vec<Map<String, Value>>,
    pub truncated: bool,
}

pub struct SqliteDatasource {
    name: String,
    connection: Mutex<Connection>,
    max_rows: usize,
}

impl SqliteDatasource {
    /// Open the datasource's database; `folder` is its datasource folder (paths in
    /// `connection` are relative to it). Every template's SQL is checked here.
    pub fn open(datasource: &Datasource, folder: &Path) -> Result<SqliteDatasource> {
        let name = datasource.spec.name.clone();
        let fail = |message: String| AdapterError::Datasource {
            datasource: name.clone(),
            message,
        };
        let connection = datasource.spec.connection.clone();
        let opened = match (connection.get("database"), connection.get("seed_sql")) {
            (Some(file), _) => {
                let path = folder.join(file);
                Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY)
                    .map_err(|e| fail(format!("connection.database {}: {e}", path.display())))?
            }
            (None, Some(seed)) => {
                let path = folder.join(seed);
                let script = std::fs::read_to_string(&path)
                    .map_err(|e| fail(format!("connection.seed_sql {}: {e}", path.display())))?;
                let db = Connection::open_in_memory().map_err(|e| fail(e.to_string()))?;
                db.execute_batch(&script)
                    .map_err(|e| fail(format!("connection.seed_sql {}: {e}", path.display())))?;
                db
            }
            (None, None) => {
                return Err(fail(
                    "connection needs `database` (a SQLite file) or `seed_sql` (a script)".into(),
                ))
            }
        };
        // Second guard behind the parser check: this connection cannot write.
        opened
            .pragma_update(None, "query_only", true)
            .map_err(|e| fail(e.to_string()))?;
        check_templates(datasource, Engine::Sqlite)?;
        Ok(SqliteDatasource {
            name,
            connection: Mutex::new(opened),
            max_rows: datasource.spec.limits.max_rows as usize,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The read-only connection, for schema introspection (`crate::schema`) to reuse the
    /// adapter's way of opening the database.
    pub(crate) fn connection(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.connection.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Run `template` with `parameters` bound by name; parameters the question did not
    /// give are bound as NULL. Stops at `deadline`.
    pub fn query(
        &self,
        template: &Template,
        parameters: &Map<String, Value>,
        deadline: Duration,
    ) -> Result<SqlRows> {
        let sql_error = |e: rusqlite::Error| AdapterError::Sql {
            template: template.id.clone(),
            message: e.to_string(),
        };
        let sql = template
            .sql_template
            .as_deref()
            .ok_or_else(|| AdapterError::Sql {
                template: template.id.clone(),
                message: "has no sql_template".into(),
            })?;
        // What runs is the statement the check read (SQLite binds `:name` itself).
        let sql = check_read_only(&template.id, sql, Engine::Sqlite)?;
        let connection = self.connection.lock().unwrap_or_else(|p| p.into_inner());
        let stop_at = Instant::now() + deadline;
        connection.progress_handler(1000, Some(move || Instant::now() > stop_at));
        let mut statement = connection.prepare(&sql).map_err(sql_error)?;
        for index in 1..=statement.parameter_count() {
            let Some(placeholder) = statement.parameter_name(index) else {
                continue;
            };
            let name = placeholder.trim_start_matches([':', '@', '$']).to_owned();
            let value = parameters.get(&name).map(to_sql).unwrap_or(SqlValue::Null);
            statement
                .raw_bind_parameter(index, value)
                .map_err(sql_error)?;
        }
        let columns: Vec<String> = statement
            .column_names()
            .into_iter()
            .map(str::to_owned)
            .collect();
        let mut rows = Vec::new();
        let mut truncated = false;
        let mut cursor = statement.raw_query();
        while let Some(row) = cursor.next().map_err(|e| match e {
            rusqlite::Error::SqliteFailure(f, _)
                if f.code == rusqlite::ErrorCode::OperationInterrupted =>
            {
                AdapterError::Sql {
                    template: template.id.clone(),
                    message: format!("cancelled at the deadline of {} ms", deadline.as_millis()),
                }
            }
            other => sql_error(other),
        })? {
            if rows.len() == self.max_rows {
                truncated = true;
                break;
            }
            let mut object = Map::new();
            for (i, column) in columns.iter().enumerate() {
                object.insert(column.clone(), to_json(row.get_ref(i).map_err(sql_error)?));
            }
            rows.push(object);
        }
        drop(cursor);
        drop(statement);
        connection.progress_handler(0, None::<fn() -> bool>);
        Ok(SqlRows {
            columns,
            rows,
            truncated,
        })
    }
}

fn to_sql(value: &Value) -> SqlValue {
    match value {
        Value::Null => SqlValue::Null,
        Value::Bool(b) => SqlValue::Integer(i64::from(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => SqlValue::Integer(i),
            None => SqlValue::Real(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => SqlValue::Text(s.clone()),
        other => SqlValue::Text(other.to_string()),
    }
}

fn to_json(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::String(format!("<{} bytes>", b.len())),
    }
}

/// A short plain-text table of the rows (at most 20 shown).
pub fn text_table(rows: &SqlRows) -> String {
    if rows.rows.is_empty() {
        return "No rows.".to_owned();
    }
    let cell = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let mut lines = vec![rows.columns.join(" | ")];
    for row in rows.rows.iter().take(20) {
        let cells: Vec<String> = rows.columns.iter().map(|c| cell(&row[c])).collect();
        lines.push(cells.join(" | "));
    }
    if rows.rows.len() > 20 || rows.truncated {
        lines.push(format!(
            "({} rows{})",
            rows.rows.len(),
            if rows.truncated {
                ", cut at the row limit"
            } else {
                ""
            }
        ));
    }
    lines.join("\n")
}

/// The index build's check of a SQL datasource: every template must be one read-only
/// statement for the datasource's engine (the adapter checks again at start).
pub fn check_datasource(datasource: &switchyard_catalog::template::Datasource) -> Result<()> {
    let engine = Engine::of(datasource)?;
    if engine == Engine::Duckdb {
        crate::duckdb_data::data_of(datasource)?;
    }
    check_templates(datasource, engine)
}

impl Adapter for SqliteDatasource {
    fn execute<'a>(
        &'a self,
        template: &'a Template,
        parameters: &'a Map<String, Value>,
        _: &'a switchyard_contract::adapter::AdapterRequest,
        deadline: Duration,
    ) -> BoxFuture<'a, Result<Answer>> {
        let answer = self
            .query(template, parameters, deadline)
            .and_then(|rows| answer(template, parameters, rows));
        Box::pin(async move { answer })
    }
}

/// Rows as an answer: the `response_template` over the parameters plus `rows` and
/// `row_count`, or a short table.
pub(crate) fn answer(
    template: &Template,
    parameters: &Map<String, Value>,
    rows: SqlRows,
) -> Result<Answer> {
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
