//! A chat model through one of two dialects: `POST {endpoint}/chat/completions`
//! (OpenAI-compatible) or `POST {endpoint}/v1/messages` (Anthropic). A request is one
//! system prompt and one user message at temperature 0, optionally forcing a call of one
//! function; the reply gives its text or its function call.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use serde_json::{json, Value};

use crate::error::{LlmError, Result};
use crate::exchange::{bearer, sensitive, JsonEndpoint};

/// The version header Anthropic's API requires.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Anthropic requires a token budget; this one when the request sets none.
const ANTHROPIC_DEFAULT_MAX_TOKENS: usize = 1024;

/// Which API a chat model speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Chat completions: OpenAI, Ollama, vLLM, llama.cpp server.
    Openai,
    /// Anthropic's messages API.
    Anthropic,
}

impl Dialect {
    fn path(self) -> &'static str {
        match self {
            Dialect::Openai => "/chat/completions",
            Dialect::Anthropic => "/v1/messages",
        }
    }
}

/// Where the API key comes from.
#[derive(Debug, Clone)]
pub enum ApiKey {
    /// Read once, when the client was configured.
    Value(String),
    /// Read from this environment variable at each call (unset is an error, and no request
    /// is sent), so a rotated key is used without a restart.
    Env(String),
}

impl ApiKey {
    fn read(&self) -> Result<String> {
        match self {
            ApiKey::Value(key) => Ok(key.clone()),
            ApiKey::Env(variable) => {
                std::env::var(variable).map_err(|_| LlmError::KeyNotSet(variable.clone()))
            }
        }
    }
}

/// A function the model is made to call, with a JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

impl Tool {
    /// The tool as OpenAI's `tools` list holds it.
    pub fn to_openai(&self) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            }
        })
    }

    /// The tool as Anthropic's `tools` list holds it.
    pub fn to_anthropic(&self) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "input_schema": self.parameters,
        })
    }
}

/// One exchange: a system prompt and a user message.
#[derive(Debug, Clone, Copy)]
pub struct ChatRequest<'a> {
    pub system: &'a str,
    pub user: &'a str,
    /// A function the model must call.
    pub forced_tool: Option<&'a Tool>,
    /// The reply's token budget for Anthropic, which requires one (default 1024);
    /// OpenAI-compatible servers are sent none and use their own.
    pub max_tokens: Option<usize>,
}

/// A model's reply, as the dialect's JSON.
#[derive(Debug, Clone)]
pub struct ChatReply {
    dialect: Dialect,
    body: Value,
}

/// A function call in a reply: the function's name when given, and its arguments (a JSON
/// text in OpenAI's dialect, an object in Anthropic's).
#[derive(Debug, Clone, Copy)]
pub struct FunctionCall<'a> {
    pub name: Option<&'a str>,
    pub arguments: Option<&'a Value>,
}

impl ChatReply {
    /// The reply's text: `choices[0].message.content`, or Anthropic's first text block.
    pub fn text(&self) -> Option<&str> {
        match self.dialect {
            Dialect::Openai => self.body.pointer("/choices/0/message/content"),
            Dialect::Anthropic => self.blocks_of("text").next().and_then(|b| b.get("text")),
        }
        .and_then(Value::as_str)
    }

    /// The reply's first function call: `choices[0].message.tool_calls[0].function`, or
    /// Anthropic's first `tool_use` block.
    pub fn function_call(&self) -> Option<FunctionCall<'_>> {
        let (call, arguments) = match self.dialect {
            Dialect::Openai => (
                self.body
                    .pointer("/choices/0/message/tool_calls/0/function")?,
                "arguments",
            ),
            Dialect::Anthropic => (self.blocks_of("tool_use").next()?, "input"),
        };
        Some(FunctionCall {
            name: call.get("name").and_then(Value::as_str),
            arguments: call.get(arguments),
        })
    }

    fn blocks_of<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Value> {
        self.body
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(move |block| block.get("type").and_then(Value::as_str) == Some(kind))
    }
}

/// A client of one chat model.
#[derive(Debug, Clone)]
pub struct ChatClient {
    endpoint: String,
    model: String,
    dialect: Dialect,
    api_key: Option<ApiKey>,
    http: JsonEndpoint,
}

impl ChatClient {
    /// `endpoint` is the API's base URL (`http://127.0.0.1:11434/v1`,
    /// `https://api.anthropic.com`); `timeout` bounds each whole call.
    pub fn new(
        dialect: Dialect,
        endpoint: &str,
        model: &str,
        api_key: Option<ApiKey>,
        timeout: Duration,
    ) -> Result<ChatClient> {
        if model.trim().is_empty() {
            return Err(LlmError::Config("the model name is empty".into()));
        }
        Ok(ChatClient {
            endpoint: endpoint.trim().trim_end_matches('/').to_owned(),
            model: model.to_owned(),
            dialect,
            api_key,
            http: JsonEndpoint::new(endpoint, dialect.path(), timeout)?,
        })
    }

