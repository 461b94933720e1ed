//! Where a session replay's wrong turns come from, and the ceiling of perfect stay/switch
//! decisions over the same per-turn routing.
//!
//! A turn *stays* when its template is its conversation's previous turn's (as routed),
//! and the conversation *continues* when its labelled intent is the previous turn's. A
//! wrong turn is then one of: the first turn; a wrong state carried (continues, stays,
//! and the state was wrong already: split by whether it has been wrong since the first
//! turn); a wrong stay (the conversation switched, the replay stayed); a wrong switch (it
//! continued, the replay moved); a wrong target (both moved, elsewhere).
//!
//! The oracle knows, at every turn, whether the conversation continues: it keeps its own
//! previous choice, or takes the turn's best template other than that choice (the turn
//! read with the assistant's text when the replay has it, else alone). What it misses is
//! lost to routing, not to the stay/switch decision.

use serde::Serialize;
use switchyard_routing::router::Routing;

use super::{Kind, Line, Tally};
use crate::ratio;

/// A template as routed: (datasource, template id).
type Choice = Option<(String, String)>;

/// Wrong turns by cause, as shares of all turns (they add up to 1 − accuracy).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ErrorSplit {
    /// First turns routed wrong.
    pub first_turn: f64,
    /// A wrong state kept since a wrong first turn, the conversation continuing.
    pub carried_from_first: f64,
    /// A wrong state kept since a later turn, the conversation continuing.
    pub carried_later: f64,
    /// The conversation switched; the replay stayed.
    pub wrong_stay: f64,
    /// The conversation continued; the replay moved.
    pub wrong_switch: f64,
    /// Both moved; the replay to another template than the labelled one.
    pub wrong_target: f64,
}

/// One conversation's state in the replay and in the oracle.
#[derive(Default)]
pub(super) struct Track {
    replayed: Choice,
    /// Every turn so far wrong, on the template the first turn chose.
    stuck_since_first: bool,
    oracle: Choice,
}

/// The error split and the oracle's tally over a replay's turns.
#[derive(Default)]
pub(super) struct Ceiling {
    causes: [usize; 6],
    turns: usize,
    pub(super) oracle: Tally,
}

impl Ceiling {
    /// Count one turn: the replay's `routing` and the turn's own `evidence` (the routing
    /// the oracle picks from when the conversation switches).
    pub(super) fn add(
        &mut self,
        track: &mut Track,
        line: &Line<'_>,
        routing: &Routing,
        evidence: &Routing,
    ) {
        let right = |choice: &Choice| choice.as_ref().is_some_and(|(d, t)| line.is(d, t));
        let replayed = choice_of(routing);
        let stayed = replayed == track.replayed;
        self.turns += 1;
        if !right(&replayed) {
            let cause = match (line.kind, stayed) {
                (Kind::First, _) => 0,
                (Kind::Continuing, true) if track.stuck_since_first => 1,
                (Kind::Continuing, true) => 2,
                (Kind::Switching, true) => 3,
                (Kind::Continuing, false) => 4,
                (Kind::Switching, false) => 5,
            };
            self.causes[cause] += 1;
        }
        track.stuck_since_first = match line.kind {
            Kind::First => !right(&replayed),
            _ => track.stuck_since_first && stayed && !right(&replayed),
        };
        track.replayed = replayed;

        match line.kind {
            Kind::Continuing => {}
            Kind::First => track.oracle = choice_of(evidence),
            Kind::Switching => {
                track.oracle = evidence
                    .matches
                    .iter()
                    .filter(|m| !m.is_declined())
                    .map(|m| Some((m.datasource.clone(), m.template_id.clone())))
                    .find(|c| *c != track.oracle)
                    .flatten();
            }
        }
        self.oracle.count(line, right(&track.oracle));
    }

    pub(super) fn split(&self) -> ErrorSplit {
        let share = |i: usize| ratio(self.causes[i], self.turns);
        ErrorSplit {
            first_turn: share(0),
            carried_from_first: share(1),
            carried_later: share(2),
            wrong_stay: share(3),
            wrong_switch: share(4),
            wrong_target: share(5),
        }
    }
}

fn choice_of(routing: &Routing) -> Choice {
    routing
        .best()
        .map(|m| (m.datasource.clone(), m.template_id.clone()))
}
