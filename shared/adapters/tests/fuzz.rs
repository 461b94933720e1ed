//! Bounded property-based fuzzing of the adapters' two guards against hostile input:
//!
//! - the SQL read-only check (`sql::check_read_only`): generated writes in many disguises
//!   (case, whitespace, comments, CTEs, stacked statements, `SELECT … INTO`, row locks) are
//!   always refused; arbitrary edits of them are accepted only when SQLite itself says
//!   every statement it sees is read-only; random and deeply nested text never panics it;
//! - the HTTP adapter's placeholders: hostile parameter values, sent to a server on
//!   127.0.0.1 that echoes the request, never change the scheme, host or port, stay inside
//!   their one path segment, and stay inside their one query parameter.
//!
//! Each property runs a bounded number of cases with a fixed seed (a few seconds in the
//! dev profile); `PROPTEST_CASES` and `PROPTEST_RNG_SEED` run more, or other, cases
//! (`infra/scripts/fuzz.sh`).

use std::sync::OnceLock;
use std::time::Duration;

use axum::extract::Request;
use axum::Json;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use rusqlite::Connection;
use serde_json::{json, Map, Value};
use switchyard_adapters::http::HttpDatasource;
use switchyard_adapters::sql::{check_read_only, Engine};
use switchyard_adapters::AdapterError;
use switchyard_core::template::{Datasource, Template};

/// `cases` cases with a fixed seed, unless `PROPTEST_CASES` / `PROPTEST_RNG_SEED` say
/// otherwise; no regression files (minimal failures become plain `#[test]`s).
fn config(cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = cases;
    }
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(0x5717_c4a2_d5ee_d002);
    }
    config.failure_persistence = None;
    config
}

// ---------------------------------------------------------------------------------------
// SQL.

/// Statements that write or change state, as tokens separated by single spaces (string
/// literals hold no spaces, so any separator may replace a space).
const WRITES: &[&str] = &[
    "INSERT INTO t ( a ) VALUES ( 1 )",
    "INSERT INTO t SELECT * FROM u",
    "INSERT OR REPLACE INTO t VALUES ( 1 , 2 )",
    "REPLACE INTO t VALUES ( 1 , 2 )",
    "INSERT INTO t DEFAULT VALUES",
    "UPDATE t SET a = 1 WHERE b = 2",
    "UPDATE t SET a = ( SELECT max ( a ) FROM u )",
    "DELETE FROM t",
    "DELETE FROM t WHERE a IN ( SELECT a FROM u )",
    "DROP TABLE t",
    "DROP TABLE IF EXISTS t",
    "DROP INDEX i",
    "DROP VIEW v",
    "CREATE TABLE z ( a INT )",
    "CREATE TABLE z AS SELECT * FROM t",
    "CREATE TEMP TABLE z AS SELECT 1",
    "CREATE VIEW w AS SELECT 1",
    "CREATE INDEX j ON t ( a )",
    "CREATE TRIGGER g AFTER INSERT ON t BEGIN DELETE FROM u ; END",
    "ALTER TABLE t ADD COLUMN c INT",
    "ALTER TABLE t RENAME TO z",
    "ATTACH DATABASE 'x.db' AS x",
    "ATTACH 'file:x?mode=rwc' AS x",
    "DETACH DATABASE x",
    "PRAGMA writable_schema = 1",
    "PRAGMA journal_mode = DELETE",
    "PRAGMA user_version = 3",
    "PRAGMA query_only = 0",
    "VACUUM",
    "VACUUM INTO 'x.db'",
    "REINDEX",
    "ANALYZE t",
    "COPY t FROM '/tmp/x'",
    "COPY t TO '/tmp/x'",
    "COPY ( SELECT 1 ) TO PROGRAM 'rm'",
    "GRANT ALL ON t TO PUBLIC",
    "REVOKE ALL ON t FROM PUBLIC",
    "TRUNCATE t",
    "TRUNCATE TABLE t",
    "MERGE INTO t USING u ON t.a = u.a WHEN MATCHED THEN DELETE",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "SAVEPOINT s",
    "RELEASE s",
    "SET search_path = x",
    "SET ROLE admin",
    "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
    "RESET ALL",
    "DISCARD ALL",
    "LOCK TABLE t",
    "LISTEN c",
    "NOTIFY c",
    "CALL p ( )",
    "DO $$BEGIN\nNULL;\nEND$$",
    "PREPARE p AS DELETE FROM t",
    "EXECUTE p",
    "DEALLOCATE p",
    "DECLARE c CURSOR FOR SELECT 1",
    "EXPLAIN ANALYZE DELETE FROM t",
    "SELECT 1 INTO z",
    "SELECT * INTO z FROM t",
    "SELECT * INTO TEMP z FROM t",
    "SELECT * FROM t FOR UPDATE",
    "SELECT * FROM t FOR SHARE",
    "SELECT * FROM t FOR NO KEY UPDATE NOWAIT",
    "WITH x AS ( DELETE FROM t RETURNING * ) SELECT * FROM x",
    "WITH x AS ( INSERT INTO t VALUES ( 1 ) RETURNING * ) SELECT * FROM x",
    "WITH x AS ( UPDATE t SET a = 1 RETURNING * ) SELECT * FROM x",
    "WITH RECURSIVE x AS ( DELETE FROM t RETURNING a ) SELECT a FROM x",
    "WITH x AS ( SELECT 1 ) DELETE FROM t",
    "WITH x AS ( SELECT 1 ) INSERT INTO t SELECT * FROM x",
    "WITH x AS ( SELECT 1 ) UPDATE t SET a = 1",
    "SELECT 1 ; DELETE FROM t",
    "DELETE FROM t ; SELECT 1",
    "SELECT 1 ; ; DROP TABLE t",
    "SELECT 1 ; DROP TABLE t --",
    "SELECT a FROM t ; INSERT INTO t VALUES ( 1 ) ;",
];

