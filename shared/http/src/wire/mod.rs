//! The JSON users send and get back: every request and answer of the API as a typed
//! struct, from which the OpenAPI document is generated. Field names are the wire format
//! users know; change them only with the golden files (`tests/data/golden`).
//!
//! Scores are f32 and serialize in their shortest decimal form (0.8, not 0.800000011920929)
//! through `score`, however an answer is serialised: to bytes, or to a `Value` (MCP's
//! structured content, the chat endpoint's answer, a split answer's sections).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

mod route;
mod score;
mod split;

pub use route::{
    AdapterStats, IndexStats, MatchReport, RouteConfiguration, RouteReport, RoutingDecision,
    ScoringWeights, Stats, StatsConfiguration, TemplateRef, TransitionCounts, TransitionShares,
    TransitionStats,
};
pub(crate) use score::{millis, millis_option, score};
pub use split::{
    FusionReport, Orchestrated, OrchestratedMetadata, OrchestrationReport, SectionData,
    SubQuestionReport,
};

/// `POST /v1/query` and `POST /v1/route`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryRequest {
    /// The question, 1 to 2,000 characters.
    #[schema(
        min_length = 1,
        max_length = 2000,
        example = "How many employees work in Engineering?"
    )]
    pub query: String,
    /// Conversation id: earlier turns (of the last 30 minutes) weigh on this turn's
    /// routing, and their parameters fill its gaps.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 128)]
    pub session_id: Option<String>,
    /// What the assistant said just before this question (a chat application's last
    /// assistant message), at most 2,000 characters: an offer it made ("Would you like to
    /// book a table?") makes an acceptance ("Yes, please") route to what it offered.
    /// Without it, the session's last answer plays that part (kept with
    /// `sessions.store_text`). A chat's whole `messages` list maps onto `query` (the last
    /// user message), this field (the last assistant message) and the session.
    #[serde(default)]
    #[schema(
        max_length = 2000,
        example = "Would you like the headcount of Sales too?"
    )]
    pub assistant: Option<String>,
    /// Search only these of the caller's datasources.
    #[serde(default)]
    pub datasources: Option<Vec<String>>,
    /// A question that asks for several things runs as a workflow, checkpointed after
    /// each phase: give the `workflow_id` of an earlier answer to resume it (tasks already
    /// answered are not run again), or a new one to name the workflow.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 128, pattern = "^[A-Za-z0-9._-]+$")]
    pub workflow_id: Option<String>,
    /// How a split question's answers are fused: `auto` (default), `simple`, `score`,
    /// `hierarchical`, `temporal` or `semantic`.
    #[serde(default)]
    #[schema(value_type = Option<Fusion>)]
    pub fusion: Option<switchyard_core::orchestration::FusionStrategy>,
    /// A documents search's metadata filters, by filter name: one value or a list
    /// (`{"product": ["car", "home"]}`); a value the filter does not allow is an error.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub filters: Option<serde_json::Map<String, serde_json::Value>>,
}

/// How a split question's answers are fused.
// For the document only: the names of `switchyard_core::orchestration::FusionStrategy`
// (tests/openapi.rs checks that each parses as one).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Fusion {
    Auto,
    Simple,
    Score,
    Hierarchical,
    Temporal,
    Semantic,
}

/// Every error: a stable code, the request field at fault when there is one, a message.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// `invalid_request`, `payload_too_large`, `unknown_datasource`, `unauthenticated`,
    /// `forbidden`, `not_found`, `unknown_request`, `method_not_allowed`,
    /// `store_unavailable`, `internal`.
    pub code: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    pub message: String,
}

/// `GET /v1/health`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Health {
    pub status: String,
    pub model: String,
    pub templates: usize,
    pub datasources: usize,
    /// Unix seconds.
    pub index_built_at: u64,
    pub embedding: EmbeddingHealth,
}

/// The drift check at load: the index's probe sentences embedded by the model at hand,
/// compared with the builder's vectors.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EmbeddingHealth {
    /// `same` (every probe at or above `warn_below`), `drifted` (served, but routing
    /// figures may differ from the builder's machine), `not_recorded` (no probes).
    #[schema(example = "same")]
    pub drift: String,
    pub probes: usize,
    /// Lowest cosine between a probe's recorded and recomputed vectors.
    #[serde(serialize_with = "score")]
    pub min_cosine: Option<f32>,
    #[serde(serialize_with = "score")]
    pub mean_cosine: Option<f32>,
    #[serde(serialize_with = "score")]
    pub warn_below: f32,
}

/// `POST /v1/query`: one of six shapes, told apart by `status`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(untagged)]
pub enum QueryAnswer {
    Answered(Answered),
    Orchestrated(Orchestrated),
    AdapterFailed(AdapterFailed),
    Clarify(Clarify),
    NoMatch(NoMatch),
    Acknowledged(Acknowledged),
}

