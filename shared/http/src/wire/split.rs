//! Split questions on the wire: the answer of a question that asked several things, with
//! its sub-questions, phases, checkpoints and fusion.

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::score::{millis, score};
use super::*;

/// A question that asked for several things: each sub-question ran on its own template
/// and the answers were fused. `status` is `ok` (all answered), `partial` or `error`
/// (none answered; HTTP 502).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Orchestrated {
    pub status: String,
    pub content: String,
    /// `{"sections": [{task, question, status, content, confidence, date?}], "rows"?}`.
    pub data: Value,
    /// The least sure sub-question's confidence.
    #[serde(serialize_with = "score")]
    pub confidence: f32,
    pub metadata: OrchestratedMetadata,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OrchestratedMetadata {
    pub request_id: String,
    pub session_id: Option<String>,
    /// Always `orchestration`.
    pub source: String,
    pub timings_ms: Timings,
    pub session: Option<SessionReport>,
    pub orchestration: OrchestrationReport,
}

/// How a question was split and run: the signals, the sub-questions with their own
/// routing, the phases, the checkpoints and the fusion.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OrchestrationReport {
    /// The seven signals (`action_verbs`, `conjunctions`, `long_question`, `entities`,
    /// `relationships`, `sequential`, `low_confidence`: each `{fired, value, found}`),
    /// `fired` and `considered`. Absent when the workflow was resumed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub signals: Option<switchyard_core::orchestration::Signals>,
    /// Absent from `/v1/route` (nothing runs there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    /// Who split the question: `rules`, or the chat decomposer's id. Absent when resumed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split_by: Option<String>,
    pub sub_questions: Vec<SubQuestionReport>,
    /// Task ids, phase by phase: a phase runs after every phase before it.
    pub phases: Vec<Vec<String>>,
    /// `{workflow_id}#{phase}` of each checkpoint this request wrote.
    pub checkpoints: Vec<String>,
    /// The phase this request started from (0 unless resumed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resumed_from_phase: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fusion: Option<FusionReport>,
    /// Detection and decomposition, and the sub-questions' routing.
    #[serde(serialize_with = "millis")]
    pub decompose_ms: f64,
    #[serde(serialize_with = "millis")]
    pub sub_question_routing_ms: f64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SubQuestionReport {
    /// `t1`, `t2`, …
    pub id: String,
    pub question: String,
    pub datasource: String,
    pub template_id: String,
    #[serde(serialize_with = "score")]
    pub confidence: f32,
    pub depends_on: Vec<String>,
    /// `pending`, `ok`, `needs_clarification` or `failed` (absent from `/v1/route`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The sub-question's own routing (absent when the workflow was resumed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub composite_routing: Option<CompositeRouting>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FusionReport {
    /// `simple`, `score`, `hierarchical`, `temporal` or `semantic`.
    #[schema(value_type = String)]
    pub strategy: switchyard_core::orchestration::FusionStrategy,
    /// Chosen by `auto` from the question and the answers.
    pub automatic: bool,
    /// Share of sub-questions answered.
    #[serde(serialize_with = "score")]
    pub coverage: f32,
    /// Share of parameters named by several answers that agree across them.
    #[serde(serialize_with = "score")]
    pub consistency: f32,
    pub merged_duplicates: usize,
}

/// One sub-question's part of a split answer, as its `data.sections` lists them.
#[derive(Debug, Clone, Serialize)]
pub struct SectionData {
    pub task: String,
    pub question: String,
    pub status: switchyard_core::orchestration::TaskStatus,
    pub content: String,
    #[serde(serialize_with = "score")]
    pub confidence: f32,
    /// The earliest date the answer mentions (`temporal` fusion).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
}
