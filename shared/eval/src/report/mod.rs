//! `eval --report`: what an eval run found, as one self-contained HTML page (inline SVG,
//! no script, nothing fetched): per-template accuracy, the most confused pairs with their
//! questions, the risk–coverage curve and the threshold trade-off with the chosen threshold
//! marked, a reliability diagram, and the conversation and multi-part figures where the
//! data set has them. `suggest` writes the same page with the catalog before its patch
//! beside it. This module computes the figures; [`html`] lays them out.

pub mod escape;
pub mod html;
pub mod svg;

use std::collections::BTreeMap;
use std::path::Path;

use crate::conversation::ConversationReport;
use crate::error::{EvalError, Result};
use crate::multi::MultiIntentReport;
use crate::{predict, EvalReport, LabeledQuery};
use switchyard_routing::router::Router;

/// One question of the data set as the router answered it, whatever its confidence.
#[derive(Debug, Clone)]
pub struct Answer {
    pub text: String,
    /// The labelled intent (`oos` when nothing should answer).
    pub expected: String,
    /// The best template, before the threshold.
    pub predicted: Option<String>,
    /// The confidence compared with the threshold.
    pub confidence: f32,
    /// The calibrated probability, where the router has a head.
    pub probability: Option<f32>,
}

impl Answer {
    /// The best template is the labelled one (never, for an out-of-scope question).
    pub fn right(&self) -> bool {
        self.predicted.as_deref() == Some(self.expected.as_str())
    }

    pub fn in_scope(&self) -> bool {
        self.expected != crate::OUT_OF_SCOPE
    }
}

/// Every question of `queries` routed on its vector.
pub fn answers(
    router: &Router,
    queries: &[LabeledQuery],
    vectors: &[Vec<f32>],
) -> Result<Vec<Answer>> {
    let (predictions, _) = predict(router, queries, vectors)?;
    Ok(queries
        .iter()
        .zip(predictions)
        .map(|(q, p)| Answer {
            text: q.text.clone(),
            expected: q.intent.clone(),
            predicted: p.template,
            confidence: p.score,
            probability: p.probability,
        })
        .collect())
}

/// One catalog's eval on the data set: its report and each question's answer.
pub struct Snapshot {
    pub report: EvalReport,
    pub answers: Vec<Answer>,
}

/// What the page shows: the catalog measured now, and before a change when there is one.
pub struct Page<'a> {
    pub title: String,
    /// Lines under the title: the data set, the catalog, what changed.
    pub notes: Vec<String>,
    pub now: &'a Snapshot,
    pub before: Option<&'a Snapshot>,
    pub conversation: Option<&'a ConversationReport>,
    pub multi: Option<&'a MultiIntentReport>,
}

impl Page<'_> {
    /// Write the page to `path`; the error names the file.
    pub fn write(&self, path: &Path) -> Result<()> {
        std::fs::write(path, html::render(self)).map_err(|e| EvalError::read(path, e))
    }
}

/// The risk–coverage curve: answering the `k` most confident questions, the share of all
/// questions answered and the share of those answered wrongly (an out-of-scope question
/// answered is wrong), at most `points` points.
pub fn risk_coverage(answers: &[Answer], points: usize) -> Vec<(f64, f64)> {
    let mut order: Vec<&Answer> = answers.iter().collect();
    order.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
    let n = order.len();
    let step = n.div_ceil(points.max(1)).max(1);
    let mut curve = Vec::new();
    let mut wrong = 0usize;
    for (k, answer) in order.iter().enumerate() {
        wrong += usize::from(!answer.right());
        let answered = k + 1;
        if answered % step == 0 || answered == n {
            curve.push((answered as f64 / n as f64, wrong as f64 / answered as f64));
        }
    }
    curve
}

/// Coverage and risk when the questions at or above `threshold` are answered.
pub fn at_threshold(answers: &[Answer], threshold: f32) -> (f64, f64) {
    let answered: Vec<&Answer> = answers
        .iter()
        .filter(|a| a.confidence >= threshold)
        .collect();
    let wrong = answered.iter().filter(|a| !a.right()).count();
    (
        crate::ratio(answered.len(), answers.len()),
        crate::ratio(wrong, answered.len()),
    )
}

/// One bin of the reliability diagram.
#[derive(Debug, Clone, PartialEq)]
pub struct Bin {
    pub from: f64,
    pub to: f64,
    pub questions: usize,
    pub mean_confidence: f64,
    pub accuracy: f64,
}

