//! `switchyard tune`: fit the confidence threshold and the clarify margin to outcome
//! feedback, and write them as a configuration patch for a person to review. Nothing
//! changes live.
//!
//! An answer counts as good when its reward is at least 0.5. The threshold is the one that
//! maximises, over the judged decisions, good answers kept minus `wrong_answer` × bad
//! answers kept (a decision is kept when its confidence clears the threshold). Per
//! datasource the same fit runs when it has at least `min_per_datasource` judged
//! decisions. The clarify margin asks when the top two were closer than it: asking gains
//! `clarify_gain` on a bad answer (the right template is often among the choices) and costs
//! `needless_question` on a good one. See [`Costs`] for the defaults.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::Result;
use crate::LabeledQuery;
use switchyard_catalog::auth::Access;
use switchyard_core::feedback::FeedbackRecord;
use switchyard_index::config::{RouterConfig, Threshold};
use switchyard_routing::router::{Match, Outcome, Router};

/// A reward at least this high is a good answer.
pub const GOOD_REWARD: f32 = 0.5;

/// What the fit weighs, relative to a right answer (worth 1).
#[derive(Debug, Clone, PartialEq)]
pub struct Costs {
    /// A wrong answer, against a right one.
    pub wrong_answer: f32,
    /// What asking gains on an answer that would have been wrong...
    pub clarify_gain: f32,
    /// ... and costs on one that would have been right.
    pub needless_question: f32,
    /// Judged answers a datasource needs for a threshold of its own.
    pub min_per_datasource: usize,
}

