//! Conversation context: the recent turns of a session. A follow-up ("and in Sales?")
//! takes the parameters it leaves out from them, and `switchyard_core::conversation` routes it with
//! them. The store is a trait: in memory locally, DynamoDB on AWS (`switchyard-aws`).

use switchyard_catalog::BoxFuture;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::config::SessionsConfig;
use switchyard_catalog::bounded::{cut, json_len, MAX_ITEM_BYTES};
use switchyard_catalog::expiring::ExpiringMap;
use switchyard_contract::error::Result;

/// One question of a session and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// The question, kept only with `sessions.store_text`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// The template chosen (or, for `no_match`, the best one); none when nothing matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datasource: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_id: Option<String>,
    #[serde(default)]
    pub parameters: Map<String, Value>,
    #[serde(default)]
    pub outcome: TurnOutcome,
    /// The chosen template's confidence.
    #[serde(default)]
    pub confidence: f32,
    /// What the conversation believed the turn meant: the likeliest templates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub belief: Vec<Weighted>,
    /// With `clarify`: the choices offered, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<TemplateRef>,
    /// The answer's text as the adapter gave it, kept only with `sessions.store_text`: what
    /// the assistant said before the next turn, when its caller sends none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Unix seconds.
    pub at: i64,
}

/// How a turn was answered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnOutcome {
    #[default]
    Execute,
    /// The adapter asked for a parameter the question left out.
    NeedsClarification,
    /// The caller was asked to pick one of `choices`.
    Clarify,
    NoMatch,
    /// The adapter failed.
    Failed,
}

/// A template by name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TemplateRef {
    pub datasource: String,
    pub template_id: String,
}

/// A template and a probability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Weighted {
    pub datasource: String,
    pub template_id: String,
    #[serde(rename = "p")]
    pub probability: f32,
}

impl Weighted {
    pub fn template_ref(&self) -> TemplateRef {
        TemplateRef {
            datasource: self.datasource.clone(),
            template_id: self.template_id.clone(),
        }
    }
}

/// What the session contributed to a routing, for `metadata.session` and `/v1/route`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextReport {
    /// Which hypothesis the answer follows.
    pub used: ContextUsed,
    /// Turns of the session within the window.
    pub turns: usize,
    /// The previous turn's template.
    pub previous: Option<TemplateRef>,
    pub seconds_since_previous: Option<i64>,
    /// Weight of the previous turns' belief in this turn's prior: 1 right after a turn,
    /// halving every `half_life_seconds`.
    pub weight: f32,
    /// The datasource the session kept using (at least `preference_uses` turns).
    pub preferred_datasource: Option<String>,
    /// Whether the previous question was routed together with this one.
    pub previous_question: bool,
    /// The turn alone: its best template and probability.
    pub turn: Option<Weighted>,
    /// The context hypothesis: the likeliest template after the filter.
    pub context: Option<Weighted>,
    /// The turn alone was sure enough to stand against the context, which it disagreed with.
    pub self_contained: bool,
    /// The caller's topic words known (`switchyard_core::topics`; 0 without).
    pub topic_words: usize,
    /// The topic prior factor on the context's template (1 = none), with topics.
    pub topic_boost: Option<f32>,
    /// How what the assistant said just before weighed, when it was known.
    pub assistant: Option<AssistantReport>,
}

/// What the assistant's turn contributed to a routing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AssistantReport {
    /// What its text alone routes to: the template it offered or talked about.
    pub offered: Option<Weighted>,
    /// Whether it made an offer (`sessions.context.offer_cues`).
    pub offers: bool,
    /// The power of "its text + this turn" as evidence (`assistant_power`).
    pub evidence_power: f32,
    /// Share of the prior given to what it offered (offer_weight when it offers, else 0).
    pub prior_weight: f32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextUsed {
    /// The turn's own routing stands (no recent turns, or it agrees with the context, or
    /// the context was not sure enough).
    Turn,
    /// The context's template replaced the turn's own routing.
    Context,
    /// The turn picked one of the previous answer's clarify choices.
    ClarifyChoice,
    /// The turn answered the previous answer's request for a missing parameter.
    PendingParameter,
}

impl ContextUsed {
    /// Why the conversation's routing stands, when it was the conversation's doing.
    pub fn reason(self) -> Option<&'static str> {
        match self {
            ContextUsed::Turn => None,
            ContextUsed::Context => Some("conversation_context"),
            ContextUsed::ClarifyChoice => Some("clarify_choice_picked"),
            ContextUsed::PendingParameter => Some("pending_parameter_answered"),
        }
    }
}

/// Recent turns per session id, bounded in number and in age.
pub trait SessionStore: Send + Sync {
    /// The session's turns, oldest first; none for an unknown or expired session.
    fn recent<'a>(&'a self, session_id: &'a str, now: i64) -> BoxFuture<'a, Result<Vec<Turn>>>;

