//! The payload families, and how a payload is placed and shown.

use serde_json::Value;

/// The payloads, by family. Each is tried bare and after the honest value.
pub(crate) fn payloads() -> Vec<(&'static str, String)> {
    let fixed: &[(&str, &str)] = &[
        // Tautologies.
        ("tautology", "' OR '1'='1"),
        ("tautology", "' OR '1'='1' --"),
        ("tautology", "' OR 1=1 --"),
        ("tautology", "\" OR \"1\"=\"1"),
        ("tautology", "') OR ('1'='1"),
        ("tautology", "')) OR (('1'='1"),
        ("tautology", "' OR ''='"),
        ("tautology", "' OR 'x' LIKE '%"),
        ("tautology", "1 OR 1=1"),
        ("tautology", "0 OR 1=1"),
        ("tautology", "-1 OR 1=1"),
        ("tautology", "1) OR (1=1"),
        ("tautology", "1 OR TRUE"),
        ("tautology", "admin'--"),
        // Stacked queries, including one that tries to leave the read-only transaction.
        ("stacked", "'; DROP TABLE employees; --"),
        ("stacked", "'; DROP TABLE vehicles; --"),
        ("stacked", "1; DROP TABLE employees"),
        ("stacked", "'; DELETE FROM employees; --"),
        ("stacked", "'; UPDATE employees SET title = 'owned'; --"),
        (
            "stacked",
            "'; INSERT INTO departments VALUES (99, 'x', 'y', 1); --",
        ),
        ("stacked", "'; CREATE TABLE injected (x int); --"),
        ("stacked", "'; COMMIT; DROP TABLE vehicles; --"),
        ("stacked", "'); ATTACH DATABASE '/tmp/x.db' AS x; --"),
        // Comments.
        ("comment", "'--"),
        ("comment", "--"),
        ("comment", "' /*"),
        ("comment", "*/"),
        ("comment", "/* */"),
        ("comment", "'/**/OR/**/'1'='1"),
        ("comment", "' #"),
        ("comment", "#"),
        // UNION.
        ("union", "' UNION SELECT NULL --"),
        (
            "union",
            "' UNION SELECT name, location, budget FROM departments --",
        ),
        (
            "union",
            "' UNION ALL SELECT email, email, email, email, email, email FROM employees --",
        ),
        ("union", "1 UNION SELECT 1"),
        ("union", "' UNION SELECT version() --"),
        ("union", "' UNION SELECT sqlite_version() --"),
        // Side-effect and error-based functions.
        ("function", "' || pg_sleep(5) || '"),
        ("function", "'; SELECT pg_sleep(5); --"),
        (
            "function",
            "' || set_config('default_transaction_read_only', 'off', false) || '",
        ),
        ("function", "' || (SELECT lo_import('/etc/passwd')) || '"),
        ("function", "' AND 1=CAST((SELECT version()) AS int) --"),
        ("function", "' || load_extension('x') || '"),
        // Encodings and look-alikes.
        ("encoding", "%27%20OR%20%271%27%3D%271"),
        ("encoding", "%2527%2520OR%2520%25271%2527%253D%25271"),
        ("encoding", "\\' OR 1=1 --"),
        ("encoding", "\\x27 OR 1=1 --"),
        ("encoding", "E'\\x27 OR 1=1"),
        ("encoding", "\\u0027 OR 1=1"),
        ("encoding", "&#39; OR &#39;1&#39;=&#39;1"),
        ("encoding", "\u{2019} OR \u{2018}1\u{2019}=\u{2018}1"),
        ("encoding", "\u{ff07} OR \u{ff07}1\u{ff07}=\u{ff07}1"),
        ("encoding", "\u{02bc} OR 1=1 --"),
        ("encoding", "$$ OR 1=1 --"),
        ("encoding", "'\r\nOR 1=1 --"),
        // NUL bytes.
        ("nul", "\0"),
        ("nul", "\0' OR '1'='1"),
        ("nul", "'\0; DROP TABLE employees; --"),
        // Placeholder look-alikes: never read as another parameter.
        ("placeholder", ":make"),
        ("placeholder", ":department"),
        ("placeholder", "$1"),
        ("placeholder", "?"),
        ("placeholder", "@employee"),
        // Numbers no parameter takes (a number a parameter takes, "-0" or "1e308", is an
        // honest value of its own, not a payload).
        ("numeric", "-9223372036854775809"),
        ("numeric", "NaN"),
        ("numeric", "Infinity"),
        ("numeric", "0x7FFFFFFF"),
        ("numeric", "1.5"),
        ("numeric", "12abc"),
        ("numeric", "2024-01-01' OR '1'='1"),
    ];
    let mut list: Vec<(&str, String)> = fixed.iter().map(|(f, p)| (*f, p.to_string())).collect();
    list.push(("long", "A".repeat(100_000)));
    list.push(("long", format!("'{}' OR '1'='1", "A".repeat(1 << 20))));
    list.push(("long", "' OR '1'='1".repeat(10_000)));
    list
}

/// The payload bare and after the honest value.
pub(crate) fn placements(honest: &Value, payload: &str) -> [String; 2] {
    let honest = match honest {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    [payload.to_owned(), format!("{honest}{payload}")]
}

/// A value short enough for a failure message.
pub(crate) fn shown(value: &str) -> String {
    let head: String = value.chars().take(60).collect();
    if head.len() < value.len() {
        format!("{head:?}… ({} bytes)", value.len())
    } else {
        format!("{head:?}")
    }
}
