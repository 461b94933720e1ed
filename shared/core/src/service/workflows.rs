//! Questions that ask for several things, in the service: splitting a routed question
//! (the rules, then the optional chat decomposer) into a plan, and running its workflow
//! (new, or resumed from its checkpoint) to a fused answer.

use std::sync::Arc;

use serde_json::Map;

use super::routed::{Plan, Routed};
use super::{new_request_id, Question, Service};
use crate::error::Result;
use crate::error::ServiceError;
use crate::orchestration::{
    decompose, fuse, phases, plan, run, validated_parts, Checkpoint, Decomposition, Fused,
    QuestionSplitter, Requests, Run,
};
use switchyard_catalog::auth::scoped;
use switchyard_catalog::auth::Access;
use switchyard_catalog::blocking::run_blocking;
use switchyard_catalog::metric;
use switchyard_routing::router::Routing;

/// A split question's run: its workflow after this request, and the fused answer.
#[derive(Debug)]
pub struct Orchestrated {
    /// Absent when the workflow was resumed from a checkpoint (no new decomposition).
    pub decomposition: Option<Decomposition>,
    pub run: Run,
    pub fused: Fused,
}

/// A workflow held by one request: its caller-scoped key and the request's token.
pub(super) struct Lease {
    key: String,
    token: String,
}

impl Service {
    /// Ask this splitter (the chat model) about questions the rules could not split
    /// (`orchestration.chat_decomposer` on).
    pub fn with_splitter(mut self, splitter: Arc<dyn QuestionSplitter>) -> Self {
        self.splitter = Some(splitter);
        self
    }

    /// Detect and decompose `routing`'s question: the rules, then the chat decomposer for
    /// what they could not split; the plan when it was split.
    pub(super) async fn split(
        &self,
        routing: &Routing,
        access: &Access,
    ) -> Result<(Decomposition, Option<Plan>)> {
        let config = &self.config.orchestration;
        // Every run of segments is routed (embedded and scored): CPU-bound.
        let mut decomposition =
            run_blocking(|| decompose(&self.router, &self.decomposer, routing, access))?;
        if !decomposition.is_split() && decomposition.signals.considered && config.chat_decomposer {
            if let Some(splitter) = &self.splitter {
                match splitter.split(&routing.query).await {
                    Ok(texts) => {
                        let parts = run_blocking(|| {
                            validated_parts(&self.router, routing, &texts, access, config)
                        })?;
                        if let Some(parts) = parts {
                            decomposition.parts = parts;
                            decomposition.method = splitter.id().to_owned();
                        }
                    }
                    Err(e) => {
                        metrics::counter!(metric::SPLITTER_ERRORS).increment(1);
                        tracing::warn!(splitter = splitter.id(), error = %e, "chat decomposer failed; the question stays whole");
                        decomposition.splitter_error = Some(e.to_string());
                    }
                }
            }
        }
        let plan = if decomposition.is_split() {
            let tasks = plan(&decomposition.parts, &config.reference_words);
            let phases = phases(&tasks)?;
            Some(Plan { tasks, phases })
        } else {
            None
        };
        Ok((decomposition, plan))
    }

    /// Hold the request's workflow while it runs, so that a retry arriving meanwhile is
    /// told to wait (409) instead of running the same phase again. Leases are scoped by
    /// caller: another caller's request never blocks this one. A failing store is a help
    /// lost, as with checkpoints: the request runs without the lease.
    pub(super) async fn claim_workflow(
        &self,
        question: &Question,
        now: i64,
    ) -> Result<Option<Lease>, ServiceError> {
        let Some(id) = &question.workflow_id else {
            return Ok(None);
        };
        let seconds = self.config.orchestration.workflow_lease_seconds;
        let lease = Lease {
            key: format!("{}#lease", scoped(&question.owner, id)),
            token: new_request_id(),
        };
        let until = now + seconds as i64;
        match self
            .workflows
            .claim(&lease.key, &lease.token, now, until)
            .await
        {
            Ok(true) => Ok(Some(lease)),
            Ok(false) => {
                metrics::counter!(metric::WORKFLOWS_BUSY).increment(1);
                Err(ServiceError::WorkflowRunning {
                    workflow_id: id.clone(),
                    retry_after_seconds: 1,
                })
            }
            Err(e) => {
                metrics::counter!(metric::WORKFLOW_STORE_ERRORS).increment(1);
                tracing::warn!(workflow_id = %id, error = %e, "workflow lease unavailable; running without it");
                Ok(None)
            }
        }
    }

