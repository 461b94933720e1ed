//! The SQL adapter on a real PostgreSQL server holding the EV sample, started by
//! `infra/scripts/postgres.sh start` (which `infra/scripts/test.sh` runs): the URL is in
//! SWITCHYARD_TEST_PG_URL.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Map, Value};
use switchyard_adapters::postgres::{to_positional, PostgresDatasource};
use switchyard_core::template::{Catalog, Datasource, Template};

const URL_VARIABLE: &str = "SWITCHYARD_TEST_PG_URL";

/// The demo's EV datasource, pointed at the test server.
fn ev_on_postgres() -> Datasource {
    assert!(
        std::env::var_os(URL_VARIABLE).is_some(),
        "{URL_VARIABLE} is not set: start the server with `./infra/scripts/postgres.sh start` and export \
         {URL_VARIABLE}=postgres://postgres@127.0.0.1:55432/ev (./infra/scripts/test.sh does both)"
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo");
    let mut ev = Catalog::load(&root)
        .unwrap()
        .datasource("ev")
        .unwrap()
        .clone();
    ev.spec.connection.clear();
    ev.spec
        .connection
        .insert("engine".into(), "postgres".into());
    ev.spec
        .connection
        .insert("url_env".into(), URL_VARIABLE.into());
    ev
}

fn template<'a>(datasource: &'a Datasource, id: &str) -> &'a Template {
    datasource.templates.iter().find(|t| t.id == id).unwrap()
}

fn params(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

const SECOND: Duration = Duration::from_secs(2);

#[test]
fn placeholders_become_positional_and_repeat() {
    let (sql, names) = to_positional(
        "t",
        "SELECT * FROM v WHERE make = :make AND (:county IS NULL OR county = :county) LIMIT :limit",
    )
    .unwrap();
    assert_eq!(names, ["make", "county", "limit"]);
    assert!(
        sql.contains("make = $1")
            && sql.contains("$2 IS NULL OR county = $2")
            && sql.contains("LIMIT $3"),
        "{sql}"
    );
    // Casts and strings are not placeholders.
    let (sql, names) =
        to_positional("t", "SELECT '1:x'::text, id::int FROM v WHERE a = :a").unwrap();
    assert_eq!(names, ["a"]);
    assert!(sql.contains("'1:x'") && sql.contains("$1"), "{sql}");
}

#[tokio::test]
async fn answers_from_the_server_with_typed_bindings() {
    let ev = ev_on_postgres();
    let db = PostgresDatasource::connect(&ev).await.unwrap();
    let rows = db
        .query(
            template(&ev, "vehicles_count_by_make_in_county"),
            &params(json!({"make": "Tesla", "county": "King"})),
            SECOND,
        )
        .await
        .unwrap();
    assert_eq!(rows.rows[0]["vehicle_count"], 40);
    // An integer parameter bound where the server expects a bigint (LIMIT).
    let rows = db
        .query(
            template(&ev, "makes_top_by_registrations"),
            &params(json!({"limit": 3})),
            SECOND,
        )
        .await
        .unwrap();
    assert_eq!(rows.rows.len(), 3);
    assert_eq!(rows.rows[0]["make"], "Tesla");
}

#[tokio::test]
async fn hostile_values_are_bound_and_change_nothing() {
    let ev = ev_on_postgres();
    let db = PostgresDatasource::connect(&ev).await.unwrap();
    let count = template(&ev, "vehicles_count_by_make_in_county");
    let hostile = json!({"make": "Tesla'; DROP TABLE vehicles; --", "county": "King"});
    let rows = db.query(count, &params(hostile), SECOND).await.unwrap();
    assert_eq!(rows.rows[0]["vehicle_count"], 0);
    let rows = db
        .query(
            count,
            &params(json!({"make": "Tesla", "county": "King"})),
            SECOND,
        )
        .await
        .unwrap();
    assert_eq!(rows.rows[0]["vehicle_count"], 40);
}

#[tokio::test]
async fn writes_are_refused_and_the_deadline_cancels() {
    let mut ev = ev_on_postgres();
    ev.templates[0].sql_template =
        Some("WITH x AS (SELECT 1) UPDATE vehicles SET make = 'x'".into());
    let message = PostgresDatasource::connect(&ev)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(message.contains(&ev.templates[0].id), "{message}");

    let mut ev = ev_on_postgres();
    ev.spec.limits.max_rows = 5;
    let db = PostgresDatasource::connect(&ev).await.unwrap();
    let mut all = ev.templates[0].clone();
    all.sql_template = Some("SELECT * FROM vehicles".into());
    let rows = db.query(&all, &Map::new(), SECOND).await.unwrap();
    assert_eq!(rows.rows.len(), 5);
    assert!(rows.truncated);
    let mut slow = all.clone();
    slow.sql_template = Some("SELECT pg_sleep(5)".into());
    let message = db
        .query(&slow, &Map::new(), Duration::from_millis(100))
        .await
        .unwrap_err()
        .to_string();
    assert!(message.contains("deadline"), "{message}");
}

#[tokio::test]
async fn missing_url_variable_is_named() {
    let mut ev = ev_on_postgres();
    ev.spec
        .connection
        .insert("url_env".into(), "SWITCHYARD_NO_SUCH_URL".into());
    let message = PostgresDatasource::connect(&ev)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        message.contains("ev") && message.contains("SWITCHYARD_NO_SUCH_URL"),
        "{message}"
    );
}
