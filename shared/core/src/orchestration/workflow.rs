//! A split question's run, checkpointed after every phase so a failed workflow resumes
//! where it stopped: completed tasks are never run again. DynamoDB on AWS
//! (`switchyard-aws`), memory locally.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::plan::Task;
use switchyard_catalog::bounded::{cut, json_len};
use switchyard_catalog::BoxFuture;
use switchyard_contract::adapter::{AdapterOutcome, AdapterResponse, AdapterStatus};
use switchyard_contract::error::Result;

/// Longest `workflow_id` accepted.
pub const MAX_WORKFLOW_ID_CHARS: usize = 128;

/// A stored checkpoint (and an A2A task) stays under this many bytes of JSON: the budget of
/// every stored item (DynamoDB items hold 400 KB).
pub const MAX_CHECKPOINT_BYTES: usize = switchyard_catalog::bounded::MAX_ITEM_BYTES;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Not run yet (its phase has not started, or an earlier phase failed).
    Pending,
    Ok,
    /// The adapter asked for a missing parameter.
    NeedsClarification,
    /// The adapter refused, failed or timed out; `error` says how.
    Failed,
}

impl TaskStatus {
    pub fn of(response: &AdapterResponse) -> TaskStatus {
        match response.status() {
            AdapterStatus::Ok => TaskStatus::Ok,
            AdapterStatus::NeedsClarification => TaskStatus::NeedsClarification,
            AdapterStatus::Error => TaskStatus::Failed,
        }
    }

    /// Done for good: a resumed workflow does not run it again.
    pub fn is_done(self) -> bool {
        matches!(self, TaskStatus::Ok | TaskStatus::NeedsClarification)
    }
}

/// A task and what running it gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskState {
    pub task: Task,
    pub status: TaskStatus,
    #[serde(default)]
    pub response: Option<AdapterResponse>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub adapter_ms: f64,
    /// How many times it was run (a resumed workflow shows what it re-ran).
    #[serde(default)]
    pub attempts: u32,
}

/// A workflow after its last completed phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub workflow_id: String,
    pub question: String,
    /// Whose workflow it is (`Question::owner`): another caller cannot resume it.
    #[serde(default)]
    pub owner: String,
    /// Whether question texts are stored (`sessions.store_text`). Without, the stored
    /// checkpoint holds the question's digest and where each task's text sits in it; the
    /// resuming request, which must ask the same question, gives the texts back.
    #[serde(default = "text_kept_by_default")]
    pub text_kept: bool,
    /// Byte range of each task's text in the question, in a checkpoint stored without
    /// texts (`None` for a text the question does not contain, such as a chat model's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub task_spans: Vec<Option<(usize, usize)>>,
    pub tasks: Vec<TaskState>,
    /// Positions in `tasks`, phase by phase.
    pub phases: Vec<Vec<usize>>,
    /// Phases whose tasks are all done.
    pub completed_phases: usize,
    /// Unix seconds.
    pub updated_at: i64,
    pub expires_at: i64,
}

impl Checkpoint {
    /// A workflow before its first phase: every task pending.
    pub fn new(
        workflow_id: String,
        question: String,
        tasks: Vec<Task>,
        phases: Vec<Vec<usize>>,
        now: i64,
        expires_at: i64,
    ) -> Checkpoint {
        let pending = |task| TaskState {
            task,
            status: TaskStatus::Pending,
            response: None,
            error: None,
            adapter_ms: 0.0,
            attempts: 0,
        };
        Checkpoint {
            workflow_id,
            question,
            owner: String::new(),
            text_kept: true,
            task_spans: Vec::new(),
            tasks: tasks.into_iter().map(pending).collect(),
            phases,
            completed_phases: 0,
            updated_at: now,
            expires_at,
        }
    }

    /// Where it is stored: its id scoped by its owner (`auth::scoped`), so two callers'
    /// workflows of one id never meet.
    pub fn key(&self) -> String {
        switchyard_catalog::auth::scoped(&self.owner, &self.workflow_id)
    }