/// Statements that write, built around a write or a lock: a write stacked after a query,
/// `SELECT … INTO` and row locks anywhere in the query.
fn wrapped_write() -> impl Strategy<Value = String> {
    let write = prop::sample::select(WRITES);
    prop_oneof![
        3 => write.clone().prop_map(str::to_owned),
        1 => write.clone().prop_map(|w| format!("SELECT 1 ; {w}")),
        1 => write.prop_map(|w| format!("SELECT a FROM t ; {w} ;")),
        1 => Just("SELECT 1 INTO z UNION SELECT 2".to_owned()),
        1 => Just("( SELECT 1 INTO z )".to_owned()),
        1 => Just("( SELECT * INTO z FROM t ) UNION ALL SELECT * FROM t".to_owned()),
        1 => Just("SELECT * FROM ( SELECT * FROM t FOR UPDATE ) s".to_owned()),
        1 => Just("WITH x AS ( SELECT * FROM t FOR UPDATE ) SELECT * FROM x".to_owned()),
        1 => Just("SELECT 1 UNION ( SELECT a FROM t FOR UPDATE )".to_owned()),
        1 => Just("SELECT * FROM t WHERE a IN ( SELECT a FROM u FOR SHARE )".to_owned()),
    ]
}

/// What may stand between two tokens without changing the statement.
fn separator() -> impl Strategy<Value = &'static str> {
    prop::sample::select(
        &[
            " ",
            " ",
            " ",
            "  ",
            "\t",
            "\n",
            "\r\n",
            "\x0c",
            "/**/",
            "/* c */",
            "/* ; DELETE */",
            "/* é 🙂 */",
            "/*\n*/",
            " -- c\n",
            "--\n",
            " -- ; SELECT 1\n",
        ][..],
    )
}