impl QueryAnswer {
    /// The answer's text, whichever kind of answer it is.
    pub fn content(&self) -> &str {
        match self {
            QueryAnswer::Answered(a) => &a.content,
            QueryAnswer::Orchestrated(a) => &a.content,
            QueryAnswer::AdapterFailed(a) => &a.content,
            QueryAnswer::Clarify(a) => &a.content,
            QueryAnswer::NoMatch(a) => &a.content,
            QueryAnswer::Acknowledged(a) => &a.content,
        }
    }

    /// The request id the answer was given under (feedback names it).
    pub fn request_id(&self) -> &str {
        match self {
            QueryAnswer::Answered(a) => &a.metadata.request_id,
            QueryAnswer::Orchestrated(a) => &a.metadata.request_id,
            QueryAnswer::AdapterFailed(a) => &a.metadata.request_id,
            QueryAnswer::Clarify(a) => &a.metadata.request_id,
            QueryAnswer::NoMatch(a) => &a.metadata.request_id,
            QueryAnswer::Acknowledged(a) => &a.metadata.request_id,
        }
    }
}

/// The adapter answered: `ok`, `needs_clarification` (a required parameter is missing) or
/// `error` (the adapter refused, e.g. a bad parameter value).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Answered {
    #[schema(value_type = String, example = "ok")]
    pub status: switchyard_contract::adapter::AdapterStatus,
    pub content: String,
    pub data: Value,
    pub parameters: Map<String, Value>,
    pub missing: Vec<Value>,
    pub error: Option<String>,
    #[serde(serialize_with = "score")]
    pub confidence: f32,
    pub metadata: QueryMetadata,
}

/// The adapter could not be reached, failed or timed out (HTTP 501, 502 or 504).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AdapterFailed {
    /// Always `error`.
    pub status: String,
    pub content: String,
    pub error: ErrorDetail,
    #[serde(serialize_with = "score")]
    pub confidence: f32,
    pub metadata: QueryMetadata,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct QueryMetadata {
    pub request_id: String,
    pub session_id: Option<String>,
    /// The datasource's kind (`sql`, `http`, `tools`, ...).
    pub source: String,
    pub template_id: String,
    pub composite_routing: CompositeRouting,
    pub timings_ms: Timings,
    /// Null without a `session_id` or a chat's earlier messages (then `saved` is absent).
    pub session: Option<SessionReport>,
    pub adapter: AdapterReport,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SessionReport {
    /// `ok` or `unavailable` (the store failed; answered without context).
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turns: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saved: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the session's turns contributed to the routing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<SessionContext>,
}

/// How a session's turns weighed on a routing: the question alone and the conversation's
/// hypothesis, and which one the answer follows.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SessionContext {
    /// `turn` (the question's own routing), `context` (the conversation's template),
    /// `clarify_choice` (a pick among the previous answer's choices) or
    /// `pending_parameter` (the parameter the previous answer asked for).
    pub used: String,
    /// Turns of the session within its window.
    pub turns: usize,
    pub previous: Option<TemplateRef>,
    pub seconds_since_previous: Option<i64>,
    /// Weight of the previous turns in this one's prior (1 right after, halving every
    /// `sessions.context.half_life_seconds`).
    #[serde(serialize_with = "score")]
    pub weight: f32,
    pub preferred_datasource: Option<String>,
    /// Whether the previous question was routed together with this one.
    pub previous_question: bool,
    /// The question alone: its best template and probability.
    pub turn: Option<Hypothesis>,
    /// The conversation's likeliest template and its probability.
    pub context: Option<Hypothesis>,
    /// Whether the question was sure enough alone to stand against the conversation
    /// (`sessions.context.self_contained_probability`); the conversation starts afresh from it.
    pub self_contained: bool,
    /// The caller's topic words known (kept across its sessions; 0 without).
    pub topic_words: usize,
    /// The topics' prior factor on the conversation's template (1 = none); absent
    /// without topics.
    #[serde(serialize_with = "score")]
    pub topic_boost: Option<f32>,
    /// How what the assistant said before this question weighed; absent when it was not
    /// known (no `assistant` and no earlier answer kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assistant: Option<AssistantContext>,
}

/// What the assistant's turn contributed to a routing.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AssistantContext {
    /// What the assistant's text alone routes to (what it offered or talked about).
    pub offered: Option<Hypothesis>,
    /// Whether the text made an offer (`sessions.context.offer_cues`).
    pub offers: bool,
    /// The power of "its text + this question" as evidence in the conversation's filter.
    #[serde(serialize_with = "score")]
    pub evidence_power: f32,
    /// Share of the conversation's prior given to what it offered.
    #[serde(serialize_with = "score")]
    pub prior_weight: f32,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Hypothesis {
    pub datasource: String,
    pub template_id: String,
    #[serde(serialize_with = "score")]
    pub probability: f32,
}

