//! The SQL adapter on a real MariaDB server holding the EV sample, started by
//! `infra/scripts/mariadb.sh start` (which `infra/scripts/test.sh` runs): the URL is in
//! SWITCHYARD_TEST_MYSQL_URL. Schema introspection is read against it too.

use std::path::Path;
use std::time::Duration;

use mysql_async::prelude::Queryable;
use serde_json::{json, Map, Value};
use sqlparser::dialect::MySqlDialect;
use switchyard_adapters::guard::{check_read_only, Engine};
use switchyard_adapters::mysql::{Flavor, MysqlDatasource};
use switchyard_adapters::placeholders::{rewrite, Style};
use switchyard_adapters::schema::{introspect, introspect_mysql};
use switchyard_catalog::template::{Catalog, Datasource, Template};

mod silent;

const URL_VARIABLE: &str = "SWITCHYARD_TEST_MYSQL_URL";

fn demo_root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo")
}

fn url() -> String {
    std::env::var(URL_VARIABLE).unwrap_or_else(|_| {
        panic!(
            "{URL_VARIABLE} is not set: start the server with `./infra/scripts/mariadb.sh start` and export \
             {URL_VARIABLE}=mysql://root@127.0.0.1:53306/ev (./infra/scripts/test.sh does both)"
        )
    })
}

/// The demo's EV datasource, pointed at the test server.
fn ev_on_mariadb() -> Datasource {
    url();
    let mut ev = Catalog::load(&demo_root())
        .unwrap()
        .datasource("ev")
        .unwrap()
        .clone();
    ev.spec.connection = [("engine", "mysql"), ("url_env", URL_VARIABLE)]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    ev
}

fn template<'a>(datasource: &'a Datasource, id: &str) -> &'a Template {
    datasource.templates.iter().find(|t| t.id == id).unwrap()
}

fn with_sql(datasource: &Datasource, sql: &str) -> Template {
    let mut template = datasource.templates[0].clone();
    template.sql_template = Some(sql.into());
    template
}

