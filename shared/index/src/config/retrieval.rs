//! The routing stages' section (`composite_retrieval`): the threshold, and the weights
//! and switches of each stage. The index reads it when it calibrates the threshold;
//! the router for every question.

use serde::{Deserialize, Serialize};
use switchyard_catalog::config::rules::*;
use switchyard_contract::rerank::Reranking;
use switchyard_text::config::{Keywords, Openings, Spelling, StringSimilarity};
use validator::{Validate, ValidationError};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct CompositeRetrieval {
    #[validate(custom(function = "threshold"))]
    pub confidence_threshold: Threshold,
    /// Thresholds of single datasources, over `confidence_threshold` (`switchyard tune`
    /// proposes them when a datasource has enough feedback).
    #[serde(default)]
    #[validate(custom(function = "datasource_thresholds"))]
    pub datasource_thresholds: std::collections::BTreeMap<String, f32>,
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub max_templates_per_source: usize,
    pub parallel_search: bool,
    /// 0 would leave every partition's search out of every question.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub search_timeout_ms: u64,
    #[validate(nested)]
    pub template_scoring: TemplateScoring,
    #[validate(nested)]
    pub learned_scoring: LearnedScoring,
    #[validate(nested)]
    pub keywords: Keywords,
    #[validate(nested)]
    pub openings: Openings,
    #[validate(nested)]
    pub spelling: Spelling,
    #[validate(nested)]
    pub reranking: Reranking,
    #[validate(nested)]
    pub string_similarity: StringSimilarity,
    #[validate(nested)]
    pub scoring: Scoring,
    #[validate(nested)]
    pub clarify: Clarify,
}

/// `auto` (chosen from the templates when the index is built) or a number in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Threshold {
    Fixed(f32),
    Auto(AutoThreshold),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AutoThreshold {
    Auto,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct LearnedScoring {
    /// Rank with the index's learned head when it has one.
    pub enabled: bool,
    /// Weight of the head's probability in the ranking score.
    #[validate(custom(function = "non_negative"))]
    pub weight: f32,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct Clarify {
    pub enabled: bool,
    /// Ask which one was meant when the top two ranking scores are this close.
    #[validate(custom(function = "non_negative"))]
    pub margin: f32,
    /// How many choices a clarify answer lists (2 or 3).
    #[validate(range(min = 2, max = 3, message = "must be 2 or 3"))]
    pub choices: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct TemplateScoring {
    pub method: TemplateScoringMethod,
    #[validate(custom(function = "unit"))]
    pub max_weight: f32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TemplateScoringMethod {
    Max,
    Centroid,
    Blend,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct Scoring {
    #[validate(custom(function = "stage_one_weight"))]
    pub embedding_weight: f32,
    pub tie_breaker: TieBreaker,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TieBreaker {
    /// Equal combined scores: higher embedding score, then earlier datasource.
    Embedding,
}

switchyard_catalog::default_from_embedded! {
    CompositeRetrieval => "composite_retrieval",
}

fn threshold(t: &Threshold) -> Result<(), ValidationError> {
    match t {
        Threshold::Fixed(t) if !(0.0..=1.0).contains(t) => refuse_value(format!(
            "must be `auto` or a number between 0 and 1, not {t}"
        )),
        _ => Ok(()),
    }
}
