//! Conversation replay: the lines of each `session_id`, in order, routed through the same
//! session logic as the API (`switchyard_core::conversation`, turns kept in memory), and each turn
//! routed alone as well. A turn is right when both its datasource and template are. A
//! line's `assistant` (what the assistant said before it) is read as the API reads a
//! request's.
//!
//! The questions' vectors are the ones the rest of `eval` uses. Sessions advance together,
//! one turn each per wave, so every wave's extra texts ("previous question + this one",
//! the assistant's turn alone and with it) are embedded in one batch. A turn comes 30
//! seconds after the previous one.

mod ceiling;
mod record;
mod routings;

use std::collections::HashMap;

use serde::Serialize;

use crate::error::Result;
use switchyard_core::conversation::{
    contextualize, turn_of, unexecuted_outcome, AssistantTurn, ContextTexts, Said,
};
use switchyard_routing::config::SessionsConfig;
use switchyard_routing::router::{Router, Routing};
use switchyard_routing::session::{push_bounded, Turn};
use switchyard_routing::transitions::{TransitionCounts, TransitionRates};

use crate::{ratio, Embedded, LabeledQuery};
pub use ceiling::ErrorSplit;
use ceiling::{Ceiling, Track};
use record::Seen;
pub use record::{Candidate, TurnRecord};
use routings::Routings;

/// Seconds between two turns of a replayed conversation.
const SECONDS_PER_TURN: i64 = 30;
/// A turn of at most this many words counts as short.
const SHORT_TURN_WORDS: usize = 6;

/// Turn accuracy by kind of turn, as fractions.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TurnAccuracy {
    pub all: f64,
    /// The first turn of each conversation.
    pub first: f64,
    /// Turns whose intent is the previous turn's.
    pub continuing: f64,
    /// Turns whose intent differs from the previous turn's.
    pub switching: f64,
    /// Turns of at most six words.
    pub short: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ConversationReport {
    pub sessions: usize,
    pub turns: TurnCounts,
    /// With the session (and the assistant's turns where the lines have them); absent
    /// with `--no-session`.
    pub with_session: Option<TurnAccuracy>,
    /// With the session but not the assistant's turns: present when the lines have
    /// assistant turns and they were replayed.
    pub without_assistant: Option<TurnAccuracy>,
    pub without_session: TurnAccuracy,
    /// Perfect stay/switch decisions over the same per-turn routing (`ceiling`): what a
    /// better stay/switch decision alone could reach. Absent with `--no-session`.
    pub oracle: Option<TurnAccuracy>,
    /// The `with_session` replay's wrong turns by cause, as shares of all turns.
    pub errors: Option<ErrorSplit>,
    /// The transition rates the `with_session` replay had learned by its end, as a
    /// deployment learns them from its sessions.
    pub transitions: Option<TransitionRates>,
    /// What each turn of the `with_session` replay saw and chose (`eval --turns-out`).
    #[serde(skip)]
    pub records: Vec<TurnRecord>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct TurnCounts {
    pub all: usize,
    pub first: usize,
    pub continuing: usize,
    pub switching: usize,
    pub short: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    First,
    Continuing,
    Switching,
}

/// One labelled turn, its vector and its place in its conversation.
struct Line<'a> {
    query: &'a LabeledQuery,
    vector: &'a [f32],
    kind: Kind,
}

impl Line<'_> {
    /// Whether a template is this turn's labelled one (its datasource too, when labelled).
    fn is(&self, datasource: &str, template: &str) -> bool {
        template == self.query.intent
            && self.query.domain.as_deref().is_none_or(|d| d == datasource)
    }
}

/// What a replay reads besides each turn's own text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    /// Each turn alone only.
    NoSession,
    /// The session's turns, not the assistant's.
    Session,
    /// The session's turns and, on lines that have it, what the assistant said before.
    SessionAndAssistant,
}

