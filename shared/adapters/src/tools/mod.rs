//! Built-in tools: `calculator`, `date_time` and `json_transform`, run on parameters that
//! `switchyard_text::params::extract` already found and typed, and `http_call` tools, run
//! by the HTTP adapter.
//!
//! Results are JSON values: numbers are rounded to [`RESULT_DECIMALS`] places (so
//! 0.1 + 0.2 answers 0.3) and whole results are integers (15% of 200 is `30`, not `30.0`).
//! Every refusal is an error naming the tool, the operation and the offending value; no input
//! panics.

mod calculator;
mod date_time;
mod http_call;
mod json_transform;
mod operation;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;
use serde_json::{json, Map, Value};
use switchyard_catalog::template::{Datasource, Template};
use switchyard_catalog::BoxFuture;
use switchyard_text::params::parse_date;

use crate::adapter::{Adapter, Answer};
use crate::error::{AdapterError, Result};
use crate::http::HttpDatasource;
use crate::render::{plain_text, render};

pub use calculator::check_reading;
pub use http_call::{http_call_datasource, http_call_template, HTTP_CALL};
pub use operation::{Builtin, CalculatorOp, DateTimeOp, JsonOp};

/// Decimal places numeric results are rounded to.
pub const RESULT_DECIMALS: u32 = 10;

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
    let builtin = Builtin::of(template).map_err(|message| call.fail(message))?;
    let result = match builtin {
        Builtin::Calculator(operation) => calculator::calculator(&call, operation)?,
        Builtin::DateTime(operation) => date_time::date_time(&call, operation)?,
        Builtin::JsonTransform(operation) => json_transform::json_transform(&call, operation)?,
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
        if value.is_nan() {
            return Err(self.fail("the result is not a number (NaN)"));
        }
        number_value(value).ok_or_else(|| {
            self.fail(format!(
                "overflow: the result is beyond {}1.8e308, the largest magnitude the calculator holds",
                if value < 0.0 { "-" } else { "" }
            ))
        })
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

/// A tools datasource: its built-in tools, and its `http_call` tools made through an HTTP
/// datasource on the tools datasource's connection and allowed hosts.
pub struct ToolsAdapter {
    http: Option<HttpDatasource>,
    /// The HTTP request of each `execution.type: http_call` tool, by template id.
    http_calls: HashMap<String, Template>,
}

impl ToolsAdapter {
    /// The checks an index build runs: every `execution` parses and every `http_call`
    /// stays on the datasource's allowed hosts.
    /// Every template names a built-in tool and operation it has, or is an `http_call`
    /// whose endpoint passes the HTTP adapter's checks; the error names the template.
    pub fn check(datasource: &Datasource) -> Result<()> {
        for template in &datasource.templates {
            if http_call_template(template)?.is_none() {
                Builtin::of(template).map_err(|message| AdapterError::Tool {
                    tool: template.tool_name.clone().unwrap_or_default(),
                    operation: template.tool_operation.clone().unwrap_or_default(),
                    message: format!("template `{}`: {message}", template.id),
                })?;
            }
        }
        match http_call_datasource(datasource)? {
            Some(calls) => HttpDatasource::check(&calls),
            None => Ok(()),
        }
    }

    pub fn open(datasource: &Datasource) -> Result<ToolsAdapter> {
        let Some(calls) = http_call_datasource(datasource)? else {
            return Ok(ToolsAdapter {
                http: None,
                http_calls: HashMap::new(),
            });
        };
        let http = HttpDatasource::open(&calls)?;
        let http_calls = calls
            .templates
            .into_iter()
            .map(|template| (template.id.clone(), template))
            .collect();
        Ok(ToolsAdapter {
            http: Some(http),
            http_calls,
        })
    }

    async fn outcome(
        &self,
        template: &Template,
        parameters: &Map<String, Value>,
        operation: &str,
        deadline: Duration,
    ) -> Result<ToolOutcome> {
        match (self.http_calls.get(&template.id), &self.http) {
            (Some(call), Some(api)) => {
                let result = api.call(call, parameters, operation, deadline).await?;
                Ok(ToolOutcome {
                    tool: template.tool_name.clone().unwrap_or_default(),
                    operation: HTTP_CALL.to_owned(),
                    result: result.data,
                })
            }
            _ => run(template, parameters, Utc::now()),
        }
    }
}

impl Adapter for ToolsAdapter {
    fn execute<'a>(
        &'a self,
        template: &'a Template,
        parameters: &'a Map<String, Value>,
        request: &'a switchyard_contract::adapter::AdapterRequest,
        deadline: Duration,
    ) -> BoxFuture<'a, Result<Answer>> {
        Box::pin(async move {
            if template.tool_name.as_deref() == Some("calculator") {
                let operation = template.tool_operation.as_deref().unwrap_or_default();
                check_reading(operation, &request.query, parameters)?;
            }
            let started = Instant::now();
            let outcome = self
                .outcome(template, parameters, request.operation(), deadline)
                .await?;
            let execution_time_ms = started.elapsed().as_secs_f64() * 1000.0;
            let content = tool_content(template, parameters, &outcome)?;
            let data = json!({
                "tool_execution": {
                    "tool": outcome.tool,
                    "operation": outcome.operation,
                    "parameters": parameters,
                    "result": outcome.result,
                    "status": "ok",
                    "execution_time_ms": (execution_time_ms * 1000.0).round() / 1000.0,
                }
            });
            Ok((content, data))
        })
    }

    /// Notation the calculator lacks is refused before the dispatcher asks for parameters
    /// it could not use: "2 to the power of 10" is not a multiplication short of factors.
    fn refuse_before_extraction(&self, template: &Template, question: &str) -> Option<String> {
        if template.tool_name.as_deref() != Some("calculator") {
            return None;
        }
        let operation = template.tool_operation.as_deref().unwrap_or_default();
        check_reading(operation, question, &Map::new())
            .err()
            .map(|e| e.to_string())
    }
}

/// Render a tool template's answer: its `response_template` over the parameters plus
/// `result`, or, when it has none, the result alone as plain text.
pub fn tool_content(
    template: &Template,
    parameters: &Map<String, Value>,
    outcome: &ToolOutcome,
) -> Result<String> {
    match template.response_template.as_deref() {
        Some(source) => {
            let mut context = parameters.clone();
            context.insert("result".to_owned(), outcome.result.clone());
            render(&template.id, source, &Value::Object(context))
        }
        None => Ok(plain_text(&outcome.result)),
    }
}
