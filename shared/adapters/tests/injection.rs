//! SQL injection payloads through every parameter of every SQL template of the demo catalog
//! (`templates/demo`: each datasource of kind `sql`, read from the files), on SQLite (the
//! demo's engine) and on a real PostgreSQL server: `./infra/scripts/postgres.sh start`, its
//! URL in SWITCHYARD_TEST_PG_URL (`./infra/scripts/test.sh` does both). On the server each
//! SQL datasource gets a database of its own, seeded once from its seed script.
//!
//! Each payload goes in bare and after the honest value (`Tesla' OR '1'='1`), through three
//! layers, each with its promise:
//! - **request** (`LocalAdapters::invoke`, the value supplied beside the question as a
//!   session value, the way a previous turn or the model's fill supplies one): the answer
//!   is the honest one, the no-match one, or an error naming the parameter; never more rows.
//! - **question** (the payload written into the catalog's own example question, in place of
//!   the value): extraction gives a typed, checked value, asks for it, or refuses it naming
//!   the parameter, and the SQL runs with exactly the values extracted.
//! - **adapter** (`query` with the value bound as given, before any type check): the
//!   answer is the honest one, the no-match one, an error naming the parameter or the
//!   template, or exactly what the engine answers for the value written as one SQL string
//!   literal. A value is only ever data.
//!
//! Afterwards every table holds the same rows and the schema the same objects as before,
//! and no call took long enough to have run a payload's `pg_sleep`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use regex::Regex;
use serde_json::{json, Map, Value};
use switchyard_adapters::postgres::PostgresDatasource;
use switchyard_adapters::sql::{SqlRows, SqliteDatasource};
use switchyard_adapters::{AdapterError, LocalAdapters};
use switchyard_core::invoker::{AdapterInvoker, AdapterRequest, AdapterResponse, AdapterStatus};
use switchyard_core::params::extract;
use switchyard_core::template::{Catalog, Datasource, DatasourceKind, ParamType, Template};
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls};

const URL_VARIABLE: &str = "SWITCHYARD_TEST_PG_URL";
const DEADLINE: Duration = Duration::from_secs(5);
/// Slower than this, a call ran something it should not have (the `pg_sleep` payloads ask
/// for 5 seconds and more).
const SLOW: Duration = Duration::from_secs(3);
/// The question text of a request whose values all come from the session.
const NO_VALUES: &str = "-";

fn demo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo")
}

/// The demo catalog's SQL datasources, as the files define them.
fn sql_datasources() -> Vec<Datasource> {
    let catalog = Catalog::load(&demo_root()).unwrap();
    let found: Vec<Datasource> = catalog
        .datasources
        .into_iter()
        .filter(|d| d.spec.kind == DatasourceKind::Sql)
        .collect();
    assert!(!found.is_empty(), "the demo catalog has no SQL datasource");
    found
}

