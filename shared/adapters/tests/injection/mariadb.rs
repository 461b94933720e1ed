//! The suite on MariaDB: each datasource's own database on the test server
//! (`./infra/scripts/mariadb.sh start`, its URL in SWITCHYARD_TEST_MYSQL_URL), seeded once
//! from its seed script, and what the server holds, to check that no payload changed it.

use mysql_async::prelude::Queryable;
use mysql_async::{Pool, Row};
use serde_json::Value;
use switchyard_catalog::template::Datasource;

const URL_VARIABLE: &str = "SWITCHYARD_TEST_MYSQL_URL";

/// The comment a seeded database carries: written last, so a database without it was cut
/// off while seeding and is made again.
const SEEDED: &str = "switchyard injection suite: seeded";

/// The URL of the datasource's own database on the test server, seeded from its seed
/// script and named after the script's hash (a changed seed gets a new one). Concurrent
/// runs take a server-side lock while they check and seed.
pub(crate) async fn provision(datasource: &Datasource) -> String {
    let base = std::env::var(URL_VARIABLE).unwrap_or_else(|_| {
        panic!(
            "{URL_VARIABLE} is not set: start the server with `./infra/scripts/mariadb.sh start` and export \
             {URL_VARIABLE}=mysql://root@127.0.0.1:53306/ev (./infra/scripts/test.sh does both)"
        )
    });
    let (script, name) = crate::catalog::seed(datasource);
    let pool = Pool::new(base.as_str());
    let mut conn = pool.get_conn().await.unwrap();
    let locked: Option<i64> = conn
        .query_first("SELECT GET_LOCK('switchyard_injection_seed', 120)")
        .await
        .unwrap();
    assert_eq!(locked, Some(1), "the seeding lock");
    let comment: Option<String> = conn
        .exec_first(
            "SELECT schema_comment FROM information_schema.schemata WHERE schema_name = ?",
            (&name,),
        )
        .await
        .unwrap();
    if comment.as_deref() != Some(SEEDED) {
        conn.query_drop(format!(
            "DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}; USE {name}"
        ))
        .await
        .unwrap();
        conn.query_drop(&script).await.unwrap();
        conn.query_drop(format!("ALTER DATABASE {name} COMMENT '{SEEDED}'"))
            .await
            .unwrap();
    }
    conn.query_drop("DO RELEASE_LOCK('switchyard_injection_seed')")
        .await
        .unwrap();
    drop(conn);
    pool.disconnect().await.unwrap();
    with_database(&base, &name)
}

/// `url` with its database replaced.
fn with_database(url: &str, database: &str) -> String {
    crate::catalog::with_database(url, &["mysql://"], database)
        .unwrap_or_else(|| panic!("{URL_VARIABLE} must be a mysql:// URL"))
}

/// What the server holds: the database's tables (each table's rows as a checksum), the
/// server's routines, events, users and the global settings a statement could change.
pub(crate) async fn state(pool: &Pool) -> Vec<(String, Value)> {
    let mut conn = pool.get_conn().await.unwrap();
    let mut out = Vec::new();
    for (label, sql) in [
        (
            "objects",
            "SELECT GROUP_CONCAT(CONCAT(table_schema, '.', table_name, ':', table_type) \
             ORDER BY table_schema, table_name) FROM information_schema.tables \
             WHERE table_schema NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')",
        ),
        (
            "routines",
            "SELECT CAST(COUNT(*) AS CHAR) FROM information_schema.routines",
        ),
        ("events", "SELECT CAST(COUNT(*) AS CHAR) FROM information_schema.events"),
        (
            "users",
            "SELECT GROUP_CONCAT(CONCAT(user, '@', host) ORDER BY user, host) FROM mysql.user",
        ),
        (
            "settings",
            "SELECT CONCAT_WS('|', @@global.sql_mode, @@global.read_only, \
             @@global.max_statement_time, @@global.general_log, @@global.event_scheduler)",
        ),
    ] {
        let value: Option<Option<String>> = conn.query_first(sql).await.unwrap();
        out.push((label.to_owned(), Value::from(value.flatten())));
    }
    let tables: Vec<String> = conn
        .query(
            "SELECT table_name FROM information_schema.tables \
             WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE' ORDER BY table_name",
        )
        .await
        .unwrap();
    for table in tables {
        let rows: Vec<Row> = conn
            .query(format!("CHECKSUM TABLE `{table}` EXTENDED"))
            .await
            .unwrap();
        let checksum: Option<u64> = rows[0].get(1);
        out.push((format!("table {table}"), Value::from(checksum)));
    }
    out
}