/// `sql`'s tokens joined by random separators, each keyword in a random case.
fn disguised(sql: String) -> impl Strategy<Value = String> {
    let tokens: Vec<String> = sql.split(' ').map(str::to_owned).collect();
    let n = tokens.len();
    (
        prop::collection::vec(separator(), n + 1),
        prop::collection::vec(0u8..3, n),
    )
        .prop_map(move |(separators, cases)| {
            let mut out = separators[0].to_owned();
            for ((token, case), separator) in tokens.iter().zip(&cases).zip(&separators[1..]) {
                let is_word = token.chars().all(|c| c.is_ascii_alphabetic() || c == '_');
                out.push_str(&match (is_word, case) {
                    (true, 1) => token.to_ascii_lowercase(),
                    (true, 2) => token
                        .chars()
                        .enumerate()
                        .map(|(i, c)| {
                            if i % 2 == 0 {
                                c.to_ascii_lowercase()
                            } else {
                                c.to_ascii_uppercase()
                            }
                        })
                        .collect(),
                    _ => token.clone(),
                });
                out.push_str(separator);
            }
            out
        })
}

fn engines() -> [Engine; 2] {
    [Engine::Sqlite, Engine::Postgres]
}

/// The checker's verdict; a refusal is always a `Sql` error naming the template.
fn accepted(sql: &str, engine: Engine) -> bool {
    match check_read_only("fuzz", sql, engine) {
        Ok(()) => true,
        Err(AdapterError::Sql { template, .. }) if template == "fuzz" => false,
        Err(other) => panic!("not a Sql error: {other}"),
    }
}

/// A database holding every object the generated statements name.
fn database() -> Connection {
    let db = Connection::open_in_memory().unwrap();
    db.execute_batch(
        "CREATE TABLE t (a INT, b INT); CREATE TABLE u (a INT, b INT);
         CREATE INDEX i ON t (a); CREATE VIEW v AS SELECT a FROM t;
         INSERT INTO t VALUES (1, 2); INSERT INTO u VALUES (1, 3);",
    )
    .unwrap();
    db
}

/// SQLite's own reading of `sql`: how many statements it sees (up to the first it cannot
/// prepare), and whether all of them are read-only.
fn sqlite_reading(db: &Connection, sql: &str) -> (usize, bool) {
    let mut batch = rusqlite::Batch::new(db, sql);
    let (mut count, mut read_only) = (0, true);
    while let Ok(Some(statement)) = batch.next() {
        count += 1;
        read_only &= statement.readonly();
    }
    (count, read_only)
}

/// One edit of a statement's text, at a char boundary.
fn edit() -> impl Strategy<Value = (u8, prop::sample::Index, String)> {
    let text = prop_oneof![
        prop::sample::select(
            &[
                ";",
                "--",
                "/*",
                "*/",
                "'",
                "\"",
                "`",
                "[",
                "]",
                "(",
                ")",
                "$$",
                "\n",
                " ",
                "\\",
                "SELECT",
                "DELETE",
                "INTO",
                "FROM t",
                "UNION",
                "WITH",
                "RETURNING",
                "é",
                "\u{a0}",
                "\u{feff}",
                "\u{2028}",
                "\0",
            ][..]
        )
        .prop_map(str::to_owned),
        any::<char>().prop_map(String::from),
    ];
    (0u8..3, any::<prop::sample::Index>(), text)
}

fn apply_edits(sql: &str, edits: &[(u8, prop::sample::Index, String)]) -> String {
    let mut chars: Vec<char> = sql.chars().collect();
    for (kind, at, text) in edits {
        let i = at.index(chars.len() + 1);
        match kind {
            0 if i < chars.len() => {
                chars.remove(i);
            }
            1 if i < chars.len() => {
                chars.splice(i..i + 1, text.chars());
            }
            _ => {
                chars.splice(i..i, text.chars());
            }
        }
    }
    chars.into_iter().collect()
}

