//! Secrets in header values: `${NAME}` takes the environment variable's value at call
//! time, and every value used is redacted from errors and returned data.

use switchyard_llm::redact_text;

use crate::error::AdapterError;
use crate::http::placeholders::is_name;

/// Replace each `${NAME}` in a header value with the variable's value; gives the text and
/// the values used. A missing variable is named, never its value.
pub(super) fn expand_env(
    value: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> std::result::Result<(String, Vec<String>), String> {
    let mut text = String::with_capacity(value.len());
    let mut used = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        text.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| "`${` without a closing `}`".to_owned())?;
        let variable = &after[..end];
        if !is_name(variable) {
            return Err(format!(
                "`${{{variable}}}` is not an environment variable name"
            ));
        }
        let secret = lookup(variable)
            .ok_or_else(|| format!("the environment variable {variable} is not set"))?;
        text.push_str(&secret);
        if !secret.is_empty() {
            used.push(secret);
        }
        rest = &after[end + 1..];
    }
    text.push_str(rest);
    Ok((text, used))
}

/// The error with every secret value replaced.
pub(super) fn redact_error(mut error: AdapterError, secrets: &[String]) -> AdapterError {
    if let AdapterError::Datasource { message, .. } | AdapterError::Parameter { message, .. } =
        &mut error
    {
        redact_text(message, secrets);
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_expansion_names_the_variable() {
        let (text, used) =
            expand_env("Bearer ${T}", |v| (v == "T").then(|| "xyz".to_owned())).unwrap();
        assert_eq!(
            (text.as_str(), used),
            ("Bearer xyz", vec!["xyz".to_owned()])
        );
        let problem = expand_env("${MISSING_ONE}", |_| None).unwrap_err();
        assert_eq!(problem, "the environment variable MISSING_ONE is not set");
        assert!(expand_env("${oops", |_| None).is_err());
    }
}
