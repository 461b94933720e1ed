//! The sections only the service reads: splitting questions (`orchestration`), feedback,
//! the rerank cache, the chat model (`llm`) and HTTP admission (`server`).

use serde::{Deserialize, Serialize};
use switchyard_catalog::config::rules::*;
use validator::Validate;

/// Questions that ask for several things (`switchyard_core::orchestration`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct OrchestrationConfig {
    pub enabled: bool,
    /// Decomposition is tried when at least this many of the seven signals fire.
    #[validate(range(
        min = 1,
        max = 7,
        message = "must be between 1 and 7 (there are seven signals)"
    ))]
    pub min_signals: usize,
    #[validate(nested)]
    pub signals: SignalLimits,
    /// Cues that join independent requests ("and", "also", ",") ...
    #[validate(custom(function = "no_empty_cue"))]
    pub parallel_cues: Vec<String>,
    /// ... and requests that follow one another ("then", "after that", "finally").
    #[validate(custom(function = "no_empty_cue"))]
    pub sequential_cues: Vec<String>,
    /// Verbs that ask for an action, beside the first words of the catalog's examples.
    pub action_verbs: Vec<String>,
    /// Words that point back at an earlier part's result ("their", "those").
    pub reference_words: Vec<String>,
    /// At most this many sub-questions, from at most this many cue-separated segments.
    #[validate(range(min = 2, max = 5, message = "must be between 2 and 5"))]
    pub max_parts: usize,
    #[validate(range(
        min = 2,
        max = 12,
        message = "must be between 2 and 12 (every span of every split is routed)"
    ))]
    pub max_segments: usize,
    /// A part counts as confident when it clears the threshold, or when the head gives
    /// it at least this probability and its confidence is at least the floor.
    #[validate(custom(function = "unit"))]
    pub part_probability: f32,
    #[validate(custom(function = "unit"))]
    pub part_confidence_floor: f32,
    /// No part of a split may be less sure than the whole question by more than this,
    /// unless the head gives it at least `sure_part_probability`.
    #[validate(custom(function = "unit"))]
    pub max_part_drop: f32,
    #[validate(custom(function = "unit"))]
    pub sure_part_probability: f32,
    /// Tasks of a phase run concurrently, at most this many at once.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub max_parallel_tasks: usize,
    /// How long a workflow's checkpoint is kept (DynamoDB `expires_at`).
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub checkpoint_ttl_seconds: u64,
    /// A request running a workflow holds it this long at most (a retry of the same
    /// `workflow_id` meanwhile gets 409): the longest a run can take.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub workflow_lease_seconds: u64,
    /// auto | simple | score | hierarchical | temporal | semantic
    pub fusion: FusionStrategy,
    /// `semantic` fusion merges rows or passages whose word overlap reaches this.
    #[validate(custom(function = "unit"))]
    pub duplicate_similarity: f32,
    /// Ask the configured chat model (`llm`) to split what the rules could not, when the
    /// signals say to try; its parts are checked like the rules' own.
    pub chat_decomposer: bool,
}

/// When each signal fires.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct SignalLimits {
    pub action_verbs: usize,
    pub words: usize,
    pub entities: usize,
    pub relationships: usize,
    #[validate(custom(function = "unit"))]
    pub low_confidence: f32,
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct FeedbackConfig {
    /// Keep each answer's routing decision, so `POST /v1/feedback` can judge it.
    pub enabled: bool,
    /// How long a decision waits for feedback (the DynamoDB item's `expires_at`).
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub ttl_seconds: u64,
    /// Decisions kept in memory when there is no table (local `serve`).
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub memory_capacity: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct RerankCacheConfig {
    pub ttl_seconds: u64,
    /// Entries kept in memory (without a table): the least recently used go.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub memory_capacity: usize,
}

/// Admission to the HTTP app: requests beyond `max_in_flight` wait, at most `max_queued`
/// of them; the rest are answered 503 with `Retry-After` at once, so latency stays
/// bounded under overload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub max_in_flight: usize,
    pub max_queued: usize,
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub retry_after_seconds: u64,
    /// Where callers reach the API (`http(s)://host[/stage]`); None: from each request.
    #[serde(default)]
    #[validate(custom(function = "http_url"))]
    pub public_url: Option<String>,
}

fn http_url(url: &str) -> Result<(), validator::ValidationError> {
    if url.starts_with("https://") || url.starts_with("http://") {
        return Ok(());
    }
    let mut error = validator::ValidationError::new("url");
    error.message = Some(format!("`{url}` must start with https:// or http://").into());
    Err(error)
}

switchyard_catalog::default_from_embedded! {
    OrchestrationConfig => "orchestration",
    FeedbackConfig => "feedback",
    RerankCacheConfig => "rerank_cache",
    ServerConfig => "server",
}