    /// The checkpoint as stored: without question texts unless `text_kept`; whole while
    /// its JSON is under [`MAX_CHECKPOINT_BYTES`]; beyond, answers keep their text and
    /// parameters (what resuming and fusing need) but drop their `data`, largest first,
    /// until it fits; then, still over (an answer's text may be a whole 1 MiB response
    /// body), answers' texts and errors are cut (to 16 KiB, then 1 KiB, then 128 bytes,
    /// with `bounded::CUT_MARKER`): a resumed workflow answers with the cut text of a task
    /// it does not run again.
    pub fn for_storage(&self) -> Checkpoint {
        let size = |c: &Checkpoint| json_len(c);
        let mut stored = self.clone();
        if !stored.text_kept && stored.task_spans.is_empty() {
            stored.task_spans = stored
                .tasks
                .iter_mut()
                .map(|t| {
                    let text = std::mem::take(&mut t.task.question);
                    self.question
                        .find(&text)
                        .map(|start| (start, start + text.len()))
                })
                .collect();
            stored.question = question_digest(&self.question);
        }
        let mut by_size: Vec<(usize, usize)> = stored
            .tasks
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.response.as_ref().map(|r| (json_len(&r.data), i)))
            .collect();
        by_size.sort_unstable_by(|a, b| b.cmp(a));
        for (_, i) in by_size {
            if size(&stored) <= MAX_CHECKPOINT_BYTES {
                break;
            }
            if let Some(response) = stored.tasks[i].response.as_mut() {
                response.data = serde_json::Value::Null;
            }
        }
        for keep in [16_384, 1_024, 128] {
            if size(&stored) <= MAX_CHECKPOINT_BYTES {
                break;
            }
            for state in &mut stored.tasks {
                if let Some(error) = state.error.as_mut() {
                    cut(error, keep);
                }
                if let Some(response) = state.response.as_mut() {
                    cut(&mut response.content, keep);
                    if let AdapterOutcome::Error(Some(message)) = &mut response.outcome {
                        cut(message, keep);
                    }
                }
            }
        }
        stored
    }

    /// Whether this is the workflow of `question` (its text, or its digest when the text
    /// was not kept).
    pub fn asks(&self, question: &str) -> bool {
        self.question == question || self.question == question_digest(question)
    }

    /// A stored checkpoint with the texts [`Checkpoint::for_storage`] left out put back
    /// from `question` (which it [`Checkpoint::asks`]). `None` when a task still to run
    /// has lost its text: the workflow cannot be resumed, only asked anew.
    pub fn with_texts(mut self, question: &str) -> Option<Checkpoint> {
        if self.task_spans.is_empty() {
            return Some(self);
        }
        let spans = std::mem::take(&mut self.task_spans);
        for (state, span) in self.tasks.iter_mut().zip(spans) {
            match span.and_then(|(start, end)| question.get(start..end)) {
                Some(text) => state.task.question = text.to_owned(),
                None if state.status.is_done() => {}
                None => return None,
            }
        }
        self.question = question.to_owned();
        Some(self)
    }

    pub fn is_complete(&self) -> bool {
        self.completed_phases >= self.phases.len()
    }
}

fn text_kept_by_default() -> bool {
    true
}

/// How a checkpoint stored without texts names its question.
fn question_digest(question: &str) -> String {
    use sha2::{Digest, Sha256};
    format!(
        "sha256:{}",
        hex::encode(Sha256::digest(question.as_bytes()))
    )
}

pub trait WorkflowStore: Send + Sync {
    /// Keep `checkpoint` under its [`Checkpoint::key`].
    fn save<'a>(&'a self, checkpoint: &'a Checkpoint) -> BoxFuture<'a, Result<()>>;

    /// Hold `lease` (a caller-scoped workflow key) for one run, with `token`, until
    /// `until` (Unix seconds): `Ok(false)` while another run holds it. Two retries of one
    /// workflow at once would both run its next phase, and the slower one's checkpoint
    /// would overwrite the faster one's.
    fn claim<'a>(
        &'a self,
        lease: &'a str,
        token: &'a str,
        now: i64,
        until: i64,
    ) -> BoxFuture<'a, Result<bool>>;

    /// Give back a lease held with `token` (one held by another token is left alone).
    fn release<'a>(&'a self, lease: &'a str, token: &'a str) -> BoxFuture<'a, Result<()>>;

    /// The checkpoint stored under `key` ([`Checkpoint::key`]), unless unknown or expired
    /// at `now`.
    fn load<'a>(&'a self, key: &'a str, now: i64) -> BoxFuture<'a, Result<Option<Checkpoint>>>;

    /// Keep an A2A task (its JSON) under `key` (a caller-scoped task key, [`task_key`])
    /// until `expires_at`, as one of `context`'s (a caller-scoped context key,
    /// [`context_key`]): a task is the protocol's name for a workflow, and any instance
    /// must find it for the caller's next message; forgetting the context finds it too.
    fn save_task<'a>(
        &'a self,
        key: &'a str,
        context: &'a str,
        task: &'a str,
        expires_at: i64,
    ) -> BoxFuture<'a, Result<()>>;

    /// The A2A task stored under `key`, unless unknown or expired at `now`.
    fn load_task<'a>(&'a self, key: &'a str, now: i64) -> BoxFuture<'a, Result<Option<String>>>;

    /// Delete every A2A task saved as one of `context`'s ([`context_key`]), with the
    /// checkpoint of each one's workflow ([`task_checkpoint_key`]): how many tasks there
    /// were. A task saved while this runs may stay.
    fn forget_context<'a>(&'a self, context: &'a str) -> BoxFuture<'a, Result<usize>>;
}

