//! The SQL adapter on MySQL and MariaDB: the same templates as SQLite and PostgreSQL
//! (`:name` parameters, rewritten to `?` where the parser reads them and bound in order),
//! each value bound as its declared type, run in a READ ONLY transaction that is rolled
//! back, with the server's statement timeout (MariaDB's `max_statement_time`, MySQL's
//! `max_execution_time`) at the deadline and a row cap. The deadline covers the whole call:
//! waiting for a pooled connection, the session's settings and the transaction too.
//!
//! The connection URL (`mysql://user:password@host:port/database`) comes from the
//! environment variable named by `connection.url_env`, never from the template files;
//! `ssl-mode=VERIFY_IDENTITY` (and `ssl-ca`) in it encrypts the connection and verifies
//! the server ([`crate::tls`]).
//! Every session runs with a fixed `sql_mode`: the read-only check reads the SQL as MySQL
//! does by default (backslash escapes in strings, `"…"` a string), whatever the server's
//! global mode, and `||` concatenates as in the other engines (`PIPES_AS_CONCAT`), so the
//! catalog's portable SQL means the same here.

use std::time::Duration;

use tokio::time::{timeout_at, Instant};

use mysql_async::consts::ColumnType;
use mysql_async::prelude::Queryable;
use mysql_async::{Opts, OptsBuilder, Params, Pool, PoolConstraints, PoolOpts, SslOpts, TxOpts};
use mysql_async::{Row, Value as MyValue};
use serde_json::{Map, Value};
use sqlparser::dialect::MySqlDialect;
use switchyard_catalog::template::{Datasource, Template};
use switchyard_catalog::BoxFuture;

use crate::adapter::{Adapter, Answer};
use crate::error::{AdapterError, Result};
use crate::guard::{check_read_only, check_templates, Engine};
use crate::placeholders::{rewrite, Style};
use crate::sql::{self, connection_url, SqlRows};
use crate::tls::{self, TlsMode, MYSQL_KEYS};
use crate::values::{bound, Bound};

/// The session's SQL mode: strict, no ANSI quotes and no NO_BACKSLASH_ESCAPES (the check
/// reads strings as MySQL's default does), `||` as concatenation.
const SQL_MODE: &str = "SET SESSION sql_mode = \
    'PIPES_AS_CONCAT,STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'";

/// At most this many connections per datasource and process (a Lambda instance serves one
/// request at a time; `serve` a few).
const MAX_CONNECTIONS: usize = 4;

/// How long past the deadline the client waits for the server's own statement timeout to
/// stop a statement (its error says so) before it gives the connection up.
const SERVER_GRACE: Duration = Duration::from_millis(500);

/// Which server answers: they name the statement timeout differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Mariadb,
    Mysql,
}

pub struct MysqlDatasource {
    name: String,
    pool: Pool,
    flavor: Flavor,
    max_rows: usize,
}

