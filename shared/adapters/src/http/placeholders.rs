//! Parameter values into a request: `{name}` path placeholders as percent-encoded
//! segments, query values through URL encoding, `"{name}"` JSON strings as typed values.
//! A value can never change the path's shape, the host or the request's structure.

use std::ops::Range;

use serde_json::{Map, Value};

use crate::error::{AdapterError, Result};

pub(super) fn is_name(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The `{name}` placeholders of a text: byte range (braces included) and name.
pub(super) fn placeholders(text: &str) -> Vec<(Range<usize>, &str)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(open) = text[from..].find('{').map(|i| from + i) {
        match text[open + 1..].find('}').map(|i| open + 1 + i) {
            Some(close) if is_name(&text[open + 1..close]) => {
                found.push((open..close + 1, &text[open + 1..close]));
                from = close + 1;
            }
            Some(_) => from = open + 1,
            None => break,
        }
    }
    found
}

/// `name` when `value` is exactly the string `"{name}"`.
pub(super) fn whole_placeholder(value: &Value) -> Option<&str> {
    let inner = value.as_str()?.strip_prefix('{')?.strip_suffix('}')?;
    is_name(inner).then_some(inner)
}

/// Fill the endpoint's `{name}` placeholders, each value percent-encoded as one path
/// segment: `/`, `?`, `#` and `%` are encoded, and `.`/`..` or an empty value are refused.
pub(super) fn fill_path(endpoint: &str, parameters: &Map<String, Value>) -> Result<String> {
    let mut filled = endpoint.to_owned();
    for (range, name) in placeholders(endpoint).into_iter().rev() {
        let refuse = |message: &str| AdapterError::Parameter {
            name: name.to_owned(),
            message: message.to_owned(),
        };
        let text = match parameters.get(name) {
            None | Some(Value::Null) => {
                return Err(refuse("required by the endpoint path, but has no value"))
            }
            Some(Value::String(text)) => text.clone(),
            Some(Value::Number(number)) => number.to_string(),
            Some(Value::Bool(flag)) => flag.to_string(),
            Some(_) => return Err(refuse("a list or object cannot be a path segment")),
        };
        if text.is_empty() || text == "." || text == ".." {
            return Err(refuse(&format!(
                "`{text}` cannot be a path segment (empty, `.` or `..`)"
            )));
        }
        filled.replace_range(range, &encode_segment(&text));
    }
    Ok(filled)
}

/// Percent-encode every byte but the unreserved characters (RFC 3986).
pub(super) fn encode_segment(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// A query value as the texts to send (a list repeats the key; null sends nothing).
pub(super) fn query_texts(value: &Value) -> Option<Vec<String>> {
    match value {
        Value::Null => Some(Vec::new()),
        Value::String(text) => Some(vec![text.clone()]),
        Value::Number(_) | Value::Bool(_) => Some(vec![value.to_string()]),
        Value::Array(items) => {
            let mut texts = Vec::new();
            for item in items {
                match item {
                    Value::Array(_) | Value::Object(_) => return None,
                    other => texts.extend(query_texts(other)?),
                }
            }
            Some(texts)
        }
        Value::Object(_) => None,
    }
}

/// A JSON template with every `"{name}"` string replaced by the parameter's JSON value;
/// a placeholder without a value is left out of its object (null in a list).
pub(super) fn fill_json(value: &Value, parameters: &Map<String, Value>) -> Option<Value> {
    if let Some(name) = whole_placeholder(value) {
        return parameters.get(name).cloned();
    }
    Some(match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter_map(|(key, item)| Some((key.clone(), fill_json(item, parameters)?)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| fill_json(item, parameters).unwrap_or(Value::Null))
                .collect(),
        ),
        other => other.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn segments_are_encoded_and_dot_segments_refused() {
        assert_eq!(encode_segment("a/b?c#d %"), "a%2Fb%3Fc%23d%20%25");
        assert_eq!(encode_segment("é"), "%C3%A9");
        let parameters = json!({"id": "..", "n": 7}).as_object().unwrap().clone();
        assert!(fill_path("/u/{id}", &parameters).is_err());
        assert_eq!(fill_path("/u/{n}/x{", &parameters).unwrap(), "/u/7/x{");
    }
}
