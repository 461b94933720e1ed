//! The SQL adapter on PostgreSQL: the same templates as SQLite (`:name` parameters),
//! rewritten to `$n` where the parser reads them (the rest of the SQL is sent as written),
//! each value bound with the type the server infers for it, run in a READ ONLY transaction
//! with a statement timeout and a row cap. The deadline covers the whole call (waiting for
//! the connection, opening it again after it dropped, the transaction); a connection past
//! it is given up, and the next call opens another.
//!
//! The connection string comes from the environment variable named by
//! `connection.url_env`, never from the template files; `sslmode=verify-full` (and
//! `sslrootcert`) in it encrypts the connection and verifies the server ([`crate::tls`]).

use std::time::Duration;

use chrono::NaiveDate;
use serde_json::{Map, Value};
use sqlparser::dialect::PostgreSqlDialect;
use switchyard_catalog::template::{Datasource, Template};
use switchyard_catalog::BoxFuture;
use tokio::sync::{MappedMutexGuard, Mutex, MutexGuard};
use tokio::time::{timeout_at, Instant};
use tokio_postgres::config::SslMode;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Config, Row};

use crate::adapter::{Adapter, Answer};
use crate::error::{AdapterError, Result};
use crate::guard::{check_read_only, check_templates, Engine};
use crate::placeholders::{self, Style};
use crate::sql::{self, connection_url, SqlRows};
use crate::tls::{self, PostgresTls, TlsMode, POSTGRES_KEYS};

/// Rewrite `:name` placeholders to `$1, $2, …`; returns the SQL and the names in order.
/// Only the placeholders' own text changes (see [`crate::placeholders`]).
pub fn to_positional(template_id: &str, sql: &str) -> Result<(String, Vec<String>)> {
    placeholders::rewrite(&PostgreSqlDialect {}, Style::Numbered, template_id, sql)
}

/// How long past the deadline the client waits for the server's own statement timeout to
/// stop a statement (its error says so) before it gives the connection up.
const SERVER_GRACE: Duration = Duration::from_millis(500);

pub struct PostgresDatasource {
    name: String,
    /// Where to connect (its `Debug` hides the password), to open the connection again
    /// after it dropped. Boxed: it is large, and read only to connect.
    config: Box<Config>,
    /// TLS for the connection, used when the URL's `sslmode` asks for it.
    tls: PostgresTls,
    /// The variable the URL came from, for errors.
    variable: String,
    /// The connection's bound at connect (the datasource's `limits.timeout_ms`).
    connect_timeout: Duration,
    /// The open connection; `None` once it was given up (a call past its deadline).
    connection: Mutex<Option<Connected>>,
    max_rows: usize,
}

/// A client and the task driving its connection, stopped when the client is dropped (a
/// connection to a server that hangs would otherwise wait forever).
struct Connected {
    client: Client,
    task: tokio::task::AbortHandle,
}

impl Drop for Connected {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl PostgresDatasource {
    /// Connect with the URL in the variable `connection.url_env`; every template's SQL is
    /// checked first. A server that does not answer fails it at the datasource's
    /// `limits.timeout_ms`.
    pub async fn connect(datasource: &Datasource) -> Result<PostgresDatasource> {
        let name = datasource.spec.name.clone();
        check_templates(datasource, Engine::Postgres)?;
        let (variable, url) = connection_url(datasource, "PostgreSQL")?;
        // The URL may hold a password: name the variable, not its value.
        let fail = |message: String| AdapterError::Datasource {
            datasource: name.clone(),
            message: format!("connection.url_env: {variable}: {message}"),
        };
        let (url, mode) = tls::take_mode(&url, &POSTGRES_KEYS).map_err(fail)?;
        let mut config = url
            .parse::<Config>()
            .map_err(|e| fail(format!("not a PostgreSQL URL: {e}")))?;
        let ca_file = match &mode {
            TlsMode::Plain => {
                config.ssl_mode(SslMode::Disable);
                None
            }
            TlsMode::Verified { ca_file } => {
                config.ssl_mode(SslMode::Require);
                ca_file.as_deref()
            }
        };
        let tls = PostgresTls(std::sync::Arc::new(
            tls::client_config(ca_file).map_err(fail)?,
        ));
        let db = PostgresDatasource {
            name,
            config: Box::new(config),
            tls,
            variable,
            connect_timeout: Duration::from_millis(datasource.spec.limits.timeout_ms.max(1)),
            connection: Mutex::new(None),
            max_rows: datasource.spec.limits.max_rows as usize,
        };
        let connected = db
            .open(Instant::now() + db.connect_timeout, || db.late_connecting())
            .await?;
        *db.connection.lock().await = Some(connected);
        Ok(db)
    }

