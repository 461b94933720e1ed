//! The SQL adapter on embedded DuckDB: the demo's EV templates over the same rows as a CSV
//! file (`templates/demo/ev/data/vehicles.csv`) answer as on SQLite; values are bound;
//! writes, file and network access, settings and extensions are refused by the check and,
//! behind it, by DuckDB itself; rows are capped; a slow query is interrupted at its
//! deadline; a missing or corrupt file and a template naming an unknown column are errors
//! naming the key and the file.
#![cfg(feature = "duckdb")]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use switchyard_adapters::duckdb::DuckdbDatasource;
use switchyard_adapters::guard::{check_read_only, Engine};
use switchyard_adapters::sql::SqliteDatasource;
use switchyard_catalog::template::{Catalog, Datasource, Template};

const SECOND: Duration = Duration::from_secs(1);

fn demo_ev() -> (Datasource, PathBuf) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo");
    let catalog = Catalog::load(&root).unwrap();
    (catalog.datasource("ev").unwrap().clone(), root.join("ev"))
}

/// `datasource` on DuckDB with `connection`.
fn on_duckdb(datasource: &Datasource, connection: Value) -> Datasource {
    let mut duck = datasource.clone();
    duck.spec.connection = serde_json::from_value(connection).unwrap();
    duck
}

/// The demo's EV datasource over the CSV file.
fn ev_duckdb() -> (DuckdbDatasource, Datasource) {
    let (ev, folder) = demo_ev();
    let duck = on_duckdb(
        &ev,
        json!({"engine": "duckdb", "table.vehicles": "data/vehicles.csv"}),
    );
    (DuckdbDatasource::open(&duck, &folder).unwrap(), duck)
}

fn template(id: &str, sql: &str) -> Template {
    serde_json::from_value(json!({
        "id": id, "description": "a test query", "nl_examples": ["test"], "sql_template": sql,
    }))
    .unwrap()
}

fn params(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

/// A value every template of the EV catalog accepts for `name`.
fn honest(name: &str) -> Value {
    match name {
        "make" => json!("Tesla"),
        "county" => json!("King"),
        "city" => json!("Seattle"),
        "model_year" => json!(2023),
        "start_year" => json!(2019),
        "end_year" => json!(2022),
        "min_range" => json!(250),
        "limit" => json!(5),
        other => panic!("no honest value for `{other}`"),
    }
}

/// Numbers compared as numbers: SQLite's integer average may be DuckDB's double.
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => (x - y).abs() < 1e-9,
        _ => a == b,
    }
}

#[test]
fn every_ev_template_answers_as_on_sqlite() {
    let (ev, folder) = demo_ev();
    let sqlite_ev = on_duckdb(&ev, json!({"engine": "sqlite", "seed_sql": "data/ev.sql"}));
    let sqlite = SqliteDatasource::open(&sqlite_ev, &folder).unwrap();
    let (duck, spec) = ev_duckdb();
    let mut compared = 0;
    for template in &spec.templates {
        let parameters: Map<String, Value> = (template.parameters.iter())
            .map(|p| (p.name.clone(), honest(&p.name)))
            .collect();
        let mut expected = sqlite.query(template, &parameters, SECOND).unwrap();
        let mut got = duck.query(template, &parameters, SECOND).unwrap();
        // Without ORDER BY neither engine promises an order.
        let sql = template.sql_template.as_deref().unwrap_or_default();
        if !sql.to_uppercase().contains("ORDER BY") {
            let key = |row: &Map<String, Value>| Value::Object(row.clone()).to_string();
            expected.rows.sort_by_key(key);
            got.rows.sort_by_key(key);
        }
        assert_eq!(got.columns, expected.columns, "{}", template.id);
        assert_eq!(got.rows.len(), expected.rows.len(), "{}", template.id);
        for (a, b) in got.rows.iter().zip(&expected.rows) {
            for column in &got.columns {
                assert!(
                    same(&a[column], &b[column]),
                    "{}: {column} {} against SQLite's {}",
                    template.id,
                    a[column],
                    b[column]
                );
            }
        }
        compared += 1;
    }
    assert_eq!(compared, 12, "every EV template");
}

#[test]
fn a_value_is_only_ever_data() {
    let (duck, spec) = ev_duckdb();
    let count = spec
        .templates
        .iter()
        .find(|t| t.id == "vehicles_count_by_make")
        .unwrap();
    for hostile in [
        "Tesla' OR '1'='1",
        "Tesla'; DROP TABLE vehicles; --",
        "Tesla'); COPY vehicles TO '/tmp/x.csv'; --",
        "' UNION SELECT 1 --",
    ] {
        let rows = duck
            .query(count, &params(json!({"make": hostile})), SECOND)
            .unwrap();
        assert_eq!(rows.rows[0]["vehicle_count"], 0, "{hostile}");
    }
    let rows = duck
        .query(count, &params(json!({"make": "Tesla"})), SECOND)
        .unwrap();
    assert!(rows.rows[0]["vehicle_count"].as_i64().unwrap() > 0);
}

