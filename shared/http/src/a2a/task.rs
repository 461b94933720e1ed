//! `SendMessage`, `GetTask` and `CancelTask`: a question in, the answer as a task, kept in
//! the workflow store under the caller's scoped id so the next message (on any instance)
//! can continue it.

use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use switchyard_catalog::clock::unix_now;
use switchyard_core::service::{new_request_id, Question, MAX_SESSION_ID_CHARS};
use switchyard_core::ServiceError;

use super::storage::{for_storage, says, text_of};
use super::wire::{
    Artifact, GetTaskRequest, Message, Part, Role, SendMessageRequest, Task, TaskState, TaskStatus,
};
use super::RpcError;
use crate::error::ApiError;
use crate::render::Render;
use crate::wire::QueryAnswer;
use crate::{Authorized, Shared};

/// What a task waits for in `TASK_STATE_INPUT_REQUIRED`, kept in its metadata: the caller's
/// answer to a question (`input`), or any message to resume a split question's workflow
/// whose answer was partial (`resume`; the workflow's own question is asked again).
const WAITING_FOR_INPUT: &str = "input";
const WAITING_TO_RESUME: &str = "resume";

pub(crate) async fn send(
    service: &Shared,
    authorized: &Authorized,
    params: Value,
) -> Result<Value, RpcError> {
    let SendMessageRequest { message } = parse::<SendMessageRequest>(params)?;
    if message.message_id.trim().is_empty() {
        return Err(RpcError::invalid_params("message.messageId: is required"));
    }
    // The id is part of a stored key: bounded as session ids are.
    if message.message_id.chars().count() > MAX_SESSION_ID_CHARS {
        return Err(RpcError::invalid_params(format!(
            "message.messageId: at most {MAX_SESSION_ID_CHARS} characters"
        )));
    }
    if message.role != Role::User {
        return Err(RpcError::invalid_params(
            "message.role: must be ROLE_USER (a question to this agent)",
        ));
    }
    let text = text_of(&message);
    if text.trim().is_empty() {
        return Err(RpcError::invalid_params(
            "message.parts: needs a text part (the question); files and data are not taken",
        ));
    }
    let now = unix_now();
    // A retried message (its messageId again, from the same caller) gets the task it made,
    // not a second run of its question: an adapter's side effects happen once.
    if let Some(task) = replayed(service, authorized, &message.message_id, &text).await? {
        return Ok(json!({ "task": task }));
    }
    let message_id = message.message_id.clone();
    let earlier = match &message.task_id {
        Some(id) => Some(continued(service, authorized, id, &message).await?),
        None => None,
    };
    let (id, context_id, mut history, asked) = match earlier {
        Some(task) => {
            let asked = match waiting_for(&task) {
                // The workflow resumes only for its own question.
                Some(WAITING_TO_RESUME) => first_question(&task).unwrap_or(text.clone()),
                _ => text.clone(),
            };
            (task.id, task.context_id, task.history, asked)
        }
        None => (
            task_id_of(&authorized.owner, &message.message_id),
            message.context_id.clone().unwrap_or_else(new_request_id),
            Vec::new(),
            text.clone(),
        ),
    };
    history.push(Message {
        context_id: Some(context_id.clone()),
        task_id: Some(id.clone()),
        metadata: None,
        ..message
    });
    let question = Question {
        query: asked,
        session_id: Some(context_id.clone()),
        datasources: None,
        // A split question's workflow is the task: its checkpoint lives under the task's id.
        workflow_id: Some(id.clone()),
        fusion: None,
        filters: Default::default(),
        owner: authorized.owner.clone(),
        // The context's last answer, ours, plays the assistant's turn.
        assistant: None,
        assistant_is_ours: false,
    };
    let answer = match service.query(&question, &authorized.access).await {
        Ok(answer) => answer,
        // The task's workflow is held: this message (a client's retry of it, or another
        // message of the task) is being answered by another request. Nothing runs twice.
        Err(ServiceError::WorkflowRunning { .. }) => {
            return Ok(json!({ "task": working(id, context_id, history, now) }))
        }
        Err(e) => return Err(contextual(ApiError::from(e))),
    };
    let (_, answer) = Render(service.router()).answer(question.session_id, answer);
    let texts_kept = service.config().sessions.store_text;
    let task = task_of(id, context_id, history, &answer, texts_kept, now);
    // The message's record first: a retry after a failed save of the task finds it there.
    save(service, authorized, &message_key(&message_id), &task, now).await?;
    save(service, authorized, &task.id, &task, now).await?;
    Ok(json!({ "task": task }))
}

