//! `calculator`: percentage, add, subtract, multiply, divide, average, round.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::{kind_of, number_of, parameter_error, round_decimal, shown, Call};
use crate::error::Result;

/// The largest number of decimal places `calculator.round` accepts.
const MAX_ROUND_DECIMALS: i64 = 15;

const CALCULATOR_OPERATIONS: &str = "percentage, add, subtract, multiply, divide, average, round";

pub(super) fn calculator(call: &Call) -> Result<Value> {
    let result = match call.operation {
        "percentage" | "percent" => call.number("percentage")? * call.number("value")? / 100.0,
        "add" => call.number("a")? + call.number("b")?,
        "subtract" => call.number("a")? - call.number("b")?,
        "multiply" => call.number("a")? * call.number("b")?,
        "divide" => {
            let (a, b) = (call.number("a")?, call.number("b")?);
            if b == 0.0 {
                return Err(call.fail("division by zero"));
            }
            a / b
        }
        "average" | "mean" => {
            let values = numbers_in(call, "values")?;
            values.iter().sum::<f64>() / values.len() as f64
        }
        "round" => {
            let value = call.number("value")?;
            let decimals = call.integer("decimals")?.unwrap_or(0);
            if !(0..=MAX_ROUND_DECIMALS).contains(&decimals) {
                return Err(parameter_error(
                    "decimals",
                    format!("{decimals} is not between 0 and {MAX_ROUND_DECIMALS}"),
                ));
            }
            // In range, so the cast is exact.
            round_decimal(value, decimals as u32)
        }
        _ => return Err(call.unknown_operation(CALCULATOR_OPERATIONS)),
    };
    call.number_result(result)
}

static NUMBER_IN_TEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"-?(?:\d+(?:\.\d+)?|\.\d+)").expect("the number pattern is valid")
});

/// Every number a list parameter holds: a JSON array of numbers, one number, or free text
/// ("4, 8, 15 and 42"), where commas and words separate the numbers.
fn numbers_in(call: &Call, name: &str) -> Result<Vec<f64>> {
    let value = call.required(name)?;
    let numbers: Vec<f64> = match value {
        Value::Array(items) => items
            .iter()
            .map(|item| {
                number_of(item).ok_or_else(|| {
                    parameter_error(name, format!("{} is not a number", shown(item)))
                })
            })
            .collect::<Result<_>>()?,
        Value::Number(_) => number_of(value).into_iter().collect(),
        Value::String(text) => numbers_in_text(text),
        other => {
            return Err(parameter_error(
                name,
                format!("must be a list of numbers, got {}", kind_of(other)),
            ))
        }
    };
    if numbers.is_empty() {
        return Err(parameter_error(
            name,
            format!("no numbers in {}", shown(value)),
        ));
    }
    Ok(numbers)
}

fn numbers_in_text(text: &str) -> Vec<f64> {
    NUMBER_IN_TEXT
        .find_iter(text)
        .filter_map(|found| {
            let mut number = found.as_str();
            // A hyphen glued to a word or number ("COVID-19", "3-4") is not a minus sign.
            let glued = text[..found.start()]
                .chars()
                .next_back()
                .is_some_and(char::is_alphanumeric);
            if glued {
                number = number.strip_prefix('-').unwrap_or(number);
            }
            number.parse::<f64>().ok().filter(|n| n.is_finite())
        })
        .collect()
}
