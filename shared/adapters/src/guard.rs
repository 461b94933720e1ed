//! The read-only check of SQL: one query, no writes, no side effects, and the text that
//! runs is the statement the check read ([`check_read_only`]). Every SQL engine's adapter
//! runs what this returns, never the text it was given.

use std::ops::ControlFlow;

use sqlparser::ast::{Expr, ObjectName, Query, SetExpr, Statement, TableFactor, Visit, Visitor};
use sqlparser::dialect::{Dialect, DuckDbDialect, MySqlDialect, PostgreSqlDialect, SQLiteDialect};
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer, Whitespace};
use switchyard_catalog::template::Datasource;

use crate::error::{AdapterError, Result};

/// Which SQL dialect a datasource speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
    Duckdb,
    /// MySQL or MariaDB.
    Mysql,
}

impl Engine {
    /// How the read-only check reads this engine's SQL.
    pub fn dialect(self) -> Box<dyn Dialect> {
        match self {
            Engine::Sqlite => Box::new(SQLiteDialect {}),
            Engine::Postgres => Box::new(PostgreSqlDialect {}),
            Engine::Duckdb => Box::new(DuckDbDialect {}),
            Engine::Mysql => Box::new(MySqlDialect {}),
        }
    }

    pub fn of(datasource: &Datasource) -> Result<Engine> {
        match datasource.spec.connection.get("engine").map(String::as_str) {
            Some("sqlite") => Ok(Engine::Sqlite),
            Some("postgres" | "postgresql") => Ok(Engine::Postgres),
            Some("duckdb") => Ok(Engine::Duckdb),
            Some("mysql" | "mariadb") => Ok(Engine::Mysql),
            other => Err(AdapterError::Datasource {
                datasource: datasource.spec.name.clone(),
                message: format!(
                    "connection.engine must be `sqlite`, `postgres`, `duckdb` or `mysql`, found {}",
                    other.map_or_else(|| "nothing".to_owned(), |e| format!("`{e}`"))
                ),
            }),
        }
    }
}

/// How deeply the checked SQL may nest (sqlparser's recursion limit). sqlparser 0.55
/// backtracks on some nested constructs (function arguments, `CAST`, parenthesised
/// subqueries, arrays), doubling its work per level: at its default limit of 50, a few
/// hundred bytes of SQL take hours to parse. 20 still allows about 17 levels of
/// parentheses and calls (8 of nested subqueries) and keeps every parse under a second.
const MAX_NESTING: usize = 20;

/// The most tokens (words, literals, operators) the checked SQL may have. A flat chain
/// (`1 + 1 + …`, `… UNION SELECT …`) parses into a tree as deep as it is long, and walking
/// or dropping a tree some thousands deep overflows a thread's stack, which aborts the
/// process; templates and generated queries are far shorter.
const MAX_TOKENS: usize = 4096;

/// Functions a read-only query must not call: they sleep, change settings or sequences,
/// read or write server files and large objects, take advisory locks, signal other
/// sessions, or run SQL of their own (on this connection or another, where the read-only
/// transaction does not reach). Matched on the last part of the name, in any case; a
/// trailing `*` matches a prefix.
const SIDE_EFFECT_FUNCTIONS: &[&str] = &[
    // PostgreSQL
    "pg_sleep*",
    "set_config",
    "nextval",
    "setval",
    "lo_*",
    "lowrite",
    "loread",
    "pg_read_file",
    "pg_read_binary_file",
    "pg_ls_*",
    "pg_stat_file",
    "pg_file_*",
    "pg_advisory_*",
    "pg_try_advisory_*",
    "pg_notify",
    "pg_terminate_backend",
    "pg_cancel_backend",
    "pg_reload_conf",
    "pg_rotate_logfile",
    "pg_stat_reset*",
    "pg_logical_*",
    "pg_replication_*",
    "pg_create_*",
    "pg_drop_replication_slot",
    "pg_switch_wal",
    "pg_promote",
    "pg_backup_*",
    "pg_start_backup",
    "pg_stop_backup",
    "dblink*",
    "query_to_xml*",
    "cursor_to_xml*",
    "ts_stat",
    "ts_rewrite",
    // SQLite
    "load_extension",
    "readfile",
    "writefile",
    "edit",
    "fts3_tokenizer",
    // DuckDB: files, the network and SQL of their own (external access is off as well)
    "read_csv*",
    "read_parquet",
    "parquet_*",
    "read_json*",
    "read_ndjson*",
    "read_text",
    "read_blob",
    "read_xlsx",
    "sniff_csv",
    "glob",
    "query",
    "query_table",
    "getenv",
    "duckdb_secrets",
    "iceberg_*",
    "delta_scan",
    "sqlite_scan",
    "sqlite_attach",
    "postgres_*",
    "mysql_*",
    // MySQL and MariaDB
    "sleep",
    "benchmark",
    "get_lock",
    "release_lock",
    "release_all_locks",
    "load_file",
    "master_pos_wait",
    "source_pos_wait",
    "master_gtid_wait",
    "lastval",
    "sys_exec",
    "sys_eval",
];

