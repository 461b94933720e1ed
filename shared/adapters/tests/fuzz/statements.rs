//! The generated SQL: writes in many disguises, edits of their text, and deep nesting and
//! long chains.

use proptest::prelude::*;

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
pub(crate) fn wrapped_write() -> impl Strategy<Value = String> {
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
pub(crate) fn disguised(sql: String) -> impl Strategy<Value = String> {
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

/// One edit of a statement's text, at a char boundary.
pub(crate) fn edit() -> impl Strategy<Value = (u8, prop::sample::Index, String)> {
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

pub(crate) fn apply_edits(sql: &str, edits: &[(u8, prop::sample::Index, String)]) -> String {
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
pub(crate) fn deeply_nested() -> impl Strategy<Value = String> {
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
