//! Unit tests of the pure parts: cutting, signals, choosing a split, running phases and
//! fusing. The real model's splits are tested end to end in `tests/e2e/orchestration.rs`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::*;
use crate::config::Config;
use crate::error::Error;
use crate::invoker::{AdapterInvoker, AdapterRequest, AdapterResponse, AdapterStatus};
use crate::session::TemplateRef;

fn config() -> OrchestrationConfig {
    Config::default().orchestration
}

fn cues() -> Cues {
    let c = config();
    Cues::new(&c.parallel_cues, &c.sequential_cues)
}

fn texts<'a>(question: &'a str, segments: &[Segment]) -> Vec<&'a str> {
    segments.iter().map(|s| &question[s.start..s.end]).collect()
}

#[test]
fn questions_are_cut_at_cues_and_adjacent_cues_make_one_cut() {
    let q = "Find the top 5 in Sales, and then count the Teslas in King County.";
    let cut = segments(q, &cues(), 8);
    assert_eq!(
        texts(q, &cut),
        ["Find the top 5 in Sales", "count the Teslas in King County"]
    );
    assert_eq!(cut[1].link, Some(Link::Sequential));
    assert_eq!(cut[1].cut.as_deref(), Some(", and then"));
    // A cue at the start or the end cuts nothing; "also" alone is parallel.
    let q = "And also what is 2 plus";
    assert_eq!(texts(q, &segments(q, &cues(), 8)), [q]);
    let q = "weather in Paris also play jazz";
    assert_eq!(segments(q, &cues(), 8)[1].link, Some(Link::Parallel));
}

#[test]
fn pieces_without_words_stay_with_their_list() {
    let q = "what's the mean of 4, 8, 15 and 16";
    assert_eq!(texts(q, &segments(q, &cues(), 8)), [q]);
    let q = "What is 2 plus 2 and who works in HR?";
    assert_eq!(
        texts(q, &segments(q, &cues(), 8)),
        ["What is 2 plus 2", "who works in HR"]
    );
    let q = "4, 8 and then list the people in HR";
    let cut = segments(q, &cues(), 8);
    assert_eq!(texts(q, &cut), [q]);
    assert_eq!(cut[0].link, None);
}

#[test]
fn the_and_of_between_x_and_y_is_no_cut() {
    let q =
        "how much is a limousine between dallas airport and dallas and then list flights to boston";
    assert_eq!(
        texts(q, &segments(q, &cues(), 8)),
        [
            "how much is a limousine between dallas airport and dallas",
            "list flights to boston"
        ]
    );
    // Past a few words, or in a piece of its own, "between" no longer holds the "and".
    let q = "flights between boston and denver and fares between 2 and 3 pm";
    assert_eq!(texts(q, &segments(q, &cues(), 8)).len(), 2);
    let q = "who sits between the desks of our oldest two engineers and what is 2 plus 2";
    assert_eq!(texts(q, &segments(q, &cues(), 8)).len(), 2);
}

#[test]
fn segments_are_capped() {
    let q = "aa and bb and cc and dd and ee";
    assert_eq!(
        texts(q, &segments(q, &cues(), 3)),
        ["aa", "bb", "cc and dd and ee"]
    );
}

#[test]
fn spans_cover_every_split_into_at_most_max_parts() {
    assert_eq!(spans(2, 3), vec![(0, 1), (1, 2)]);
    assert_eq!(spans(3, 2), vec![(0, 1), (0, 2), (1, 3), (2, 3)]);
    assert_eq!(spans(3, 3).len(), 5);
    assert!(spans(1, 3).is_empty());
}

fn routed(template: &str, confidence: f32) -> SpanRouting {
    SpanRouting {
        template: Some(TemplateRef {
            datasource: "d".into(),
            template_id: template.into(),
        }),
        confidence,
        probability: Some(0.2),
        selected: confidence >= 0.4,
    }
}

