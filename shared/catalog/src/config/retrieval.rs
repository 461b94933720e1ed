//! The routing stages' section of the configuration (`composite_retrieval`): the
//! threshold, and the weights and switches of each stage.

use serde::{Deserialize, Serialize};
use validator::Validate;

use super::validate::*;

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

/// How a split question's answers are fused into one (`switchyard_core::orchestration::fuse`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FusionStrategy {
    #[default]
    Auto,
    Simple,
    Score,
    Hierarchical,
    Temporal,
    Semantic,
}

/// How vector and keyword scores are combined: a weighted sum, or reciprocal-rank fusion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fusion {
    Weighted,
    Rrf,
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
