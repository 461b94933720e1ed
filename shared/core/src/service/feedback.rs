//! The decision kept with each answer, and the caller's judgement of it
//! (`POST /v1/feedback`). A decision is kept under its request id scoped by the caller that
//! got the answer (`feedback::decision_key`), so feedback is taken from that caller alone:
//! another caller naming the id is told no such answer is kept (404), exactly as for an
//! unknown id, so request ids tell nothing about other callers' answers.

use super::execution::Executed;
use super::{Question, Service, MAX_SESSION_ID_CHARS};
use crate::error::Result;
use crate::error::ServiceError;
use crate::feedback::{decision_key, Decision, Feedback, FeedbackRecord};
use switchyard_catalog::metric;
use switchyard_routing::router::Routing;

impl Service {
    /// Keep the decision for feedback (`feedback.enabled`): a help, never a precondition
    /// of the answer.
    pub(super) async fn record_decision(
        &self,
        question: &Question,
        routing: &Routing,
        executed: &Executed,
        request_id: &str,
        now: i64,
    ) {
        if !self.config.feedback.enabled {
            return;
        }
        let adapter_ms = match (&executed.execution, &executed.orchestration) {
            (Some(e), _) => e.adapter_ms,
            (None, Some(o)) => o.run.checkpoint.tasks.iter().map(|t| t.adapter_ms).sum(),
            (None, None) => 0.0,
        };
        let processing_ms = routing.timings.total_ms + adapter_ms;
        let session = question.session_key();
        let asked = self
            .config
            .sessions
            .store_text
            .then_some((question.query.as_str(), session.as_deref()));
        let decision = Decision::of(routing, request_id, processing_ms, now, asked);
        let key = decision_key(&question.owner, request_id);
        if let Err(e) = self.feedback.record(&key, decision).await {
            metrics::counter!(metric::FEEDBACK_STORE_ERRORS).increment(1);
            tracing::warn!(request_id = %request_id, error = %e, "decision not kept for feedback");
        }
    }

    /// Judge an earlier answer of `owner`'s (`POST /v1/feedback`): the record with its
    /// reward. Another caller's answer is [`ServiceError::UnknownRequest`], like an unknown
    /// one.
    pub async fn feedback(
        &self,
        owner: &str,
        request_id: &str,
        feedback: Feedback,
    ) -> Result<FeedbackRecord, ServiceError> {
        if request_id.is_empty() || request_id.chars().count() > MAX_SESSION_ID_CHARS {
            return Err(ServiceError::invalid_request(
                "request_id",
                format!("must be a string of 1 to {MAX_SESSION_ID_CHARS} characters"),
            ));
        }
        feedback.validate()?;
        let record = self
            .feedback
            .judge(&decision_key(owner, request_id), feedback)
            .await?
            .ok_or_else(|| ServiceError::UnknownRequest(request_id.to_owned()))?;
        if let Some(reward) = record.reward {
            metrics::histogram!(metric::FEEDBACK_REWARD).record(f64::from(reward));
        }
        Ok(record)
    }
}
