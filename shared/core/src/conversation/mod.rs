//! Conversations: which template a turn means, given the turns before it.
//!
//! Two hypotheses compete. The *turn* hypothesis is the routing of the question alone.
//! The *context* hypothesis is a decoding over templates, as in a hidden Markov model: the
//! belief after the previous turn, moved the way conversations move (mostly they
//! stay on a template; from a lookup they go on to an action of the same datasource; rarely
//! elsewhere), faded by the minutes since, tilted toward a datasource the session keeps
//! using, then multiplied by this turn's own evidence (the routing probabilities of the
//! question, and of the previous question with it). A clear switch ("Now what's the weather
//! in Paris?") carries strong evidence and moves the belief; "Sure, that is great." carries
//! almost none and leaves it where it was. A template's belief sums every sequence of
//! templates ending on it (`decoding: marginal`, the forward filter), or is the likeliest
//! one's (`best_path`, Viterbi's recursion: what re-decoding all the session's turns at
//! every turn gives for the turn at hand, at a fixed cost per turn).
//!
//! What the assistant said just before the turn counts twice. Its text with the turn's
//! ("Would you like to reserve a table? Yes, please.") is routed as further evidence, which
//! weighs most when the turn says little alone; and when it ends with an offer, what its
//! text alone routes to takes a share of the prior: an acceptance lands on the offered
//! template, a clear "no thanks, what is 15% of 200" still routes away on its own evidence.
//!
//! Before the filter, a turn answering a pending question is resolved directly: a pick
//! among a `clarify` answer's choices ("the second one", "yes, the balance"). A turn after
//! `needs_clarification` starts from the pending template with full weight, so the missing
//! parameter lands there unless the turn clearly asks for something else.
//!
//! Pure: turns and routings in, a routing out. The service and `eval` both run it.

use std::collections::HashMap;

use serde_json::{Map, Value};

use switchyard_catalog::template::Template;
use switchyard_routing::config::{ContextConfig, SessionsConfig};
use switchyard_routing::router::{Match, Outcome, Router, Routing};
use switchyard_routing::session::{
    AssistantReport, ContextReport, ContextUsed, TemplateRef, Turn, TurnOutcome, Weighted,
};
use switchyard_routing::topics::Topics;
use switchyard_routing::transitions::Transition;
use switchyard_text::params::extract;

mod acknowledgement;
mod alone;
mod choices;
mod filter;
mod restate;
mod texts;

use alone::self_contained;
use choices::{offer, pick_choice, select};
use filter::{evidence, evidence_power, follow, probability_of, Prior};
use restate::{reads_a_value, restated};

pub use acknowledgement::{acknowledgement_reply, only_acknowledges};
pub use alone::stands_alone;
pub use texts::{
    asked_text, assistant_question, assistant_text, continues, holds_cue, joint_question,
    offer_text, opens_with, refers_back, AssistantTurn, ContextTexts, Said, FRAGMENT_WORDS,
    MAX_ASSISTANT_CHARS,
};

/// A turn routed in its conversation: the routing that stands (the turn's own, or one the
/// conversation decided anew from it), what the session contributed, and the belief to
/// keep with the turn.
#[derive(Debug, Clone)]
pub struct Contextualized {
    pub routing: Routing,
    pub report: ContextReport,
    pub belief: Vec<Weighted>,
    /// Where the conversation went from the previous turn, when this turn was sure of
    /// itself alone and the previous one executed: a label for the deployment's rates.
    pub transition: Option<Transition>,
}

