//! `switchyard suggest`: what the traffic's decisions and feedback say the catalog lacks,
//! as lines for a person to review. New examples for templates (corrections, clarify
//! answers, questions re-asked in other words, then confirmed answers, least confident
//! first, up to a cap per template), negative examples
//! for datasources that answered what nothing should have, and candidates for new
//! templates (unanswered questions grouped by meaning, with the nearest templates).
//! Nothing changes live: the patch is reviewed and applied by a person.

pub mod cluster;
pub mod evidence;
pub mod patch;

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;
use switchyard_catalog::auth::Access;
use switchyard_core::feedback::{judged, Decision, Feedback, FeedbackRecord};
use switchyard_routing::router::{Outcome, Router};
use switchyard_vectors::embed::dot;

use crate::error::Result;
use crate::LabeledQuery;
use evidence::{Evidence, Example, Negative};

/// The few settings of a suggestion run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// A question re-asked within this many seconds in the same session is a rephrasing.
    pub reask_seconds: i64,
    /// Cosine a rephrasing must have with the question it replaces to mean the same.
    pub same_meaning: f32,
    /// Average cosine within a group of unanswered or unsure questions.
    pub cluster_similarity: f32,
    /// Questions a group needs to be a new-template candidate.
    pub min_cluster: usize,
    /// New examples kept per template: corrections and rephrasings first (in the order
    /// given), then confirmed answers, least confident first.
    pub max_per_template: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            reask_seconds: 60,
            same_meaning: 0.5,
            cluster_similarity: 0.45,
            min_cluster: 5,
            max_per_template: 10,
        }
    }
}

/// A group of unanswered or unsure questions that may want a template of its own (or,
/// when its nearest template is the right one, more examples there).
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    pub size: usize,
    /// Of them, the questions nothing answered (the others were answered unsure).
    pub unanswered: usize,
    /// Every question of the group, the nearest its centre first.
    pub questions: Vec<String>,
    /// The existing templates nearest the group's centre, `datasource/template` and score.
    pub nearest: Vec<(String, f32)>,
}

#[derive(Debug, Default)]
pub struct Suggestions {
    pub examples: Vec<Example>,
    pub negatives: Vec<Negative>,
    pub candidates: Vec<Candidate>,
    /// Evidence left out: already an example, over the per-template cap, or a rephrasing
    /// that does not mean the same.
    pub left_out: usize,
    pub without_text: usize,
}

/// Turn `evidence` into suggestions for `router`'s catalog.
pub fn suggest(router: &Router, evidence: Evidence, settings: &Settings) -> Result<Suggestions> {
    let catalog = &router.index().catalog;
    let mut out = Suggestions {
        without_text: evidence.without_text,
        ..Suggestions::default()
    };
    let mut seen: HashSet<(String, String)> = HashSet::new();
    for datasource in &catalog.datasources {
        for template in &datasource.templates {
            for example in &template.nl_examples {
                seen.insert((template.id.clone(), example.to_lowercase()));
            }
        }
        for negative in &datasource.spec.negative_examples {
            seen.insert((datasource.name().to_owned(), negative.to_lowercase()));
        }
    }
    let mut per_template: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut examples = evidence.examples;
    // Stable: corrections and rephrasings keep their order ahead of every confirmation.
    examples.sort_by(|a, b| {
        let rank = |e: &Example| e.confirmed_margin.unwrap_or(f32::NEG_INFINITY);
        rank(a).total_cmp(&rank(b))
    });
    for example in examples {
        if let Some(again) = &example.rephrased_as {
            let vectors = router.embedder().embed(&[&example.text, again])?;
            if dot(&vectors[0], &vectors[1]) < settings.same_meaning {
                out.left_out += 1;
                continue;
            }
        }
        let key = (example.datasource.clone(), example.template_id.clone());
        let count = per_template.entry(key).or_default();
        if *count >= settings.max_per_template
            || !seen.insert((example.template_id.clone(), example.text.to_lowercase()))
        {
            out.left_out += 1;
            continue;
        }
        *count += 1;
        out.examples.push(example);
    }
    for negative in evidence.negatives {
        if seen.insert((negative.datasource.clone(), negative.text.to_lowercase())) {
            out.negatives.push(negative);
        } else {
            out.left_out += 1;
        }
    }
    out.candidates = candidates(router, &evidence.misses, &evidence.unsure, settings)?;
    Ok(out)
}

/// Groups of the unanswered and the unsure questions together; each group says how many
/// of its questions were left unanswered.
fn candidates(
    router: &Router,
    misses: &[String],
    unsure: &[String],
    settings: &Settings,
) -> Result<Vec<Candidate>> {
    let pool: Vec<&String> = misses.iter().chain(unsure).collect();
    if pool.is_empty() {
        return Ok(Vec::new());
    }
    let texts: Vec<&str> = pool.iter().map(|t| t.as_str()).collect();
    let vectors = router.embedder().embed(&texts)?;
    let groups = cluster::clusters(&vectors, settings.cluster_similarity, settings.min_cluster);
    let mut found = Vec::new();
    for group in groups {
        let centre = cluster::centroid(&vectors, &group);
        let routing = router.route_vector(pool[group[0]], &centre, &Access::All)?;
        found.push(Candidate {
            size: group.len(),
            unanswered: group.iter().filter(|&&i| i < misses.len()).count(),
            questions: group.iter().map(|&i| pool[i].clone()).collect(),
            nearest: routing
                .matches
                .iter()
                .take(3)
                .map(|m| {
                    (
                        format!("{}/{}", m.datasource, m.template_id),
                        m.scores.combined_score,
                    )
                })
                .collect(),
        });
    }
    Ok(found)
}

/// Traffic simulated from a labelled set: each question routed as the router would, and,
/// for one question in `judge_every`, the feedback of a judge who knows the label (the
/// expected template, or `none` for an out-of-scope question, and whether the answer was
/// right). Session-less; the decisions' `at` is the question's position.
pub fn judged_traffic(
    router: &Router,
    queries: &[LabeledQuery],
    vectors: &[Vec<f32>],
    judge_every: usize,
) -> Result<Vec<FeedbackRecord>> {
    let mut records = Vec::with_capacity(queries.len());
    for (i, (query, vector)) in queries.iter().zip(vectors).enumerate() {
        let routing = router.route_vector(&query.text, vector, &Access::All)?;
        let decision = Decision::of(
            &routing,
            &format!("traffic-{i}"),
            0.0,
            i as i64,
            Some((&query.text, None)),
        );
        if judge_every == 0 || i % judge_every != 0 {
            records.push(FeedbackRecord {
                decision,
                feedback: None,
                reward: None,
            });
            continue;
        }
        let expected = match (&query.domain, query.in_scope()) {
            (Some(domain), true) => format!("{domain}/{}", query.intent),
            _ => "none".to_owned(),
        };
        let right = match query.in_scope() {
            true => {
                decision.outcome == Outcome::Execute
                    && decision.template_id.as_deref() == Some(query.intent.as_str())
            }
            false => decision.outcome != Outcome::Execute,
        };
        let feedback = Feedback {
            agent_success: Some(right),
            expected_template: Some(expected),
            ..Feedback::default()
        };
        records.push(judged(decision, feedback));
    }
    Ok(records)
}