/// The payloads, by family. Each is tried bare and after the honest value.
fn payloads() -> Vec<(&'static str, String)> {
    let fixed: &[(&str, &str)] = &[
        // Tautologies.
        ("tautology", "' OR '1'='1"),
        ("tautology", "' OR '1'='1' --"),
        ("tautology", "' OR 1=1 --"),
        ("tautology", "\" OR \"1\"=\"1"),
        ("tautology", "') OR ('1'='1"),
        ("tautology", "')) OR (('1'='1"),
        ("tautology", "' OR ''='"),
        ("tautology", "' OR 'x' LIKE '%"),
        ("tautology", "1 OR 1=1"),
        ("tautology", "0 OR 1=1"),
        ("tautology", "-1 OR 1=1"),
        ("tautology", "1) OR (1=1"),
        ("tautology", "1 OR TRUE"),
        ("tautology", "admin'--"),
        // Stacked queries, including one that tries to leave the read-only transaction.
        ("stacked", "'; DROP TABLE employees; --"),
        ("stacked", "'; DROP TABLE vehicles; --"),
        ("stacked", "1; DROP TABLE employees"),
        ("stacked", "'; DELETE FROM employees; --"),
        ("stacked", "'; UPDATE employees SET title = 'owned'; --"),
        (
            "stacked",
            "'; INSERT INTO departments VALUES (99, 'x', 'y', 1); --",
        ),
        ("stacked", "'; CREATE TABLE injected (x int); --"),
        ("stacked", "'; COMMIT; DROP TABLE vehicles; --"),
        ("stacked", "'); ATTACH DATABASE '/tmp/x.db' AS x; --"),
        // Comments.
        ("comment", "'--"),
        ("comment", "--"),
        ("comment", "' /*"),
        ("comment", "*/"),
        ("comment", "/* */"),
        ("comment", "'/**/OR/**/'1'='1"),
        ("comment", "' #"),
        ("comment", "#"),
        // UNION.
        ("union", "' UNION SELECT NULL --"),
        (
            "union",
            "' UNION SELECT name, location, budget FROM departments --",
        ),
        (
            "union",
            "' UNION ALL SELECT email, email, email, email, email, email FROM employees --",
        ),
        ("union", "1 UNION SELECT 1"),
        ("union", "' UNION SELECT version() --"),
        ("union", "' UNION SELECT sqlite_version() --"),
        // Side-effect and error-based functions.
        ("function", "' || pg_sleep(5) || '"),
        ("function", "'; SELECT pg_sleep(5); --"),
        (
            "function",
            "' || set_config('default_transaction_read_only', 'off', false) || '",
        ),
        ("function", "' || (SELECT lo_import('/etc/passwd')) || '"),
        ("function", "' AND 1=CAST((SELECT version()) AS int) --"),
        ("function", "' || load_extension('x') || '"),
        // Encodings and look-alikes.
        ("encoding", "%27%20OR%20%271%27%3D%271"),
        ("encoding", "%2527%2520OR%2520%25271%2527%253D%25271"),
        ("encoding", "\\' OR 1=1 --"),
        ("encoding", "\\x27 OR 1=1 --"),
        ("encoding", "E'\\x27 OR 1=1"),
        ("encoding", "\\u0027 OR 1=1"),
        ("encoding", "&#39; OR &#39;1&#39;=&#39;1"),
        ("encoding", "\u{2019} OR \u{2018}1\u{2019}=\u{2018}1"),
        ("encoding", "\u{ff07} OR \u{ff07}1\u{ff07}=\u{ff07}1"),
        ("encoding", "\u{02bc} OR 1=1 --"),
        ("encoding", "$$ OR 1=1 --"),
        ("encoding", "'\r\nOR 1=1 --"),
        // NUL bytes.
        ("nul", "\0"),
        ("nul", "\0' OR '1'='1"),
        ("nul", "'\0; DROP TABLE employees; --"),
        // Placeholder look-alikes: never read as another parameter.
        ("placeholder", ":make"),
        ("placeholder", ":department"),
        ("placeholder", "$1"),
        ("placeholder", "?"),
        ("placeholder", "@employee"),
        // Numbers no parameter takes (a number a parameter takes, "-0" or "1e308", is an
        // honest value of its own, not a payload).
        ("numeric", "-9223372036854775809"),
        ("numeric", "NaN"),
        ("numeric", "Infinity"),
        ("numeric", "0x7FFFFFFF"),
        ("numeric", "1.5"),
        ("numeric", "12abc"),
        ("numeric", "2024-01-01' OR '1'='1"),
    ];
    let mut list: Vec<(&str, String)> = fixed.iter().map(|(f, p)| (*f, p.to_string())).collect();
    list.push(("long", "A".repeat(100_000)));
    list.push(("long", format!("'{}' OR '1'='1", "A".repeat(1 << 20))));
    list.push(("long", "' OR '1'='1".repeat(10_000)));
    list
}

