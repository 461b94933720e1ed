//! The `documents` section: how documents datasources are chunked, embedded and
//! searched, and when a SQL table is suggested for a question no template fits.

use serde::{Deserialize, Serialize};
use switchyard_catalog::config::rules::*;
use switchyard_text::config::Fusion;
use validator::{Validate, ValidationError};

/// How documents datasources are chunked, embedded and searched (`switchyard_documents`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[validate(schema(function = "documents_sizes"))]
#[serde(deny_unknown_fields)]
pub struct DocumentsConfig {
    /// A chunk is at most this many words; consecutive chunks share `overlap_words`.
    #[validate(range(min = 20, message = "must be at least 20"))]
    pub chunk_words: usize,
    pub overlap_words: usize,
    /// The extractive summary: the title and this many first sentences.
    pub summary_sentences: usize,
    /// Weights of a chunk's vectors, renormalised over the vectors it has.
    #[validate(nested)]
    pub weights: VectorWeights,
    /// weighted: `(1 − keyword_weight) · vectors + keyword_weight · BM25 / best BM25`;
    /// rrf: reciprocal-rank fusion of the two rankings.
    pub fusion: Fusion,
    #[validate(custom(function = "unit"))]
    pub keyword_weight: f32,
    #[validate(custom(function = "positive"))]
    pub rrf_k: f32,
    #[validate(custom(function = "positive"))]
    pub k1: f32,
    #[validate(custom(function = "unit"))]
    pub b: f32,
    /// Fused candidates MMR chooses from, and chunks an answer lists.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub candidates: usize,
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub top_k: usize,
    /// MMR: 1 ranks by relevance alone, lower values prefer chunks unlike those chosen.
    #[validate(custom(function = "unit"))]
    pub mmr_lambda: f32,
    /// A chunk this similar (cosine) to one already chosen is a duplicate; so is a second
    /// chunk of the same document.
    #[validate(custom(function = "unit"))]
    pub duplicate_similarity: f32,
    /// A SQL table is suggested for a `no_match` only when its vector similarity to the
    /// question reaches this.
    #[validate(custom(function = "unit"))]
    pub schema_min_similarity: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[validate(schema(function = "some_vector_weight"))]
#[serde(deny_unknown_fields)]
pub struct VectorWeights {
    #[validate(custom(function = "non_negative"))]
    pub questions: f32,
    #[validate(custom(function = "non_negative"))]
    pub summary: f32,
    #[validate(custom(function = "non_negative"))]
    pub content: f32,
}

switchyard_catalog::default_from_embedded! {
    DocumentsConfig => "documents",
}

fn documents_sizes(d: &DocumentsConfig) -> Result<(), ValidationError> {
    if d.overlap_words >= d.chunk_words {
        return Err(refuse(
            "chunk_words",
            "must be above documents.overlap_words",
        ));
    }
    if d.top_k > d.candidates {
        return Err(refuse("top_k", "must be at most documents.candidates"));
    }
    Ok(())
}

fn some_vector_weight(w: &VectorWeights) -> Result<(), ValidationError> {
    if w.questions + w.summary + w.content <= 0.0 {
        return Err(refuse(
            "questions",
            "at least one of the weights must be above 0",
        ));
    }
    Ok(())
}