#[test]
fn the_finest_valid_split_wins_and_invalid_ones_never_do() {
    let config = config();
    let whole = routed("a", 0.6);
    let mut map: HashMap<Span, SpanRouting> = HashMap::new();
    map.insert((0, 1), routed("a", 0.7));
    map.insert((1, 2), routed("b", 0.6));
    map.insert((1, 3), routed("b", 0.7));
    map.insert((2, 3), routed("c", 0.5));
    map.insert((0, 2), routed("a", 0.55));
    let split = choose(3, &whole, &map, &config).expect("a split");
    assert_eq!(split.parts, vec![(0, 1), (1, 2), (2, 3)]);

    // Neighbours on one template: not two requests.
    map.insert((2, 3), routed("b", 0.7));
    let split = choose(3, &whole, &map, &config).expect("a split");
    assert_eq!(split.parts, vec![(0, 1), (1, 3)]);

    // A part far less sure than the whole is a detail of it.
    let mut map: HashMap<Span, SpanRouting> = HashMap::new();
    map.insert((0, 1), routed("a", 0.7));
    map.insert((1, 2), routed("b", 0.45));
    assert_eq!(choose(2, &routed("a", 0.7), &map, &config), None);
    // ... unless the head is sure it is a request of its own.
    map.get_mut(&(1, 2)).unwrap().probability = Some(0.995);
    assert!(choose(2, &routed("a", 0.7), &map, &config).is_some());
    map.get_mut(&(1, 2)).unwrap().probability = Some(0.97);
    assert_eq!(choose(2, &routed("a", 0.7), &map, &config), None);
    // A part below the threshold, and not sure by the head either, is no request.
    map.insert((1, 2), routed("b", 0.3));
    assert_eq!(choose(2, &routed("a", 0.35), &map, &config), None);
    // ... unless the head is sure of it.
    map.get_mut(&(1, 2)).unwrap().probability = Some(0.97);
    assert!(choose(2, &routed("a", 0.35), &map, &config).is_some());
}

fn catalog() -> crate::template::Catalog {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo");
    crate::template::Catalog::load(&dir).expect("demo catalog")
}

#[test]
fn signals_fire_on_verbs_cues_entities_and_low_confidence() {
    let config = config();
    let vocabulary = Vocabulary::new(&catalog(), &config);
    let q = "First find the five highest paid people in Sales, then count the Teslas registered in King County";
    let signals = detect(q, 0.5, &vocabulary, &cues(), &config);
    assert!(signals.action_verbs.fired, "{signals:?}");
    assert!(signals.action_verbs.found.contains(&"count".to_owned()));
    assert!(signals.sequential.fired);
    assert!(signals.sequential.found.contains(&"first".to_owned()));
    assert!(signals.long_question.fired);
    assert!(signals.low_confidence.fired);
    assert!(
        signals.entities.found.iter().any(|e| e == "sales"),
        "{:?}",
        signals.entities
    );
    // "King" is one of the catalog's county values; "Teslas" a capitalised name.
    assert!(
        signals.entities.found.iter().any(|e| e == "king"),
        "{:?}",
        signals.entities
    );
    assert!(
        signals.entities.found.iter().any(|e| e == "County"),
        "{:?}",
        signals.entities
    );
    assert!(signals.considered);
    assert_eq!(
        signals.fired,
        [
            &signals.action_verbs,
            &signals.conjunctions,
            &signals.long_question,
            &signals.entities,
            &signals.relationships,
            &signals.sequential,
            &signals.low_confidence,
        ]
        .iter()
        .filter(|s| s.fired)
        .count()
    );

    let plain = detect(
        "Who works in Marketing?",
        0.8,
        &vocabulary,
        &cues(),
        &config,
    );
    assert!(!plain.considered, "{plain:?}");
    assert!(plain.fired < config.min_signals && !plain.conjunctions.fired);
}

fn response(content: &str, parameters: Value, data: Value) -> AdapterResponse {
    AdapterResponse {
        status: AdapterStatus::Ok,
        content: content.into(),
        data,
        parameters: parameters.as_object().cloned().unwrap_or_default(),
        missing: Vec::new(),
        error: None,
        execution_time_ms: 1.0,
    }
}

fn task(id: &str, template: &str, confidence: f32, depends_on: &[&str]) -> Task {
    Task {
        id: id.into(),
        question: format!("question {id}"),
        datasource: "d".into(),
        template_id: template.into(),
        confidence,
        depends_on: depends_on.iter().map(|d| d.to_string()).collect(),
    }
}

fn done(task: Task, response: AdapterResponse) -> TaskState {
    TaskState {
        task,
        status: TaskStatus::of(&response),
        response: Some(response),
        error: None,
        adapter_ms: 1.0,
        attempts: 1,
    }
}