    /// The base URL, without trailing slashes.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    pub fn timeout(&self) -> Duration {
        self.http.timeout()
    }

    /// Send one request; the key is redacted from any error.
    pub async fn chat(&self, request: &ChatRequest<'_>) -> Result<ChatReply> {
        let key = self.api_key.as_ref().map(ApiKey::read).transpose()?;
        let headers = self.headers(key.as_deref())?;
        let secrets: Vec<String> = key.into_iter().collect();
        let body = self
            .http
            .post(headers, &self.body(request), &secrets)
            .await?;
        Ok(ChatReply {
            dialect: self.dialect,
            body,
        })
    }

    fn headers(&self, key: Option<&str>) -> Result<HeaderMap> {
        let mut headers = HeaderMap::new();
        match self.dialect {
            Dialect::Openai => {
                if let Some(key) = key {
                    headers.insert(AUTHORIZATION, bearer(key)?);
                }
            }
            Dialect::Anthropic => {
                if let Some(key) = key {
                    headers.insert(HeaderName::from_static("x-api-key"), sensitive(key)?);
                }
                headers.insert(
                    HeaderName::from_static("anthropic-version"),
                    HeaderValue::from_static(ANTHROPIC_VERSION),
                );
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            }
        }
        Ok(headers)
    }

    /// The request body in the client's dialect.
    fn body(&self, request: &ChatRequest<'_>) -> Value {
        match self.dialect {
            Dialect::Openai => {
                let mut body = json!({
                    "model": self.model,
                    "messages": [
                        {"role": "system", "content": request.system},
                        {"role": "user", "content": request.user},
                    ],
                    "temperature": 0,
                });
                if let Some(tool) = request.forced_tool {
                    body["tools"] = json!([tool.to_openai()]);
                    body["tool_choice"] =
                        json!({"type": "function", "function": {"name": tool.name}});
                }
                body
            }
            Dialect::Anthropic => {
                let mut body = json!({
                    "model": self.model,
                    "max_tokens": request.max_tokens.unwrap_or(ANTHROPIC_DEFAULT_MAX_TOKENS),
                    "temperature": 0,
                    "system": request.system,
                    "messages": [{"role": "user", "content": request.user}],
                });
                if let Some(tool) = request.forced_tool {
                    body["tools"] = json!([tool.to_anthropic()]);
                    body["tool_choice"] = json!({"type": "tool", "name": tool.name});
                }
                body
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(dialect: Dialect) -> ChatClient {
        ChatClient::new(
            dialect,
            "http://127.0.0.1:1/v1/",
            "m",
            None,
            Duration::from_secs(1),
        )
        .unwrap()
    }

    fn tool() -> Tool {
        Tool {
            name: "f".into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
        }
    }

    #[test]
    fn openai_bodies_force_the_tool_and_send_no_token_budget() {
        let tool = tool();
        let request = ChatRequest {
            system: "s",
            user: "u",
            forced_tool: Some(&tool),
            max_tokens: Some(10),
        };
        let body = client(Dialect::Openai).body(&request);
        assert_eq!(
            body,
            json!({
                "model": "m",
                "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
                "temperature": 0,
                "tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}],
                "tool_choice": {"type": "function", "function": {"name": "f"}},
            })
        );
    }

    #[test]
    fn anthropic_bodies_carry_the_system_prompt_and_a_budget() {
        let request = ChatRequest {
            system: "s",
            user: "u",
            forced_tool: None,
            max_tokens: None,
        };
        let body = client(Dialect::Anthropic).body(&request);
        assert_eq!(
            body,
            json!({
                "model": "m", "max_tokens": 1024, "temperature": 0, "system": "s",
                "messages": [{"role": "user", "content": "u"}],
            })
        );
        let headers = client(Dialect::Anthropic).headers(Some("k")).unwrap();
        assert_eq!(headers["x-api-key"], "k");
        assert_eq!(headers["anthropic-version"], ANTHROPIC_VERSION);
        assert!(!headers.contains_key(AUTHORIZATION));
    }

    #[test]
    fn replies_give_text_and_function_calls_in_each_dialect() {
        let openai = ChatReply {
            dialect: Dialect::Openai,
            body: json!({"choices": [{"message": {"content": "hi", "tool_calls": [
                {"function": {"name": "f", "arguments": "{}"}}]}}]}),
        };
        assert_eq!(openai.text(), Some("hi"));
        let call = openai.function_call().unwrap();
        assert_eq!((call.name, call.arguments), (Some("f"), Some(&json!("{}"))));

        let anthropic = ChatReply {
            dialect: Dialect::Anthropic,
            body: json!({"content": [
                {"type": "tool_use", "name": "f", "input": {"a": 1}},
                {"type": "text", "text": "hi"},
            ]}),
        };
        assert_eq!(anthropic.text(), Some("hi"));
        let call = anthropic.function_call().unwrap();
        assert_eq!(call.arguments, Some(&json!({"a": 1})));
        let empty = ChatReply {
            dialect: Dialect::Openai,
            body: json!({"choices": []}),
        };
        assert!(empty.text().is_none() && empty.function_call().is_none());
    }

    #[test]
    fn refuses_empty_models_and_non_http_endpoints() {
        let timeout = Duration::from_secs(1);
        assert!(ChatClient::new(Dialect::Openai, "http://h/v1", " ", None, timeout).is_err());
        assert!(ChatClient::new(Dialect::Openai, "file:///x", "m", None, timeout).is_err());
        assert_eq!(client(Dialect::Openai).endpoint(), "http://127.0.0.1:1/v1");
    }

    #[test]
    fn an_unset_key_variable_is_named() {
        let key = ApiKey::Env("SWITCHYARD_LLM_UNIT_NEVER_SET".into());
        let error = key.read().unwrap_err();
        assert!(error
            .to_string()
            .contains("SWITCHYARD_LLM_UNIT_NEVER_SET is not set"));
    }
}