/// A new task's id, from its caller and its first message's id: a retry of the message
/// (on any instance) names the same task, so its workflow's lease keeps the question from
/// running twice while the first attempt runs. Unguessable to other callers without the
/// caller's owner id, and scoped by it in the store anyway.
fn task_id_of(owner: &str, message_id: &str) -> String {
    let digest = Sha256::new()
        .chain_update(owner.as_bytes())
        .chain_update([0])
        .chain_update(message_id.as_bytes())
        .finalize();
    hex::encode(&digest[..16])
}

/// The task as a retry sees it while the first attempt is running.
fn working(id: String, context_id: String, history: Vec<Message>, now: i64) -> Task {
    Task {
        id,
        context_id,
        status: TaskStatus {
            state: TaskState::Working,
            message: None,
            timestamp: rfc3339(now),
        },
        artifacts: Vec::new(),
        history,
        metadata: None,
    }
}

pub(crate) async fn get(
    service: &Shared,
    authorized: &Authorized,
    params: Value,
) -> Result<Value, RpcError> {
    let request = parse::<GetTaskRequest>(params)?;
    let mut task = load(service, authorized, &request.id)
        .await?
        .ok_or_else(|| RpcError::task_not_found(&request.id))?;
    if let Some(length) = request.history_length {
        let keep = task.history.len().saturating_sub(length);
        task.history.drain(..keep);
    }
    serde_json::to_value(task).map_err(|e| RpcError::internal(e.to_string()))
}

/// Nothing runs between requests, so no task is ever cancelable; an unknown one is not found.
pub(crate) async fn cancel(
    service: &Shared,
    authorized: &Authorized,
    params: Value,
) -> Result<Value, RpcError> {
    let request = parse::<GetTaskRequest>(params)?;
    let task = load(service, authorized, &request.id)
        .await?
        .ok_or_else(|| RpcError::task_not_found(&request.id))?;
    Err(RpcError {
        code: -32002,
        reason: "TASK_NOT_CANCELABLE",
        message: format!(
            "task `{}` is not running (an answer is computed within its request)",
            task.id
        ),
    })
}

/// The task a message continues: this caller's, in the message's context, still waiting.
async fn continued(
    service: &Shared,
    authorized: &Authorized,
    id: &str,
    message: &Message,
) -> Result<Task, RpcError> {
    let task = load(service, authorized, id)
        .await?
        .ok_or_else(|| RpcError::task_not_found(id))?;
    if let Some(context) = &message.context_id {
        if context != &task.context_id {
            return Err(RpcError::invalid_params(format!(
                "message.contextId: `{context}` is not the context of task `{id}` (`{}`)",
                task.context_id
            )));
        }
    }
    if task.status.state.is_terminal() {
        return Err(RpcError::unsupported(format!(
            "task `{id}` is finished; send a new message without taskId (with its contextId to go on with the conversation)"
        )));
    }
    Ok(task)
}

/// An answer as a task: done (completed, failed, rejected for a question no template fits)
/// with the answer as its artifact, or waiting for the caller with the answer as its
/// status message.
fn task_of(
    id: String,
    context_id: String,
    mut history: Vec<Message>,
    answer: &QueryAnswer,
    texts_kept: bool,
    now: i64,
) -> Task {
    let data = serde_json::to_value(answer).unwrap_or(Value::Null);
    let status = data.get("status").and_then(Value::as_str).unwrap_or("");
    let (state, waiting) = match (answer, status) {
        (QueryAnswer::Answered(_), "ok")
        | (QueryAnswer::Orchestrated(_), "ok")
        | (QueryAnswer::Acknowledged(_), _) => (TaskState::Completed, None),
        (QueryAnswer::Answered(_), "needs_clarification") | (QueryAnswer::Clarify(_), _) => {
            (TaskState::InputRequired, Some(WAITING_FOR_INPUT))
        }
        (QueryAnswer::Orchestrated(_), "partial") => {
            (TaskState::InputRequired, Some(WAITING_TO_RESUME))
        }
        (QueryAnswer::NoMatch(_), _) => (TaskState::Rejected, None),
        _ => (TaskState::Failed, None),
    };
    let mut text = answer.content().to_owned();
    match waiting {
        Some(WAITING_TO_RESUME) if texts_kept => {
            text.push_str("\n\nSome parts failed: send any message in this task to retry them.")
        }
        // The question is not kept (`sessions.store_text` off): the caller gives it back.
        Some(WAITING_TO_RESUME) => text.push_str(
            "\n\nSome parts failed: send the same question again in this task to retry them.",
        ),
        _ => {}
    }
    let parts = vec![Part::text(text), Part::data(data)];
    let agent_message = Message {
        message_id: new_request_id(),
        context_id: Some(context_id.clone()),
        task_id: Some(id.clone()),
        role: Role::Agent,
        parts: parts.clone(),
        metadata: None,
    };
    let (artifacts, status_message) = match state {
        TaskState::Completed | TaskState::Failed => (
            vec![Artifact {
                artifact_id: format!("{id}-answer"),
                name: Some("answer".to_owned()),
                parts,
            }],
            None,
        ),
        _ => (Vec::new(), Some(agent_message.clone())),
    };
    // The history keeps what the agent said; the answer's data is the artifact's (or the
    // status message's), once.
    history.push(Message {
        parts: agent_message
            .parts
            .into_iter()
            .filter(|p| p.data.is_none())
            .collect(),
        ..agent_message
    });
    Task {
        id,
        context_id,
        status: TaskStatus {
            state,
            message: status_message,
            timestamp: rfc3339(now),
        },
        artifacts,
        history,
        metadata: waiting.map(|w| json!({ "waitingFor": w })),
    }
}