/// The name of a function with side effects, as called.
fn side_effect(name: &ObjectName) -> Option<String> {
    let last = name.0.last()?.as_ident()?.value.to_ascii_lowercase();
    SIDE_EFFECT_FUNCTIONS
        .iter()
        .any(|entry| match entry.strip_suffix('*') {
            Some(prefix) => last.starts_with(prefix),
            None => last == *entry,
        })
        .then(|| name.to_string())
}

/// Refuse anything but exactly one read-only query: no writes anywhere in the syntax tree
/// (data-modifying CTEs included), no `SELECT … INTO`, no row locks, no calls of
/// [`SIDE_EFFECT_FUNCTIONS`]. Returns the text to run: the statement as read, token for
/// token, without its comments ([`uncommented`]), so that no rule of the server's for
/// comments (MySQL's `--` before a tab, nesting, optimizer hints) can make it run another
/// statement than the one checked.
pub fn check_read_only(template_id: &str, sql: &str, engine: Engine) -> Result<String> {
    let refuse = |message: String| AdapterError::Sql {
        template: template_id.to_owned(),
        message,
    };
    let dialect = engine.dialect();
    let read = |sql: &str| {
        parse(dialect.as_ref(), sql).map_err(|e| match e {
            ParserError::RecursionLimitExceeded => refuse(format!(
                "sql_template nests deeper than the {MAX_NESTING} levels the read-only check reads"
            )),
            e => refuse(format!("sql_template does not parse: {e}")),
        })
    };
    let (statements, tokens) = read(sql)?;
    if statements.len() != 1 {
        return Err(refuse(format!(
            "sql_template must be exactly one statement, found {}",
            statements.len()
        )));
    }
    let Statement::Query(query) = &statements[0] else {
        return Err(refuse(
            "sql_template must be a read-only query (SELECT or WITH … SELECT)".into(),
        ));
    };
    if !query.locks.is_empty() {
        return Err(refuse(
            "sql_template must not lock rows (FOR UPDATE/SHARE)".into(),
        ));
    }
    let mut check = ReadOnly(None);
    let _ = statements.visit(&mut check);
    if let Some(problem) = check.0 {
        return Err(refuse(format!("sql_template must be read-only: {problem}")));
    }
    let text = uncommented(sql, &tokens).map_err(refuse)?;
    // What is sent must read as what was checked: the same tree from the text without
    // its comments.
    if read(&text)?.0 != statements {
        return Err(refuse(
            "sql_template reads otherwise without its comments; write it without them".into(),
        ));
    }
    Ok(text)
}

/// `sql` without its comments: every other token copied from the text as written (a
/// string's quoting and escapes stay as they were), each comment replaced by a space.
/// Refuses `--` that the check read as two minus signs: some server reads it as a comment
/// (MySQL before a tab or newline), and what follows would be another statement to it.
fn uncommented(sql: &str, tokens: &[TokenWithSpan]) -> std::result::Result<String, String> {
    let offsets = Offsets::of(sql);
    let mut text = String::with_capacity(sql.len());
    let mut copied = 0;
    let mut previous: Option<&Token> = None;
    for token in tokens {
        let (Some(from), Some(to)) = (
            offsets.byte(token.span.start.line, token.span.start.column),
            offsets.byte(token.span.end.line, token.span.end.column),
        ) else {
            return Err("a token of sql_template could not be located".into());
        };
        if from != copied || to < from {
            return Err("the tokens of sql_template do not cover its text".into());
        }
        match &token.token {
            Token::Whitespace(
                Whitespace::SingleLineComment { .. } | Whitespace::MultiLineComment(_),
            ) => text.push(' '),
            Token::Minus if previous == Some(&Token::Minus) => {
                return Err(
                    "`--` not followed by a space: some servers read it as a comment; put a space between the minus signs".into(),
                )
            }
            _ => text.push_str(&sql[from..to]),
        }
        copied = to;
        previous = Some(&token.token);
    }
    if copied != sql.len() {
        return Err("the tokens of sql_template do not cover its text".into());
    }
    Ok(text.trim().to_owned())
}

/// Byte offsets of the tokenizer's locations (1-based lines, and columns in characters).
pub(crate) struct Offsets {
    /// The byte offset of each character, and of the end.
    chars: Vec<usize>,
    /// The character index at which each line starts.
    lines: Vec<usize>,
}

impl Offsets {
    pub(crate) fn of(sql: &str) -> Offsets {
        let mut chars = Vec::with_capacity(sql.len() + 1);
        let mut lines = vec![0];
        for (index, (offset, ch)) in sql.char_indices().enumerate() {
            chars.push(offset);
            if ch == '\n' {
                lines.push(index + 1);
            }
        }
        chars.push(sql.len());
        Offsets { chars, lines }
    }

