//! `json_transform`: filter, sort, select and aggregate over a JSON array.

use std::cmp::Ordering;

use serde_json::Value;

use super::operation::JsonOp;
use super::{kind_of, number_of, parameter_error, shown, Call};
use crate::error::Result;

pub(super) fn json_transform(call: &Call, operation: JsonOp) -> Result<Value> {
    let items = json_array(call, "data")?;
    match operation {
        JsonOp::Filter => filter(call, items),
        JsonOp::Sort => sort(call, items),
        JsonOp::Select => select(call, items),
        JsonOp::Aggregate => aggregate(call, &items),
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