    /// A new connection, by `end` (past it, the error `late` gives).
    async fn open(&self, end: Instant, late: impl FnOnce() -> AdapterError) -> Result<Connected> {
        let (client, connection) = timeout_at(end, self.config.connect(self.tls.clone()))
            .await
            .map_err(|_| late())?
            .map_err(|e| AdapterError::Datasource {
                datasource: self.name.clone(),
                message: format!(
                    "connecting with {}: {}{}",
                    self.variable,
                    words(&e),
                    tls::certificate_hint(&words(&e), &POSTGRES_KEYS)
                ),
            })?;
        let datasource_name = self.name.clone();
        let task = tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!(datasource = %datasource_name, error = %e, "PostgreSQL connection closed");
            }
        });
        Ok(Connected {
            client,
            task: task.abort_handle(),
        })
    }

    /// A connection not made within the datasource's `limits.timeout_ms`.
    fn late_connecting(&self) -> AdapterError {
        AdapterError::Datasource {
            datasource: self.name.clone(),
            message: format!(
                "connecting with {}: no answer within the deadline of {} ms (limits.timeout_ms)",
                self.variable,
                self.connect_timeout.as_millis()
            ),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The connected client (opened again if it dropped), for schema introspection
    /// (`crate::schema`) to reuse the adapter's way of connecting.
    pub(crate) async fn client(&self) -> Result<MappedMutexGuard<'_, Client>> {
        let mut slot = self.connection.lock().await;
        if slot.as_ref().is_none_or(|c| c.client.is_closed()) {
            *slot = None;
            let end = Instant::now() + self.connect_timeout;
            *slot = Some(self.open(end, || self.late_connecting()).await?);
        }
        Ok(MutexGuard::map(slot, |c| {
            &mut c.as_mut().expect("connected above").client
        }))
    }

    /// Run `template` with `parameters` within `deadline`, all of it: waiting for the
    /// connection, opening it again when it dropped (the server restarted, the backend was
    /// terminated), the transaction and the statement. Past the deadline the call fails
    /// naming the datasource and the step, and the connection is given up (the next call
    /// opens another).
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
        let sql = template
            .sql_template
            .as_deref()
            .ok_or_else(|| sql_error("has no sql_template".into()))?;
        // What runs is the statement the check read, without its comments.
        let sql = check_read_only(&template.id, sql, Engine::Postgres)?;
        let (sql, names) = to_positional(&template.id, &sql)?;
        let end = Instant::now() + deadline;
        let late = |step: &str| sql::deadline_error(&self.name, &template.id, deadline, step);
        let mut slot = timeout_at(end, self.connection.lock())
            .await
            .map_err(|_| late("waiting for the connection"))?;
        // A connection that dropped is opened again, once per call; a read-only statement
        // whose connection dropped under it runs again on the new one.
        let mut reopened = false;
        loop {
            if slot.as_ref().is_none_or(|c| c.client.is_closed()) {
                *slot = None;
                *slot = Some(self.open(end, || late("connecting")).await?);
                reopened = true;
            }
            let client = &mut slot.as_mut().expect("connected above").client;
            let left = end.saturating_duration_since(Instant::now());
            let run = self.run(client, template, &sql, &names, parameters, left, deadline);
            match timeout_at(end + SERVER_GRACE, run).await {
                Ok(Ok(rows)) => return Ok(rows),
                Ok(Err(Failure::Lost(e))) => {
                    *slot = None;
                    if reopened {
                        return Err(e);
                    }
                }
                Ok(Err(Failure::Adapter(e))) => return Err(e),
                Err(_) => {
                    // The connection may still be waiting on the server: give it up.
                    *slot = None;
                    return Err(late("in the transaction"));
                }
            }
        }
    }

    /// One try of [`PostgresDatasource::query`] on `client`, the server's statement timeout
    /// at `left`; `deadline` is the call's, for errors.
    #[allow(clippy::too_many_arguments)] // one call's inputs, from `query` alone
    async fn run(
        &self,
        client: &mut Client,
        template: &Template,
        sql: &str,
        names: &[String],
        parameters: &Map<String, Value>,
        left: Duration,
        deadline: Duration,
    ) -> std::result::Result<SqlRows, Failure> {
        let sql_error = |message: String| AdapterError::Sql {
            template: template.id.clone(),
            message,
        };
        let lost = |e: &tokio_postgres::Error| {
            use tokio_postgres::error::SqlState;
            e.is_closed()
                || e.code() == Some(&SqlState::ADMIN_SHUTDOWN)
                || e.code() == Some(&SqlState::CRASH_SHUTDOWN)
        };
        let closed = |e: tokio_postgres::Error| {
            let lost = lost(&e);
            let error = sql_error(words(&e));
            if lost {
                Failure::Lost(error)
            } else {
                Failure::Adapter(error)
            }
        };
        // Second guard behind the parser check: the transaction cannot write.
        let transaction = client
            .build_transaction()
            .read_only(true)
            .start()
            .await
            .map_err(closed)?;
        // Once the server's timeout is set (even within the batch setting it, on a loaded
        // machine), a cancel at any step is the deadline's.
        let timed = std::time::Instant::now();
        let failed = |e: tokio_postgres::Error| {
            use tokio_postgres::error::SqlState;
            // The cancel's error can reach the request pipelined after the one it stopped,
            // which then reads "current transaction is aborted" (seen on a loaded machine).
            let aborted =
                e.code() == Some(&SqlState::IN_FAILED_SQL_TRANSACTION) && timed.elapsed() >= left;
            if e.code() == Some(&SqlState::QUERY_CANCELED) || aborted {
                Failure::Adapter(sql_error(format!(
                    "cancelled at the deadline of {} ms",
                    deadline.as_millis()
                )))
            } else {
                let message = words(&e);
                if lost(&e) {
                    Failure::Lost(sql_error(message))
                } else {
                    Failure::Adapter(sql_error(message))
                }
            }
        };
        // The read-only check reads a backslash in a '…' string as an ordinary character,
        // as the server does with standard_conforming_strings on (its default).
        transaction
            .batch_execute(&format!(
                "SET LOCAL statement_timeout = {}; SET LOCAL standard_conforming_strings = on",
                left.as_millis().max(1)
            ))
            .await
            .map_err(failed)?;
        let statement = transaction.prepare(sql).await.map_err(failed)?;
        let mut values: Vec<Box<dyn ToSql + Sync + Send>> = Vec::with_capacity(names.len());
        for (name, ty) in names.iter().zip(statement.params()) {
            values.push(
                bind(name, parameters.get(name).unwrap_or(&Value::Null), ty)
                    .map_err(Failure::Adapter)?,
            );
        }
        let references: Vec<&(dyn ToSql + Sync)> = values
            .iter()
            .map(|v| v.as_ref() as &(dyn ToSql + Sync))
            .collect();
        let portal = transaction
            .bind(&statement, &references)
            .await
            .map_err(failed)?;
        let fetched = transaction
            .query_portal(&portal, self.max_rows as i32 + 1)
            .await
            .map_err(failed)?;
        transaction.rollback().await.map_err(closed)?;
        let columns: Vec<String> = statement
            .columns()
            .iter()
            .map(|c| c.name().to_owned())
            .collect();
        let truncated = fetched.len() > self.max_rows;
        let rows = fetched
            .iter()
            .take(self.max_rows)
            .map(|row| row_json(row, &columns))
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| Failure::Adapter(sql_error(e.to_string())))?;
        Ok(SqlRows {
            columns,
            rows,
            truncated,
        })
    }
}

