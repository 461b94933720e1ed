//! Running a workflow: phase by phase, the tasks of a phase concurrently (at most
//! `max_parallel` at once), a checkpoint after each phase. Tasks already done (a resumed
//! workflow) are not run again; a task whose dependency failed waits, and the answer is
//! partial with each task's status.

use futures_util::stream::{self, StreamExt};
use serde_json::{Map, Value};
use std::time::Instant;

use super::workflow::{Checkpoint, TaskState, TaskStatus, WorkflowStore};
use switchyard_catalog::metric;
use switchyard_contract::adapter::{AdapterInvoker, AdapterRequest};

/// What running (or resuming) a workflow did.
#[derive(Debug, Clone)]
pub struct Run {
    pub checkpoint: Checkpoint,
    /// The phase the run started from (0 for a new workflow).
    pub started_at_phase: usize,
    /// `{workflow_id}#{phase}` of each checkpoint written by this run.
    pub checkpoints: Vec<String>,
    /// The store's error, when a checkpoint could not be written (the answer still is).
    pub checkpoint_error: Option<String>,
}

/// How a task becomes an adapter request: its deadline and the parameters it starts
/// with (the session's).
pub struct Requests<'a> {
    pub request_id: &'a str,
    pub session_parameters: &'a Map<String, Value>,
    /// The request's documents filters, passed to every task.
    pub filters: &'a Map<String, Value>,
    pub deadline_ms: &'a (dyn Fn(&str) -> u64 + Sync),
}

pub async fn run(
    invoker: &dyn AdapterInvoker,
    store: &dyn WorkflowStore,
    mut checkpoint: Checkpoint,
    requests: &Requests<'_>,
    max_parallel: usize,
    now: i64,
) -> Run {
    let started_at_phase = checkpoint.completed_phases;
    let mut checkpoints = Vec::new();
    let mut checkpoint_error = None;
    for phase in started_at_phase..checkpoint.phases.len() {
        let runnable: Vec<usize> = checkpoint.phases[phase]
            .iter()
            .copied()
            .filter(|&i| !checkpoint.tasks[i].status.is_done())
            .collect();
        let mut prepared = Vec::new();
        for i in runnable {
            let workflow =
                switchyard_catalog::auth::scoped(&checkpoint.owner, &checkpoint.workflow_id);
            match request_for(&checkpoint.tasks, i, &workflow, requests) {
                Ok(request) => prepared.push((i, request)),
                Err(waiting) => {
                    let state = &mut checkpoint.tasks[i];
                    state.status = TaskStatus::Pending;
                    state.error = Some(waiting);
                }
            }
        }
        let finished: Vec<(usize, TaskState)> = stream::iter(prepared)
            .map(|(i, request)| {
                let mut state = checkpoint.tasks[i].clone();
                async move {
                    let started = Instant::now();
                    let datasource = request.datasource.clone();
                    let response = invoker.invoke(request).await;
                    state.adapter_ms = started.elapsed().as_secs_f64() * 1000.0;
                    state.attempts += 1;
                    match response {
                        Ok(response) => {
                            state.status = TaskStatus::of(&response);
                            state.error = response.error().map(str::to_owned);
                            state.response = Some(response);
                        }
                        Err(e) => {
                            metrics::counter!(metric::ADAPTER_ERRORS, metric::DATASOURCE => datasource)
                                .increment(1);
                            state.status = TaskStatus::Failed;
                            state.error = Some(e.to_string());
                            state.response = None;
                        }
                    }
                    (i, state)
                }
            })
            .buffer_unordered(max_parallel.max(1))
            .collect()
            .await;
        for (i, state) in finished {
            checkpoint.tasks[i] = state;
        }
        checkpoint.completed_phases = checkpoint
            .phases
            .iter()
            .take_while(|p| p.iter().all(|&i| checkpoint.tasks[i].status.is_done()))
            .count();
        checkpoint.updated_at = now;
        match store.save(&checkpoint.for_storage()).await {
            Ok(()) => checkpoints.push(format!("{}#{}", checkpoint.workflow_id, phase + 1)),
            Err(e) => {
                metrics::counter!(metric::WORKFLOW_STORE_ERRORS).increment(1);
                tracing::warn!(workflow_id = %checkpoint.workflow_id, error = %e, "checkpoint not saved");
                checkpoint_error = Some(e.to_string());
            }
        }
    }
    Run {
        checkpoint,
        started_at_phase,
        checkpoints,
        checkpoint_error,
    }
}

/// The request of task `i`: the session's parameters, then those its dependencies
/// answered with, and their answers as `upstream`. `Err` names a dependency not done.
fn request_for(
    tasks: &[TaskState],
    i: usize,
    workflow: &str,
    requests: &Requests<'_>,
) -> std::result::Result<AdapterRequest, String> {
    let task = &tasks[i].task;
    let mut parameters = requests.session_parameters.clone();
    let mut upstream = Map::new();
    for dependency in &task.depends_on {
        let Some(done) = tasks.iter().find(|t| &t.task.id == dependency) else {
            return Err(format!("waits on `{dependency}`, which is not in the plan"));
        };
        let Some(response) = done.response.as_ref().filter(|_| done.status.is_done()) else {
            return Err(format!("waits on `{dependency}`, which has not answered"));
        };
        parameters.extend(response.parameters.clone());
        upstream.insert(
            dependency.clone(),
            serde_json::json!({ "content": response.content, "parameters": response.parameters }),
        );
    }
    Ok(AdapterRequest {
        request_id: format!("{}-{}", requests.request_id, task.id),
        datasource: task.datasource.clone(),
        template_id: task.template_id.clone(),
        query: task.question.clone(),
        session_parameters: parameters,
        deadline_ms: (requests.deadline_ms)(&task.datasource),
        upstream,
        // A documents sub-question is searched by its words (BM25): its vector was made
        // for routing and is not kept.
        query_vector: None,
        filters: requests.filters.clone(),
        schema_context: None,
        // Named by the service's invoker (`invoker::RoutedWith`), on every request.
        catalog_hash: None,
        // The caller's workflow and its task: the same operation when the workflow
        // resumes (a new request id) or its A2A message comes again.
        idempotency_scope: Some(format!("{workflow}/{}", task.id)),
    })
}
