//! Introspection of the demo's SQL datasources (SQLite, DuckDB) and of in-memory databases.
use super::*;
use switchyard_catalog::template::Catalog;

fn demo() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo")
}

async fn flat(datasource: &str) -> Vec<String> {
    let catalog = Catalog::load(&demo()).unwrap();
    let tables = introspect(catalog.datasource(datasource).unwrap(), Some(&demo())).await;
    tables
        .unwrap()
        .unwrap()
        .iter()
        .map(TableSchema::flatten)
        .collect()
}

/// Every table of the HR seed: names, keys, ranges of numbers and dates, top values.
#[tokio::test]
async fn hr_tables_flatten_to_their_keys_and_values() {
    assert_eq!(
        flat("hr").await,
        [
            "Table: departments (Alias: department). Columns: id: INTEGER, range: 1 to 6; \
             name: TEXT, samples: Engineering, Finance, HR, Marketing, Operations; \
             location: TEXT, samples: Chicago, New York, Austin, San Francisco; \
             budget: INTEGER, range: 750000 to 4500000. Primary Key: id. Foreign Keys: none.",
            "Table: employees (Alias: employee). Columns: id: INTEGER, range: 1 to 60; \
             first_name: TEXT, samples: Aaron, Adrian, Alice, Beatriz, Bianca; \
             last_name: TEXT, samples: Adams, Allen, Anderson, Bailey, Baker; \
             email: TEXT, samples: aaron.brown@example.com, adrian.reed@example.com, \
             alice.okafor@example.com, beatriz.patel@example.com, bianca.anderson@example.com; \
             department_id: INTEGER, range: 1 to 6; title: TEXT, samples: Account Executive, \
             Software Engineer, Senior Software Engineer, Logistics Coordinator, Marketing \
             Specialist; hire_date: TEXT, range: 2014-01-05 to 2024-11-15; manager_id: INTEGER, \
             range: 1 to 51. Primary Key: id. Foreign Keys: department_id -> departments(id); \
             manager_id -> employees(id).",
            "Table: salaries (Alias: salary). Columns: employee_id: INTEGER, range: 1 to 60; \
             amount: INTEGER, range: 58562 to 215137; currency: TEXT, samples: USD; \
             effective_date: TEXT, range: 2024-01-01 to 2024-11-15. Primary Key: none. \
             Foreign Keys: employee_id -> employees(id).",
        ]
    );
}

#[tokio::test]
async fn ev_vehicles_and_unreachable_datasources() {
    // The demo's EV rows are DuckDB's, read from a CSV file: DuckDB's types, no keys.
    let vehicles = &flat("ev").await[0];
    assert!(
        vehicles
            .starts_with("Table: vehicles (Alias: vehicle). Columns: id: BIGINT, range: 1 to 200"),
        "{vehicles}"
    );
    assert!(vehicles.contains("; make: VARCHAR, samples: Tesla, Chevrolet, BMW, Nissan, Kia; "));
    assert!(vehicles.contains("; model_year: BIGINT, range: 2015 to 2024; "));
    assert!(vehicles.contains("; ev_type: VARCHAR, samples: BEV, PHEV; "));
    assert!(vehicles.ends_with("Primary Key: none. Foreign Keys: none."));
    let mut ev = Catalog::load(&demo())
        .unwrap()
        .datasource("ev")
        .unwrap()
        .clone();
    assert_eq!(introspect(&ev, None).await.unwrap(), None);
    let nowhere = Path::new("/nonexistent");
    assert_eq!(introspect(&ev, Some(nowhere)).await.unwrap(), None);
    ev.spec
        .connection
        .insert("engine".into(), "postgres".into());
    let unset = "SWITCHYARD_SCHEMA_TEST_UNSET_URL";
    ev.spec.connection.insert("url_env".into(), unset.into());
    assert_eq!(introspect(&ev, Some(&demo())).await.unwrap(), None);
}

