//! Whether a turn is answered on its own, whatever the conversation around it says: sure
//! of itself alone, and depending on nothing before it.

use switchyard_routing::config::ContextConfig;
use switchyard_routing::router::{Outcome, Routing};
use switchyard_routing::session::{Turn, TurnOutcome};

use super::filter::probability_of;
use super::texts::{continues, refers_back, FRAGMENT_WORDS};

/// Whether a turn is answered on its own, whatever the texts around it say: sure of
/// itself alone (`self_contained`), no fragment that continues ("and in Sales?"), after
/// no clarify or request of ours, and with nothing from the
/// assistant before it (`assisted`: the request's text, or what our answer asked). The
/// service then embeds neither the previous question with it nor anything else.
pub fn stands_alone(own: &Routing, turns: &[Turn], assisted: bool, config: &ContextConfig) -> bool {
    let asked_by_us = turns.last().is_some_and(|p| {
        matches!(
            p.outcome,
            TurnOutcome::Clarify | TurnOutcome::NeedsClarification
        )
    });
    let refers = points_back(own, turns, config);
    !assisted
        && !asked_by_us
        && self_contained(own, turns, config)
        && !continues(&own.query, &config.continuation_cues, FRAGMENT_WORDS)
        && !refers
}

/// Whether the turn points back at what the previous turn named with a word of
/// `reference_cues` ("list them" after a headcount in Marketing): only values can be
/// referred to, so a previous turn without any is never pointed at.
fn points_back(own: &Routing, turns: &[Turn], config: &ContextConfig) -> bool {
    turns.last().is_some_and(|p| !p.parameters.is_empty())
        && refers_back(&own.query, &config.reference_cues)
}

/// Whether a turn's own routing is sure enough to stand against the conversation: it
/// executes, on a template at least `self_contained_probability` likely, or a whole
/// question's template of another datasource than the previous turn's at least
/// `self_contained_elsewhere_probability` likely. A new subject: the stay prior holds a
/// clear switch back hardest there, while siblings of one datasource hand over (a search,
/// then its booking). An unexecuted turn never stands alone: its probability says little
/// ("What is the total cost?" after a car rental, "Thanks, bye" go anywhere at 0.9).
pub(super) fn self_contained(own: &Routing, turns: &[Turn], config: &ContextConfig) -> bool {
    let Some(chosen) = own
        .selected_match()
        .filter(|_| own.outcome == Outcome::Execute)
    else {
        return false;
    };
    // A few words ("Sounds good.", "What genre?") can route anywhere at 0.6.
    let whole = own.query.split_whitespace().count() > FRAGMENT_WORDS;
    let elsewhere = turns
        .last()
        .and_then(|t| t.datasource.as_deref())
        .is_some_and(|d| d != chosen.datasource);
    let needed = if elsewhere && whole {
        config.self_contained_elsewhere_probability
    } else {
        config.self_contained_probability
    };
    probability_of(chosen) >= needed
}
