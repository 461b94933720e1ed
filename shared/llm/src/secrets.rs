//! Secret values out of text and JSON: keys and `${ENV}` header values must never reach an
//! error message or returned data, even when a server echoes them.

use serde_json::Value;

/// What a secret value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Replace every occurrence of each (non-empty) secret in `text`.
pub fn redact_text(text: &mut String, secrets: &[String]) {
    for secret in secrets.iter().filter(|s| !s.is_empty()) {
        if text.contains(secret.as_str()) {
            *text = text.replace(secret.as_str(), REDACTED);
        }
    }
}

/// [`redact_text`] on every string inside `value`.
pub fn redact_json(value: &mut Value, secrets: &[String]) {
    if secrets.is_empty() {
        return;
    }
    match value {
        Value::String(text) => redact_text(text, secrets),
        Value::Array(items) => items.iter_mut().for_each(|i| redact_json(i, secrets)),
        Value::Object(map) => map.values_mut().for_each(|i| redact_json(i, secrets)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_replaced_in_text_and_nested_json() {
        let secrets = vec!["sk-1".to_owned(), String::new()];
        let mut text = "key sk-1 and sk-1".to_owned();
        redact_text(&mut text, &secrets);
        assert_eq!(text, "key [redacted] and [redacted]");
        let mut value = json!({"a": ["x sk-1"], "b": {"c": "sk-1"}, "n": 1});
        redact_json(&mut value, &secrets);
        assert_eq!(
            value,
            json!({"a": ["x [redacted]"], "b": {"c": "[redacted]"}, "n": 1})
        );
    }
}