fn waiting_for(task: &Task) -> Option<&str> {
    task.metadata.as_ref()?.get("waitingFor")?.as_str()
}

/// The question that started the task (a split question's workflow resumes with it), unless
/// it was not kept (`sessions.store_text` off).
fn first_question(task: &Task) -> Option<String> {
    let first = task.history.iter().find(|m| m.role == Role::User)?;
    Some(text_of(first)).filter(|text| !text.is_empty())
}

/// The task as the answer to one message left it, kept under the message's id: what a retry
/// of that message is answered with. Task ids have no `:`, so the two never meet.
fn message_key(message_id: &str) -> String {
    format!("message:{message_id}")
}

/// The task a message with this id made before, if this caller sent one; refused when the
/// id was used for another text (ids are unique per message).
async fn replayed(
    service: &Shared,
    authorized: &Authorized,
    message_id: &str,
    text: &str,
) -> Result<Option<Task>, RpcError> {
    let Some(task) = load(service, authorized, &message_key(message_id)).await? else {
        return Ok(None);
    };
    let before = task
        .history
        .iter()
        .find(|m| m.role == Role::User && m.message_id == message_id);
    let same = before.is_some_and(|m| says(m, text));
    if !same {
        return Err(RpcError::invalid_params(format!(
            "message.messageId: `{message_id}` was already sent with another text (a message id names one message)"
        )));
    }
    Ok(Some(task))
}

async fn save(
    service: &Shared,
    authorized: &Authorized,
    key: &str,
    task: &Task,
    now: i64,
) -> Result<(), RpcError> {
    let json = for_storage(task, service.config().sessions.store_text)?;
    service
        .save_task(&authorized.owner, key, &task.context_id, &json, now)
        .await
        .map_err(|e| RpcError::from(ApiError::from(e)))
}

async fn load(
    service: &Shared,
    authorized: &Authorized,
    id: &str,
) -> Result<Option<Task>, RpcError> {
    let Some(json) = service
        .load_task(&authorized.owner, id, unix_now())
        .await
        .map_err(|e| RpcError::from(ApiError::from(e)))?
    else {
        return Ok(None);
    };
    serde_json::from_str(&json)
        .map(Some)
        .map_err(|e| RpcError::internal(format!("task `{id}` as stored does not parse: {e}")))
}

/// The service's refusals in the protocol's words: its `session_id` is the message's
/// `contextId`.
fn contextual(error: ApiError) -> RpcError {
    match error.parts() {
        (StatusCode::BAD_REQUEST, _, Some(field)) if field == "session_id" => {
            RpcError::invalid_params(format!("message.contextId: {error}"))
        }
        (StatusCode::BAD_REQUEST, _, Some(field)) if field == "query" => {
            RpcError::invalid_params(format!("message.parts (the question): {error}"))
        }
        _ => RpcError::from(error),
    }
}

/// Params as `T`, refused naming the field at fault.
fn parse<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    if !params.is_object() {
        return Err(RpcError::invalid_params("params: must be an object"));
    }
    serde_path_to_error::deserialize(params).map_err(|e| {
        let path = e.path().to_string();
        let at = match path.as_str() {
            "." => "params".to_owned(),
            _ => format!("params.{path}"),
        };
        RpcError::invalid_params(format!("{at}: {}", e.inner()))
    })
}

/// RFC 3339 UTC (`2026-11-29T12:44:12Z`) from Unix seconds, without a date crate.
fn rfc3339(seconds: i64) -> String {
    let days = seconds.div_euclid(86_400);
    let rest = seconds.rem_euclid(86_400);
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_795_955_052), "2026-11-29T12:24:12Z");
    }
}