    pub(super) async fn release_workflow(&self, lease: &Lease) {
        if let Err(e) = self.workflows.release(&lease.key, &lease.token).await {
            // It lapses by itself after `workflow_lease_seconds`.
            metrics::counter!(metric::WORKFLOW_STORE_ERRORS).increment(1);
            tracing::warn!(error = %e, "workflow lease not released");
        }
    }

    /// The checkpoint a request's `workflow_id` resumes, if one is kept (a finished one
    /// too: its answer is given again, nothing re-run); a workflow of another question is
    /// refused. A failing store is a help lost, not a failed request: the question is
    /// answered as a new workflow.
    pub(super) async fn resumable(
        &self,
        question: &Question,
        now: i64,
    ) -> Result<Option<Checkpoint>> {
        let Some(id) = &question.workflow_id else {
            return Ok(None);
        };
        // Stored under the caller's scoped key: another caller's same id is another workflow.
        let checkpoint = match self.workflows.load(&scoped(&question.owner, id), now).await {
            Ok(Some(checkpoint)) => checkpoint,
            Ok(None) => return Ok(None),
            Err(e) => {
                metrics::counter!(metric::WORKFLOW_STORE_ERRORS).increment(1);
                tracing::warn!(workflow_id = %id, error = %e, "checkpoint unavailable; running the question anew");
                return Ok(None);
            }
        };
        // Another caller's workflow is refused exactly like another question's: the
        // answer tells nothing about whether it exists.
        if !checkpoint.asks(&question.query) || checkpoint.owner != question.owner {
            return Err(ServiceError::invalid_request(
                "workflow_id",
                format!("workflow `{id}` belongs to another question"),
            ));
        }
        let resumable = checkpoint.with_texts(&question.query);
        if resumable.is_none() {
            tracing::warn!(workflow_id = %id, "a task to run has no stored text; running the question anew");
        }
        Ok(resumable)
    }

    /// Plan: the workflow to run, if any (the resumed one, or a new one for a question
    /// that was split).
    pub(super) fn plan_workflow(
        &self,
        question: &Question,
        resumed: Option<Checkpoint>,
        routed: &Routed,
        request_id: &str,
        now: i64,
    ) -> Option<Checkpoint> {
        match (resumed, &routed.plan) {
            (Some(checkpoint), _) => Some(checkpoint),
            (None, Some(plan)) => Some(self.new_workflow(question, request_id, plan.clone(), now)),
            (None, None) => None,
        }
    }

    fn new_workflow(
        &self,
        question: &Question,
        request_id: &str,
        plan: Plan,
        now: i64,
    ) -> Checkpoint {
        let ttl = self.config.orchestration.checkpoint_ttl_seconds as i64;
        let mut checkpoint = Checkpoint::new(
            question
                .workflow_id
                .clone()
                .unwrap_or_else(|| format!("wf-{request_id}")),
            question.query.clone(),
            plan.tasks,
            plan.phases,
            now,
            now + ttl,
        );
        checkpoint.owner = question.owner.clone();
        checkpoint.text_kept = self.config.sessions.store_text;
        checkpoint
    }

    /// Run (or resume) a workflow's phases and fuse what its tasks answered.
    pub(super) async fn orchestrate(
        &self,
        question: &Question,
        checkpoint: Checkpoint,
        decomposition: Option<Decomposition>,
        session_parameters: &Map<String, serde_json::Value>,
        request_id: &str,
        now: i64,
    ) -> Orchestrated {
        let config = &self.config.orchestration;
        let catalog = &self.router.index().catalog;
        let deadline_ms = |datasource: &str| {
            catalog
                .datasources
                .iter()
                .find(|d| d.spec.name == datasource)
                .map_or(5000, |d| d.spec.limits.timeout_ms)
        };
        let requests = Requests {
            request_id,
            session_parameters,
            filters: &question.filters,
            deadline_ms: &deadline_ms,
        };
        let run = run(
            self.invoker.as_ref(),
            self.workflows.as_ref(),
            checkpoint,
            &requests,
            config.max_parallel_tasks,
            now,
        )
        .await;
        let fused = fuse(
            question.fusion.unwrap_or(config.fusion),
            &question.query,
            &run.checkpoint.tasks,
            config.duplicate_similarity,
        );
        metrics::counter!(metric::ORCHESTRATED_QUESTIONS).increment(1);
        metrics::histogram!(metric::ORCHESTRATION_COVERAGE).record(f64::from(fused.coverage));
        Orchestrated {
            decomposition,
            run,
            fused,
        }
    }
}