/// The reliability diagram over `bins` equal bins of the calibrated probability (the
/// confidence clamped to [0, 1] where some answer has none), and its expected calibration
/// error. Says which of the two it binned.
pub fn reliability(answers: &[Answer], bins: usize) -> (Vec<Bin>, f64, &'static str) {
    let calibrated = !answers.is_empty() && answers.iter().all(|a| a.probability.is_some());
    let value = |a: &Answer| -> f64 {
        let v = if calibrated {
            a.probability.unwrap_or_default()
        } else {
            a.confidence
        };
        f64::from(v).clamp(0.0, 1.0)
    };
    let mut sums = vec![(0usize, 0.0f64, 0usize); bins];
    for answer in answers {
        let v = value(answer);
        let bin = ((v * bins as f64) as usize).min(bins - 1);
        sums[bin].0 += 1;
        sums[bin].1 += v;
        sums[bin].2 += usize::from(answer.right());
    }
    let mut ece = 0.0;
    let mut out = Vec::new();
    for (i, (n, total, right)) in sums.into_iter().enumerate() {
        if n == 0 {
            continue;
        }
        let bin = Bin {
            from: i as f64 / bins as f64,
            to: (i + 1) as f64 / bins as f64,
            questions: n,
            mean_confidence: total / n as f64,
            accuracy: right as f64 / n as f64,
        };
        ece += n as f64 / answers.len() as f64 * (bin.accuracy - bin.mean_confidence).abs();
        out.push(bin);
    }
    let measure = if calibrated {
        "calibrated probability"
    } else {
        "confidence"
    };
    (out, ece, measure)
}

/// One template's row: its questions, how many the router got right, and the template it
/// most often took them for.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateRow {
    pub template: String,
    pub questions: usize,
    pub right: usize,
    pub mistaken_for: Option<(String, usize)>,
}

impl TemplateRow {
    pub fn accuracy(&self) -> f64 {
        crate::ratio(self.right, self.questions)
    }
}

/// Per labelled template (in-scope questions only), by name.
pub fn per_template(answers: &[Answer]) -> BTreeMap<String, TemplateRow> {
    let mut wrong: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    let mut rows: BTreeMap<String, TemplateRow> = BTreeMap::new();
    for answer in answers.iter().filter(|a| a.in_scope()) {
        let row = rows
            .entry(answer.expected.clone())
            .or_insert_with(|| TemplateRow {
                template: answer.expected.clone(),
                questions: 0,
                right: 0,
                mistaken_for: None,
            });
        row.questions += 1;
        if answer.right() {
            row.right += 1;
        } else if let Some(predicted) = &answer.predicted {
            *wrong.entry((&answer.expected, predicted)).or_default() += 1;
        }
    }
    for ((expected, predicted), count) in wrong {
        let row = rows.get_mut(expected).expect("counted above");
        if row.mistaken_for.as_ref().is_none_or(|(_, c)| count > *c) {
            row.mistaken_for = Some((predicted.to_owned(), count));
        }
    }
    rows
}

/// A confused pair with the questions behind it.
#[derive(Debug, Clone)]
pub struct Confusion {
    pub expected: String,
    pub predicted: String,
    pub questions: Vec<String>,
}