/// Nesting deep enough to overflow a recursive parser's stack if it had no limit, and to
/// take hours in a parser that backtracks per level; long flat chains (`UNION`, `AND`,
/// lists) that a recursive visitor walks as deep trees.
fn deeply_nested() -> impl Strategy<Value = String> {
    let opener = prop::sample::select(
        &[
            ("(", ")"),
            ("(SELECT ", ")"),
            ("(SELECT * FROM (SELECT ", ") s)"),
            ("NOT ", ""),
            ("- ", ""),
            ("f(", ")"),
            ("f(1, ", ")"),
            ("f(a => ", ")"),
            ("CAST(", " AS INT)"),
            ("CAST(CASE (", ") WHEN 1 THEN 1 END AS INT)"),
            ("CASE WHEN ", " THEN 1 END"),
            ("ARRAY[", "]"),
            ("(1 + (", "))"),
            ("EXISTS (SELECT ", ")"),
            ("1 IN (SELECT ", ")"),
        ][..],
    );
    let nested = prop::collection::vec(opener.clone(), 1..64).prop_map(|levels| {
        let mut sql = String::from("SELECT ");
        levels.iter().for_each(|(open, _)| sql.push_str(open));
        sql.push('1');
        levels
            .iter()
            .rev()
            .for_each(|(_, close)| sql.push_str(close));
        sql
    });
    let repeated = (opener, 1usize..3000).prop_map(|((open, close), depth)| {
        format!("SELECT {}1{}", open.repeat(depth), close.repeat(depth))
    });
    let chain = prop::sample::select(
        &[
            "+1",
            " UNION SELECT 1",
            " AND 1 = 1",
            ", 1",
            " || 'a'",
            " OR (1)",
            " INTERSECT (SELECT 1)",
        ][..],
    );
    let flat = (chain, prop_oneof![1usize..3000, 3000usize..20_000]).prop_map(|(link, n)| {
        let head = if link.contains("AND") {
            "SELECT 1 WHERE 1 = 1"
        } else {
            "SELECT 1"
        };
        format!("{head}{}", link.repeat(n))
    });
    prop_oneof![nested, repeated, flat]
}

/// The check's verdict on both dialects, each within `limit`.
fn checked_in_time(sql: &str, limit: Duration) -> Result<(), TestCaseError> {
    for engine in engines() {
        let started = std::time::Instant::now();
        let _ = accepted(sql, engine);
        let took = started.elapsed();
        prop_assert!(took < limit, "{engine:?} took {took:?} on {sql:?}");
    }
    Ok(())
}

#[test]
fn the_generated_statements_are_real_writes_to_sqlite() {
    // Sanity of the generator: SQLite reads the SQLite-dialect writes as writes.
    let db = database();
    for sql in [
        "INSERT INTO t ( a ) VALUES ( 1 )",
        "DELETE FROM t",
        "DROP TABLE t",
        "PRAGMA user_version = 3",
        "SELECT 1 ; DELETE FROM t",
    ] {
        assert!(!sqlite_reading(&db, sql).1, "{sql} should read as a write");
    }
    assert!(accepted("SELECT a FROM t WHERE b = :b", Engine::Sqlite));
    assert!(accepted(
        "WITH x AS (SELECT 1) SELECT * FROM x",
        Engine::Postgres
    ));
}

