//! The SQL adapter on the shipped HR and EV SQLite samples: answers, bound values,
//! read-only refusal, row caps and deadlines.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Map, Value};
use switchyard_adapters::guard::{check_read_only, Engine};
use switchyard_adapters::sql::SqliteDatasource;
use switchyard_catalog::template::{Catalog, Datasource, Template};

fn demo() -> (Catalog, PathBuf) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo");
    (Catalog::load(&root).unwrap(), root)
}

fn open(name: &str) -> (SqliteDatasource, Datasource) {
    let (catalog, root) = demo();
    let mut datasource = catalog.datasource(name).unwrap().clone();
    // The demo serves the EV rows with DuckDB from a CSV file; here, their portable seed.
    if name == "ev" {
        datasource.spec.connection = [("engine", "sqlite"), ("seed_sql", "data/ev.sql")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
    }
    (
        SqliteDatasource::open(&datasource, &root.join(name)).unwrap(),
        datasource,
    )
}

fn template<'a>(datasource: &'a Datasource, id: &str) -> &'a Template {
    datasource.templates.iter().find(|t| t.id == id).unwrap()
}

fn params(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

const SECOND: Duration = Duration::from_secs(1);

#[test]
fn counts_and_top_n_come_from_the_sample_data() {
    let (hr, spec) = open("hr");
    let rows = hr
        .query(
            template(&spec, "employees_count_by_department"),
            &params(json!({"department": "Engineering"})),
            SECOND,
        )
        .unwrap();
    assert_eq!(rows.rows[0]["employee_count"], 14);
    let top = hr
        .query(
            template(&spec, "employees_top_paid_in_department"),
            &params(json!({"department": "Sales", "limit": 5})),
            SECOND,
        )
        .unwrap();
    assert_eq!(top.rows.len(), 5);

    let (ev, spec) = open("ev");
    let rows = ev
        .query(
            template(&spec, "vehicles_count_by_make_in_county"),
            &params(json!({"make": "Tesla", "county": "King"})),
            SECOND,
        )
        .unwrap();
    assert_eq!(rows.rows[0]["vehicle_count"], 40, "{:?}", rows.rows);
}

#[test]
fn injection_through_a_parameter_is_only_a_value() {
    let (hr, spec) = open("hr");
    let lookup = template(&spec, "employee_lookup");
    let hostile = "Engineering'; DROP TABLE employees; --";
    let rows = hr
        .query(lookup, &params(json!({"employee": hostile})), SECOND)
        .unwrap();
    assert!(rows.rows.is_empty(), "{:?}", rows.rows);
    let rows = hr
        .query(
            template(&spec, "employees_count_by_department"),
            &params(json!({"department": hostile})),
            SECOND,
        )
        .unwrap();
    assert_eq!(rows.rows[0]["employee_count"], 0);
    // The table is still there and whole.
    let rows = hr
        .query(
            template(&spec, "employees_count_by_department"),
            &params(json!({"department": "Engineering"})),
            SECOND,
        )
        .unwrap();
    assert_eq!(rows.rows[0]["employee_count"], 14);
}

#[test]
fn writes_are_refused_wherever_they_hide() {
    for (sql, engine, expect) in [
        ("DELETE FROM employees", Engine::Sqlite, "read-only query"),
        (
            "SELECT 1; DROP TABLE employees",
            Engine::Sqlite,
            "exactly one statement",
        ),
        (
            "UPDATE employees SET title = 'x'",
            Engine::Sqlite,
            "read-only query",
        ),
        (
            "INSERT INTO employees (id) VALUES (1)",
            Engine::Sqlite,
            "read-only query",
        ),
        (
            "CREATE TABLE t AS SELECT 1",
            Engine::Sqlite,
            "read-only query",
        ),
        (
            "SELECT * INTO backup FROM employees",
            Engine::Postgres,
            "INTO",
        ),
        (
            "SELECT * FROM employees FOR UPDATE",
            Engine::Postgres,
            "lock",
        ),
        ("SELEKT nothing", Engine::Sqlite, "does not parse"),
        // A data-modifying CTE: this sqlparser refuses to parse it, which refuses it too.
        (
            "WITH gone AS (DELETE FROM employees RETURNING id) SELECT count(*) FROM gone",
            Engine::Postgres,
            "DELETE",
        ),
    ] {
        let message = check_read_only("bad_template", sql, engine)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("bad_template") && message.contains(expect),
            "{sql}: {message}"
        );
    }
    check_read_only(
        "ok",
        "WITH d AS (SELECT id FROM departments) SELECT * FROM d WHERE id = :id",
        Engine::Sqlite,
    )
    .unwrap();
    check_read_only(
        "ok",
        "SELECT * FROM employees WHERE name = :name",
        Engine::Postgres,
    )
    .unwrap();
}

#[test]
fn a_write_template_stops_the_datasource_from_opening() {
    let (catalog, root) = demo();
    let mut datasource = catalog.datasource("hr").unwrap().clone();
    datasource.templates[0].sql_template = Some("DELETE FROM employees".into());
    let id = datasource.templates[0].id.clone();
    let message = SqliteDatasource::open(&datasource, &root.join("hr"))
        .err()
        .unwrap()
        .to_string();
    assert!(
        message.contains(&id) && message.contains("read-only"),
        "{message}"
    );
}

