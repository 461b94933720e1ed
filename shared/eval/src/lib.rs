//! Measuring the router: how well a catalog routes a labelled data set (JSON lines of
//! `{"text", "intent", "domain"}`; intent `oos` means nothing should match), and fitting its
//! knobs from feedback ([`tune`]). Lines that carry `session_id` (and `turn`) are
//! conversations, replayed by [`conversation`]. Only the CLI, benches and tests use this crate.

pub mod conversation;
pub mod documents;
pub mod error;
pub mod multi;
pub mod noise;
pub mod report;
pub mod suggest;
pub mod tune;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use switchyard_catalog::auth::Access;
use switchyard_index::config::RouterConfig;
use switchyard_routing::router::{Outcome, Router};
use switchyard_text::config::Fusion;

pub use error::EvalError;

pub const OUT_OF_SCOPE: &str = "oos";

#[derive(Debug, Clone, Deserialize)]
pub struct LabeledQuery {
    pub text: String,
    /// The one intent; for a line that gives only `intents`, those joined with `+`.
    #[serde(default)]
    pub intent: String,
    /// Every intent the question asks for, in the order asked (multi-part questions);
    /// `[intent]` for a line that gives only `intent` (none for `oos`).
    #[serde(default)]
    pub intents: Vec<String>,
    pub domain: Option<String>,
    /// The conversation the line belongs to; its lines are in turn order.
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub turn: Option<u32>,
    /// What the assistant said just before this turn.
    #[serde(default)]
    pub assistant: Option<String>,
}

impl LabeledQuery {
    pub fn in_scope(&self) -> bool {
        self.intent != OUT_OF_SCOPE
    }
}

/// Read a JSON-lines data set; a bad line is an error naming the file and line number.
pub fn load_dataset(path: &Path) -> Result<Vec<LabeledQuery>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|e| EvalError::read(path, e))?;
    let mut queries = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad_line =
            |message: String| EvalError::data_set(path, format!("line {}", number + 1), message);
        let mut query: LabeledQuery = serde_json::from_str(line).map_err(|e| {
            bad_line(format!(
                "expected {{\"text\", \"intent\" or \"intents\", \"domain\"}} (and optionally \"session_id\", \"turn\"): {e}"
            ))
        })?;
        match (query.intent.is_empty(), query.intents.is_empty()) {
            (true, true) => {
                return Err(bad_line(
                    "needs \"intent\" or a non-empty \"intents\"".into(),
                ))
            }
            (true, false) => query.intent = query.intents.join("+"),
            (false, true) if query.intent != OUT_OF_SCOPE => {
                query.intents = vec![query.intent.clone()]
            }
            _ => {}
        }
        queries.push(query);
    }
    if queries.is_empty() {
        return Err(EvalError::data_set(
            path,
            "(document)",
            "the data set has no lines",
        ));
    }
    Ok(queries)
}

