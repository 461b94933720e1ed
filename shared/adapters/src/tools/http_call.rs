//! `http_call` tools: a tool whose `execution` is an HTTP request, as an HTTP template.

use serde_json::Value;
use switchyard_catalog::template::{Datasource, Template};

use super::shown;
use crate::error::{AdapterError, Result};

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
pub fn http_call_datasource(datasource: &Datasource) -> Result<Option<Datasource>> {
    let mut templates = Vec::new();
    for template in &datasource.templates {
        templates.extend(http_call_template(template)?);
    }
    Ok((!templates.is_empty()).then(|| Datasource {
        spec: datasource.spec.clone(),
        templates,
    }))
}
