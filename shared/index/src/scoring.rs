//! The two scores every candidate gets, written once: the *confidence* (compared with the
//! threshold, and what the automatic threshold is chosen on) and the *ranking score*
//! (orders the candidates). Pure arithmetic over stage scores: no model, no index.

use serde::Serialize;

use crate::config::CompositeRetrieval;

/// Weights of the confidence's stages that ran, renormalised to sum to 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Weights {
    pub embedding_weight: f32,
    pub rerank_weight: f32,
    pub string_similarity_weight: f32,
}

impl Weights {
    /// The configured weights of the embedding, the reranker (when it was applied) and
    /// string similarity (when enabled), renormalised.
    pub fn for_stages(retrieval: &CompositeRetrieval, rerank_applied: bool) -> Weights {
        let embedding = retrieval.scoring.embedding_weight;
        let rerank = if rerank_applied {
            retrieval.reranking.weight
        } else {
            0.0
        };
        let strings = if retrieval.string_similarity.enabled {
            retrieval.string_similarity.weight
        } else {
            0.0
        };
        let total = embedding + rerank + strings;
        Weights {
            embedding_weight: embedding / total,
            rerank_weight: rerank / total,
            string_similarity_weight: strings / total,
        }
    }
}

/// The confidence: the stage scores weighted. A stage that did not run scores nothing for
/// strings, and the embedding's own score for the reranker (its weight is then 0).
pub fn confidence(
    weights: &Weights,
    embedding: f32,
    string: Option<f32>,
    rerank: Option<f32>,
) -> f32 {
    weights.embedding_weight * embedding
        + weights.rerank_weight * rerank.unwrap_or(embedding)
        + weights.string_similarity_weight * string.unwrap_or(0.0)
}

/// The ranking score: stage 1's fused score plus the string and rerank contributions of
/// the stages that ran, each at its configured ranking weight.
pub fn rank_score(
    retrieval: &CompositeRetrieval,
    retrieval_score: f32,
    string: Option<f32>,
    rerank: Option<f32>,
) -> f32 {
    let strings = &retrieval.string_similarity;
    let string_part = if strings.enabled {
        strings.rank_weight * string.unwrap_or(0.0)
    } else {
        0.0
    };
    let rerank_part = rerank.map_or(0.0, |r| retrieval.reranking.weight * r);
    retrieval_score + string_part + rerank_part
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retrieval() -> CompositeRetrieval {
        CompositeRetrieval::default()
    }

    #[test]
    fn weights_renormalise_over_the_stages_that_ran() {
        let mut r = retrieval();
        r.scoring.embedding_weight = 0.6;
        r.string_similarity.enabled = true;
        r.string_similarity.weight = 0.2;
        r.reranking.weight = 0.2;
        let without = Weights::for_stages(&r, false);
        assert!((without.embedding_weight - 0.75).abs() < 1e-6);
        assert!((without.string_similarity_weight - 0.25).abs() < 1e-6);
        assert_eq!(without.rerank_weight, 0.0);
        let with = Weights::for_stages(&r, true);
        assert!((with.embedding_weight - 0.6).abs() < 1e-6);
        assert!((with.rerank_weight - 0.2).abs() < 1e-6);
        r.string_similarity.enabled = false;
        assert_eq!(Weights::for_stages(&r, false).embedding_weight, 1.0);
    }

    #[test]
    fn confidence_weighs_the_stage_scores() {
        let weights = Weights {
            embedding_weight: 0.5,
            rerank_weight: 0.25,
            string_similarity_weight: 0.25,
        };
        assert!((confidence(&weights, 0.8, Some(0.4), Some(1.0)) - 0.75).abs() < 1e-6);
        // No reranker: its weight is 0 in practice, and it falls back to the embedding.
        assert!((confidence(&weights, 0.8, None, None) - 0.6).abs() < 1e-6);
    }

    #[test]
    fn rank_score_adds_the_stages_that_ran() {
        let mut r = retrieval();
        r.string_similarity.enabled = true;
        r.string_similarity.rank_weight = 0.5;
        r.reranking.weight = 0.3;
        assert!((rank_score(&r, 1.0, Some(0.4), None) - 1.2).abs() < 1e-6);
        assert!((rank_score(&r, 1.0, Some(0.4), Some(1.0)) - 1.5).abs() < 1e-6);
        r.string_similarity.enabled = false;
        assert!((rank_score(&r, 1.0, Some(0.4), None) - 1.0).abs() < 1e-6);
    }
}