/// The router's best guess for one query, whatever its score.
#[derive(Debug, Clone)]
struct Prediction {
    template: Option<String>,
    datasource: Option<String>,
    score: f32,
    /// The best template's calibrated probability, where the router has a head.
    probability: Option<f32>,
    outcome: Outcome,
    /// The clarify choices' templates.
    choices: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ThresholdRow {
    pub threshold: f32,
    pub in_scope_accuracy: f64,
    pub oos_recall: f64,
    pub oos_precision: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub samples: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct ConfusedPair {
    pub expected: String,
    pub predicted: String,
    pub count: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    pub queries: usize,
    pub in_scope_queries: usize,
    pub oos_queries: usize,
    /// Argmax over in-scope queries, no threshold.
    pub intent_accuracy: f64,
    pub datasource_accuracy: f64,
    /// At `threshold`: in-scope queries routed to the right template and above it.
    pub in_scope_accuracy: f64,
    pub oos_recall: f64,
    pub oos_precision: f64,
    pub threshold: f32,
    /// `configured`, `automatic` or `fallback_single_datasource`.
    pub threshold_source: String,
    /// In-scope queries answered with a clarify question, and how often the right
    /// template was among the choices then.
    pub clarify_rate: f64,
    pub clarify_contains_expected: f64,
    /// Of the in-scope queries: executed on the right template (clarify counts as right
    /// when the right template is among the choices).
    pub in_scope_resolved: f64,
    pub thresholds: Vec<ThresholdRow>,
    pub confused_pairs: Vec<ConfusedPair>,
    /// Whole routing (embedding + search + scoring), one query at a time.
    pub latency_ms: Percentiles,
    /// The embedding part of those same routings.
    pub embedding_latency_ms: Percentiles,
    /// Search + scoring only (query vector given).
    pub scoring_latency_ms: Percentiles,
    pub embedding_batch_ms: f64,
}

pub(crate) fn ratio(numerator: usize, denominator: usize) -> f64 {
    if denominator == 0 {
        0.0
    } else {
        numerator as f64 / denominator as f64
    }
}

pub fn percentiles(mut samples: Vec<f64>) -> Percentiles {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| {
        if samples.is_empty() {
            return 0.0;
        }
        let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
        samples[rank - 1]
    };
    Percentiles {
        p50: at(0.50),
        p95: at(0.95),
        p99: at(0.99),
        samples: samples.len(),
    }
}

/// One row of the stage table: a configuration and what it scores.
#[derive(Debug, Clone, Serialize)]
pub struct StageRow {
    pub stages: String,
    pub intent_accuracy: f64,
    pub datasource_accuracy: f64,
    pub threshold: f32,
    pub in_scope_accuracy: f64,
    pub oos_recall: f64,
    pub clarify_rate: f64,
}

/// Each stage on and off, on the same query vectors: what each contributes.
pub fn stage_table(
    router: &Router,
    queries: &[LabeledQuery],
    embedded: &Embedded,
) -> Result<Vec<StageRow>> {
    let vectors = &embedded.vectors;
    let variants: [(&str, bool, bool, bool, Fusion); 8] = [
        (
            "centroid similarity only",
            false,
            false,
            false,
            Fusion::Weighted,
        ),
        ("centroid + string", false, false, true, Fusion::Weighted),
        (
            "centroid + keywords + string",
            false,
            true,
            true,
            Fusion::Weighted,
        ),
        ("learned head only", true, false, false, Fusion::Weighted),
        ("learned head + string", true, false, true, Fusion::Weighted),
        (
            "learned head + keywords",
            true,
            true,
            false,
            Fusion::Weighted,
        ),
        (
            "learned head + keywords (rrf) + string",
            true,
            true,
            true,
            Fusion::Rrf,
        ),
        (
            "learned head + keywords + string (default)",
            true,
            true,
            true,
            Fusion::Weighted,
        ),
    ];
    let mut rows = Vec::new();
    for (name, learned, keywords, strings, fusion) in variants {
        let mut config: RouterConfig = router.config().clone();
        let retrieval = &mut config.composite_retrieval;
        retrieval.learned_scoring.enabled = learned;
        retrieval.keywords.enabled = keywords;
        retrieval.keywords.fusion = fusion;
        retrieval.string_similarity.enabled = strings;
        let variant = router.reconfigured(config);
        let report = score(&variant, queries, vectors)?;
        rows.push(StageRow {
            stages: name.to_owned(),
            intent_accuracy: report.intent_accuracy,
            datasource_accuracy: report.datasource_accuracy,
            threshold: report.threshold,
            in_scope_accuracy: report.in_scope_accuracy,
            oos_recall: report.oos_recall,
            clarify_rate: report.clarify_rate,
        });
    }
    Ok(rows)
}

/// The data set's query vectors, embedded in batches once and shared by every report.
pub struct Embedded {
    pub vectors: Vec<Vec<f32>>,
    pub batch_ms: f64,
}

pub fn embed_queries(router: &Router, queries: &[LabeledQuery]) -> Result<Embedded> {
    let start = Instant::now();
    let texts: Vec<String> = queries
        .iter()
        .map(|q| router.embedding_text(&q.text))
        .collect();
    // Each alone, as the router embeds a question (int8 activations are scaled per call,
    // so a batch would give slightly different vectors); in parallel over the sessions.
    let vectors = texts
        .par_iter()
        .map(|text| router.embedder().embed_one(text))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(Embedded {
        vectors,
        batch_ms: start.elapsed().as_secs_f64() * 1000.0,
    })
}

/// Route every query on its vector, then measure whole-route latency on the first
/// `latency_samples` queries one at a time.
pub fn evaluate(
    router: &Router,
    queries: &[LabeledQuery],
    embedded: &Embedded,
    latency_samples: usize,
) -> Result<EvalReport> {
    let mut report = score(router, queries, &embedded.vectors)?;
    let mut route_ms = Vec::with_capacity(latency_samples);
    let mut embedding_ms = Vec::with_capacity(latency_samples);
    for query in queries.iter().take(latency_samples) {
        let start = Instant::now();
        let routing = router.route(&query.text, &Access::All)?;
        route_ms.push(start.elapsed().as_secs_f64() * 1000.0);
        embedding_ms.push(routing.timings.embedding_ms);
    }
    report.latency_ms = percentiles(route_ms);
    report.embedding_latency_ms = percentiles(embedding_ms);
    report.embedding_batch_ms = embedded.batch_ms;
    Ok(report)
}

/// Accuracy figures for queries whose vectors are given; latency left empty.
fn score(router: &Router, queries: &[LabeledQuery], vectors: &[Vec<f32>]) -> Result<EvalReport> {
    let (predictions, scoring_ms) = predict(router, queries, vectors)?;
    let in_scope: Vec<(&LabeledQuery, &Prediction)> = queries
        .iter()
        .zip(&predictions)
        .filter(|(q, _)| q.in_scope())
        .collect();
    let oos_count = queries.len() - in_scope.len();
    let intent_correct = in_scope
        .iter()
        .filter(|(q, p)| p.template.as_deref() == Some(q.intent.as_str()))
        .count();
    let datasource_correct = in_scope
        .iter()
        .filter(|(q, p)| p.datasource.is_some() && p.datasource == q.domain)
        .count();

    let row = |threshold: f32| threshold_row(queries, &predictions, &in_scope, threshold);
    let (threshold, threshold_source) = router.threshold();
    let at_threshold = row(threshold);
    let clarify = ClarifyCounts::of(&in_scope);
    let thresholds = (0..=12).map(|i| row(0.30 + 0.05 * i as f32)).collect();

    Ok(EvalReport {
        queries: queries.len(),
        in_scope_queries: in_scope.len(),
        oos_queries: oos_count,
        intent_accuracy: ratio(intent_correct, in_scope.len()),
        datasource_accuracy: ratio(datasource_correct, in_scope.len()),
        in_scope_accuracy: at_threshold.in_scope_accuracy,
        oos_recall: at_threshold.oos_recall,
        oos_precision: at_threshold.oos_precision,
        threshold,
        threshold_source: threshold_source.to_string(),
        clarify_rate: ratio(clarify.clarified, in_scope.len()),
        clarify_contains_expected: ratio(clarify.hits, clarify.clarified),
        in_scope_resolved: ratio(clarify.resolved, in_scope.len()),
        thresholds,
        confused_pairs: confused_pairs(&in_scope),
        latency_ms: percentiles(Vec::new()),
        embedding_latency_ms: percentiles(Vec::new()),
        scoring_latency_ms: percentiles(scoring_ms),
        embedding_batch_ms: 0.0,
    })
}

/// Route every query on its given vector: the predictions, and the milliseconds each took.
fn predict(
    router: &Router,
    queries: &[LabeledQuery],
    vectors: &[Vec<f32>],
) -> Result<(Vec<Prediction>, Vec<f64>)> {
    let mut scoring_ms = Vec::with_capacity(queries.len());
    let mut predictions = Vec::with_capacity(queries.len());
    for (query, vector) in queries.iter().zip(vectors) {
        let start = Instant::now();
        let routing = router.route_vector(&query.text, vector, &Access::All)?;
        scoring_ms.push(start.elapsed().as_secs_f64() * 1000.0);
        let best = routing.best();
        predictions.push(Prediction {
            template: best.map(|m| m.template_id.clone()),
            datasource: best.map(|m| m.datasource.clone()),
            score: best.map(|m| m.scores.combined_score).unwrap_or(f32::MIN),
            probability: best.and_then(|m| m.scores.probability),
            outcome: routing.outcome,
            choices: routing
                .clarify_choices()
                .iter()
                .map(|m| m.template_id.clone())
                .collect(),
        });
    }
    Ok((predictions, scoring_ms))
}

/// In-scope accuracy and out-of-scope recall and precision if `threshold` were the
/// threshold. `in_scope` holds the in-scope pairs of `queries` and `predictions`.
fn threshold_row(
    queries: &[LabeledQuery],
    predictions: &[Prediction],
    in_scope: &[(&LabeledQuery, &Prediction)],
    threshold: f32,
) -> ThresholdRow {
    let oos_count = queries.len() - in_scope.len();
    let accepted_correct = in_scope
        .iter()
        .filter(|(q, p)| p.score >= threshold && p.template.as_deref() == Some(q.intent.as_str()))
        .count();
    let rejected: Vec<bool> = queries
        .iter()
        .zip(predictions)
        .filter(|(_, p)| p.score < threshold)
        .map(|(q, _)| !q.in_scope())
        .collect();
    let rejected_oos = rejected.iter().filter(|oos| **oos).count();
    ThresholdRow {
        threshold,
        in_scope_accuracy: ratio(accepted_correct, in_scope.len()),
        oos_recall: ratio(rejected_oos, oos_count),
        oos_precision: ratio(rejected_oos, rejected.len()),
    }
}

/// Of the in-scope queries: how many got a clarify answer, how many of those listed the
/// right template, and how many were resolved (executed right, or clarified with it).
struct ClarifyCounts {
    clarified: usize,
    hits: usize,
    resolved: usize,
}

impl ClarifyCounts {
    fn of(in_scope: &[(&LabeledQuery, &Prediction)]) -> ClarifyCounts {
        let clarified: Vec<&(&LabeledQuery, &Prediction)> = in_scope
            .iter()
            .filter(|(_, p)| p.outcome == Outcome::Clarify)
            .collect();
        let hits = clarified
            .iter()
            .filter(|(q, p)| p.choices.contains(&q.intent))
            .count();
        let resolved = in_scope
            .iter()
            .filter(|(q, p)| match p.outcome {
                Outcome::Execute => p.template.as_deref() == Some(q.intent.as_str()),
                Outcome::Clarify => p.choices.contains(&q.intent),
                Outcome::NoMatch => false,
            })
            .count();
        ClarifyCounts {
            clarified: clarified.len(),
            hits,
            resolved,
        }
    }
}

/// The ten most frequent (expected, predicted) template confusions among in-scope queries.
fn confused_pairs(in_scope: &[(&LabeledQuery, &Prediction)]) -> Vec<ConfusedPair> {
    let mut confusion: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (q, p) in in_scope {
        if let Some(predicted) = &p.template {
            if predicted != &q.intent {
                *confusion
                    .entry((q.intent.clone(), predicted.clone()))
                    .or_default() += 1;
            }
        }
    }
    let mut confused_pairs: Vec<ConfusedPair> = confusion
        .into_iter()
        .map(|((expected, predicted), count)| ConfusedPair {
            expected,
            predicted,
            count,
        })
        .collect();
    confused_pairs.sort_by_key(|pair| std::cmp::Reverse(pair.count));
    confused_pairs.truncate(10);
    confused_pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_nearest_rank() {
        let p = percentiles((1..=100).map(f64::from).collect());
        assert_eq!((p.p50, p.p95, p.p99), (50.0, 95.0, 99.0));
    }

    #[test]
    fn bad_dataset_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.jsonl");
        std::fs::write(
            &path,
            "{\"text\":\"a\",\"intent\":\"x\",\"domain\":\"d\"}\n{\"text\": 3}\n",
        )
        .unwrap();
        let message = load_dataset(&path).unwrap_err().to_string();
        assert!(
            message.contains("d.jsonl") && message.contains("line 2"),
            "{message}"
        );
    }
}
