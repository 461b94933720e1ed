//! The texts a turn is routed with besides its own: the previous question with it, and what
//! the assistant said just before it (alone, from its offer on, and with the turn); and the
//! cues that say an assistant offered something and the turn accepted it.

use switchyard_routing::config::SessionsConfig;
use switchyard_routing::router::Routing;
use switchyard_routing::session::{Turn, TurnOutcome};

/// What the assistant said just before this turn, routed alone (what it offers) and with
/// the turn.
#[derive(Debug, Clone, Copy)]
pub struct AssistantTurn<'a> {
    pub alone: &'a Routing,
    pub with_turn: &'a Routing,
}

/// Longest assistant turn read, in characters: its end, where an offer or question is.
pub const MAX_ASSISTANT_CHARS: usize = 2000;

/// The assistant's text as routed alone: from the sentence that makes an offer (one of
/// `offer_cues`: "15% of 200 is 30. Would you like the headcount of Sales too?" routes as
/// its second sentence), else all of it; its end, within the query limit.
pub fn offer_text(assistant: &str, offer_cues: &[String]) -> String {
    let lower = assistant.to_lowercase();
    let cue_at = offer_cues
        .iter()
        .filter_map(|cue| lower.find(cue.as_str()))
        .min();
    let start = cue_at.map_or(0, |at| {
        lower[..at]
            .rfind(['.', '!', '?', '\n'])
            .map_or(0, |end| end + 1)
    });
    // `lower` has `assistant`'s byte offsets only where lower-casing keeps lengths.
    let start = if lower.len() == assistant.len() && assistant.is_char_boundary(start) {
        start
    } else {
        0
    };
    assistant_text(assistant[start..].trim_start())
}

/// The end of a text, within the query limit.
pub fn assistant_text(assistant: &str) -> String {
    let skip = assistant
        .chars()
        .count()
        .saturating_sub(switchyard_routing::router::MAX_QUERY_CHARS);
    assistant.chars().skip(skip).collect()
}

/// The text routed as "what the assistant said + this turn", within the query limit.
pub fn assistant_question(assistant: &str, query: &str) -> String {
    let room =
        switchyard_routing::router::MAX_QUERY_CHARS.saturating_sub(query.chars().count() + 1);
    let skip = assistant.chars().count().saturating_sub(room);
    let said: String = assistant.chars().skip(skip).collect();
    format!("{said} {query}")
}

/// What the assistant said before a turn, and who said it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Said<'a> {
    /// The caller's assistant (another agent, a chat application's own model), or a
    /// request of ours for a missing parameter: all of it is evidence about the turn.
    Whole(&'a str),
    /// Switchyard's own previous answer (a session's last answer, a chat history's
    /// assistant message). An answer is the output of the template that produced it: routed,
    /// it votes for that template whatever the next question asks, a loop. Only an offer or a
    /// question it ends with is evidence (`asked_text`).
    OwnAnswer(&'a str),
}

impl<'a> Said<'a> {
    /// The part of it that is evidence about the turn, if any.
    pub fn evidence(self, offer_cues: &[String]) -> Option<String> {
        match self {
            Said::Whole(text) => Some(offer_text(text, offer_cues)),
            Said::OwnAnswer(text) => asked_text(text, offer_cues),
        }
    }
}

/// What an answer asks of the caller: from its offer on (one of `offer_cues`), else its
/// last sentence when that is a question ("Which did you mean: the headcount, or the
/// budget?"); none for an answer that only answers.
pub fn asked_text(answer: &str, offer_cues: &[String]) -> Option<String> {
    if holds_cue(answer, offer_cues) {
        return Some(offer_text(answer, offer_cues));
    }
    let trimmed =
        answer.trim_end_matches(|c: char| c.is_whitespace() || matches!(c, '*' | '_' | '`' | ')'));
    if !trimmed.ends_with('?') {
        return None;
    }
    // The question's sentence starts after the last ". ", "! " or "? " before a capital,
    // or a line break (not after the points of "e.g. 2.5").
    let body = &trimmed[..trimmed.len() - 1];
    let chars: Vec<(usize, char)> = body.char_indices().collect();
    let start = (0..chars.len())
        .filter(|&i| {
            let (_, c) = chars[i];
            let next = chars.get(i + 1).map(|&(_, c)| c);
            let after = chars.get(i + 2).map(|&(_, c)| c);
            c == '\n'
                || (matches!(c, '.' | '!' | '?')
                    && next.is_some_and(char::is_whitespace)
                    && after.is_some_and(char::is_uppercase))
        })
        .map(|i| chars[i].0 + chars[i].1.len_utf8())
        .next_back()
        .unwrap_or(0);
    Some(assistant_text(trimmed[start..].trim_start()))
}

/// Whether the assistant's text holds one of `cues` (an offer: "Would you like to book a
/// table?").
pub fn holds_cue(assistant: &str, cues: &[String]) -> bool {
    let lower = assistant.to_lowercase();
    cues.iter().any(|cue| lower.contains(cue.as_str()))
}

/// Whether `query` holds one of `cues` as whole words ("how many of those ...").
pub fn refers_back(query: &str, cues: &[String]) -> bool {
    let words: String = query
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let padded = format!(" {words} ");
    cues.iter().any(|cue| padded.contains(&format!(" {cue} ")))
}

/// At most this many words after a continuation cue make a fragment ("and in Sales?").
pub const FRAGMENT_WORDS: usize = 3;

/// Whether the turn is a fragment continuing the conversation: one of `cues` opens it and
/// at most `max_words` words follow ("And in Sales?", "what about Berlin", "same for kia";
/// not "and which teams are in Chicago", a whole question after its "and").
pub fn continues(query: &str, cues: &[String], max_words: usize) -> bool {
    after_cues(query, cues).is_some_and(|rest| rest.split_whitespace().count() <= max_words)
}

/// What follows the continuation cues opening `query` ("Ivan Mueller?" of "and what about
/// Ivan Mueller?"), as written; `None` when no cue opens it.
pub fn after_cues<'a>(query: &'a str, cues: &[String]) -> Option<&'a str> {
    let mut rest = query.trim_start_matches(|c: char| !c.is_alphanumeric());
    let mut opened = false;
    // Compared byte for byte, ignoring ASCII case: a cue is lower case ASCII words.
    let after = |rest: &'a str, cue: &str| {
        let tail = rest.get(cue.len()..)?;
        (rest[..cue.len()].eq_ignore_ascii_case(cue)
            && !tail.starts_with(|c: char| c.is_alphanumeric()))
        .then_some(tail)
    };
    while let Some(tail) = cues.iter().find_map(|cue| after(rest, cue)) {
        rest = tail.trim_start_matches(|c: char| !c.is_alphanumeric());
        opened = true;
    }
    opened.then_some(rest)
}

