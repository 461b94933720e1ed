//! The service's memory of a caller: the session's turns (read before routing, written
//! after answering), the caller's topics, and forgetting a session. Keys are scoped by
//! caller (`auth::owner`).

use serde_json::Map;

use super::execution::Executed;
use super::routed::{Routed, TurnContext};
use super::{Execution, Orchestrated, Question, Service, SessionUse};
use crate::auth::scoped;
use crate::conversation::{assistant_text, turn_of, unexecuted_outcome};
use crate::error::ServiceError;
use crate::invoker::AdapterStatus;
use crate::orchestration::TaskStatus;
use crate::router::Routing;
use crate::session::{within_window, Turn, TurnOutcome};
use crate::topics::Topics;

impl Service {
    /// Forget a session of `owner`'s (`DELETE /v1/sessions/{id}`); true when there was one.
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
        Ok(self.sessions.delete(&scoped(owner, session_id)).await?)
    }

    /// What the session gives the question: its turns and the caller's topics.
    pub(super) async fn read_context(&self, question: &Question, now: i64) -> TurnContext {
        TurnContext {
            turns: self.read_session(question, now).await,
            topics: self.read_topics(question, now).await,
        }
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
            metrics::counter!("SessionStoreErrors").increment(1);
            tracing::warn!(session_id = %id, error = %e, "turn not saved");
        }
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
                metrics::counter!("SessionStoreErrors").increment(1);
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
                metrics::counter!("TopicStoreErrors").increment(1);
                tracing::warn!(error = %e, "topics unavailable; routing without them");
                None
            }
        }
    }

    /// Count an executed question's words into its caller's topics.
    async fn remember_topics(&self, question: &Question, mut topics: Topics, now: i64) {
        topics.add(&question.query, now, &self.config.sessions.topics);
        if let Err(e) = self.topics.save(&question.owner, &topics, now).await {
            metrics::counter!("TopicStoreErrors").increment(1);
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
