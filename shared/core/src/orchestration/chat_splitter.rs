//! The chat model as `orchestration.chat_decomposer`: asked, by a forced call of
//! `split_question`, for the separate requests of a question the rules could not split.
//! The service routes its parts and keeps them only when they pass the rules' checks.

use std::sync::Arc;
use std::time::Duration;

use super::QuestionSplitter;
use crate::config::Config;
use serde_json::{json, Value};
use switchyard_catalog::error::Error;
use switchyard_catalog::BoxFuture;
use switchyard_contract::error::Result;
use switchyard_contract::ContractError;
use switchyard_llm::{ApiKey, ChatClient, ChatRequest, Dialect, Tool};

const INSTRUCTIONS: &str = "Split the user's message into the separate requests it makes, \
in the order it makes them. Write each request as a complete question that stands on its \
own. If the message makes only one request, give it alone. Call the function.";

pub struct ChatSplitter {
    id: String,
    client: ChatClient,
}

impl ChatSplitter {
    /// From the configuration: `None` unless `orchestration.chat_decomposer` is on and the
    /// `llm` section names an endpoint and a model (an OpenAI-compatible server, like the
    /// adapters' assistant).
    pub fn from_config(config: &Config) -> Result<Option<Arc<dyn QuestionSplitter>>, Error> {
        let llm = &config.llm;
        let (true, Some(endpoint), Some(model)) = (
            config.orchestration.chat_decomposer,
            &llm.endpoint,
            &llm.model,
        ) else {
            return Ok(None);
        };
        let client = ChatClient::new(
            Dialect::Openai,
            endpoint,
            model,
            llm.api_key_env.clone().map(ApiKey::Env),
            Duration::from_millis(llm.timeout_ms),
        )
        .map_err(|e| Error::Config {
            origin: "configuration".into(),
            field: "llm.endpoint".into(),
            message: e.to_string(),
        })?;
        Ok(Some(Arc::new(ChatSplitter {
            id: format!("chat:{model}"),
            client,
        })))
    }

    async fn ask(&self, question: &str) -> std::result::Result<Vec<String>, String> {
        let tool = Tool {
            name: "split_question".into(),
            description: "The separate requests of the user's message".into(),
            parameters: json!({
                "type": "object",
                "properties": {"sub_questions": {"type": "array", "items": {"type": "string"}}},
                "required": ["sub_questions"]
            }),
        };
        let request = ChatRequest {
            system: INSTRUCTIONS,
            user: question,
            forced_tool: Some(&tool),
            max_tokens: None,
        };
        let reply = self
            .client
            .chat(&request)
            .await
            .map_err(|e| e.to_string())?;
        let call = reply
            .function_call()
            .ok_or("the reply has no function call")?;
        let arguments = match call.arguments {
            Some(Value::String(text)) => serde_json::from_str::<Value>(text)
                .map_err(|e| format!("the function arguments are not JSON: {e}"))?,
            Some(object @ Value::Object(_)) => object.clone(),
            _ => return Err("the function call has no arguments".into()),
        };
        let parts = arguments
            .get("sub_questions")
            .and_then(Value::as_array)
            .ok_or("the arguments have no `sub_questions` array")?;
        parts
            .iter()
            .map(|p| {
                p.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| "`sub_questions` holds a value that is not a string".into())
            })
            .collect()
    }
}

impl QuestionSplitter for ChatSplitter {
    fn id(&self) -> &str {
        &self.id
    }

    fn split<'a>(&'a self, question: &'a str) -> BoxFuture<'a, Result<Vec<String>>> {
        Box::pin(async move {
            self.ask(question)
                .await
                .map_err(|message| ContractError::AdapterFailed {
                    datasource: self.id.clone(),
                    message,
                    source: None,
                })
        })
    }
}
