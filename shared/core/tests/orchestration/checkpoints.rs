//! Checkpoints as stored: one too large sheds its largest data, one without the question's
//! texts holds none of them.

use serde_json::{json, Value};

use crate::helpers::{checkpoint, done, response, task};
use switchyard_core::orchestration::*;

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

/// A checkpoint past twice the item budget in its answers' texts and data (an HTTP
/// template without `response_template` answers with the whole body), in multibyte text:
/// stored under the budget, data dropped, texts cut with the marker on a character's
/// boundary, and still parsing.
#[test]
fn a_checkpoint_twice_the_budget_in_multibyte_answers_is_stored_under_it() {
    use switchyard_catalog::bounded::{CUT_MARKER, MAX_ITEM_BYTES};
    let long = "é漢🚀".repeat(2 * MAX_ITEM_BYTES / 9 + 1);
    assert!(long.len() > 2 * MAX_ITEM_BYTES);
    let mut checkpoint = checkpoint(vec![task("t1", "a", 0.8, &[]), task("t2", "b", 0.8, &[])]);
    for i in 0..2 {
        checkpoint.tasks[i] = done(
            checkpoint.tasks[i].task.clone(),
            response(&long, json!({"k": i}), json!({ "rows": [long.clone()] })),
        );
    }
    checkpoint.tasks[1].error = Some(long.clone());
    let stored = checkpoint.for_storage();
    let json = serde_json::to_string(&stored).unwrap();
    assert!(json.len() <= MAX_CHECKPOINT_BYTES, "{} bytes", json.len());
    let back: Checkpoint = serde_json::from_str(&json).unwrap();
    for state in &back.tasks {
        let response = state.response.as_ref().unwrap();
        assert_eq!(response.data, Value::Null, "data dropped first");
        let kept = response.content.strip_suffix(CUT_MARKER).unwrap();
        assert!(
            long.starts_with(kept) && kept.len() >= 1_000,
            "{}",
            kept.len()
        );
    }
    assert_eq!(back.tasks[1].response.as_ref().unwrap().parameters["k"], 1);
    assert!(back.tasks[1].error.as_ref().unwrap().ends_with(CUT_MARKER));
}