impl Default for Costs {
    fn default() -> Self {
        Costs {
            wrong_answer: 1.0,
            clarify_gain: 0.5,
            needless_question: 0.5,
            min_per_datasource: 200,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tuned {
    /// Judged decisions the fit used.
    pub judged: usize,
    pub good: usize,
    pub threshold: f32,
    pub clarify_margin: f32,
    /// Datasources with enough feedback of their own.
    pub datasource_thresholds: BTreeMap<String, f32>,
}

/// One judged decision as the fit sees it.
struct Point<'a> {
    datasource: &'a str,
    confidence: f32,
    margin: Option<f32>,
    good: bool,
}

/// Fit from `records` (unjudged ones are skipped); `current` is the threshold in force,
/// which wins ties. `None` when no record was judged.
pub fn fit(
    records: &[FeedbackRecord],
    current_threshold: f32,
    current_margin: f32,
    costs: &Costs,
) -> Option<Tuned> {
    let min_per_datasource = costs.min_per_datasource;
    let points: Vec<Point> = records
        .iter()
        .filter_map(|r| {
            Some(Point {
                datasource: r.decision.datasource.as_deref()?,
                confidence: r.decision.confidence,
                margin: r.decision.margin,
                good: r.reward? >= GOOD_REWARD,
            })
        })
        .collect();
    if points.is_empty() {
        return None;
    }
    let threshold = best_threshold(&points, current_threshold, costs.wrong_answer);
    let mut by_datasource: BTreeMap<&str, Vec<&Point>> = BTreeMap::new();
    for p in &points {
        by_datasource.entry(p.datasource).or_default().push(p);
    }
    let datasource_thresholds = by_datasource
        .into_iter()
        .filter(|(_, points)| points.len() >= min_per_datasource)
        .map(|(name, points)| {
            let owned: Vec<Point> = points
                .iter()
                .map(|p| Point {
                    datasource: p.datasource,
                    confidence: p.confidence,
                    margin: p.margin,
                    good: p.good,
                })
                .collect();
            (
                name.to_owned(),
                best_threshold(&owned, threshold, costs.wrong_answer),
            )
        })
        .filter(|(_, t)| (t - threshold).abs() > 1e-6)
        .collect();
    let kept: Vec<&Point> = points
        .iter()
        .filter(|p| p.confidence >= threshold)
        .collect();
    Some(Tuned {
        judged: points.len(),
        good: points.iter().filter(|p| p.good).count(),
        threshold,
        clarify_margin: best_margin(&kept, current_margin, costs),
        datasource_thresholds,
    })
}

/// The threshold maximising good kept minus `wrong_answer` × bad kept; ties go to the one
/// nearest `current`.
fn best_threshold(points: &[Point], current: f32, wrong_answer: f32) -> f32 {
    let mut sorted: Vec<&Point> = points.iter().collect();
    sorted.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
    // Keeping everything above the i-th confidence: a running sum from the top.
    let mut best = (0.0f32, f32::INFINITY);
    let mut value = 0.0f32;
    let consider = |value: f32, t: f32, best: &mut (f32, f32)| {
        let nearer = (t - current).abs() < (best.1 - current).abs();
        if value > best.0 + 1e-6 || ((value - best.0).abs() <= 1e-6 && nearer) {
            *best = (value, t);
        }
    };
    consider(0.0, sorted[0].confidence + 1e-3, &mut best);
    for (i, p) in sorted.iter().enumerate() {
        value += if p.good { 1.0 } else { -wrong_answer };
        // Only where the next confidence differs: equal scores cannot be split.
        let next = sorted.get(i + 1).map(|q| q.confidence);
        if next.is_none_or(|n| n < p.confidence) {
            consider(value, p.confidence, &mut best);
        }
    }
    best.1.clamp(0.0, 1.0)
}

/// The clarify margin maximising `clarify_gain` × (bad asked) − `needless_question` ×
/// (good asked), on a 0.01 grid up to 0.3.
fn best_margin(kept: &[&Point], current: f32, costs: &Costs) -> f32 {
    let value = |m: f32| -> f32 {
        kept.iter()
            .filter(|p| p.margin.is_some_and(|x| x < m))
            .map(|p| {
                if p.good {
                    -costs.needless_question
                } else {
                    costs.clarify_gain
                }
            })
            .sum()
    };
    let mut best = (value(current), current);
    for step in 0..=30 {
        let m = step as f32 / 100.0;
        let v = value(m);
        if v > best.0 + 1e-6
            || ((v - best.0).abs() <= 1e-6 && (m - current).abs() < (best.1 - current).abs())
        {
            best = (v, m);
        }
    }
    best.1
}

/// The patch: the fitted values as a configuration file to merge over the current one.
pub fn patch(tuned: &Tuned) -> String {
    let mut text = format!(
        "# Written by `switchyard tune` from {} judged answers ({} good). Review, then merge\n\
         # into your configuration file (--config / SWITCHYARD_CONFIG).\n\
         composite_retrieval:\n  confidence_threshold: {}\n",
        tuned.judged,
        tuned.good,
        round(tuned.threshold)
    );
    if tuned.datasource_thresholds.is_empty() {
        text.push_str("  datasource_thresholds: {}\n");
    } else {
        text.push_str("  datasource_thresholds:\n");
        for (name, t) in &tuned.datasource_thresholds {
            text.push_str(&format!("    {name:?}: {}\n", round(*t)));
        }
    }
    text.push_str(&format!(
        "  clarify:\n    margin: {}\n",
        round(tuned.clarify_margin)
    ));
    text
}

fn round(x: f32) -> f64 {
    (f64::from(x) * 1000.0).round() / 1000.0
}

/// `config` with the fitted values in place.
pub fn apply(config: &RouterConfig, tuned: &Tuned) -> RouterConfig {
    let mut patched = config.clone();
    let retrieval = &mut patched.composite_retrieval;
    retrieval.confidence_threshold = Threshold::Fixed(round(tuned.threshold) as f32);
    retrieval.datasource_thresholds = tuned
        .datasource_thresholds
        .iter()
        .map(|(name, t)| (name.clone(), round(*t) as f32))
        .collect();
    retrieval.clarify.margin = round(tuned.clarify_margin) as f32;
    patched
}

/// The share of a labelled set answered right: an in-scope question executed on its
/// template or clarified with it among the choices, an out-of-scope one not answered.
pub fn resolved_share(
    router: &Router,
    queries: &[LabeledQuery],
    vectors: &[Vec<f32>],
) -> Result<f64> {
    let mut right = 0usize;
    for (query, vector) in queries.iter().zip(vectors) {
        let routing = router.route_vector(&query.text, vector, &Access::All)?;
        let is_label = |m: &Match| {
            m.template_id == query.intent
                && query.domain.as_deref().is_none_or(|d| d == m.datasource)
        };
        right += usize::from(match (query.in_scope(), routing.outcome) {
            (false, outcome) => outcome == Outcome::NoMatch,
            (true, Outcome::Execute) => routing.selected_match().is_some_and(is_label),
            (true, Outcome::Clarify) => routing.clarify_choices().iter().any(is_label),
            (true, Outcome::NoMatch) => false,
        });
    }
    Ok(right as f64 / queries.len().max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_core::feedback::{judged, Decision, Feedback};

    fn record(datasource: &str, confidence: f32, margin: f32, good: bool) -> FeedbackRecord {
        let decision = Decision {
            request_id: format!("{datasource}-{confidence}-{margin}"),
            datasource: Some(datasource.into()),
            template_id: Some("t".into()),
            outcome: Outcome::Execute,
            confidence,
            margin: Some(margin),
            threshold: 0.4,
            processing_ms: 10.0,
            at: 0,
            query: None,
            session_id: None,
        };
        let feedback = Feedback {
            agent_success: Some(good),
            ..Feedback::default()
        };
        judged(decision, feedback)
    }

    #[test]
    fn the_threshold_separates_good_from_bad_answers() {
        let mut records = Vec::new();
        for i in 0..20 {
            records.push(record("a", 0.6 + i as f32 * 0.01, 0.5, true));
            records.push(record("a", 0.3 + i as f32 * 0.01, 0.5, false));
        }
        let tuned = fit(&records, 0.4, 0.1, &Costs::default()).unwrap();
        assert_eq!(tuned.judged, 40);
        assert!(
            tuned.threshold > 0.49 && tuned.threshold <= 0.6,
            "{tuned:?}"
        );
        assert!(
            tuned.datasource_thresholds.is_empty(),
            "too few per datasource"
        );
        let patch = patch(&tuned);
        assert!(patch.contains("confidence_threshold: 0.6"), "{patch}");
    }

    #[test]
    fn close_calls_that_go_wrong_widen_the_clarify_margin() {
        let mut records = Vec::new();
        for i in 0..10 {
            records.push(record("a", 0.8, 0.02 + i as f32 * 0.001, false));
            records.push(record("a", 0.8, 0.5, true));
        }
        let tuned = fit(&records, 0.4, 0.0, &Costs::default()).unwrap();
        assert!(tuned.clarify_margin >= 0.03, "{tuned:?}");
    }

    #[test]
    fn a_datasource_with_enough_feedback_gets_its_own_threshold() {
        let mut records = Vec::new();
        for i in 0..30 {
            records.push(record("strict", 0.5 + i as f32 * 0.001, 0.5, false));
            records.push(record("strict", 0.7 + i as f32 * 0.001, 0.5, true));
            records.push(record("lenient", 0.45 + i as f32 * 0.001, 0.5, true));
        }
        let costs = Costs {
            min_per_datasource: 30,
            ..Costs::default()
        };
        let tuned = fit(&records, 0.4, 0.1, &costs).unwrap();
        let strict = tuned.datasource_thresholds.get("strict").copied();
        assert!(strict.is_some_and(|t| t > 0.53), "{tuned:?}");
        assert!(fit(&[], 0.4, 0.1, &costs).is_none());
    }
}
