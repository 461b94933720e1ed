//! The SQL read-only check: writes are always refused, accepted edits are read-only to
//! SQLite, random text and deep nesting never panic it, and the regressions they found.

use std::time::Duration;

use proptest::prelude::*;
use rusqlite::Connection;
use switchyard_adapters::guard::{check_read_only, Engine};
use switchyard_adapters::AdapterError;

use crate::setup::config;
use crate::statements::{apply_edits, deeply_nested, disguised, edit, wrapped_write};

fn engines() -> [Engine; 2] {
    [Engine::Sqlite, Engine::Postgres]
}

/// The checker's verdict; a refusal is always a `Sql` error naming the template.
fn accepted(sql: &str, engine: Engine) -> bool {
    match check_read_only("fuzz", sql, engine) {
        Ok(_) => true,
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
