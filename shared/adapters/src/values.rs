//! A parameter's value as its template declares it, before an engine binds it: engines
//! cast text where a number is expected by their own loose rules (DuckDB bound the text
//! `1.5` as a `LIMIT` and returned every row; MySQL reads `'3abc'` as 3), so a value that is
//! not of its declared type is refused here, naming the parameter.

use serde_json::Value;
use switchyard_catalog::template::{ParamType, Template};

use crate::error::{AdapterError, Result};

/// A value ready to bind.
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    Null,
    Integer(i64),
    Float(f64),
    Boolean(bool),
    Text(String),
}

/// `value` as the type `template` declares for parameter `name`; NULL when absent.
/// Undeclared parameters (a generated query's) bind as given.
pub fn bound(template: &Template, name: &str, value: Option<&Value>) -> Result<Bound> {
    let refuse = |message: String| AdapterError::Parameter {
        name: name.to_owned(),
        message,
    };
    let declared = (template.parameters.iter())
        .find(|p| p.name == name)
        .map(|p| p.param_type);
    let value = match value {
        None | Some(Value::Null) => return Ok(Bound::Null),
        Some(value) => value,
    };
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    Ok(match declared {
        Some(ParamType::Integer) => match value {
            Value::Number(n) if n.as_i64().is_some() => Bound::Integer(n.as_i64().unwrap_or(0)),
            _ => Bound::Integer(
                text.trim()
                    .parse()
                    .map_err(|_| refuse(format!("`{text}` is not an integer")))?,
            ),
        },
        Some(ParamType::Number) => Bound::Float(
            value
                .as_f64()
                .or_else(|| text.trim().parse().ok())
                .filter(|f: &f64| f.is_finite())
                .ok_or_else(|| refuse(format!("`{text}` is not a number")))?,
        ),
        Some(ParamType::Boolean) => match value {
            Value::Bool(b) => Bound::Boolean(*b),
            _ => match text.trim().to_ascii_lowercase().as_str() {
                "true" => Bound::Boolean(true),
                "false" => Bound::Boolean(false),
                _ => return Err(refuse(format!("`{text}` is not true or false"))),
            },
        },
        _ => match value {
            Value::Bool(b) => Bound::Boolean(*b),
            Value::Number(n) if declared.is_none() => match n.as_i64() {
                Some(i) => Bound::Integer(i),
                None => Bound::Float(n.as_f64().unwrap_or(0.0)),
            },
            _ => Bound::Text(text),
        },
    })
}