#[test]
fn row_cap_and_deadline() {
    let (_, root) = demo();
    let (_, mut datasource) = open("ev");
    datasource.spec.limits.max_rows = 7;
    let mut all = datasource.templates[0].clone();
    all.sql_template = Some("SELECT * FROM vehicles".into());
    let mut slow = all.clone();
    slow.sql_template = Some(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
            .into(),
    );
    let ev = SqliteDatasource::open(&datasource, &root.join("ev")).unwrap();
    let rows = ev.query(&all, &Map::new(), SECOND).unwrap();
    assert_eq!(rows.rows.len(), 7);
    assert!(rows.truncated);
    let message = ev
        .query(&slow, &Map::new(), Duration::from_millis(50))
        .unwrap_err()
        .to_string();
    assert!(message.contains("deadline"), "{message}");
}

#[test]
fn missing_seed_file_is_named() {
    let (catalog, _) = demo();
    let datasource = catalog.datasource("hr").unwrap().clone();
    let message = SqliteDatasource::open(&datasource, Path::new("/nowhere/hr"))
        .err()
        .unwrap()
        .to_string();
    assert!(
        message.contains("hr") && message.contains("/nowhere/hr/data/hr.sql"),
        "{message}"
    );
}

#[test]
fn side_effect_functions_are_refused_wherever_they_are_called() {
    let postgres = [
        "SELECT pg_sleep(5)",
        "SELECT pg_sleep_for('5 seconds')",
        "SELECT 1 FROM employees WHERE pg_sleep(1) IS NOT NULL",
        "SELECT * FROM pg_sleep(1)",
        "SELECT PG_CATALOG.PG_SLEEP(1)",
        "SELECT \"pg_sleep\"(1)",
        "SELECT set_config('default_transaction_read_only', 'off', false)",
        "SELECT nextval('employees_id_seq')",
        "SELECT setval('employees_id_seq', 1)",
        "SELECT lo_import('/etc/passwd')",
        "SELECT lo_export(16384, '/tmp/x')",
        "SELECT pg_read_file('/etc/passwd')",
        "SELECT * FROM pg_ls_dir('.')",
        "SELECT pg_advisory_lock(1)",
        "SELECT pg_try_advisory_xact_lock(1)",
        "SELECT pg_notify('channel', 'x')",
        "SELECT pg_terminate_backend(1)",
        "SELECT pg_reload_conf()",
        "SELECT pg_stat_reset()",
        "SELECT * FROM dblink('dbname=ev', 'SELECT 1') AS t(n int)",
        "SELECT dblink_exec('dbname=ev', 'DROP TABLE vehicles')",
        "SELECT query_to_xml('SELECT pg_sleep(5)', true, true, '')",
        "SELECT * FROM ts_stat('SELECT to_tsvector(name) FROM departments')",
        "SELECT * FROM employees e, LATERAL pg_sleep(1)",
        "SELECT name FROM departments ORDER BY pg_sleep(1)",
        "SELECT COALESCE(NULL, LOWER(CAST(pg_sleep(1) AS text)))",
        "SELECT (SELECT max(id) FROM employees WHERE pg_sleep(1) IS NULL)",
        "WITH t AS (SELECT set_config('x.y', 'z', false) AS v) SELECT * FROM t",
        "SELECT 1 UNION SELECT count(*) FROM employees WHERE lo_unlink(1) = 1",
    ];
    let sqlite = [
        "SELECT load_extension('/tmp/evil.so')",
        "SELECT writefile('/tmp/x', 'y')",
        "SELECT readfile('/etc/passwd')",
        "SELECT * FROM employees WHERE id IN (SELECT LOAD_EXTENSION('x'))",
    ];
    let cases = postgres
        .iter()
        .map(|sql| (*sql, Engine::Postgres))
        .chain(sqlite.iter().map(|sql| (*sql, Engine::Sqlite)));
    for (sql, engine) in cases {
        let message = check_read_only("bad_template", sql, engine)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("bad_template") && message.contains("has side effects"),
            "{sql}: {message}"
        );
    }
    // Named in the refusal.
    let message = check_read_only("t", "SELECT pg_catalog.pg_sleep(1)", Engine::Postgres)
        .unwrap_err()
        .to_string();
    assert!(message.contains("pg_catalog.pg_sleep()"), "{message}");
}

#[test]
fn ordinary_functions_still_pass_the_check() {
    for (sql, engine) in [
        (
            "SELECT LOWER(name), UPPER(location), LENGTH(name), COUNT(*), MAX(budget) \
             FROM departments GROUP BY name, location",
            Engine::Postgres,
        ),
        (
            "SELECT CAST(ROUND(AVG(amount)) AS INTEGER), COALESCE(MIN(currency), 'x') FROM salaries",
            Engine::Sqlite,
        ),
        (
            "SELECT string_agg(name, ', ' ORDER BY name), current_setting('TimeZone'), now() \
             FROM departments",
            Engine::Postgres,
        ),
        ("SELECT * FROM generate_series(1, 10) AS g(n)", Engine::Postgres),
        (
            "SELECT date_trunc('month', hire_date::date), lower(e.email) AS lo_email, \
             log(10, 100), substr(last_name, 1, 1) FROM employees e",
            Engine::Postgres,
        ),
        (
            "SELECT strftime('%Y', hire_date), substr(email, 1, 3), ifnull(manager_id, 0) \
             FROM employees",
            Engine::Sqlite,
        ),
    ] {
        check_read_only("ok", sql, engine).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}