/// Whether the turn opens with one of `cues` as whole words: an acceptance ("Yes, please",
/// "Sure, for 2 people"), a continuation ("And in Sales?", "What about Marketing").
pub fn opens_with(query: &str, cues: &[String]) -> bool {
    let lower = query
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    cues.iter().any(|cue| {
        lower
            .strip_prefix(cue.as_str())
            .is_some_and(|rest| !rest.starts_with(|c: char| c.is_alphanumeric()))
    })
}

/// The texts a turn is routed with besides its own, in this order: the previous question
/// with it (`joint`), then what the assistant said alone and with it. The service and
/// `eval` both build them here.
#[derive(Debug, Clone, Default)]
pub struct ContextTexts {
    pub joint: Option<String>,
    pub assistant: Option<(String, String)>,
}

impl ContextTexts {
    /// For a turn `query` after `turns`, when the assistant said `assistant` before it
    /// (from its offer on, when it makes one: the answer before the offer is the last
    /// turn's; of our own answer, only what it asks: `Said`). Nothing from the assistant
    /// when context is off or its text is blank.
    pub fn of(
        turns: &[Turn],
        query: &str,
        assistant: Option<Said<'_>>,
        config: &SessionsConfig,
    ) -> ContextTexts {
        let said = assistant
            .filter(|_| config.context.enabled)
            .and_then(|said| said.evidence(&config.context.offer_cues))
            .filter(|said| !said.trim().is_empty())
            .map(|said| {
                let with_turn = assistant_question(&said, query);
                (said, with_turn)
            });
        ContextTexts {
            joint: joint_question(turns, query, config),
            assistant: said,
        }
    }

    /// Every text, in the order their routings are read back.
    pub fn texts(&self) -> Vec<String> {
        let mut texts: Vec<String> = self.joint.iter().cloned().collect();
        if let Some((alone, with_turn)) = &self.assistant {
            texts.push(alone.clone());
            texts.push(with_turn.clone());
        }
        texts
    }
}

/// The previous question as the next turn reads it: a turn that answered our request for
/// a value ("marketing" after "who are the highest paid in a department") is read as the
/// question it completed, so "and in ops?" after it reads "who are the highest paid in a
/// department marketing and in ops?", not "marketing and in ops?". The session keeps
/// each turn as asked.
pub(super) fn previous_question(turns: &[Turn]) -> Option<String> {
    let (last, before) = turns.split_last()?;
    let answered = last.query.as_deref()?;
    let asked = before.last().filter(|asked| {
        asked.outcome == TurnOutcome::NeedsClarification
            && asked.template_id.is_some()
            && asked.template_id == last.template_id
            && asked.datasource == last.datasource
    });
    match asked.and_then(|a| a.query.as_deref()) {
        Some(asked) => Some(within_limit(asked, answered)),
        None => Some(answered.to_owned()),
    }
}

/// "`before` `query`", keeping the end of `before` so that it fits the query limit.
fn within_limit(before: &str, query: &str) -> String {
    let room =
        switchyard_routing::router::MAX_QUERY_CHARS.saturating_sub(query.chars().count() + 1);
    let skip = before.chars().count().saturating_sub(room);
    let before: String = before.chars().skip(skip).collect();
    format!("{before} {query}")
}

/// The text routed as "previous question + this one", when the session kept the previous
/// question and context is on.
pub fn joint_question(turns: &[Turn], query: &str, config: &SessionsConfig) -> Option<String> {
    if !config.context.enabled || config.context.previous_question_weight <= 0.0 {
        return None;
    }
    let context = &config.context;
    // A fragment after a cue ("And what about Berlin?") is not a whole question.
    let whole = query.split_whitespace().count() > super::FRAGMENT_WORDS
        && !continues(query, &context.continuation_cues, super::FRAGMENT_WORDS);
    let anaphora = &context.anaphora_words;
    if whole && !anaphora.is_empty() && !refers_back(query, anaphora) {
        return None;
    }
    let previous = previous_question(turns)?;
    Some(within_limit(&previous, query))
}
