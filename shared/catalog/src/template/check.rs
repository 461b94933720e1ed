//! The checks a parsed template passes: its texts, its parameters, and a body that fits its
//! datasource's kind.

use std::path::Path;

use super::{BodyKind, DatasourceKind, Template};
use crate::error::{Error, Result};

/// A template problem: the field and what is wrong with it.
type Problem = (String, String);

fn problem(
    field: impl Into<String>,
    message: impl Into<String>,
) -> std::result::Result<(), Problem> {
    Err((field.into(), message.into()))
}

pub(super) fn validate_template(
    template: &Template,
    kind: DatasourceKind,
    file: &Path,
) -> Result<()> {
    check_texts(template)
        .and_then(|()| check_parameters(template))
        .and_then(|()| check_body(template, kind))
        .and_then(|()| check_idempotent(template))
        .map_err(|(field, message)| Error::template(file, Some(&template.id), field, message))
}

/// The id's characters, a description, and at least one non-empty example.
fn check_texts(template: &Template) -> std::result::Result<(), Problem> {
    let id_ok = !template.id.is_empty()
        && template
            .id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !id_ok {
        return problem(
            "id",
            "must be non-empty and use only letters, digits, `_`, `-` and `.`",
        );
    }
    if template.description.trim().is_empty() {
        return problem("description", "must not be empty");
    }
    if template.nl_examples.is_empty() {
        return problem("nl_examples", "must list at least one example question");
    }
    if let Some(position) = template
        .nl_examples
        .iter()
        .position(|e| e.trim().is_empty())
    {
        return problem(format!("nl_examples[{position}]"), "must not be empty");
    }
    Ok(())
}

/// Parameter names present and unique, patterns that compile, `min` not above `max`.
fn check_parameters(template: &Template) -> std::result::Result<(), Problem> {
    let mut names = std::collections::HashSet::new();
    for (position, parameter) in template.parameters.iter().enumerate() {
        let at = format!("parameters[{position}]");
        if parameter.name.trim().is_empty() {
            return problem(format!("{at}.name"), "must not be empty");
        }
        if !names.insert(parameter.name.as_str()) {
            return problem(
                format!("{at}.name"),
                format!("duplicate parameter `{}`", parameter.name),
            );
        }
        for (p, pattern) in parameter.extraction_patterns.iter().enumerate() {
            if let Err(e) = regex::Regex::new(pattern) {
                return problem(
                    format!("{at}.extraction_patterns[{p}]"),
                    format!("bad regex: {e}"),
                );
            }
        }
        if let (Some(min), Some(max)) = (parameter.min, parameter.max) {
            if min > max {
                return problem(format!("{at}.min"), format!("{min} is above max {max}"));
            }
        }
    }
    Ok(())
}

/// At most one body, and the one the datasource's kind needs (none for `intent`).
fn check_body(template: &Template, kind: DatasourceKind) -> std::result::Result<(), Problem> {
    let bodies = template.bodies();
    if bodies.len() > 1 {
        let fields: Vec<&str> = bodies.iter().map(|(_, f)| *f).collect();
        return problem(
            fields[1],
            format!("a template has one body, found {}", fields.join(" and ")),
        );
    }
    let body = bodies.first().copied();
    let expected = match kind {
        DatasourceKind::Intent => {
            if let Some((_, field)) = body {
                return problem(field, "templates of an `intent` datasource have no body");
            }
            return Ok(());
        }
        DatasourceKind::Documents => return Ok(()),
        DatasourceKind::Sql => (BodyKind::Sql, "sql_template"),
        DatasourceKind::Http | DatasourceKind::Web => (BodyKind::Http, "endpoint_template"),
        DatasourceKind::Graphql => (BodyKind::Graphql, "graphql_template"),
        DatasourceKind::Tools => (BodyKind::Function, "tool_type"),
    };
    match body {
        Some((found, _)) if found == expected.0 => {}
        Some((_, field)) => {
            return problem(
                field,
                format!(
                    "a `{}` datasource's templates need `{}` instead",
                    kind.as_str(),
                    expected.1
                ),
            )
        }
        None => {
            return problem(
                expected.1,
                format!("required for a `{}` datasource", kind.as_str()),
            )
        }
    }
    if expected.0 == BodyKind::Function {
        if template.tool_type.as_deref() != Some("function") {
            return problem("tool_type", "must be `function`");
        }
        if template.tool_name.is_none() {
            return problem("tool_name", "required with `tool_type: function`");
        }
    }
    Ok(())
}

/// `idempotent: true` only where it changes something: an HTTP POST or PATCH (a GraphQL
/// request is a POST). Other methods are retried anyway (RFC 9110 §9.2.2); a template that
/// sends no HTTP request has nothing to retry. Saying so is an error, not a silent no-op.
fn check_idempotent(template: &Template) -> std::result::Result<(), Problem> {
    if !template.idempotent || template.graphql_template.is_some() {
        return Ok(());
    }
    if template.endpoint_template.is_none() {
        return problem(
            "idempotent",
            "only HTTP and GraphQL templates make requests that are retried",
        );
    }
    let method = template
        .http_method
        .as_deref()
        .unwrap_or("GET")
        .trim()
        .to_ascii_uppercase();
    // An unknown method is the adapter's to refuse, naming `http_method`.
    if ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"].contains(&method.as_str()) {
        return problem(
            "idempotent",
            format!(
                "a {method} request is retried anyway; only POST and PATCH need `idempotent: true`"
            ),
        );
    }
    Ok(())
}