    /// Add a turn, keeping the newest `max_turns`, and push the session's expiry to
    /// `now + ttl_seconds`. Concurrent appends to one session must all be kept.
    fn append<'a>(&'a self, session_id: &'a str, turn: Turn) -> BoxFuture<'a, Result<()>>;

    /// Forget the session; true when there was one to forget.
    fn delete<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<bool>>;
}

/// The turns of the last `window_seconds` before `now`.
pub fn within_window(turns: &[Turn], now: i64, window_seconds: u64) -> &[Turn] {
    let since = now - window_seconds as i64;
    let first = turns
        .iter()
        .position(|t| t.at >= since)
        .unwrap_or(turns.len());
    &turns[first..]
}

/// The parameters a session supplies to a follow-up: every turn's, newer winning.
pub fn carried_parameters(turns: &[Turn]) -> Map<String, Value> {
    let mut carried = Map::new();
    for turn in turns {
        for (name, value) in &turn.parameters {
            carried.insert(name.clone(), value.clone());
        }
    }
    carried
}

/// The most bytes of a turn's question or answer a session keeps (an answer may be a
/// whole 1 MiB response body); longer, cut with `bounded::CUT_MARKER`.
pub const MAX_TURN_TEXT_BYTES: usize = 16 * 1024;

/// Add `turn` to `turns`, keeping the newest `max_turns` and at most
/// [`MAX_ITEM_BYTES`] of the turns' JSON (shared by every store, so a session is
/// one item a DynamoDB table accepts): the turn's texts are cut to
/// [`MAX_TURN_TEXT_BYTES`], then the oldest turns give way (the newest always stays, its
/// parameters dropped in the last resort). How many turns gave way for their bytes.
pub fn push_bounded(turns: &mut Vec<Turn>, mut turn: Turn, max_turns: usize) -> usize {
    for text in [turn.query.as_mut(), turn.answer.as_mut()]
        .into_iter()
        .flatten()
    {
        cut(text, MAX_TURN_TEXT_BYTES);
    }
    turns.push(turn);
    let excess = turns.len().saturating_sub(max_turns);
    turns.drain(..excess);
    let sizes: Vec<usize> = turns.iter().map(json_len).collect();
    // `[` + the turns + a comma between each + `]`.
    let mut total = 2 + sizes.iter().sum::<usize>() + sizes.len().saturating_sub(1);
    let mut dropped = 0;
    while total > MAX_ITEM_BYTES && dropped + 1 < sizes.len() {
        total -= sizes[dropped] + 1;
        dropped += 1;
    }
    turns.drain(..dropped);
    if let Some(newest) = turns.last_mut().filter(|_| total > MAX_ITEM_BYTES) {
        newest.parameters.clear();
        newest.belief.clear();
        newest.choices.clear();
    }
    dropped
}

/// Sessions in this process (local `serve`, tests).
pub struct MemorySessionStore {
    config: SessionsConfig,
    /// Session id → its turns, expiring `ttl_seconds` after the last one; at most
    /// `memory_capacity` sessions (the least recently used go).
    sessions: ExpiringMap<Vec<Turn>>,
}

impl MemorySessionStore {
    pub fn new(config: SessionsConfig) -> Self {
        MemorySessionStore {
            sessions: ExpiringMap::new(config.memory_capacity),
            config,
        }
    }

    /// Sessions held.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }
}

impl SessionStore for MemorySessionStore {
    fn recent<'a>(&'a self, session_id: &'a str, now: i64) -> BoxFuture<'a, Result<Vec<Turn>>> {
        Box::pin(async move { Ok(self.sessions.get(session_id, now).unwrap_or_default()) })
    }

