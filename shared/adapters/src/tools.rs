//! Built-in tools: `calculator`, `date_time` and `json_transform`, run on parameters that
//! `switchyard_core::params::extract` already found and typed.
//!
//! Results are JSON values: numbers are rounded to [`RESULT_DECIMALS`] places (so
//! 0.1 + 0.2 answers 0.3) and whole results are integers (15% of 200 is `30`, not `30.0`).
//! Every refusal is an error naming the tool, the operation and the offending value; no input
//! panics.

use std::cmp::Ordering;
use std::fmt::Write as _;
use std::sync::LazyLock;

use chrono::{DateTime, NaiveDate, TimeDelta, Utc};
use regex::Regex;
use serde::Serialize;
use serde_json::{Map, Value};
use switchyard_core::params::parse_date;
use switchyard_core::template::Template;

use crate::error::{AdapterError, Result};

/// Decimal places numeric results are rounded to.
pub const RESULT_DECIMALS: u32 = 10;

/// The largest number of decimal places `calculator.round` accepts.
const MAX_ROUND_DECIMALS: i64 = 15;

/// The default pattern of `date_time.format`.
pub const DEFAULT_DATE_FORMAT: &str = "%B %d, %Y";

/// What a built-in tool answered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolOutcome {
    pub tool: String,
    pub operation: String,
    pub result: Value,
}

/// Run a built-in tool template on extracted parameters. `now` is injected for testability
/// (callers pass `chrono::Utc::now()`); relative dates ("today") and `date_time.now` use it.
pub fn run(
    template: &Template,
    parameters: &Map<String, Value>,
    now: DateTime<Utc>,
) -> Result<ToolOutcome> {
    let call = Call {
        tool: template.tool_name.as_deref().unwrap_or_default(),
        operation: template.tool_operation.as_deref().unwrap_or_default(),
        parameters,
        now,
    };
    let result = match call.tool {
        "calculator" => calculator(&call)?,
        "date_time" | "datetime" => date_time(&call)?,
        "json_transform" => json_transform(&call)?,
        "" => return Err(call.fail(format!("template `{}` names no tool_name", template.id))),
        other => {
            return Err(call.fail(format!(
                "unknown tool `{other}` (built-in tools: calculator, date_time, json_transform)"
            )))
        }
    };
    Ok(ToolOutcome {
        tool: call.tool.to_owned(),
        operation: call.operation.to_owned(),
        result,
    })
}

/// One tool invocation: the names errors carry and typed access to the parameters.
struct Call<'a> {
    tool: &'a str,
    operation: &'a str,
    parameters: &'a Map<String, Value>,
    now: DateTime<Utc>,
}

impl Call<'_> {
    fn fail(&self, message: impl Into<String>) -> AdapterError {
        AdapterError::Tool {
            tool: self.tool.to_owned(),
            operation: self.operation.to_owned(),
            message: message.into(),
        }
    }

    fn unknown_operation(&self, known: &str) -> AdapterError {
        if self.operation.is_empty() {
            self.fail(format!("no tool_operation (operations: {known})"))
        } else {
            self.fail(format!(
                "unknown operation `{}` (operations: {known})",
                self.operation
            ))
        }
    }

    /// A parameter's value; absent and `null` are the same.
    fn get(&self, name: &str) -> Option<&Value> {
        self.parameters.get(name).filter(|v| !v.is_null())
    }

    fn required(&self, name: &str) -> Result<&Value> {
        self.get(name)
            .ok_or_else(|| parameter_error(name, "missing: this operation needs it"))
    }

    fn number(&self, name: &str) -> Result<f64> {
        let value = self.required(name)?;
        number_of(value)
            .ok_or_else(|| parameter_error(name, format!("{} is not a number", shown(value))))
    }

    fn integer(&self, name: &str) -> Result<Option<i64>> {
        let Some(value) = self.get(name) else {
            return Ok(None);
        };
        if let Some(n) = value.as_i64() {
            return Ok(Some(n));
        }
        let n = number_of(value)
            .ok_or_else(|| parameter_error(name, format!("{} is not a number", shown(value))))?;
        if n.fract() != 0.0 {
            return Err(parameter_error(
                name,
                format!("{} is not a whole number", shown(value)),
            ));
        }
        // i64::MAX as f64 rounds up to 2^63, so the bound is exclusive.
        if n.abs() >= 9.223_372_036_854_775e18 {
            return Err(parameter_error(
                name,
                format!("{} is out of range", shown(value)),
            ));
        }
        Ok(Some(n as i64))
    }

    /// A text parameter; numbers and booleans read as their text.
    fn text(&self, name: &str) -> Result<Option<String>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(value @ (Value::Number(_) | Value::Bool(_))) => Ok(Some(value.to_string())),
            Some(value) => Err(parameter_error(
                name,
                format!("must be text, got {}", kind_of(value)),
            )),
        }
    }

    fn required_text(&self, name: &str) -> Result<String> {
        self.required(name)?;
        self.text(name).map(Option::unwrap_or_default)
    }

    fn date(&self, name: &str) -> Result<NaiveDate> {
        let text = self.required_text(name)?;
        parse_date(&text, self.now.date_naive()).ok_or_else(|| {
            self.fail(format!(
                "`{text}` is not a date (use YYYY-MM-DD, YYYY/MM/DD, DD.MM.YYYY or a written date like March 15, 2024)"
            ))
        })
    }

    /// A numeric result: finite, rounded, whole values as integers.
    fn number_result(&self, value: f64) -> Result<Value> {
        number_value(value).ok_or_else(|| self.fail("the result is too large to represent"))
    }
}