/// Route a turn with its session: `own` is the question's routing, `joint` the routing of
/// the previous question with it, `assistant` the routings of what the assistant said
/// before it, `turns` the session's turns within the window, oldest first. The routing is
/// `own`, possibly re-decided; a picked clarify choice also gets the question it clarifies
/// prepended to `query`, the text the adapter reads its parameters from. `sessions` is
/// the configuration's section (its `context` and `topics`).
#[allow(clippy::too_many_arguments)]
pub fn contextualize(
    router: &Router,
    sessions: &SessionsConfig,
    mut own: Routing,
    joint: Option<&Routing>,
    assistant: Option<AssistantTurn<'_>>,
    turns: &[Turn],
    topics: Option<&Topics>,
    now: i64,
) -> Contextualized {
    let config = &sessions.context;
    let previous = turns.last();
    let continues = continues(&own.query, &config.continuation_cues, FRAGMENT_WORDS);
    // A fragment that gives the previous template a value of its own ("and in Sales?"
    // after a department's headcount) continues its question. One that names a new thing
    // by a word of the template it routes to ("and their budget?" after a department's
    // list) asks its own, and the previous question with it would only say "stay"; a
    // value of nothing ("And what about Berlin?") can route confidently anywhere.
    let asks_anew = continues
        && !previous
            .and_then(template_of)
            .is_some_and(|t| names_a_value(router, &t, &own.query))
        && own
            .selected_match()
            .is_some_and(|m| m.scores.keyword_score.unwrap_or(0.0) > 0.0);
    // A turn that stands alone is read without the previous question, as the service
    // reads it (it embeds no joint text for it): the routing is its own either way.
    let joint =
        joint.filter(|_| !stands_alone(&own, turns, assistant.is_some(), config) && !asks_anew);
    let evidence = evidence(router, &own, joint, assistant, config);
    let others: Vec<&Routing> = joint
        .into_iter()
        .chain(assistant.map(|a| a.with_turn))
        .chain(assistant.map(|a| a.alone))
        .collect();
    let offers = assistant.is_some_and(|a| holds_cue(&a.alone.query, &config.offer_cues));
    let accepts = opens_with(&own.query, &config.acceptance_cues);
    let offer_weight = if offers && accepts {
        config.offer_weight
    } else {
        0.0
    };
    let topics = topics.filter(|t| !t.is_empty());
    let tilts: Vec<f32> = evidence
        .iter()
        .map(|e| {
            topics.map_or(1.0, |t| {
                router
                    .index()
                    .catalog
                    .datasource(&e.template.datasource)
                    .and_then(|d| d.templates.iter().find(|x| x.id == e.template.template_id))
                    .map_or(1.0, |template| t.factor(template, &sessions.topics))
            })
        })
        .collect();
    let seconds_since = previous.map(|t| (now - t.at).max(0));
    let weight = seconds_since.map_or(0.0, |s| {
        0.5f32.powf(s as f32 / config.half_life_seconds as f32)
    });
    let preferred = preferred_datasource(turns, config.preference_uses);
    let prior_belief = previous.map(prior_belief).unwrap_or_default();
    let informativeness = config.informativeness(
        own.best().map_or(0.0, |m| m.scores.combined_score),
        own.threshold,
    );
    let power = evidence_power(config, informativeness);
    let belief = follow(
        config,
        Prior {
            previous: &prior_belief,
            weight,
            preferred: preferred.as_deref(),
            tilts: &tilts,
            offer_weight,
        },
        &evidence,
        power,
    );
    let topic_boost = belief.first().and_then(|top| {
        let i = evidence.iter().position(|e| {
            e.template.datasource == top.datasource && e.template.template_id == top.template_id
        })?;
        topics.map(|_| tilts[i])
    });
    let turn_best = own.best().map(|m| weighted(m, probability_of(m)));
    let mut report = ContextReport {
        used: ContextUsed::Turn,
        turns: turns.len(),
        previous: previous.and_then(template_of),
        seconds_since_previous: seconds_since,
        weight,
        preferred_datasource: preferred,
        previous_question: joint.is_some(),
        turn: turn_best,
        context: belief.first().cloned(),
        self_contained: false,
        topic_words: topics.map_or(0, |t| t.words.len()),
        topic_boost,
        assistant: assistant.map(|a| AssistantReport {
            offered: a.alone.best().map(|m| weighted(m, probability_of(m))),
            offers,
            evidence_power: config.assistant_power,
            prior_weight: offer_weight,
        }),
    };
    let kept: Vec<Weighted> = belief.iter().take(config.belief_size).cloned().collect();
    // A fragment that continues ("And what about Berlin?") stands alone only when the
    // previous question with it goes where it goes alone: a fragment's few words can route
    // confidently anywhere. A whole question after its "and", or a fragment asking a new
    // thing, is judged as any other.
    let agrees_with_joint = || {
        joint.is_none_or(|j| {
            let template = |r: &Routing| r.selected_match().map(Match::template_ref);
            template(j).is_some() && template(j) == template(&own)
        })
    };
    // A turn that refers to what the previous turn named ("how many of those are in
    // Pierce County" after a make's count, "list them", "and teslas there?") narrows it:
    // its template is the likeliest of its own, in the previous turn's datasource, that
    // takes every value the previous turn was given (a make's count in a county, not the
    // county's). Not one whose own best template is another datasource's ("what's 15% of
    // that" after a headcount), nor one giving the previous template a value of its own ("same
    // for kia": the same question again, for Kia).
    let refers = refers_back(&own.query, &config.reference_cues);
    let referred = previous
        .filter(|p| refers && !p.parameters.is_empty())
        .filter(|p| !template_of(p).is_some_and(|t| names_a_value(router, &t, &own.query)))
        .and_then(|p| {
            let same_datasource = |m: &Match| p.datasource.as_deref() == Some(&m.datasource);
            let best = own.best()?;
            if !same_datasource(best) {
                return None;
            }
            // A value the turn gives its own template must be read by the one it goes to:
            // "which fantasy books are there" after an author's count names a genre.
            let names = names_a_value(router, &best.template_ref(), &own.query);
            own.matches.iter().filter(|m| !m.is_declined()).find(|m| {
                same_datasource(m)
                    && template_in(router, &m.template_ref()).is_some_and(|t| {
                        p.parameters
                            .keys()
                            .all(|name| t.parameters.iter().any(|q| &q.name == name))
                    })
                    && (!names || names_a_value(router, &m.template_ref(), &own.query))
            })
        })
        .map(Match::template_ref);
    // A fragment naming a value the previous template does not read, but an earlier
    // turn's template does ("and in marketing?" after "what is 15% of 200?", with a
    // headcount in Sales before it), returns to that template: the most recent such.
    // Within the previous turn's datasource the previous template is the one continued
    // ("and what about Laura Hall?" after "who does he report to", a lookup before it).
    let returned = previous
        .filter(|p| {
            continues && !template_of(p).is_some_and(|t| names_a_value(router, &t, &own.query))
        })
        .and_then(|p| {
            turns[..turns.len() - 1]
                .iter()
                .rev()
                .filter(|t| t.outcome == TurnOutcome::Execute && t.datasource != p.datasource)
                .filter_map(template_of)
                .find(|t| names_a_value(router, t, &own.query))
        });
    let sure = self_contained(&own, turns, config)
        && (!continues || asks_anew || agrees_with_joint())
        && referred.is_none();
    // What the turn meant, by its text alone: its own routing when sure, else the joint
    // one's ("and in Sales?" with the question before it) when that is sure. Never the
    // filter's decision, which would learn the stay prior back from itself.
    let labelled = own.selected_match().filter(|_| sure).or_else(|| {
        joint
            .filter(|j| self_contained(j, turns, config))?
            .selected_match()
    });
    let transition = previous
        .filter(|p| p.outcome == TurnOutcome::Execute)
        .and_then(template_of)
        .zip(labelled)
        .map(|(from, to)| {
            if from == to.template_ref() {
                Transition::Stay
            } else if from.datasource == to.datasource {
                Transition::SameDatasource
            } else {
                Transition::OtherDatasource
            }
        });
    let contextualized = |routing: Routing, report: ContextReport| Contextualized {
        routing,
        report,
        belief: kept.clone(),
        transition,
    };
    // A first turn has only the caller's topics, and what the assistant said, for context.
    if !config.enabled || (previous.is_none() && topics.is_none() && assistant.is_none()) {
        report.context = None;
        return contextualized(own, report);
    }
    let previous_clarified = previous.filter(|p| p.outcome == TurnOutcome::Clarify);
    if let Some(previous) = previous_clarified {
        if let Some(choice) = pick_choice(&own.query, &previous.choices, &own, sure) {
            report.used = ContextUsed::ClarifyChoice;
            select(&mut own, &others, &choice);
            // "The second one" names no parameters: the ambiguous question did.
            if let Some(asked) = &previous.query {
                own.query = format!("{asked} {}", own.query);
            }
            return Contextualized {
                belief: pinned(&choice),
                ..contextualized(own, report)
            };
        }
    }
    // After a request for a missing parameter, the turn answers it ("Engineering"), unless
    // it is a question sure of itself elsewhere that gives none of what was asked.
    let pending = previous
        .filter(|p| p.outcome == TurnOutcome::NeedsClarification)
        .and_then(|p| Some((p, template_of(p)?)));
    if let Some((asked, template)) = pending {
        // An answer to our request ("water the plants") can route anywhere: only a turn
        // surer of itself than a self-contained one leaves the request unanswered.
        let elsewhere = sure
            && own.selected_match().is_some_and(|m| {
                m.template_ref() != template
                    && probability_of(m) >= config.pending_switch_probability
            });
        if !elsewhere || fills_request(router, asked, &template, &own.query) {
            let mut routing = own.clone();
            select(&mut routing, &others, &template);
            if routing
                .selected_match()
                .is_some_and(|m| m.template_ref() == template)
            {
                report.used = ContextUsed::PendingParameter;
                // The conversation is on the template the turn completed.
                return Contextualized {
                    belief: pinned(&template),
                    ..contextualized(routing, report)
                };
            }
        }
    }
    if let Some(template) = returned.filter(|_| !sure) {
        select(&mut own, &others, &template);
        if own
            .selected_match()
            .is_some_and(|m| m.template_ref() == template)
        {
            report.used = ContextUsed::Context;
            set_context_probabilities(&mut own, &belief);
            return Contextualized {
                belief: pinned(&template),
                ..contextualized(own, report)
            };
        }
    }
    if let Some(template) = referred {
        select(&mut own, &others, &template);
        if own
            .selected_match()
            .is_some_and(|m| m.template_ref() == template)
        {
            report.used = ContextUsed::Context;
            return Contextualized {
                belief: pinned(&template),
                ..contextualized(own, report)
            };
        }
    }
    // A question that is sure of itself is answered on its own, whatever the stay prior
    // says ("What is 15% of 200?" after a list of employees); the conversation starts
    // afresh from it. Not right after a clarify of ours: the turn answers it.
    let after_clarify = previous.is_some_and(|p| p.outcome == TurnOutcome::Clarify);
    let disagrees = belief.first().is_some_and(|top| {
        !own.selected_match()
            .is_some_and(|m| m.template_ref() == top.template_ref())
    });
    // Nor right after the assistant asked something ("What time would you like?"): the
    // turn answers it ("7 pm at Sakura", sure of some other template alone), and the
    // filter, with the question as evidence, decides. Our own answers ask nothing unless
    // they clarify or request, so this is another agent's question in a chat's history.
    let answers_question =
        assistant.is_some_and(|a| asked_text(&a.alone.query, &config.offer_cues).is_some());
    if disagrees && !after_clarify && !answers_question && sure {
        let fresh = follow(
            config,
            Prior {
                previous: &[],
                weight: 0.0,
                preferred: None,
                tilts: &tilts,
                offer_weight: 0.0,
            },
            &evidence,
            power,
        );
        report.used = ContextUsed::Turn;
        report.self_contained = true;
        restate_fragment(router, &mut own, turns, config);
        set_context_probabilities(&mut own, &belief);
        return Contextualized {
            routing: own,
            report,
            belief: fresh.into_iter().take(config.belief_size).collect(),
            transition,
        };
    }
    if let Some(top) = belief.first() {
        let chosen = TemplateRef {
            datasource: top.datasource.clone(),
            template_id: top.template_id.clone(),
        };
        let is_top = |m: &Match| m.datasource == top.datasource && m.template_id == top.template_id;
        let agrees = own.selected_match().is_some_and(is_top) && own.outcome == Outcome::Execute;
        let pending = previous.is_some_and(|p| {
            p.outcome == TurnOutcome::NeedsClarification && template_of(p).as_ref() == Some(&chosen)
        });
        if !agrees {
            if top.probability >= config.min_probability {
                report.used = if pending {
                    ContextUsed::PendingParameter
                } else {
                    ContextUsed::Context
                };
                select(&mut own, &others, &chosen);
                // An accepted offer ("Would you like the headcount of Sales too?" "Yes,
                // please") names its parameters in the offer: the adapter reads both.
                if let Some(a) = assistant.filter(|a| offers && accepted(*a, &chosen)) {
                    own.query = a.with_turn.query.clone();
                }
            } else if previous.is_some() && !own.best().is_some_and(is_top) {
                // Neither is sure: ask which one, the conversation's first (a first turn
                // has no conversation yet, only the caller's topics: they tip, never ask).
                report.used = ContextUsed::Context;
                offer(&mut own, &others, &chosen);
            }
        }
    }
    set_context_probabilities(&mut own, &belief);
    restate_fragment(router, &mut own, turns, config);
    contextualized(own, report)
}

