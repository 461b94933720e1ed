//! The SQL adapter on a real PostgreSQL server holding the EV sample, started by
//! `infra/scripts/postgres.sh start` (which `infra/scripts/test.sh` runs): the URL is in
//! SWITCHYARD_TEST_PG_URL. Schema introspection is read against it too.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Map, Value};
use switchyard_adapters::postgres::{to_positional, PostgresDatasource};
use switchyard_adapters::schema::{introspect, introspect_postgres};
use switchyard_catalog::template::{Catalog, Datasource, Template};
use tokio_postgres::NoTls;

mod silent;

const URL_VARIABLE: &str = "SWITCHYARD_TEST_PG_URL";

fn demo_root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo")
}

/// The demo's EV datasource, pointed at the test server.
fn ev_on_postgres() -> Datasource {
    assert!(
        std::env::var_os(URL_VARIABLE).is_some(),
        "{URL_VARIABLE} is not set: start the server with `./infra/scripts/postgres.sh start` and export \
         {URL_VARIABLE}=postgres://postgres@127.0.0.1:55432/ev (./infra/scripts/test.sh does both)"
    );
    let mut ev = Catalog::load(&demo_root())
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
    // Slow without a side effect (the check refuses `pg_sleep` before it runs): rows of
    // vehicles to the fourth power to count, in memory, far past 100 ms.
    let mut slow = all.clone();
    slow.sql_template =
        Some("SELECT count(*) AS n FROM vehicles a, vehicles b, vehicles c, vehicles d".into());
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

#[tokio::test]
async fn postgres_catalog_keys_and_samples_match_the_sqlite_reading() {
    let ev = ev_on_postgres();
    let on_server = introspect(&ev, None).await.unwrap().unwrap();
    let catalog = Catalog::load(&demo_root()).unwrap();
    // The demo serves the EV rows with DuckDB from a CSV file; SQLite loads their seed.
    let mut ev_sqlite = catalog.datasource("ev").unwrap().clone();
    ev_sqlite.spec.connection = [("engine", "sqlite"), ("seed_sql", "data/ev.sql")]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let on_sqlite = introspect(&ev_sqlite, Some(&demo_root()))
        .await
        .unwrap()
        .unwrap();
    // The same seed read by both engines: the same table, keys and summaries; only the
    // type names are the server's.
    assert_eq!(on_server.len(), 1);
    let (server, sqlite) = (&on_server[0], &on_sqlite[0]);
    assert_eq!(
        (server.name.as_str(), server.alias.as_str()),
        ("vehicles", "vehicle")
    );
    assert_eq!(server.primary_key, ["id"]);
    assert_eq!(server.columns.len(), sqlite.columns.len());
    for (server, sqlite) in server.columns.iter().zip(&sqlite.columns) {
        assert_eq!(
            (&server.name, &server.summary),
            (&sqlite.name, &sqlite.summary)
        );
    }
    assert_eq!(server.columns[1].data_type, "text");
    assert_eq!(server.columns[3].data_type, "integer");

    // Keys, odd names and server types, in a transaction no other session sees, rolled back.
    let url = std::env::var(URL_VARIABLE).unwrap();
    let (client, connection) = tokio_postgres::connect(&url, NoTls).await.unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(
            r#"BEGIN;
               CREATE TABLE schema_test_parents (code text, n int, PRIMARY KEY (n, code));
               CREATE TABLE "schema_test ""odd"" children" ("we""ird" text, amount numeric(10,2),
                   at timestamp, p int, c text, FOREIGN KEY (p, c) REFERENCES schema_test_parents);
               INSERT INTO schema_test_parents VALUES ('a', 1);
               INSERT INTO "schema_test ""odd"" children" VALUES
                   ('b', 4500000.00, '2024-01-02 10:00', 1, 'a'), ('a', 1.50, NULL, NULL, NULL),
                   ('b', NULL, '2023-12-31 23:59', NULL, NULL);"#,
        )
        .await
        .unwrap();
    let tables = introspect_postgres(&client, "ev").await;
    client.batch_execute("ROLLBACK").await.unwrap();
    let tables = tables.unwrap();
    let names: Vec<&str> = tables.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            r#"schema_test "odd" children"#,
            "schema_test_parents",
            "vehicles"
        ]
    );
    assert_eq!(
        tables[0].flatten(),
        "Table: schema_test \"odd\" children (Alias: schema test \"odd\" children). Columns: \
         we\"ird: text, samples: b, a; amount: numeric(10,2), range: 1.5 to 4500000; \
         at: timestamp without time zone, range: 2023-12-31 23:59:00 to 2024-01-02 10:00:00; \
         p: integer, range: 1 to 1; c: text, samples: a. Primary Key: none. \
         Foreign Keys: p, c -> schema_test_parents(n, code)."
    );
    assert_eq!(tables[1].primary_key, ["n", "code"]);
}

