//! Schema introspection on a real PostgreSQL server holding the EV sample, started by
//! `infra/scripts/postgres.sh start` (which `infra/scripts/test.sh` runs): the URL is in
//! SWITCHYARD_TEST_PG_URL. The SQLite side is covered by the unit tests in `src/schema.rs`.

use std::path::Path;

use switchyard_adapters::schema::{introspect, introspect_postgres};
use switchyard_core::template::{Catalog, Datasource};
use tokio_postgres::NoTls;

const URL_VARIABLE: &str = "SWITCHYARD_TEST_PG_URL";

fn demo() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo")
}

/// The demo's EV datasource, pointed at the test server.
fn ev_on_postgres() -> Datasource {
    assert!(
        std::env::var_os(URL_VARIABLE).is_some(),
        "{URL_VARIABLE} is not set: start the server with `./infra/scripts/postgres.sh start` and export \
         {URL_VARIABLE}=postgres://postgres@127.0.0.1:55432/ev (./infra/scripts/test.sh does both)"
    );
    let mut ev = Catalog::load(&demo())
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

#[tokio::test]
async fn postgres_catalog_keys_and_samples_match_the_sqlite_reading() {
    let ev = ev_on_postgres();
    let on_server = introspect(&ev, None).await.unwrap().unwrap();
    let catalog = Catalog::load(&demo()).unwrap();
    let on_sqlite = introspect(catalog.datasource("ev").unwrap(), Some(&demo()))
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
