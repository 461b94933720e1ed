//! Which built-in tool and operation a template names, parsed once into enums: an unknown
//! tool or operation is refused at `index build` (the tools factory's check) instead of
//! at the first question that reaches it, and each tool matches on its own operations.

use switchyard_catalog::template::Template;

/// The calculator's operations.
pub const CALCULATOR_OPERATIONS: &str =
    "percentage, add, subtract, multiply, divide, average, round";
/// `date_time`'s operations.
pub const DATE_TIME_OPERATIONS: &str =
    "now, format, days_between (diff), add_days, parse, day_of_week";
/// `json_transform`'s operations.
pub const JSON_OPERATIONS: &str = "filter, sort, select, aggregate";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    Calculator(CalculatorOp),
    DateTime(DateTimeOp),
    JsonTransform(JsonOp),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CalculatorOp {
    Percentage,
    Add,
    Subtract,
    Multiply,
    Divide,
    Average,
    Round,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateTimeOp {
    Now,
    DaysBetween,
    AddDays,
    Format,
    Parse,
    DayOfWeek,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonOp {
    Filter,
    Sort,
    Select,
    Aggregate,
}

impl Builtin {
    /// The template's `tool_name` and `tool_operation`; the error says which field is wrong
    /// and lists what is accepted.
    pub fn of(template: &Template) -> Result<Builtin, String> {
        let tool = template.tool_name.as_deref().unwrap_or_default();
        let operation = template.tool_operation.as_deref().unwrap_or_default();
        Builtin::parse(tool, operation)
    }

    pub fn parse(tool: &str, operation: &str) -> Result<Builtin, String> {
        let unknown = |known: &str| {
            if operation.is_empty() {
                format!("no tool_operation (operations: {known})")
            } else {
                format!("unknown operation `{operation}` (operations: {known})")
            }
        };
        match tool {
            "calculator" => Ok(Builtin::Calculator(match operation {
                "percentage" | "percent" => CalculatorOp::Percentage,
                "add" => CalculatorOp::Add,
                "subtract" => CalculatorOp::Subtract,
                "multiply" => CalculatorOp::Multiply,
                "divide" => CalculatorOp::Divide,
                "average" | "mean" => CalculatorOp::Average,
                "round" => CalculatorOp::Round,
                _ => return Err(unknown(CALCULATOR_OPERATIONS)),
            })),
            "date_time" | "datetime" => Ok(Builtin::DateTime(match operation {
                "now" => DateTimeOp::Now,
                "days_between" | "diff" => DateTimeOp::DaysBetween,
                "add_days" => DateTimeOp::AddDays,
                "format" | "format_date" => DateTimeOp::Format,
                "parse" => DateTimeOp::Parse,
                "day_of_week" | "weekday" => DateTimeOp::DayOfWeek,
                _ => return Err(unknown(DATE_TIME_OPERATIONS)),
            })),
            "json_transform" => Ok(Builtin::JsonTransform(match operation {
                "filter" => JsonOp::Filter,
                "sort" => JsonOp::Sort,
                "select" => JsonOp::Select,
                "aggregate" => JsonOp::Aggregate,
                _ => return Err(unknown(JSON_OPERATIONS)),
            })),
            "" => Err("no tool_name".to_owned()),
            other => Err(format!(
                "unknown tool `{other}` (built-in tools: calculator, date_time, json_transform)"
            )),
        }
    }
}
