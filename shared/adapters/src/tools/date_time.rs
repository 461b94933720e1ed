//! `date_time`: now, format, days_between, add_days, parse, day_of_week.

use std::fmt::Write as _;

use chrono::TimeDelta;
use serde_json::Value;

use super::operation::DateTimeOp;
use super::{parameter_error, Call, DEFAULT_DATE_FORMAT};
use crate::error::Result;

pub(super) fn date_time(call: &Call, operation: DateTimeOp) -> Result<Value> {
    let result = match operation {
        DateTimeOp::Now => match call.text("format")? {
            Some(pattern) => format_with(call, &pattern, call.now.format(&pattern))?,
            None => call.now.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        },
        DateTimeOp::DaysBetween => {
            let start = call.date("start_date")?;
            let end = call.date("end_date")?;
            return Ok(Value::from(end.signed_duration_since(start).num_days()));
        }
        DateTimeOp::AddDays => {
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
        DateTimeOp::Format => {
            let date = call.date("date")?;
            let pattern = call
                .text("format")?
                .unwrap_or_else(|| DEFAULT_DATE_FORMAT.to_owned());
            format_with(call, &pattern, date.format(&pattern))?
        }
        DateTimeOp::Parse => call.date("date")?.format("%Y-%m-%d").to_string(),
        DateTimeOp::DayOfWeek => call.date("date")?.format("%A").to_string(),
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
