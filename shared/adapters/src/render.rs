//! `response_template` rendering: minijinja over the parameters plus the tool's `result`
//! (or a query's `rows`). Undefined variables are errors, never silently empty text, and
//! whole numbers print without a trailing ".0".

use minijinja::value::ValueKind;
use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde_json::Value;

use crate::error::{AdapterError, Result};

/// Render a template's `response_template` with minijinja over `context` (an object: the
/// parameters plus `result` or `rows`). Number formatting: whole floats print without ".0".
pub fn render(template_id: &str, source: &str, context: &Value) -> Result<String> {
    let fail = |message: String| AdapterError::Render {
        template: template_id.to_owned(),
        message,
    };
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    // Answers are plain text / Markdown: never HTML-escape, whatever the template id ends in.
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_formatter(|out, state, value| {
        if value.kind() == ValueKind::Number && !value.is_integer() {
            if let Ok(number) = f64::try_from(value.clone()) {
                if number.is_finite() && number.fract() == 0.0 {
                    // Rust prints whole floats without a fraction ("30", not "30.0").
                    let number = if number == 0.0 { 0.0 } else { number };
                    return out.write_str(&number.to_string()).map_err(Into::into);
                }
            }
        }
        minijinja::escape_formatter(out, state, value)
    });
    let compiled = env
        .template_from_named_str(template_id, source)
        .map_err(|e| fail(describe(&e)))?;
    compiled
        .render(integral(context))
        .map_err(|e| fail(describe(&e)))
}

/// A value as an answer line: strings unquoted, whole numbers without ".0", the rest as JSON.
pub fn plain_text(value: &Value) -> String {
    match integral(value) {
        Value::String(text) => text,
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A copy of `value` in which every whole, exactly representable float is an integer.
fn integral(value: &Value) -> Value {
    match value {
        Value::Number(number) if number.is_f64() => match number.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
            _ => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(integral).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, item)| (key.clone(), integral(item)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// minijinja's message with its detail and location, on one line.
fn describe(error: &minijinja::Error) -> String {
    let mut message = error.kind().to_string();
    if let Some(detail) = error.detail() {
        message.push_str(": ");
        message.push_str(detail);
    }
    if let Some(line) = error.line() {
        message.push_str(&format!(" (line {line})"));
    }
    message
}