/// Names with quotes reach the sampling SQL quoted; a key naming only its parent table
/// references the parent's primary key.
#[test]
fn odd_names_are_quoted_and_implicit_keys_resolved() {
    let db = Connection::open_in_memory().unwrap();
    db.execute_batch(
        r#"CREATE TABLE parents (code TEXT, n INTEGER, PRIMARY KEY (n, code));
           CREATE TABLE "odd ""quoted"" things" ("we""ird" TEXT, price REAL, note TEXT,
               blank TEXT, at DATETIME, p INTEGER, c TEXT, FOREIGN KEY (p, c) REFERENCES parents);
           INSERT INTO parents VALUES ('a', 1);
           INSERT INTO "odd ""quoted"" things" VALUES
               ('b', 2.0, 'x y' || char(10) || 'z', NULL, '2024-01-02 10:00', 1, 'a'),
               ('a', 1.5, '2020-01-01', NULL, '2023-12-31T23:59', NULL, NULL),
               ('b', 10, 'x y z', NULL, NULL, NULL, NULL);"#,
    )
    .unwrap();
    let tables = introspect_sqlite(&db, "lab").unwrap();
    assert_eq!(
        tables[0].flatten(),
        "Table: odd \"quoted\" things (Alias: odd \"quoted\" thing). \
         Columns: we\"ird: TEXT, samples: b, a; price: REAL, range: 1.5 to 10; \
         note: TEXT, samples: x y z, 2020-01-01; blank: TEXT, empty; \
         at: DATETIME, range: 2023-12-31T23:59 to 2024-01-02 10:00; p: INTEGER, range: 1 to 1; \
         c: TEXT, samples: a. Primary Key: none. Foreign Keys: p, c -> parents(n, code)."
    );
    assert_eq!(tables[1].primary_key, ["n", "code"]);
    let code = ColumnSummary::Samples {
        values: vec!["a".into()],
    };
    assert_eq!(tables[1].columns[0].summary, code);
    assert_eq!(quote(r#"a"b"#), r#""a""b""#);
    let failure = error("lab", "table `t`", &rusqlite::Error::InvalidQuery);
    let message = "datasource `lab`: introspection, table `t`: Query is not read-only";
    assert_eq!(failure.to_string(), message);
}

#[test]
fn aliases_and_summaries() {
    assert_eq!(alias("ev_registrations"), "ev registration");
    assert_eq!(alias("Employees"), "employee");
    assert_eq!([alias("salaries"), alias("status")], ["salary", "status"]);
    assert_eq!(
        [alias("bus"), alias("address"), alias("data")],
        ["bus", "address", "data"]
    );
    let text = |values: &[&str]| -> Vec<Cell> {
        values.iter().map(|v| Cell::Text(v.to_string())).collect()
    };
    let summary = |kind: &str, values: &[&str]| summarize(kind, text(values).iter());
    assert_eq!(
        summary("numeric(10,2)", &["4500000.00", "12.50"]),
        range("12.5", "4500000")
    );
    assert_eq!(summary("bigint", &["-3", "12"]), range("-3", "12"));
    let samples = |values: &[&str]| ColumnSummary::Samples {
        values: values.iter().map(|v| v.to_string()).collect(),
    };
    assert_eq!(summary("point", &["(1,2)"]), samples(&["(1,2)"]));
    assert_eq!(summary("TEXT", &["2024-13-01"]), samples(&["2024-13-01"]));
    assert_eq!(summary("INTEGER", &["n/a", "1"]), samples(&["1", "n/a"]));
    let long = "x".repeat(50);
    let ranked = summary("TEXT", &["c", "b", "c", &long, &long, "a", "d", "e"]);
    assert_eq!(ranked, samples(&["c", &long[..40], "a", "b", "d"]));
    let json = serde_json::to_value(range("1", "2")).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"kind": "range", "min": "1", "max": "2"})
    );
}