/// `POST /v1/feedback`: how well an answer served, by at least one of the three parts.
// The document states what `Feedback::validate` refuses: "`request_id` and at least one
// part" is `minProperties: 2` (`FeedbackNeedsAPart`), no other property being allowed.
// A part given as null counts as absent, so the document leaves null out.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FeedbackRequest {
    /// The `metadata.request_id` of the answer judged.
    #[schema(min_length = 1, max_length = 128)]
    pub request_id: String,
    /// 0 to 1.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1, nullable = false)]
    pub user_satisfaction: Option<f32>,
    #[serde(default)]
    #[schema(nullable = false)]
    pub agent_success: Option<bool>,
    /// 0 to 1.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1, nullable = false)]
    pub search_quality: Option<f32>,
    /// The template that should have answered, `<datasource>/<template_id>`, or `none`
    /// (a correction, a clarify answered): what `switchyard suggest` learns from.
    #[serde(default)]
    #[schema(nullable = false, max_length = 300)]
    pub expected_template: Option<String>,
}

/// Sets `FeedbackRequest`'s `minProperties` to 2 in the document: utoipa-gen 5.5 writes
/// `#[schema(min_properties = ..)]` as `maxProperties`.
pub(crate) struct FeedbackNeedsAPart;

impl utoipa::Modify for FeedbackNeedsAPart {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{RefOr, Schema};
        let schemas = openapi.components.as_mut().map(|c| &mut c.schemas);
        if let Some(RefOr::T(Schema::Object(request))) =
            schemas.and_then(|s| s.get_mut("FeedbackRequest"))
        {
            request.min_properties = Some(2);
        }
    }
}

/// The feedback, stored with the decision it judges.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FeedbackRecorded {
    pub request_id: String,
    /// `0.4·search_quality + 0.3·agent_success + 0.3·user_satisfaction` over the parts
    /// given, minus a processing-time penalty of at most 0.1, in [0, 1].
    #[serde(serialize_with = "score")]
    pub reward: f32,
    pub datasource: Option<String>,
    pub template_id: Option<String>,
    #[schema(value_type = String)]
    pub outcome: switchyard_routing::router::Outcome,
    #[serde(serialize_with = "score")]
    pub confidence: f32,
}

/// `DELETE /v1/sessions/{session_id}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SessionDeleted {
    pub session_id: String,
    /// False when there was no such session (or it had expired) and no A2A task in that
    /// context.
    pub deleted: bool,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AdapterReport {
    /// The adapter's status, or `error` when it could not answer.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(serialize_with = "millis_option")]
    pub execution_time_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// Why the router chose this template: the scores of every stage.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CompositeRouting {
    pub selected_adapter: String,
    pub template_id: String,
    #[serde(serialize_with = "score")]
    pub similarity_score: f32,
    pub adapters_searched: Vec<String>,
    pub total_matches_found: usize,
    pub multistage_scoring: MultistageScoring,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MultistageScoring {
    pub enabled: bool,
    /// `learned` or `similarity`.
    #[schema(value_type = String)]
    pub ranking: switchyard_routing::router::Ranking,
    /// `execute`, `clarify` or `no_match`.
    #[schema(value_type = String)]
    pub outcome: switchyard_routing::router::Outcome,
    #[serde(flatten)]
    pub scores: StageScores,
    pub scoring_details: ScoringDetails,
    /// What the rerank stage did: `{"status": "disabled" | "no_provider" | "no_candidates" |
    /// "not_needed" | "applied" | "failed", ...}`.
    #[schema(value_type = Object)]
    pub rerank: switchyard_routing::router::RerankStatus,
}

/// A candidate's score at each stage (routing's `StageScores` on the wire, rounded),
/// flattened into the match reports and the chosen template's scoring. A new stage is a
/// field here and one line in its `From`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StageScores {
    #[serde(serialize_with = "score")]
    pub embedding_score: f32,
    #[serde(serialize_with = "score")]
    pub learned_score: Option<f32>,
    #[serde(serialize_with = "score")]
    pub keyword_score: Option<f32>,
    #[serde(serialize_with = "score")]
    pub opening_score: Option<f32>,
    #[serde(serialize_with = "score")]
    pub rerank_score: Option<f32>,
    #[serde(serialize_with = "score")]
    pub string_similarity_score: Option<f32>,
    #[serde(serialize_with = "score")]
    pub rank_score: f32,
    #[serde(serialize_with = "score")]
    pub combined_score: f32,
    #[serde(serialize_with = "score")]
    pub probability: Option<f32>,
}

