//! Stage 3: rerankers. A `Reranker` (the contract's) scores a handful of candidates for a
//! query (a Cohere style rerank API, a chat model as judge); providers live in
//! `switchyard-rerank`.
//! [`RerankStage`] decides whether a query needs one (the top two are close), asks the
//! cache first, bounds the provider's time, and returns the scores for the decision. A
//! failing or slow reranker leaves the routing as the other stages made it, and says so.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::rerank_cache::{cache_key, CachedScores, RerankCache};
use switchyard_catalog::metric;
use switchyard_catalog::template::{Datasource, Template};
use switchyard_contract::rerank::{RerankCandidate, Reranker};
use switchyard_routing::router::{Candidates, RerankStatus, Reranked, Router};

/// The rerank stage: gate on the margin, ask the cache, bound the provider's time, and
/// return the scores. Never fails the request: a failure is reported in [`Reranked`], and
/// the decision then rests on the other stages.
pub struct RerankStage {
    reranker: Arc<dyn Reranker>,
    cache: Arc<dyn RerankCache>,
    ttl_seconds: u64,
}

impl RerankStage {
    pub fn new(reranker: Arc<dyn Reranker>, cache: Arc<dyn RerankCache>, ttl_seconds: u64) -> Self {
        RerankStage {
            reranker,
            cache,
            ttl_seconds,
        }
    }

    /// Scores in [0, 1] for the first `top_candidates` of `candidates`, when the top two
    /// are within `reranking.margin`.
    pub async fn rerank(&self, router: &Router, candidates: &Candidates, now: i64) -> Reranked {
        let settings = &router.config().composite_retrieval.reranking;
        if !settings.enabled {
            return router.not_reranked();
        }
        if candidates.matches.is_empty() {
            return Reranked {
                status: RerankStatus::NoCandidates,
                scores: Vec::new(),
                took_ms: 0.0,
            };
        }
        let gap = candidates.top_gap();
        if gap >= settings.margin {
            return Reranked {
                status: RerankStatus::NotNeeded {
                    margin: gap.min(f32::MAX),
                },
                scores: Vec::new(),
                took_ms: 0.0,
            };
        }
        let began = Instant::now();
        // Declined matches come last and are never chosen: only the others are judged.
        let judged: Vec<(&Datasource, &Template)> = candidates
            .matches
            .iter()
            .take_while(|m| !m.is_declined())
            .take(settings.top_candidates)
            .map(|m| router.template(m))
            .collect();
        let (status, scores) = match self
            .scores(&candidates.query, &judged, settings.timeout_ms, now)
            .await
        {
            Ok((scores, cached)) => (
                RerankStatus::Applied {
                    reranker: self.reranker.id().to_owned(),
                    candidates: judged.len(),
                    cached,
                },
                scores,
            ),
            Err(error) => {
                metrics::counter!(metric::RERANK_FAILURES).increment(1);
                tracing::warn!(reranker = %self.reranker.id(), %error, "reranker failed; routing on the other stages");
                let status = RerankStatus::Failed {
                    reranker: self.reranker.id().to_owned(),
                    error,
                };
                (status, Vec::new())
            }
        };
        Reranked {
            status,
            scores,
            took_ms: began.elapsed().as_secs_f64() * 1000.0,
        }
    }

    /// The cached scores, else the provider's (then cached), each clamped to [0, 1]; and
    /// whether they came from the cache.
    async fn scores(
        &self,
        query: &str,
        judged: &[(&Datasource, &Template)],
        timeout_ms: u64,
        now: i64,
    ) -> std::result::Result<(Vec<f32>, bool), String> {
        let keyed: Vec<(&str, &Template)> = judged.iter().map(|(d, t)| (d.name(), *t)).collect();
        let key = cache_key(self.reranker.id(), query, &keyed);
        let cached = match self.cache.get(&key, now).await {
            Ok(scores) => scores.filter(|s| s.len() == judged.len()),
            Err(e) => {
                metrics::counter!(metric::RERANK_CACHE_ERRORS).increment(1);
                tracing::warn!(error = %e, "rerank cache unavailable; asking the reranker");
                None
            }
        };
        if let Some(scores) = cached {
            metrics::counter!(metric::RERANK_CACHE_HITS).increment(1);
            return Ok((scores, true));
        }
        let documents: Vec<RerankCandidate> = judged
            .iter()
            .map(|(datasource, template)| RerankCandidate {
                datasource: datasource.spec.name.clone(),
                template_id: template.id.clone(),
                description: template.description.clone(),
                nl_examples: template.nl_examples.clone(),
            })
            .collect();
        let scores: Vec<f32> = self
            .ask(query, &documents, timeout_ms)
            .await?
            .into_iter()
            .map(|s| s.clamp(0.0, 1.0))
            .collect();
        let entry = CachedScores {
            scores: scores.clone(),
            expires_at: now + self.ttl_seconds as i64,
        };
        if let Err(e) = self.cache.put(&key, entry).await {
            metrics::counter!(metric::RERANK_CACHE_ERRORS).increment(1);
            tracing::warn!(error = %e, "rerank answer not cached");
        }
        Ok((scores, false))
    }

    /// The provider's scores, or why there are none.
    async fn ask(
        &self,
        query: &str,
        candidates: &[RerankCandidate],
        timeout_ms: u64,
    ) -> std::result::Result<Vec<f32>, String> {
        let call = self.reranker.rerank(query, candidates);
        match tokio::time::timeout(Duration::from_millis(timeout_ms), call).await {
            Err(_) => Err(format!("timed out after {timeout_ms} ms")),
            Ok(Err(e)) => Err(e.to_string()),
            Ok(Ok(scores)) if scores.len() != candidates.len() => Err(format!(
                "returned {} scores for {} candidates",
                scores.len(),
                candidates.len()
            )),
            Ok(Ok(scores)) if scores.iter().any(|s| !s.is_finite()) => {
                Err("returned a score that is not a number".to_owned())
            }
            Ok(Ok(scores)) => Ok(scores),
        }
    }
}