/// Replay every conversation of `queries` (lines without `session_id` are left out): each
/// turn alone, and as `mode` says. With the assistant's turns, the session without them is
/// replayed as well, for comparison.
pub fn replay(
    router: &Router,
    sessions: &SessionsConfig,
    queries: &[LabeledQuery],
    embedded: &Embedded,
    mode: Replay,
) -> Result<Option<ConversationReport>> {
    let conversations = conversations(queries, &embedded.vectors);
    if conversations.is_empty() {
        return Ok(None);
    }
    let mut routings = Routings::new(router, &conversations)?;
    let mut alone = Tally::default();
    for (c, lines) in conversations.iter().enumerate() {
        for (t, line) in lines.iter().enumerate() {
            alone.add(line, routings.own(c, t));
        }
    }
    let has_assistant = conversations
        .iter()
        .flatten()
        .any(|l| l.query.assistant.is_some());
    let mut decode =
        |assistant: bool| in_session(router, sessions, &conversations, &mut routings, assistant);
    let (with_session, without_assistant) = match mode {
        Replay::NoSession => (None, None),
        Replay::Session => (Some(decode(false)?), None),
        Replay::SessionAndAssistant if !has_assistant => (Some(decode(false)?), None),
        Replay::SessionAndAssistant => (Some(decode(true)?), Some(decode(false)?)),
    };
    Ok(Some(ConversationReport {
        sessions: conversations.len(),
        turns: alone.counts(),
        oracle: with_session.as_ref().map(|s| s.ceiling.oracle.accuracy()),
        errors: with_session.as_ref().map(|s| s.ceiling.split()),
        transitions: with_session.as_ref().map(|s| s.transitions),
        with_session: with_session.as_ref().map(|s| s.tally.accuracy()),
        records: with_session.map(|s| s.records).unwrap_or_default(),
        without_assistant: without_assistant.map(|s| s.tally.accuracy()),
        without_session: alone.accuracy(),
    }))
}

