//! `calculator`: percentage, add, subtract, multiply, divide, average, round.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::operation::{CalculatorOp, CALCULATOR_OPERATIONS};
use super::{kind_of, number_of, parameter_error, round_decimal, shown, Call};
use crate::error::{AdapterError, Result};

/// The largest number of decimal places `calculator.round` accepts.
const MAX_ROUND_DECIMALS: i64 = 15;

pub(super) fn calculator(call: &Call, operation: CalculatorOp) -> Result<Value> {
    let result = match operation {
        CalculatorOp::Percentage => call.number("percentage")? * call.number("value")? / 100.0,
        CalculatorOp::Add => call.number("a")? + call.number("b")?,
        CalculatorOp::Subtract => call.number("a")? - call.number("b")?,
        CalculatorOp::Multiply => call.number("a")? * call.number("b")?,
        CalculatorOp::Divide => {
            let (a, b) = (call.number("a")?, call.number("b")?);
            if b == 0.0 {
                return Err(call.fail("division by zero"));
            }
            a / b
        }
        CalculatorOp::Average => {
            let values = numbers_in(call, "values")?;
            values.iter().sum::<f64>() / values.len() as f64
        }
        CalculatorOp::Round => {
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

/// Notation for operations the calculator does not have: a question using one is refused,
/// never answered as another operation ("10**6" is not 10 × 6).
static UNSUPPORTED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\*\*|\^|\d\s*!|\b(?:to the power|power of|raised to|exponent|squared|cubed|square roots?|cube roots?|sqrt|roots? of|factorials?|logarithms?|log of|ln|modulo|mod)\b",
    )
    .expect("the notation pattern is valid")
});

/// A written operator between two numbers ("12 * 30", "1e308*1e308", "7 − 2").
static OPERATOR_BETWEEN_NUMBERS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\d\s*([+\-−*×x/÷])\s*-?(?:\d|\.\d)").expect("the operator pattern is valid")
});

/// A whole number literal as a question writes it, exponent included ("1e308", "2.5E-3").
static LITERAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?").expect("the literal pattern is valid")
});

/// Whether the calculator read `question` exactly for `operation`: no notation of an
/// operation it lacks, no written operator of another operation ("1e308 * 1e308" routed to
/// `add`), and no number parameter that is only a piece of a longer literal
/// (308 read out of "1e308"). Otherwise the refusal says what was not read; nothing is
/// computed. Parameters that are not in the question (a session's) are not checked.
pub fn check_reading(
    operation: &str,
    question: &str,
    parameters: &Map<String, Value>,
) -> Result<()> {
    let refuse = |message: String| AdapterError::Tool {
        tool: "calculator".to_owned(),
        operation: operation.to_owned(),
        message,
    };
    if let Some(found) = UNSUPPORTED.find(question) {
        return Err(refuse(format!(
            "the question uses `{}`, an operation the calculator does not have \
             (it has: {CALCULATOR_OPERATIONS}); nothing was computed",
            found.as_str().trim()
        )));
    }
    let symbols: Vec<&str> = OPERATOR_BETWEEN_NUMBERS
        .captures_iter(question)
        .filter_map(|c| c.get(1).map(|m| m.as_str()))
        .collect();
    if let [symbol] = symbols[..] {
        let (asked, name) = match symbol {
            "+" => ("add", "an addition"),
            "-" | "−" => ("subtract", "a subtraction"),
            "/" | "÷" => ("divide", "a division"),
            _ => ("multiply", "a multiplication"),
        };
        let arithmetic = ["add", "subtract", "multiply", "divide"];
        if arithmetic.contains(&operation) && operation != asked {
            return Err(refuse(format!(
                "the question's `{symbol}` asks for {name}, not `{operation}`; nothing was computed"
            )));
        }
    }
    let literals: Vec<&str> = LITERAL.find_iter(question).map(|m| m.as_str()).collect();
    for (name, value) in parameters {
        let Some(number) = number_of(value) else {
            continue;
        };
        let whole = literals
            .iter()
            .any(|literal| literal.parse::<f64>().is_ok_and(|n| n == number.abs()));
        if whole {
            continue;
        }
        let text = number.abs().to_string();
        if let Some(literal) = literals
            .iter()
            .find(|literal| literal.contains(text.as_str()))
        {
            return Err(parameter_error(
                name,
                format!(
                    "{text} is only part of `{literal}` in the question, which was not read exactly; nothing was computed"
                ),
            ));
        }
    }
    Ok(())
}