#[test]
fn each_fusion_strategy_shapes_the_answer() {
    let tasks = vec![
        done(
            task("t1", "a", 0.6, &[]),
            response(
                "Sales has 12 people.",
                json!({"department": "Sales"}),
                json!({"rows": [{"name": "Ann"}]}),
            ),
        ),
        done(
            task("t2", "b", 0.9, &[]),
            response(
                "Opened on 2024-03-01.",
                json!({"department": "Sales"}),
                json!({"rows": [{"name": "Ann"}, {"name": "Bo"}]}),
            ),
        ),
        TaskState {
            status: TaskStatus::Failed,
            response: None,
            error: Some("adapter timed out".into()),
            adapter_ms: 0.0,
            attempts: 1,
            task: task("t3", "c", 0.7, &[]),
        },
    ];
    let q = "q";
    let simple = fuse(FusionStrategy::Simple, q, &tasks, 0.9);
    assert_eq!(
        simple.content,
        "Sales has 12 people. Opened on 2024-03-01. not answered: adapter timed out"
    );
    assert!((simple.coverage - 2.0 / 3.0).abs() < 1e-6);
    assert_eq!(simple.consistency, 1.0);
    assert!(!simple.automatic);

    let score = fuse(FusionStrategy::Score, q, &tasks, 0.9);
    assert_eq!(
        score
            .sections
            .iter()
            .map(|s| s.task.as_str())
            .collect::<Vec<_>>(),
        ["t2", "t3", "t1"]
    );

    let hierarchical = fuse(FusionStrategy::Hierarchical, q, &tasks, 0.9);
    assert!(
        hierarchical
            .content
            .starts_with("1. question t1: Sales has 12 people.\n2. question t2:"),
        "{}",
        hierarchical.content
    );

    let temporal = fuse(FusionStrategy::Temporal, q, &tasks, 0.9);
    assert_eq!(temporal.sections[0].task, "t2");
    assert_eq!(temporal.sections[0].date.as_deref(), Some("2024-03-01"));
    assert!(temporal.content.starts_with("2024-03-01: Opened"));

    let semantic = fuse(FusionStrategy::Semantic, q, &tasks, 0.9);
    assert_eq!(
        semantic.data["rows"],
        json!([{"name": "Ann"}, {"name": "Bo"}])
    );
    assert_eq!(semantic.merged_duplicates, 1);

    // auto: different templates and no question of time → hierarchical.
    let auto = fuse(
        FusionStrategy::Auto,
        "count them and list them",
        &tasks,
        0.9,
    );
    assert_eq!(
        (auto.strategy, auto.automatic),
        (FusionStrategy::Hierarchical, true)
    );
    // Disagreeing parameters lower consistency.
    let mut disagreeing = tasks.clone();
    disagreeing[1]
        .response
        .as_mut()
        .unwrap()
        .parameters
        .insert("department".into(), json!("HR"));
    assert_eq!(
        fuse(FusionStrategy::Simple, q, &disagreeing, 0.9).consistency,
        0.0
    );
}

#[test]
fn auto_fusion_picks_semantic_for_one_template_and_temporal_for_dated_answers() {
    let same = vec![
        done(
            task("t1", "a", 0.6, &[]),
            response("x", json!({}), Value::Null),
        ),
        done(
            task("t2", "a", 0.6, &[]),
            response("y", json!({}), Value::Null),
        ),
    ];
    assert_eq!(
        fuse(FusionStrategy::Auto, "q", &same, 0.9).strategy,
        FusionStrategy::Semantic
    );
    let dated = vec![
        done(
            task("t1", "a", 0.6, &[]),
            response("on 2024-05-01", json!({}), Value::Null),
        ),
        done(
            task("t2", "b", 0.6, &[]),
            response("on 2023-01-02", json!({}), Value::Null),
        ),
    ];
    let fused = fuse(FusionStrategy::Auto, "when did each happen", &dated, 0.9);
    assert_eq!(fused.strategy, FusionStrategy::Temporal);
    assert_eq!(fused.sections[0].task, "t2");
}

/// Answers after a pause, counting how many calls are in flight at once.
#[derive(Default)]
struct SlowInvoker {
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
    calls: Mutex<Vec<AdapterRequest>>,
    fail: Option<String>,
}

