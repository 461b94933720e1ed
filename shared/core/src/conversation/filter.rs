//! The conversation's filter: one step of the decoding over templates (the prior from
//! the previous belief, moved the way conversations move, times this turn's evidence), and
//! the evidence itself, from the turn's routings.

use std::collections::HashMap;

use switchyard_routing::config::{ContextConfig, Decoding};
use switchyard_routing::router::{Match, Router, Routing};
use switchyard_routing::session::{TemplateRef, Weighted};

use super::texts::AssistantTurn;

/// One template's evidence in this turn.
pub(super) struct Evidence {
    pub(super) template: TemplateRef,
    pub(super) probability: f32,
    /// The template's probability in the routing of "what the assistant said + this turn".
    pub(super) said: Option<f32>,
    /// ... and in the routing of what the assistant said alone (what it offered; 0 without).
    pub(super) offered: f32,
    pub(super) action: bool,
}

/// What the forward filter's prior is made of.
pub(super) struct Prior<'a> {
    /// The previous belief (may hold only its likeliest templates) ...
    pub(super) previous: &'a [Weighted],
    /// ... and its weight.
    pub(super) weight: f32,
    pub(super) preferred: Option<&'a str>,
    /// Each evidence template's topic factor (missing ones are 1).
    pub(super) tilts: &'a [f32],
    /// The share of the prior that what the assistant offered takes (`Evidence::offered`).
    pub(super) offer_weight: f32,
}

/// One step of the decoding: the prior (from each previous template, the best path's or
/// all paths' weight, as `config.decoding` says), and this turn's evidence at `power` →
/// the new belief over the evidence's templates, likeliest first.
pub(super) fn follow(
    config: &ContextConfig,
    prior: Prior<'_>,
    evidence: &[Evidence],
    power: f32,
) -> Vec<Weighted> {
    let Prior {
        previous,
        weight,
        preferred,
        tilts,
        offer_weight,
    } = prior;
    let n = evidence.len().max(1) as f32;
    let kept: f32 = previous.iter().map(|b| b.probability).sum::<f32>().min(1.0);
    let actions: HashMap<(&str, &str), bool> = evidence
        .iter()
        .map(|e| {
            (
                (
                    e.template.datasource.as_str(),
                    e.template.template_id.as_str(),
                ),
                e.action,
            )
        })
        .collect();
    let mut posterior: Vec<Weighted> = evidence
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let to = &e.template;
            let paths = previous.iter().map(|b| {
                let from_action = actions
                    .get(&(b.datasource.as_str(), b.template_id.as_str()))
                    .copied()
                    .unwrap_or(false);
                let step = if b.datasource == to.datasource && b.template_id == to.template_id {
                    config.stay
                } else if b.datasource == to.datasource {
                    if !from_action && e.action {
                        config.lookup_to_action
                    } else {
                        config.same_datasource
                    }
                } else {
                    config.other_datasource
                };
                b.probability * step
            });
            let moved = match config.decoding {
                Decoding::BestPath => paths.fold(0.0, f32::max),
                Decoding::Marginal => paths.sum::<f32>(),
            } + (1.0 - kept) / n;
            let mut prior = weight * moved + (1.0 - weight) / n;
            if offer_weight > 0.0 {
                prior = (1.0 - offer_weight) * prior + offer_weight * e.offered;
            }
            if preferred == Some(to.datasource.as_str()) {
                prior *= config.preference_weight;
            }
            prior *= tilts.get(i).copied().unwrap_or(1.0);
            let mut likelihood = (e.probability.max(0.0) + config.evidence_floor).powf(power);
            if let Some(said) = e.said {
                likelihood *= (said.max(0.0) + config.evidence_floor).powf(config.assistant_power);
            }
            Weighted {
                datasource: to.datasource.clone(),
                template_id: to.template_id.clone(),
                probability: prior * likelihood,
            }
        })
        .collect();
    let total: f32 = posterior.iter().map(|w| w.probability).sum();
    if total > 0.0 {
        posterior.iter_mut().for_each(|w| w.probability /= total);
    }
    posterior.sort_by(|a, b| b.probability.total_cmp(&a.probability));
    posterior
}

