//! Unknown tools, a missing operation, and odd inputs that must never panic.

use serde_json::{json, Map, Value};
use switchyard_adapters::tools;
use switchyard_adapters::AdapterError;

use crate::helpers::{now, run, tool_error, tool_template};

#[test]
fn unknown_tool_and_missing_operation() {
    let message = tool_error("weather", "forecast", json!({}));
    assert!(message.contains("unknown tool `weather`"), "{message}");
    let mut template = tool_template("calculator", "add");
    template.tool_operation = None;
    match tools::run(&template, &Map::new(), now()) {
        Err(AdapterError::Tool { message, .. }) => {
            assert!(message.contains("no tool_operation"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn odd_inputs_never_panic() {
    let odd = [
        json!(null),
        json!(""),
        json!("-"),
        json!("."),
        json!("1e999"),
        json!("NaN"),
        json!(-0.0),
        json!(f64::MAX),
        json!(i64::MIN),
        json!(u64::MAX),
        json!([]),
        json!([[[]]]),
        json!({}),
        json!("%"),
        json!("9999-12-31"),
        json!("-262144-01-01"),
        json!("[1, {\"a\": [2]}]"),
    ];
    let operations = [
        ("calculator", "percentage"),
        ("calculator", "add"),
        ("calculator", "subtract"),
        ("calculator", "multiply"),
        ("calculator", "divide"),
        ("calculator", "average"),
        ("calculator", "round"),
        ("date_time", "now"),
        ("date_time", "days_between"),
        ("date_time", "add_days"),
        ("date_time", "format"),
        ("date_time", "parse"),
        ("date_time", "day_of_week"),
        ("json_transform", "filter"),
        ("json_transform", "sort"),
        ("json_transform", "select"),
        ("json_transform", "aggregate"),
    ];
    let names = [
        "percentage",
        "value",
        "a",
        "b",
        "values",
        "decimals",
        "format",
        "start_date",
        "end_date",
        "date",
        "days",
        "data",
        "field",
        "op",
        "order",
        "fields",
        "function",
        "limit",
    ];
    for (tool, operation) in operations {
        for value in &odd {
            let all: Map<String, Value> = names
                .iter()
                .map(|n| (n.to_string(), value.clone()))
                .collect();
            let _ = tools::run(&tool_template(tool, operation), &all, now());
        }
    }
    // Dates at the edges of the calendar.
    let _ = run(
        "date_time",
        "add_days",
        json!({"date": "9999-12-31", "days": 99_999_999}),
    );
}