/// The payload bare and after the honest value.
fn placements(honest: &Value, payload: &str) -> [String; 2] {
    let honest = match honest {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    [payload.to_owned(), format!("{honest}{payload}")]
}

/// A value short enough for a failure message.
fn shown(value: &str) -> String {
    let head: String = value.chars().take(60).collect();
    if head.len() < value.len() {
        format!("{head:?}… ({} bytes)", value.len())
    } else {
        format!("{head:?}")
    }
}

/// The first catalog example whose question gives every parameter, and its values.
fn honest_example(template: &Template) -> (String, Map<String, Value>) {
    template
        .nl_examples
        .iter()
        .find_map(|question| {
            let found = extract(template, question, &Map::new());
            (found.missing.is_empty() && found.invalid.is_empty())
                .then(|| (question.clone(), found.parameters))
        })
        .unwrap_or_else(|| panic!("no example of `{}` gives every parameter", template.id))
}

/// The no-match answer: no rows, or one aggregate row of zeros and nulls.
fn no_match(rows: &[Value]) -> bool {
    rows.iter().all(|row| {
        row.as_object()
            .is_some_and(|r| r.values().all(|v| v.is_null() || *v == json!(0)))
    })
}

fn rows_of(rows: &SqlRows) -> Vec<Value> {
    rows.rows.iter().cloned().map(Value::Object).collect()
}

/// Counts of outcomes, by layer and kind, and the adapter's error messages (their counts).
#[derive(Default)]
struct Tally(BTreeMap<String, usize>, BTreeMap<String, usize>);

impl Tally {
    fn add(&mut self, layer: &str, outcome: Outcome) {
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

enum Outcome {
    Named(&'static str),
    /// An error naming the template (not the parameter): its message.
    Error(String),
}

impl From<&'static str> for Outcome {
    fn from(name: &'static str) -> Self {
        Outcome::Named(name)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Engine {
    Sqlite,
    Postgres,
}

enum Db {
    Sqlite(SqliteDatasource),
    Postgres(PostgresDatasource),
}

impl Db {
    async fn query(
        &self,
        template: &Template,
        parameters: &Map<String, Value>,
    ) -> Result<SqlRows, AdapterError> {
        match self {
            Db::Sqlite(db) => db.query(template, parameters, DEADLINE),
            Db::Postgres(db) => db.query(template, parameters, DEADLINE).await,
        }
    }
}

/// One datasource as the suite serves it: its definition (the connection pointing at the
/// test database), its adapter, and how to read the database's state.
struct Opened {
    datasource: Datasource,
    db: Db,
    state: StateReader,
}

enum StateReader {
    /// The server's catalog and every table's rows, read on a connection of its own.
    Postgres(Client),
    /// Templates reading `sqlite_master` and every table; the same templates are added to
    /// the served datasource, so the request layer's own in-memory copy is read the same way.
    Sqlite(Vec<Template>),
}

fn sql_template(id: &str, sql: &str) -> Template {
    serde_json::from_value(json!({
        "id": id, "description": "the injection suite's reading of the database state",
        "nl_examples": ["state"], "sql_template": sql,
    }))
    .unwrap()
}

async fn open(engine: Engine, datasource: &Datasource) -> Opened {
    match engine {
        Engine::Sqlite => {
            let folder = demo_root().join(datasource.name());
            let db = SqliteDatasource::open(datasource, &folder).unwrap();
            let master = sql_template(
                "zz_state_schema",
                "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name",
            );
            let tables = db
                .query(
                    &sql_template(
                        "tables",
                        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
                    ),
                    &Map::new(),
                    DEADLINE,
                )
                .unwrap();
            let mut readers = vec![master];
            for row in &tables.rows {
                let table = row["name"].as_str().unwrap();
                readers.push(sql_template(
                    &format!("zz_state_{table}"),
                    &format!("SELECT * FROM \"{table}\" ORDER BY rowid"),
                ));
            }
            let mut served = datasource.clone();
            served.templates.extend(readers.iter().cloned());
            Opened {
                datasource: served,
                db: Db::Sqlite(db),
                state: StateReader::Sqlite(readers),
            }
        }
        Engine::Postgres => {
            let url = provision(datasource).await;
            let variable = format!(
                "SWITCHYARD_INJECTION_PG_URL_{}",
                datasource.name().to_ascii_uppercase()
            );
            std::env::set_var(&variable, &url);
            let mut served = datasource.clone();
            served.spec.connection.clear();
            served
                .spec
                .connection
                .insert("engine".into(), "postgres".into());
            served.spec.connection.insert("url_env".into(), variable);
            let db = PostgresDatasource::connect(&served).await.unwrap();
            let (client, connection) = tokio_postgres::connect(&url, NoTls).await.unwrap();
            tokio::spawn(connection);
            Opened {
                datasource: served,
                db: Db::Postgres(db),
                state: StateReader::Postgres(client),
            }
        }
    }
}

/// What the database holds: its objects and every table's rows (as a count and a digest on
/// PostgreSQL, in full on SQLite).
async fn state(opened: &Opened) -> Vec<(String, Value)> {
    match &opened.state {
        StateReader::Sqlite(readers) => {
            let mut out = Vec::new();
            for reader in readers {
                let rows = opened.db.query(reader, &Map::new()).await.unwrap();
                out.push((reader.id.clone(), Value::from(rows_of(&rows))));
            }
            out
        }
        StateReader::Postgres(client) => postgres_state(client).await,
    }
}

/// The same, read through the request layer's own adapter (SQLite: its in-memory copy).
async fn state_through(adapters: &LocalAdapters, opened: &Opened) -> Option<Vec<(String, Value)>> {
    let StateReader::Sqlite(readers) = &opened.state else {
        return None;
    };
    let mut out = Vec::new();
    for reader in readers {
        let answer = adapters
            .invoke(request(
                opened.datasource.name(),
                &reader.id,
                NO_VALUES,
                Map::new(),
            ))
            .await
            .unwrap();
        assert_eq!(answer.status, AdapterStatus::Ok, "{answer:?}");
        out.push((reader.id.clone(), answer.data["rows"].clone()));
    }
    Some(out)
}

async fn postgres_state(client: &Client) -> Vec<(String, Value)> {
    let text = |sql: &'static str| async move {
        let row = client.query_one(sql, &[]).await.unwrap();
        Value::from(row.get::<_, Option<String>>(0))
    };
    let mut out = vec![
        (
            "relations".to_owned(),
            text(
                "SELECT string_agg(n.nspname || '.' || c.relname || ':' || c.relkind::text, ',' \
                 ORDER BY n.nspname, c.relname) FROM pg_class c \
                 JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') \
                 AND n.nspname NOT LIKE 'pg_toast%'",
            )
            .await,
        ),
        (
            "functions".to_owned(),
            text(
                "SELECT count(*)::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
                 WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')",
            )
            .await,
        ),
        (
            "roles".to_owned(),
            text("SELECT string_agg(rolname, ',' ORDER BY rolname) FROM pg_roles").await,
        ),
        (
            "large_objects".to_owned(),
            text("SELECT count(*)::text FROM pg_largeobject_metadata").await,
        ),
        (
            "settings".to_owned(),
            text("SELECT count(*)::text FROM pg_db_role_setting").await,
        ),
    ];
    let tables = client
        .query(
            "SELECT schemaname, tablename FROM pg_tables \
             WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2",
            &[],
        )
        .await
        .unwrap();
    for table in tables {
        let (schema, name): (String, String) = (table.get(0), table.get(1));
        let sql = format!(
            "SELECT count(*)::text || ':'::text || coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '') \
             FROM \"{schema}\".\"{name}\" t"
        );
        let row = client.query_one(sql.as_str(), &[]).await.unwrap();
        out.push((
            format!("{schema}.{name}"),
            Value::from(row.get::<_, String>(0)),
        ));
    }
    out
}

/// The URL of the datasource's own database on the test server, seeded from its seed
/// script: created once (under a staging name, then renamed, so a concurrent run never sees
/// it half seeded) and named after the script's hash, so a changed seed gets a new one.
async fn provision(datasource: &Datasource) -> String {
    static STAGING: AtomicUsize = AtomicUsize::new(0);
    let base = std::env::var(URL_VARIABLE).unwrap_or_else(|_| {
        panic!(
            "{URL_VARIABLE} is not set: start the server with `./infra/scripts/postgres.sh start` and export \
             {URL_VARIABLE}=postgres://postgres@127.0.0.1:55432/ev (./infra/scripts/test.sh does both)"
        )
    });
    let seed = datasource
        .spec
        .connection
        .get("seed_sql")
        .unwrap_or_else(|| panic!("datasource `{}` has no seed_sql", datasource.name()));
    let script = std::fs::read_to_string(demo_root().join(datasource.name()).join(seed)).unwrap();
    let hash = script.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let name = format!(
        "switchyard_injection_{}_{:08x}",
        datasource.name(),
        hash as u32
    );
    let (client, connection) = tokio_postgres::connect(&base, NoTls).await.unwrap();
    let task = tokio::spawn(connection);
    let exists = client
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&name])
        .await
        .unwrap()
        .is_some();
    if !exists {
        let staging = format!(
            "{name}_{}_{}",
            std::process::id(),
            STAGING.fetch_add(1, Ordering::Relaxed)
        );
        client
            .batch_execute(&format!("DROP DATABASE IF EXISTS {staging}"))
            .await
            .unwrap();
        client
            .batch_execute(&format!("CREATE DATABASE {staging}"))
            .await
            .unwrap();
        let (seeder, connection) = tokio_postgres::connect(&with_database(&base, &staging), NoTls)
            .await
            .unwrap();
        let seeding = tokio::spawn(connection);
        seeder.batch_execute(&script).await.unwrap();
        drop(seeder);
        let _ = seeding.await;
        let mut attempts = 0;
        loop {
            match client
                .batch_execute(&format!("ALTER DATABASE {staging} RENAME TO {name}"))
                .await
            {
                Ok(()) => break,
                Err(e) if e.code() == Some(&SqlState::DUPLICATE_DATABASE) => {
                    client
                        .batch_execute(&format!("DROP DATABASE {staging}"))
                        .await
                        .unwrap();
                    break;
                }
                // The seeding session may still be closing.
                Err(e) if e.code() == Some(&SqlState::OBJECT_IN_USE) && attempts < 50 => {
                    attempts += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("renaming {staging} to {name}: {e}"),
            }
        }
    }
    drop(client);
    let _ = task.await;
    with_database(&base, &name)
}

/// `url` with its database replaced.
fn with_database(url: &str, database: &str) -> String {
    let (head, query) = match url.split_once('?') {
        Some((head, query)) => (head, format!("?{query}")),
        None => (url, String::new()),
    };
    let rest = head
        .strip_prefix("postgres://")
        .or_else(|| head.strip_prefix("postgresql://"))
        .unwrap_or_else(|| panic!("{URL_VARIABLE} must be a postgres:// URL"));
    let authority = rest.split('/').next().unwrap();
    format!("postgres://{authority}/{database}{query}")
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
                Engine::Postgres => return None,
            },
            Value::String(s) => format!("'{}'", s.replace('\'', "''")),
            _ => return None,
        });
        last = whole.end();
    }
    out.push_str(&sql[last..]);
    Some(out)
}