    pub(crate) fn byte(&self, line: u64, column: u64) -> Option<usize> {
        let start = *self
            .lines
            .get(usize::try_from(line).ok()?.checked_sub(1)?)?;
        let index = start + usize::try_from(column).ok()?.checked_sub(1)?;
        let next_line = self.lines.get(usize::try_from(line).ok()?).copied();
        // A location past its line's end is not one the tokenizer makes.
        if next_line.is_some_and(|next| index >= next) {
            return None;
        }
        self.chars.get(index).copied()
    }
}

type Parsed = (Vec<Statement>, Vec<TokenWithSpan>);

fn parse(dialect: &dyn Dialect, sql: &str) -> std::result::Result<Parsed, ParserError> {
    let tokens = Tokenizer::new(dialect, sql).tokenize_with_location()?;
    let words = tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .count();
    if words > MAX_TOKENS {
        return Err(ParserError::ParserError(format!(
            "longer than the {MAX_TOKENS} tokens the read-only check reads ({words})"
        )));
    }
    if dialect.is::<MySqlDialect>() {
        mysql_tokens(&tokens)?;
    }
    // DuckDB reads a backslash in a string as an ordinary character, where the parser's
    // DuckDB dialect reads an escape: `E'\'' AS a, f() --'` is one string to the check and
    // a call to the engine (found by the differential test in tests/injection).
    if dialect.is::<DuckDbDialect>() && sql.contains('\\') {
        return Err(ParserError::ParserError(
            "a backslash, which DuckDB and the check read otherwise; write chr(92)".into(),
        ));
    }
    let statements = Parser::new(dialect)
        .with_recursion_limit(MAX_NESTING)
        .with_tokens_with_locations(tokens.clone())
        .parse_statements()?;
    Ok((statements, tokens))
}

/// What MySQL and MariaDB read in SQL that the parser does not: the text of `/*! … */` and
/// `/*M! … */` comments is executed by the server, not skipped, and `@v := …` assigns a
/// session variable inside a query.
fn mysql_tokens(tokens: &[TokenWithSpan]) -> std::result::Result<(), ParserError> {
    for token in tokens {
        match &token.token {
            Token::Whitespace(Whitespace::MultiLineComment(text))
                if text.starts_with('!') || text.starts_with("M!") =>
            {
                return Err(ParserError::ParserError(
                    "a /*! … */ comment, which MySQL runs as SQL".into(),
                ));
            }
            Token::Assignment => {
                return Err(ParserError::ParserError(
                    "`:=` assigns a session variable".into(),
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Every template of `datasource` checked with [`check_read_only`] for `engine`.
pub fn check_templates(datasource: &Datasource, engine: Engine) -> Result<()> {
    (datasource.templates.iter())
        .filter_map(|t| Some((t, t.sql_template.as_deref()?)))
        .try_for_each(|(template, sql)| check_read_only(&template.id, sql, engine).map(drop))
}

/// Finds the first write in a syntax tree: a statement other than a query anywhere in it,
/// and in every query (subqueries, CTEs and set operations included) a row lock or a
/// `SELECT … INTO` (PostgreSQL creates the table even from `SELECT … INTO t UNION …`).
struct ReadOnly(Option<String>);

impl Visitor for ReadOnly {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        if !query.locks.is_empty() {
            self.0 = Some("FOR UPDATE/SHARE inside the query locks rows".to_owned());
        } else if selects_into(&query.body) {
            self.0 = Some("SELECT … INTO writes a table".to_owned());
        }
        self.verdict()
    }

    fn pre_visit_statement(&mut self, statement: &Statement) -> ControlFlow<()> {
        if !matches!(statement, Statement::Query(_)) {
            let text = statement.to_string();
            let verb = text.split_whitespace().next().unwrap_or("a statement");
            self.0 = Some(format!("{verb} inside the query writes or changes state"));
        }
        self.verdict()
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        if let Expr::Function(function) = expr {
            self.refuse_call(&function.name);
        }
        self.verdict()
    }

    /// Table functions: `FROM pg_sleep(1)`, `FROM dblink(…) AS t(…)`.
    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        match factor {
            TableFactor::Table {
                name,
                args: Some(_),
                ..
            }
            | TableFactor::Function { name, .. } => self.refuse_call(name),
            _ => {}
        }
        self.verdict()
    }
}

impl ReadOnly {
    fn refuse_call(&mut self, name: &ObjectName) {
        if let Some(name) = side_effect(name) {
            self.0 = Some(format!(
                "{name}() has side effects (sleeps, settings, files, locks or SQL of its own)"
            ));
        }
    }

    fn verdict(&self) -> ControlFlow<()> {
        if self.0.is_some() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

/// Whether a query body (through its set operations) has a `SELECT … INTO`; a
/// parenthesised query is a query of its own, which the visitor checks.
fn selects_into(body: &SetExpr) -> bool {
    match body {
        SetExpr::Select(select) => select.into.is_some(),
        SetExpr::SetOperation { left, right, .. } => selects_into(left) || selects_into(right),
        _ => false,
    }
}
