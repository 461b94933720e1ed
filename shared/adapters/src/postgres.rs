//! The SQL adapter on PostgreSQL: the same templates as SQLite (`:name` parameters),
//! rewritten to `$n` where the parser reads them (the rest of the SQL is sent as written),
//! each value bound with the type the server infers for it, run in a READ ONLY transaction
//! with a statement timeout and a row cap.
//!
//! The connection string comes from the environment variable named by
//! `connection.url_env`, never from the template files.

use std::time::Duration;

use chrono::NaiveDate;
use serde_json::{Map, Value};
use sqlparser::dialect::PostgreSqlDialect;
use switchyard_catalog::template::{Datasource, Template};
use switchyard_catalog::BoxFuture;
use tokio::sync::Mutex;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, NoTls, Row};

use crate::adapter::{Adapter, Answer};
use crate::error::{AdapterError, Result};
use crate::guard::{check_read_only, check_templates, Engine};
use crate::placeholders::{self, Style};
use crate::sql::{self, connection_url, SqlRows};

/// Rewrite `:name` placeholders to `$1, $2, …`; returns the SQL and the names in order.
/// Only the placeholders' own text changes (see [`crate::placeholders`]).
pub fn to_positional(template_id: &str, sql: &str) -> Result<(String, Vec<String>)> {
    placeholders::rewrite(&PostgreSqlDialect {}, Style::Numbered, template_id, sql)
}

pub struct PostgresDatasource {
    name: String,
    client: Mutex<Client>,
    max_rows: usize,
}

impl PostgresDatasource {
    /// Connect with the URL in the variable `connection.url_env`; every template's SQL is
    /// checked first.
    pub async fn connect(datasource: &Datasource) -> Result<PostgresDatasource> {
        let name = datasource.spec.name.clone();
        let fail = |message: String| AdapterError::Datasource {
            datasource: name.clone(),
            message,
        };
        check_templates(datasource, Engine::Postgres)?;
        let (variable, url) = connection_url(datasource, "PostgreSQL")?;
        let (client, connection) = tokio_postgres::connect(&url, NoTls)
            .await
            // The URL may hold a password: name the variable, not its value.
            .map_err(|e| fail(format!("connecting with {variable}: {e}")))?;
        let datasource_name = name.clone();
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!(datasource = %datasource_name, error = %e, "PostgreSQL connection closed");
            }
        });
        Ok(PostgresDatasource {
            name,
            client: Mutex::new(client),
            max_rows: datasource.spec.limits.max_rows as usize,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The connected client, for schema introspection (`crate::schema`) to reuse the
    /// adapter's way of connecting.
    pub(crate) async fn client(&self) -> tokio::sync::MutexGuard<'_, Client> {
        self.client.lock().await
    }

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
        let mut client = self.client.lock().await;
        // Second guard behind the parser check: the transaction cannot write.
        let transaction = client
            .build_transaction()
            .read_only(true)
            .start()
            .await
            .map_err(|e| sql_error(e.to_string()))?;
        // Once the server's timeout is set (even within the batch setting it, on a loaded
        // machine), a cancel at any step is the deadline's.
        let timed = std::time::Instant::now();
        let failed = |e: tokio_postgres::Error| {
            use tokio_postgres::error::SqlState;
            // The cancel's error can reach the request pipelined after the one it stopped,
            // which then reads "current transaction is aborted" (seen on a loaded machine).
            let aborted = e.code() == Some(&SqlState::IN_FAILED_SQL_TRANSACTION)
                && timed.elapsed() >= deadline;
            if e.code() == Some(&SqlState::QUERY_CANCELED) || aborted {
                sql_error(format!(
                    "cancelled at the deadline of {} ms",
                    deadline.as_millis()
                ))
            } else {
                // The server's own words: "db error" alone names no cause.
                sql_error(
                    e.as_db_error()
                        .map_or_else(|| e.to_string(), |db| db.to_string()),
                )
            }
        };
        // The read-only check reads a backslash in a '…' string as an ordinary character,
        // as the server does with standard_conforming_strings on (its default).
        transaction
            .batch_execute(&format!(
                "SET LOCAL statement_timeout = {}; SET LOCAL standard_conforming_strings = on",
                deadline.as_millis().max(1)
            ))
            .await
            .map_err(failed)?;
        let statement = transaction.prepare(&sql).await.map_err(failed)?;
        let mut values: Vec<Box<dyn ToSql + Sync + Send>> = Vec::with_capacity(names.len());
        for (name, ty) in names.iter().zip(statement.params()) {
            values.push(bind(
                name,
                parameters.get(name).unwrap_or(&Value::Null),
                ty,
            )?);
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
        transaction
            .rollback()
            .await
            .map_err(|e| sql_error(e.to_string()))?;
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
            .map_err(|e| sql_error(e.to_string()))?;
        Ok(SqlRows {
            columns,
            rows,
            truncated,
        })
    }
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