/// How much this turn's evidence counts: `evidence_power`, scaled down linearly with its
/// `informativeness` (`ContextConfig::informativeness`; never quite to nothing).
pub(super) fn evidence_power(config: &ContextConfig, informativeness: f32) -> f32 {
    config.evidence_power * informativeness.clamp(0.05, 1.0)
}

/// Each open template's probability in this turn: the question's own, blended with the
/// joint routing's at up to `previous_question_weight`. The joint text leans toward the
/// previous template, which the filter's prior already favours: it weighs in full for a
/// turn that says little alone ("What's their address?") and fades to nothing for one
/// that is sure of itself ("Could you schedule a visit there on the 4th?").
/// The routing of "what the assistant said + this turn" is a second, independent piece of
/// evidence (`Evidence::said`, raised to `assistant_power` in the filter): a sure one moves
/// the belief past the pull to stay, an unsure one hardly counts. The templates are those
/// of every routing, the assistant's text alone included (an offered template is then in
/// the belief even when the turn's own candidates miss it).
pub(super) fn evidence(
    router: &Router,
    own: &Routing,
    joint: Option<&Routing>,
    assistant: Option<AssistantTurn<'_>>,
    config: &ContextConfig,
) -> Vec<Evidence> {
    let confidence = own.best().map_or(0.0, |m| m.scores.combined_score);
    let informative = config
        .informativeness(confidence, own.threshold)
        .clamp(0.0, 1.0);
    let w = joint.map_or(0.0, |_| {
        config.previous_question_weight * (1.0 - informative)
    });
    let own_open = open_matches(own);
    let joint_open = joint.map(open_matches).unwrap_or_default();
    let with_turn_open = assistant.map(|a| open_matches(a.with_turn));
    let alone_open = assistant.map(|a| open_matches(a.alone)).unwrap_or_default();
    let p = |matches: &[Match], m: &Match| {
        matches
            .iter()
            .find(|o| same(o, m))
            .map_or(0.0, probability_of)
    };
    let mut by_template: Vec<&Match> = Vec::new();
    let all = own_open
        .iter()
        .chain(&joint_open)
        .chain(with_turn_open.iter().flatten())
        .chain(&alone_open);
    for m in all {
        if !by_template.iter().any(|k| same(k, m)) {
            by_template.push(m);
        }
    }
    by_template
        .into_iter()
        .map(|m| Evidence {
            template: m.template_ref(),
            probability: (1.0 - w) * p(&own_open, m) + w * p(&joint_open, m),
            said: with_turn_open.as_deref().map(|open| p(open, m)),
            offered: p(&alone_open, m),
            action: is_action(router, m, &config.action_verbs),
        })
        .collect()
}

/// A routing's matches that no negative example declined.
fn open_matches(routing: &Routing) -> Vec<Match> {
    routing
        .matches
        .iter()
        .filter(|m| !m.is_declined())
        .cloned()
        .collect()
}

fn same(a: &Match, b: &Match) -> bool {
    a.datasource == b.datasource && a.template_id == b.template_id
}

/// The learned head's calibrated probability, or the confidence without a head.
pub(super) fn probability_of(m: &Match) -> f32 {
    m.scores
        .probability
        .unwrap_or(m.scores.combined_score)
        .max(0.0)
}

/// A template whose description starts with an action verb ("Reserve a table ...").
fn is_action(router: &Router, m: &Match, verbs: &[String]) -> bool {
    let (_, template) = router.template(m);
    let first = template
        .description
        .split(|c: char| !c.is_alphanumeric())
        .find(|w| !w.is_empty())
        .unwrap_or("")
        .to_lowercase();
    verbs.contains(&first)
}
