//! SQL injection payloads through every parameter of every SQL template of the demo catalog
//! (`templates/demo`: each datasource of kind `sql`, read from the files), on SQLite (the
//! demo's engine), on DuckDB over the demo's CSV files, and on real PostgreSQL and MariaDB
//! servers: `./infra/scripts/postgres.sh start` and `./infra/scripts/mariadb.sh start`,
//! their URLs in SWITCHYARD_TEST_PG_URL and SWITCHYARD_TEST_MYSQL_URL
//! (`./infra/scripts/test.sh` does all four). On a server each SQL datasource gets a
//! database of its own, seeded once from its seed script.
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

mod catalog;
mod databases;
mod differential;
mod layers;
mod mariadb;
mod payloads;

use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use switchyard_adapters::{AdapterError, LocalAdapters};
use switchyard_catalog::template::Catalog;
use switchyard_contract::adapter::AdapterStatus;

use catalog::{captured, demo_datasource, demo_root, honest_example, seeded, sql_datasources};
use databases::{open, rows_of, state, state_through, Db, Engine};
use layers::{adapter_layer, invoke, no_match, question_layer, request, Tally};
use payloads::{payloads, placements, shown};

const DEADLINE: Duration = Duration::from_secs(5);

/// The question text of a request whose values all come from the session.
const NO_VALUES: &str = "-";

/// The whole suite on one engine; gives the outcome counts and a summary line.
async fn suite(engine: Engine) -> Tally {
    let payloads = payloads();
    let mut tally = Tally::default();
    let (mut templates, mut empty, mut slots) = (0, 0, 0);
    let started = Instant::now();
    for source in sql_datasources() {
        // DuckDB runs the datasources whose rows are also CSV files (the EV demo's).
        let source = match engine {
            Engine::Duckdb => match databases::duckdb_twin(&source) {
                Some(twin) => twin,
                None => continue,
            },
            Engine::Sqlite | Engine::Postgres | Engine::Mariadb => seeded(source),
        };
        let opened = open(engine, &source).await;
        let before = state(&opened).await;
        let served = Catalog {
            datasources: vec![opened.datasource.clone()],
        };
        let templates_dir = demo_root();
        let adapters = LocalAdapters::open(
            served,
            matches!(engine, Engine::Sqlite | Engine::Duckdb).then_some(templates_dir.as_path()),
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
                        let outcome = match answer.status() {
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
                                let error = answer.error().unwrap_or_default();
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

#[tokio::test]
async fn payloads_through_every_sql_parameter_on_sqlite() {
    let tally = suite(Engine::Sqlite).await;
    assert!(tally.0.get("request/refused").copied().unwrap_or(0) > 0);
}

#[cfg(feature = "duckdb")]
#[tokio::test]
async fn payloads_through_every_sql_parameter_on_duckdb() {
    let tally = suite(Engine::Duckdb).await;
    assert!(tally.0.values().sum::<usize>() > 0);
}

#[tokio::test]
async fn payloads_through_every_sql_parameter_on_postgres() {
    let tally = suite(Engine::Postgres).await;
    assert!(tally.0.get("request/refused").copied().unwrap_or(0) > 0);
}

#[tokio::test]
async fn payloads_through_every_sql_parameter_on_mariadb() {
    let tally = suite(Engine::Mariadb).await;
    assert!(tally.0.get("request/refused").copied().unwrap_or(0) > 0);
}

/// Each engine runs the statement its check read: `differential` asserts it per statement;
/// here, that the forms reached the server at all (some accepted, some refused).
fn ran_and_refused(counts: &std::collections::BTreeMap<String, usize>) {
    assert!(counts.get("ran").copied().unwrap_or(0) > 10, "{counts:?}");
    assert!(
        counts.get("refused").copied().unwrap_or(0) > 0,
        "{counts:?}"
    );
}

#[tokio::test]
async fn the_sqlite_server_runs_what_the_check_read() {
    ran_and_refused(&differential::differential(Engine::Sqlite).await);
}

#[cfg(feature = "duckdb")]
#[tokio::test]
async fn the_duckdb_engine_runs_what_the_check_read() {
    ran_and_refused(&differential::differential(Engine::Duckdb).await);
}

#[tokio::test]
async fn the_postgres_server_runs_what_the_check_read() {
    ran_and_refused(&differential::differential(Engine::Postgres).await);
}

/// The form of the issue: MySQL reads `--` before a tab as a comment, where the check read
/// two minus signs and a string hiding `SLEEP(2)`.
#[tokio::test]
async fn the_mariadb_server_runs_what_the_check_read() {
    ran_and_refused(&differential::differential(Engine::Mariadb).await);
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
    switchyard_adapters::guard::check_read_only(
        "t",
        literal,
        switchyard_adapters::guard::Engine::Postgres,
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
