//! `POST {endpoint}/v1/rerank`: Cohere's rerank API (and the servers that copy it). All
//! candidates go in one request; the results come back sorted by relevance and are mapped
//! back to the candidates by index.

use reqwest::header::{HeaderMap, AUTHORIZATION};
use serde::Deserialize;
use serde_json::json;
use switchyard_catalog::BoxFuture;
use switchyard_contract::error::{ContractError, Result};
use switchyard_contract::rerank::{RerankCandidate, Reranker};

use crate::error::RerankError;
use switchyard_llm::{bearer, excerpt, JsonEndpoint};

use crate::{provider_error, unit_score};

pub(crate) struct Cohere {
    id: String,
    http: JsonEndpoint,
    model: String,
    api_key: Option<String>,
}

#[derive(Deserialize)]
struct RerankResponse {
    results: Vec<RerankResult>,
}

#[derive(Deserialize)]
struct RerankResult {
    index: usize,
    relevance_score: f64,
}

impl Cohere {
    pub(crate) fn new(
        id: String,
        http: JsonEndpoint,
        model: String,
        api_key: Option<String>,
    ) -> Cohere {
        Cohere {
            id,
            http,
            model,
            api_key,
        }
    }

    async fn score(&self, query: &str, candidates: &[RerankCandidate]) -> Result<Vec<f32>> {
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.api_key {
            let value = bearer(key).map_err(|e| provider_error(&self.id, e))?;
            headers.insert(AUTHORIZATION, value);
        }
        let documents: Vec<String> = candidates.iter().map(RerankCandidate::document).collect();
        let body = json!({
            "model": self.model,
            "query": query,
            "documents": documents,
            "top_n": candidates.len(),
        });
        let secrets: Vec<String> = self.api_key.iter().cloned().collect();
        let reply = self
            .http
            .post(headers, &body, &secrets)
            .await
            .map_err(|e| provider_error(&self.id, e))?;
        let response = RerankResponse::deserialize(&reply).map_err(|e| {
            self.error(format!(
                "unexpected response from {}: {e}; body: {}",
                self.http.url(),
                excerpt(&reply.to_string())
            ))
        })?;

        let expected = candidates.len();
        let returned = response.results.len();
        let mut scores: Vec<Option<f32>> = vec![None; expected];
        for result in response.results {
            let slot = scores.get_mut(result.index).ok_or_else(|| {
                self.error(format!(
                    "response scores index {} but there are {expected} candidates",
                    result.index
                ))
            })?;
            let score = unit_score(result.relevance_score).ok_or_else(|| {
                self.error(format!(
                    "response has a non-finite score for index {}",
                    result.index
                ))
            })?;
            if slot.replace(score).is_some() {
                return Err(self.error(format!("response scores index {} twice", result.index)));
            }
        }
        let missing: Vec<String> = (0..expected)
            .filter(|i| scores[*i].is_none())
            .map(|i| i.to_string())
            .collect();
        if !missing.is_empty() {
            return Err(self.error(format!(
                "response has {returned} scores for {expected} candidates (no score for index {})",
                missing.join(", ")
            )));
        }
        Ok(scores.into_iter().flatten().collect())
    }

    fn error(&self, message: String) -> ContractError {
        RerankError::Answer {
            reranker: self.id.clone(),
            message,
        }
        .into()
    }
}

impl Reranker for Cohere {
    fn id(&self) -> &str {
        &self.id
    }

    fn rerank<'a>(
        &'a self,
        query: &'a str,
        candidates: &'a [RerankCandidate],
    ) -> BoxFuture<'a, Result<Vec<f32>>> {
        Box::pin(self.score(query, candidates))
    }
}
