//! Running one tool operation with a fixed clock, and the errors it answers with.

use chrono::{DateTime, TimeZone, Utc};
use serde_json::{json, Map, Value};
use switchyard_adapters::tools;
use switchyard_adapters::AdapterError;
use switchyard_catalog::template::Template;

pub(crate) fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 3, 15, 12, 30, 0).unwrap()
}

pub(crate) fn tool_template(tool: &str, operation: &str) -> Template {
    serde_json::from_value(json!({
        "id": format!("{tool}_{operation}"),
        "description": "test tool",
        "nl_examples": ["example"],
        "tool_type": "function",
        "tool_name": tool,
        "tool_operation": operation,
    }))
    .unwrap()
}

pub(crate) fn params(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

pub(crate) fn run(tool: &str, operation: &str, parameters: Value) -> Result<Value, AdapterError> {
    tools::run(&tool_template(tool, operation), &params(parameters), now())
        .map(|outcome| outcome.result)
}

pub(crate) fn ok(tool: &str, operation: &str, parameters: Value) -> Value {
    run(tool, operation, parameters.clone())
        .unwrap_or_else(|e| panic!("{tool}.{operation} on {parameters}: {e}"))
}

pub(crate) fn tool_error(tool: &str, operation: &str, parameters: Value) -> String {
    match run(tool, operation, parameters) {
        Err(AdapterError::Tool {
            tool: t,
            operation: o,
            message,
        }) => {
            assert_eq!((t.as_str(), o.as_str()), (tool, operation));
            message
        }
        other => panic!("expected a tool error, got {other:?}"),
    }
}

pub(crate) fn parameter_error(tool: &str, operation: &str, parameters: Value) -> (String, String) {
    match run(tool, operation, parameters) {
        Err(AdapterError::Parameter { name, message }) => (name, message),
        other => panic!("expected a parameter error, got {other:?}"),
    }
}