fn parameter_error(name: &str, message: impl Into<String>) -> AdapterError {
    AdapterError::Parameter {
        name: name.to_owned(),
        message: message.into(),
    }
}

/// A value as error messages quote it.
fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => format!("`{text}`"),
        other => format!("`{other}`"),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A JSON number, or a string holding one ("1,200", " 15 ", "$30", "15%").
fn number_of(value: &Value) -> Option<f64> {
    let n = match value {
        Value::Number(n) => n.as_f64()?,
        Value::String(text) => {
            let text = text.trim();
            let text = text.strip_prefix('$').unwrap_or(text);
            let text = text.strip_suffix('%').unwrap_or(text);
            text.replace([',', '_'], "").trim().parse::<f64>().ok()?
        }
        _ => return None,
    };
    n.is_finite().then_some(n)
}

/// `value` rounded to [`RESULT_DECIMALS`] places as JSON: an integer when whole, `None`
/// when not finite.
pub fn number_value(value: f64) -> Option<Value> {
    if !value.is_finite() {
        return None;
    }
    let rounded = round_decimal(value, RESULT_DECIMALS);
    if rounded.fract() == 0.0 && rounded.abs() < 9.0e15 {
        return Some(Value::from(rounded as i64));
    }
    serde_json::Number::from_f64(rounded).map(Value::Number)
}

/// Round half away from zero on the number's shortest decimal form, so 9.995 rounds to
/// 10.00 and 2.675 to 2.68 as a person would expect, not as its binary neighbour would.
pub fn round_decimal(value: f64, decimals: u32) -> f64 {
    if !value.is_finite() {
        return value;
    }
    // Rust prints floats in full positional notation, never with an exponent.
    let text = value.abs().to_string();
    let (whole, fraction) = text.split_once('.').unwrap_or((text.as_str(), ""));
    let keep = decimals as usize;
    if fraction.len() <= keep {
        return value;
    }
    let mut digits: Vec<u8> = whole
        .bytes()
        .chain(fraction.bytes().take(keep))
        .map(|b| b - b'0')
        .collect();
    if fraction.as_bytes()[keep] >= b'5' {
        let mut position = digits.len();
        loop {
            if position == 0 {
                digits.insert(0, 1);
                break;
            }
            position -= 1;
            if digits[position] == 9 {
                digits[position] = 0;
            } else {
                digits[position] += 1;
                break;
            }
        }
    }
    let split = digits.len() - keep;
    let mut rounded = String::with_capacity(digits.len() + 1);
    rounded.extend(digits[..split].iter().map(|d| char::from(b'0' + d)));
    if keep > 0 {
        rounded.push('.');
        rounded.extend(digits[split..].iter().map(|d| char::from(b'0' + d)));
    }
    let magnitude = rounded.parse::<f64>().unwrap_or(value.abs());
    if value.is_sign_negative() {
        -magnitude
    } else {
        magnitude
    }
}

// ---------------------------------------------------------------------------------------
// calculator

const CALCULATOR_OPERATIONS: &str = "percentage, add, subtract, multiply, divide, average, round";