/// Why one try failed: the connection was lost (the call may open another and run
/// again: the statement is read-only), or anything else.
enum Failure {
    Lost(AdapterError),
    Adapter(AdapterError),
}

/// A parameter value as the type the server expects for its placeholder.
fn bind(name: &str, value: &Value, ty: &Type) -> Result<Box<dyn ToSql + Sync + Send>> {
    let wrong = || AdapterError::Parameter {
        name: name.to_owned(),
        message: format!("`{value}` cannot be used as {ty}"),
    };
    let text = match value {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    };
    // The server refuses the whole statement with a bare "db error" otherwise.
    if text.as_deref().is_some_and(|t| t.contains('\0')) {
        return Err(AdapterError::Parameter {
            name: name.to_owned(),
            message: "contains a NUL character, which PostgreSQL text cannot hold".into(),
        });
    }
    Ok(match *ty {
        Type::INT2 => Box::new(
            text.map(|t| t.parse::<i16>())
                .transpose()
                .map_err(|_| wrong())?,
        ),
        Type::INT4 => Box::new(
            text.map(|t| t.parse::<i32>())
                .transpose()
                .map_err(|_| wrong())?,
        ),
        Type::INT8 => Box::new(
            text.map(|t| t.parse::<i64>())
                .transpose()
                .map_err(|_| wrong())?,
        ),
        Type::FLOAT4 => Box::new(
            text.map(|t| t.parse::<f32>())
                .transpose()
                .map_err(|_| wrong())?,
        ),
        Type::FLOAT8 | Type::NUMERIC => Box::new(
            text.map(|t| t.parse::<f64>())
                .transpose()
                .map_err(|_| wrong())?,
        ),
        Type::BOOL => Box::new(
            text.map(|t| t.parse::<bool>())
                .transpose()
                .map_err(|_| wrong())?,
        ),
        Type::DATE => Box::new(
            text.map(|t| NaiveDate::parse_from_str(&t, "%Y-%m-%d"))
                .transpose()
                .map_err(|_| wrong())?,
        ),
        _ => Box::new(text),
    })
}

