//! What the service knows of a routed question: the router's `Routing`, which nothing
//! changes once decided, and what the service built around it in its own steps (the
//! conversation's part, the tables that could answer a `no_match`, the split).

use crate::orchestration::{Decomposition, Task};
use switchyard_documents::schema::SchemaContext;
use switchyard_routing::router::Routing;
use switchyard_routing::session::{ContextReport, Turn, Weighted};
use switchyard_routing::topics::Topics;
use switchyard_routing::transitions::Transition;

/// A routed question: the routing that stands and what was learned around it.
#[derive(Debug)]
pub struct Routed {
    /// The router's decision, or the conversation's decision made anew from it.
    pub routing: Routing,
    /// What the session contributed (turns of a session only).
    pub context: Option<ContextReport>,
    /// The conversation's belief after this turn, kept with the turn.
    pub belief: Vec<Weighted>,
    /// Where the conversation went from the previous turn, when this one was sure of
    /// itself alone: counted into the deployment's transition rates once it is recorded.
    pub transition: Option<Transition>,
    /// With `no_match` and SQL schemas indexed: the tables that could answer.
    pub schema: Option<SchemaContext>,
    /// What detection and decomposition found (absent when orchestration is off, the
    /// turn answers the conversation's pending question, or a workflow is resumed).
    pub decomposition: Option<Decomposition>,
    /// The tasks and their phases, when the question was split.
    pub plan: Option<Plan>,
}

impl Routed {
    /// Why the routing stands: the conversation's reason when it decided, else the
    /// router's.
    pub fn reason(&self) -> &'static str {
        self.context
            .as_ref()
            .and_then(|c| c.used.reason())
            .unwrap_or_else(|| self.routing.reason())
    }
}

#[derive(Debug, Clone)]
pub struct Plan {
    pub tasks: Vec<Task>,
    /// Positions in `tasks`, phase by phase.
    pub phases: Vec<Vec<usize>>,
}

/// What the caller's session gives a question before it is routed.
pub(super) struct TurnContext {
    /// The session's turns within the window: `Ok(None)` without a session id, `Err` with
    /// the store's error (context is a help, never a precondition).
    pub turns: std::result::Result<Option<Vec<Turn>>, String>,
    /// The caller's topics, when kept.
    pub topics: Option<Topics>,
}

impl TurnContext {
    /// The turns, when the session has been read.
    pub fn turns(&self) -> Option<&[Turn]> {
        match &self.turns {
            Ok(Some(turns)) => Some(turns),
            _ => None,
        }
    }
}