fn calculator(call: &Call) -> Result<Value> {
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

// ---------------------------------------------------------------------------------------
// date_time

const DATE_TIME_OPERATIONS: &str = "now, format, days_between (diff), add_days, parse, day_of_week";

fn date_time(call: &Call) -> Result<Value> {
    let result = match call.operation {
        "now" => match call.text("format")? {
            Some(pattern) => format_with(call, &pattern, call.now.format(&pattern))?,
            None => call.now.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        },
        "days_between" | "diff" => {
            let start = call.date("start_date")?;
            let end = call.date("end_date")?;
            return Ok(Value::from(end.signed_duration_since(start).num_days()));
        }
        "add_days" => {
            let date = call.date("date")?;
            let days = call
                .integer("days")?
                .ok_or_else(|| parameter_error("days", "missing: this operation needs it"))?;
            let later = TimeDelta::try_days(days).and_then(|delta| date.checked_add_signed(delta));
            match later {
                Some(later) => later.format("%Y-%m-%d").to_string(),
                None => {
                    return Err(call.fail(format!(
                        "{date} plus {days} days is outside the supported date range"
                    )))
                }
            }
        }
        "format" | "format_date" => {
            let date = call.date("date")?;
            let pattern = call
                .text("format")?
                .unwrap_or_else(|| DEFAULT_DATE_FORMAT.to_owned());
            format_with(call, &pattern, date.format(&pattern))?
        }
        "parse" => call.date("date")?.format("%Y-%m-%d").to_string(),
        "day_of_week" | "weekday" => call.date("date")?.format("%A").to_string(),
        _ => return Err(call.unknown_operation(DATE_TIME_OPERATIONS)),
    };
    Ok(Value::String(result))
}

/// Write a chrono format, turning a bad pattern into an error (chrono's `to_string` would
/// panic on one).
fn format_with(call: &Call, pattern: &str, formatted: impl std::fmt::Display) -> Result<String> {
    let mut out = String::new();
    write!(out, "{formatted}").map_err(|_| {
        call.fail(format!(
            "`{pattern}` is not a usable date format (strftime, e.g. \"%B %d, %Y\" or \"%d/%m/%Y\")"
        ))
    })?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// json_transform

const JSON_OPERATIONS: &str = "filter, sort, select, aggregate";

fn json_transform(call: &Call) -> Result<Value> {
    if !matches!(call.operation, "filter" | "sort" | "select" | "aggregate") {
        return Err(call.unknown_operation(JSON_OPERATIONS));
    }
    let items = json_array(call, "data")?;
    match call.operation {
        "filter" => filter(call, items),
        "sort" => sort(call, items),
        "select" => select(call, items),
        _ => aggregate(call, &items),
    }
}

/// The `data` parameter: a JSON array, or a string holding one.
fn json_array(call: &Call, name: &str) -> Result<Vec<Value>> {
    match call.required(name)? {
        Value::Array(items) => Ok(items.clone()),
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Array(items)) => Ok(items),
            Ok(other) => Err(parameter_error(
                name,
                format!("must be a JSON array, got {}", kind_of(&other)),
            )),
            Err(e) => Err(parameter_error(name, format!("is not a JSON array: {e}"))),
        },
        other => Err(parameter_error(
            name,
            format!("must be a JSON array, got {}", kind_of(other)),
        )),
    }
}

/// The value at `field` ("a.b" walks into objects, "items.0" into arrays); `null` is absent.
fn lookup<'v>(item: &'v Value, field: &str) -> Option<&'v Value> {
    let found = match item.get(field) {
        Some(value) => value,
        None => field
            .split('.')
            .try_fold(item, |current, key| match current {
                Value::Object(map) => map.get(key),
                Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
                _ => None,
            })?,
    };
    (!found.is_null()).then_some(found)
}

/// An optional `limit` on how many items an answer keeps.
fn apply_limit(call: &Call, mut items: Vec<Value>) -> Result<Value> {
    if let Some(limit) = call.integer("limit")? {
        let limit = usize::try_from(limit)
            .map_err(|_| parameter_error("limit", format!("{limit} is negative")))?;
        items.truncate(limit);
    }
    Ok(Value::Array(items))
}

fn filter(call: &Call, items: Vec<Value>) -> Result<Value> {
    let field = call.required_text("field")?;
    let op = match call.text("op")? {
        Some(op) => op,
        None => call.text("operator")?.unwrap_or_else(|| "eq".to_owned()),
    };
    let wanted = call.required("value")?;
    let test: fn(Option<&Value>, &Value) -> bool = match op.trim().to_ascii_lowercase().as_str() {
        "eq" | "=" | "==" => |found, wanted| found.is_some_and(|f| equal(f, wanted)),
        "ne" | "!=" | "<>" => |found, wanted| !found.is_some_and(|f| equal(f, wanted)),
        "gt" | ">" => |found, wanted| ordered(found, wanted, |o| o.is_gt()),
        "gte" | "ge" | ">=" => |found, wanted| ordered(found, wanted, |o| o.is_ge()),
        "lt" | "<" => |found, wanted| ordered(found, wanted, |o| o.is_lt()),
        "lte" | "le" | "<=" => |found, wanted| ordered(found, wanted, |o| o.is_le()),
        "contains" => |found, wanted| found.is_some_and(|f| contains(f, wanted)),
        _ => {
            return Err(call.fail(format!(
                "unknown filter op `{op}` (ops: eq, ne, gt, gte, lt, lte, contains)"
            )))
        }
    };
    let kept = items
        .into_iter()
        .filter(|item| test(lookup(item, &field), wanted))
        .collect();
    apply_limit(call, kept)
}

