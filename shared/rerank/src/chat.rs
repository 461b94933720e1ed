//! Chat models as judges: `POST {endpoint}/chat/completions` (OpenAI, Ollama, vLLM) or
//! `POST {endpoint}/v1/messages` (Anthropic). The candidates go in batches of `batch_size`,
//! sent concurrently; the model answers `{"scores": [...]}`, one score per numbered
//! candidate. Any failing batch fails the whole rerank.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;

use serde_json::Value;
use switchyard_catalog::BoxFuture;
use switchyard_contract::error::{ContractError, Result};
use switchyard_contract::rerank::{RerankCandidate, Reranker};

use crate::error::RerankError;
use switchyard_llm::{excerpt, ChatClient, ChatRequest, Dialect};

use crate::{provider_error, unit_score};

const INSTRUCTIONS: &str = "You judge candidates for a routing service. The user's request \
must be routed to the one query template that answers it. Each candidate is a template: a \
description, then example questions it answers. Score every candidate's relevance to the \
request from 0 (unrelated) to 1 (answers exactly this request). Answer ONLY with JSON of \
the form {\"scores\": [s1, s2, ...]}: one number per numbered candidate, in the candidates' \
order, and nothing else.";

/// Anthropic needs a token budget; a score takes a few tokens, so large batches get more.
const ANTHROPIC_MAX_TOKENS: usize = 256;

pub(crate) struct ChatJudge {
    id: String,
    client: ChatClient,
    batch_size: usize,
}

impl ChatJudge {
    pub(crate) fn new(id: String, client: ChatClient, batch_size: usize) -> ChatJudge {
        ChatJudge {
            id,
            client,
            batch_size: batch_size.max(1),
        }
    }

    async fn score(&self, query: &str, candidates: &[RerankCandidate]) -> Result<Vec<f32>> {
        let batches: Vec<_> = candidates
            .chunks(self.batch_size)
            .map(|batch| self.score_batch(query, batch))
            .collect();
        let scores = try_join_all(batches).await?;
        Ok(scores.concat())
    }

    async fn score_batch(&self, query: &str, batch: &[RerankCandidate]) -> Result<Vec<f32>> {
        let prompt = prompt(query, batch);
        let request = ChatRequest {
            system: INSTRUCTIONS,
            user: &prompt,
            forced_tool: None,
            max_tokens: Some(ANTHROPIC_MAX_TOKENS.max(batch.len() * 8)),
        };
        let reply = self
            .client
            .chat(&request)
            .await
            .map_err(|e| provider_error(&self.id, e))?;
        let answer = reply.text().ok_or_else(|| {
            self.error(match self.client.dialect() {
                Dialect::Openai => "response has no choices[0].message.content",
                Dialect::Anthropic => "response has no text content block",
            })
        })?;
        parse_scores(answer, batch.len()).map_err(|m| self.error(&m))
    }

    fn error(&self, message: &str) -> ContractError {
        RerankError::Answer {
            reranker: self.id.clone(),
            message: message.to_owned(),
        }
        .into()
    }
}

