//! The service's memory of a caller: the session's turns (read before routing, written
//! after answering), the caller's topics, and forgetting a session (with its A2A tasks).
//! Keys are scoped by caller (`auth::owner`). Also the turns of earlier questions a caller
//! sends along instead of a session, which live in the request alone.

use serde_json::Map;

use super::execution::Executed;
use super::routed::{Routed, TurnContext};
use super::{Execution, Orchestrated, Question, Service, SessionUse};
use crate::conversation::{assistant_text, only_acknowledges, turn_of, unexecuted_outcome};
use crate::error::Result;
use crate::error::ServiceError;
use crate::orchestration::TaskStatus;
use switchyard_catalog::auth::scoped;
use switchyard_catalog::auth::Access;
use switchyard_catalog::metric;
use switchyard_contract::adapter::AdapterStatus;
use switchyard_routing::router::{Outcome, Router, Routing};
use switchyard_routing::session::{
    carried_parameters, push_bounded, within_window, Turn, TurnOutcome,
};
use switchyard_routing::topics::Topics;
use switchyard_text::params::extract;

impl Service {
    /// Forget a session of `owner`'s (`DELETE /v1/sessions/{id}`): its turns, and the A2A
    /// tasks of the context that is this session (with their workflows' checkpoints);
    /// true when there was a session or a task.
    pub async fn forget_session(
        &self,
        owner: &str,
        session_id: &str,
    ) -> Result<bool, ServiceError> {
        Question {
            query: "-".into(),
            session_id: Some(session_id.to_owned()),
            ..Question::default()
        }
        .validate()?;
        let session = self.sessions.delete(&scoped(owner, session_id)).await?;
        let tasks = self.forget_tasks(owner, session_id).await?;
        Ok(session || tasks > 0)
    }

    /// What the session gives the question: its turns and the caller's topics.
    pub(super) async fn read_context(&self, question: &Question, now: i64) -> TurnContext {
        TurnContext {
            turns: self.read_session(question, now).await,
            topics: self.read_topics(question, now).await,
        }
    }

    /// The context of a question asked after `earlier` (the caller's own questions, oldest
    /// first), built for this request alone: each is routed in the turns before it, as a
    /// session's turn would be, and never executed. No topics: they are a session's.
    pub(super) async fn given_context(
        &self,
        earlier: &[Question],
        access: &Access,
        now: i64,
    ) -> Result<TurnContext> {
        let sessions = &self.config.sessions;
        let mut turns: Vec<Turn> = Vec::new();
        for question in earlier {
            let access = self.access_for(question, access)?;
            let before = TurnContext {
                turns: Ok(Some(turns.clone())),
                topics: None,
            };
            // Replayed at every request: counts no transition.
            let routed = self.route_turn(question, &access, &before, now).await?;
            // "thanks" keeps no turn, as in a session.
            let acknowledges = routed.context.as_ref().is_some_and(|report| {
                let context = &self.config.sessions.context;
                only_acknowledges(&question.query, report, &turns, None, context)
            });
            if acknowledges {
                continue;
            }
            let (routing, belief) = (routed.routing, routed.belief);
            let (outcome, parameters) = unexecuted_result(&self.router, &routing, &turns);
            let mut turn = turn_of(&routing, &belief, outcome, parameters, sessions, now);
            // Never stored: the next turn's joint text needs it whatever `store_text` says.
            turn.query = Some(routing.query.clone());
            push_bounded(&mut turns, turn, sessions.max_turns);
        }
        Ok(TurnContext {
            turns: Ok(Some(turns)),
            topics: None,
        })
    }

    /// Record the turn in the question's session (and an executed question's words in
    /// its caller's topics); what the session was to the answer.
    pub(super) async fn record_turn(
        &self,
        question: &Question,
        routed: &Routed,
        context: TurnContext,
        executed: &Executed,
        now: i64,
    ) -> SessionUse {
        let (id, count) = match (question.session_key(), context.turns) {
            // Turns given with the question: they weighed, nothing is recorded.
            (None, Ok(Some(turns))) => {
                return SessionUse::Used {
                    turns: turns.len(),
                    saved: None,
                }
            }
            (None, _) | (_, Ok(None)) => return SessionUse::None,
            (Some(_), Err(error)) => return SessionUse::Unavailable { error },
            (Some(id), Ok(Some(turns))) => (id, turns.len()),
        };
        let routing = &routed.routing;
        let (outcome, parameters) =
            turn_result(routing, &executed.execution, &executed.orchestration);
        let sessions = &self.config.sessions;
        let mut turn = turn_of(routing, &routed.belief, outcome, parameters, sessions, now);
        turn.answer = executed
            .execution
            .as_ref()
            .and_then(|e| e.adapter.as_ref().ok())
            .filter(|_| sessions.store_text)
            .map(|response| assistant_text(&response.content));
        let saved = self.sessions.append(&id, turn).await;
        if let Err(e) = &saved {
            metrics::counter!(metric::SESSION_STORE_ERRORS).increment(1);
            tracing::warn!(session_id = %id, error = %e, "turn not saved");
        }
        // Counted once the turn is kept: a turn the session lost taught nothing.
        let transition = routed.transition.filter(|_| saved.is_ok());
        self.transitions.record(transition, sessions, now).await;
        if let (TurnOutcome::Execute, Some(topics)) = (outcome, context.topics) {
            self.remember_topics(question, topics, now).await;
        }
        SessionUse::Used {
            turns: count,
            saved: Some(saved.map_err(|e| e.to_string())),
        }
    }