/// Numbers (and numeric strings) compare as numbers, strings as text, booleans as booleans.
fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    if let (Some(x), Some(y)) = (number_of(a), number_of(b)) {
        return x.partial_cmp(&y);
    }
    match (a, b) {
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

fn equal(a: &Value, b: &Value) -> bool {
    match compare(a, b) {
        Some(order) => order.is_eq(),
        None => a == b,
    }
}

fn ordered(found: Option<&Value>, wanted: &Value, test: fn(Ordering) -> bool) -> bool {
    found
        .and_then(|found| compare(found, wanted))
        .is_some_and(test)
}

/// Text containment (case-insensitive), or membership in an array.
fn contains(found: &Value, wanted: &Value) -> bool {
    match found {
        Value::String(text) => {
            let needle = match wanted {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            text.to_lowercase().contains(&needle.to_lowercase())
        }
        Value::Array(items) => items.iter().any(|item| equal(item, wanted)),
        _ => false,
    }
}

/// A total order for sorting: numbers (and numeric strings) first by value, then text,
/// then booleans, then anything else by its JSON text.
#[derive(PartialEq, PartialOrd)]
enum SortKey<'v> {
    Number(TotalF64),
    Text(&'v str),
    Bool(bool),
    Other(String),
}

#[derive(PartialEq)]
struct TotalF64(f64);

impl PartialOrd for TotalF64 {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.0.total_cmp(&other.0))
    }
}

fn sort_key(value: &Value) -> SortKey<'_> {
    if let Some(n) = number_of(value) {
        return SortKey::Number(TotalF64(n));
    }
    match value {
        Value::String(text) => SortKey::Text(text),
        Value::Bool(b) => SortKey::Bool(*b),
        other => SortKey::Other(other.to_string()),
    }
}

fn sort(call: &Call, mut items: Vec<Value>) -> Result<Value> {
    let field = call.required_text("field")?;
    let order = call.text("order")?.unwrap_or_else(|| "asc".to_owned());
    let descending = match order.trim().to_ascii_lowercase().as_str() {
        "asc" | "ascending" => false,
        "desc" | "descending" => true,
        _ => return Err(call.fail(format!("unknown sort order `{order}` (orders: asc, desc)"))),
    };
    items.sort_by(|x, y| {
        match (lookup(x, &field), lookup(y, &field)) {
            (None, None) => Ordering::Equal,
            // Items without the field go last either way.
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some(a), Some(b)) => {
                let order = sort_key(a)
                    .partial_cmp(&sort_key(b))
                    .unwrap_or(Ordering::Equal);
                if descending {
                    order.reverse()
                } else {
                    order
                }
            }
        }
    });
    apply_limit(call, items)
}

/// The `fields` parameter: a list of names or a comma-separated string.
fn field_list(call: &Call) -> Result<Vec<String>> {
    let fields: Vec<String> = match call.required("fields")? {
        Value::Array(names) => names
            .iter()
            .map(|name| match name {
                Value::String(name) => Ok(name.trim().to_owned()),
                other => Err(parameter_error(
                    "fields",
                    format!("{} is not a field name", shown(other)),
                )),
            })
            .collect::<Result<_>>()?,
        Value::String(names) => names.split(',').map(|n| n.trim().to_owned()).collect(),
        other => {
            return Err(parameter_error(
                "fields",
                format!("must be a list of field names, got {}", kind_of(other)),
            ))
        }
    };
    let fields: Vec<String> = fields.into_iter().filter(|f| !f.is_empty()).collect();
    if fields.is_empty() {
        return Err(parameter_error("fields", "names no fields"));
    }
    Ok(fields)
}

