//! Picking a template for a turn: a clarify's choice the turn names, and putting the
//! conversation's template first, to execute or to offer beside the turn's own.

use switchyard_routing::router::{Match, Outcome, Routing};
use switchyard_routing::session::TemplateRef;

/// Which of `choices` the turn picks: an ordinal ("the second one", "2"), else the choice
/// the turn's own routing ranks first when it ranks a choice first overall, or the turn is
/// short ("yes, the balance") and not `sure` of another template ("who is the highest paid
/// there?" asks anew).
pub(super) fn pick_choice(
    query: &str,
    choices: &[TemplateRef],
    own: &Routing,
    sure: bool,
) -> Option<TemplateRef> {
    if choices.is_empty() {
        return None;
    }
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let short = words.len() <= 6;
    let ordinal = words.iter().find_map(|w| match w.as_str() {
        "first" | "1st" => Some(0),
        "second" | "2nd" => Some(1),
        "third" | "3rd" => Some(2),
        "last" => Some(choices.len() - 1),
        "1" | "2" | "3" if short => w.parse::<usize>().ok().map(|n| n - 1),
        _ => None,
    });
    if let Some(i) = ordinal.filter(|&i| i < choices.len()) {
        return Some(choices[i].clone());
    }
    let is_choice = |m: &Match| {
        choices
            .iter()
            .any(|c| c.datasource == m.datasource && c.template_id == m.template_id)
    };
    let first_choice = own.matches.iter().find(|m| is_choice(m))?;
    let leads = own.best().is_some_and(is_choice);
    (leads || (short && !sure)).then(|| first_choice.template_ref())
}

/// Put `chosen` first and execute it (taken from the other routings, the joint one
/// first, when the question's own candidates do not hold it).
pub(super) fn select(routing: &mut Routing, others: &[&Routing], chosen: &TemplateRef) {
    if move_first(routing, others, chosen) {
        routing.selected = Some(0);
        routing.outcome = Outcome::Execute;
        routing.choices = 0;
    }
}

/// Put `chosen` first and ask whether it or the question's own best was meant; not when a
/// negative example declined it for this question (a declined first match is no `best`).
pub(super) fn offer(routing: &mut Routing, others: &[&Routing], chosen: &TemplateRef) {
    let declined = std::iter::once(&*routing)
        .chain(others.iter().copied())
        .find_map(|r| r.matches.iter().find(|m| m.template_ref() == *chosen))
        .is_some_and(Match::is_declined);
    if declined {
        return;
    }
    let had_best = routing.best().is_some();
    if move_first(routing, others, chosen) {
        routing.selected = Some(0);
        if had_best && routing.matches.get(1).is_some_and(|m| !m.is_declined()) {
            routing.outcome = Outcome::Clarify;
            routing.choices = 2;
        } else {
            routing.outcome = Outcome::Execute;
            routing.choices = 0;
        }
    }
}

/// Move `chosen` to the front (from the first of `others` that holds it if need be);
/// false when no routing holds it.
fn move_first(routing: &mut Routing, others: &[&Routing], chosen: &TemplateRef) -> bool {
    let is_chosen =
        |m: &Match| m.datasource == chosen.datasource && m.template_id == chosen.template_id;
    let position = match routing.matches.iter().position(is_chosen) {
        Some(i) => i,
        None => match others
            .iter()
            .find_map(|o| o.matches.iter().find(|m| is_chosen(m)))
        {
            Some(m) => {
                routing.matches.push(m.clone());
                routing.matches.len() - 1
            }
            None => return false,
        },
    };
    let chosen = routing.matches.remove(position);
    routing.matches.insert(0, chosen);
    true
}
