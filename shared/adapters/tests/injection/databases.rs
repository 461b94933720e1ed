//! The databases the suite runs on: SQLite from the demo's files, DuckDB over its CSV files,
//! and on the PostgreSQL and MariaDB servers a database of its own per datasource; and what a database holds, to check that
//! no payload changed it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{json, Map, Value};
use switchyard_adapters::mysql::MysqlDatasource;
use switchyard_adapters::postgres::PostgresDatasource;
use switchyard_adapters::sql::{SqlRows, SqliteDatasource};
use switchyard_adapters::{AdapterError, LocalAdapters};
use switchyard_catalog::template::{Datasource, Template};
use switchyard_contract::adapter::{AdapterInvoker, AdapterStatus};
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls};

use crate::catalog::demo_root;
use crate::layers::request;
use crate::{DEADLINE, NO_VALUES};

const URL_VARIABLE: &str = "SWITCHYARD_TEST_PG_URL";

pub(crate) fn rows_of(rows: &SqlRows) -> Vec<Value> {
    rows.rows.iter().cloned().map(Value::Object).collect()
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Engine {
    Sqlite,
    Postgres,
    Duckdb,
    Mariadb,
}

pub(crate) enum Db {
    Sqlite(SqliteDatasource),
    Postgres(PostgresDatasource),
    Mariadb(MysqlDatasource),
    #[cfg(feature = "duckdb")]
    Duckdb(switchyard_adapters::duckdb::DuckdbDatasource),
}

impl Db {
    pub(crate) async fn query(
        &self,
        template: &Template,
        parameters: &Map<String, Value>,
    ) -> Result<SqlRows, AdapterError> {
        match self {
            Db::Sqlite(db) => db.query(template, parameters, DEADLINE),
            Db::Postgres(db) => db.query(template, parameters, DEADLINE).await,
            Db::Mariadb(db) => db.query(template, parameters, DEADLINE).await,
            #[cfg(feature = "duckdb")]
            Db::Duckdb(db) => db.query(template, parameters, DEADLINE),
        }
    }
}

/// One datasource as the suite serves it: its definition (the connection pointing at the
/// test database), its adapter, and how to read the database's state.
pub(crate) struct Opened {
    pub(crate) datasource: Datasource,
    pub(crate) db: Db,
    pub(crate) state: StateReader,
}

pub(crate) enum StateReader {
    /// The server's catalog and every table's rows, read on a connection of its own.
    Postgres(Client),
    /// The server's catalog and every table's checksum, read on a pool of its own.
    Mariadb(mysql_async::Pool),
    /// Templates reading the catalog (`sqlite_master`, DuckDB's `information_schema`) and
    /// every table; the same templates are added to the served datasource, so the request
    /// layer's own in-memory copy is read the same way.
    Templates(Vec<Template>),
}

fn sql_template(id: &str, sql: &str) -> Template {
    serde_json::from_value(json!({
        "id": id, "description": "the injection suite's reading of the database state",
        "nl_examples": ["state"], "sql_template": sql,
    }))
    .unwrap()
}

pub(crate) async fn open(engine: Engine, datasource: &Datasource) -> Opened {
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
                state: StateReader::Templates(readers),
            }
        }
        #[cfg(feature = "duckdb")]
        Engine::Duckdb => {
            let folder = demo_root().join(datasource.name());
            let mut served = duckdb_twin(datasource)
                .unwrap_or_else(|| panic!("`{}` has no CSV files", datasource.name()));
            let db = switchyard_adapters::duckdb::DuckdbDatasource::open(&served, &folder).unwrap();
            let columns = sql_template(
                "zz_state_schema",
                "SELECT table_name, column_name, data_type FROM information_schema.columns ORDER BY ALL",
            );
            let tables = db
                .query(
                    &sql_template(
                        "tables",
                        "SELECT table_name FROM information_schema.tables ORDER BY table_name",
                    ),
                    &Map::new(),
                    DEADLINE,
                )
                .unwrap();
            let mut readers = vec![columns];
            for row in &tables.rows {
                let table = row["table_name"].as_str().unwrap();
                readers.push(sql_template(
                    &format!("zz_state_{table}"),
                    &format!("SELECT * FROM \"{table}\" ORDER BY ALL"),
                ));
            }
            served.templates.extend(readers.iter().cloned());
            Opened {
                datasource: served,
                db: Db::Duckdb(db),
                state: StateReader::Templates(readers),
            }
        }
        #[cfg(not(feature = "duckdb"))]
        Engine::Duckdb => unreachable!("the DuckDB suite runs with the `duckdb` feature"),
        Engine::Mariadb => {
            let url = crate::mariadb::provision(datasource).await;
            let variable = format!(
                "SWITCHYARD_INJECTION_MYSQL_URL_{}",
                datasource.name().to_ascii_uppercase()
            );
            std::env::set_var(&variable, &url);
            let mut served = datasource.clone();
            served.spec.connection = [("engine", "mysql".to_owned()), ("url_env", variable)]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect();
            let db = MysqlDatasource::connect(&served).await.unwrap();
            Opened {
                datasource: served,
                db: Db::Mariadb(db),
                state: StateReader::Mariadb(mysql_async::Pool::new(url.as_str())),
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

/// `datasource` on DuckDB over the CSV files of its `data` folder (one table per file,
/// named after it), when it has any: the demo's EV rows as `data/vehicles.csv`.
pub(crate) fn duckdb_twin(datasource: &Datasource) -> Option<Datasource> {
    let data = demo_root().join(datasource.name()).join("data");
    let mut files: Vec<String> = std::fs::read_dir(&data)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|f| f.ends_with(".csv"))
        .collect();
    if files.is_empty() {
        return None;
    }
    files.sort();
    let mut twin = datasource.clone();
    twin.spec.connection.clear();
    twin.spec
        .connection
        .insert("engine".into(), "duckdb".into());
    for file in files {
        let table = file.trim_end_matches(".csv").to_owned();
        twin.spec
            .connection
            .insert(format!("table.{table}"), format!("data/{file}"));
    }
    Some(twin)
}

/// What the database holds: its objects and every table's rows (as a count and a digest on
/// PostgreSQL, in full on SQLite).
pub(crate) async fn state(opened: &Opened) -> Vec<(String, Value)> {
    match &opened.state {
        StateReader::Templates(readers) => {
            let mut out = Vec::new();
            for reader in readers {
                let rows = opened.db.query(reader, &Map::new()).await.unwrap();
                out.push((reader.id.clone(), Value::from(rows_of(&rows))));
            }
            out
        }
        StateReader::Postgres(client) => postgres_state(client).await,
        StateReader::Mariadb(pool) => crate::mariadb::state(pool).await,
    }
}

/// The same, read through the request layer's own adapter (SQLite: its in-memory copy).
pub(crate) async fn state_through(
    adapters: &LocalAdapters,
    opened: &Opened,
) -> Option<Vec<(String, Value)>> {
    let StateReader::Templates(readers) = &opened.state else {
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
        assert_eq!(answer.status(), AdapterStatus::Ok, "{answer:?}");
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
    let (script, name) = crate::catalog::seed(datasource);
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
    crate::catalog::with_database(url, &["postgres://", "postgresql://"], database)
        .unwrap_or_else(|| panic!("{URL_VARIABLE} must be a postgres:// URL"))
}