impl MysqlDatasource {
    /// Connect with the URL in the variable `connection.url_env` (every template's SQL is
    /// checked first), and ask the server which it is.
    pub async fn connect(datasource: &Datasource) -> Result<MysqlDatasource> {
        let name = datasource.spec.name.clone();
        let fail = |message: String| AdapterError::Datasource {
            datasource: name.clone(),
            message,
        };
        check_templates(datasource, Engine::Mysql)?;
        let (variable, url) = connection_url(datasource, "MySQL")?;
        // The URL may hold a password: name the variable, never its value.
        let (url, mode) = tls::take_mode(&url, &MYSQL_KEYS)
            .map_err(|e| fail(format!("connection.url_env: {variable}: {e}")))?;
        let opts = Opts::from_url(&url).map_err(|e| {
            fail(format!(
                "connection.url_env: {variable} is not a MySQL URL: {e}"
            ))
        })?;
        let ssl = match mode {
            TlsMode::Plain => None,
            TlsMode::Verified { ca_file } => {
                tls::install_crypto_provider();
                let mut ssl = SslOpts::default();
                if let Some(path) = ca_file {
                    // Read here, so a wrong path fails now and names the file.
                    let certificates = tls::read_ca_file(&path)
                        .map_err(|e| fail(format!("connection.url_env: {variable}: {e}")))?;
                    ssl = ssl
                        .with_root_certs(certificates.iter().map(|c| c.to_vec().into()).collect());
                }
                Some(ssl)
            }
        };
        let constraints = PoolConstraints::new(0, MAX_CONNECTIONS)
            .ok_or_else(|| fail("pool constraints".into()))?;
        let opts = OptsBuilder::from_opts(opts)
            .ssl_opts(ssl)
            .setup(vec![SQL_MODE])
            .pool_opts(PoolOpts::default().with_constraints(constraints));
        let pool = Pool::new(opts);
        // A server that never answers fails the connect at the datasource's deadline.
        let timeout = Duration::from_millis(datasource.spec.limits.timeout_ms.max(1));
        let first = async {
            let mut conn = pool.get_conn().await?;
            let version: Option<String> = conn.query_first("SELECT VERSION()").await?;
            Ok::<_, mysql_async::Error>(version)
        };
        let version = tokio::time::timeout(timeout, first)
            .await
            .map_err(|_| {
                fail(format!(
                    "connecting with {variable}: no answer within the deadline of {} ms \
                     (limits.timeout_ms)",
                    timeout.as_millis()
                ))
            })?
            .map_err(|e| {
                let hint = tls::certificate_hint(&e.to_string(), &MYSQL_KEYS);
                fail(format!("connecting with {variable}: {e}{hint}"))
            })?;
        let flavor = if version.unwrap_or_default().contains("MariaDB") {
            Flavor::Mariadb
        } else {
            Flavor::Mysql
        };
        Ok(MysqlDatasource {
            name,
            pool,
            flavor,
            max_rows: datasource.spec.limits.max_rows as usize,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    /// A pooled connection, for schema introspection (`crate::schema`) to reuse the
    /// adapter's way of connecting.
    pub(crate) async fn conn(&self) -> Result<mysql_async::Conn> {
        self.pool
            .get_conn()
            .await
            .map_err(|e| AdapterError::Datasource {
                datasource: self.name.clone(),
                message: e.to_string(),
            })
    }

    /// Run `template` with `parameters` bound in order; parameters the question did not
    /// give are bound as NULL. The server stops the statement at `deadline`.
    pub async fn query(
        &self,
        template: &Template,
        parameters: &Map<String, Value>,
        deadline: Duration,
    ) -> Result<SqlRows> {
        let sql_error = |message: String| AdapterError::Sql {
            template: template.id.clone(),
            message,
        };
        let sql = (template.sql_template.as_deref())
            .ok_or_else(|| sql_error("has no sql_template".into()))?;
        // What runs is the statement the check read, without its comments.
        let sql = check_read_only(&template.id, sql, Engine::Mysql)?;
        let (sql, names) = rewrite(&MySqlDialect {}, Style::QuestionMark, &template.id, &sql)?;
        let values = (names.iter())
            .map(|name| typed(template, name, parameters.get(name)))
            .collect::<Result<Vec<MyValue>>>()?;
        // One deadline over the whole call: waiting for a connection (a new one, when the
        // server is unreachable, never answers), the session's settings, the transaction,
        // the statement and the rollback. Past it the call fails naming the datasource and
        // the step; the server's own timeout stops the statement a little before.
        let end = Instant::now() + deadline;
        let late = |step: &str| sql::deadline_error(&self.name, &template.id, deadline, step);
        let mut conn = timeout_at(end, self.pool.get_conn())
            .await
            .map_err(|_| late("waiting for a connection"))?
            .map_err(|e| sql_error(e.to_string()))?;
        let left = end.saturating_duration_since(Instant::now());
        let timeout = match self.flavor {
            // Seconds, fractions allowed.
            Flavor::Mariadb => format!(
                "SET SESSION max_statement_time = {:.3}",
                left.as_secs_f64().max(0.001)
            ),
            Flavor::Mysql => format!(
                "SET SESSION max_execution_time = {}",
                left.as_millis().max(1)
            ),
        };
        timeout_at(end, conn.query_drop(timeout))
            .await
            .map_err(|_| late("setting the statement timeout"))?
            .map_err(|e| sql_error(e.to_string()))?;
        // Second guard behind the parser check: the transaction cannot write.
        let mut options = TxOpts::default();
        options.with_readonly(true);
        let mut transaction = timeout_at(end, conn.start_transaction(options))
            .await
            .map_err(|_| late("starting the transaction"))?
            .map_err(|e| sql_error(e.to_string()))?;
        let run = async {
            let mut result = transaction
                .exec_iter(sql.as_str(), Params::Positional(values))
                .await?;
            let columns: Vec<String> = (result.columns_ref().iter())
                .map(|c| c.name_str().into_owned())
                .collect();
            let mut rows = Vec::new();
            let mut truncated = false;
            while let Some(row) = result.next().await? {
                if rows.len() == self.max_rows {
                    truncated = true;
                    break;
                }
                rows.push(row_json(&row, &columns));
            }
            // The rest of a cut result is read off the connection and dropped.
            result.drop_result().await?;
            Ok::<_, mysql_async::Error>(SqlRows {
                columns,
                rows,
                truncated,
            })
        };
        // A backstop behind the server's own timeout: a server that does not stop (or a
        // network that hangs) loses its connection a little past the deadline.
        let rows = match timeout_at(end + SERVER_GRACE, run).await {
            Ok(Ok(rows)) => rows,
            Ok(Err(e)) => return Err(mysql_error(&template.id, e, deadline)),
            Err(_) => return Err(late("running the statement")),
        };
        timeout_at(end + SERVER_GRACE, transaction.rollback())
            .await
            .map_err(|_| late("rolling back"))?
            .map_err(|e| sql_error(e.to_string()))?;
        Ok(rows)
    }
}

/// A server error as the adapter's: a statement stopped by the timeout says so.
fn mysql_error(template_id: &str, error: mysql_async::Error, deadline: Duration) -> AdapterError {
    // ER_STATEMENT_TIMEOUT (MariaDB 1969), ER_QUERY_TIMEOUT (MySQL 3024), ER_QUERY_INTERRUPTED.
    let timed_out = matches!(
        &error,
        mysql_async::Error::Server(e) if matches!(e.code, 1969 | 3024 | 1317)
    );
    AdapterError::Sql {
        template: template_id.to_owned(),
        message: if timed_out {
            format!("cancelled at the deadline of {} ms", deadline.as_millis())
        } else {
            error.to_string()
        },
    }
}

/// A parameter's value as its declared type ([`bound`]); booleans as 1 and 0.
fn typed(template: &Template, name: &str, value: Option<&Value>) -> Result<MyValue> {
    Ok(match bound(template, name, value)? {
        Bound::Null => MyValue::NULL,
        Bound::Integer(i) => MyValue::Int(i),
        Bound::Float(f) => MyValue::Double(f),
        Bound::Boolean(b) => MyValue::Int(i64::from(b)),
        Bound::Text(text) => MyValue::Bytes(text.into_bytes()),
    })
}

/// A row as JSON: numbers as numbers (DECIMAL too, which the server sends as text), dates
/// as `YYYY-MM-DD`, times and timestamps as ISO 8601 text, binary data by its length.
fn row_json(row: &Row, columns: &[String]) -> Map<String, Value> {
    let float = |f: f64| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number);
    let mut object = Map::new();
    for (i, column) in columns.iter().enumerate() {
        let kind = row.columns_ref()[i].column_type();
        let value = match row.as_ref(i).unwrap_or(&MyValue::NULL) {
            MyValue::NULL => Value::Null,
            MyValue::Int(n) => Value::from(*n),
            MyValue::UInt(n) => Value::from(*n),
            MyValue::Float(f) => float(f64::from(*f)),
            MyValue::Double(f) => float(*f),
            MyValue::Bytes(bytes) => match kind {
                ColumnType::MYSQL_TYPE_DECIMAL | ColumnType::MYSQL_TYPE_NEWDECIMAL => {
                    std::str::from_utf8(bytes)
                        .ok()
                        .and_then(|t| t.parse::<f64>().ok())
                        .map_or(Value::Null, float)
                }
                _ => match std::str::from_utf8(bytes) {
                    Ok(text) => Value::String(text.to_owned()),
                    Err(_) => Value::String(format!("<{} bytes>", bytes.len())),
                },
            },
            MyValue::Date(y, mo, d, h, mi, s, micros) => Value::String(match kind {
                ColumnType::MYSQL_TYPE_DATE | ColumnType::MYSQL_TYPE_NEWDATE => {
                    format!("{y:04}-{mo:02}-{d:02}")
                }
                _ if *micros > 0 => {
                    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}.{micros:06}")
                }
                _ => format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}"),
            }),
            MyValue::Time(negative, days, h, mi, s, micros) => {
                let hours = u32::from(*h) + days * 24;
                let sign = if *negative { "-" } else { "" };
                Value::String(if *micros > 0 {
                    format!("{sign}{hours:02}:{mi:02}:{s:02}.{micros:06}")
                } else {
                    format!("{sign}{hours:02}:{mi:02}:{s:02}")
                })
            }
        };
        object.insert(column.clone(), value);
    }
    object
}

impl Adapter for MysqlDatasource {
    fn execute<'a>(
        &'a self,
        template: &'a Template,
        parameters: &'a Map<String, Value>,
        _: &'a switchyard_contract::adapter::AdapterRequest,
        deadline: Duration,
    ) -> BoxFuture<'a, Result<Answer>> {
        Box::pin(async move {
            let rows = self.query(template, parameters, deadline).await?;
            sql::answer(template, parameters, rows)
        })
    }
}
