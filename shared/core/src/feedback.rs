//! Outcome feedback: how well an answer served its caller, stored with the routing decision
//! it judges, so `switchyard tune` can fit the threshold and clarify margin to what callers
//! experienced. Nothing changes live: `tune` writes a patch a person reviews and applies.
//!
//! The reward is the design's: `0.4·search_quality + 0.3·agent_success +
//! 0.3·user_satisfaction`, normalised over the parts given, minus
//! `0.1·(1 − 1/(1 + seconds/10))` for the answer's processing time, clamped to [0, 1].
//! In memory locally, DynamoDB on AWS (`switchyard-aws`), with a TTL.
//!
//! A decision is kept under its request id scoped by the caller that got the answer
//! ([`decision_key`]: `auth::scoped`, as sessions are), so only that caller can judge it;
//! another caller's feedback on the same id finds nothing, as for an unknown id (404, so a
//! request id tells nothing about whether it exists). With `auth.required` off there is one
//! caller, and the key is the request id.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::error::{Result, ServiceError};
use switchyard_catalog::bounded::{cut, json_len, MAX_ITEM_BYTES};
use switchyard_catalog::BoxFuture;
use switchyard_contract::error::ContractError;
use switchyard_routing::router::{Outcome, Routing};

/// What the router decided for one answered request: enough to replay the decision at
/// another threshold or clarify margin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub request_id: String,
    /// The chosen template (or the best one, for `clarify` and `no_match`).
    pub datasource: Option<String>,
    pub template_id: Option<String>,
    pub outcome: Outcome,
    /// The best template's confidence, compared with the threshold.
    pub confidence: f32,
    /// Ranking-score gap between the best two templates (what the clarify margin gates).
    pub margin: Option<f32>,
    pub threshold: f32,
    /// From routing to the adapter's answer, milliseconds.
    pub processing_ms: f64,
    /// Unix seconds.
    pub at: i64,
    /// The question (with `sessions.store_text` only): what `switchyard suggest` learns
    /// new examples from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// The caller's session (scoped to its owner), so a question re-asked in other words
    /// a few seconds later can be told apart from a new one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

impl Decision {
    /// `asked` is the question's text and session key, when they may be kept.
    pub fn of(
        routing: &Routing,
        request_id: &str,
        processing_ms: f64,
        at: i64,
        asked: Option<(&str, Option<&str>)>,
    ) -> Decision {
        let best = routing.best();
        let margin = match (routing.matches.first(), routing.matches.get(1)) {
            (Some(first), Some(second)) if !second.is_declined() => {
                Some(first.scores.rank_score - second.scores.rank_score)
            }
            _ => None,
        };
        Decision {
            request_id: request_id.to_owned(),
            datasource: best.map(|m| m.datasource.clone()),
            template_id: best.map(|m| m.template_id.clone()),
            outcome: routing.outcome,
            confidence: best.map_or(0.0, |m| m.scores.combined_score),
            margin,
            threshold: routing.threshold,
            processing_ms,
            at,
            query: asked.map(|(query, _)| query.to_owned()),
            session_id: asked.and_then(|(_, session)| session.map(str::to_owned)),
        }
    }
}

/// A caller's judgement of one answer; any of the three parts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Feedback {
    /// 0 to 1.
    pub user_satisfaction: Option<f32>,
    pub agent_success: Option<bool>,
    /// 0 to 1.
    pub search_quality: Option<f32>,
    /// The template that should have answered, `<datasource>/<template_id>`, or `none`
    /// when none of the catalog's should have (a clarify answered with a choice, a
    /// correction): what `switchyard suggest` learns examples from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_template: Option<String>,
}

/// What a judge said should have answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected<'a> {
    Template {
        datasource: &'a str,
        template_id: &'a str,
    },
    None,
}

impl Expected<'_> {
    /// `<datasource>/<template_id>` or `none`; anything else is refused.
    pub fn parse(text: &str) -> Option<Expected<'_>> {
        if text == "none" {
            return Some(Expected::None);
        }
        let (datasource, template_id) = text.split_once('/')?;
        (!datasource.is_empty() && !template_id.is_empty() && !template_id.contains('/')).then_some(
            Expected::Template {
                datasource,
                template_id,
            },
        )
    }
}