impl Reranker for ChatJudge {
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

/// The user message: the request, then the candidates numbered from 1.
fn prompt(query: &str, batch: &[RerankCandidate]) -> String {
    let mut text = format!("Request: {query}\n\nCandidates:\n");
    for (number, candidate) in (1..).zip(batch) {
        text.push_str(&format!("\n[{number}] {}\n", candidate.document()));
    }
    text.push_str(&format!(
        "\nAnswer with {{\"scores\": [...]}} holding exactly {} numbers.",
        batch.len()
    ));
    text
}

/// The scores in a judge's answer: the first JSON object holding `"scores"`, wherever it
/// sits (models wrap JSON in prose or code fences despite the instructions).
fn parse_scores(answer: &str, expected: usize) -> std::result::Result<Vec<f32>, String> {
    let cannot = |why: &str| {
        format!(
            "cannot parse judge output: {why}; output: {}",
            excerpt(answer)
        )
    };
    let scores = answer
        .match_indices('{')
        .find_map(|(start, _)| {
            // Parse one value from here and ignore whatever text follows it.
            let mut values = serde_json::Deserializer::from_str(&answer[start..]).into_iter();
            match values.next() {
                Some(Ok(Value::Object(mut object))) => object.remove("scores"),
                _ => None,
            }
        })
        .ok_or_else(|| cannot("no JSON object with \"scores\""))?;
    let Value::Array(scores) = scores else {
        return Err(cannot("\"scores\" is not a list"));
    };
    if scores.len() != expected {
        return Err(format!(
            "response has {} scores for {expected} candidates",
            scores.len()
        ));
    }
    scores
        .iter()
        .enumerate()
        .map(|(i, score)| {
            score
                .as_f64()
                .and_then(unit_score)
                .ok_or_else(|| cannot(&format!("scores[{i}] is not a number")))
        })
        .collect()
}

/// Await every future concurrently, keeping their order; the first error ends the wait
/// (dropping, and so cancelling, the other requests). Polled in place, so the borrowed
/// batches need no spawning.
async fn try_join_all<T, F>(futures: Vec<F>) -> Result<Vec<T>>
where
    F: Future<Output = Result<T>>,
{
    let mut pending: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut done: Vec<Option<T>> = pending.iter().map(|_| None).collect();
    poll_fn(|cx| {
        let mut waiting = false;
        for (future, slot) in pending.iter_mut().zip(done.iter_mut()) {
            if slot.is_some() {
                continue;
            }
            match future.as_mut().poll(cx) {
                Poll::Ready(Ok(value)) => *slot = Some(value),
                Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                Poll::Pending => waiting = true,
            }
        }
        if waiting {
            Poll::Pending
        } else {
            Poll::Ready(Ok(()))
        }
    })
    .await?;
    Ok(done.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_scores_in_prose_and_code_fences() {
        let answer =
            "Sure! Here you go:\n```json\n{\"scores\": [0.9, 0.1, 1]}\n```\nHope it helps {x}";
        assert_eq!(parse_scores(answer, 3).unwrap(), vec![0.9, 0.1, 1.0]);
    }

    #[test]
    fn skips_objects_without_scores_and_finds_nested_ones() {
        let answer = r#"{"note": "a {brace}"} then {"result": {"scores": [0.5]}}"#;
        assert_eq!(parse_scores(answer, 1).unwrap(), vec![0.5]);
    }

    #[test]
    fn clamps_out_of_range_scores() {
        assert_eq!(
            parse_scores(r#"{"scores": [1.7, -1]}"#, 2).unwrap(),
            vec![1.0, 0.0]
        );
    }

    #[test]
    fn refuses_wrong_counts_and_non_numbers() {
        let error = parse_scores(r#"{"scores": [0.5]}"#, 2).unwrap_err();
        assert_eq!(error, "response has 1 scores for 2 candidates");
        let error = parse_scores(r#"{"scores": [0.5, "high"]}"#, 2).unwrap_err();
        assert!(error.contains("scores[1] is not a number"), "{error}");
        let error = parse_scores("I think the first one.", 2).unwrap_err();
        assert!(error.starts_with("cannot parse judge output"), "{error}");
        assert!(error.contains("I think the first one."), "{error}");
    }

    #[test]
    fn prompt_numbers_candidates_from_one() {
        let candidate = |d: &str| RerankCandidate {
            datasource: "ds".into(),
            template_id: "t".into(),
            description: d.into(),
            nl_examples: vec![format!("{d} example")],
        };
        let text = prompt(
            "weather in Oslo",
            &[candidate("first"), candidate("second")],
        );
        assert!(text.starts_with("Request: weather in Oslo"));
        assert!(text.contains("[1] first\n- first example"));
        assert!(text.contains("[2] second\n- second example"));
        assert!(text.contains("exactly 2 numbers"));
    }
}