/// The EV datasource at `url` (set in `variable`), with a deadline of `timeout_ms`.
fn ev_at(variable: &str, url: String, timeout_ms: u64) -> Datasource {
    std::env::set_var(variable, url);
    let mut ev = ev_on_postgres();
    ev.spec.connection.insert("url_env".into(), variable.into());
    ev.spec.limits.timeout_ms = timeout_ms;
    ev
}

fn test_url() -> String {
    std::env::var(URL_VARIABLE).unwrap()
}

/// How long a test waits for a call that should have failed at its deadline.
const HANG: Duration = Duration::from_secs(10);

/// What a deadline may be overrun by (the server's own cancel has a grace).
const MARGIN: Duration = Duration::from_millis(1500);

#[tokio::test]
async fn connecting_to_a_server_that_never_answers_fails_at_the_datasource_timeout() {
    let ev = ev_on_postgres();
    let port = silent::silent_port().await;
    let ev = ev_at(
        "SWITCHYARD_TEST_PG_SILENT_URL",
        silent::url_at(&test_url(), port),
        ev.spec.limits.timeout_ms.min(500),
    );
    let started = std::time::Instant::now();
    let outcome = tokio::time::timeout(HANG, PostgresDatasource::connect(&ev))
        .await
        .expect("connect still waiting after 10 s");
    let message = outcome.err().unwrap().to_string();
    assert!(
        message.contains("datasource `ev`") && message.contains("500 ms"),
        "{message}"
    );
    assert!(started.elapsed() < Duration::from_millis(500) + MARGIN);
}