impl Feedback {
    /// At least one part, and every part given in range; errors name the field.
    pub fn validate(&self) -> Result<()> {
        for (field, value) in [
            ("user_satisfaction", self.user_satisfaction),
            ("search_quality", self.search_quality),
        ] {
            if let Some(v) = value {
                if !(0.0..=1.0).contains(&v) {
                    return Err(ServiceError::invalid_request(
                        field,
                        format!("must be between 0 and 1, not {v}"),
                    ));
                }
            }
        }
        if let Some(expected) = &self.expected_template {
            if Expected::parse(expected).is_none() {
                return Err(ServiceError::invalid_request(
                    "expected_template",
                    format!("must be `<datasource>/<template_id>` or `none`, not `{expected}`"),
                ));
            }
        }
        if self.user_satisfaction.is_none()
            && self.agent_success.is_none()
            && self.search_quality.is_none()
            && self.expected_template.is_none()
        {
            return Err(ServiceError::invalid_request(
                "body",
                "give at least one of user_satisfaction, agent_success, search_quality, expected_template",
            ));
        }
        Ok(())
    }

    /// The reward for an answer that took `seconds` (see the module comment).
    pub fn reward(&self, seconds: f64) -> f32 {
        let parts = [
            (0.4, self.search_quality),
            (0.3, self.agent_success.map(|s| if s { 1.0 } else { 0.0 })),
            (0.3, self.user_satisfaction),
        ];
        let (weighted, weights) = parts
            .iter()
            .filter_map(|(w, v)| v.map(|v| (w * v, *w)))
            .fold((0.0f32, 0.0f32), |(a, b), (x, w)| (a + x, b + w));
        let quality = if weights > 0.0 {
            weighted / weights
        } else {
            0.0
        };
        let slowness = 0.1 * (1.0 - 1.0 / (1.0 + seconds.max(0.0) / 10.0)) as f32;
        (quality - slowness).clamp(0.0, 1.0)
    }
}

/// A decision and, once given, its feedback and reward.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeedbackRecord {
    pub decision: Decision,
    #[serde(default)]
    pub feedback: Option<Feedback>,
    #[serde(default)]
    pub reward: Option<f32>,
}

/// Where the decision of `owner`'s answer `request_id` is kept: the request id scoped by
/// its caller (`auth::scoped`; the id itself with one tenant).
pub fn decision_key(owner: &str, request_id: &str) -> String {
    switchyard_catalog::auth::scoped(owner, request_id)
}

/// Decisions by [`decision_key`], and the feedback on them. Boxed futures keep it usable as
/// `dyn FeedbackStore`.
pub trait FeedbackStore: Send + Sync {
    /// Keep `decision` under `key` ([`decision_key`]).
    fn record<'a>(
        &'a self,
        key: &'a str,
        decision: Decision,
    ) -> BoxFuture<'a, switchyard_contract::error::Result<()>>;

    /// Attach feedback to the decision kept under `key`, as the latest `record` left it
    /// (a consistent read: feedback sent right after its answer finds it); `None` when no
    /// such decision is kept (unknown, another caller's, or expired). Later feedback on the
    /// same request replaces earlier.
    fn judge<'a>(
        &'a self,
        key: &'a str,
        feedback: Feedback,
    ) -> BoxFuture<'a, switchyard_contract::error::Result<Option<FeedbackRecord>>>;

    /// Every kept record (for `switchyard tune --table`).
    fn all(&self) -> BoxFuture<'_, switchyard_contract::error::Result<Vec<FeedbackRecord>>>;
}

/// The reward of `feedback` on `decision`, recorded ([`FeedbackRecord::bounded`]).
pub fn judged(decision: Decision, feedback: Feedback) -> FeedbackRecord {
    let reward = feedback.reward(decision.processing_ms / 1000.0);
    FeedbackRecord {
        decision,
        feedback: Some(feedback),
        reward: Some(reward),
    }
    .bounded()
}

/// `decision` recorded, not judged yet ([`FeedbackRecord::bounded`]).
pub fn unjudged(decision: Decision) -> FeedbackRecord {
    FeedbackRecord {
        decision,
        feedback: None,
        reward: None,
    }
    .bounded()
}