fn request(
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

async fn invoke(adapters: &LocalAdapters, request: AdapterRequest) -> AdapterResponse {
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

/// The byte range of the text a parameter's extraction patterns take from `question`.
fn captured(template: &Template, name: &str, question: &str) -> Option<std::ops::Range<usize>> {
    let parameter = template.parameters.iter().find(|p| p.name == name)?;
    parameter.extraction_patterns.iter().find_map(|pattern| {
        let captures = Regex::new(pattern).ok()?.captures(question)?;
        let value = captures.get(1).or_else(|| captures.get(0))?;
        Some(value.range())
    })
}

/// Whether an extracted value is what its parameter allows: a listed value, a whole
/// number within bounds, a calendar date, or text the question itself holds.
fn well_typed(template: &Template, name: &str, value: &Value, question: &str) -> bool {
    let Some(parameter) = template.parameters.iter().find(|p| p.name == name) else {
        return false;
    };
    if !parameter.allowed_values.is_empty() {
        return parameter.allowed_values.contains(value);
    }
    match parameter.param_type {
        ParamType::Integer => value.as_i64().is_some_and(|n| {
            parameter.min.is_none_or(|min| n as f64 >= min)
                && parameter.max.is_none_or(|max| n as f64 <= max)
        }),
        ParamType::Number => value.is_number(),
        ParamType::Date => value
            .as_str()
            .is_some_and(|d| chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").is_ok()),
        _ => value.as_str().is_some_and(|text| question.contains(text)),
    }
}

/// The whole suite on one engine; gives the outcome counts and a summary line.
async fn suite(engine: Engine) -> Tally {
    let payloads = payloads();
    let mut tally = Tally::default();
    let (mut templates, mut empty, mut slots) = (0, 0, 0);
    let started = Instant::now();
    for source in sql_datasources() {
        let opened = open(engine, &source).await;
        let before = state(&opened).await;
        let served = Catalog {
            datasources: vec![opened.datasource.clone()],
        };
        let templates_dir = demo_root();
        let adapters = LocalAdapters::open(
            served,
            (engine == Engine::Sqlite).then_some(templates_dir.as_path()),
        )
        .await
        .unwrap();
        let before_through = state_through(&adapters, &opened).await;
        for template in &source.templates {
            let Some(sql) = template.sql_template.as_deref() else {
                continue;
            };
            templates += 1;
            let (question, honest) = honest_example(template);
            let honest_rows = opened.db.query(template, &honest).await.unwrap();
            let honest_json = rows_of(&honest_rows);
            if template.parameters.is_empty() {
                empty += 1;
                continue;
            }
            let honest_answer = invoke(
                &adapters,
                request(source.name(), &template.id, NO_VALUES, honest.clone()),
            )
            .await;
            assert_eq!(
                honest_answer.data["rows"],
                Value::from(honest_json.clone()),
                "{}: the request layer's honest answer",
                template.id
            );
            for parameter in &template.parameters {
                slots += 1;
                let name = &parameter.name;
                let honest_value = honest.get(name).cloned().unwrap_or(Value::Null);
                let range = captured(template, name, &question);
                for (family, payload) in &payloads {
                    for value in placements(&honest_value, payload) {
                        let context = format!(
                            "{engine:?} {}.{name} = {} ({family})",
                            template.id,
                            shown(&value)
                        );
                        let mut values = honest.clone();
                        values.insert(name.clone(), Value::from(value.clone()));

                        // The adapter: the value bound as given.
                        let outcome = adapter_layer(
                            &opened.db,
                            engine,
                            template,
                            sql,
                            name,
                            &values,
                            &honest_rows,
                            &context,
                        )
                        .await;
                        tally.add("adapter", outcome);

                        // The request: the value beside the question, checked as any value.
                        let answer = invoke(
                            &adapters,
                            request(source.name(), &template.id, NO_VALUES, values.clone()),
                        )
                        .await;
                        let outcome = match answer.status {
                            AdapterStatus::Ok => {
                                let rows = answer.data["rows"].as_array().unwrap();
                                assert!(
                                    rows.len() <= honest_json.len(),
                                    "{context}: more rows than the honest query: {rows:?}"
                                );
                                if *rows == honest_json {
                                    "same"
                                } else if no_match(rows) {
                                    "no_match"
                                } else {
                                    panic!("{context}: neither the honest nor the no-match answer: {rows:?}")
                                }
                            }
                            AdapterStatus::Error => {
                                let error = answer.error.as_deref().unwrap_or_default();
                                assert!(
                                    error.starts_with(&format!("parameter `{name}`")),
                                    "{context}: an error not naming the parameter: {}",
                                    shown(error)
                                );
                                "refused"
                            }
                            AdapterStatus::NeedsClarification => {
                                panic!("{context}: asked for a value it was given: {answer:?}")
                            }
                        };
                        tally.add("request", outcome.into());

                        // The question: the payload in the example, in place of the value.
                        if let Some(range) = range.clone() {
                            let mut hostile = question.clone();
                            hostile.replace_range(range.clone(), &value);
                            let outcome = question_layer(
                                &adapters,
                                &opened.db,
                                source.name(),
                                template,
                                &hostile,
                                &honest,
                                &honest_json,
                                &context,
                            )
                            .await;
                            tally.add("question", outcome.into());
                        }
                    }
                }
                if range.is_none() {
                    tally.add("question", "parameter_not_in_example_text".into());
                }
            }
        }
        assert_eq!(
            state(&opened).await,
            before,
            "{engine:?} {}: the database changed",
            source.name()
        );
        assert_eq!(
            state_through(&adapters, &opened).await,
            before_through,
            "{engine:?} {}: the request layer's database changed",
            source.name()
        );
    }
    let total: usize = tally.0.values().sum();
    println!(
        "{engine:?}: {templates} SQL templates ({empty} without parameters), {slots} parameters, \
         {} payloads x 2 placements, {total} calls in {:.1} s: {:?}; the adapter's errors naming \
         the template: {:?}",
        payloads.len(),
        started.elapsed().as_secs_f64(),
        tally.0,
        tally.1
    );
    tally
}

/// One payload through the adapter; the outcome's name.
#[allow(clippy::too_many_arguments)]
async fn adapter_layer(
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
async fn question_layer(
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
    match answer.status {
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
            let error = answer.error.as_deref().unwrap_or_default();
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

#[tokio::test]
async fn payloads_through_every_sql_parameter_on_sqlite() {
    let tally = suite(Engine::Sqlite).await;
    assert!(tally.0.get("request/refused").copied().unwrap_or(0) > 0);
}

#[tokio::test]
async fn payloads_through_every_sql_parameter_on_postgres() {
    let tally = suite(Engine::Postgres).await;
    assert!(tally.0.get("request/refused").copied().unwrap_or(0) > 0);
}

fn demo_datasource(name: &str) -> Datasource {
    sql_datasources()
        .into_iter()
        .find(|d| d.name() == name)
        .unwrap()
}

/// Regression: the PostgreSQL adapter sent the SQL printed back from its syntax tree, and
/// sqlparser prints a string holding `\'` without doubling the quote. The read-only check
/// read one string literal; the server, for which `\` is an ordinary character, read the
/// string `\` and then the rest as SQL: `'\'' OR 1=1 --'` counted every row, and a
/// `pg_sleep` inside a literal ran. Now only the placeholders are rewritten.
#[tokio::test]
async fn regression_string_literals_reach_the_server_as_written() {
    let (sql, names) = switchyard_adapters::postgres::to_positional(
        "t",
        "SELECT COUNT(*) AS n FROM vehicles WHERE make = '\\'' OR 1=1 --'\n  AND county = :county",
    )
    .unwrap();
    assert_eq!(names, ["county"]);
    assert_eq!(
        sql,
        "SELECT COUNT(*) AS n FROM vehicles WHERE make = '\\'' OR 1=1 --'\n  AND county = $1"
    );

    let opened = open(Engine::Postgres, &demo_datasource("ev")).await;
    let mut count = opened.datasource.templates[0].clone();
    count.sql_template =
        Some("SELECT COUNT(*) AS n FROM vehicles WHERE make = '\\'' OR 1=1 --'\n".into());
    let rows = opened.db.query(&count, &Map::new()).await.unwrap();
    assert_eq!(rows.rows[0]["n"], 0, "the literal matched rows: {rows:?}");

    // The check reads one string literal, so the server must too: nothing sleeps.
    let literal = "SELECT '\\'' AS v, pg_sleep(2) --' AS v";
    switchyard_adapters::sql::check_read_only(
        "t",
        literal,
        switchyard_adapters::sql::Engine::Postgres,
    )
    .unwrap();
    let mut select = count.clone();
    select.sql_template = Some(literal.into());
    let Db::Postgres(db) = &opened.db else {
        unreachable!()
    };
    let rows = db
        .query(&select, &Map::new(), Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!(rows.columns, ["v"]);
    assert_eq!(rows.rows[0]["v"], "\\' AS v, pg_sleep(2) --");
}

/// Regression: a NUL character in a text value failed on PostgreSQL with the server's bare
/// "db error", naming neither the parameter nor the cause.
#[tokio::test]
async fn regression_a_nul_in_a_value_is_refused_naming_the_parameter() {
    let opened = open(Engine::Postgres, &demo_datasource("hr")).await;
    let lookup = opened
        .datasource
        .templates
        .iter()
        .find(|t| t.id == "employee_lookup")
        .unwrap();
    let values: Map<String, Value> = [("employee".to_owned(), json!("Grace\0Stewart"))]
        .into_iter()
        .collect();
    let error = opened.db.query(lookup, &values).await.unwrap_err();
    assert!(
        matches!(&error, AdapterError::Parameter { name, .. } if name == "employee"),
        "{error}"
    );
    assert!(error.to_string().contains("NUL"), "{error}");
}
