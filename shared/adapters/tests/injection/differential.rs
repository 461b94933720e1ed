//! What runs is what was checked: statements whose comments, quoting or dialect rules a
//! server might read otherwise than the read-only check, fed to each engine's check; every
//! one it accepts is run on the real engine through its adapter, which must run the
//! statement the check read. A side effect hidden where the check saw a comment or a string
//! (`SLEEP(2)`, `pg_sleep(2)`) would show as a call that took its two seconds, and a
//! statement read otherwise as another number of result columns than the check's own.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Map;
use sqlparser::ast::{SelectItem, SetExpr, Statement};
use sqlparser::parser::Parser;
use switchyard_adapters::guard::{check_read_only, Engine as Guarded};

use crate::catalog::demo_datasource;
use crate::databases::{open, Engine};
use crate::payloads::payloads;

/// Longer than any of these statements takes, shorter than the sleep each hides.
const SLEPT: Duration = Duration::from_millis(1500);

/// Statements with a call hidden behind a comment form or a quoting form; `{sleep}` is the
/// engine's two-second sleep.
const FORMS: &[(&str, &str)] = &[
    ("dash-dash tab", "SELECT 1 AS a --\t'\n, {sleep} AS b --\t'"),
    ("dash-dash newline", "SELECT 1 AS a --\n, {sleep} AS b"),
    ("dash-dash return", "SELECT 1 AS a --\r, {sleep} AS b --\r'"),
    (
        "dash-dash form feed",
        "SELECT 1 AS a --\x0c'\n, {sleep} AS b --\x0c'",
    ),
    ("dash-dash end of input", "SELECT 1 AS a --"),
    ("dash-dash no space", "SELECT 1--1 AS a"),
    ("hash", "SELECT 1 AS a # '\n, {sleep} AS b # '"),
    ("block", "SELECT 1 AS a /* , {sleep} AS b */"),
    (
        "nested block",
        "SELECT 1 AS a /* /* */ , {sleep} AS b /* */ */",
    ),
    ("versioned block", "SELECT 1 AS a /*! , {sleep} AS b */"),
    ("mariadb block", "SELECT 1 AS a /*M! , {sleep} AS b */"),
    (
        "optimizer hint",
        "SELECT /*+ MAX_EXECUTION_TIME(0) */ 1 AS a",
    ),
    (
        "backslash quote",
        "SELECT '\\'' AS a, {sleep} AS b --' AS c",
    ),
    ("doubled quote", "SELECT 'it''s' AS a, '--' AS b"),
    ("backslash end", "SELECT 'x\\\\' AS a, {sleep} AS b --'"),
    ("escape string", "SELECT E'\\'' AS a, {sleep} AS b --'"),
    ("dollar quote", "SELECT $$ ' $$ AS a, {sleep} AS b --'"),
    ("quoted identifier", "SELECT 1 AS \"a--\", 2 AS \"b/*\""),
    ("backtick identifier", "SELECT 1 AS `a--`, 2 AS `b'`"),
    ("like escape", "SELECT 'a_b' LIKE 'a\\_b' AS a"),
];

fn sleep_of(engine: Engine) -> &'static str {
    match engine {
        Engine::Mariadb => "SLEEP(2)",
        Engine::Postgres => "pg_sleep(2)",
        // No sleep in SQLite or DuckDB: a hidden call still shows as an extra column.
        Engine::Sqlite | Engine::Duckdb => "abs(-2)",
    }
}

fn guarded(engine: Engine) -> Guarded {
    match engine {
        Engine::Sqlite => Guarded::Sqlite,
        Engine::Postgres => Guarded::Postgres,
        Engine::Duckdb => Guarded::Duckdb,
        Engine::Mariadb => Guarded::Mysql,
    }
}

/// The number of result columns of the check's reading, when it says (no `*`).
fn columns_read(engine: Engine, checked: &str) -> Option<usize> {
    let dialect = guarded(engine).dialect();
    let statements = Parser::parse_sql(dialect.as_ref(), checked).ok()?;
    let Statement::Query(query) = statements.first()? else {
        return None;
    };
    let mut body = query.body.as_ref();
    while let SetExpr::SetOperation { left, .. } = body {
        body = left;
    }
    let SetExpr::Select(select) = body else {
        return None;
    };
    let wildcard = (select.projection.iter()).any(|item| {
        !matches!(
            item,
            SelectItem::UnnamedExpr(_) | SelectItem::ExprWithAlias { .. }
        )
    });
    (!wildcard).then_some(select.projection.len())
}

/// Every form and every injection payload spliced into a string literal, as a model that
/// writes SQL might: (family, statement).
fn statements(engine: Engine) -> Vec<(String, String)> {
    let sleep = sleep_of(engine);
    let mut all: Vec<(String, String)> = FORMS
        .iter()
        .map(|(name, form)| (name.to_string(), form.replace("{sleep}", sleep)))
        .collect();
    for (family, payload) in payloads() {
        all.push((
            format!("spliced {family}"),
            format!("SELECT '{payload}' AS v"),
        ));
    }
    all
}

/// Runs every statement on `engine`; returns the counts by outcome.
pub(crate) async fn differential(engine: Engine) -> BTreeMap<String, usize> {
    let source = match engine {
        Engine::Duckdb => crate::databases::duckdb_twin(&demo_datasource("ev")).unwrap(),
        _ => crate::catalog::seeded(demo_datasource("ev")),
    };
    let opened = open(engine, &source).await;
    let template = opened.datasource.templates[0].clone();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut wrong = Vec::new();
    for (family, sql) in statements(engine) {
        let Ok(checked) = check_read_only("t", &sql, guarded(engine)) else {
            *counts.entry("refused".into()).or_default() += 1;
            continue;
        };
        let mut statement = template.clone();
        // An id of its own: DuckDB keeps the catalog's templates prepared by id.
        statement.id = "differential".into();
        statement.sql_template = Some(sql.clone());
        let started = Instant::now();
        let ran = opened.db.query(&statement, &Map::new()).await;
        let took = started.elapsed();
        if took >= SLEPT {
            wrong.push(format!(
                "{family}: {sql:?} took {took:?}: the server ran a hidden call"
            ));
        }
        match ran {
            Ok(rows) => {
                *counts.entry("ran".into()).or_default() += 1;
                if let Some(read) = columns_read(engine, &checked) {
                    if rows.columns.len() != read {
                        wrong.push(format!(
                            "{family}: {sql:?}: the check read {read} columns in {checked:?}, the server answered {:?}",
                            rows.columns
                        ));
                    }
                }
            }
            // The server refusing the statement the check read runs nothing else.
            Err(_) => *counts.entry("server refused".into()).or_default() += 1,
        }
    }
    assert!(wrong.is_empty(), "{engine:?}: {wrong:#?}");
    eprintln!("differential {engine:?}: {counts:?}");
    counts
}
