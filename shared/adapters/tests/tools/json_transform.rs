//! json_transform: filter, sort, select and aggregate, and inputs that are not arrays.

use serde_json::{json, Value};

use crate::helpers::{ok, parameter_error, tool_error};

fn staff() -> Value {
    json!([
        {"name": "Ann", "dept": "Eng", "salary": 120, "skills": ["rust", "sql"]},
        {"name": "Bob", "dept": "Sales", "salary": 90},
        {"name": "Cy", "dept": "Eng", "salary": 100.5},
        {"name": "Di", "dept": "Ops"},
    ])
}

fn names(result: &Value) -> Vec<&str> {
    result
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["name"].as_str().unwrap())
        .collect()
}

fn filtered(field: &str, op: &str, value: Value) -> Vec<String> {
    let result = ok(
        "json_transform",
        "filter",
        json!({"data": staff(), "field": field, "op": op, "value": value}),
    );
    names(&result).into_iter().map(str::to_owned).collect()
}

#[test]
fn filter_every_op() {
    assert_eq!(filtered("dept", "eq", json!("Eng")), ["Ann", "Cy"]);
    assert_eq!(filtered("dept", "ne", json!("Eng")), ["Bob", "Di"]);
    assert_eq!(filtered("salary", "gt", json!(100.5)), ["Ann"]);
    assert_eq!(filtered("salary", "gte", json!(100.5)), ["Ann", "Cy"]);
    assert_eq!(filtered("salary", "lt", json!(100.5)), ["Bob"]);
    assert_eq!(filtered("salary", "lte", json!("100.5")), ["Bob", "Cy"]);
    assert_eq!(filtered("name", "contains", json!("n")), ["Ann"]);
    assert_eq!(filtered("skills", "contains", json!("sql")), ["Ann"]);
    assert_eq!(filtered("salary", "eq", json!("90")), ["Bob"]);
    // `op` defaults to eq; data may arrive as a JSON string; `limit` trims.
    let result = ok(
        "json_transform",
        "filter",
        json!({"data": staff().to_string(), "field": "dept", "value": "Eng", "limit": 1}),
    );
    assert_eq!(names(&result), ["Ann"]);
    let message = tool_error(
        "json_transform",
        "filter",
        json!({"data": staff(), "field": "dept", "op": "like", "value": "E"}),
    );
    assert!(message.contains("`like`"), "{message}");
    let (name, _) = parameter_error(
        "json_transform",
        "filter",
        json!({"data": staff(), "field": "dept"}),
    );
    assert_eq!(name, "value");
}

#[test]
fn sort_both_orders_missing_last() {
    let asc = ok(
        "json_transform",
        "sort",
        json!({"data": staff(), "field": "salary"}),
    );
    assert_eq!(names(&asc), ["Bob", "Cy", "Ann", "Di"]);
    let desc = ok(
        "json_transform",
        "sort",
        json!({"data": staff(), "field": "salary", "order": "desc"}),
    );
    assert_eq!(names(&desc), ["Ann", "Cy", "Bob", "Di"]);
    let by_name = ok(
        "json_transform",
        "sort",
        json!({"data": staff(), "field": "name", "order": "DESC"}),
    );
    assert_eq!(names(&by_name), ["Di", "Cy", "Bob", "Ann"]);
    let message = tool_error(
        "json_transform",
        "sort",
        json!({"data": staff(), "field": "name", "order": "sideways"}),
    );
    assert!(message.contains("sideways"), "{message}");
    // Mixed kinds still sort (a total order), without panicking.
    let mixed = ok(
        "json_transform",
        "sort",
        json!({"data": [{"v": "b"}, {"v": 2}, {"v": true}, {"v": "10"}, {"v": [1]}, {"v": "a"}], "field": "v"}),
    );
    assert_eq!(
        mixed,
        json!([{"v": 2}, {"v": "10"}, {"v": "a"}, {"v": "b"}, {"v": true}, {"v": [1]}])
    );
}

#[test]
fn select_fields_from_list_or_text() {
    let expected = json!([
        {"name": "Ann", "salary": 120},
        {"name": "Bob", "salary": 90},
        {"name": "Cy", "salary": 100.5},
        {"name": "Di", "salary": null},
    ]);
    assert_eq!(
        ok(
            "json_transform",
            "select",
            json!({"data": staff(), "fields": ["name", "salary"]})
        ),
        expected
    );
    assert_eq!(
        ok(
            "json_transform",
            "select",
            json!({"data": staff(), "fields": "name, salary"})
        ),
        expected
    );
    let message = tool_error(
        "json_transform",
        "select",
        json!({"data": [1, 2], "fields": "name"}),
    );
    assert!(message.contains("item 0"), "{message}");
}

#[test]
fn aggregate_every_function() {
    let agg = |function: &str, field: Option<&str>| {
        let mut p = json!({"data": staff(), "function": function});
        if let Some(field) = field {
            p["field"] = json!(field);
        }
        ok("json_transform", "aggregate", p)
    };
    assert_eq!(agg("sum", Some("salary")), json!(310.5));
    assert_eq!(agg("avg", Some("salary")), json!(103.5));
    assert_eq!(agg("min", Some("salary")), json!(90));
    assert_eq!(agg("max", Some("salary")), json!(120));
    assert_eq!(agg("count", None), json!(4));
    assert_eq!(agg("count", Some("salary")), json!(3));
    let message = tool_error(
        "json_transform",
        "aggregate",
        json!({"data": staff(), "function": "avg", "field": "dept"}),
    );
    assert!(message.contains("no numeric values of `dept`"), "{message}");
    let message = tool_error(
        "json_transform",
        "aggregate",
        json!({"data": staff(), "function": "median", "field": "salary"}),
    );
    assert!(message.contains("`median`"), "{message}");
}

#[test]
fn json_transform_refuses_non_arrays() {
    for data in [
        json!({"name": "Ann"}),
        json!("{\"name\": \"Ann\"}"),
        json!("not json at all"),
        json!(42),
    ] {
        let (name, message) = parameter_error(
            "json_transform",
            "sort",
            json!({"data": data, "field": "name"}),
        );
        assert_eq!(name, "data");
        assert!(message.contains("JSON array"), "{message}");
    }
    let (name, _) = parameter_error("json_transform", "sort", json!({"field": "name"}));
    assert_eq!(name, "data");
    let message = tool_error("json_transform", "explode", json!({"data": []}));
    assert!(message.contains("unknown operation `explode`"), "{message}");
}