/// The `top` most frequent (expected, predicted) confusions among in-scope questions, most
/// frequent first (ties by name), each with every question behind it.
pub fn confusions(answers: &[Answer], top: usize) -> Vec<Confusion> {
    let mut pairs: BTreeMap<(&str, &str), Vec<String>> = BTreeMap::new();
    for answer in answers.iter().filter(|a| a.in_scope() && !a.right()) {
        if let Some(predicted) = &answer.predicted {
            pairs
                .entry((&answer.expected, predicted))
                .or_default()
                .push(answer.text.clone());
        }
    }
    let mut out: Vec<Confusion> = pairs
        .into_iter()
        .map(|((expected, predicted), questions)| Confusion {
            expected: expected.to_owned(),
            predicted: predicted.to_owned(),
            questions,
        })
        .collect();
    out.sort_by_key(|c| std::cmp::Reverse(c.questions.len()));
    out.truncate(top);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(expected: &str, predicted: &str, confidence: f32) -> Answer {
        Answer {
            text: format!("{expected}?"),
            expected: expected.into(),
            predicted: Some(predicted.into()),
            confidence,
            probability: None,
        }
    }

    #[test]
    fn risk_grows_as_less_confident_answers_are_taken() {
        let answers = vec![
            answer("a", "a", 0.9),
            answer("b", "b", 0.8),
            answer("oos", "a", 0.3),
            answer("c", "a", 0.2),
        ];
        let curve = risk_coverage(&answers, 100);
        assert_eq!(curve.len(), 4);
        assert_eq!(curve[1], (0.5, 0.0));
        assert_eq!(curve[3], (1.0, 0.5));
        assert_eq!(at_threshold(&answers, 0.5), (0.5, 0.0));
        assert_eq!(risk_coverage(&answers, 2).len(), 2);
    }

    #[test]
    fn reliability_bins_confidence_and_measures_the_gap() {
        let answers = vec![
            answer("a", "a", 0.95),
            answer("b", "a", 0.91),
            answer("c", "c", 0.15),
        ];
        let (bins, ece, measure) = reliability(&answers, 10);
        assert_eq!(measure, "confidence");
        assert_eq!(bins.len(), 2);
        assert_eq!((bins[0].questions, bins[0].accuracy), (1, 1.0));
        assert_eq!((bins[1].questions, bins[1].accuracy), (2, 0.5));
        // |1 - 0.15| / 3 + 2 * |0.5 - 0.93| / 3
        assert!((ece - (0.85 + 2.0 * 0.43) / 3.0).abs() < 1e-6, "{ece}");
    }

    #[test]
    fn templates_name_what_they_are_mistaken_for() {
        let answers = vec![
            answer("a", "a", 0.9),
            answer("a", "b", 0.9),
            answer("a", "b", 0.9),
            answer("a", "c", 0.9),
            answer("oos", "a", 0.9),
        ];
        let rows = per_template(&answers);
        assert_eq!(rows.len(), 1);
        let a = &rows["a"];
        assert_eq!((a.questions, a.right), (4, 1));
        assert_eq!(a.mistaken_for, Some(("b".into(), 2)));
        let pairs = confusions(&answers, 10);
        assert_eq!(
            (pairs[0].predicted.as_str(), pairs[0].questions.len()),
            ("b", 2)
        );
        assert_eq!(pairs.len(), 2);
    }

    fn snapshot(answers: Vec<Answer>) -> Snapshot {
        let none = crate::percentiles(Vec::new());
        Snapshot {
            report: EvalReport {
                queries: answers.len(),
                in_scope_queries: answers.iter().filter(|a| a.in_scope()).count(),
                oos_queries: answers.iter().filter(|a| !a.in_scope()).count(),
                intent_accuracy: 0.5,
                datasource_accuracy: 0.5,
                in_scope_accuracy: 0.5,
                oos_recall: 0.5,
                oos_precision: 0.5,
                threshold: 0.5,
                threshold_source: "configured".into(),
                clarify_rate: 0.0,
                clarify_contains_expected: 0.0,
                in_scope_resolved: 0.5,
                thresholds: (0..=12)
                    .map(|i| crate::ThresholdRow {
                        threshold: 0.30 + 0.05 * i as f32,
                        in_scope_accuracy: 0.5,
                        oos_recall: 0.5,
                        oos_precision: 0.5,
                    })
                    .collect(),
                confused_pairs: Vec::new(),
                latency_ms: none.clone(),
                embedding_latency_ms: none.clone(),
                scoring_latency_ms: none,
                embedding_batch_ms: 0.0,
            },
            answers,
        }
    }

    #[test]
    fn the_page_holds_every_chart_and_runs_no_question() {
        let now = snapshot(vec![
            answer("a", "a", 0.9),
            Answer {
                text: "<script>alert(1)</script>".into(),
                ..answer("a", "b", 0.7)
            },
            answer("oos", "a", 0.2),
        ]);
        let before = snapshot(vec![answer("a", "b", 0.9)]);
        let page = Page {
            title: "eval <x>".into(),
            notes: vec!["data set d.jsonl".into()],
            now: &now,
            before: Some(&before),
            conversation: None,
            multi: None,
        };
        let html = html::render(&page);
        for chart in [
            "risk-coverage",
            "threshold",
            "reliability",
            "template-accuracy",
        ] {
            assert!(html.contains(&format!("data-chart=\"{chart}\"")), "{chart}");
        }
        assert!(!html.contains("<script"), "a question became markup");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(
            !html.contains("http://") && !html.contains("https://"),
            "the page fetches nothing"
        );
        assert!(html.contains("<th>before</th>"));
    }
}
