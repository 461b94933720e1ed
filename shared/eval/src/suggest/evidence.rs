//! What the traffic says about the catalog: questions a caller confirmed or corrected
//! (explicit feedback), questions re-asked in other words (implicit feedback), questions
//! that should have had no answer, and questions nothing answered.

use std::collections::BTreeMap;

use switchyard_catalog::template::Catalog;
use switchyard_core::feedback::{Decision, Expected, FeedbackRecord};
use switchyard_routing::router::Outcome;

use crate::error::EvalError;

/// How far above the threshold an answer nobody judged is still unsure: a question the
/// catalog lacks a template for is often answered by a neighbour, just above the threshold.
const UNSURE: f32 = 0.1;

/// One record and where it came from (`line N` of a file, or a table's request id).
pub struct Traffic {
    pub at: String,
    pub record: FeedbackRecord,
}

/// A question that should be one more example of a template.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    pub datasource: String,
    pub template_id: String,
    pub text: String,
    /// The evidence, in words (written beside the line in the patch).
    pub why: String,
    /// For a re-asked question: the rephrasing that was answered (it must mean the same).
    pub rephrased_as: Option<String>,
    /// For an answer a caller confirmed: its confidence above the threshold (the nearer
    /// the threshold, the more the example teaches). None for a correction or a
    /// rephrasing, which teach most.
    pub confirmed_margin: Option<f32>,
}

/// A question a datasource answered that none of the catalog's templates should have.
#[derive(Debug, Clone, PartialEq)]
pub struct Negative {
    pub datasource: String,
    pub text: String,
    pub why: String,
}

#[derive(Debug, Default)]
pub struct Evidence {
    pub examples: Vec<Example>,
    pub negatives: Vec<Negative>,
    /// `no_match` questions nobody said anything about: candidates for new templates.
    pub misses: Vec<String>,
    /// Questions nobody judged that were asked to clarify, or answered within `UNSURE`
    /// of the threshold: grouped with the misses, in case they too want a template.
    pub unsure: Vec<String>,
    /// Records without the question's text (`sessions.store_text` off), which teach nothing.
    pub without_text: usize,
}

/// Gather the evidence of `traffic` about `catalog`. A question re-asked within
/// `reask_seconds` in the same session, whose rephrasing was answered by another template
/// and not re-asked in turn, is taken as an example of that template. Refused when a
/// record names a template the catalog lacks (the catalog changed since, or a typo).
pub fn gather(
    traffic: &[Traffic],
    catalog: &Catalog,
    reask_seconds: i64,
) -> Result<Evidence, EvalError> {
    let known = |datasource: &str, template_id: &str| {
        catalog
            .datasource(datasource)
            .is_some_and(|d| d.templates.iter().any(|t| t.id == template_id))
    };
    let mut evidence = Evidence::default();
    for item in traffic {
        let decision = &item.record.decision;
        if let (Some(d), Some(t)) = (&decision.datasource, &decision.template_id) {
            if !known(d, t) {
                return Err(EvalError::Traffic {
                    at: item.at.clone(),
                    message: format!(
                        "decision names template `{d}/{t}`, which the catalog does not have (was it built from another catalog?)"
                    ),
                });
            }
        }
        let expected = item
            .record
            .feedback
            .as_ref()
            .and_then(|f| f.expected_template.as_deref());
        let expected = match expected.map(|e| (e, Expected::parse(e))) {
            None => None,
            Some((text, None)) => {
                return Err(EvalError::Traffic {
                    at: item.at.clone(),
                    message: format!(
                        "expected_template: `{text}` is not `<datasource>/<template_id>` or `none`"
                    ),
                })
            }
            Some((
                _,
                Some(Expected::Template {
                    datasource,
                    template_id,
                }),
            )) if !known(datasource, template_id) => {
                return Err(EvalError::Traffic {
                    at: item.at.clone(),
                    message: format!(
                    "expected_template: the catalog has no template `{datasource}/{template_id}`"
                ),
                })
            }
            Some((_, Some(expected))) => Some(expected),
        };
        let Some(text) = decision.query.clone() else {
            evidence.without_text += 1;
            continue;
        };
        let request = &decision.request_id;
        let executed = decision.outcome == Outcome::Execute;
        match expected {
            Some(Expected::Template {
                datasource,
                template_id,
            }) => {
                let right = decision.template_id.as_deref() == Some(template_id)
                    && decision.datasource.as_deref() == Some(datasource);
                evidence.examples.push(match right && executed {
                    true => confirmed(decision, datasource, template_id, text),
                    false => Example {
                        datasource: datasource.to_owned(),
                        template_id: template_id.to_owned(),
                        text,
                        why: format!(
                            "feedback on {request}: expected here, was {}",
                            outcome_words(decision.outcome, decision.template_id.as_deref())
                        ),
                        rephrased_as: None,
                        confirmed_margin: None,
                    },
                });
            }
            Some(Expected::None) => {
                if let (true, Some(datasource)) = (executed, &decision.datasource) {
                    evidence.negatives.push(Negative {
                        datasource: datasource.clone(),
                        text,
                        why: format!(
                            "feedback on {request}: no template should answer it, `{}` did",
                            decision.template_id.as_deref().unwrap_or("?")
                        ),
                    });
                }
            }
            None if decision.outcome == Outcome::NoMatch && item.record.feedback.is_none() => {
                evidence.misses.push(text)
            }
            None if item.record.feedback.is_none()
                && (decision.outcome == Outcome::Clarify
                    || decision.confidence < decision.threshold + UNSURE) =>
            {
                evidence.unsure.push(text)
            }
            None => {
                // A right answer the caller confirmed: an example of how people ask for
                // that template (the suggestion ranks them, least confident first).
                let confirmed_right = executed && item.record.reward.is_some_and(|r| r >= 0.5);
                if let (true, Some(d), Some(t)) =
                    (confirmed_right, &decision.datasource, &decision.template_id)
                {
                    evidence.examples.push(confirmed(decision, d, t, text));
                }
            }
        }
    }
    let rephrased = reasked(traffic, reask_seconds);
    // A question rephrased and then answered is not one nothing answers.
    evidence
        .misses
        .retain(|miss| !rephrased.iter().any(|e| &e.text == miss));
    evidence
        .unsure
        .retain(|text| !rephrased.iter().any(|e| &e.text == text));
    evidence.examples.extend(rephrased);
    Ok(evidence)
}

