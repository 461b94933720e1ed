//! Which split of a question explains it best. Every run of adjacent segments is routed
//! (one embedding batch); a split is valid when every part routes with confidence, no
//! part's confidence falls more than `max_part_drop` below the whole question's (such a
//! part is a detail of the whole, not a request of its own: "call an uber | and have it
//! here at 7pm") unless the head is sure of it (`sure_part_probability`), and neighbouring parts ask for different templates (the whole question
//! could answer only one of them). Of the valid splits the one with the most parts wins
//! (a request left inside a longer part goes unanswered), then the surest.
//!
//! Measured on the MixSNIPS dev set against the CLINC150 validation split's single
//! questions (`switchyard eval`): scoring splits by their parts' mean confidence against
//! the whole's split too little (3-intent questions lost a part), and the drop limit
//! halves the false splits on CLINC150 for 1.5 points on MixSNIPS.

use std::collections::HashMap;

use crate::config::OrchestrationConfig;
use switchyard_routing::router::Routing;
use switchyard_routing::session::TemplateRef;

/// A run of segments `[first, end)`.
pub type Span = (usize, usize);

/// What one routing says, as far as choosing a split needs.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanRouting {
    pub template: Option<TemplateRef>,
    /// The best match's confidence (`combined_score`).
    pub confidence: f32,
    /// The best match's calibrated probability, when the index has a head.
    pub probability: Option<f32>,
    /// The best match clears its threshold.
    pub selected: bool,
}

impl SpanRouting {
    pub fn of(routing: &Routing) -> SpanRouting {
        let best = routing.best();
        SpanRouting {
            template: best.map(|m| m.template_ref()),
            confidence: best.map_or(0.0, |m| m.scores.combined_score),
            probability: best.and_then(|m| m.scores.probability),
            selected: routing.selected.is_some(),
        }
    }

    /// Sure enough to be a part: it clears the threshold, or the head is sure of it
    /// although short parts score low cosines ("rate cotton comes to harlem a 2").
    fn confident(&self, config: &OrchestrationConfig) -> bool {
        self.template.is_some()
            && (self.selected
                || (self.probability.unwrap_or(0.0) >= config.part_probability
                    && self.confidence >= config.part_confidence_floor))
    }

    /// A request of its own beside the `whole` question, not a detail of it: not far less
    /// sure than the whole, or one the head is sure of.
    fn stands_beside(&self, whole: &SpanRouting, config: &OrchestrationConfig) -> bool {
        self.confidence >= whole.confidence - config.max_part_drop
            || self.probability.unwrap_or(0.0) >= config.sure_part_probability
    }
}

/// The chosen split and the scores compared.
#[derive(Debug, Clone, PartialEq)]
pub struct Split {
    pub parts: Vec<Span>,
    /// The parts' mean confidence.
    pub score: f32,
    /// The whole question's confidence.
    pub whole_score: f32,
}

/// Every span a split into at most `max_parts` parts can use, the whole excluded.
pub fn spans(segments: usize, max_parts: usize) -> Vec<Span> {
    if segments < 2 || max_parts < 2 {
        return Vec::new();
    }
    let mut spans = Vec::new();
    for first in 0..segments {
        for end in first + 1..=segments {
            let (before, after) = (first > 0, end < segments);
            // A middle span needs a part on each side: at least three parts.
            let needs = 1 + usize::from(before) + usize::from(after);
            if (first, end) != (0, segments) && needs <= max_parts {
                spans.push((first, end));
            }
        }
    }
    spans
}

/// Whether `parts` (in order) split a question whose own routing is `whole`: every part
/// confident and standing beside the whole, neighbours on different templates.
pub fn valid_split(
    whole: &SpanRouting,
    parts: &[&SpanRouting],
    config: &OrchestrationConfig,
) -> bool {
    parts.len() >= 2
        && parts
            .iter()
            .all(|r| r.confident(config) && r.stands_beside(whole, config))
        && parts.windows(2).all(|w| w[0].template != w[1].template)
}

/// The best valid split of `segments` segments, if there is one. `routed` holds every
/// span of [`spans`].
pub fn choose(
    segments: usize,
    whole: &SpanRouting,
    routed: &HashMap<Span, SpanRouting>,
    config: &OrchestrationConfig,
) -> Option<Split> {
    let mut best: Option<Split> = None;
    let mut parts = Vec::new();
    search(
        segments,
        0,
        config.max_parts,
        routed,
        &mut parts,
        &mut |parts: &[Span]| {
            if parts.len() < 2 {
                return;
            }
            let routings: Vec<&SpanRouting> = parts.iter().map(|p| &routed[p]).collect();
            if !valid_split(whole, &routings, config) {
                return;
            }
            let score = routings.iter().map(|r| r.confidence).sum::<f32>() / parts.len() as f32;
            let better = best
                .as_ref()
                .is_none_or(|b| (parts.len(), score) > (b.parts.len(), b.score));
            if better {
                best = Some(Split {
                    parts: parts.to_vec(),
                    score,
                    whole_score: whole.confidence,
                });
            }
        },
    );
    best
}

/// Every way to cut segments `from..` into at most `left` more parts.
fn search(
    segments: usize,
    from: usize,
    left: usize,
    routed: &HashMap<Span, SpanRouting>,
    parts: &mut Vec<Span>,
    visit: &mut dyn FnMut(&[Span]),
) {
    if from == segments {
        visit(parts);
        return;
    }
    if left == 0 {
        return;
    }
    for end in from + 1..=segments {
        if !routed.contains_key(&(from, end)) {
            continue;
        }
        parts.push((from, end));
        search(segments, end, left - 1, routed, parts, visit);
        parts.pop();
    }
}