impl FeedbackRecord {
    /// The record as every store keeps it: whole while its JSON is under
    /// [`MAX_ITEM_BYTES`]; beyond, its texts (the question, the expected template, the
    /// ids) are cut, to 16 KiB, then 1 KiB, then 128 bytes, with `bounded::CUT_MARKER`.
    pub fn bounded(mut self) -> FeedbackRecord {
        for keep in [16_384, 1_024, 128] {
            if json_len(&self) <= MAX_ITEM_BYTES {
                break;
            }
            let decision = &mut self.decision;
            let texts = [
                Some(&mut decision.request_id),
                decision.query.as_mut(),
                decision.session_id.as_mut(),
                decision.datasource.as_mut(),
                decision.template_id.as_mut(),
                self.feedback
                    .as_mut()
                    .and_then(|f| f.expected_template.as_mut()),
            ];
            for text in texts.into_iter().flatten() {
                cut(text, keep);
            }
        }
        self
    }
}

/// Records in this process (local `serve`, tests): the newest `capacity`.
pub struct MemoryFeedbackStore {
    capacity: usize,
    records: Mutex<(HashMap<String, FeedbackRecord>, VecDeque<String>)>,
}

impl MemoryFeedbackStore {
    pub fn new(capacity: usize) -> Self {
        MemoryFeedbackStore {
            capacity: capacity.max(1),
            records: Mutex::new((HashMap::new(), VecDeque::new())),
        }
    }
}

impl Default for MemoryFeedbackStore {
    fn default() -> Self {
        MemoryFeedbackStore::new(100_000)
    }
}

impl FeedbackStore for MemoryFeedbackStore {
    fn record<'a>(
        &'a self,
        key: &'a str,
        decision: Decision,
    ) -> BoxFuture<'a, switchyard_contract::error::Result<()>> {
        Box::pin(async move {
            let mut guard = self.records.lock().unwrap_or_else(|e| e.into_inner());
            let (records, order) = &mut *guard;
            let record = unjudged(decision);
            if records.insert(key.to_owned(), record).is_none() {
                order.push_back(key.to_owned());
            }
            while order.len() > self.capacity {
                if let Some(oldest) = order.pop_front() {
                    records.remove(&oldest);
                }
            }
            Ok(())
        })
    }

    fn judge<'a>(
        &'a self,
        key: &'a str,
        feedback: Feedback,
    ) -> BoxFuture<'a, switchyard_contract::error::Result<Option<FeedbackRecord>>> {
        Box::pin(async move {
            let mut guard = self.records.lock().unwrap_or_else(|e| e.into_inner());
            Ok(guard.0.get_mut(key).map(|record| {
                *record = judged(record.decision.clone(), feedback);
                record.clone()
            }))
        })
    }

    fn all(&self) -> BoxFuture<'_, switchyard_contract::error::Result<Vec<FeedbackRecord>>> {
        Box::pin(async move {
            let guard = self.records.lock().unwrap_or_else(|e| e.into_inner());
            let mut all: Vec<FeedbackRecord> = guard.0.values().cloned().collect();
            all.sort_by(|a, b| a.decision.request_id.cmp(&b.decision.request_id));
            Ok(all)
        })
    }
}

/// Records in this process, each also appended to a JSON-lines file as it is made and
/// again when it is judged (`switchyard serve --traffic FILE`): what `suggest` and `tune`
/// read, a request's later line replacing its earlier one. Lines are only ever appended, so
/// nothing a reader has seen is rewritten.
pub struct JsonLinesFeedbackStore {
    memory: MemoryFeedbackStore,
    path: std::path::PathBuf,
    file: Mutex<std::fs::File>,
}

