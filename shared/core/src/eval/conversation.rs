//! Conversation replay: the lines of each `session_id`, in order, routed through the same
//! session logic as the API (`crate::conversation`, turns kept in memory), and each turn
//! routed alone as well. A turn is right when both its datasource and template are.
//!
//! The questions' vectors are the ones the rest of `eval` uses. Sessions advance together,
//! one turn each per wave, so every wave's joint "previous question + this one" texts are
//! embedded in one batch. A turn comes 30 seconds after the previous one.

use std::collections::HashMap;

use serde::Serialize;

use crate::conversation::{contextualize, joint_question, turn_of, unexecuted_outcome};
use crate::error::Result;
use crate::router::{Access, Router, Routing};
use crate::session::{push_bounded, Turn};

use super::{ratio, Embedded, LabeledQuery};

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
    /// Absent with `--no-session`.
    pub with_session: Option<TurnAccuracy>,
    pub without_session: TurnAccuracy,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct TurnCounts {
    pub all: usize,
    pub first: usize,
    pub continuing: usize,
    pub switching: usize,
    pub short: usize,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
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

/// Replay every conversation of `queries` (lines without `session_id` are left out); with
/// `use_session` false, only the turn-alone figures.
pub fn replay(
    router: &Router,
    queries: &[LabeledQuery],
    embedded: &Embedded,
    use_session: bool,
) -> Result<Option<ConversationReport>> {
    let conversations = conversations(queries, &embedded.vectors);
    if conversations.is_empty() {
        return Ok(None);
    }
    let longest = conversations.iter().map(Vec::len).max().unwrap_or(0);
    let config = &router.config().sessions;
    let mut turns: Vec<Vec<Turn>> = vec![Vec::new(); conversations.len()];
    let mut alone = Tally::default();
    let mut in_session = Tally::default();
    for wave in 0..longest {
        let now = SECONDS_PER_TURN * wave as i64;
        let active: Vec<usize> = (0..conversations.len())
            .filter(|&c| wave < conversations[c].len())
            .collect();
        let joints: Vec<Option<String>> = active
            .iter()
            .map(|&c| {
                let text = &conversations[c][wave].query.text;
                use_session
                    .then(|| joint_question(&turns[c], text, config))
                    .flatten()
                    .map(|j| router.embedding_text(&j))
            })
            .collect();
        let batch: Vec<&str> = joints.iter().flatten().map(String::as_str).collect();
        let vectors = if batch.is_empty() {
            Vec::new()
        } else {
            router.embedder().embed(&batch)?
        };
        let mut joint_vectors = vectors.iter();
        for (slot, &c) in active.iter().enumerate() {
            let line = &conversations[c][wave];
            let text = &line.query.text;
            let own = router.route_vector(text, line.vector, &Access::All)?;
            alone.add(line, &own);
            if !use_session {
                continue;
            }
            let joint = match &joints[slot] {
                Some(joint_text) => {
                    let vector = joint_vectors.next().expect("one vector per joint text");
                    Some(router.route_vector(joint_text, vector, &Access::All)?)
                }
                None => None,
            };
            let routing = contextualize(router, own, joint.as_ref(), &turns[c], None, now);
            in_session.add(line, &routing);
            let turn = turn_of(
                &routing,
                unexecuted_outcome(&routing),
                serde_json::Map::new(),
                config,
                now,
            );
            push_bounded(&mut turns[c], turn, config.max_turns);
        }
    }
    Ok(Some(ConversationReport {
        sessions: conversations.len(),
        turns: alone.counts(),
        with_session: use_session.then(|| in_session.accuracy()),
        without_session: alone.accuracy(),
    }))
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
        let right = routing.best().is_some_and(|m| {
            m.template_id == line.query.intent
                && line
                    .query
                    .domain
                    .as_deref()
                    .is_none_or(|d| d == m.datasource)
        });
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
