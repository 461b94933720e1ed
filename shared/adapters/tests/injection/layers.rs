//! The three layers' checks: one payload through the adapter, the request and the
//! question, each giving the name of its outcome, and the counts of those outcomes.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use regex::Regex;
use serde_json::{json, Map, Value};
use switchyard_adapters::sql::SqlRows;
use switchyard_adapters::{AdapterError, LocalAdapters};
use switchyard_catalog::template::{ParamType, Template};
use switchyard_contract::adapter::{
    AdapterInvoker, AdapterRequest, AdapterResponse, AdapterStatus,
};

use crate::catalog::well_typed;
use crate::databases::{rows_of, Db, Engine};
use crate::payloads::shown;
use crate::DEADLINE;

/// Slower than this, a call ran something it should not have (the `pg_sleep` payloads ask
/// for 5 seconds and more).
const SLOW: Duration = Duration::from_secs(3);

/// The no-match answer: no rows, or one aggregate row of zeros and nulls.
pub(crate) fn no_match(rows: &[Value]) -> bool {
    rows.iter().all(|row| {
        row.as_object()
            .is_some_and(|r| r.values().all(|v| v.is_null() || *v == json!(0)))
    })
}

/// Counts of outcomes, by layer and kind, and the adapter's error messages (their counts).
#[derive(Default)]
pub(crate) struct Tally(
    pub(crate) BTreeMap<String, usize>,
    pub(crate) BTreeMap<String, usize>,
);

impl Tally {
    pub(crate) fn add(&mut self, layer: &str, outcome: Outcome) {
        let name = match outcome {
            Outcome::Named(name) => name,
            Outcome::Error(message) => {
                *self.1.entry(message).or_default() += 1;
                "error"
            }
        };
        *self.0.entry(format!("{layer}/{name}")).or_default() += 1;
    }
}

pub(crate) enum Outcome {
    Named(&'static str),
    /// An error naming the template (not the parameter): its message.
    Error(String),
}

impl From<&'static str> for Outcome {
    fn from(name: &'static str) -> Self {
        Outcome::Named(name)
    }
}

/// The template's SQL with each `:name` written as a literal of its value: what the engine
/// answers for the value as one SQL string literal. `None` when a value cannot be written
/// as one (a NUL character in PostgreSQL text).
fn literal_sql(sql: &str, values: &Map<String, Value>, engine: Engine) -> Option<String> {
    let placeholder = Regex::new(r":([A-Za-z_][A-Za-z0-9_]*)").unwrap();
    let mut out = String::new();
    let mut last = 0;
    for found in placeholder.captures_iter(sql) {
        let whole = found.get(0).unwrap();
        if whole.start() > 0 && sql.as_bytes()[whole.start() - 1] == b':' {
            continue; // a `::type` cast
        }
        out.push_str(&sql[last..whole.start()]);
        let value = values.get(&found[1]).unwrap_or(&Value::Null);
        out.push_str(&match value {
            Value::Null => "NULL".to_owned(),
            Value::Number(n) => n.to_string(),
            Value::String(s) if s.contains('\0') => match engine {
                Engine::Sqlite => {
                    let hex: String = s.bytes().map(|b| format!("{b:02X}")).collect();
                    format!("CAST(X'{hex}' AS TEXT)")
                }
                Engine::Postgres | Engine::Duckdb => return None,
                Engine::Mariadb => mysql_literal(s),
            },
            // MySQL reads `\` in a string as an escape.
            Value::String(s) if engine == Engine::Mariadb => mysql_literal(s),
            Value::String(s) => format!("'{}'", s.replace('\'', "''")),
            _ => return None,
        });
        last = whole.end();
    }
    out.push_str(&sql[last..]);
    Some(out)
}

/// A MySQL string literal of `s`: quotes doubled, backslashes and NUL escaped.
fn mysql_literal(s: &str) -> String {
    let escaped = s
        .replace('\\', "\\\\")
        .replace('\'', "''")
        .replace('\0', "\\0");
    format!("'{escaped}'")
}

pub(crate) fn request(
    datasource: &str,
    template: &str,
    query: &str,
    session: Map<String, Value>,
) -> AdapterRequest {
    serde_json::from_value(json!({
        "request_id": "injection", "datasource": datasource, "template_id": template,
        "query": query, "session_parameters": session, "deadline_ms": DEADLINE.as_millis() as u64,
    }))
    .unwrap()
}

