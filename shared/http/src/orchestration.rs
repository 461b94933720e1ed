//! Split questions on the wire: the plan `/v1/route` shows, and the fused answer of
//! `/v1/query` with each sub-question's status and routing.

use serde_json::json;
use switchyard_core::orchestration::{Decomposition, Task, TaskState, TaskStatus};
use switchyard_core::service::{Orchestrated as Run_, Routed};
use switchyard_routing::router::Routing;

use crate::render::{timings, to_value, Render};
use crate::wire::*;

impl Render<'_> {
    /// The plan of a split question (`/v1/route`); none when it stays whole.
    pub fn plan_report(&self, routed: &Routed) -> Option<OrchestrationReport> {
        let (decomposition, plan) = (routed.decomposition.as_ref()?, routed.plan.as_ref()?);
        let sub_questions = plan
            .tasks
            .iter()
            .zip(&decomposition.parts)
            .map(|(task, part)| self.planned(task, Some(&part.routing)))
            .collect();
        let ids = |phase: &Vec<usize>| phase.iter().map(|&i| plan.tasks[i].id.clone()).collect();
        Some(OrchestrationReport {
            signals: Some(decomposition.signals.clone()),
            workflow_id: None,
            split_by: Some(decomposition.method.clone()),
            sub_questions,
            phases: plan.phases.iter().map(ids).collect(),
            checkpoints: Vec::new(),
            resumed_from_phase: None,
            checkpoint_error: None,
            fusion: None,
            decompose_ms: decomposition.decompose_ms,
            sub_question_routing_ms: decomposition.routing_ms,
        })
    }

    /// A split question's answer and its HTTP status (502 when no sub-question answered).
    pub(crate) fn orchestrated(
        &self,
        routing: &Routing,
        request_id: String,
        session_id: Option<String>,
        session: Option<SessionReport>,
        orchestrated: Run_,
    ) -> (u16, QueryAnswer) {
        let Run_ {
            decomposition,
            run,
            fused,
        } = orchestrated;
        let tasks = &run.checkpoint.tasks;
        let answered = tasks.iter().filter(|t| t.status == TaskStatus::Ok).count();
        let (http, status) = match answered {
            0 => (502, "error"),
            n if n == tasks.len() => (200, "ok"),
            _ => (200, "partial"),
        };
        let sub_questions = tasks
            .iter()
            .map(|state| self.task_report(state, decomposition.as_ref()))
            .collect();
        let ids = |phase: &Vec<usize>| phase.iter().map(|&i| tasks[i].task.id.clone()).collect();
        let sections: Vec<SectionData> = fused
            .sections
            .iter()
            .map(|s| SectionData {
                task: s.task.clone(),
                question: s.question.clone(),
                status: s.status,
                content: s.content.clone(),
                confidence: s.confidence,
                date: s.date.clone(),
            })
            .collect();
        let mut data = json!({ "sections": to_value(&sections) });
        if let Some(rows) = fused.data.get("rows") {
            data["rows"] = rows.clone();
        }
        let report = OrchestrationReport {
            signals: decomposition.as_ref().map(|d| d.signals.clone()),
            workflow_id: Some(run.checkpoint.workflow_id.clone()),
            split_by: decomposition.as_ref().map(|d| d.method.clone()),
            sub_questions,
            phases: run.checkpoint.phases.iter().map(ids).collect(),
            checkpoints: run.checkpoints.clone(),
            resumed_from_phase: Some(run.started_at_phase),
            checkpoint_error: run.checkpoint_error.clone(),
            fusion: Some(FusionReport {
                strategy: fused.strategy,
                automatic: fused.automatic,
                coverage: fused.coverage,
                consistency: fused.consistency,
                merged_duplicates: fused.merged_duplicates,
            }),
            decompose_ms: decomposition.as_ref().map_or(0.0, |d| d.decompose_ms),
            sub_question_routing_ms: decomposition.as_ref().map_or(0.0, |d| d.routing_ms),
        };
        let confidence = tasks
            .iter()
            .map(|t| t.task.confidence)
            .fold(f32::INFINITY, f32::min);
        let answer = Orchestrated {
            status: status.into(),
            content: fused.content,
            data,
            confidence: if confidence.is_finite() {
                confidence
            } else {
                0.0
            },
            metadata: OrchestratedMetadata {
                request_id,
                session_id,
                source: "orchestration".into(),
                timings_ms: timings(&routing.timings),
                session,
                orchestration: report,
            },
        };
        (http, QueryAnswer::Orchestrated(answer))
    }

    fn task_report(
        &self,
        state: &TaskState,
        decomposition: Option<&Decomposition>,
    ) -> SubQuestionReport {
        let task = &state.task;
        let routing = decomposition.and_then(|d| {
            d.parts
                .iter()
                .find(|p| p.text == task.question)
                .map(|p| &p.routing)
        });
        SubQuestionReport {
            status: to_value(&state.status).as_str().map(str::to_owned),
            attempts: Some(state.attempts),
            content: state.response.as_ref().map(|r| r.content.clone()),
            parameters: state.response.as_ref().map(|r| r.parameters.clone()),
            error: state.error.clone(),
            ..self.planned(task, routing)
        }
    }

    /// A task as planned, before it runs, with its own routing when known.
    fn planned(&self, task: &Task, routing: Option<&Routing>) -> SubQuestionReport {
        SubQuestionReport {
            id: task.id.clone(),
            question: task.question.clone(),
            datasource: task.datasource.clone(),
            template_id: task.template_id.clone(),
            confidence: task.confidence,
            depends_on: task.depends_on.clone(),
            status: None,
            attempts: None,
            content: None,
            parameters: None,
            error: None,
            composite_routing: routing.and_then(|r| self.sub_routing(r)),
        }
    }

    fn sub_routing(&self, routing: &Routing) -> Option<CompositeRouting> {
        routing.best().map(|m| self.composite_routing(routing, m))
    }
}
