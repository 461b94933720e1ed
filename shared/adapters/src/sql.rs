//! The SQL adapter: one read-only statement per template, named parameters always bound,
//! results capped at the datasource's row limit and cut off at its deadline.
//!
//! SQLite is embedded: a datasource names a database file (`connection.database`, opened
//! read-only) or a seed script (`connection.seed_sql`, loaded into memory, then the
//! connection is made `query_only`).

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::{Connection, OpenFlags};
use serde_json::{json, Map, Value};
use sqlparser::ast::{Expr, ObjectName, Query, SetExpr, Statement, TableFactor, Visit, Visitor};
use sqlparser::dialect::{Dialect, DuckDbDialect, MySqlDialect, PostgreSqlDialect, SQLiteDialect};
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, Tokenizer, Whitespace};
use switchyard_catalog::template::{Datasource, Template};
use switchyard_catalog::BoxFuture;

use crate::adapter::{Adapter, Answer};
use crate::error::{AdapterError, Result};
use crate::render::render;

/// Which SQL dialect a datasource speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
    Duckdb,
    /// MySQL or MariaDB.
    Mysql,
}

impl Engine {
    pub fn of(datasource: &Datasource) -> Result<Engine> {
        match datasource.spec.connection.get("engine").map(String::as_str) {
            Some("sqlite") => Ok(Engine::Sqlite),
            Some("postgres" | "postgresql") => Ok(Engine::Postgres),
            Some("duckdb") => Ok(Engine::Duckdb),
            Some("mysql" | "mariadb") => Ok(Engine::Mysql),
            other => Err(AdapterError::Datasource {
                datasource: datasource.spec.name.clone(),
                message: format!(
                    "connection.engine must be `sqlite`, `postgres`, `duckdb` or `mysql`, found {}",
                    other.map_or_else(|| "nothing".to_owned(), |e| format!("`{e}`"))
                ),
            }),
        }
    }
}

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

/// How deeply the checked SQL may nest (sqlparser's recursion limit). sqlparser 0.55
/// backtracks on some nested constructs (function arguments, `CAST`, parenthesised
/// subqueries, arrays), doubling its work per level: at its default limit of 50, a few
/// hundred bytes of SQL take hours to parse. 20 still allows about 17 levels of
/// parentheses and calls (8 of nested subqueries) and keeps every parse under a second.
const MAX_NESTING: usize = 20;

/// The most tokens (words, literals, operators) the checked SQL may have. A flat chain
/// (`1 + 1 + …`, `… UNION SELECT …`) parses into a tree as deep as it is long, and walking
/// or dropping a tree some thousands deep overflows a thread's stack, which aborts the
/// process; templates and generated queries are far shorter.
const MAX_TOKENS: usize = 4096;

/// Functions a read-only query must not call: they sleep, change settings or sequences,
/// read or write server files and large objects, take advisory locks, signal other
/// sessions, or run SQL of their own (on this connection or another, where the read-only
/// transaction does not reach). Matched on the last part of the name, in any case; a
/// trailing `*` matches a prefix.
const SIDE_EFFECT_FUNCTIONS: &[&str] = &[
    // PostgreSQL
    "pg_sleep*",
    "set_config",
    "nextval",
    "setval",
    "lo_*",
    "lowrite",
    "loread",
    "pg_read_file",
    "pg_read_binary_file",
    "pg_ls_*",
    "pg_stat_file",
    "pg_file_*",
    "pg_advisory_*",
    "pg_try_advisory_*",
    "pg_notify",
    "pg_terminate_backend",
    "pg_cancel_backend",
    "pg_reload_conf",
    "pg_rotate_logfile",
    "pg_stat_reset*",
    "pg_logical_*",
    "pg_replication_*",
    "pg_create_*",
    "pg_drop_replication_slot",
    "pg_switch_wal",
    "pg_promote",
    "pg_backup_*",
    "pg_start_backup",
    "pg_stop_backup",
    "dblink*",
    "query_to_xml*",
    "cursor_to_xml*",
    "ts_stat",
    "ts_rewrite",
    // SQLite
    "load_extension",
    "readfile",
    "writefile",
    "edit",
    "fts3_tokenizer",
    // DuckDB: files, the network and SQL of their own (external access is off as well)
    "read_csv*",
    "read_parquet",
    "parquet_*",
    "read_json*",
    "read_ndjson*",
    "read_text",
    "read_blob",
    "read_xlsx",
    "sniff_csv",
    "glob",
    "query",
    "query_table",
    "getenv",
    "duckdb_secrets",
    "iceberg_*",
    "delta_scan",
    "sqlite_scan",
    "sqlite_attach",
    "postgres_*",
    "mysql_*",
    // MySQL and MariaDB
    "sleep",
    "benchmark",
    "get_lock",
    "release_lock",
    "release_all_locks",
    "load_file",
    "master_pos_wait",
    "source_pos_wait",
    "master_gtid_wait",
    "lastval",
    "sys_exec",
    "sys_eval",
];

/// The name of a function with side effects, as called.
fn side_effect(name: &ObjectName) -> Option<String> {
    let last = name.0.last()?.as_ident()?.value.to_ascii_lowercase();
    SIDE_EFFECT_FUNCTIONS
        .iter()
        .any(|entry| match entry.strip_suffix('*') {
            Some(prefix) => last.starts_with(prefix),
            None => last == *entry,
        })
        .then(|| name.to_string())
}

