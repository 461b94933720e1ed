//! Fusing the tasks' answers: each strategy, and the one `auto` picks.

use serde_json::{json, Value};

use crate::helpers::{done, response, task};
use switchyard_core::orchestration::*;

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