/// An A2A task's key in the workflow store: caller-scoped like a workflow's, with a suffix
/// no workflow id or lease key can have (ids have no `#`).
pub fn task_key(owner: &str, task_id: &str) -> String {
    format!("{}#task", switchyard_catalog::auth::scoped(owner, task_id))
}

/// An A2A context's key in the workflow store (its `contextId` is a session id): what
/// lists the context's tasks, so forgetting the session forgets them. Caller-scoped, with
/// a suffix no other key has (task keys end in `#task`, leases in `#lease`, workflow ids
/// have no `#`).
pub fn context_key(owner: &str, context_id: &str) -> String {
    format!(
        "{}#context",
        switchyard_catalog::auth::scoped(owner, context_id)
    )
}

/// The key of the checkpoint of a task's workflow (a split question's workflow id is its
/// task's id), from the task's [`task_key`]; `None` for another key.
pub fn task_checkpoint_key(task_key: &str) -> Option<&str> {
    task_key.strip_suffix("#task")
}

/// Most tasks a context lists (the newest ones): past it, or past
/// [`MAX_CONTEXT_LIST_BYTES`] of keys, the oldest of its tasks are deleted, with their
/// workflows' checkpoints, as forgetting the context would (their ids then name no task),
/// so the list stays one bounded item and forgetting the context still forgets them all.
pub const MAX_CONTEXT_TASKS: usize = 500;

/// Most bytes of task keys a context lists: half the item budget, so the next key (its
/// message id may be long) still fits.
pub const MAX_CONTEXT_LIST_BYTES: usize = switchyard_catalog::bounded::MAX_ITEM_BYTES / 2;

/// Of a context's task keys, newest first, how many it keeps: at most
/// [`MAX_CONTEXT_TASKS`] and [`MAX_CONTEXT_LIST_BYTES`] (counting 24 bytes beside each
/// key for its time and the set's overhead), always the newest.
pub fn context_tasks_kept(newest_first: &[&str]) -> usize {
    let mut bytes = 0;
    let within = newest_first
        .iter()
        .take(MAX_CONTEXT_TASKS)
        .take_while(|key| {
            bytes += key.len() + 24;
            bytes <= MAX_CONTEXT_LIST_BYTES
        });
    within.count().max(1).min(newest_first.len())
}

/// An A2A task as kept in memory: its JSON, when it expires, and its context's key.
type StoredTask = (String, i64, String);

/// Checkpoints in this process (local `serve`, tests): the newest `capacity`.
pub struct MemoryWorkflowStore {
    capacity: usize,
    checkpoints: Mutex<(HashMap<String, Checkpoint>, VecDeque<String>)>,
    /// A2A tasks, the newest `capacity`.
    tasks: Mutex<(HashMap<String, StoredTask>, VecDeque<String>)>,
    /// Lease → (token, held until).
    leases: Mutex<HashMap<String, (String, i64)>>,
}

impl MemoryWorkflowStore {
    pub fn new(capacity: usize) -> Self {
        MemoryWorkflowStore {
            capacity: capacity.max(1),
            checkpoints: Mutex::new((HashMap::new(), VecDeque::new())),
            tasks: Mutex::new((HashMap::new(), VecDeque::new())),
            leases: Mutex::new(HashMap::new()),
        }
    }
}

impl Default for MemoryWorkflowStore {
    fn default() -> Self {
        MemoryWorkflowStore::new(10_000)
    }
}