proptest! {
    #![proptest_config(config(5000))]

    /// A write, however disguised, is refused by both dialects' checks.
    #[test]
    fn writes_are_always_refused(sql in wrapped_write().prop_flat_map(disguised)) {
        for engine in engines() {
            prop_assert!(!accepted(&sql, engine), "{engine:?} accepted {sql:?}");
        }
    }

    /// Arbitrary edits of writes may make them unparseable, or read-only, or harmless:
    /// whatever the SQLite check accepts, SQLite reads as one read-only statement.
    #[test]
    fn accepted_edits_are_read_only_to_sqlite(
        sql in wrapped_write().prop_flat_map(disguised),
        edits in prop::collection::vec(edit(), 1..5),
    ) {
        let sql = apply_edits(&sql, &edits);
        let postgres = accepted(&sql, Engine::Postgres);
        if accepted(&sql, Engine::Sqlite) {
            let (statements, read_only) = sqlite_reading(&database(), &sql);
            prop_assert!(statements <= 1, "SQLite sees {statements} statements in {sql:?}");
            prop_assert!(read_only, "SQLite reads {sql:?} as a write");
        }
        let _ = postgres;
    }

    /// Random text, SQL-looking or not, never panics the check.
    #[test]
    fn random_text_never_panics(
        sql in prop_oneof![
            any::<String>(),
            "[ -~\n\t]{0,80}",
            "(SELECT|WITH|INSERT|DELETE|FROM|INTO|UNION|;|--|/\\*|\\*/|'|\"|\\(|\\)|t|1|,|\\$\\$| ){0,40}",
        ],
    ) {
        for engine in engines() {
            let _ = accepted(&sql, engine);
        }
    }
}

proptest! {
    #![proptest_config(config(200))]

    /// Deep nesting and long chains are refused or accepted within a second or two, never a
    /// stack overflow (which would abort the process, not fail the test).
    #[test]
    fn deep_nesting_is_checked_in_bounded_time(sql in deeply_nested()) {
        checked_in_time(&sql, Duration::from_secs(3))?;
    }
}

// Regressions found by the properties above.

/// Was accepted: PostgreSQL runs `SELECT … INTO t UNION …` as `CREATE TABLE t AS …`.
#[test]
fn regression_select_into_under_a_set_operation_is_refused() {
    for sql in [
        "SELECT 1 INTO z UNION SELECT 2",
        "(SELECT 1 INTO z)",
        "(SELECT * INTO z FROM t) UNION ALL SELECT * FROM t",
    ] {
        for engine in engines() {
            let message = check_read_only("fuzz", sql, engine)
                .unwrap_err()
                .to_string();
            assert!(message.contains("INTO"), "{engine:?} {sql}: {message}");
        }
    }
}

/// Was accepted: a row lock in a subquery, a CTE or a set operation's branch.
#[test]
fn regression_locks_inside_the_query_are_refused() {
    for sql in [
        "SELECT * FROM (SELECT * FROM t FOR UPDATE) s",
        "WITH x AS (SELECT * FROM t FOR UPDATE) SELECT * FROM x",
        "SELECT 1 UNION (SELECT a FROM t FOR UPDATE)",
        "SELECT * FROM t WHERE a IN (SELECT a FROM u FOR SHARE)",
    ] {
        let message = check_read_only("fuzz", sql, Engine::Postgres)
            .unwrap_err()
            .to_string();
        assert!(message.contains("lock"), "{sql}: {message}");
    }
}

/// Was: the process aborted with a stack overflow walking (or dropping) the tree of a
/// long flat chain, some thousands of terms deep.
#[test]
fn regression_long_chains_are_refused_not_overflowing() {
    for link in ["+1", " AND 1 = 1", " UNION SELECT 1"] {
        let sql = format!("SELECT 1{}", link.repeat(5000));
        for engine in engines() {
            let message = check_read_only("fuzz", &sql, engine)
                .unwrap_err()
                .to_string();
            assert!(message.contains("tokens"), "{message}");
        }
    }
    let sql = format!("SELECT 1{}", "+1".repeat(1000));
    check_read_only("fuzz", &sql, Engine::Postgres).unwrap();
}

