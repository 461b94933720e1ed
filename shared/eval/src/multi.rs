//! Multi-part questions: does the router find the set of intents a question asks for?
//! Every in-scope line is routed whole, then detection and decomposition run; the
//! predicted set is the parts' templates when the question was split, else the whole
//! question's best template. Single-intent lines that get split are false splits.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::{percentiles, ratio, Embedded, LabeledQuery, Percentiles};
use crate::error::Result;
use switchyard_catalog::auth::Access;
use switchyard_core::config::OrchestrationConfig;
use switchyard_core::orchestration::{decompose, Decomposer};
use switchyard_routing::router::Router;

#[derive(Debug, Clone, Serialize)]
pub struct CountRow {
    pub questions: usize,
    pub accuracy: f64,
    /// Of these questions, how many were split.
    pub split_rate: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct MultiIntentReport {
    /// In-scope questions scored.
    pub questions: usize,
    /// The predicted set of templates equals the labelled set.
    pub intent_set_accuracy: f64,
    /// The same by number of intents asked for ("1", "2", "3").
    pub intent_set_by_count: BTreeMap<String, CountRow>,
    /// Single-intent questions that were split.
    pub false_split_rate: f64,
    /// Questions on which decomposition was considered (enough signals fired).
    pub considered_rate: f64,
    /// Detection and choosing a split, without the sub-questions' routing.
    pub decompose_ms: Percentiles,
    /// The sub-questions' routing (one embedding batch per question), when considered.
    pub sub_question_routing_ms: Percentiles,
}

pub fn multi_intent(
    router: &Router,
    orchestration: &OrchestrationConfig,
    queries: &[LabeledQuery],
    embedded: &Embedded,
) -> Result<MultiIntentReport> {
    let decomposer = Decomposer::new(&router.index().catalog, orchestration);
    let mut by_count: BTreeMap<usize, (usize, usize, usize)> = BTreeMap::new();
    let (mut correct, mut scored, mut considered) = (0, 0, 0);
    let (mut single, mut single_split) = (0, 0);
    let mut decompose_ms = Vec::new();
    let mut routing_ms = Vec::new();
    for (query, vector) in queries.iter().zip(&embedded.vectors) {
        if query.intents.is_empty() {
            continue;
        }
        let whole = router.route_vector(&query.text, vector, &Access::All)?;
        let decomposition = decompose(router, &decomposer, &whole, &Access::All)?;
        decompose_ms.push(decomposition.decompose_ms);
        if decomposition.signals.considered {
            considered += 1;
            routing_ms.push(decomposition.routing_ms);
        }
        let predicted: BTreeSet<&str> = if decomposition.is_split() {
            decomposition
                .parts
                .iter()
                .filter_map(|p| p.routing.best())
                .map(|m| m.template_id.as_str())
                .collect()
        } else {
            whole
                .best()
                .map(|m| m.template_id.as_str())
                .into_iter()
                .collect()
        };
        let expected: BTreeSet<&str> = query.intents.iter().map(String::as_str).collect();
        let right = predicted == expected;
        scored += 1;
        correct += usize::from(right);
        let row = by_count.entry(expected.len()).or_default();
        row.0 += 1;
        row.1 += usize::from(right);
        row.2 += usize::from(decomposition.is_split());
        if expected.len() == 1 {
            single += 1;
            single_split += usize::from(decomposition.is_split());
        }
    }
    Ok(MultiIntentReport {
        questions: scored,
        intent_set_accuracy: ratio(correct, scored),
        intent_set_by_count: by_count
            .into_iter()
            .map(|(count, (questions, right, split))| {
                (
                    count.to_string(),
                    CountRow {
                        questions,
                        accuracy: ratio(right, questions),
                        split_rate: ratio(split, questions),
                    },
                )
            })
            .collect(),
        false_split_rate: ratio(single_split, single),
        considered_rate: ratio(considered, scored),
        decompose_ms: percentiles(decompose_ms),
        sub_question_routing_ms: percentiles(routing_ms),
    })
}