#[test]
fn writes_files_settings_and_extensions_are_refused_by_the_check() {
    for sql in [
        "DELETE FROM vehicles",
        "COPY vehicles TO '/tmp/out.csv'",
        "ATTACH '/tmp/other.duckdb'",
        "INSTALL httpfs",
        "LOAD httpfs",
        "SET enable_external_access = true",
        "PRAGMA enable_profiling",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_csv_auto('/etc/passwd')",
        "SELECT * FROM read_parquet('s3://bucket/x.parquet')",
        "SELECT * FROM read_text('/etc/hostname')",
        "SELECT * FROM glob('/*')",
        "SELECT getenv('HOME')",
        "SELECT * FROM query('DELETE FROM vehicles')",
        "SELECT 1; SELECT 2",
    ] {
        let refused = check_read_only("t", sql, Engine::Duckdb);
        assert!(refused.is_err(), "{sql} passed the check");
    }
    check_read_only(
        "t",
        "SELECT make, COUNT(*) FROM vehicles GROUP BY ALL",
        Engine::Duckdb,
    )
    .unwrap();
}

/// What gets past the parser (a file named as a table, a reader under another name) meets
/// DuckDB with external access off and its configuration locked.
#[test]
fn behind_the_check_duckdb_reads_no_file_and_keeps_its_settings() {
    let (duck, _) = ev_duckdb();
    for sql in [
        "SELECT * FROM '/etc/passwd'",
        "SELECT * FROM 'templates/demo/ev/data/vehicles.csv'",
        "SELECT * FROM sniff_csv('/etc/passwd')",
    ] {
        let template = template("t", sql);
        if check_read_only("t", sql, Engine::Duckdb).is_ok() {
            // External access off: a file named as a table is no table, a reader is denied.
            let error = duck.query(&template, &Map::new(), SECOND).unwrap_err();
            let message = error.to_string().to_lowercase();
            assert!(
                message.contains("does not exist")
                    || message.contains("file system operations are disabled"),
                "{sql}: {error}"
            );
            assert!(!message.contains("root:"), "{sql}: {error}");
        }
    }
}

#[test]
fn rows_are_capped_and_a_slow_query_is_interrupted() {
    let (ev, folder) = demo_ev();
    let mut capped = on_duckdb(
        &ev,
        json!({"engine": "duckdb", "table.vehicles": "data/vehicles.csv"}),
    );
    capped.spec.limits.max_rows = 7;
    let duck = DuckdbDatasource::open(&capped, &folder).unwrap();
    let all = duck
        .query(
            &template("all", "SELECT * FROM vehicles"),
            &Map::new(),
            SECOND,
        )
        .unwrap();
    assert_eq!(all.rows.len(), 7);
    assert!(all.truncated);

    // A cross join of ten million rows per vehicle runs for far longer than 200 ms.
    let slow = template(
        "slow",
        "SELECT COUNT(*) AS n FROM vehicles, range(10000000) a, range(1000) b WHERE a.range + b.range < 0",
    );
    let started = Instant::now();
    let error = duck
        .query(&slow, &Map::new(), Duration::from_millis(200))
        .unwrap_err();
    let took = started.elapsed();
    assert!(
        error
            .to_string()
            .contains("cancelled at the deadline of 200 ms"),
        "{error}"
    );
    assert!(took < Duration::from_secs(3), "interrupted after {took:?}");
    // The connection serves the next question.
    let rows = duck
        .query(
            &template("n", "SELECT COUNT(*) AS n FROM vehicles"),
            &Map::new(),
            SECOND,
        )
        .unwrap();
    assert_eq!(rows.rows[0]["n"], 200);
}