    /// The session's turns within the window: `Ok(None)` without a session id, `Err` with
    /// the store's error (context is a help, never a precondition).
    async fn read_session(
        &self,
        question: &Question,
        now: i64,
    ) -> std::result::Result<Option<Vec<Turn>>, String> {
        let Some(key) = question.session_key() else {
            return Ok(None);
        };
        let id = question.session_id.as_deref().unwrap_or_default();
        let window = self.config.sessions.window_seconds;
        match self.sessions.recent(&key, now).await {
            Ok(turns) => Ok(Some(within_window(&turns, now, window).to_vec())),
            Err(e) => {
                metrics::counter!(metric::SESSION_STORE_ERRORS).increment(1);
                tracing::warn!(session_id = %id, error = %e, "session context unavailable; answering without it");
                Err(e.to_string())
            }
        }
    }

    /// The caller's topics, for a question in a session with topics and texts kept; a
    /// failing store leaves them out (they are a weak prior, never a precondition).
    async fn read_topics(&self, question: &Question, now: i64) -> Option<Topics> {
        let sessions = &self.config.sessions;
        if question.session_id.is_none() || !sessions.topics.enabled || !sessions.store_text {
            return None;
        }
        match self.topics.load(&question.owner, now).await {
            Ok(topics) => Some(topics.at(now, &sessions.topics)),
            Err(e) => {
                metrics::counter!(metric::TOPIC_STORE_ERRORS).increment(1);
                tracing::warn!(error = %e, "topics unavailable; routing without them");
                None
            }
        }
    }

    /// Count an executed question's words into its caller's topics.
    async fn remember_topics(&self, question: &Question, mut topics: Topics, now: i64) {
        topics.add(&question.query, now, &self.config.sessions.topics);
        if let Err(e) = self.topics.save(&question.owner, &topics, now).await {
            metrics::counter!(metric::TOPIC_STORE_ERRORS).increment(1);
            tracing::warn!(error = %e, "topics not saved");
        }
    }
}

/// What a turn's answer was, for the session: its outcome and the parameters it used.
fn turn_result(
    routing: &Routing,
    execution: &Option<Execution>,
    orchestration: &Option<Orchestrated>,
) -> (TurnOutcome, Map<String, serde_json::Value>) {
    if let Some(orchestrated) = orchestration {
        let tasks = &orchestrated.run.checkpoint.tasks;
        let mut parameters = Map::new();
        for state in tasks {
            if let Some(response) = &state.response {
                parameters.extend(response.parameters.clone());
            }
        }
        let answered = tasks.iter().any(|t| t.status == TaskStatus::Ok);
        let outcome = if answered {
            TurnOutcome::Execute
        } else {
            TurnOutcome::Failed
        };
        return (outcome, parameters);
    }
    match execution {
        Some(execution) => match &execution.adapter {
            Ok(response) => (
                match response.status() {
                    AdapterStatus::Ok => TurnOutcome::Execute,
                    AdapterStatus::NeedsClarification => TurnOutcome::NeedsClarification,
                    AdapterStatus::Error => TurnOutcome::Failed,
                },
                response.parameters.clone(),
            ),
            Err(_) => (TurnOutcome::Failed, Map::new()),
        },
        None => (unexecuted_outcome(routing), Map::new()),
    }
}

/// What an unexecuted turn's adapter would have read: its parameters by the adapters' own
/// extraction (pure: patterns and named values, the earlier turns' parameters carried),
/// and the outcome they make, so a later turn can supply a missing one
/// (`needs_clarification`) or leave out one already given. Nothing runs.
fn unexecuted_result(
    router: &Router,
    routing: &Routing,
    turns: &[Turn],
) -> (TurnOutcome, Map<String, serde_json::Value>) {
    let selected = routing.selected_match();
    let Some(m) = selected.filter(|_| routing.outcome == Outcome::Execute) else {
        return (unexecuted_outcome(routing), Map::new());
    };
    let (_, template) = router.template(m);
    let extraction = extract(template, &routing.query, &carried_parameters(turns));
    let outcome = if !extraction.invalid.is_empty() {
        TurnOutcome::Failed
    } else if !extraction.missing.is_empty() {
        TurnOutcome::NeedsClarification
    } else {
        TurnOutcome::Execute
    };
    (outcome, extraction.parameters)
}