    fn append<'a>(&'a self, session_id: &'a str, turn: Turn) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let expires_at = turn.at + self.config.ttl_seconds as i64;
            let max_turns = self.config.max_turns;
            // A session expired by this turn's time starts afresh.
            self.sessions.update(session_id, turn.at, |turns| {
                let mut turns = turns.unwrap_or_default();
                push_bounded(&mut turns, turn, max_turns);
                (turns, expires_at)
            });
            Ok(())
        })
    }

    fn delete<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move { Ok(self.sessions.remove(session_id)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn turn(at: i64, parameters: Value) -> Turn {
        Turn {
            query: Some(format!("q{at}")),
            datasource: Some("hr".into()),
            template_id: Some("t".into()),
            parameters: parameters.as_object().unwrap().clone(),
            outcome: TurnOutcome::Execute,
            confidence: 0.9,
            belief: Vec::new(),
            choices: Vec::new(),
            answer: None,
            at,
        }
    }

    #[tokio::test]
    async fn turns_are_bounded_and_expire() {
        let store = MemorySessionStore::new(SessionsConfig {
            max_turns: 2,
            ttl_seconds: 100,
            ..SessionsConfig::default()
        });
        for at in 1..=3 {
            store.append("s", turn(at, json!({}))).await.unwrap();
        }
        let turns = store.recent("s", 50).await.unwrap();
        assert_eq!(
            turns.iter().map(|t| t.at).collect::<Vec<_>>(),
            vec![2, 3],
            "the oldest turn is dropped"
        );
        assert!(store.recent("s", 103).await.unwrap().is_empty());
        assert!(store.recent("other", 50).await.unwrap().is_empty());
        store.append("s", turn(200, json!({}))).await.unwrap();
        assert!(store.delete("s").await.unwrap(), "a session to forget");
        assert!(store.recent("s", 201).await.unwrap().is_empty());
        assert!(!store.delete("s").await.unwrap(), "nothing left");
    }

    #[tokio::test]
    async fn the_store_keeps_at_most_its_capacity_of_sessions() {
        let store = MemorySessionStore::new(SessionsConfig {
            memory_capacity: 2,
            ttl_seconds: 100,
            ..SessionsConfig::default()
        });
        store.append("a", turn(1, json!({}))).await.unwrap();
        store.append("b", turn(2, json!({}))).await.unwrap();
        store.append("c", turn(3, json!({}))).await.unwrap();
        assert!(
            store.recent("a", 10).await.unwrap().is_empty(),
            "the least recently used goes"
        );
        assert_eq!(store.recent("b", 10).await.unwrap().len(), 1);
        assert_eq!(store.recent("c", 10).await.unwrap().len(), 1);
        // Past their expiry "b" and "c" read as empty; "d" takes the place of one of them.
        store.append("d", turn(150, json!({}))).await.unwrap();
        store.append("d", turn(151, json!({}))).await.unwrap();
        assert_eq!(store.len(), 2);
        assert!(store.recent("c", 150).await.unwrap().is_empty(), "expired");
        assert_eq!(store.recent("d", 160).await.unwrap().len(), 2);
        store.append("e", turn(152, json!({}))).await.unwrap();
        assert_eq!(
            store.recent("d", 160).await.unwrap().len(),
            2,
            "under capacity"
        );
    }

    /// Turns past twice the item budget in multibyte questions and answers: the session
    /// keeps its newest turns under the budget, each text cut on a character's boundary,
    /// and its JSON parses; the memory store keeps the same.
    #[tokio::test]
    async fn a_session_twice_the_budget_in_multibyte_text_is_kept_under_it() {
        use switchyard_catalog::bounded::CUT_MARKER;
        let long = "é漢🚀".repeat(2 * MAX_ITEM_BYTES / 9 + 1);
        let mut big = turn(1, json!({"department": long.clone()}));
        big.answer = Some(long.clone());
        big.query = Some(long.clone());
        assert!(json_len(&big) > 2 * MAX_ITEM_BYTES);
        let mut turns = Vec::new();
        for at in 0..50 {
            let mut t = turn(at, json!({}));
            t.answer = Some("é漢🚀".repeat(1_000 + at as usize));
            push_bounded(&mut turns, t, 50);
        }
        let dropped = push_bounded(&mut turns, big.clone(), 50);
        let json = serde_json::to_string(&turns).unwrap();
        assert!(json.len() <= MAX_ITEM_BYTES, "{} bytes", json.len());
        assert!(dropped > 0, "the oldest turns gave way");
        let back: Vec<Turn> = serde_json::from_str(&json).unwrap();
        let newest = back.last().unwrap();
        assert_eq!(newest.at, 1);
        let answer = newest.answer.as_deref().unwrap();
        assert!(long.starts_with(answer.strip_suffix(CUT_MARKER).unwrap()));

        let store = MemorySessionStore::new(SessionsConfig {
            max_turns: 50,
            ttl_seconds: 100,
            ..SessionsConfig::default()
        });
        for _ in 0..3 {
            store.append("s", big.clone()).await.unwrap();
        }
        let kept = store.recent("s", 2).await.unwrap();
        assert!(
            json_len(&kept) <= MAX_ITEM_BYTES,
            "{} bytes",
            json_len(&kept)
        );
    }

    #[test]
    fn the_window_keeps_recent_turns() {
        let turns: Vec<Turn> = [100, 1000, 1900].map(|at| turn(at, json!({}))).into();
        let recent = within_window(&turns, 2000, 1800);
        assert_eq!(
            recent.iter().map(|t| t.at).collect::<Vec<_>>(),
            vec![1000, 1900]
        );
        assert!(within_window(&turns, 9000, 1800).is_empty());
    }

    #[test]
    fn newer_parameters_win() {
        let carried = carried_parameters(&[
            turn(1, json!({"department": "Sales", "limit": 5})),
            turn(2, json!({"department": "Engineering"})),
        ]);
        assert_eq!(
            Value::Object(carried),
            json!({"department": "Engineering", "limit": 5})
        );
    }
}