#[test]
fn missing_and_corrupt_files_and_unknown_columns_are_named() {
    let (ev, _) = demo_ev();
    let dir = tempfile::tempdir().unwrap();
    let open = |connection: Value| {
        DuckdbDatasource::open(&on_duckdb(&ev, connection), dir.path())
            .err()
            .expect("refused")
            .to_string()
    };
    let missing = open(json!({"engine": "duckdb", "table.vehicles": "nope.csv"}));
    assert!(
        missing.contains("connection.table.vehicles") && missing.contains("nope.csv"),
        "{missing}"
    );
    // Not UTF-8: DuckDB's CSV reader refuses it.
    std::fs::write(dir.path().join("broken.csv"), b"id,make\n1,\xff\xfe\xfd\n").unwrap();
    let corrupt = open(json!({"engine": "duckdb", "table.vehicles": "broken.csv"}));
    assert!(
        corrupt.contains("connection.table.vehicles") && corrupt.contains("broken.csv"),
        "{corrupt}"
    );
    std::fs::write(dir.path().join("broken.duckdb"), b"not a database").unwrap();
    let database = open(json!({"engine": "duckdb", "database": "broken.duckdb"}));
    assert!(
        database.contains("connection.database") && database.contains("broken.duckdb"),
        "{database}"
    );
    let neither = open(json!({"engine": "duckdb"}));
    assert!(neither.contains("connection needs `database`"), "{neither}");
    let bad_name = open(json!({"engine": "duckdb", "table.1x": "a.csv"}));
    assert!(bad_name.contains("connection.table.1x"), "{bad_name}");
    let bad_kind = open(json!({"engine": "duckdb", "table.v": "a.json"}));
    assert!(
        bad_kind.contains("must end in .csv or .parquet"),
        "{bad_kind}"
    );
    std::fs::write(dir.path().join("broken.parquet"), b"PAR1 but not Parquet").unwrap();
    let corrupt = open(json!({"engine": "duckdb", "table.vehicles": "broken.parquet"}));
    assert!(
        corrupt.contains("connection.table.vehicles") && corrupt.contains("broken.parquet"),
        "{corrupt}"
    );

    // Same rows but a column renamed: the templates that name it fail at open.
    let csv = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo/ev/data/vehicles.csv"),
    )
    .unwrap()
    .replacen("county", "region", 1);
    std::fs::write(dir.path().join("renamed.csv"), csv).unwrap();
    let unknown = open(json!({"engine": "duckdb", "table.vehicles": "renamed.csv"}));
    assert!(
        unknown.contains("does not prepare") && unknown.contains("county"),
        "{unknown}"
    );
}

/// A Parquet file (written here by DuckDB itself from the demo's CSV) is read as a table
/// and answers as the CSV does; `read_parquet` stays refused in templates.
#[test]
fn a_parquet_file_answers_as_the_csv_does() {
    let (ev, folder) = demo_ev();
    let dir = tempfile::tempdir().unwrap();
    let parquet = dir.path().join("vehicles.parquet");
    duckdb::Connection::open_in_memory()
        .unwrap()
        .execute_batch(&format!(
            "COPY (SELECT * FROM read_csv('{}')) TO '{}' (FORMAT parquet)",
            folder.join("data/vehicles.csv").display(),
            parquet.display()
        ))
        .unwrap();
    let spec = on_duckdb(
        &ev,
        json!({"engine": "duckdb", "table.vehicles": "vehicles.parquet"}),
    );
    let from_parquet = DuckdbDatasource::open(&spec, dir.path()).unwrap();
    let (from_csv, _) = ev_duckdb();
    let count = spec
        .templates
        .iter()
        .find(|t| t.id == "vehicles_count_by_make_in_county")
        .unwrap();
    let parameters = params(json!({"make": "Tesla", "county": "King"}));
    let expected = from_csv.query(count, &parameters, SECOND).unwrap();
    let got = from_parquet.query(count, &parameters, SECOND).unwrap();
    assert_eq!(got.rows, expected.rows);
    assert_eq!(got.rows[0]["vehicle_count"], 40);
    let message = check_read_only(
        "reader",
        "SELECT * FROM read_parquet('/etc/passwd')",
        Engine::Duckdb,
    )
    .unwrap_err()
    .to_string();
    assert!(message.contains("read_parquet"), "{message}");
}

/// A DuckDB database file is opened read-only: the file is the same afterwards.
#[test]
fn a_database_file_is_read_only() {
    let (ev, folder) = demo_ev();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ev.duckdb");
    {
        let db = duckdb::Connection::open(&file).unwrap();
        db.execute(
            "CREATE TABLE vehicles AS SELECT * FROM read_csv(?)",
            [folder.join("data/vehicles.csv").display().to_string()],
        )
        .unwrap();
    }
    let before = std::fs::read(&file).unwrap();
    let spec = on_duckdb(&ev, json!({"engine": "duckdb", "database": "ev.duckdb"}));
    let duck = DuckdbDatasource::open(&spec, dir.path()).unwrap();
    let rows = duck
        .query(
            &template("n", "SELECT COUNT(*) AS n FROM vehicles"),
            &Map::new(),
            SECOND,
        )
        .unwrap();
    assert_eq!(rows.rows[0]["n"], 200);
    drop(duck);
    assert_eq!(std::fs::read(&file).unwrap(), before);
}
