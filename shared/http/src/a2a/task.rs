//! `SendMessage`, `GetTask` and `CancelTask`: a question in, the answer as a task, kept in
//! the workflow store under the caller's scoped id so the next message (on any instance)
//! can continue it.

use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use switchyard_catalog::clock::unix_now;
use switchyard_core::orchestration::MAX_CHECKPOINT_BYTES;
use switchyard_core::service::{new_request_id, Question};
use switchyard_core::ServiceError;

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
    if message.role != Role::User {
        return Err(RpcError::invalid_params(
            "message.role: must be ROLE_USER (a question to this agent)",
        ));
    }
    let text = message
        .parts
        .iter()
        .filter_map(|p| p.text.as_deref())
        .collect::<Vec<_>>()
        .join("\n");
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
    let task = task_of(id, context_id, history, &answer, now);
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
    now: i64,
) -> Task {
    let data = serde_json::to_value(answer).unwrap_or(Value::Null);
    let status = data.get("status").and_then(Value::as_str).unwrap_or("");
    let (state, waiting) = match (answer, status) {
        (QueryAnswer::Answered(_), "ok") | (QueryAnswer::Orchestrated(_), "ok") => {
            (TaskState::Completed, None)
        }
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
    if waiting == Some(WAITING_TO_RESUME) {
        text.push_str("\n\nSome parts failed: send any message in this task to retry them.");
    }
    let parts = vec![Part::text(text), Part::data(data)];
    let agent_message = Message {
        message_id: new_request_id(),
        context_id: Some(context_id.clone()),
        task_id: Some(id.clone()),
        role: Role::Agent,
        parts: parts.clone(),
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

/// The question that started the task (a split question's workflow resumes with it).
fn first_question(task: &Task) -> Option<String> {
    let first = task.history.iter().find(|m| m.role == Role::User)?;
    let texts: Vec<&str> = first
        .parts
        .iter()
        .filter_map(|p| p.text.as_deref())
        .collect();
    Some(texts.join("\n"))
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
    let same = before.is_some_and(|m| {
        let texts: Vec<&str> = m.parts.iter().filter_map(|p| p.text.as_deref()).collect();
        texts.join("\n") == text
    });
    if !same {
        return Err(RpcError::invalid_params(format!(
            "message.messageId: `{message_id}` was already sent with another text (a message id names one message)"
        )));
    }
    Ok(Some(task))
}

/// The task as stored: whole while its JSON is under [`MAX_CHECKPOINT_BYTES`] (a DynamoDB
/// item holds 400 KB). Beyond, in order until it fits: its artifacts and messages drop their
/// data (the caller had it in the answer); its history drops its oldest messages but
/// the first (the question a workflow resumes with); every text is cut, with a marker. What
/// was given up is said in the task's metadata (`dataDropped`, `historyDropped`, `textCut`).
fn for_storage(task: &Task) -> Result<String, RpcError> {
    let json = |t: &Task| serde_json::to_string(t).map_err(|e| RpcError::internal(e.to_string()));
    let whole = json(task)?;
    if whole.len() <= MAX_CHECKPOINT_BYTES {
        return Ok(whole);
    }
    let mut stored = task.clone();
    let mut metadata = stored.metadata.take().unwrap_or_else(|| json!({}));
    for artifact in &mut stored.artifacts {
        artifact.parts.retain(|p| p.data.is_none());
    }
    for message in stored
        .history
        .iter_mut()
        .chain(stored.status.message.as_mut())
    {
        message.parts.retain(|p| p.data.is_none());
    }
    metadata["dataDropped"] = json!(format!(
        "the answer's data made the task {} bytes, over the {MAX_CHECKPOINT_BYTES} kept",
        whole.len()
    ));
    stored.metadata = Some(metadata);
    // Long texts are cut first (an answer kept whole to 16 KiB); then the oldest history
    // goes; then what is left is cut shorter.
    let over = |t: &Task| json(t).map(|j| j.len() > MAX_CHECKPOINT_BYTES);
    let cut_all = |stored: &mut Task, keep: usize| {
        stored.metadata.get_or_insert_with(|| json!({}))["textCut"] = json!(keep);
        let messages = stored
            .history
            .iter_mut()
            .chain(stored.status.message.as_mut());
        let parts = messages
            .flat_map(|m| m.parts.iter_mut())
            .chain(stored.artifacts.iter_mut().flat_map(|a| a.parts.iter_mut()));
        for text in parts.filter_map(|p| p.text.as_mut()) {
            cut(text, keep);
        }
    };
    if over(&stored)? {
        cut_all(&mut stored, 16_384);
    }
    let mut dropped = 0;
    while over(&stored)? && stored.history.len() > 2 {
        stored.history.remove(1);
        dropped += 1;
    }
    if dropped > 0 {
        stored.metadata.get_or_insert_with(|| json!({}))["historyDropped"] = json!(dropped);
    }
    for keep in [1_024, 128] {
        if over(&stored)? {
            cut_all(&mut stored, keep);
        }
    }
    let kept = json(&stored)?;
    if kept.len() > MAX_CHECKPOINT_BYTES {
        return Err(RpcError::internal(format!(
            "the task is {} bytes even cut down, over the {MAX_CHECKPOINT_BYTES} a task may keep",
            kept.len()
        )));
    }
    Ok(kept)
}

/// `text` cut to at most `bytes` (on a character's boundary) and a marker, when longer.
fn cut(text: &mut String, bytes: usize) {
    if text.len() <= bytes {
        return;
    }
    let mut end = bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(" [cut]");
}

async fn save(
    service: &Shared,
    authorized: &Authorized,
    key: &str,
    task: &Task,
    now: i64,
) -> Result<(), RpcError> {
    let json = for_storage(task)?;
    service
        .save_task(&authorized.owner, key, &json, now)
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
    fn a_task_too_big_to_keep_keeps_its_text_and_drops_its_data() {
        let task = |rows: usize| Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::Completed,
                message: None,
                timestamp: rfc3339(0),
            },
            artifacts: vec![Artifact {
                artifact_id: "a".into(),
                name: None,
                parts: vec![
                    Part::text("the answer"),
                    Part::data(json!({"rows": vec!["0123456789"; rows]})),
                ],
            }],
            history: Vec::new(),
            metadata: None,
        };
        let small: Task = serde_json::from_str(&for_storage(&task(10)).unwrap()).unwrap();
        assert_eq!(small.artifacts[0].parts.len(), 2, "kept whole");
        assert!(small.metadata.is_none());
        let stored = for_storage(&task(40_000)).unwrap();
        assert!(
            stored.len() <= MAX_CHECKPOINT_BYTES,
            "{} bytes",
            stored.len()
        );
        let big: Task = serde_json::from_str(&stored).unwrap();
        assert_eq!(big.artifacts[0].parts.len(), 1);
        assert_eq!(
            big.artifacts[0].parts[0].text.as_deref(),
            Some("the answer")
        );
        assert!(big.metadata.unwrap()["dataDropped"]
            .as_str()
            .unwrap()
            .contains("bytes"));
    }

    /// A task past twice the limit in every part that grows (the answer's text and data,
    /// the waiting message, a long history), in multibyte text: kept under the limit, its
    /// first question and its latest message kept, and what was given up said.
    #[test]
    fn every_growing_part_of_a_task_is_bounded() {
        let long = "ß→日本語".repeat(MAX_CHECKPOINT_BYTES / 4);
        assert!(long.len() > 2 * MAX_CHECKPOINT_BYTES);
        let message = |n: usize, text: &str| Message {
            message_id: format!("m{n}"),
            context_id: None,
            task_id: None,
            role: if n.is_multiple_of(2) {
                Role::User
            } else {
                Role::Agent
            },
            parts: vec![Part::text(text), Part::data(json!({"rows": [text]}))],
        };
        let task = Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::InputRequired,
                message: Some(message(99, &long)),
                timestamp: rfc3339(0),
            },
            artifacts: vec![Artifact {
                artifact_id: "a".into(),
                name: None,
                parts: vec![Part::text(long.clone())],
            }],
            history: (0..40)
                .map(|n| message(n, &"ß→日本語".repeat(700)))
                .collect(),
            metadata: Some(json!({"waitingFor": "input"})),
        };
        assert!(serde_json::to_string(&task).unwrap().len() > 2 * MAX_CHECKPOINT_BYTES);
        let stored = for_storage(&task).unwrap();
        assert!(
            stored.len() <= MAX_CHECKPOINT_BYTES,
            "{} bytes",
            stored.len()
        );
        let kept: Task = serde_json::from_str(&stored).unwrap();
        assert_eq!(kept.history.first().unwrap().message_id, "m0");
        assert_eq!(kept.history.last().unwrap().message_id, "m39");
        let metadata = kept.metadata.unwrap();
        assert_eq!(
            metadata["waitingFor"], "input",
            "what the task waits for is kept"
        );
        assert!(metadata["textCut"].is_number(), "{metadata}");
        let text = kept.status.message.unwrap().parts[0].text.clone().unwrap();
        assert!(
            text.ends_with(" [cut]") && text.starts_with("ß→日本語"),
            "{text:.40}"
        );
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_795_955_052), "2026-11-29T12:24:12Z");
    }
}