impl JsonLinesFeedbackStore {
    /// Append to `path` (created if missing); the error names the file.
    pub fn open(path: &std::path::Path) -> switchyard_contract::error::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| Self::failed(path, e))?;
        Ok(JsonLinesFeedbackStore {
            memory: MemoryFeedbackStore::default(),
            path: path.to_owned(),
            file: Mutex::new(file),
        })
    }

    fn failed(path: &std::path::Path, e: std::io::Error) -> ContractError {
        ContractError::Store {
            store: format!("traffic file {}", path.display()),
            message: e.to_string(),
            source: Some(Box::new(e)),
        }
    }

    fn append(&self, record: &FeedbackRecord) -> switchyard_contract::error::Result<()> {
        use std::io::Write;
        let mut line = serde_json::to_string(record)
            .map_err(|e| ContractError::store(self.path.display().to_string(), e.to_string()))?;
        line.push('\n');
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        // One write per line: appends from concurrent requests never interleave.
        file.write_all(line.as_bytes())
            .map_err(|e| Self::failed(&self.path, e))
    }
}

impl FeedbackStore for JsonLinesFeedbackStore {
    fn record<'a>(
        &'a self,
        key: &'a str,
        decision: Decision,
    ) -> BoxFuture<'a, switchyard_contract::error::Result<()>> {
        Box::pin(async move {
            let record = unjudged(decision);
            self.append(&record)?;
            self.memory.record(key, record.decision).await
        })
    }

    fn judge<'a>(
        &'a self,
        key: &'a str,
        feedback: Feedback,
    ) -> BoxFuture<'a, switchyard_contract::error::Result<Option<FeedbackRecord>>> {
        Box::pin(async move {
            let judged = self.memory.judge(key, feedback).await?;
            if let Some(record) = &judged {
                self.append(record)?;
            }
            Ok(judged)
        })
    }

    fn all(&self) -> BoxFuture<'_, switchyard_contract::error::Result<Vec<FeedbackRecord>>> {
        self.memory.all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reward_is_normalised_over_the_parts_given_and_pays_for_time() {
        let all = Feedback {
            user_satisfaction: Some(1.0),
            agent_success: Some(true),
            search_quality: Some(0.5),
            expected_template: None,
        };
        assert!((all.reward(0.0) - 0.8).abs() < 1e-6, "{}", all.reward(0.0));
        let success_only = Feedback {
            agent_success: Some(true),
            ..Feedback::default()
        };
        assert_eq!(
            success_only.reward(0.0),
            1.0,
            "normalised over what was given"
        );
        // 10 seconds cost 0.1 × (1 − 1/2) = 0.05.
        assert!((success_only.reward(10.0) - 0.95).abs() < 1e-6);
        let failure = Feedback {
            agent_success: Some(false),
            ..Feedback::default()
        };
        assert_eq!(failure.reward(30.0), 0.0, "clamped at 0");
    }

    /// A decision that matched nothing, at `at`.
    fn unmatched(request_id: &str, at: i64) -> Decision {
        Decision {
            request_id: request_id.into(),
            datasource: None,
            template_id: None,
            outcome: Outcome::NoMatch,
            confidence: 0.1,
            margin: None,
            threshold: 0.4,
            processing_ms: 1.0,
            at,
            query: None,
            session_id: None,
        }
    }

    #[tokio::test]
    async fn the_memory_store_keeps_the_newest_decisions() {
        let store = MemoryFeedbackStore::new(2);
        for n in 0..3 {
            let decision = unmatched(&format!("r{n}"), n);
            store.record(&format!("r{n}"), decision).await.unwrap();
        }
        let success = Feedback {
            agent_success: Some(true),
            ..Feedback::default()
        };
        assert!(store.judge("r0", success.clone()).await.unwrap().is_none());
        let judged = store.judge("r2", success).await.unwrap().unwrap();
        assert!(judged.reward.is_some_and(|r| r > 0.999), "{judged:?}");
        assert_eq!(store.all().await.unwrap().len(), 2);
    }

    #[tokio::test]
    async fn a_decision_is_judged_only_under_its_callers_key() {
        let store = MemoryFeedbackStore::default();
        let decision = unmatched("r1", 0);
        let ann = decision_key("principal:ann", "r1");
        store.record(&ann, decision).await.unwrap();
        let success = Feedback {
            agent_success: Some(true),
            ..Feedback::default()
        };
        let bob = decision_key("principal:bob", "r1");
        assert!(store.judge(&bob, success.clone()).await.unwrap().is_none());
        assert!(store.judge("r1", success.clone()).await.unwrap().is_none());
        let judged = store.judge(&ann, success).await.unwrap().unwrap();
        assert_eq!(judged.decision.request_id, "r1", "the answer's own id");
        assert_eq!(decision_key("", "r1"), "r1", "one tenant: the id itself");
    }

    /// A record past twice the item budget in multibyte text (its question and expected
    /// template): recorded and judged under the budget by every store, still parsing.
    #[tokio::test]
    async fn a_record_twice_the_budget_in_multibyte_text_is_kept_under_it() {
        let long = "é漢🚀".repeat(2 * MAX_ITEM_BYTES / 9 + 1);
        let decision = Decision {
            request_id: "r1".into(),
            datasource: Some("hr".into()),
            template_id: Some("t".into()),
            outcome: Outcome::Execute,
            confidence: 0.9,
            margin: None,
            threshold: 0.4,
            processing_ms: 1.0,
            at: 0,
            query: Some(long.clone()),
            session_id: None,
        };
        let feedback = Feedback {
            expected_template: Some(format!("hr/{long}")),
            ..Feedback::default()
        };
        let whole = FeedbackRecord {
            decision: decision.clone(),
            feedback: Some(feedback.clone()),
            reward: None,
        };
        assert!(json_len(&whole) > 2 * MAX_ITEM_BYTES);
        let check = |record: &FeedbackRecord| {
            let json = serde_json::to_string(record).unwrap();
            assert!(json.len() <= MAX_ITEM_BYTES, "{} bytes", json.len());
            let back: FeedbackRecord = serde_json::from_str(&json).unwrap();
            let query = back.decision.query.unwrap();
            let kept = query
                .strip_suffix(switchyard_catalog::bounded::CUT_MARKER)
                .unwrap();
            assert!(long.starts_with(kept) && !kept.is_empty());
            assert_eq!(back.decision.request_id, "r1");
        };
        check(&judged(decision.clone(), feedback.clone()));
        let store = MemoryFeedbackStore::default();
        store.record("r1", decision).await.unwrap();
        check(&store.all().await.unwrap()[0]);
        check(&store.judge("r1", feedback).await.unwrap().unwrap());
    }

    #[test]
    fn feedback_needs_a_part_in_range() {
        assert!(Feedback::default().validate().is_err());
        let out_of_range = Feedback {
            search_quality: Some(1.5),
            ..Feedback::default()
        };
        let error = out_of_range.validate().unwrap_err().to_string();
        assert!(error.contains("search_quality"), "{error}");
    }

    #[tokio::test]
    async fn the_traffic_file_gets_each_decision_then_its_judgement_appended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("traffic.jsonl");
        std::fs::write(&path, "{\"kept\": \"an earlier run's line\"}\n").unwrap();
        let store = JsonLinesFeedbackStore::open(&path).unwrap();
        for n in 0..2 {
            let decision = Decision {
                request_id: format!("r{n}"),
                datasource: Some("tools".into()),
                template_id: Some("calculator_percentage".into()),
                outcome: Outcome::Execute,
                confidence: 0.9,
                margin: None,
                threshold: 0.4,
                processing_ms: 1.0,
                at: n,
                query: Some("What is 15% of 200?".into()),
                session_id: None,
            };
            store.record(&format!("r{n}"), decision).await.unwrap();
        }
        let feedback = Feedback {
            expected_template: Some("none".into()),
            ..Feedback::default()
        };
        store.judge("r1", feedback.clone()).await.unwrap().unwrap();
        assert!(store.judge("unknown", feedback).await.unwrap().is_none());
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(
            lines[0].contains("an earlier run"),
            "appended, never rewritten"
        );
        let last: FeedbackRecord = serde_json::from_str(lines[3]).unwrap();
        assert_eq!(last.decision.request_id, "r1");
        assert!(last
            .feedback
            .is_some_and(|f| f.expected_template.as_deref() == Some("none")));
        assert_eq!(store.all().await.unwrap().len(), 2);

        let missing = dir.path().join("no-such-folder/traffic.jsonl");
        let message = JsonLinesFeedbackStore::open(&missing)
            .err()
            .unwrap()
            .to_string();
        assert!(message.contains("no-such-folder"), "{message}");
    }
}
