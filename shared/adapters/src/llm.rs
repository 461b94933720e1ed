//! An optional LLM, spoken to through any OpenAI-compatible chat-completions API (OpenAI,
//! Ollama, vLLM, llama.cpp server): filling the parameters deterministic extraction missed,
//! by a forced function call over the template's schema, and phrasing a short answer from
//! the data. Every failure (HTTP status, timeout, a reply without the function call,
//! arguments that are not a JSON object) is an error: the caller then asks for
//! clarification or keeps the rendered answer, never guesses. The API key is read from the
//! environment at call time, sent as a Bearer token, and never logged or returned.

use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION};
use reqwest::{redirect, Client, Url};
use serde_json::{json, Map, Value};
use switchyard_core::template::{ParamType, Template};

use crate::error::{describe, AdapterError, Result};

/// The `datasource` named in this module's errors.
const SOURCE: &str = "llm";

/// The largest chat-completions response read: 1 MiB.
const MAX_RESPONSE_BYTES: usize = 1 << 20;

/// The longest data text put into a synthesis prompt, in characters.
const MAX_DATA_CHARS: usize = 16_000;

/// What an error body is cut to before it goes into an error message.
const MAX_ERROR_BODY_CHARS: usize = 200;

const EXTRACT_PROMPT: &str = "Extract the values of the named parameters from the user's question. Call the function; use only values stated in the question; omit what is not stated.";

const SYNTHESIZE_PROMPT: &str = "Answer the user's question in one or two short sentences, using only the data given. Do not invent values. If the data does not answer the question, say so.";

/// A template as an OpenAI-style tool. A template with a `function_schema` uses its
/// `parameters` (and its `name`/`description` when present; a schema without `parameters`
/// that is itself an object schema is used as the parameters); otherwise the parameters are
/// derived from the template's `parameters`.
pub fn tool_schema(template: &Template) -> Value {
    let mut name = template.id.clone();
    let mut description = template.description.clone();
    let parameters = match &template.function_schema {
        Some(schema) => {
            if let Some(given) = schema.get("name").and_then(Value::as_str) {
                name = given.to_owned();
            }
            if let Some(given) = schema.get("description").and_then(Value::as_str) {
                description = given.to_owned();
            }
            match schema.get("parameters") {
                Some(parameters) => parameters.clone(),
                None if schema.get("properties").is_some()
                    || schema.get("type").and_then(Value::as_str) == Some("object") =>
                {
                    schema.clone()
                }
                None => derived_parameters(template),
            }
        }
        None => derived_parameters(template),
    };
    json!({
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": parameters,
        }
    })
}

/// The JSON Schema of a template's `parameters`.
fn derived_parameters(template: &Template) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for parameter in &template.parameters {
        let mut property = Map::new();
        let kind = match parameter.param_type {
            ParamType::String | ParamType::Date | ParamType::Enum => "string",
            ParamType::Integer => "integer",
            ParamType::Number => "number",
            ParamType::Boolean => "boolean",
        };
        property.insert("type".into(), kind.into());
        if parameter.param_type == ParamType::Date {
            property.insert("format".into(), "date".into());
        }
        if let Some(text) = &parameter.description {
            property.insert("description".into(), text.clone().into());
        }
        if !parameter.allowed_values.is_empty() {
            property.insert("enum".into(), parameter.allowed_values.clone().into());
        }
        if matches!(parameter.param_type, ParamType::Integer | ParamType::Number) {
            if let Some(min) = parameter.min {
                property.insert("minimum".into(), number(min));
            }
            if let Some(max) = parameter.max {
                property.insert("maximum".into(), number(max));
            }
        }
        properties.insert(parameter.name.clone(), Value::Object(property));
        if parameter.required {
            required.push(Value::from(parameter.name.clone()));
        }
    }
    json!({"type": "object", "properties": properties, "required": required})
}

/// A bound as JSON: whole values as integers.
fn number(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        Value::from(value as i64)
    } else {
        Value::from(value)
    }
}

/// A client of an OpenAI-compatible chat-completions API.
#[derive(Debug, Clone)]
pub struct ChatClient {
    endpoint: String,
    model: String,
    api_key_env: Option<String>,
    timeout: Duration,
    client: Client,
}