/// Each match's probability under the context hypothesis, for `/v1/route`.
fn set_context_probabilities(routing: &mut Routing, belief: &[Weighted]) {
    for m in &mut routing.matches {
        m.context_probability = belief
            .iter()
            .find(|b| b.datasource == m.datasource && b.template_id == m.template_id)
            .map(|b| b.probability);
    }
}

/// A fragment that stays on the previous template but whose words it cannot read ("and
/// Ivan Mueller?" after "Who does Victoria Adams report to") would run it again with the
/// session's values: the adapter reads the previous question with the fragment's words in
/// place of the value they replace (`restate::restated`), when the template finds a new
/// value there.
fn restate_fragment(router: &Router, own: &mut Routing, turns: &[Turn], config: &ContextConfig) {
    let Some(previous) = turns.last().filter(|p| p.outcome == TurnOutcome::Execute) else {
        return;
    };
    let Some(template) = template_of(previous) else {
        return;
    };
    let stays = own.outcome == Outcome::Execute
        && own
            .selected_match()
            .is_some_and(|m| m.template_ref() == template);
    if let Some(text) = template_in(router, &template)
        .filter(|_| stays)
        .and_then(|t| {
            let (continuing, pointing) = (&config.continuation_cues, &config.reference_cues);
            restated(t, turns, &own.query, continuing, pointing)
        })
    {
        own.query = text;
    }
}

