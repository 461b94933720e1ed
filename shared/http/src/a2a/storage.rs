//! What of an A2A task is kept in the workflow store: with `sessions.store_text` off, no
//! question or answer text (nor the answer's data); always, at most
//! [`MAX_CHECKPOINT_BYTES`] of it.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use switchyard_catalog::bounded::cut;
use switchyard_core::orchestration::MAX_CHECKPOINT_BYTES;

use super::wire::{Message, Role, Task};
use super::RpcError;

/// The task with no question or answer in it (`sessions.store_text` off): every part of
/// its history, its status message and its artifacts goes, so their ids, roles and the
/// task's state stay, each question as its SHA-256 in its message's `metadata.textDigest`
/// (what a retry of the message is checked against, as a workflow's checkpoint names its
/// question), and `metadata.textsNotKept` says so.
pub(super) fn without_texts(task: &Task) -> Task {
    let mut stored = task.clone();
    let messages = stored
        .history
        .iter_mut()
        .chain(stored.status.message.as_mut());
    // A message kept so before (of an earlier request) has no parts left, and its digest.
    for message in messages.filter(|m| !m.parts.is_empty()) {
        message.metadata = (message.role == Role::User)
            .then(|| json!({ "textDigest": text_digest(&text_of(message)) }));
        message.parts.clear();
    }
    for artifact in &mut stored.artifacts {
        artifact.parts.clear();
    }
    stored.metadata.get_or_insert_with(|| json!({}))["textsNotKept"] = json!(
        "sessions.store_text is off: the questions and answers of this task are not kept (each answer was given in its SendMessage result)"
    );
    stored
}

/// A message's text: its text parts, one per line.
pub(super) fn text_of(message: &Message) -> String {
    let texts: Vec<&str> = message
        .parts
        .iter()
        .filter_map(|p| p.text.as_deref())
        .collect();
    texts.join("\n")
}

/// Whether a kept message said `text`: its text, or (kept without it) its digest.
pub(super) fn says(message: &Message, text: &str) -> bool {
    let digest = message
        .metadata
        .as_ref()
        .and_then(|m| m.get("textDigest"))
        .and_then(Value::as_str);
    match digest {
        Some(digest) if message.parts.is_empty() => digest == text_digest(text),
        _ => text_of(message) == text,
    }
}

fn text_digest(text: &str) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(text.as_bytes())))
}

/// The task as stored. Without `texts_kept` (`sessions.store_text` off), first
/// [`without_texts`]. Then whole while its JSON is under [`MAX_CHECKPOINT_BYTES`] (a
/// DynamoDB item holds 400 KB). Beyond, in order until it fits: its artifacts and messages
/// drop their data (the caller had it in the answer); its history drops its oldest messages
/// but the first (the question a workflow resumes with); every text is cut, with a marker.
/// What was given up is said in the task's metadata (`dataDropped`, `historyDropped`,
/// `textCut`).
pub(super) fn for_storage(task: &Task, texts_kept: bool) -> Result<String, RpcError> {
    let json = |t: &Task| serde_json::to_string(t).map_err(|e| RpcError::internal(e.to_string()));
    let without;
    let task = if texts_kept {
        task
    } else {
        without = without_texts(task);
        &without
    };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::wire::{Artifact, Part, TaskState, TaskStatus};

    const EPOCH: &str = "1970-01-01T00:00:00Z";

    #[test]
    fn without_texts_a_task_keeps_its_state_and_ids_and_no_question_or_answer() {
        let message = |id: &str, role: Role, text: &str| Message {
            message_id: id.into(),
            context_id: Some("c".into()),
            task_id: Some("t".into()),
            role,
            parts: vec![Part::text(text), Part::data(json!({"rows": [text]}))],
            metadata: None,
        };
        let task = Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::InputRequired,
                message: Some(message("a1", Role::Agent, "Which department?")),
                timestamp: EPOCH.into(),
            },
            artifacts: vec![Artifact {
                artifact_id: "t-answer".into(),
                name: Some("answer".into()),
                parts: vec![Part::text("42 people")],
            }],
            history: vec![
                message("m1", Role::User, "How many people work here?"),
                message("a1", Role::Agent, "Which department?"),
            ],
            metadata: Some(json!({"waitingFor": "input"})),
        };
        let stored: Task = serde_json::from_str(&for_storage(&task, false).unwrap()).unwrap();
        let json = serde_json::to_string(&stored).unwrap();
        for text in ["How many people", "Which department", "42 people"] {
            assert!(!json.contains(text), "`{text}` is kept: {json}");
        }
        assert_eq!(stored.status.state, TaskState::InputRequired);
        let ids: Vec<&str> = stored
            .history
            .iter()
            .map(|m| m.message_id.as_str())
            .collect();
        assert_eq!(ids, ["m1", "a1"]);
        assert_eq!(stored.artifacts[0].artifact_id, "t-answer");
        let metadata = stored.metadata.clone().unwrap();
        assert_eq!(metadata["waitingFor"], "input", "{metadata}");
        assert!(metadata["textsNotKept"].is_string(), "{metadata}");
        // A retry of the question is still recognised, another text is not; kept again
        // (the next request's save), the digest stays.
        assert!(says(&stored.history[0], "How many people work here?"));
        assert!(!says(&stored.history[0], "How many people work there?"));
        let again = without_texts(&stored);
        assert!(says(&again.history[0], "How many people work here?"));
        // Kept with texts, the task is as it was.
        let whole: Task = serde_json::from_str(&for_storage(&task, true).unwrap()).unwrap();
        assert_eq!(text_of(&whole.history[0]), "How many people work here?");
        assert!(says(&whole.history[0], "How many people work here?"));
    }

    #[test]
    fn a_task_too_big_to_keep_keeps_its_text_and_drops_its_data() {
        let task = |rows: usize| Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::Completed,
                message: None,
                timestamp: EPOCH.into(),
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
        let small: Task = serde_json::from_str(&for_storage(&task(10), true).unwrap()).unwrap();
        assert_eq!(small.artifacts[0].parts.len(), 2, "kept whole");
        assert!(small.metadata.is_none());
        let stored = for_storage(&task(40_000), true).unwrap();
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
            metadata: None,
        };
        let task = Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::InputRequired,
                message: Some(message(99, &long)),
                timestamp: EPOCH.into(),
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
        let stored = for_storage(&task, true).unwrap();
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
}