fn row_json(
    row: &Row,
    columns: &[String],
) -> std::result::Result<Map<String, Value>, tokio_postgres::Error> {
    let mut object = Map::new();
    for (i, column) in columns.iter().enumerate() {
        let ty = row.columns()[i].type_();
        let value = match *ty {
            Type::INT2 => row.try_get::<_, Option<i16>>(i)?.map(Value::from),
            Type::INT4 => row.try_get::<_, Option<i32>>(i)?.map(Value::from),
            Type::INT8 => row.try_get::<_, Option<i64>>(i)?.map(Value::from),
            Type::FLOAT4 => row
                .try_get::<_, Option<f32>>(i)?
                .map(|f| Value::from(f64::from(f))),
            Type::FLOAT8 => row.try_get::<_, Option<f64>>(i)?.map(Value::from),
            Type::BOOL => row.try_get::<_, Option<bool>>(i)?.map(Value::from),
            Type::DATE => row
                .try_get::<_, Option<NaiveDate>>(i)?
                .map(|d| Value::from(d.format("%Y-%m-%d").to_string())),
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => {
                row.try_get::<_, Option<String>>(i)?.map(Value::from)
            }
            // NUMERIC and others: ask the server for text in the SQL (e.g. ::float8) to get
            // numbers; shown here as a placeholder rather than guessed.
            _ => Some(Value::from(format!("<{ty}>"))),
        };
        object.insert(column.clone(), value.unwrap_or(Value::Null));
    }
    Ok(object)
}

impl Adapter for PostgresDatasource {
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

/// A driver error in words that name its cause: "db error" and "error performing TLS
/// handshake" alone say nothing, so the server's message or the causes follow.
fn words(error: &tokio_postgres::Error) -> String {
    if let Some(db) = error.as_db_error() {
        return db.to_string();
    }
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(e) = cause {
        let more = e.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        cause = e.source();
    }
    text
}