/// Replay the conversations through the session logic, with or without the assistant's
/// turns, and count where its errors come from against the oracle's. Sessions advance
/// together, one turn each per wave, so each wave's new context texts are routed in one
/// batch.
fn in_session(
    router: &Router,
    config: &SessionsConfig,
    conversations: &[Vec<Line<'_>>],
    routings: &mut Routings<'_>,
    assistant: bool,
) -> Result<Decoded> {
    let longest = conversations.iter().map(Vec::len).max().unwrap_or(0);
    let mut turns: Vec<Vec<Turn>> = vec![Vec::new(); conversations.len()];
    let mut tracks: Vec<Track> = conversations.iter().map(|_| Track::default()).collect();
    let mut tally = Tally::default();
    let mut ceiling = Ceiling::default();
    let mut records = Vec::new();
    // The deployment's transition rates, learned as the service learns them: from the
    // turns replayed so far (every conversation's earlier waves).
    let sizes: Vec<usize> = router
        .index()
        .catalog
        .datasources
        .iter()
        .map(|d| d.templates.len())
        .collect();
    let mut observed = TransitionCounts::default();
    for wave in 0..longest {
        let now = SECONDS_PER_TURN * wave as i64;
        let rates = TransitionRates::new(&config.context, &config.transitions, &sizes, observed);
        let learned = SessionsConfig {
            context: rates.apply(&config.context),
            ..config.clone()
        };
        let active: Vec<usize> = (0..conversations.len())
            .filter(|&c| wave < conversations[c].len())
            .collect();
        let extras: Vec<ContextTexts> = active
            .iter()
            .map(|&c| {
                let query = conversations[c][wave].query;
                // A data set's assistant turns are another agent's: all of each is evidence.
                let said = query
                    .assistant
                    .as_deref()
                    .filter(|_| assistant)
                    .map(Said::Whole);
                ContextTexts::of(&turns[c], &query.text, said, config)
            })
            .collect();
        let texts: Vec<String> = extras.iter().flat_map(ContextTexts::texts).collect();
        routings.prefetch(&texts)?;
        for (extra, &c) in extras.iter().zip(&active) {
            let line = &conversations[c][wave];
            let own = routings.own(c, wave).clone();
            let joint = extra.joint.as_deref().map(|t| routings.text(t));
            let said = extra
                .assistant
                .as_ref()
                .map(|(alone, with_turn)| AssistantTurn {
                    alone: routings.text(alone),
                    with_turn: routings.text(with_turn),
                });
            // What the oracle picks a new template from: the turn read as the session reads it.
            let evidence = said.map_or(routings.own(c, wave), |s| s.with_turn);
            let contextualized =
                contextualize(router, &learned, own, joint, said, &turns[c], None, now);
            if let Some(transition) = contextualized.transition {
                observed.add(transition);
            }
            let routing = &contextualized.routing;
            let seen = Seen {
                own: routings.own(c, wave),
                joint,
                assistant: said,
            };
            records.push(TurnRecord::of(
                line,
                wave,
                seen,
                routing,
                contextualized.report.used,
            ));
            tally.add(line, routing);
            ceiling.add(&mut tracks[c], line, routing, evidence);
            let turn = turn_of(
                routing,
                &contextualized.belief,
                unexecuted_outcome(routing),
                serde_json::Map::new(),
                config,
                now,
            );
            push_bounded(&mut turns[c], turn, config.max_turns);
        }
    }
    Ok(Decoded {
        tally,
        ceiling,
        records,
        transitions: TransitionRates::new(&config.context, &config.transitions, &sizes, observed),
    })
}

/// One replay's tally, error split and per-turn records.
struct Decoded {
    tally: Tally,
    ceiling: Ceiling,
    records: Vec<TurnRecord>,
    transitions: TransitionRates,
}

/// The conversations in order of first appearance, each in line order.
fn conversations<'a>(queries: &'a [LabeledQuery], vectors: &'a [Vec<f32>]) -> Vec<Vec<Line<'a>>> {
    let mut order: Vec<&str> = Vec::new();
    let mut by_id: HashMap<&str, Vec<Line<'a>>> = HashMap::new();
    for (query, vector) in queries.iter().zip(vectors) {
        let Some(id) = query.session_id.as_deref() else {
            continue;
        };
        let lines = by_id.entry(id).or_insert_with(|| {
            order.push(id);
            Vec::new()
        });
        let kind = match lines.last() {
            None => Kind::First,
            Some(previous) if previous.query.intent == query.intent => Kind::Continuing,
            Some(_) => Kind::Switching,
        };
        lines.push(Line {
            query,
            vector,
            kind,
        });
    }
    order
        .into_iter()
        .map(|id| by_id.remove(id).unwrap_or_default())
        .collect()
}

/// Right and total turns per kind.
#[derive(Default)]
struct Tally {
    right: [usize; 5],
    total: [usize; 5],
}

impl Tally {
    fn add(&mut self, line: &Line<'_>, routing: &Routing) {
        let best = routing.best();
        self.count(
            line,
            best.is_some_and(|m| line.is(&m.datasource, &m.template_id)),
        );
    }

    fn count(&mut self, line: &Line<'_>, right: bool) {
        let mut count = |slot: usize| {
            self.total[slot] += 1;
            self.right[slot] += usize::from(right);
        };
        count(0);
        count(match line.kind {
            Kind::First => 1,
            Kind::Continuing => 2,
            Kind::Switching => 3,
        });
        if line.query.text.split_whitespace().count() <= SHORT_TURN_WORDS {
            count(4);
        }
    }

    fn accuracy(&self) -> TurnAccuracy {
        let r = |i: usize| ratio(self.right[i], self.total[i]);
        TurnAccuracy {
            all: r(0),
            first: r(1),
            continuing: r(2),
            switching: r(3),
            short: r(4),
        }
    }

    fn counts(&self) -> TurnCounts {
        TurnCounts {
            all: self.total[0],
            first: self.total[1],
            continuing: self.total[2],
            switching: self.total[3],
            short: self.total[4],
        }
    }
}