/// A belief all on one template: the one a turn was resolved to by answering our request.
fn pinned(template: &TemplateRef) -> Vec<Weighted> {
    vec![Weighted {
        datasource: template.datasource.clone(),
        template_id: template.template_id.clone(),
        probability: 1.0,
    }]
}

/// The catalog's template a reference names.
fn template_in<'a>(router: &'a Router, template: &TemplateRef) -> Option<&'a Template> {
    router
        .index()
        .catalog
        .datasource(&template.datasource)
        .and_then(|d| d.templates.iter().find(|t| t.id == template.template_id))
}

/// Whether `query`'s own words give `template` a parameter value (not its defaults).
fn names_a_value(router: &Router, template: &TemplateRef, query: &str) -> bool {
    template_in(router, template).is_some_and(|t| reads_a_value(t, query))
}

/// Whether `query` gives a value for every required parameter of `template` that the turn
/// `asked` lacked (what its `needs_clarification` asked for).
fn fills_request(router: &Router, asked: &Turn, template: &TemplateRef, query: &str) -> bool {
    let Some(template) = template_in(router, template) else {
        return false;
    };
    let given = extract(template, query, &Map::new()).parameters;
    let lacking: Vec<&str> = template
        .parameters
        .iter()
        .filter(|p| p.required && !asked.parameters.contains_key(&p.name))
        .map(|p| p.name.as_str())
        .collect();
    !lacking.is_empty() && lacking.iter().all(|name| given.contains_key(*name))
}

