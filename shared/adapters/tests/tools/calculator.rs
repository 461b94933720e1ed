//! The calculator: every operation's value, and its refusals.

use serde_json::json;

use crate::helpers::{ok, parameter_error, tool_error};

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
    assert!(message.contains("overflow"), "{message}");
}
