//! Reranker providers behind `switchyard_contract::rerank::Reranker`: a Cohere-style rerank
//! API ([`cohere`]) and chat models as judges ([`chat`]: OpenAI-compatible servers such as
//! OpenAI, Ollama and vLLM, and Anthropic's messages API). The router reranks templates
//! with them, the adapter function a documents answer's passages.
//!
//! [`from_config`] builds the configured provider once (one HTTP client, the API key read
//! from its variable at start). A provider fails with a [`RerankError`] (as
//! `ContractError::Rerank`) naming the provider, the HTTP status and a body excerpt, a score count mismatch, a timeout or an unparsable
//! judge answer; the caller keeps its routing when that happens.

mod chat;
mod cohere;
mod error;

pub use error::RerankError;

use std::sync::Arc;
use std::time::Duration;

use switchyard_catalog::error::Error;
use switchyard_contract::rerank::{RerankProvider, Reranker, Reranking};
use switchyard_contract::ContractError;
use switchyard_llm::{ApiKey, ChatClient, Dialect, JsonEndpoint, LlmError};

use crate::chat::ChatJudge;
use crate::cohere::Cohere;

/// The settings' place in the configuration, for error messages.
const FIELD: &str = "composite_retrieval.reranking";

/// The reranker the settings describe: `None` when reranking is disabled or no provider is
/// set. Fails when the endpoint, model or API key variable cannot be used.
pub fn from_config(settings: &Reranking) -> Result<Option<Arc<dyn Reranker>>, ContractError> {
    let Some(provider) = settings.provider.filter(|_| settings.enabled) else {
        return Ok(None);
    };
    let model = settings
        .model
        .as_deref()
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .ok_or_else(|| config_error("model", "is needed when a provider is set".into()))?;
    let endpoint = settings
        .endpoint
        .as_deref()
        .ok_or_else(|| config_error("endpoint", "is needed when a provider is set".into()))?;
    let api_key = match settings.api_key_env.as_deref() {
        Some(variable) => Some(read_key(variable)?),
        None => None,
    };
    if settings.batch_size == 0 {
        return Err(config_error("batch_size", "must be at least 1".into()).into());
    }

    let name = match provider {
        RerankProvider::Cohere => "cohere",
        RerankProvider::Openai => "openai",
        RerankProvider::Anthropic => "anthropic",
    };
    let id = format!("{name}:{model}");
    let timeout = Duration::from_millis(settings.timeout_ms);
    let judge = |dialect: Dialect| {
        ChatClient::new(
            dialect,
            endpoint,
            model,
            api_key.clone().map(ApiKey::Value),
            timeout,
        )
    };
    let setup = |error: LlmError| match error {
        LlmError::Endpoint(message) => config_error("endpoint", message).into(),
        other => provider_error(&id, other),
    };
    let reranker: Arc<dyn Reranker> = match provider {
        RerankProvider::Cohere => {
            let http = JsonEndpoint::new(endpoint, "/v1/rerank", timeout).map_err(setup)?;
            Arc::new(Cohere::new(id.clone(), http, model.to_owned(), api_key))
        }
        RerankProvider::Openai => Arc::new(ChatJudge::new(
            id.clone(),
            judge(Dialect::Openai).map_err(setup)?,
            settings.batch_size,
        )),
        RerankProvider::Anthropic => Arc::new(ChatJudge::new(
            id.clone(),
            judge(Dialect::Anthropic).map_err(setup)?,
            settings.batch_size,
        )),
    };
    Ok(Some(reranker))
}

fn read_key(variable: &str) -> Result<String, Error> {
    let error = |message: String| Error::Config {
        origin: format!("environment variable {variable}"),
        field: format!("{FIELD}.api_key_env"),
        message,
    };
    match std::env::var(variable) {
        Ok(key) if !key.trim().is_empty() => Ok(key.trim().to_owned()),
        Ok(_) => Err(error(format!(
            "the variable {variable} holding the API key is empty"
        ))),
        Err(_) => Err(error(format!(
            "the variable {variable} holding the API key is not set"
        ))),
    }
}

fn config_error(field: &str, message: String) -> Error {
    Error::Config {
        origin: "reranking settings".into(),
        field: format!("{FIELD}.{field}"),
        message,
    }
}

/// A model API failure as the reranker's error, the API's error kept as its source.
fn provider_error(reranker: &str, error: LlmError) -> ContractError {
    RerankError::Api {
        reranker: reranker.to_owned(),
        source: error,
    }
    .into()
}

/// A provider's score as a value in [0, 1]; `None` for NaN or infinity.
fn unit_score(score: f64) -> Option<f32> {
    score.is_finite().then(|| score.clamp(0.0, 1.0) as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_are_clamped_and_non_finite_refused() {
        assert_eq!(unit_score(1.5), Some(1.0));
        assert_eq!(unit_score(-0.2), Some(0.0));
        assert_eq!(unit_score(0.25), Some(0.25));
        assert_eq!(unit_score(f64::NAN), None);
    }
}
