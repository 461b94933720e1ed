//! An optional LLM, spoken to through any OpenAI-compatible chat-completions API (OpenAI,
//! Ollama, vLLM, llama.cpp server): filling the parameters deterministic extraction missed,
//! by a forced function call over the template's schema, and phrasing a short answer from
//! the data. Every failure (HTTP status, timeout, a reply without the function call,
//! arguments that are not a JSON object) is an error: the caller then asks for
//! clarification or keeps the rendered answer, never guesses. The API key is read from the
//! environment at call time, sent as a Bearer token, and never logged or returned.

use std::time::Duration;

use serde_json::{json, Map, Value};
use switchyard_catalog::template::{ParamType, Template};
use switchyard_llm::{ApiKey, ChatClient, ChatRequest, Dialect, LlmError, Tool};

use crate::error::{AdapterError, Result};

/// The `datasource` named in this module's errors.
const SOURCE: &str = "llm";

/// The longest data text put into a synthesis prompt, in characters.
const MAX_DATA_CHARS: usize = 16_000;

const EXTRACT_PROMPT: &str = "Extract the values of the named parameters from the user's question. Call the function; use only values stated in the question; omit what is not stated.";

const SQL_PROMPT: &str = "Write one read-only SQL query that answers the user's question from the tables described. Use only those tables and columns. Reply with the SQL alone, no explanation.";

const SYNTHESIZE_PROMPT: &str = "Answer the user's question in one or two short sentences, using only the data given. Do not invent values. If the data does not answer the question, say so.";

/// A template as an OpenAI-style tool: see [`tool`].
pub fn tool_schema(template: &Template) -> Value {
    tool(template).to_openai()
}

/// A template as a function for the model to call. A template with a `function_schema`
/// uses its `parameters` (and its `name`/`description` when present; a schema without
/// `parameters` that is itself an object schema is used as the parameters); otherwise the
/// parameters are derived from the template's `parameters`.
pub fn tool(template: &Template) -> Tool {
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
    Tool {
        name,
        description,
        parameters,
    }
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

/// The optional model behind the adapters, spoken to through an OpenAI-compatible
/// chat-completions API.
#[derive(Debug, Clone)]
pub struct Assistant {
    client: ChatClient,
}

impl Assistant {
    /// `endpoint` is the API's base URL (`http://127.0.0.1:11434/v1`); requests go to
    /// `{endpoint}/chat/completions`. `api_key_env` names the environment variable holding
    /// the key (read at each call; unset is an error). `timeout` bounds each whole call.
    pub fn new(
        endpoint: impl Into<String>,
        model: impl Into<String>,
        api_key_env: Option<String>,
        timeout: Duration,
    ) -> Result<Assistant> {
        let client = ChatClient::new(
            Dialect::Openai,
            &endpoint.into(),
            &model.into(),
            api_key_env.map(ApiKey::Env),
            timeout,
        )
        .map_err(model_error)?;
        Ok(Assistant { client })
    }

    pub fn endpoint(&self) -> &str {
        self.client.endpoint()
    }

    pub fn model(&self) -> &str {
        self.client.model()
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
        let tool = tool(template);
        let request = ChatRequest {
            system: EXTRACT_PROMPT,
            user: query,
            forced_tool: Some(&tool),
            max_tokens: None,
        };
        let reply = self.client.chat(&request).await.map_err(model_error)?;
        let call = reply
            .function_call()
            .ok_or_else(|| fail("the reply has no function call".into()))?;
        if let Some(called) = call.name {
            if called != tool.name {
                return Err(fail(format!(
                    "the reply called `{called}`, not `{}`",
                    tool.name
                )));
            }
        }
        let arguments = match call.arguments {
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

    /// One SQL query for `query` over the tables `schema` describes, in `dialect`
    /// ("SQLite", "PostgreSQL"): the reply's text without code fences or a final `;`.
    /// The caller checks it like a template's SQL before it runs.
    pub async fn generate_sql(&self, query: &str, schema: &str, dialect: &str) -> Result<String> {
        let user = format!("Dialect: {dialect}\n\nTables:\n{schema}\n\nQuestion: {query}");
        let request = ChatRequest {
            system: SQL_PROMPT,
            user: &user,
            forced_tool: None,
            max_tokens: None,
        };
        let reply = self.client.chat(&request).await.map_err(model_error)?;
        let text = reply.text().unwrap_or_default().trim();
        let text = text
            .strip_prefix("```sql")
            .or_else(|| text.strip_prefix("```"))
            .map_or(text, |t| t.trim_end().trim_end_matches("```"))
            .trim()
            .trim_end_matches(';')
            .trim();
        if text.is_empty() {
            return Err(fail("the reply has no SQL".into()));
        }
        Ok(text.to_owned())
    }

    /// A short answer to `query` from `data` (the rendered answer is given as a draft).
    /// Gives the reply's text; an empty reply is an error.
    pub async fn synthesize(&self, query: &str, rendered: &str, data: &Value) -> Result<String> {
        let mut data_text = data.to_string();
        if data_text.chars().count() > MAX_DATA_CHARS {
            data_text = data_text.chars().take(MAX_DATA_CHARS).collect();
            data_text.push_str(" …(truncated)");
        }
        let user =
            format!("Question: {query}\n\nData (JSON): {data_text}\n\nDraft answer: {rendered}");
        let request = ChatRequest {
            system: SYNTHESIZE_PROMPT,
            user: &user,
            forced_tool: None,
            max_tokens: None,
        };
        let reply = self.client.chat(&request).await.map_err(model_error)?;
        let content = reply
            .text()
            .map(str::trim)
            .filter(|text| !text.is_empty())
            .ok_or_else(|| fail("the reply has no content".into()))?;
        Ok(content.to_owned())
    }
}

fn fail(message: String) -> AdapterError {
    AdapterError::Datasource {
        datasource: SOURCE.to_owned(),
        message,
    }
}

fn model_error(error: LlmError) -> AdapterError {
    fail(error.to_string())
}