/// Was: minutes to hours of parsing (sqlparser 0.55 doubles its work per level of nested
/// call arguments, `CAST` or parenthesised subquery); a generated query is checked too.
#[test]
fn regression_nested_calls_are_checked_in_bounded_time() {
    for sql in [
        format!("SELECT {}1{}", "f(".repeat(30), ")".repeat(30)),
        format!("SELECT {}1{}", "(SELECT ".repeat(30), ")".repeat(30)),
        format!("SELECT {}1{}", "CAST(".repeat(40), " AS INT)".repeat(40)),
    ] {
        checked_in_time(&sql, Duration::from_secs(3)).unwrap();
        let message = check_read_only("fuzz", &sql, Engine::Postgres)
            .unwrap_err()
            .to_string();
        assert!(message.contains("nests deeper"), "{message}");
    }
    // Ordinary nesting still passes.
    let sql = "SELECT COALESCE(SUM(CASE WHEN a IN (SELECT a FROM u WHERE b = (SELECT max(b) \
               FROM u)) THEN CAST(a AS INT) END), 0) FROM t";
    for engine in engines() {
        check_read_only("fuzz", sql, engine).unwrap();
    }
}

// ---------------------------------------------------------------------------------------
// HTTP placeholders.

/// The echo server on 127.0.0.1 (port) and the runtime it runs on; it answers every
/// request with what it received.
fn echo() -> &'static (tokio::runtime::Runtime, u16) {
    static ECHO: OnceLock<(tokio::runtime::Runtime, u16)> = OnceLock::new();
    ECHO.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let app = axum::Router::new().fallback(|request: Request| async move {
            let host = request
                .headers()
                .get("host")
                .and_then(|h| h.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            Json(json!({
                "path": request.uri().path(),
                "query": request.uri().query(),
                "host": host,
            }))
        });
        runtime.spawn(async move { axum::serve(listener, app).await.unwrap() });
        (runtime, port)
    })
}

fn template(fields: Value) -> Template {
    let mut full = json!({"description": "a call", "nl_examples": ["call it"]});
    for (key, value) in fields.as_object().unwrap() {
        full[key] = value.clone();
    }
    serde_json::from_value(full).unwrap()
}

/// The datasource `api` on the echo server, its base URL with a path.
fn source() -> &'static (HttpDatasource, Datasource) {
    static SOURCE: OnceLock<(HttpDatasource, Datasource)> = OnceLock::new();
    SOURCE.get_or_init(|| {
        let port = echo().1;
        let spec = json!({
            "name": "api", "kind": "http", "description": "the echo server",
            "connection": {"base_url": format!("http://127.0.0.1:{port}/api/v1/")},
        });
        let parameters = json!([{"name": "id"}, {"name": "n"}, {"name": "q"}]);
        let datasource = Datasource {
            spec: serde_json::from_value(spec).unwrap(),
            templates: vec![
                template(json!({
                    "id": "segment",
                    "endpoint_template": "/items/{id}/tail",
                    "parameters": parameters,
                    "query_params": {"q": "{q}", "fixed": "1"},
                })),
                template(json!({
                    "id": "joined",
                    "endpoint_template": "items/{id}-{n}/x",
                    "parameters": parameters,
                    "query_params": {"q": "{q}"},
                })),
                template(json!({
                    "id": "absolute",
                    "endpoint_template": format!("http://127.0.0.1:{port}/abs/{{id}}"),
                    "parameters": parameters,
                    "query_params": {"q": "{q}", "n": "{n}"},
                })),
            ],
        };
        (HttpDatasource::open(&datasource).unwrap(), datasource)
    })
}

/// Hostile text: separators, dot segments, encodings, authority characters, controls.
fn hostile_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        prop::sample::select(
            &[
                "/",
                "..",
                ".",
                "?",
                "#",
                "%",
                "%2F",
                "%2f",
                "%2E%2E",
                "%00",
                "@",
                ":",
                "\\",
                "&",
                "=",
                "+",
                ";",
                " ",
                "\r\n",
                "\n",
                "\t",
                "\0",
                "é",
                "🙂",
                "\u{202e}",
                "\u{ff0f}",
                "{id}",
                "{q}",
                "http://evil.test/",
                "//evil.test",
                "[::1]",
                "127.0.0.1:1",
                "~",
                "-",
                "_",
                "*",
                "'",
                "\"",
                "<",
                ">",
                "`",
                "|",
                "^",
            ][..]
        )
        .prop_map(str::to_owned),
        "[a-zA-Z0-9]{1,4}",
        any::<String>(),
    ];
    prop::collection::vec(piece, 0..6).prop_map(|p| p.concat())
}

