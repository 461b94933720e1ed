//! The `llm` section of the configuration: the chat model behind the adapters' optional
//! features (filling a missing parameter, a synthesised answer, SQL for a question no
//! template fits) and the chat decomposer.

use serde::{Deserialize, Serialize};
use switchyard_catalog::config::rules::*;
use validator::{Validate, ValidationError};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[validate(schema(function = "llm_features_have_a_model"))]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    pub endpoint: Option<String>,
    pub model: Option<String>,
    pub api_key_env: Option<String>,
    pub timeout_ms: u64,
    pub fill_missing_parameters: bool,
    pub synthesize_response: bool,
    /// A question no template fits, with SQL tables near it (`schema_context`): ask the
    /// model for one read-only query over them, checked and run like a template's.
    pub text_to_sql: bool,
}

switchyard_catalog::default_from_embedded! {
    LlmConfig => "llm",
}

fn llm_features_have_a_model(llm: &LlmConfig) -> Result<(), ValidationError> {
    if (llm.fill_missing_parameters || llm.synthesize_response || llm.text_to_sql)
        && (llm.endpoint.is_none() || llm.model.is_none())
    {
        return Err(refuse(
            if llm.endpoint.is_none() {
                "endpoint"
            } else {
                "model"
            },
            "endpoint and model are needed when an LLM feature is on",
        ));
    }
    Ok(())
}