impl WorkflowStore for MemoryWorkflowStore {
    fn save<'a>(&'a self, checkpoint: &'a Checkpoint) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let mut guard = self.checkpoints.lock().unwrap_or_else(|e| e.into_inner());
            let (checkpoints, order) = &mut *guard;
            let key = checkpoint.key();
            if checkpoints
                .insert(key.clone(), checkpoint.clone())
                .is_none()
            {
                order.push_back(key);
            }
            while order.len() > self.capacity {
                if let Some(oldest) = order.pop_front() {
                    checkpoints.remove(&oldest);
                }
            }
            Ok(())
        })
    }

    fn load<'a>(&'a self, key: &'a str, now: i64) -> BoxFuture<'a, Result<Option<Checkpoint>>> {
        Box::pin(async move {
            let guard = self.checkpoints.lock().unwrap_or_else(|e| e.into_inner());
            Ok(guard.0.get(key).filter(|c| c.expires_at > now).cloned())
        })
    }

    fn save_task<'a>(
        &'a self,
        key: &'a str,
        context: &'a str,
        task: &'a str,
        expires_at: i64,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let mut guard = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
            let (tasks, order) = &mut *guard;
            let stored = (task.to_owned(), expires_at, context.to_owned());
            // Newest saved last: a task saved again moves to the back.
            if tasks.insert(key.to_owned(), stored).is_some() {
                order.retain(|k| k != key);
            }
            order.push_back(key.to_owned());
            while order.len() > self.capacity {
                if let Some(oldest) = order.pop_front() {
                    tasks.remove(&oldest);
                }
            }
            // The context keeps its newest tasks; older ones go with their checkpoints.
            let newest_first: Vec<&str> = order
                .iter()
                .rev()
                .filter(|k| tasks.get(*k).is_some_and(|(_, _, of)| of == context))
                .map(String::as_str)
                .collect();
            let dropped: Vec<String> = newest_first[context_tasks_kept(&newest_first)..]
                .iter()
                .map(|k| (*k).to_owned())
                .collect();
            if dropped.is_empty() {
                return Ok(());
            }
            for key in &dropped {
                tasks.remove(key);
            }
            order.retain(|key| tasks.contains_key(key));
            drop(guard);
            let mut guard = self.checkpoints.lock().unwrap_or_else(|e| e.into_inner());
            let (checkpoints, order) = &mut *guard;
            for key in dropped.iter().filter_map(|k| task_checkpoint_key(k)) {
                checkpoints.remove(key);
            }
            order.retain(|key| checkpoints.contains_key(key));
            Ok(())
        })
    }

    fn load_task<'a>(&'a self, key: &'a str, now: i64) -> BoxFuture<'a, Result<Option<String>>> {
        Box::pin(async move {
            let guard = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
            Ok(guard
                .0
                .get(key)
                .filter(|(_, expires_at, _)| *expires_at > now)
                .map(|(task, _, _)| task.clone()))
        })
    }

    fn forget_context<'a>(&'a self, context: &'a str) -> BoxFuture<'a, Result<usize>> {
        Box::pin(async move {
            let forgotten: Vec<String> = {
                let mut guard = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
                let (tasks, order) = &mut *guard;
                let keys: Vec<String> = tasks
                    .iter()
                    .filter(|(_, (_, _, of))| of == context)
                    .map(|(key, _)| key.clone())
                    .collect();
                for key in &keys {
                    tasks.remove(key);
                }
                order.retain(|key| tasks.contains_key(key));
                keys
            };
            let mut guard = self.checkpoints.lock().unwrap_or_else(|e| e.into_inner());
            let (checkpoints, order) = &mut *guard;
            for key in forgotten.iter().filter_map(|k| task_checkpoint_key(k)) {
                checkpoints.remove(key);
            }
            order.retain(|key| checkpoints.contains_key(key));
            Ok(forgotten.len())
        })
    }

    fn claim<'a>(
        &'a self,
        lease: &'a str,
        token: &'a str,
        now: i64,
        until: i64,
    ) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            let mut leases = self.leases.lock().unwrap_or_else(|e| e.into_inner());
            // Lapsed leases go, so the map holds only runs in progress.
            leases.retain(|_, (_, held_until)| *held_until >= now);
            match leases.get(lease) {
                Some((holder, _)) if holder != token => Ok(false),
                _ => {
                    leases.insert(lease.to_owned(), (token.to_owned(), until));
                    Ok(true)
                }
            }
        })
    }

    fn release<'a>(&'a self, lease: &'a str, token: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let mut leases = self.leases.lock().unwrap_or_else(|e| e.into_inner());
            if leases.get(lease).is_some_and(|(holder, _)| holder == token) {
                leases.remove(lease);
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn forgetting_a_context_deletes_its_tasks_and_their_workflows_only() {
        let store = MemoryWorkflowStore::default();
        let (mine, other) = (context_key("sub:ann", "c1"), context_key("sub:bob", "c1"));
        let task = task_key("sub:ann", "t1");
        store.save_task(&task, &mine, "{}", 100).await.unwrap();
        let message = task_key("sub:ann", "message:m1");
        store.save_task(&message, &mine, "{}", 100).await.unwrap();
        let kept = task_key("sub:bob", "t1");
        store.save_task(&kept, &other, "{}", 100).await.unwrap();
        let mut checkpoint = Checkpoint::new("t1".into(), "q".into(), vec![], vec![], 0, 100);
        checkpoint.owner = "sub:ann".into();
        store.save(&checkpoint).await.unwrap();
        assert_eq!(task_checkpoint_key(&task), Some(checkpoint.key().as_str()));

        assert_eq!(store.forget_context(&mine).await.unwrap(), 2);
        assert!(store.load_task(&task, 0).await.unwrap().is_none());
        assert!(store.load_task(&message, 0).await.unwrap().is_none());
        assert!(store.load(&checkpoint.key(), 0).await.unwrap().is_none());
        assert!(store.load_task(&kept, 0).await.unwrap().is_some(), "bob's");
        assert_eq!(store.forget_context(&mine).await.unwrap(), 0);
    }

    /// A context past [`MAX_CONTEXT_TASKS`] (in long multibyte ids, past the bytes too)
    /// keeps its newest tasks; the oldest are deleted with their checkpoints, and another
    /// context's are left alone.
    #[tokio::test]
    async fn a_context_keeps_its_newest_tasks_and_deletes_the_oldest() {
        let store = MemoryWorkflowStore::default();
        let context = context_key("sub:ann", "c1");
        let other = context_key("sub:bob", "c1");
        let bobs = task_key("sub:bob", "t0");
        store.save_task(&bobs, &other, "{}", 100).await.unwrap();
        let mut checkpoint = Checkpoint::new("t1".into(), "q".into(), vec![], vec![], 0, 100);
        checkpoint.owner = "sub:ann".into();
        store.save(&checkpoint).await.unwrap();
        let key = |n: usize| task_key("sub:ann", &format!("t{n}"));
        for n in 0..2 * MAX_CONTEXT_TASKS {
            store.save_task(&key(n), &context, "{}", 100).await.unwrap();
        }
        // The first task saved again is the newest.
        store.save_task(&key(0), &context, "{}", 100).await.unwrap();
        assert!(store.load_task(&key(0), 0).await.unwrap().is_some());
        assert!(store.load_task(&key(1), 0).await.unwrap().is_none());
        assert!(
            store.load(&checkpoint.key(), 0).await.unwrap().is_none(),
            "t1's"
        );
        let newest = 2 * MAX_CONTEXT_TASKS - 1;
        assert!(store.load_task(&key(newest), 0).await.unwrap().is_some());
        assert!(store.load_task(&bobs, 0).await.unwrap().is_some(), "bob's");
        assert_eq!(
            store.forget_context(&context).await.unwrap(),
            MAX_CONTEXT_TASKS
        );
        // Long ids in multibyte text: bounded by bytes.
        let long = |n: usize| task_key("sub:ann", &format!("{n}-{}", "é漢🚀".repeat(300)));
        for n in 0..2 * MAX_CONTEXT_TASKS {
            store
                .save_task(&long(n), &context, "{}", 100)
                .await
                .unwrap();
        }
        let kept = store.forget_context(&context).await.unwrap();
        assert!(
            kept * (long(0).len() + 24) <= MAX_CONTEXT_LIST_BYTES,
            "{kept}"
        );
        assert!(kept > 10, "{kept}");
    }

    #[tokio::test]
    async fn a_lease_is_held_by_one_run_until_released_or_lapsed() {
        let store = MemoryWorkflowStore::default();
        assert!(store.claim("wf#lease", "a", 100, 130).await.unwrap());
        assert!(!store.claim("wf#lease", "b", 110, 140).await.unwrap());
        // The holder may renew; another workflow is free.
        assert!(store.claim("wf#lease", "a", 120, 150).await.unwrap());
        assert!(store.claim("other#lease", "b", 120, 150).await.unwrap());
        // Only the holder's token releases it.
        store.release("wf#lease", "b").await.unwrap();
        assert!(!store.claim("wf#lease", "b", 121, 151).await.unwrap());
        store.release("wf#lease", "a").await.unwrap();
        assert!(store.claim("wf#lease", "b", 122, 152).await.unwrap());
        // A lease whose holder never released it lapses.
        assert!(!store.claim("wf#lease", "c", 152, 182).await.unwrap());
        assert!(store.claim("wf#lease", "c", 153, 183).await.unwrap());
    }
}