fn parameter_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => hostile_text().prop_map(Value::from),
        1 => any::<i64>().prop_map(Value::from),
        1 => any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        1 => any::<bool>().prop_map(Value::from),
    ]
}

/// A value as the adapter writes it into a URL.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Percent-decoding; `None` for bytes that are not UTF-8 or a bad escape.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `key=value` pairs of a query string, form-decoded.
fn query_pairs(query: &str) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = reqwest::Url::parse(&format!("http://x/?{query}"))
        .unwrap()
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    pairs.sort();
    pairs
}

proptest! {
    #![proptest_config(config(1000))]

    /// Hostile values never move the request off its host and port, fill exactly their
    /// one path segment, and exactly their one query parameter.
    #[test]
    fn placeholder_values_stay_in_their_place(
        which in 0usize..3,
        id in parameter_value(),
        n in parameter_value(),
        q in parameter_value(),
    ) {
        let (runtime, port) = echo();
        let (source, datasource) = source();
        let template = &datasource.templates[which];
        let parameters: Map<String, Value> =
            [("id".to_owned(), id.clone()), ("n".to_owned(), n.clone()), ("q".to_owned(), q.clone())]
                .into_iter()
                .collect();
        let result = runtime.block_on(source.call(template, &parameters, Duration::from_secs(5)));
        let (id_text, n_text) = (text_of(&id), text_of(&n));
        let in_path: &[&str] = if which == 1 { &[&id_text, &n_text] } else { &[&id_text] };
        if in_path.iter().any(|t| t.is_empty() || *t == "." || *t == "..") {
            let refused = matches!(&result, Err(AdapterError::Parameter { name, .. })
                if name == "id" || name == "n");
            prop_assert!(refused, "{:?}", result.map(|r| r.data));
            return Ok(());
        }
        let answer = match result {
            Ok(answer) => answer,
            Err(e) => return Err(TestCaseError::fail(format!("refused: {e}"))),
        };
        prop_assert_eq!(answer.status, 200);
        let echoed = answer.data;
        let host = format!("127.0.0.1:{port}");
        prop_assert_eq!(echoed["host"].as_str(), Some(host.as_str()));

        let path = echoed["path"].as_str().unwrap();
        let segments: Vec<&str> = path.split('/').collect();
        let (expected_shape, at, value): (&[&str], usize, String) = match which {
            0 => (&["", "api", "v1", "items", "*", "tail"], 4, id_text.clone()),
            1 => (&["", "api", "v1", "items", "*", "x"], 4, format!("{id_text}-{n_text}")),
            _ => (&["", "abs", "*"], 2, id_text.clone()),
        };
        prop_assert_eq!(segments.len(), expected_shape.len(), "path {}", path);
        for (segment, expected) in segments.iter().zip(expected_shape) {
            prop_assert!(*expected == "*" || segment == expected, "path {}", path);
        }
        prop_assert_eq!(percent_decode(segments[at]), Some(value), "path {}", path);

        let query = echoed["query"].as_str().unwrap_or_default();
        let mut expected = vec![("q".to_owned(), text_of(&q))];
        match which {
            0 => expected.push(("fixed".to_owned(), "1".to_owned())),
            2 => expected.push(("n".to_owned(), n_text.clone())),
            _ => {}
        }
        expected.sort();
        prop_assert_eq!(query_pairs(query), expected, "query {}", query);
    }
}
