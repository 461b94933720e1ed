//! What each turn of a session replay saw and decided, for `eval --turns-out`: the turn's
//! label, the routings its session read (the turn alone, with the previous question, the
//! assistant's turn alone and with it) and the template the session chose. One JSON line
//! per turn, to look into a replay's errors or fit the session settings elsewhere.

use serde::Serialize;
use switchyard_core::conversation::AssistantTurn;
use switchyard_routing::router::{Match, Outcome, Routing};
use switchyard_routing::session::{ContextUsed, TemplateRef};

use super::{Kind, Line};

#[derive(Debug, Clone, Serialize)]
pub struct TurnRecord {
    pub session_id: String,
    /// The turn's place in its conversation, from 0.
    pub position: usize,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assistant: Option<String>,
    pub domain: Option<String>,
    pub intent: String,
    pub kind: Kind,
    /// What the session chose, and whether it is the labelled template.
    pub chosen: Option<TemplateRef>,
    pub right: bool,
    pub used: ContextUsed,
    /// The session's outcome for the turn, and the choices it offered with `clarify`.
    pub outcome: Outcome,
    pub choices: Vec<TemplateRef>,
    /// The turn alone's outcome and how many choices it offered.
    pub own_outcome: Outcome,
    pub own_choices: usize,
    /// The confidence threshold the turn was routed with.
    pub threshold: f32,
    pub own: Vec<Candidate>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub joint: Option<Vec<Candidate>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assistant_alone: Option<Vec<Candidate>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub with_assistant: Option<Vec<Candidate>>,
}

/// One candidate of a routing, as the session reads it.
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    pub datasource: String,
    pub template_id: String,
    /// The calibrated probability (the confidence without a head).
    pub probability: f32,
    pub confidence: f32,
    pub declined: bool,
}

/// The inputs of one turn's decision, as `in_session` holds them.
pub(super) struct Seen<'a> {
    pub(super) own: &'a Routing,
    pub(super) joint: Option<&'a Routing>,
    pub(super) assistant: Option<AssistantTurn<'a>>,
}

impl TurnRecord {
    pub(super) fn of(
        line: &Line<'_>,
        position: usize,
        seen: Seen<'_>,
        routing: &Routing,
        used: ContextUsed,
    ) -> TurnRecord {
        let chosen = routing.best();
        TurnRecord {
            session_id: line.query.session_id.clone().unwrap_or_default(),
            position,
            text: line.query.text.clone(),
            assistant: line.query.assistant.clone(),
            domain: line.query.domain.clone(),
            intent: line.query.intent.clone(),
            kind: line.kind,
            chosen: chosen.map(Match::template_ref),
            right: chosen.is_some_and(|m| line.is(&m.datasource, &m.template_id)),
            used,
            outcome: routing.outcome,
            choices: routing
                .clarify_choices()
                .iter()
                .map(Match::template_ref)
                .collect(),
            own_outcome: seen.own.outcome,
            own_choices: seen.own.clarify_choices().len(),
            threshold: seen.own.threshold,
            own: candidates(seen.own),
            joint: seen.joint.map(candidates),
            assistant_alone: seen.assistant.map(|a| candidates(a.alone)),
            with_assistant: seen.assistant.map(|a| candidates(a.with_turn)),
        }
    }
}

fn candidates(routing: &Routing) -> Vec<Candidate> {
    routing
        .matches
        .iter()
        .map(|m| Candidate {
            datasource: m.datasource.clone(),
            template_id: m.template_id.clone(),
            probability: m.scores.probability.unwrap_or(m.scores.combined_score),
            confidence: m.scores.combined_score,
            declined: m.is_declined(),
        })
        .collect()
}
