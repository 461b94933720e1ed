//! A template's `:name` placeholders rewritten to what a server binds: `$1, $2, …`
//! (PostgreSQL, DuckDB) or `?` (MySQL, MariaDB).
//!
//! Only the placeholders' own text changes: everything else of the text the read-only check
//! returned (`crate::guard`) reaches the server as it is. (Printing the
//! syntax tree back is not faithful: sqlparser prints a quote that follows a backslash in a
//! string without doubling it, and a server for which `\` is an ordinary character ends the
//! string there: the one string `'\'' OR 1=1 --'` went out as `'\' OR 1=1 --'`.)

use std::ops::ControlFlow;

use sqlparser::ast::{visit_expressions, Expr, Value as SqlLiteral};
use sqlparser::dialect::Dialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

use crate::error::{AdapterError, Result};
use crate::guard::Offsets;

/// How the server numbers its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// `$n`, one number per name: a name used twice is bound once.
    Numbered,
    /// `?`, bound in order of appearance: a name used twice is bound twice.
    QuestionMark,
}

/// The SQL with its placeholders rewritten, and the names to bind in order (one per number
/// for [`Style::Numbered`], one per `?` for [`Style::QuestionMark`]).
pub fn rewrite(
    dialect: &dyn Dialect,
    style: Style,
    template_id: &str,
    sql: &str,
) -> Result<(String, Vec<String>)> {
    let fail = |message: String| AdapterError::Sql {
        template: template_id.to_owned(),
        message,
    };
    let tokens = Tokenizer::new(dialect, sql)
        .tokenize_with_location()
        .map_err(|e| fail(format!("sql_template does not parse: {e}")))?;
    let statements = Parser::new(dialect)
        .with_tokens_with_locations(tokens.clone())
        .parse_statements()
        .map_err(|e| fail(format!("sql_template does not parse: {e}")))?;
    // Where the parser read a `:name` placeholder: the location of its colon.
    let mut colons: Vec<Location> = Vec::new();
    let _ = visit_expressions(&statements, |expr| {
        if let Expr::Value(literal) = expr {
            if let SqlLiteral::Placeholder(placeholder) = &literal.value {
                if placeholder.starts_with(':') {
                    colons.push(literal.span.start);
                }
            }
        }
        ControlFlow::<()>::Continue(())
    });
    let lost = || fail("a placeholder could not be located in the SQL".into());
    let offsets = Offsets::of(sql);
    let mut names: Vec<String> = Vec::new();
    let mut rewritten = String::with_capacity(sql.len());
    let mut copied = 0;
    let mut found = 0;
    for (i, token) in tokens.iter().enumerate() {
        if token.token != Token::Colon || !colons.contains(&token.span.start) {
            continue;
        }
        let word = tokens[i + 1..]
            .iter()
            .find(|t| !matches!(t.token, Token::Whitespace(_)));
        let (
            Some(TokenWithSpan {
                token: Token::Word(word),
                span,
            }),
            Some(from),
        ) = (
            word,
            offsets.byte(token.span.start.line, token.span.start.column),
        )
        else {
            return Err(lost());
        };
        let to = offsets
            .byte(span.end.line, span.end.column)
            .ok_or_else(lost)?;
        rewritten.push_str(&sql[copied..from]);
        match style {
            Style::Numbered => {
                let position = match names.iter().position(|n| *n == word.value) {
                    Some(i) => i + 1,
                    None => {
                        names.push(word.value.clone());
                        names.len()
                    }
                };
                rewritten.push_str(&format!("${position}"));
            }
            Style::QuestionMark => {
                names.push(word.value.clone());
                rewritten.push('?');
            }
        }
        copied = to;
        found += 1;
    }
    if found != colons.len() {
        return Err(lost());
    }
    rewritten.push_str(&sql[copied..]);
    Ok((rewritten, names))
}