#[tokio::test]
async fn a_server_gone_silent_fails_the_call_at_its_deadline() {
    let ev = ev_on_postgres();
    let proxy = silent::Proxy::start(silent::address_of(&test_url())).await;
    let ev = ev_at(
        "SWITCHYARD_TEST_PG_PROXY_URL",
        silent::url_at(&test_url(), proxy.port),
        ev.spec.limits.timeout_ms,
    );
    let db = PostgresDatasource::connect(&ev).await.unwrap();
    let count = template(&ev, "vehicles_count_by_make");
    let tesla = params(json!({"make": "Tesla"}));
    db.query(count, &tesla, SECOND).await.unwrap();
    proxy.freeze();
    // The open connection hangs, then a new one does.
    for _ in 0..2 {
        let deadline = Duration::from_millis(500);
        let started = std::time::Instant::now();
        let outcome = tokio::time::timeout(HANG, db.query(count, &tesla, deadline))
            .await
            .expect("the call still waiting after 10 s");
        let message = outcome.unwrap_err().to_string();
        assert!(
            message.contains("datasource `ev`") && message.contains("deadline of 500 ms"),
            "{message}"
        );
        assert!(
            started.elapsed() < deadline + MARGIN,
            "failed after {:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn a_dropped_connection_is_opened_again() {
    let name = format!("switchyard_reconnect_{}", std::process::id());
    let ev = ev_at(
        "SWITCHYARD_TEST_PG_RECONNECT_URL",
        format!("{}?application_name={name}", test_url()),
        5000,
    );
    let db = PostgresDatasource::connect(&ev).await.unwrap();
    let count = template(&ev, "vehicles_count_by_make");
    let tesla = params(json!({"make": "Tesla"}));
    let before = db.query(count, &tesla, SECOND).await.unwrap();
    let (admin, connection) = tokio_postgres::connect(&test_url(), NoTls).await.unwrap();
    tokio::spawn(connection);
    for _ in 0..2 {
        let terminated = admin
            .query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
                &[&name],
            )
            .await
            .unwrap();
        assert_eq!(terminated.len(), 1);
        // The next call answers, on a new connection.
        let after = db.query(count, &tesla, SECOND).await.unwrap();
        assert_eq!(after, before);
    }
}

/// The test server's URL for the role that may only connect over TLS (as on RDS with
/// `rds.force_ssl`), at `host`, with `settings` appended; and the test CA's file.
fn tls_only_url(host: &str, settings: &str) -> String {
    let address = silent::address_of(&test_url());
    let port = address.rsplit(':').next().unwrap().to_string();
    format!("postgres://tls_only@{host}:{port}/ev{settings}")
}

fn test_ca() -> String {
    std::env::var("SWITCHYARD_TEST_PG_CA").expect(
        "SWITCHYARD_TEST_PG_CA is not set: ./infra/scripts/test.sh exports the test CA of \
         `postgres.sh start` (/tmp/switchyard-pg-55432/tls/ca.pem)",
    )
}

#[tokio::test]
async fn a_server_that_forces_tls_is_reached_with_a_verified_certificate() {
    // Plain text is refused by the server, as RDS refuses it with force_ssl.
    let plain = ev_at(
        "SWITCHYARD_TEST_PG_PLAIN_URL",
        tls_only_url("127.0.0.1", ""),
        2000,
    );
    let message = PostgresDatasource::connect(&plain)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(message.contains("no encryption"), "{message}");

    let settings = format!("?sslmode=verify-full&sslrootcert={}", test_ca());
    let ev = ev_at(
        "SWITCHYARD_TEST_PG_TLS_URL",
        tls_only_url("127.0.0.1", &settings),
        2000,
    );
    let db = PostgresDatasource::connect(&ev).await.unwrap();
    let mut encrypted = ev.templates[0].clone();
    encrypted.sql_template =
        Some("SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()".into());
    let rows = db.query(&encrypted, &Map::new(), SECOND).await.unwrap();
    assert_eq!(rows.rows[0]["ssl"], true, "{:?}", rows.rows);
    assert!(
        rows.rows[0]["version"].as_str().unwrap().starts_with("TLS"),
        "{:?}",
        rows.rows
    );
    let answer = db
        .query(
            template(&ev, "vehicles_count_by_make"),
            &params(json!({"make": "Tesla"})),
            SECOND,
        )
        .await
        .unwrap();
    assert!(answer.rows[0]["vehicle_count"].as_i64().unwrap() > 0);
}

#[tokio::test]
async fn a_certificate_that_does_not_verify_is_refused_and_the_error_says_where_to_look() {
    // `require` verifies too: without the test CA, the chain reaches no trusted root.
    let untrusted = ev_at(
        "SWITCHYARD_TEST_PG_UNTRUSTED_URL",
        tls_only_url("127.0.0.1", "?sslmode=require"),
        2000,
    );
    let message = PostgresDatasource::connect(&untrusted)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        message.contains("UnknownIssuer") && message.contains("`sslrootcert`"),
        "{message}"
    );
    // The certificate names 127.0.0.1 alone: "localhost" is another host.
    let settings = format!("?sslmode=verify-full&sslrootcert={}", test_ca());
    let other_name = ev_at(
        "SWITCHYARD_TEST_PG_OTHER_NAME_URL",
        tls_only_url("localhost", &settings),
        2000,
    );
    let message = PostgresDatasource::connect(&other_name)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        message.contains("not valid for name \"localhost\""),
        "{message}"
    );
    // A mode that would fall back to plain text is refused before any connection.
    let prefer = ev_at(
        "SWITCHYARD_TEST_PG_PREFER_URL",
        tls_only_url("127.0.0.1", "?sslmode=prefer"),
        2000,
    );
    let message = PostgresDatasource::connect(&prefer)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        message.contains("SWITCHYARD_TEST_PG_PREFER_URL") && message.contains("sslmode=prefer"),
        "{message}"
    );
}
