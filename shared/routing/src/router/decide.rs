//! Stage 4, the decision: each candidate's confidence and ranking score from its stage
//! scores, the order, and the outcome (execute, clarify, no_match). Pure: no model, no
//! index, so every rule here has a unit test of its own.

use switchyard_index::config::CompositeRetrieval;
use switchyard_index::scoring::{confidence, rank_score, Weights};

use super::routing::{Candidates, Match, Outcome, Ranking, RerankStatus, Reranked, Routing};

/// Order matches best first: declined ones last (visible, never chosen), then by ranking
/// score, then by embedding score, then by datasource and template order.
pub fn order(matches: &mut [Match]) {
    matches.sort_by(|a, b| {
        a.is_declined()
            .cmp(&b.is_declined())
            .then(b.scores.rank_score.total_cmp(&a.scores.rank_score))
            .then(
                b.scores
                    .embedding_score
                    .total_cmp(&a.scores.embedding_score),
            )
            .then(a.datasource_position.cmp(&b.datasource_position))
            .then(a.template_position.cmp(&b.template_position))
    });
}

/// Fold the rerank stage's scores in, score, order, and decide against `threshold` (or the
/// winner's datasource's own, from `datasource_thresholds`).
pub fn decide(
    candidates: Candidates,
    reranked: Reranked,
    threshold: f32,
    retrieval: &CompositeRetrieval,
) -> Routing {
    let Candidates {
        query,
        corrected,
        mut matches,
        adapters_searched,
        timed_out,
        ranking,
        mut timings,
    } = candidates;
    let applied = matches!(reranked.status, RerankStatus::Applied { .. });
    if applied {
        for (m, score) in matches.iter_mut().zip(&reranked.scores) {
            m.scores.rerank_score = Some(*score);
        }
    }
    let weights = Weights::for_stages(retrieval, applied);
    for m in &mut matches {
        m.scores.combined_score = confidence(
            &weights,
            m.scores.embedding_score,
            m.scores.string_similarity_score,
            m.scores.rerank_score,
        );
        m.scores.rank_score = rank_score(
            retrieval,
            m.scores.retrieval_score,
            m.scores.string_similarity_score,
            m.scores.rerank_score,
        );
    }
    order(&mut matches);
    let threshold_of = |m: &Match| {
        retrieval
            .datasource_thresholds
            .get(&m.datasource)
            .copied()
            .unwrap_or(threshold)
    };
    let selected = matches
        .first()
        .filter(|m| !m.is_declined() && m.scores.combined_score >= threshold_of(m))
        .map(|_| 0);
    let clarify = &retrieval.clarify;
    let close = matches.first().map_or(0, |top| {
        matches
            .iter()
            .take(clarify.choices)
            .take_while(|m| {
                !m.is_declined() && top.scores.rank_score - m.scores.rank_score < clarify.margin
            })
            .count()
    });
    // Only the learned ranking is calibrated: its margin means the same on every query.
    let calibrated = ranking == Ranking::Learned;
    let (outcome, choices) = match selected {
        None => (Outcome::NoMatch, 0),
        Some(_) if clarify.enabled && calibrated && close >= 2 => (Outcome::Clarify, close),
        Some(_) => (Outcome::Execute, 0),
    };
    timings.rerank_ms = reranked.took_ms;
    timings.total_ms += reranked.took_ms;
    Routing {
        query,
        corrected,
        matches,
        adapters_searched,
        timed_out,
        selected,
        outcome,
        choices,
        threshold,
        weights,
        rerank: reranked.status,
        ranking,
        timings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::router::routing::{Declined, StageScores, StageTimings};

    fn candidate(template: usize, retrieval_score: f32, embedding: f32) -> Match {
        Match {
            datasource: "ds".into(),
            template_id: format!("t{template}"),
            datasource_position: 0,
            template_position: template,
            scores: StageScores {
                embedding_score: embedding,
                learned_score: None,
                keyword_score: None,
                opening_score: None,
                rerank_score: None,
                string_similarity_score: None,
                retrieval_score,
                rank_score: retrieval_score,
                combined_score: embedding,
                probability: None,
            },
            declined_by: None,
            context_probability: None,
        }
    }

    fn candidates(matches: Vec<Match>, ranking: Ranking) -> Candidates {
        Candidates {
            query: "q".into(),
            corrected: None,
            matches,
            adapters_searched: vec!["ds".into()],
            timed_out: vec![],
            ranking,
            timings: StageTimings::default(),
        }
    }

    fn not_reranked() -> Reranked {
        Reranked {
            status: RerankStatus::Disabled,
            scores: vec![],
            took_ms: 0.0,
        }
    }

    fn retrieval() -> CompositeRetrieval {
        let mut r = CompositeRetrieval::default();
        r.string_similarity.enabled = false;
        r
    }

    #[test]
    fn the_best_above_the_threshold_executes() {
        let found = candidates(
            vec![candidate(0, 0.5, 0.5), candidate(1, 0.9, 0.9)],
            Ranking::Similarity,
        );
        let routing = decide(found, not_reranked(), 0.6, &retrieval());
        assert_eq!(routing.outcome, Outcome::Execute);
        assert_eq!(routing.selected_match().unwrap().template_id, "t1");
        assert_eq!(routing.weights.embedding_weight, 1.0);
    }

    #[test]
    fn below_the_threshold_is_no_match() {
        let found = candidates(vec![candidate(0, 0.5, 0.5)], Ranking::Similarity);
        let routing = decide(found, not_reranked(), 0.6, &retrieval());
        assert_eq!(routing.outcome, Outcome::NoMatch);
        assert_eq!(routing.reason(), "best_confidence_below_threshold");
    }

    #[test]
    fn declined_matches_go_last_and_are_never_chosen() {
        let mut declined = candidate(0, 0.99, 0.99);
        declined.declined_by = Some(Declined {
            negative_example: "not this".into(),
            similarity: 0.9,
            template_similarity: 0.8,
        });
        let found = candidates(vec![declined, candidate(1, 0.3, 0.3)], Ranking::Similarity);
        let routing = decide(found, not_reranked(), 0.5, &retrieval());
        assert_eq!(routing.matches[1].template_id, "t0");
        assert_eq!(routing.outcome, Outcome::NoMatch);
        assert_eq!(routing.reason(), "declined_by_negative_example");
    }

    #[test]
    fn ties_go_to_the_higher_embedding_then_the_earlier_template() {
        let found = candidates(
            vec![
                candidate(2, 0.7, 0.7),
                candidate(1, 0.7, 0.7),
                candidate(3, 0.7, 0.71),
            ],
            Ranking::Similarity,
        );
        let routing = decide(found, not_reranked(), 0.1, &retrieval());
        let order: Vec<&str> = routing
            .matches
            .iter()
            .map(|m| m.template_id.as_str())
            .collect();
        assert_eq!(order, ["t3", "t1", "t2"]);
    }

    #[test]
    fn close_learned_candidates_ask_to_clarify_but_similarity_ones_do_not() {
        let mut r = retrieval();
        r.clarify.enabled = true;
        r.clarify.margin = 0.1;
        r.clarify.choices = 3;
        let close = || {
            vec![
                candidate(0, 0.80, 0.8),
                candidate(1, 0.75, 0.8),
                candidate(2, 0.2, 0.8),
            ]
        };
        let routing = decide(
            candidates(close(), Ranking::Learned),
            not_reranked(),
            0.5,
            &r,
        );
        assert_eq!((routing.outcome, routing.choices), (Outcome::Clarify, 2));
        assert_eq!(routing.clarify_choices().len(), 2);
        let routing = decide(
            candidates(close(), Ranking::Similarity),
            not_reranked(),
            0.5,
            &r,
        );
        assert_eq!(routing.outcome, Outcome::Execute);
    }

    #[test]
    fn applied_rerank_scores_reorder_and_enter_the_confidence() {
        let mut r = retrieval();
        r.reranking.weight = 1.0;
        let found = candidates(
            vec![candidate(0, 0.80, 0.8), candidate(1, 0.78, 0.78)],
            Ranking::Similarity,
        );
        let reranked = Reranked {
            status: RerankStatus::Applied {
                reranker: "test".into(),
                candidates: 2,
                cached: false,
            },
            scores: vec![0.1, 0.9],
            took_ms: 2.0,
        };
        let routing = decide(found, reranked, 0.1, &r);
        assert_eq!(routing.matches[0].template_id, "t1");
        assert_eq!(routing.matches[0].scores.rerank_score, Some(0.9));
        assert!(routing.weights.rerank_weight > 0.0);
        assert_eq!(routing.timings.rerank_ms, 2.0);
    }
}