impl From<&switchyard_routing::router::StageScores> for StageScores {
    fn from(s: &switchyard_routing::router::StageScores) -> StageScores {
        StageScores {
            embedding_score: s.embedding_score,
            learned_score: s.learned_score,
            keyword_score: s.keyword_score,
            opening_score: s.opening_score,
            rerank_score: s.rerank_score,
            string_similarity_score: s.string_similarity_score,
            rank_score: s.rank_score,
            combined_score: s.combined_score,
            probability: s.probability,
        }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ScoringDetails {
    #[serde(serialize_with = "score")]
    pub embedding_weight: f32,
    #[serde(serialize_with = "score")]
    pub rerank_weight: f32,
    #[serde(serialize_with = "score")]
    pub string_similarity_weight: f32,
}

/// Stage timings in milliseconds.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Timings {
    #[serde(serialize_with = "millis")]
    pub embedding_ms: f64,
    #[serde(serialize_with = "millis")]
    pub search_ms: f64,
    #[serde(serialize_with = "millis")]
    pub string_similarity_ms: f64,
    #[serde(serialize_with = "millis")]
    pub rerank_ms: f64,
    #[serde(serialize_with = "millis")]
    pub total_ms: f64,
}

/// The winner is sure enough but close runners-up are other templates: which was meant?
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Clarify {
    /// Always `clarify`.
    pub status: String,
    pub content: String,
    #[serde(serialize_with = "score")]
    pub confidence: f32,
    pub choices: Vec<Choice>,
    pub metadata: ClarifyMetadata,
}

/// A template offered to the user (a clarify choice, a no_match suggestion).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Choice {
    pub datasource: String,
    pub template_id: String,
    pub description: String,
    #[serde(serialize_with = "score")]
    pub score: f32,
    /// Clarify choices: the template's first example.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub example: Option<Option<String>>,
    /// Clarify choices: the calibrated probability.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(serialize_with = "score")]
    pub probability: Option<Option<f32>>,
    /// No_match suggestions: the confidence.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(serialize_with = "score")]
    pub confidence: Option<f32>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClarifyMetadata {
    pub request_id: String,
    pub composite_routing: CompositeRouting,
    pub timings_ms: Timings,
    /// With a `session_id` or a chat's earlier messages only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionReport>,
}

/// In a conversation, the question only acknowledged the answer before it ("thanks", "ok
/// great"): nothing ran, and the session keeps no turn for it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Acknowledged {
    pub status: AcknowledgedStatus,
    pub content: String,
    pub metadata: AcknowledgedMetadata,
}

/// Always `acknowledged`: the one field that tells this answer from the others.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AcknowledgedStatus {
    Acknowledged,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AcknowledgedMetadata {
    pub request_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    pub timings_ms: Timings,
    /// With a `session_id` or a chat's earlier messages only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionReport>,
}

/// No template cleared the threshold: the closest ones are suggested.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NoMatch {
    /// Always `no_match`.
    pub status: String,
    pub content: String,
    #[serde(serialize_with = "score")]
    pub confidence: f32,
    pub suggestions: Vec<Choice>,
    /// With SQL schemas indexed: the datasource whose tables are nearest the question.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggested_datasource: Option<String>,
    /// ... and those tables (of the caller's datasources only), best first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema_context: Option<Vec<SchemaTableReport>>,
    /// With `llm.text_to_sql`: the query the chat model wrote over those tables and what it
    /// returned, labelled generated (not a template's answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generated: Option<GeneratedAnswer>,
    pub metadata: NoMatchMetadata,
}

/// A query written by the chat model, checked read-only and run with the datasource's
/// row cap and deadline.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GeneratedAnswer {
    /// `ok` or `error` (refused, or the model or the database failed).
    #[schema(value_type = String)]
    pub status: switchyard_contract::adapter::AdapterStatus,
    pub sql: Option<String>,
    pub content: String,
    pub error: Option<String>,
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
}

/// One table of a SQL datasource, flattened: columns with types, samples or ranges, keys.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SchemaTableReport {
    pub datasource: String,
    pub table: String,
    pub text: String,
    #[serde(serialize_with = "score")]
    pub score: f32,
    /// The table's vector similarity to the question.
    #[serde(serialize_with = "score")]
    pub similarity: Option<f32>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NoMatchMetadata {
    pub request_id: String,
    pub composite_routing: NoMatchRouting,
    pub timings_ms: Timings,
    /// With a `session_id` or a chat's earlier messages only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionReport>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NoMatchRouting {
    /// Always null.
    pub selected_adapter: Option<String>,
    /// Always null.
    pub template_id: Option<String>,
    #[serde(serialize_with = "score")]
    pub similarity_score: Option<f32>,
    pub adapters_searched: Vec<String>,
    pub total_matches_found: usize,
    pub reason: String,
}