/// The turn worth recording for a routing: its template, outcome and the conversation's
/// belief, and the question itself with `sessions.store_text`.
pub fn turn_of(
    routing: &Routing,
    belief: &[Weighted],
    outcome: TurnOutcome,
    parameters: Map<String, Value>,
    config: &SessionsConfig,
    now: i64,
) -> Turn {
    let chosen = routing.selected_match().or(routing.best());
    Turn {
        query: config.store_text.then(|| routing.query.clone()),
        datasource: chosen.map(|m| m.datasource.clone()),
        template_id: chosen.map(|m| m.template_id.clone()),
        parameters,
        outcome,
        confidence: chosen.map_or(0.0, |m| m.scores.combined_score),
        belief: belief.to_vec(),
        choices: routing
            .clarify_choices()
            .iter()
            .map(Match::template_ref)
            .collect(),
        answer: None,
        at: now,
    }
}

/// The outcome of a routing that was not executed.
pub fn unexecuted_outcome(routing: &Routing) -> TurnOutcome {
    match routing.outcome {
        Outcome::Clarify => TurnOutcome::Clarify,
        Outcome::NoMatch => TurnOutcome::NoMatch,
        Outcome::Execute => TurnOutcome::Execute,
    }
}

/// Whether the assistant's text alone routes first to `chosen` (what it offered).
fn accepted(assistant: AssistantTurn<'_>, chosen: &TemplateRef) -> bool {
    assistant
        .alone
        .best()
        .is_some_and(|m| m.template_ref() == *chosen)
}