fn params(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

const SECOND: Duration = Duration::from_secs(2);

#[test]
fn placeholders_become_question_marks_bound_in_order() {
    let (sql, names) = rewrite(
        &MySqlDialect {},
        Style::QuestionMark,
        "t",
        "SELECT * FROM v WHERE make = :make AND (:county IS NULL OR county = :county) LIMIT :limit",
    )
    .unwrap();
    // A name used twice is bound twice: `?` has no numbers.
    assert_eq!(names, ["make", "county", "county", "limit"]);
    assert_eq!(
        sql,
        "SELECT * FROM v WHERE make = ? AND (? IS NULL OR county = ?) LIMIT ?"
    );
    // Strings, backquoted names and escaped quotes are not placeholders.
    let (sql, names) = rewrite(
        &MySqlDialect {},
        Style::QuestionMark,
        "t",
        r"SELECT 'a:b\':c', `x:y` FROM v WHERE a = :a",
    )
    .unwrap();
    assert_eq!(names, ["a"]);
    assert_eq!(sql, r"SELECT 'a:b\':c', `x:y` FROM v WHERE a = ?");
}

#[test]
fn what_mysql_runs_but_the_parser_skips_is_refused() {
    for (sql, expected) in [
        ("SELECT 1 /*! , SLEEP(5) */", "runs as SQL"),
        ("SELECT 1 /*M!100000 , SLEEP(5) */", "runs as SQL"),
        ("SELECT @a := 1", "session variable"),
        ("SELECT SLEEP(1)", "side effects"),
        ("SELECT BENCHMARK(1000000, MD5('a'))", "side effects"),
        ("SELECT LOAD_FILE('/etc/passwd')", "side effects"),
        ("SELECT GET_LOCK('x', 1)", "side effects"),
        (
            "SELECT * FROM vehicles INTO OUTFILE '/tmp/x'",
            "sql_template",
        ),
        ("SELECT * FROM vehicles LOCK IN SHARE MODE", "sql_template"),
        ("DO SLEEP(1)", "sql_template"),
        ("HANDLER vehicles OPEN", "sql_template"),
    ] {
        let error = check_read_only("t", sql, Engine::Mysql)
            .unwrap_err()
            .to_string();
        assert!(error.contains(expected), "{sql}: {error}");
    }
    // Optimizer hints and ordinary comments are only comments.
    check_read_only(
        "t",
        "SELECT /*+ MAX_EXECUTION_TIME(10) */ 1 /* x */ # y",
        Engine::Mysql,
    )
    .unwrap();
}

#[tokio::test]
async fn answers_from_the_server_with_typed_bindings() {
    let ev = ev_on_mariadb();
    let db = MysqlDatasource::connect(&ev).await.unwrap();
    assert_eq!(db.flavor(), Flavor::Mariadb);
    let rows = db
        .query(
            template(&ev, "vehicles_count_by_make_in_county"),
            &params(json!({"make": "Tesla", "county": "King"})),
            SECOND,
        )
        .await
        .unwrap();
    assert_eq!(rows.rows[0]["vehicle_count"], 40);
    // An integer bound where the server expects one (LIMIT takes no text).
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
    // A value that is not of the declared type is refused naming the parameter, before
    // the server's loose casts (`'3abc'` is 3 to MySQL) see it.
    let error = db
        .query(
            template(&ev, "makes_top_by_registrations"),
            &params(json!({"limit": "3abc"})),
            SECOND,
        )
        .await
        .unwrap_err();
    assert!(
        error.to_string().starts_with("parameter `limit`"),
        "{error}"
    );
    // DECIMAL (AVG) arrives as a number; `||` concatenates in the adapter's sql_mode.
    let rows = db
        .query(
            &with_sql(
                &ev,
                "SELECT AVG(electric_range) AS average, make || '/' || model AS name \
                 FROM vehicles WHERE id = 1 GROUP BY make, model",
            ),
            &Map::new(),
            SECOND,
        )
        .await
        .unwrap();
    assert_eq!(rows.rows[0]["average"], 20.0);
    assert_eq!(rows.rows[0]["name"], "BMW/330e");
    // The same portable template answers as on the other engines.
    let rows = db
        .query(
            template(&ev, "electric_range_average_by_make"),
            &params(json!({"make": "Tesla"})),
            SECOND,
        )
        .await
        .unwrap();
    assert!(rows.rows[0]["average_range"].is_i64(), "{rows:?}");
}

#[tokio::test]
async fn hostile_values_are_bound_and_change_nothing() {
    let ev = ev_on_mariadb();
    let db = MysqlDatasource::connect(&ev).await.unwrap();
    let count = template(&ev, "vehicles_count_by_make_in_county");
    for make in [
        "Tesla'; DROP TABLE vehicles; --",
        r"Tesla\' OR 1=1 -- ",
        "Tesla' OR '1'='1",
    ] {
        let rows = db
            .query(
                count,
                &params(json!({"make": make, "county": "King"})),
                SECOND,
            )
            .await
            .unwrap();
        assert_eq!(rows.rows[0]["vehicle_count"], 0, "{make:?}");
    }
    let rows = db
        .query(
            count,
            &params(json!({"make": "Tesla", "county": "King"})),
            SECOND,
        )
        .await
        .unwrap();
    assert_eq!(rows.rows[0]["vehicle_count"], 40);
    // A NUL byte is bound like any other character; whether "Tesla\0" equals "Tesla" is the
    // collation's answer, not the driver's: utf8mb4_unicode_ci (mariadb.sh's) ignores control
    // characters, as Unicode's collation algorithm says; a binary one does not. Either way
    // it is one of the two counts, never an error or more rows.
    let rows = db
        .query(
            count,
            &params(json!({"make": "Tesla\0", "county": "King"})),
            SECOND,
        )
        .await
        .unwrap();
    let nul = &rows.rows[0]["vehicle_count"];
    assert!(*nul == 0 || *nul == 40, "{nul:?}");
}

#[tokio::test]
async fn writes_are_refused_by_the_check_and_the_server_and_the_deadline_cancels() {
    let mut ev = ev_on_mariadb();
    ev.templates[0].sql_template = Some("UPDATE vehicles SET make = 'x'".into());
    let message = MysqlDatasource::connect(&ev)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(message.contains(&ev.templates[0].id), "{message}");

    let mut ev = ev_on_mariadb();
    ev.spec.limits.max_rows = 5;
    let db = MysqlDatasource::connect(&ev).await.unwrap();
    // Behind the parser, the server's own guard: a stored function the check cannot see
    // into tries to write, and the read-only transaction refuses it.
    let admin = mysql_async::Pool::new(url().as_str());
    let mut conn = admin.get_conn().await.unwrap();
    let (log, function) = (
        format!("writes_{}", std::process::id()),
        format!("sneaky_{}", std::process::id()),
    );
    conn.query_drop(format!("CREATE TABLE {log} (n INT)"))
        .await
        .unwrap();
    conn.query_drop(format!(
        "CREATE FUNCTION {function}() RETURNS INT MODIFIES SQL DATA \
         BEGIN INSERT INTO {log} VALUES (1); RETURN 1; END"
    ))
    .await
    .unwrap();
    let refused = db
        .query(
            &with_sql(&ev, &format!("SELECT {function}() AS x")),
            &Map::new(),
            SECOND,
        )
        .await;
    let written: Option<i64> = conn
        .query_first(format!("SELECT COUNT(*) FROM {log}"))
        .await
        .unwrap();
    conn.query_drop(format!("DROP FUNCTION {function}"))
        .await
        .unwrap();
    conn.query_drop(format!("DROP TABLE {log}")).await.unwrap();
    let message = refused.unwrap_err().to_string();
    assert!(message.contains("READ ONLY"), "{message}");
    assert_eq!(written, Some(0));
    // The session's sql_mode is the adapter's, whatever the server's global one.
    let rows = db
        .query(
            &with_sql(&ev, "SELECT @@sql_mode AS mode"),
            &Map::new(),
            SECOND,
        )
        .await
        .unwrap();
    let mode = rows.rows[0]["mode"].as_str().unwrap();
    assert!(
        mode.contains("PIPES_AS_CONCAT") && !mode.contains("ANSI_QUOTES"),
        "{mode}"
    );
    let rows = db
        .query(
            &with_sql(&ev, "SELECT * FROM vehicles"),
            &Map::new(),
            SECOND,
        )
        .await
        .unwrap();
    assert_eq!(rows.rows.len(), 5);
    assert!(rows.truncated);
    // 200^4 rows to count: far past 100 ms, stopped by the server at the deadline.
    let slow = with_sql(
        &ev,
        "SELECT COUNT(*) AS n FROM vehicles a, vehicles b, vehicles c, vehicles d",
    );
    let started = std::time::Instant::now();
    let message = db
        .query(&slow, &Map::new(), Duration::from_millis(100))
        .await
        .unwrap_err()
        .to_string();
    assert!(message.contains("deadline"), "{message}");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "stopped after {:?}",
        started.elapsed()
    );
    // The connection serves the next question.
    let rows = db
        .query(
            template(&ev, "vehicles_count_by_make"),
            &params(json!({"make": "Tesla"})),
            SECOND,
        )
        .await
        .unwrap();
    assert!(rows.rows[0]["vehicle_count"].as_i64().unwrap() > 0);
}

