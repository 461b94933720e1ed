//! The configuration sections text analysis reads: BM25 keywords and the opening word
//! (`composite_retrieval.keywords`, `.openings`), string similarity
//! (`composite_retrieval.string_similarity`), and how vector and keyword scores fuse.

use serde::{Deserialize, Serialize};
use switchyard_catalog::config::rules::*;
use validator::{Validate, ValidationError};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct Keywords {
    pub enabled: bool,
    /// `weighted`: add `weight ·` BM25 (divided by the best template's) to the vector
    /// score; `rrf`: reciprocal-rank fusion of the two rankings.
    pub fusion: Fusion,
    #[validate(custom(function = "non_negative"))]
    pub weight: f32,
    #[validate(custom(function = "non_negative"))]
    pub rrf_k: f32,
    #[validate(custom(function = "non_negative"))]
    pub k1: f32,
    #[validate(custom(function = "unit"))]
    pub b: f32,
    /// Abbreviations and synonyms of this deployment: "ncd" → "no claim discount".
    pub term_expansion: std::collections::BTreeMap<String, String>,
}

/// The question's opening word: an intent is often asked with the word its examples open
/// with ("play …", "rate …", "book …"), whatever else the question names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct Openings {
    pub enabled: bool,
    /// Added to the ranking score: `weight ·` the template's share of the catalog's
    /// examples that open with the question's opening word.
    #[validate(custom(function = "non_negative"))]
    pub weight: f32,
    /// Words passed over before the opening word ("please", "can you").
    pub skip_words: Vec<String>,
}

/// Misspelt words corrected against the catalog's own vocabulary before routing
/// (`spelling::Speller`): "balnce on my chekcing acount" routes as "balance on my checking
/// account". Parameters are read from what was written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct Spelling {
    pub enabled: bool,
    /// Shorter words are left as written: one edit makes most short words another word.
    #[validate(range(min = 3, message = "must be at least 3"))]
    pub min_letters: usize,
}

/// How vector and keyword scores are combined: a weighted sum, or reciprocal-rank fusion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fusion {
    Weighted,
    Rrf,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[validate(schema(function = "fields_to_compare"))]
#[serde(deny_unknown_fields)]
pub struct StringSimilarity {
    pub enabled: bool,
    pub algorithm: StringAlgorithm,
    /// Weight in the confidence (with `scoring.embedding_weight`).
    #[validate(custom(function = "non_negative"))]
    pub weight: f32,
    /// Weight in the ranking score.
    #[validate(custom(function = "non_negative"))]
    pub rank_weight: f32,
    pub compare_fields: Vec<CompareField>,
    pub min_threshold: f32,
    pub aggregation: Aggregation,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StringAlgorithm {
    JaroWinkler,
    Levenshtein,
    Ratio,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompareField {
    Description,
    NlExamples,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aggregation {
    Max,
    Mean,
}

switchyard_catalog::default_from_embedded! {
    Keywords => "composite_retrieval.keywords",
    Openings => "composite_retrieval.openings",
    StringSimilarity => "composite_retrieval.string_similarity",
}

fn fields_to_compare(s: &StringSimilarity) -> Result<(), ValidationError> {
    if s.enabled && s.compare_fields.is_empty() {
        return Err(refuse(
            "compare_fields",
            "must name at least one field when the stage is enabled",
        ));
    }
    Ok(())
}