fn select(call: &Call, items: Vec<Value>) -> Result<Value> {
    let fields = field_list(call)?;
    let selected = items
        .iter()
        .enumerate()
        .map(|(position, item)| {
            if !item.is_object() {
                return Err(call.fail(format!(
                    "item {position} is {}, not an object with fields",
                    kind_of(item)
                )));
            }
            Ok(Value::Object(
                fields
                    .iter()
                    .map(|f| (f.clone(), lookup(item, f).cloned().unwrap_or(Value::Null)))
                    .collect(),
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    apply_limit(call, selected)
}

fn aggregate(call: &Call, items: &[Value]) -> Result<Value> {
    let function = call.required_text("function")?;
    let field = call.text("field")?;
    let function_name = function.trim().to_ascii_lowercase();
    if function_name == "count" {
        let count = match &field {
            Some(field) => items.iter().filter(|i| lookup(i, field).is_some()).count(),
            None => items.len(),
        };
        return Ok(Value::from(count));
    }
    let field = field
        .ok_or_else(|| parameter_error("field", format!("missing: `{function}` needs a field")))?;
    let numbers: Vec<f64> = items
        .iter()
        .filter_map(|item| lookup(item, &field).and_then(number_of))
        .collect();
    let empty = || call.fail(format!("no numeric values of `{field}` to {function}"));
    let result = match function_name.as_str() {
        "sum" => numbers.iter().sum(),
        "avg" | "average" | "mean" => {
            if numbers.is_empty() {
                return Err(empty());
            }
            numbers.iter().sum::<f64>() / numbers.len() as f64
        }
        "min" => numbers.iter().copied().reduce(f64::min).ok_or_else(empty)?,
        "max" => numbers.iter().copied().reduce(f64::max).ok_or_else(empty)?,
        _ => {
            return Err(call.fail(format!(
                "unknown aggregate function `{function}` (functions: sum, avg, min, max, count)"
            )))
        }
    };
    call.number_result(result)
}

/// A tool whose `execution` is `{type: http_call, …}`: an HTTP request made with the HTTP
/// adapter's machinery (allow-list, encoding, secrets, retries, size cap) on the tools
/// datasource's `connection.base_url` and `allowed_hosts`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct HttpCall {
    #[serde(rename = "type")]
    kind: String,
    endpoint_template: String,
    #[serde(default)]
    http_method: Option<String>,
    #[serde(default)]
    query_params: Option<std::collections::BTreeMap<String, Value>>,
    #[serde(default)]
    headers: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default)]
    body: Option<Value>,
    #[serde(default)]
    response_mapping: Option<Value>,
}

/// `execution.type` of HTTP tools, and the operation `tool_execution` reports for them.
pub const HTTP_CALL: &str = "http_call";

/// `execution.type` of the built-in tools (the same as no `execution`).
const BUILTIN: &str = "builtin";

/// The HTTP template an `execution.type: http_call` tool runs (its parameters, response
/// template and id, with the execution's request fields), `None` for built-in tools
/// (no `execution`, or `type: builtin`). A
/// malformed `execution` is an error naming the template and the field.
pub fn http_call_template(template: &Template) -> Result<Option<Template>> {
    let Some(execution) = &template.execution else {
        return Ok(None);
    };
    let fail = |message: String| AdapterError::Tool {
        tool: template.tool_name.clone().unwrap_or_default(),
        operation: HTTP_CALL.to_owned(),
        message: format!("template `{}`: {message}", template.id),
    };
    match execution.get("type").and_then(Value::as_str) {
        Some(BUILTIN) => return Ok(None),
        Some(HTTP_CALL) => {}
        _ => {
            return Err(fail(format!(
                "execution.type must be `{BUILTIN}` or `{HTTP_CALL}`, found {}",
                execution.get("type").map_or("nothing".into(), shown)
            )))
        }
    }
    let call: HttpCall = serde_path_to_error::deserialize(execution)
        .map_err(|e| fail(format!("execution.{}: {}", e.path(), e.inner())))?;
    debug_assert_eq!(call.kind, HTTP_CALL);
    let mut http = template.clone();
    http.tool_type = None;
    http.tool_name = None;
    http.tool_operation = None;
    http.execution = None;
    http.endpoint_template = Some(call.endpoint_template);
    http.http_method = call.http_method;
    http.query_params = call.query_params;
    http.headers = call.headers;
    http.body = call.body;
    http.response_mapping = call.response_mapping.or(http.response_mapping);
    Ok(Some(http))
}

/// The HTTP templates of a tools datasource's `http_call` tools, as an HTTP datasource
/// (`None` when it has none), for the HTTP adapter to open and check.
pub fn http_call_datasource(
    datasource: &switchyard_core::template::Datasource,
) -> Result<Option<switchyard_core::template::Datasource>> {
    let mut templates = Vec::new();
    for template in &datasource.templates {
        templates.extend(http_call_template(template)?);
    }
    Ok(
        (!templates.is_empty()).then(|| switchyard_core::template::Datasource {
            spec: datasource.spec.clone(),
            templates,
        }),
    )
}
