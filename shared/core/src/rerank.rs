//! Stage 2: rerankers. A [`Reranker`] scores a handful of candidates for a query (a Cohere
//! style rerank API, a chat model as judge); providers live in `switchyard-rerank`.
//! [`RerankStage`] decides whether a query needs one (the top two are close), asks the
//! cache first, bounds the provider's time, and folds the scores into the routing. A
//! failing or slow reranker leaves the routing as the other stages made it, and says so.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::Result;
use crate::rerank_cache::{cache_key, CachedScores, RerankCache};
use crate::router::{RerankStatus, Router, Routing};

/// A boxed future, so the traits here can be used as `dyn` objects.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

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

/// Stage 2 on one routing: gate on the margin, ask the cache, bound the provider's time,
/// fold the scores in. Never fails the request: a failure is reported in the routing.
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

    pub async fn apply(&self, router: &Router, routing: &mut Routing, now: i64) {
        let settings = &router.config().composite_retrieval.reranking;
        if !settings.enabled || routing.matches.is_empty() {
            return;
        }
        // Declined matches come last and are never chosen: only the others compete.
        let open: Vec<f32> = routing
            .matches
            .iter()
            .take_while(|m| !m.is_declined())
            .take(2)
            .map(|m| m.rank_score)
            .collect();
        let gap = match open[..] {
            [first, second] => first - second,
            _ => f32::INFINITY,
        };
        if gap >= settings.margin {
            routing.rerank = RerankStatus::NotNeeded {
                margin: gap.min(f32::MAX),
            };
            return;
        }
        let began = Instant::now();
        let candidates = router.rerank_candidates(routing);
        let templates: Vec<(&str, &crate::template::Template)> = routing.matches
            [..candidates.len()]
            .iter()
            .map(|m| {
                let (datasource, template) = router.template(m);
                (datasource.name(), template)
            })
            .collect();
        let key = cache_key(self.reranker.id(), &routing.query, &templates);
        let id = self.reranker.id().to_owned();
        let cached = match self.cache.get(&key, now).await {
            Ok(scores) => scores.filter(|s| s.len() == candidates.len()),
            Err(e) => {
                metrics::counter!("RerankCacheErrors").increment(1);
                tracing::warn!(error = %e, "rerank cache unavailable; asking the reranker");
                None
            }
        };
        let outcome = match cached {
            Some(scores) => Ok((scores, true)),
            None => self
                .ask(&routing.query, &candidates, settings.timeout_ms)
                .await
                .map(|scores| (scores, false)),
        };
        match outcome {
            Ok((scores, cached)) => {
                if !cached {
                    let entry = CachedScores {
                        scores: scores.clone(),
                        expires_at: now + self.ttl_seconds as i64,
                    };
                    if let Err(e) = self.cache.put(&key, entry).await {
                        metrics::counter!("RerankCacheErrors").increment(1);
                        tracing::warn!(error = %e, "rerank answer not cached");
                    }
                }
                for (m, score) in routing.matches.iter_mut().zip(&scores) {
                    m.rerank_score = Some(score.clamp(0.0, 1.0));
                }
                routing.rerank = RerankStatus::Applied {
                    reranker: id,
                    candidates: candidates.len(),
                    cached,
                };
                router.decide(routing);
            }
            Err(error) => {
                metrics::counter!("RerankFailures").increment(1);
                tracing::warn!(reranker = %id, %error, "reranker failed; routing on the other stages");
                routing.rerank = RerankStatus::Failed {
                    reranker: id,
                    error,
                };
            }
        }
        let rerank_ms = began.elapsed().as_secs_f64() * 1000.0;
        routing.timings.rerank_ms = rerank_ms;
        routing.timings.total_ms += rerank_ms;
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