fn confirmed(decision: &Decision, datasource: &str, template_id: &str, text: String) -> Example {
    Example {
        datasource: datasource.to_owned(),
        template_id: template_id.to_owned(),
        text,
        why: format!(
            "confirmed by feedback on {}, answered at confidence {:.2} (threshold {:.2})",
            decision.request_id, decision.confidence, decision.threshold
        ),
        rephrased_as: None,
        confirmed_margin: Some(decision.confidence - decision.threshold),
    }
}

fn outcome_words(outcome: Outcome, template: Option<&str>) -> String {
    match (outcome, template) {
        (Outcome::Execute, Some(t)) => format!("answered by `{t}`"),
        (Outcome::Clarify, _) => "asked to clarify".to_owned(),
        _ => "not answered (no_match)".to_owned(),
    }
}

/// Implicit feedback: in a session, a question followed within `window` seconds by
/// another that a different template answered, itself not followed in turn by a third
/// answered elsewhere (the user stopped rephrasing). The first question is then an
/// example of the second's template, if the two mean the same (checked by the caller).
fn reasked(traffic: &[Traffic], window: i64) -> Vec<Example> {
    let mut sessions: BTreeMap<&str, Vec<&FeedbackRecord>> = BTreeMap::new();
    for item in traffic {
        if let Some(session) = item.record.decision.session_id.as_deref() {
            sessions.entry(session).or_default().push(&item.record);
        }
    }
    let mut examples = Vec::new();
    for turns in sessions.values_mut() {
        turns.sort_by_key(|r| r.decision.at);
        for (i, pair) in turns.windows(2).enumerate() {
            let (first, then) = (&pair[0].decision, &pair[1].decision);
            let moved = |a: &Decision, b: &Decision| {
                b.at - a.at <= window
                    && b.outcome == Outcome::Execute
                    && (a.outcome != Outcome::Execute
                        || (a.datasource.as_ref(), a.template_id.as_ref())
                            != (b.datasource.as_ref(), b.template_id.as_ref()))
            };
            if !moved(first, then) {
                continue;
            }
            let settled = turns
                .get(i + 2)
                .is_none_or(|next| !moved(then, &next.decision));
            let disowned = pair[1]
                .feedback
                .as_ref()
                .is_some_and(|f| f.agent_success == Some(false) || f.expected_template.is_some());
            if let (true, false, Some(text), Some(again), Some(d), Some(t)) = (
                settled,
                disowned,
                &first.query,
                &then.query,
                &then.datasource,
                &then.template_id,
            ) {
                examples.push(Example {
                    datasource: d.clone(),
                    template_id: t.clone(),
                    text: text.clone(),
                    why: format!(
                        "re-asked {} s later as \"{again}\" ({}), answered and not re-asked",
                        then.at - first.at,
                        then.request_id
                    ),
                    rephrased_as: Some(again.clone()),
                    confirmed_margin: None,
                });
            }
        }
    }
    examples
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use switchyard_core::feedback::{judged, Feedback};

    use super::*;

    fn catalog() -> Catalog {
        Catalog::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo"))
            .expect("the demo catalog loads")
    }

    fn decision(n: i64, routed: Option<(&str, &str)>, outcome: Outcome, text: &str) -> Decision {
        Decision {
            request_id: format!("r{n}"),
            datasource: routed.map(|(d, _)| d.to_owned()),
            template_id: routed.map(|(_, t)| t.to_owned()),
            outcome,
            confidence: 0.5,
            margin: None,
            threshold: 0.4,
            processing_ms: 1.0,
            at: n,
            query: Some(text.to_owned()),
            session_id: Some("s".to_owned()),
        }
    }

    fn plain(decision: Decision) -> Traffic {
        Traffic {
            at: format!("record {}", decision.request_id),
            record: FeedbackRecord {
                decision,
                feedback: None,
                reward: None,
            },
        }
    }

    #[test]
    fn corrections_rephrasings_and_misses_become_evidence() {
        let catalog = catalog();
        let ds = &catalog.datasources[0];
        let (a, b) = (ds.templates[0].id.as_str(), ds.templates[1].id.as_str());
        let name = ds.name();
        let corrected = judged(
            decision(1, Some((name, a)), Outcome::Execute, "first question"),
            Feedback {
                agent_success: Some(false),
                expected_template: Some(format!("{name}/{b}")),
                ..Feedback::default()
            },
        );
        let traffic = vec![
            Traffic {
                at: "record 1".into(),
                record: corrected,
            },
            // Not answered, re-asked 5 s later and answered by `a`, then left alone.
            plain(decision(100, None, Outcome::NoMatch, "said one way")),
            plain(decision(
                105,
                Some((name, a)),
                Outcome::Execute,
                "said another way",
            )),
            plain(decision(
                1000,
                None,
                Outcome::NoMatch,
                "nothing answers this",
            )),
            plain(Decision {
                confidence: 0.45,
                ..decision(2000, Some((name, a)), Outcome::Execute, "barely answered")
            }),
            plain(Decision {
                confidence: 0.9,
                ..decision(3000, Some((name, a)), Outcome::Execute, "surely answered")
            }),
            plain(decision(
                4000,
                Some((name, a)),
                Outcome::Clarify,
                "which one?",
            )),
            // A caller confirmed a confident answer: an example, ranked by its margin.
            Traffic {
                at: "record 5000".into(),
                record: judged(
                    Decision {
                        confidence: 0.9,
                        ..decision(5000, Some((name, a)), Outcome::Execute, "right, surely")
                    },
                    Feedback {
                        agent_success: Some(true),
                        expected_template: Some(format!("{name}/{a}")),
                        ..Feedback::default()
                    },
                ),
            },
        ];
        let evidence = gather(&traffic, &catalog, 60).unwrap();
        let pairs: Vec<(&str, &str)> = evidence
            .examples
            .iter()
            .map(|e| (e.template_id.as_str(), e.text.as_str()))
            .collect();
        assert!(pairs.contains(&(b, "first question")), "{pairs:?}");
        assert!(pairs.contains(&(a, "said one way")), "{pairs:?}");
        assert!(pairs.contains(&(a, "right, surely")), "{pairs:?}");
        assert_eq!(pairs.len(), 3, "{pairs:?}");
        let margins: Vec<Option<f32>> = evidence
            .examples
            .iter()
            .map(|e| e.confirmed_margin)
            .collect();
        assert!(margins[0].is_none(), "a correction is no confirmation");
        assert!(
            margins
                .iter()
                .any(|m| m.is_some_and(|m| (m - 0.5).abs() < 1e-6)),
            "{margins:?}"
        );
        // The re-asked question was unanswered, not a miss nobody spoke about: the
        // rephrasing says what it meant. The lone one is a miss.
        assert_eq!(evidence.misses, vec!["nothing answers this".to_owned()]);
        // Unjudged answers just above the threshold, and clarify questions, are unsure;
        // a confident answer is not.
        for text in ["barely answered", "which one?"] {
            assert!(
                evidence.unsure.iter().any(|u| u == text),
                "{:?}",
                evidence.unsure
            );
        }
        assert!(!evidence.unsure.iter().any(|u| u == "surely answered"));
    }

    #[test]
    fn a_record_naming_a_template_the_catalog_lacks_is_refused_by_position() {
        let catalog = catalog();
        let mut record = plain(decision(
            7,
            Some(("nowhere", "nothing")),
            Outcome::Execute,
            "q",
        ));
        record.at = "feedback.jsonl record 3".into();
        let error = gather(&[record], &catalog, 60).unwrap_err().to_string();
        assert!(
            error.contains("feedback.jsonl record 3") && error.contains("nowhere/nothing"),
            "{error}"
        );
        let name = catalog.datasources[0].name().to_owned();
        let typo = judged(
            decision(8, None, Outcome::NoMatch, "q"),
            Feedback {
                expected_template: Some(format!("{name}/no_such_template")),
                ..Feedback::default()
            },
        );
        let error = gather(
            &[Traffic {
                at: "record 9".into(),
                record: typo,
            }],
            &catalog,
            60,
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("record 9") && error.contains("no_such_template"),
            "{error}"
        );
    }
}