fn weighted(m: &Match, probability: f32) -> Weighted {
    Weighted {
        datasource: m.datasource.clone(),
        template_id: m.template_id.clone(),
        probability,
    }
}

fn template_of(turn: &Turn) -> Option<TemplateRef> {
    Some(TemplateRef {
        datasource: turn.datasource.clone()?,
        template_id: turn.template_id.clone()?,
    })
}

/// The previous turn's belief; a turn stored without one (older versions) believed in its
/// template; after `needs_clarification`, the pending template has it all.
fn prior_belief(turn: &Turn) -> Vec<Weighted> {
    let pinned = || {
        template_of(turn)
            .map(|t| Weighted {
                datasource: t.datasource,
                template_id: t.template_id,
                probability: 1.0,
            })
            .into_iter()
            .collect()
    };
    match turn.outcome {
        TurnOutcome::NeedsClarification => pinned(),
        _ if turn.belief.is_empty() => pinned(),
        _ => turn.belief.clone(),
    }
}

/// The datasource chosen most often in the window, when at least `uses` times.
fn preferred_datasource(turns: &[Turn], uses: usize) -> Option<String> {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for turn in turns {
        if let (Some(d), TurnOutcome::Execute) = (&turn.datasource, turn.outcome) {
            *counts.entry(d.as_str()).or_default() += 1;
        }
    }
    counts
        .into_iter()
        .filter(|(_, n)| *n >= uses)
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0)))
        .map(|(d, _)| d.to_owned())
}

#[cfg(test)]
mod tests;
