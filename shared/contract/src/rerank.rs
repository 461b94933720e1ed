//! Stage 3's contract: a [`Reranker`] scores a handful of candidates for a query (a
//! Cohere-style rerank API, a chat model as judge), and [`Reranking`] is its section of the
//! configuration (`composite_retrieval.reranking`). The router reranks templates with it,
//! a documents adapter its passages; the providers live in `switchyard-rerank`.

use std::sync::Arc;

use crate::error::Result;
use serde::{Deserialize, Serialize};
use switchyard_catalog::config::rules::*;
use switchyard_catalog::BoxFuture;
use validator::{Validate, ValidationError};

/// One candidate for a reranker to judge.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RerankCandidate {
    pub datasource: String,
    pub template_id: String,
    pub description: String,
    pub nl_examples: Vec<String>,
}

impl RerankCandidate {
    /// The candidate as one document: its description, then its examples.
    pub fn document(&self) -> String {
        let mut text = self.description.clone();
        for example in &self.nl_examples {
            text.push_str("\n- ");
            text.push_str(example);
        }
        text
    }
}

/// Scores in [0, 1], one per candidate, in the candidates' order.
pub trait Reranker: Send + Sync {
    /// Names the provider and model; part of the rerank cache key.
    fn id(&self) -> &str;
    fn rerank<'a>(
        &'a self,
        query: &'a str,
        candidates: &'a [RerankCandidate],
    ) -> BoxFuture<'a, Result<Vec<f32>>>;
}

impl<R: Reranker + ?Sized> Reranker for Arc<R> {
    fn id(&self) -> &str {
        (**self).id()
    }

    fn rerank<'a>(
        &'a self,
        query: &'a str,
        candidates: &'a [RerankCandidate],
    ) -> BoxFuture<'a, Result<Vec<f32>>> {
        (**self).rerank(query, candidates)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[validate(schema(function = "provider_has_endpoint_and_model"))]
#[serde(deny_unknown_fields)]
pub struct Reranking {
    pub enabled: bool,
    pub provider: Option<RerankProvider>,
    /// Base URL of the provider's API, e.g. `https://api.cohere.com`,
    /// `http://127.0.0.1:11434/v1` (Ollama) or `https://api.anthropic.com`.
    pub endpoint: Option<String>,
    pub model: Option<String>,
    /// Name of the environment variable holding the API key.
    pub api_key_env: Option<String>,
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub timeout_ms: u64,
    #[validate(range(min = 2, message = "must be at least 2"))]
    pub top_candidates: usize,
    /// Candidates per request to a chat judge; batches are sent in parallel.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub batch_size: usize,
    /// Rerank only when the top two candidates' ranking scores are within this margin.
    #[validate(custom(function = "non_negative"))]
    pub margin: f32,
    #[validate(custom(function = "non_negative"))]
    pub weight: f32,
}

/// Which API a reranker speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RerankProvider {
    /// `POST {endpoint}/v1/rerank` (Cohere, and the servers that copy its API).
    Cohere,
    /// `POST {endpoint}/chat/completions` with a judging prompt (OpenAI, Ollama, vLLM).
    Openai,
    /// `POST {endpoint}/v1/messages` with a judging prompt.
    Anthropic,
}

fn provider_has_endpoint_and_model(r: &Reranking) -> Result<(), ValidationError> {
    if r.enabled && r.provider.is_some() && (r.endpoint.is_none() || r.model.is_none()) {
        return Err(refuse(
            if r.endpoint.is_none() {
                "endpoint"
            } else {
                "model"
            },
            "endpoint and model are needed when a provider is set",
        ));
    }
    Ok(())
}
