//! `POST /v1/route` and `GET /v1/stats`: the routing decision with every match's stage
//! scores and the configuration in force, and the deployment's counters.

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::score::score;
use super::{
    OrchestrationReport, SchemaTableReport, ScoringDetails, SessionContext, StageScores, Timings,
};

/// `POST /v1/route`: every match with its stage scores, the decision, the configuration.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RouteReport {
    pub query: String,
    /// The question as routed, when misspelt words were corrected against the catalog's
    /// (`composite_retrieval.spelling`); parameters are read from `query`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corrected_query: Option<String>,
    #[schema(value_type = String)]
    pub outcome: switchyard_routing::router::Outcome,
    pub clarify_choices: Vec<TemplateRef>,
    pub total_matches: usize,
    pub matches_above_threshold: usize,
    pub all_matches: Vec<MatchReport>,
    pub routing_decision: RoutingDecision,
    pub configuration: RouteConfiguration,
    pub timings_ms: Timings,
    /// With a `session_id` whose store answered: both hypotheses and which one won.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionContext>,
    /// When the question asks for several things: the plan `/v1/query` would run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orchestration: Option<OrchestrationReport>,
    /// With `no_match` and SQL schemas indexed: the datasource and tables that could answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggested_datasource: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema_context: Option<Vec<SchemaTableReport>>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TemplateRef {
    pub datasource: String,
    pub template_id: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MatchReport {
    pub template_id: String,
    pub source_adapter: String,
    #[serde(flatten)]
    pub scores: StageScores,
    pub description: String,
    pub nl_examples: Vec<String>,
    pub above_threshold: bool,
    /// Set when a negative example of the datasource was nearer: never chosen.
    #[schema(value_type = Option<Object>)]
    pub declined_by: Option<switchyard_routing::router::Declined>,
    pub scoring_details: ScoringDetails,
    /// The conversation's probability for this template (with a session only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(serialize_with = "score")]
    pub context_probability: Option<f32>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RoutingDecision {
    pub would_route_to: Option<String>,
    pub selected_template: Option<String>,
    #[serde(serialize_with = "score")]
    pub selection_score: Option<f32>,
    /// With a selected template only.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(serialize_with = "score")]
    pub embedding_score: Option<f32>,
    /// With a selected template only (null when the reranker did not run).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(serialize_with = "score")]
    pub rerank_score: Option<Option<f32>>,
    /// With a selected template only (null when string similarity is off).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(serialize_with = "score")]
    pub string_similarity_score: Option<Option<f32>>,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RouteConfiguration {
    #[serde(serialize_with = "score")]
    pub confidence_threshold: f32,
    /// `configured`, `automatic`, `automatic_for_build_settings` or
    /// `fallback_single_datasource`.
    #[schema(value_type = String)]
    pub threshold_source: switchyard_routing::router::ThresholdSource,
    #[schema(value_type = String)]
    pub ranking: switchyard_routing::router::Ranking,
    pub adapters_searched: Vec<String>,
    pub adapters_timed_out: Vec<String>,
    pub multistage_enabled: bool,
    pub reranking_enabled: bool,
    #[schema(value_type = Object)]
    pub rerank: switchyard_routing::router::RerankStatus,
    pub string_similarity_enabled: bool,
    pub scoring_weights: ScoringWeights,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ScoringWeights {
    #[serde(serialize_with = "score")]
    pub embedding: f32,
    #[serde(serialize_with = "score")]
    pub reranking: f32,
    #[serde(serialize_with = "score")]
    pub string_similarity: f32,
}

/// `GET /v1/stats`: templates per datasource and the configuration in force, for the
/// caller's datasources only.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Stats {
    pub child_adapter_count: usize,
    pub child_adapters: std::collections::BTreeMap<String, AdapterStats>,
    pub configuration: StatsConfiguration,
    /// The stages' settings as configured.
    pub multistage_selection: Map<String, Value>,
    pub index: IndexStats,
    /// How this deployment's conversations move (`sessions.transitions`).
    pub transitions: TransitionStats,
}

/// The transitions between consecutive turns counted from sessions (turns sure of
/// themselves alone), the shares the configured weights imply for this catalog, and the
/// shares in force: the counts smoothed toward the configured ones by `prior_turns`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TransitionStats {
    /// Off: counted and shown, the configured weights in force.
    pub learn: bool,
    pub prior_turns: usize,
    pub observed: TransitionCounts,
    pub configured: TransitionShares,
    pub learned: TransitionShares,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TransitionCounts {
    pub stay: u64,
    pub same_datasource: u64,
    pub other_datasource: u64,
}

/// Shares of the next turns: staying on the template, moving within its datasource, or
/// to another one.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TransitionShares {
    #[serde(serialize_with = "score")]
    pub stay: f32,
    #[serde(serialize_with = "score")]
    pub same_datasource: f32,
    #[serde(serialize_with = "score")]
    pub other_datasource: f32,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AdapterStats {
    pub kind: String,
    pub total_templates: usize,
    pub vectors: usize,
    /// `exact` or `hnsw`.
    pub search: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StatsConfiguration {
    #[serde(serialize_with = "score")]
    pub confidence_threshold: f32,
    #[schema(value_type = String)]
    pub threshold_source: switchyard_routing::router::ThresholdSource,
    pub max_templates_per_source: usize,
    pub parallel_search: bool,
    pub search_timeout_ms: u64,
    pub template_scoring: Value,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct IndexStats {
    pub model_id: String,
    pub dimension: usize,
    pub templates_hash: String,
    /// Unix seconds.
    pub built_at: u64,
}