impl ChatClient {
    /// `endpoint` is the API's base URL (`http://127.0.0.1:11434/v1`); requests go to
    /// `{endpoint}/chat/completions`. `api_key_env` names the environment variable holding
    /// the key (read at each call; unset is an error). `timeout` bounds each whole call.
    pub fn new(
        endpoint: impl Into<String>,
        model: impl Into<String>,
        api_key_env: Option<String>,
        timeout: Duration,
    ) -> Result<ChatClient> {
        let endpoint = endpoint.into().trim().trim_end_matches('/').to_owned();
        let url = Url::parse(&endpoint)
            .map_err(|e| fail(format!("endpoint `{endpoint}` does not parse: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(fail(format!(
                "endpoint `{endpoint}` must be an http(s) URL with a host"
            )));
        }
        let model = model.into();
        if model.trim().is_empty() {
            return Err(fail("the model name is empty".into()));
        }
        let client = Client::builder()
            .redirect(redirect::Policy::none())
            .build()
            .map_err(|e| fail(format!("cannot build the HTTP client: {}", describe(&e))))?;
        Ok(ChatClient {
            endpoint,
            model,
            api_key_env,
            timeout: timeout.max(Duration::from_millis(1)),
            client,
        })
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    /// Ask the model for the `missing` parameters of `template` in `query`, by a forced call
    /// of the template's function. Gives only the `missing` names the call gave non-null
    /// values for; the caller validates them like any extracted value.
    pub async fn fill_missing(
        &self,
        template: &Template,
        query: &str,
        missing: &[String],
    ) -> Result<Map<String, Value>> {
        let tool = tool_schema(template);
        let name = tool["function"]["name"].clone();
        let request = json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": EXTRACT_PROMPT},
                {"role": "user", "content": query},
            ],
            "tools": [tool],
            "tool_choice": {"type": "function", "function": {"name": name}},
            "temperature": 0,
        });
        let reply = self.complete(&request).await?;
        let call = reply
            .pointer("/choices/0/message/tool_calls/0/function")
            .ok_or_else(|| fail("the reply has no function call".into()))?;
        if let Some(called) = call.get("name").and_then(Value::as_str) {
            if Some(called) != name.as_str() {
                return Err(fail(format!(
                    "the reply called `{called}`, not `{}`",
                    name.as_str().unwrap_or_default()
                )));
            }
        }
        let arguments = match call.get("arguments") {
            Some(Value::String(text)) => serde_json::from_str::<Value>(text)
                .map_err(|e| fail(format!("the function arguments are not JSON: {e}")))?,
            Some(object @ Value::Object(_)) => object.clone(),
            _ => return Err(fail("the function call has no arguments".into())),
        };
        let Value::Object(mut arguments) = arguments else {
            return Err(fail("the function arguments are not a JSON object".into()));
        };
        Ok(missing
            .iter()
            .filter_map(|key| match arguments.remove(key) {
                None | Some(Value::Null) => None,
                Some(value) => Some((key.clone(), value)),
            })
            .collect())
    }

    /// A short answer to `query` from `data` (the rendered answer is given as a draft).
    /// Gives the reply's text; an empty reply is an error.
    pub async fn synthesize(&self, query: &str, rendered: &str, data: &Value) -> Result<String> {
        let mut data_text = data.to_string();
        if data_text.chars().count() > MAX_DATA_CHARS {
            data_text = data_text.chars().take(MAX_DATA_CHARS).collect();
            data_text.push_str(" …(truncated)");
        }
        let request = json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": SYNTHESIZE_PROMPT},
                {"role": "user", "content": format!(
                    "Question: {query}\n\nData (JSON): {data_text}\n\nDraft answer: {rendered}"
                )},
            ],
            "temperature": 0,
        });
        let reply = self.complete(&request).await?;
        let content = reply
            .pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|text| !text.is_empty())
            .ok_or_else(|| fail("the reply has no content".into()))?;
        Ok(content.to_owned())
    }

    /// POST one chat completion within the timeout; gives the reply as JSON.
    async fn complete(&self, request: &Value) -> Result<Value> {
        let key = match &self.api_key_env {
            Some(variable) => Some(std::env::var(variable).map_err(|_| {
                fail(format!(
                    "the API key variable {variable} is not set (or not unicode)"
                ))
            })?),
            None => None,
        };
        let secrets: Vec<String> = key.iter().filter(|k| !k.is_empty()).cloned().collect();
        let outcome = tokio::time::timeout(self.timeout, self.exchange(request, key.as_deref()))
            .await
            .unwrap_or_else(|_| {
                Err(fail(format!(
                    "no reply within {} ms",
                    self.timeout.as_millis()
                )))
            });
        outcome.map_err(|error| redact(error, &secrets))
    }

    async fn exchange(&self, request: &Value, key: Option<&str>) -> Result<Value> {
        let url = format!("{}/chat/completions", self.endpoint);
        tracing::debug!(endpoint = %self.endpoint, model = %self.model, "LLM request");
        let mut builder = self
            .client
            .post(&url)
            .header(ACCEPT, "application/json")
            .json(request);
        if let Some(key) = key {
            builder = builder.header(AUTHORIZATION, format!("Bearer {key}"));
        }
        let mut response = builder
            .send()
            .await
            .map_err(|e| fail(format!("request failed: {}", describe(&e))))?;
        let status = response.status();
        let (body, cut) = read_capped(&mut response)
            .await
            .map_err(|e| fail(format!("reading the reply: {}", describe(&e))))?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            let detail = serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|v| {
                    v.pointer("/error/message")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
                .unwrap_or_else(|| text.trim().to_owned());
            let detail: String = detail.chars().take(MAX_ERROR_BODY_CHARS).collect();
            return Err(fail(if detail.is_empty() {
                format!("HTTP {status}")
            } else {
                format!("HTTP {status}: {detail}")
            }));
        }
        if cut {
            return Err(fail(format!(
                "the reply exceeded {MAX_RESPONSE_BYTES} bytes"
            )));
        }
        serde_json::from_slice(&body).map_err(|e| fail(format!("the reply is not JSON: {e}")))
    }
}

fn fail(message: String) -> AdapterError {
    AdapterError::Datasource {
        datasource: SOURCE.to_owned(),
        message,
    }
}

/// Replace the key, should a server echo it, in an error message.
fn redact(mut error: AdapterError, secrets: &[String]) -> AdapterError {
    if let AdapterError::Datasource { message, .. } = &mut error {
        for secret in secrets {
            if message.contains(secret.as_str()) {
                *message = message.replace(secret.as_str(), "[redacted]");
            }
        }
    }
    error
}

/// Read the body up to the cap; `true` when more arrived and was dropped.
async fn read_capped(response: &mut reqwest::Response) -> reqwest::Result<(Vec<u8>, bool)> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = MAX_RESPONSE_BYTES - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}