/// Refuse anything but exactly one read-only query: no writes anywhere in the syntax tree
/// (data-modifying CTEs included), no `SELECT … INTO`, no row locks, no calls of
/// [`SIDE_EFFECT_FUNCTIONS`].
pub fn check_read_only(template_id: &str, sql: &str, engine: Engine) -> Result<()> {
    let refuse = |message: String| AdapterError::Sql {
        template: template_id.to_owned(),
        message,
    };
    let statements = match engine {
        Engine::Sqlite => parse(&SQLiteDialect {}, sql),
        Engine::Postgres => parse(&PostgreSqlDialect {}, sql),
        Engine::Duckdb => parse(&DuckDbDialect {}, sql),
        Engine::Mysql => parse(&MySqlDialect {}, sql),
    }
    .map_err(|e| match e {
        ParserError::RecursionLimitExceeded => refuse(format!(
            "sql_template nests deeper than the {MAX_NESTING} levels the read-only check reads"
        )),
        e => refuse(format!("sql_template does not parse: {e}")),
    })?;
    if statements.len() != 1 {
        return Err(refuse(format!(
            "sql_template must be exactly one statement, found {}",
            statements.len()
        )));
    }
    let Statement::Query(query) = &statements[0] else {
        return Err(refuse(
            "sql_template must be a read-only query (SELECT or WITH … SELECT)".into(),
        ));
    };
    if !query.locks.is_empty() {
        return Err(refuse(
            "sql_template must not lock rows (FOR UPDATE/SHARE)".into(),
        ));
    }
    let mut check = ReadOnly(None);
    let _ = statements.visit(&mut check);
    match check.0 {
        Some(problem) => Err(refuse(format!("sql_template must be read-only: {problem}"))),
        None => Ok(()),
    }
}

fn parse(dialect: &dyn Dialect, sql: &str) -> std::result::Result<Vec<Statement>, ParserError> {
    let tokens = Tokenizer::new(dialect, sql).tokenize_with_location()?;
    let words = tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .count();
    if words > MAX_TOKENS {
        return Err(ParserError::ParserError(format!(
            "longer than the {MAX_TOKENS} tokens the read-only check reads ({words})"
        )));
    }
    if dialect.is::<MySqlDialect>() {
        mysql_tokens(&tokens)?;
    }
    Parser::new(dialect)
        .with_recursion_limit(MAX_NESTING)
        .with_tokens_with_locations(tokens)
        .parse_statements()
}

/// What MySQL and MariaDB read in SQL that the parser does not: the text of `/*! … */` and
/// `/*M! … */` comments is executed by the server, not skipped, and `@v := …` assigns a
/// session variable inside a query.
fn mysql_tokens(
    tokens: &[sqlparser::tokenizer::TokenWithSpan],
) -> std::result::Result<(), ParserError> {
    for token in tokens {
        match &token.token {
            Token::Whitespace(Whitespace::MultiLineComment(text))
                if text.starts_with('!') || text.starts_with("M!") =>
            {
                return Err(ParserError::ParserError(
                    "a /*! … */ comment, which MySQL runs as SQL".into(),
                ));
            }
            Token::Assignment => {
                return Err(ParserError::ParserError(
                    "`:=` assigns a session variable".into(),
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Every template of `datasource` checked with [`check_read_only`] for `engine`.
pub fn check_templates(datasource: &Datasource, engine: Engine) -> Result<()> {
    (datasource.templates.iter())
        .filter_map(|t| Some((t, t.sql_template.as_deref()?)))
        .try_for_each(|(template, sql)| check_read_only(&template.id, sql, engine))
}

/// Finds the first write in a syntax tree: a statement other than a query anywhere in it,
/// and in every query (subqueries, CTEs and set operations included) a row lock or a
/// `SELECT … INTO` (PostgreSQL creates the table even from `SELECT … INTO t UNION …`).
struct ReadOnly(Option<String>);

impl Visitor for ReadOnly {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        if !query.locks.is_empty() {
            self.0 = Some("FOR UPDATE/SHARE inside the query locks rows".to_owned());
        } else if selects_into(&query.body) {
            self.0 = Some("SELECT … INTO writes a table".to_owned());
        }
        self.verdict()
    }

    fn pre_visit_statement(&mut self, statement: &Statement) -> ControlFlow<()> {
        if !matches!(statement, Statement::Query(_)) {
            let text = statement.to_string();
            let verb = text.split_whitespace().next().unwrap_or("a statement");
            self.0 = Some(format!("{verb} inside the query writes or changes state"));
        }
        self.verdict()
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        if let Expr::Function(function) = expr {
            self.refuse_call(&function.name);
        }
        self.verdict()
    }

    /// Table functions: `FROM pg_sleep(1)`, `FROM dblink(…) AS t(…)`.
    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        match factor {
            TableFactor::Table {
                name,
                args: Some(_),
                ..
            }
            | TableFactor::Function { name, .. } => self.refuse_call(name),
            _ => {}
        }
        self.verdict()
    }
}

impl ReadOnly {
    fn refuse_call(&mut self, name: &ObjectName) {
        if let Some(name) = side_effect(name) {
            self.0 = Some(format!(
                "{name}() has side effects (sleeps, settings, files, locks or SQL of its own)"
            ));
        }
    }

    fn verdict(&self) -> ControlFlow<()> {
        if self.0.is_some() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

/// Whether a query body (through its set operations) has a `SELECT … INTO`; a
/// parenthesised query is a query of its own, which the visitor checks.
fn selects_into(body: &SetExpr) -> bool {
    match body {
        SetExpr::Select(select) => select.into.is_some(),
        SetExpr::SetOperation { left, right, .. } => selects_into(left) || selects_into(right),
        _ => false,
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
        let connection = self.connection.lock().unwrap_or_else(|p| p.into_inner());
        let stop_at = Instant::now() + deadline;
        connection.progress_handler(1000, Some(move || Instant::now() > stop_at));
        let mut statement = connection.prepare(sql).map_err(sql_error)?;
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