pub(crate) async fn invoke(adapters: &LocalAdapters, request: AdapterRequest) -> AdapterResponse {
    let started = Instant::now();
    let answer = adapters.invoke(request).await.unwrap();
    assert!(
        started.elapsed() < SLOW,
        "took {:?}: {}",
        started.elapsed(),
        answer.content.chars().take(200).collect::<String>()
    );
    answer
}

/// One payload through the adapter; the outcome's name.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn adapter_layer(
    db: &Db,
    engine: Engine,
    template: &Template,
    sql: &str,
    name: &str,
    values: &Map<String, Value>,
    honest: &SqlRows,
    context: &str,
) -> Outcome {
    let started = Instant::now();
    let result = db.query(template, values).await;
    assert!(
        started.elapsed() < SLOW,
        "{context}: took {:?}",
        started.elapsed()
    );
    match result {
        Ok(rows) if rows == *honest => "same".into(),
        Ok(rows) if no_match(&rows_of(&rows)) => "no_match".into(),
        Ok(rows) => {
            // Not the honest answer: it must be the engine's answer for the value as one
            // string literal (a text comparison the value takes part in as data).
            let oracle = match literal_sql(sql, values, engine) {
                Some(literal) => {
                    let mut written = template.clone();
                    written.sql_template = Some(literal);
                    written.parameters.clear();
                    db.query(&written, &Map::new()).await.ok()
                }
                None => None,
            };
            assert_eq!(
                oracle.as_ref(),
                Some(&rows),
                "{context}: an answer the value as a literal does not give"
            );
            if rows.rows.len() > honest.rows.len() {
                "literal_more_rows".into()
            } else {
                "literal".into()
            }
        }
        Err(AdapterError::Parameter { name: named, .. }) if named == name => "refused".into(),
        Err(AdapterError::Sql {
            template: named,
            message,
        }) if named == template.id => {
            assert!(
                !message.contains("deadline"),
                "{context}: ran until the deadline"
            );
            Outcome::Error(message)
        }
        Err(other) => panic!("{context}: {other}"),
    }
}

/// One payload written into the example question, through extraction to the SQL.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn question_layer(
    adapters: &LocalAdapters,
    db: &Db,
    datasource: &str,
    template: &Template,
    question: &str,
    honest_values: &Map<String, Value>,
    honest: &[Value],
    context: &str,
) -> &'static str {
    let answer = invoke(
        adapters,
        request(datasource, &template.id, question, Map::new()),
    )
    .await;
    match answer.status() {
        AdapterStatus::Ok => {
            for (name, value) in &answer.parameters {
                assert!(
                    well_typed(template, name, value, question),
                    "{context}: `{name}` extracted as {value} from the question"
                );
            }
            // The SQL ran with exactly the values extracted.
            let direct = db.query(template, &answer.parameters).await.unwrap();
            let rows = answer.data["rows"].as_array().unwrap();
            assert_eq!(*rows, rows_of(&direct), "{context}");
            if rows == honest {
                "same"
            } else if no_match(rows) {
                "no_match"
            } else if rows.len() > honest.len() {
                // A number or date the hostile question states, read as one ("over 1 OR
                // 1=1 miles", "top 51 OR 1=1"), or a default where it states none: never
                // free text.
                for (name, value) in &answer.parameters {
                    let parameter = template
                        .parameters
                        .iter()
                        .find(|p| p.name == *name)
                        .unwrap();
                    let typed = matches!(
                        parameter.param_type,
                        ParamType::Integer | ParamType::Number | ParamType::Date
                    ) || !parameter.allowed_values.is_empty();
                    assert!(
                        typed || honest_values.get(name) == Some(value),
                        "{context}: more rows than the honest question, through `{name}` = {value}"
                    );
                }
                "other_value_more_rows"
            } else {
                "other_value"
            }
        }
        AdapterStatus::NeedsClarification => "clarify",
        AdapterStatus::Error => {
            let error = answer.error().unwrap_or_default();
            assert!(
                template
                    .parameters
                    .iter()
                    .any(|p| error.starts_with(&format!("parameter `{}`", p.name))),
                "{context}: an error not naming a parameter: {}",
                shown(error)
            );
            "refused"
        }
    }
}