impl AdapterInvoker for SlowInvoker {
    async fn invoke(&self, request: AdapterRequest) -> crate::error::Result<AdapterResponse> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_in_flight.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(40)).await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.calls.lock().unwrap().push(request.clone());
        if self.fail.as_deref() == Some(request.template_id.as_str()) {
            return Err(Error::AdapterTimeout {
                datasource: request.datasource,
                after_ms: 40,
            });
        }
        Ok(response(
            &format!("answer to {}", request.query),
            json!({ "department": format!("dept of {}", request.template_id) }),
            Value::Null,
        ))
    }
}

fn checkpoint(tasks: Vec<Task>) -> Checkpoint {
    let phases = phases(&tasks).unwrap();
    Checkpoint::new("wf-1".into(), "q".into(), tasks, phases, 0, 100)
}

fn requests<'a>(
    parameters: &'a Map<String, Value>,
    deadline: &'a (dyn Fn(&str) -> u64 + Sync),
) -> Requests<'a> {
    Requests {
        request_id: "r1",
        session_parameters: parameters,
        filters: Box::leak(Box::default()),
        deadline_ms: deadline,
    }
}

#[tokio::test]
async fn a_phase_runs_its_tasks_concurrently_up_to_the_limit() {
    let invoker = SlowInvoker::default();
    let store = MemoryWorkflowStore::default();
    let tasks = (1..=4)
        .map(|i| task(&format!("t{i}"), &format!("x{i}"), 0.8, &[]))
        .collect();
    let (parameters, deadline) = (Map::new(), |_: &str| 1000);
    let run = run(
        &invoker,
        &store,
        checkpoint(tasks),
        &requests(&parameters, &deadline),
        3,
        10,
    )
    .await;
    assert_eq!(invoker.calls.lock().unwrap().len(), 4);
    assert_eq!(
        invoker.most_in_flight.load(Ordering::SeqCst),
        3,
        "at most 3 at once, and 3 did overlap"
    );
    assert!(run.checkpoint.is_complete());
    assert_eq!(run.checkpoints, ["wf-1#1"]);
    assert_eq!(
        store
            .load("wf-1", 10)
            .await
            .unwrap()
            .unwrap()
            .completed_phases,
        1
    );
}

#[tokio::test]
async fn a_dependent_task_gets_its_dependencies_results_and_waits_when_they_fail() {
    let invoker = SlowInvoker::default();
    let store = MemoryWorkflowStore::default();
    let tasks = vec![
        task("t1", "first", 0.8, &[]),
        task("t2", "second", 0.8, &["t1"]),
    ];
    let mut session = Map::new();
    session.insert("limit".into(), json!(5));
    let deadline = |_: &str| 1234;
    let run = run(
        &invoker,
        &store,
        checkpoint(tasks.clone()),
        &requests(&session, &deadline),
        3,
        10,
    )
    .await;
    let calls = invoker.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 2);
    let second = &calls[1];
    assert_eq!(
        second.session_parameters["department"],
        json!("dept of first")
    );
    assert_eq!(second.session_parameters["limit"], json!(5));
    assert_eq!(
        second.upstream["t1"]["content"],
        json!("answer to question t1")
    );
    assert_eq!(
        (second.deadline_ms, second.request_id.as_str()),
        (1234, "r1-t2")
    );
    assert_eq!(run.checkpoints, ["wf-1#1", "wf-1#2"]);

    // The first fails: the second is never run, and says what it waits on.
    let failing = SlowInvoker {
        fail: Some("first".into()),
        ..SlowInvoker::default()
    };
    let run = run_again(&failing, &store, checkpoint(tasks), &session, &deadline).await;
    assert_eq!(failing.calls.lock().unwrap().len(), 1);
    let states = &run.checkpoint.tasks;
    assert_eq!(
        (states[0].status, states[1].status),
        (TaskStatus::Failed, TaskStatus::Pending)
    );
    assert!(states[1]
        .error
        .as_deref()
        .unwrap()
        .contains("waits on `t1`"));
    assert_eq!(run.checkpoint.completed_phases, 0);
}

async fn run_again(
    invoker: &SlowInvoker,
    store: &MemoryWorkflowStore,
    checkpoint: Checkpoint,
    session: &Map<String, Value>,
    deadline: &(dyn Fn(&str) -> u64 + Sync),
) -> Run {
    run(
        invoker,
        store,
        checkpoint,
        &requests(session, deadline),
        3,
        10,
    )
    .await
}

