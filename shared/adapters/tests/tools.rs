//! Built-in tools and response rendering: every operation's value, the refusals, and the
//! demo tools catalog end to end (extract → run → render).

use std::path::Path;

use chrono::{DateTime, TimeZone, Utc};
use serde_json::{json, Map, Value};
use switchyard_adapters::render::{render, tool_content};
use switchyard_adapters::tools::{self, ToolOutcome};
use switchyard_adapters::AdapterError;
use switchyard_core::template::{Catalog, Template};

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 3, 15, 12, 30, 0).unwrap()
}

fn tool_template(tool: &str, operation: &str) -> Template {
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

fn params(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

fn run(tool: &str, operation: &str, parameters: Value) -> Result<Value, AdapterError> {
    tools::run(&tool_template(tool, operation), &params(parameters), now())
        .map(|outcome| outcome.result)
}

fn ok(tool: &str, operation: &str, parameters: Value) -> Value {
    run(tool, operation, parameters.clone())
        .unwrap_or_else(|e| panic!("{tool}.{operation} on {parameters}: {e}"))
}

fn tool_error(tool: &str, operation: &str, parameters: Value) -> String {
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

fn parameter_error(tool: &str, operation: &str, parameters: Value) -> (String, String) {
    match run(tool, operation, parameters) {
        Err(AdapterError::Parameter { name, message }) => (name, message),
        other => panic!("expected a parameter error, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// calculator

#[test]
fn percentage_is_a_whole_integer_when_whole() {
    let result = ok(
        "calculator",
        "percentage",
        json!({"percentage": 15, "value": 200}),
    );
    assert_eq!(result, json!(30));
    assert!(result.is_i64(), "30, not 30.0: {result}");
    assert_eq!(
        ok(
            "calculator",
            "percentage",
            json!({"percentage": 7.5, "value": 1200})
        ),
        json!(90)
    );
    assert_eq!(
        ok(
            "calculator",
            "percentage",
            json!({"percentage": 12, "value": 60})
        ),
        json!(7.2)
    );
    // Numbers given as text are read too.
    assert_eq!(
        ok(
            "calculator",
            "percentage",
            json!({"percentage": "15%", "value": "1,200"})
        ),
        json!(180)
    );
}

#[test]
fn add_subtract_multiply() {
    assert_eq!(
        ok("calculator", "add", json!({"a": 12, "b": 30})),
        json!(42)
    );
    assert_eq!(
        ok("calculator", "add", json!({"a": 0.1, "b": 0.2})),
        json!(0.3)
    );
    assert_eq!(
        ok("calculator", "add", json!({"a": 3.5, "b": 4.25})),
        json!(7.75)
    );
    assert_eq!(
        ok("calculator", "subtract", json!({"a": 100, "b": 37})),
        json!(63)
    );
    assert_eq!(
        ok("calculator", "subtract", json!({"a": 10, "b": 12.5})),
        json!(-2.5)
    );
    assert_eq!(
        ok("calculator", "multiply", json!({"a": 7, "b": 8})),
        json!(56)
    );
    assert_eq!(
        ok("calculator", "multiply", json!({"a": 2.5, "b": 40})),
        json!(100)
    );
}

#[test]
fn divide_and_division_by_zero() {
    assert_eq!(
        ok("calculator", "divide", json!({"a": 144, "b": 12})),
        json!(12)
    );
    assert_eq!(
        ok("calculator", "divide", json!({"a": 75, "b": 4})),
        json!(18.75)
    );
    assert_eq!(
        ok("calculator", "divide", json!({"a": 22, "b": 7})),
        json!(3.1428571429)
    );
    assert_eq!(
        tool_error("calculator", "divide", json!({"a": 1, "b": 0})),
        "division by zero"
    );
    assert_eq!(
        tool_error("calculator", "divide", json!({"a": 1, "b": 0.0})),
        "division by zero"
    );
}

#[test]
fn average_pulls_every_number_out_of_text() {
    assert_eq!(
        ok(
            "calculator",
            "average",
            json!({"values": "4, 8, 15 and 42"})
        ),
        json!(17.25)
    );
    assert_eq!(
        ok(
            "calculator",
            "average",
            json!({"values": "4, 8, 15, 16, 23 and 42"})
        ),
        json!(18)
    );
    assert_eq!(
        ok(
            "calculator",
            "average",
            json!({"values": "88 92 79 and 95"})
        ),
        json!(88.5)
    );
    assert_eq!(
        ok("calculator", "average", json!({"values": "-3, 3.5 and .5"})),
        json!(0.3333333333)
    );
    assert_eq!(
        ok("calculator", "average", json!({"values": [1, 2, "3"]})),
        json!(2)
    );
    assert_eq!(ok("calculator", "average", json!({"values": 7})), json!(7));
    let (name, message) = parameter_error("calculator", "average", json!({"values": "none here"}));
    assert_eq!(name, "values");
    assert!(message.contains("no numbers"), "{message}");
}

#[test]
#[allow(clippy::approx_constant)] // 3.14159 and 2.71828 are the demo's own examples.
fn round_to_decimals() {
    assert_eq!(
        ok(
            "calculator",
            "round",
            json!({"value": 3.14159, "decimals": 2})
        ),
        json!(3.14)
    );
    assert_eq!(
        ok(
            "calculator",
            "round",
            json!({"value": 2.71828, "decimals": 3})
        ),
        json!(2.718)
    );
    // Decimal rounding, half away from zero: 9.995 → 10.00, not 9.99.
    assert_eq!(
        ok(
            "calculator",
            "round",
            json!({"value": 9.995, "decimals": 2})
        ),
        json!(10)
    );
    assert_eq!(ok("calculator", "round", json!({"value": 47.6})), json!(48));
    assert_eq!(
        ok("calculator", "round", json!({"value": -2.5, "decimals": 0})),
        json!(-3)
    );
    assert_eq!(
        ok(
            "calculator",
            "round",
            json!({"value": 1234.5678, "decimals": 1})
        ),
        json!(1234.6)
    );
    let (name, _) = parameter_error("calculator", "round", json!({"value": 1.5, "decimals": 99}));
    assert_eq!(name, "decimals");
    let (name, _) = parameter_error(
        "calculator",
        "round",
        json!({"value": 1.5, "decimals": 1.5}),
    );
    assert_eq!(name, "decimals");
}

#[test]
fn calculator_refusals() {
    let message = tool_error("calculator", "sqrt", json!({"a": 4}));
    assert!(message.contains("unknown operation `sqrt`"), "{message}");
    let (name, message) = parameter_error("calculator", "add", json!({"a": 1}));
    assert_eq!(name, "b");
    assert!(message.contains("missing"), "{message}");
    let (name, _) = parameter_error("calculator", "add", json!({"a": 1, "b": null}));
    assert_eq!(name, "b");
    let (name, message) = parameter_error("calculator", "add", json!({"a": "lots", "b": 1}));
    assert_eq!(name, "a");
    assert!(message.contains("lots"), "{message}");
    let message = tool_error("calculator", "multiply", json!({"a": 1e300, "b": 1e300}));
    assert!(message.contains("too large"), "{message}");
}

// ---------------------------------------------------------------------------------------
// date_time

#[test]
fn now_uses_the_injected_clock() {
    assert_eq!(
        ok("date_time", "now", json!({})),
        json!("2024-03-15 12:30:00 UTC")
    );
    assert_eq!(
        ok("date_time", "now", json!({"format": "%A %d.%m.%Y"})),
        json!("Friday 15.03.2024")
    );
}

#[test]
fn days_between_and_diff() {
    let span = json!({"start_date": "2024-01-01", "end_date": "2024-03-15"});
    assert_eq!(ok("date_time", "days_between", span.clone()), json!(74));
    assert_eq!(ok("date_time", "diff", span), json!(74));
    assert_eq!(
        ok(
            "date_time",
            "days_between",
            json!({"start_date": "2023-01-01", "end_date": "2022-11-24"})
        ),
        json!(-38)
    );
    // Written dates are accepted too.
    assert_eq!(
        ok(
            "date_time",
            "diff",
            json!({"start_date": "March 1, 2024", "end_date": "15.03.2024"})
        ),
        json!(14)
    );
}

#[test]
fn add_days_crosses_months_and_leap_days() {
    assert_eq!(
        ok(
            "date_time",
            "add_days",
            json!({"date": "2024-02-28", "days": 2})
        ),
        json!("2024-03-01")
    );
    assert_eq!(
        ok(
            "date_time",
            "add_days",
            json!({"date": "2024-03-01", "days": -1})
        ),
        json!("2024-02-29")
    );
    assert_eq!(
        ok(
            "date_time",
            "add_days",
            json!({"date": "2024-01-01", "days": 90})
        ),
        json!("2024-03-31")
    );
    let message = tool_error(
        "date_time",
        "add_days",
        json!({"date": "2024-01-01", "days": 1_000_000_000_000_i64}),
    );
    assert!(
        message.contains("outside the supported date range"),
        "{message}"
    );
    let message = tool_error(
        "date_time",
        "add_days",
        json!({"date": "2024-01-01", "days": i64::MAX}),
    );
    assert!(message.contains("outside"), "{message}");
    let (name, _) = parameter_error(
        "date_time",
        "add_days",
        json!({"date": "2024-01-01", "days": 1e300}),
    );
    assert_eq!(name, "days");
    let (name, _) = parameter_error("date_time", "add_days", json!({"date": "2024-01-01"}));
    assert_eq!(name, "days");
}

#[test]
fn format_with_default_and_custom_patterns() {
    assert_eq!(
        ok("date_time", "format", json!({"date": "2024-07-04"})),
        json!("July 04, 2024")
    );
    assert_eq!(
        ok(
            "date_time",
            "format",
            json!({"date": "2024-03-15", "format": "%d/%m/%Y"})
        ),
        json!("15/03/2024")
    );
    assert_eq!(
        ok(
            "date_time",
            "format_date",
            json!({"date": "2024-03-15", "format": "%a %-d %b"})
        ),
        json!("Fri 15 Mar")
    );
    for bad in ["%Q", "%H:%M", "%"] {
        let message = tool_error(
            "date_time",
            "format",
            json!({"date": "2024-03-15", "format": bad}),
        );
        assert!(message.contains(bad), "{message}");
    }
}

#[test]
fn parse_accepts_common_spellings() {
    for spelling in [
        "2024-03-15",
        "2024/03/15",
        "15.03.2024",
        "March 15, 2024",
        "15 March 2024",
        "Mar 15 2024",
        "mar 15, 2024",
        "15th March 2024",
        "March 15th, 2024",
        "Friday, March 15, 2024",
        "2024-03-15T08:00:00Z",
        "today",
    ] {
        assert_eq!(
            ok("date_time", "parse", json!({"date": spelling})),
            json!("2024-03-15"),
            "{spelling}"
        );
    }
    assert_eq!(
        ok("date_time", "parse", json!({"date": "tomorrow"})),
        json!("2024-03-16")
    );
}

#[test]
fn day_of_week() {
    assert_eq!(
        ok("date_time", "day_of_week", json!({"date": "2024-03-15"})),
        json!("Friday")
    );
    assert_eq!(
        ok("date_time", "day_of_week", json!({"date": "2000-01-01"})),
        json!("Saturday")
    );
    assert_eq!(
        ok("date_time", "day_of_week", json!({"date": "1969-07-20"})),
        json!("Sunday")
    );
}

#[test]
fn bad_dates_are_named() {
    for bad in ["2024-13-45", "2023-02-29", "someday", ""] {
        let message = tool_error("date_time", "day_of_week", json!({"date": bad}));
        assert!(message.contains(&format!("`{bad}`")), "{message}");
    }
    let message = tool_error(
        "date_time",
        "days_between",
        json!({"start_date": "2024-01-01", "end_date": "31/31/2024"}),
    );
    assert!(message.contains("31/31/2024"), "{message}");
    let (name, _) = parameter_error(
        "date_time",
        "days_between",
        json!({"start_date": "2024-01-01"}),
    );
    assert_eq!(name, "end_date");
    let message = tool_error("date_time", "tomorrow", json!({}));
    assert!(
        message.contains("unknown operation `tomorrow`"),
        "{message}"
    );
}

// ---------------------------------------------------------------------------------------
// json_transform

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

// ---------------------------------------------------------------------------------------
// tools and templates

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

// ---------------------------------------------------------------------------------------
// rendering

#[test]
fn render_prints_whole_numbers_without_a_fraction() {
    let context = json!({"x": 30.0, "y": 2.5, "n": 7, "items": [1.0, 2.5]});
    assert_eq!(
        render(
            "t",
            "{{ x }} {{ y }} {{ n }} {{ x / 3 }} {{ items }}",
            &context
        )
        .unwrap(),
        "30 2.5 7 10 [1, 2.5]"
    );
    // No HTML escaping, whatever the id looks like.
    assert_eq!(
        render("page.html", "{{ s }}", &json!({"s": "a < b & c"})).unwrap(),
        "a < b & c"
    );
}

#[test]
fn render_errors_name_the_template() {
    match render("my_template", "Hello {{ nobody }}", &json!({})) {
        Err(AdapterError::Render { template, message }) => {
            assert_eq!(template, "my_template");
            assert!(message.contains("undefined"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    match render("broken", "{{ unclosed", &json!({})) {
        Err(AdapterError::Render { template, .. }) => assert_eq!(template, "broken"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn tool_content_with_and_without_a_response_template() {
    let outcome = |result: Value| ToolOutcome {
        tool: "calculator".into(),
        operation: "add".into(),
        result,
    };
    let mut template = tool_template("calculator", "add");
    let parameters = params(json!({"a": 1.0, "b": 2}));
    assert_eq!(
        tool_content(&template, &parameters, &outcome(json!(3))).unwrap(),
        "3"
    );
    assert_eq!(
        tool_content(&template, &parameters, &outcome(json!("Friday"))).unwrap(),
        "Friday"
    );
    template.response_template = Some("{{ a }} + {{ b }} = **{{ result }}**".into());
    assert_eq!(
        tool_content(&template, &parameters, &outcome(json!(3.0))).unwrap(),
        "1 + 2 = **3**"
    );
}

// ---------------------------------------------------------------------------------------
// the demo tools catalog, end to end

fn demo_tools() -> Vec<Template> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo");
    let catalog = Catalog::load(&dir).unwrap();
    let tools = catalog.datasource("tools").expect("a `tools` datasource");
    assert!(!tools.templates.is_empty());
    tools.templates.clone()
}

/// Extract, run and render one question against one template.
fn answer(template: &Template, question: &str) -> Result<String, String> {
    let extraction = switchyard_core::params::extract(template, question, &Map::new());
    if !extraction.missing.is_empty() || !extraction.invalid.is_empty() {
        return Err(format!(
            "missing {:?}, invalid {:?}",
            extraction.missing, extraction.invalid
        ));
    }
    let outcome = tools::run(template, &extraction.parameters, now()).map_err(|e| e.to_string())?;
    tool_content(template, &extraction.parameters, &outcome).map_err(|e| e.to_string())
}

#[test]
fn every_demo_template_answers_its_first_example() {
    for template in demo_tools() {
        let example = &template.nl_examples[0];
        let content = answer(&template, example)
            .unwrap_or_else(|e| panic!("{} on {example:?}: {e}", template.id));
        assert!(!content.trim().is_empty(), "{}: empty answer", template.id);
    }
}

#[test]
fn every_demo_example_runs() {
    let mut failures = Vec::new();
    for template in demo_tools() {
        for example in &template.nl_examples {
            if let Err(e) = answer(&template, example) {
                failures.push(format!("{} on {example:?}: {e}", template.id));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn demo_answers_read_exactly() {
    let templates = demo_tools();
    let by_id = |id: &str| {
        templates
            .iter()
            .find(|t| t.id == id)
            .unwrap_or_else(|| panic!("no template {id}"))
    };
    let cases = [
        (
            "calculator_percentage",
            "What is 15% of 200?",
            "15% of 200 is **30**",
        ),
        ("calculator_add", "What is 12 plus 30?", "12 + 30 = **42**"),
        (
            "calculator_subtract",
            "Subtract 45 from 230",
            "230 - 45 = **185**",
        ),
        (
            "calculator_multiply",
            "What is 7 times 8?",
            "7 × 8 = **56**",
        ),
        (
            "calculator_divide",
            "What is 144 divided by 12?",
            "144 ÷ 12 = **12**",
        ),
        (
            "calculator_average",
            "What is the average of 4, 8, 15 and 42?",
            "The average of 4, 8, 15 and 42 is **17.25**",
        ),
        (
            "calculator_round",
            "Round 3.14159 to 2 decimal places",
            "3.14159 rounded to 2 decimal places is **3.14**",
        ),
        (
            "datetime_now",
            "What time is it?",
            "It is currently **2024-03-15 12:30:00 UTC**",
        ),
        (
            "datetime_days_between",
            "How many days between 2024-01-01 and 2024-03-15?",
            "There are **74** days between 2024-01-01 and 2024-03-15.",
        ),
        (
            "datetime_add_days",
            "What date is 2 days after 2024-02-28?",
            "2 days after 2024-02-28 is **2024-03-01**",
        ),
        (
            "datetime_format_date",
            "Format 2024-07-04 as a long date",
            "2024-07-04 formatted is **July 04, 2024**",
        ),
        (
            "datetime_format_date",
            "Convert 2024-03-15 to the format \"%d/%m/%Y\"",
            "2024-03-15 formatted is **15/03/2024**",
        ),
        (
            "datetime_day_of_week",
            "What day of the week is 2024-03-15?",
            "2024-03-15 is a **Friday**",
        ),
    ];
    for (id, question, expected) in cases {
        assert_eq!(answer(by_id(id), question).unwrap(), expected, "{question}");
    }
}
