//! Response rendering: numbers, template errors, and tool content with and without a response template.

use serde_json::{json, Value};
use switchyard_adapters::render::render;
use switchyard_adapters::tools::tool_content;
use switchyard_adapters::tools::ToolOutcome;
use switchyard_adapters::AdapterError;

use crate::helpers::{params, tool_template};

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