#[tokio::test]
async fn bad_connection_settings_are_named_without_the_password() {
    let mut ev = ev_on_mariadb();
    ev.spec
        .connection
        .insert("url_env".into(), "SWITCHYARD_NO_SUCH_URL".into());
    let message = MysqlDatasource::connect(&ev)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        message.contains("ev") && message.contains("SWITCHYARD_NO_SUCH_URL"),
        "{message}"
    );
    for (variable, url) in [
        (
            "SWITCHYARD_TEST_MYSQL_BAD_URL",
            "postgres://root:s3cret@127.0.0.1/ev",
        ),
        // Nothing listens on port 9: refused at once.
        (
            "SWITCHYARD_TEST_MYSQL_CLOSED_URL",
            "mysql://root:s3cret@127.0.0.1:9/ev",
        ),
    ] {
        std::env::set_var(variable, url);
        ev.spec.connection.insert("url_env".into(), variable.into());
        let message = MysqlDatasource::connect(&ev)
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(
            message.contains(variable) && !message.contains("s3cret"),
            "{message}"
        );
    }
}

#[tokio::test]
async fn mariadb_catalog_keys_and_samples_match_the_sqlite_reading() {
    let ev = ev_on_mariadb();
    let on_server = introspect(&ev, None).await.unwrap().unwrap();
    let mut ev_sqlite = Catalog::load(&demo_root())
        .unwrap()
        .datasource("ev")
        .unwrap()
        .clone();
    ev_sqlite.spec.connection = [("engine", "sqlite"), ("seed_sql", "data/ev.sql")]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let on_sqlite = introspect(&ev_sqlite, Some(&demo_root()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(on_server.len(), 1);
    let (server, sqlite) = (&on_server[0], &on_sqlite[0]);
    assert_eq!(server.name, "vehicles");
    assert_eq!(server.primary_key, ["id"]);
    assert_eq!(server.columns.len(), sqlite.columns.len());
    for (server, sqlite) in server.columns.iter().zip(&sqlite.columns) {
        assert_eq!(
            (&server.name, &server.summary),
            (&sqlite.name, &sqlite.summary)
        );
    }
    assert_eq!(server.columns[1].data_type, "text");
    assert_eq!(server.columns[3].data_type, "int(11)");

    // Keys and odd names in a database of their own (MySQL's DDL is not transactional).
    let admin = mysql_async::Pool::new(url().as_str());
    let mut conn = admin.get_conn().await.unwrap();
    let database = format!("schema_test_{}", std::process::id());
    conn.query_drop(format!(
        "DROP DATABASE IF EXISTS {database}; CREATE DATABASE {database}; USE {database}; \
         CREATE TABLE parents (code VARCHAR(8), n INT, PRIMARY KEY (n, code)); \
         CREATE TABLE `odd ``name`` children` (`we``ird` TEXT, amount DECIMAL(10,2), \
             at DATETIME, p INT, c VARCHAR(8), FOREIGN KEY (p, c) REFERENCES parents (n, code)); \
         INSERT INTO parents VALUES ('a', 1); \
         INSERT INTO `odd ``name`` children` VALUES \
             ('b', 4500000.00, '2024-01-02 10:00', 1, 'a'), ('a', 1.50, NULL, NULL, NULL), \
             ('b', NULL, '2023-12-31 23:59', NULL, NULL);"
    ))
    .await
    .unwrap();
    let tables = introspect_mysql(&mut conn, "ev").await;
    conn.query_drop(format!("DROP DATABASE {database}"))
        .await
        .unwrap();
    let tables = tables.unwrap();
    let names: Vec<&str> = tables.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["odd `name` children", "parents"]);
    assert_eq!(
        tables[0].flatten(),
        "Table: odd `name` children (Alias: odd `name` children). Columns: \
         we`ird: text, samples: b, a; amount: decimal(10,2), range: 1.5 to 4500000; \
         at: datetime, range: 2023-12-31 23:59:00 to 2024-01-02 10:00:00; \
         p: int(11), range: 1 to 1; c: varchar(8), samples: a. Primary Key: none. \
         Foreign Keys: p, c -> parents(n, code)."
    );
    assert_eq!(tables[1].primary_key, ["n", "code"]);
}

/// The EV datasource at `url` (set in `variable`), with a deadline of `timeout_ms`.
fn ev_at(variable: &str, url: String, timeout_ms: u64) -> Datasource {
    std::env::set_var(variable, url);
    let mut ev = ev_on_mariadb();
    ev.spec.connection.insert("url_env".into(), variable.into());
    ev.spec.limits.timeout_ms = timeout_ms;
    ev
}

/// How long a test waits for a call that should have failed at its deadline.
const HANG: Duration = Duration::from_secs(10);

/// What a deadline may be overrun by (the server's own cancel has a second's grace).
const MARGIN: Duration = Duration::from_millis(1500);

#[tokio::test]
async fn connecting_to_a_server_that_never_answers_fails_at_the_datasource_timeout() {
    let port = silent::silent_port().await;
    let ev = ev_at(
        "SWITCHYARD_TEST_MYSQL_SILENT_URL",
        silent::url_at(&url(), port),
        500,
    );
    let started = std::time::Instant::now();
    let outcome = tokio::time::timeout(HANG, MysqlDatasource::connect(&ev))
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
    let proxy = silent::Proxy::start(silent::address_of(&url())).await;
    let ev = ev_at(
        "SWITCHYARD_TEST_MYSQL_PROXY_URL",
        silent::url_at(&url(), proxy.port),
        5000,
    );
    let db = MysqlDatasource::connect(&ev).await.unwrap();
    let count = template(&ev, "vehicles_count_by_make");
    let tesla = params(json!({"make": "Tesla"}));
    db.query(count, &tesla, SECOND).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    proxy.freeze();
    // The pooled connection hangs, then a new one does (the pool's acquire).
    for _ in 0..3 {
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

/// The test server's URL for the user that may only connect over TLS (`REQUIRE SSL`), at
/// `host`, with `settings` appended.
fn tls_only_url(host: &str, settings: &str) -> String {
    let address = silent::address_of(&url());
    let port = address.rsplit(':').next().unwrap().to_string();
    format!("mysql://tls_only@{host}:{port}/ev{settings}")
}

fn test_ca() -> String {
    std::env::var("SWITCHYARD_TEST_MYSQL_CA").expect(
        "SWITCHYARD_TEST_MYSQL_CA is not set: ./infra/scripts/test.sh exports the test CA of \
         `mariadb.sh start` (/tmp/switchyard-mariadb-53306/tls/ca.pem)",
    )
}

#[tokio::test]
async fn a_server_that_requires_tls_is_reached_with_a_verified_certificate() {
    let plain = ev_at(
        "SWITCHYARD_TEST_MYSQL_PLAIN_URL",
        tls_only_url("127.0.0.1", ""),
        2000,
    );
    let message = MysqlDatasource::connect(&plain)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(message.contains("Access denied"), "{message}");

    let settings = format!("?ssl-mode=VERIFY_IDENTITY&ssl-ca={}", test_ca());
    let ev = ev_at(
        "SWITCHYARD_TEST_MYSQL_TLS_URL",
        tls_only_url("127.0.0.1", &settings),
        2000,
    );
    let db = MysqlDatasource::connect(&ev).await.unwrap();
    let version = with_sql(
        &ev,
        "SELECT VARIABLE_VALUE AS v FROM information_schema.SESSION_STATUS \
         WHERE VARIABLE_NAME = 'Ssl_version'",
    );
    let rows = db.query(&version, &Map::new(), SECOND).await.unwrap();
    assert!(
        rows.rows[0]["v"].as_str().unwrap().starts_with("TLS"),
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
    // REQUIRED verifies too: without the test CA, the chain reaches no trusted root.
    let untrusted = ev_at(
        "SWITCHYARD_TEST_MYSQL_UNTRUSTED_URL",
        tls_only_url("127.0.0.1", "?ssl-mode=REQUIRED"),
        2000,
    );
    let message = MysqlDatasource::connect(&untrusted)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        message.contains("UnknownIssuer") && message.contains("`ssl-ca`"),
        "{message}"
    );
    let settings = format!("?ssl-mode=VERIFY_IDENTITY&ssl-ca={}", test_ca());
    let other_name = ev_at(
        "SWITCHYARD_TEST_MYSQL_OTHER_NAME_URL",
        tls_only_url("localhost", &settings),
        2000,
    );
    let message = MysqlDatasource::connect(&other_name)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        message.contains("not valid for name \"localhost\""),
        "{message}"
    );
    // The driver's own switch that turns verification off is refused, naming it.
    let loose = ev_at(
        "SWITCHYARD_TEST_MYSQL_LOOSE_URL",
        tls_only_url("127.0.0.1", "?require_ssl=true&verify_ca=false"),
        2000,
    );
    let message = MysqlDatasource::connect(&loose)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        message.contains("SWITCHYARD_TEST_MYSQL_LOOSE_URL") && message.contains("`require_ssl`"),
        "{message}"
    );
}

#[tokio::test]
async fn calls_hung_mid_statement_leave_the_pool_serving() {
    let proxy = silent::Proxy::start(silent::address_of(&url())).await;
    let ev = ev_at(
        "SWITCHYARD_TEST_MYSQL_HUNG_POOL_URL",
        silent::url_at(&url(), proxy.port),
        5000,
    );
    let db = MysqlDatasource::connect(&ev).await.unwrap();
    // A statement that runs long enough to hang in: rows of vehicles to the fourth power, counted.
    let slow = with_sql(
        &ev,
        "SELECT count(*) AS n FROM vehicles a, vehicles b, vehicles c, vehicles d",
    );
    let deadline = Duration::from_millis(800);
    let none = Map::new();
    let call = || db.query(&slow, &none, deadline);
    // As many calls as the pool has connections, each hung mid-statement: the network
    // stops while they run, and the server's answers never come.
    let freeze = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        proxy.freeze();
    };
    let (a, b, c, d, ()) = tokio::join!(call(), call(), call(), call(), freeze);
    for outcome in [a, b, c, d] {
        let message = outcome.unwrap_err().to_string();
        assert!(message.contains("deadline of 800 ms"), "{message}");
    }
    // The server answers new connections again: so does the datasource.
    proxy.thaw_new_connections();
    let count = template(&ev, "vehicles_count_by_make");
    let rows = tokio::time::timeout(
        HANG,
        db.query(count, &params(json!({"make": "Tesla"})), SECOND),
    )
    .await
    .expect("the call still waiting after 10 s")
    .unwrap();
    assert!(rows.rows[0]["vehicle_count"].as_i64().unwrap() > 0);
}
