//! Stage 2: rerankers. A [`Reranker`] scores a handful of candidates for a query (a Cohere
//! style rerank API, a chat model as judge); providers live in `switchyard-rerank`.
//! [`RerankStage`] decides whether a query needs one (the top two are close), asks the
//! cache first, bounds the provider's time, and folds the scores into the routing. A
//! failing or slow reranker leaves the routing as the other stages made it, and says so.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;

use crate::error::Result;

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