#[tokio::test]
async fn a_resumed_workflow_skips_done_tasks() {
    let store = MemoryWorkflowStore::default();
    let tasks = vec![
        task("t1", "first", 0.8, &[]),
        task("t2", "second", 0.8, &["t1"]),
    ];
    let (session, deadline) = (Map::new(), |_: &str| 1000);
    let failing = SlowInvoker {
        fail: Some("second".into()),
        ..SlowInvoker::default()
    };
    let first = run_again(&failing, &store, checkpoint(tasks), &session, &deadline).await;
    assert_eq!(first.checkpoint.completed_phases, 1);
    let saved = store.load("wf-1", 10).await.unwrap().unwrap();
    let healthy = SlowInvoker::default();
    let resumed = run_again(&healthy, &store, saved, &session, &deadline).await;
    let calls = healthy.calls.lock().unwrap().clone();
    assert_eq!(
        calls
            .iter()
            .map(|c| c.template_id.as_str())
            .collect::<Vec<_>>(),
        ["second"]
    );
    assert_eq!(resumed.started_at_phase, 1);
    assert_eq!(resumed.checkpoint.tasks[0].attempts, 1);
    assert_eq!(resumed.checkpoint.tasks[1].attempts, 2);
    assert!(resumed.checkpoint.is_complete());
    // Expired checkpoints are not loaded.
    assert!(store.load("wf-1", 100).await.unwrap().is_none());
}

#[test]
fn a_checkpoint_too_large_to_store_drops_its_largest_data_first() {
    let big = json!({ "rows": vec!["x".repeat(1000); 400] });
    let small = json!({ "rows": [1, 2] });
    let mut checkpoint = checkpoint(vec![task("t1", "a", 0.8, &[]), task("t2", "b", 0.8, &[])]);
    checkpoint.tasks[0] = done(
        checkpoint.tasks[0].task.clone(),
        response("big", json!({"k": 1}), big),
    );
    checkpoint.tasks[1] = done(
        checkpoint.tasks[1].task.clone(),
        response("small", json!({}), small.clone()),
    );
    let stored = checkpoint.for_storage();
    assert!(serde_json::to_vec(&stored).unwrap().len() <= MAX_CHECKPOINT_BYTES);
    let first = stored.tasks[0].response.as_ref().unwrap();
    assert_eq!(
        (first.data.clone(), first.content.as_str()),
        (Value::Null, "big")
    );
    assert_eq!(first.parameters["k"], json!(1));
    assert_eq!(stored.tasks[1].response.as_ref().unwrap().data, small);
    // A checkpoint that fits is stored whole.
    let fits = checkpoint.for_storage().for_storage();
    assert_eq!(fits, stored);
}

#[test]
fn a_checkpoint_without_texts_holds_none_and_resumes_from_the_question() {
    let question = "How many work in Sales and what is 15% of 200?";
    let mut tasks = vec![task("t1", "a", 0.8, &[]), task("t2", "b", 0.8, &[])];
    tasks[0].question = "How many work in Sales".into();
    tasks[1].question = "what is 15% of 200".into();
    let phases = phases(&tasks).unwrap();
    let mut checkpoint = Checkpoint::new("wf-1".into(), question.into(), tasks, phases, 0, 100);
    checkpoint.text_kept = false;
    checkpoint.tasks[0] = done(
        checkpoint.tasks[0].task.clone(),
        response("12 people", json!({}), json!([])),
    );
    let stored = checkpoint.for_storage();
    let json = serde_json::to_string(&stored).unwrap();
    for text in ["Sales", "15%", "How many"] {
        assert!(!json.contains(text), "`{text}` is stored: {json}");
    }
    assert!(stored.asks(question) && !stored.asks("How many work in Sales?"));
    let back: Checkpoint = serde_json::from_str(&json).unwrap();
    assert_eq!(back.with_texts(question), Some(checkpoint.clone()));

    // A task still to run whose text is not in the question (a chat model's) cannot be
    // resumed; one already done can.
    checkpoint.tasks[1].task.question = "Compute 15 percent of 200".into();
    assert_eq!(checkpoint.for_storage().with_texts(question), None);
    checkpoint.tasks[1].task.question = "what is 15% of 200".into();
    checkpoint.tasks[0].task.question = "Count the people in Sales".into();
    assert!(checkpoint.for_storage().with_texts(question).is_some());
    // Texts kept: stored as they are.
    checkpoint.text_kept = true;
    assert_eq!(checkpoint.for_storage(), checkpoint);
}
