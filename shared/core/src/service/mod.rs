//! The operations the API offers, independent of transport and wire format: route a
//! question (the four stages, each once), and query (route, then execute on the adapter
//! with the session's context, or with earlier questions the caller sends along). The HTTP
//! edge (`switchyard-http`) turns these results into the JSON users know; the router
//! Lambda and `switchyard serve` both run that edge.

mod execution;
mod feedback;
mod routed;
mod sessions;
mod tasks;
mod transitions;
mod turn;
mod workflows;

use execution::Executed;
use routed::TurnContext;
use turn::TurnRouted;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Map;

use crate::config::Config;
use crate::conversation::{acknowledgement_reply, MAX_ASSISTANT_CHARS};
use crate::error::Result;
use crate::error::ServiceError;
use crate::feedback::{FeedbackStore, MemoryFeedbackStore};
use crate::invoker::RoutedWith;
use crate::orchestration::{
    Decomposer, FusionStrategy, MemoryWorkflowStore, QuestionSplitter, WorkflowStore,
    MAX_WORKFLOW_ID_CHARS,
};
use crate::rerank::RerankStage;
pub use routed::{Plan, Routed};
use switchyard_catalog::auth::{scoped, Access};
use switchyard_catalog::blocking::run_blocking;
use switchyard_catalog::clock::unix_now;
use switchyard_catalog::metric;
use switchyard_contract::adapter::{AdapterInvoker, AdapterResponse};
use switchyard_documents::schema::{schema_context, SchemaContext};
use switchyard_documents::ChunkIndex;
use switchyard_routing::router::{Outcome, Router, Routing};
use switchyard_routing::session::{ContextUsed, SessionStore, Turn};
use switchyard_routing::topics::{MemoryTopicStore, TopicStore};
use switchyard_routing::transitions::{MemoryTransitionStore, TransitionRates, TransitionStore};
use switchyard_text::keywords::TermExpansion;
use transitions::LearnedTransitions;
pub use workflows::Orchestrated;

/// Longest session id accepted.
pub const MAX_SESSION_ID_CHARS: usize = 128;

/// A question as the caller sent it.
#[derive(Debug, Clone, Default)]
pub struct Question {
    pub query: String,
    pub session_id: Option<String>,
    /// Narrow the search to these of the caller's datasources.
    pub datasources: Option<Vec<String>>,
    /// Resume this split question's workflow from its last checkpoint (or start one
    /// under this id).
    pub workflow_id: Option<String>,
    /// How a split question's answers are fused (`orchestration.fusion` otherwise).
    pub fusion: Option<FusionStrategy>,
    /// A documents search's metadata filters (checked by its adapter).
    pub filters: Map<String, serde_json::Value>,
    /// Whose ids `session_id` and `workflow_id` are (`auth::owner`; set by the transport
    /// from the caller's identity, never from the body). Empty: one tenant.
    pub owner: String,
    /// What the assistant said just before this question (a chat application's last
    /// assistant message); without it, a session's last answer plays that part.
    pub assistant: Option<String>,
    /// Whether `assistant` is one of Switchyard's own answers (a chat history's assistant
    /// messages are): then only what it asks is evidence (`conversation::Said`). The
    /// session's last answer is known to be ours without it.
    pub assistant_is_ours: bool,
}

impl Question {
    /// The session store's key for this caller's `session_id`.
    fn session_key(&self) -> Option<String> {
        self.session_id.as_deref().map(|id| scoped(&self.owner, id))
    }

    /// Check every field; errors name the field.
    pub fn validate(&self) -> Result<()> {
        Router::validate_query(&self.query)?;
        if let Some(id) = &self.session_id {
            if id.is_empty() || id.chars().count() > MAX_SESSION_ID_CHARS {
                return Err(ServiceError::invalid_request(
                    "session_id",
                    format!("must be a string of 1 to {MAX_SESSION_ID_CHARS} characters"),
                ));
            }
        }
        if let Some(said) = &self.assistant {
            if said.chars().count() > MAX_ASSISTANT_CHARS {
                return Err(ServiceError::invalid_request(
                    "assistant",
                    format!("must be at most {MAX_ASSISTANT_CHARS} characters"),
                ));
            }
        }
        if let Some(id) = &self.workflow_id {
            let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
            if id.is_empty() || id.len() > MAX_WORKFLOW_ID_CHARS || !id.chars().all(allowed) {
                return Err(ServiceError::invalid_request(
                    "workflow_id",
                    format!(
                        "must be 1 to {MAX_WORKFLOW_ID_CHARS} letters, digits, '-', '_' or '.'"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// A query's answer: the routing, and with `execute` what the adapter said.
#[derive(Debug)]
pub struct Answer {
    pub request_id: String,
    pub routed: Routed,
    /// Present when the outcome is `execute` on one template.
    pub execution: Option<Execution>,
    /// Present when the question was split into sub-questions (then `execution` is not).
    pub orchestration: Option<Orchestrated>,
    /// With `no_match`, `llm.text_to_sql` and SQL tables near the question: the query the
    /// chat model wrote over them, run on their datasource (labelled generated).
    pub generated: Option<Execution>,
    pub session: SessionUse,
    /// The turn only acknowledged the previous answer ("thanks"): nothing ran, and this
    /// is the reply.
    pub acknowledged: Option<String>,
}

#[derive(Debug)]
pub struct Execution {
    pub adapter: switchyard_contract::error::Result<AdapterResponse>,
    pub adapter_ms: f64,
}

/// What the session contributed and whether the turn was saved.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionUse {
    /// The question named no session.
    None,
    /// The store answered with this many turns within the window; `saved` says whether
    /// this turn was recorded (absent when routing only).
    Used {
        turns: usize,
        saved: Option<std::result::Result<(), String>>,
    },
    /// The store failed: answered without context.
    Unavailable { error: String },
}

pub struct Service {
    /// The whole configuration; the router holds its own sections of it.
    config: Config,
    router: Router,
    /// What splitting a question needs from the catalog, built once.
    decomposer: Decomposer,
    invoker: Arc<dyn AdapterInvoker>,
    sessions: Arc<dyn SessionStore>,
    rerank: Option<RerankStage>,
    feedback: Arc<dyn FeedbackStore>,
    workflows: Arc<dyn WorkflowStore>,
    topics: Arc<dyn TopicStore>,
    /// How this deployment's conversations move, learned from its sessions.
    transitions: LearnedTransitions,
    splitter: Option<Arc<dyn QuestionSplitter>>,
    /// SQL datasources' tables, searched when no template fits.
    schema: Option<ChunkIndex>,
}

impl Service {
    /// `router` must be built with `config`'s sections (`Config::router`). Decisions for
    /// feedback are kept in memory until [`Service::with_feedback`].
    pub fn new(
        config: Config,
        router: Router,
        invoker: Arc<dyn AdapterInvoker>,
        sessions: Arc<dyn SessionStore>,
    ) -> Self {
        debug_assert!(
            router.config() == &config.router(),
            "the router is built with other sections than the service's configuration"
        );
        let capacity = config.feedback.memory_capacity;
        let topics = MemoryTopicStore::new(&config.sessions.topics, capacity);
        // Every request names the catalog it was routed with (the adapter function checks).
        let invoker = Arc::new(RoutedWith::new(invoker, &router.index().catalog));
        let transitions = LearnedTransitions::new(
            Arc::new(MemoryTransitionStore::default()),
            templates_per_datasource(&router),
        );
        Service {
            decomposer: Decomposer::new(&router.index().catalog, &config.orchestration),
            config,
            router,
            invoker,
            sessions,
            rerank: None,
            feedback: Arc::new(MemoryFeedbackStore::new(capacity)),
            workflows: Arc::new(MemoryWorkflowStore::default()),
            topics: Arc::new(topics),
            transitions,
            splitter: None,
            schema: None,
        }
    }

    /// Point questions no template fits at the SQL tables that could answer them.
    pub fn with_schema(mut self, schema: ChunkIndex) -> Self {
        self.schema = Some(schema);
        self
    }

    /// The tables nearest to a question no template fits, among the datasources `access`
    /// allows; embedding failures leave the search to BM25.
    fn schema_context(&self, query: &str, access: &Access) -> Option<SchemaContext> {
        let schema = self.schema.as_ref()?;
        let embedder = self.router.documents_embedder();
        let vector = (schema.manifest.model_id == embedder.model_id())
            .then(|| embedder.embed_one(&self.router.embedding_text(query)).ok())
            .flatten();
        let allowed: Option<Vec<String>> = match access {
            Access::All => None,
            Access::Only(names) => Some(names.iter().cloned().collect()),
        };
        let config = &self.config;
        schema_context(
            schema,
            query,
            vector.as_deref(),
            allowed.as_deref(),
            &config.documents,
            &TermExpansion::new(&config.composite_retrieval.keywords.term_expansion),
        )
    }

    /// Checkpoint split questions' workflows in this store (DynamoDB on AWS).
    pub fn with_workflows(mut self, store: Arc<dyn WorkflowStore>) -> Self {
        self.workflows = store;
        self
    }

    /// Keep callers' topic words in this store (DynamoDB on AWS).
    pub fn with_topics(mut self, store: Arc<dyn TopicStore>) -> Self {
        self.topics = store;
        self
    }

    /// Keep the deployment's transition counts in this store (DynamoDB on AWS).
    pub fn with_transitions(mut self, store: Arc<dyn TransitionStore>) -> Self {
        self.transitions = LearnedTransitions::new(store, templates_per_datasource(&self.router));
        self
    }

    /// How this deployment's conversations move, as this instance knows now (`/v1/stats`).
    pub fn transition_rates(&self) -> TransitionRates {
        self.transitions.rates(&self.config.sessions)
    }

    /// Keep decisions and feedback in this store (DynamoDB on AWS).
    pub fn with_feedback(mut self, store: Arc<dyn FeedbackStore>) -> Self {
        self.feedback = store;
        self
    }

    /// Rerank close calls with this stage (`composite_retrieval.reranking.enabled` on).
    pub fn with_rerank(mut self, stage: RerankStage) -> Self {
        self.rerank = Some(stage);
        self
    }

    pub fn router(&self) -> &Router {
        &self.router
    }

    /// The configuration the service and its router run with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Route `question` for a caller with `access`: retrieve → string similarity →
    /// rerank → decide, then weigh the session's turns (read, not written).
    pub async fn route(
        &self,
        question: &Question,
        access: &Access,
    ) -> Result<Routed, ServiceError> {
        question.validate()?;
        let now = unix_now();
        let context = self.read_context(question, now).await;
        self.route_in_context(question, access, &context, now, true)
            .await
    }

    /// Route `question`, execute it on the winner's adapter with the session's context,
    /// and record the turn.
    pub async fn query(
        &self,
        question: &Question,
        access: &Access,
    ) -> Result<Answer, ServiceError> {
        self.query_after(&[], question, access).await
    }

    /// [`Service::query`] in the conversation of `earlier` (the caller's own earlier
    /// questions, oldest first: a chat's earlier messages) instead of a session's. Each is
    /// routed as a turn, in the turns before it, and never executed (a template with side
    /// effects fires once, for `question`); the turns live in this call alone, so nothing
    /// is read from or written to the session and topic stores and concurrent callers
    /// cannot meet there. With `earlier` given, no question may name a session.
    pub async fn query_after(
        &self,
        earlier: &[Question],
        question: &Question,
        access: &Access,
    ) -> Result<Answer, ServiceError> {
        for asked in earlier.iter().chain([question]) {
            asked.validate()?;
            if !earlier.is_empty() && asked.session_id.is_some() {
                return Err(ServiceError::invalid_request(
                    "session_id",
                    "must be absent when the earlier questions are given",
                ));
            }
        }
        let now = unix_now();
        let lease = self.claim_workflow(question, now).await?;
        let answer = self.answer(question, earlier, access, now).await;
        if let Some(lease) = lease {
            self.release_workflow(&lease).await;
        }
        answer
    }

    /// A query's steps, in order: claim (the workflow to resume; its lease is `query`'s)
    /// → context (the session's, or the turns of `earlier`) → route → plan → execute →
    /// record.
    async fn answer(
        &self,
        question: &Question,
        earlier: &[Question],
        access: &Access,
        now: i64,
    ) -> Result<Answer> {
        let resumed = self.resumable(question, now).await?;
        let context = match earlier {
            [] => self.read_context(question, now).await,
            _ => self.given_context(earlier, access, now).await?,
        };
        let routed = self
            .route_in_context(question, access, &context, now, resumed.is_none())
            .await?;
        let request_id = new_request_id();
        // A message that resumes a workflow ("ok" to a partial answer) is never one.
        if resumed.is_none() && self.only_acknowledges(question, &routed, &context) {
            // Nothing runs and the session keeps no turn: the conversation is where it was.
            return Ok(Answer {
                request_id,
                session: SessionUse::Used {
                    turns: context.turns().map_or(0, <[Turn]>::len),
                    saved: None,
                },
                acknowledged: Some(acknowledgement_reply(&question.query).to_owned()),
                routed,
                execution: None,
                orchestration: None,
                generated: None,
            });
        }
        let workflow = self.plan_workflow(question, resumed, &routed, &request_id, now);
        let executed = self
            .execute_routed(question, &routed, workflow, &context, &request_id, now)
            .await;
        let session = self
            .record_turn(question, &routed, context, &executed, now)
            .await;
        self.record_decision(question, &routed.routing, &executed, &request_id, now)
            .await;
        let Executed {
            execution,
            orchestration,
            generated,
        } = executed;
        Ok(Answer {
            request_id,
            routed,
            execution,
            orchestration,
            generated,
            session,
            acknowledged: None,
        })
    }

    /// Route in the session's context: the four stages on the question and the
    /// conversation's other texts, the conversation's decision, then (no routing changes
    /// after this) the tables that could answer a `no_match` and the split.
    async fn route_in_context(
        &self,
        question: &Question,
        access: &Access,
        context: &TurnContext,
        now: i64,
        may_split: bool,
    ) -> Result<Routed> {
        let access = self.access_for(question, access)?;
        let TurnRouted {
            routing,
            context: context_report,
            belief,
            transition,
        } = self.route_turn(question, &access, context, now).await?;
        record_routing(&routing, question);
        let schema = match routing.outcome {
            Outcome::NoMatch => run_blocking(|| self.schema_context(&question.query, &access)),
            _ => None,
        };
        let mut routed = Routed {
            routing,
            context: context_report,
            belief,
            transition,
            schema,
            decomposition: None,
            plan: None,
        };
        // A turn that answers the conversation's pending question is never split.
        let own_turn = routed
            .context
            .as_ref()
            .is_none_or(|c| c.used == ContextUsed::Turn);
        if may_split && own_turn && self.config.orchestration.enabled {
            let (decomposition, plan) = self.split(&routed.routing, &access).await?;
            routed.decomposition = Some(decomposition);
            routed.plan = plan;
        }
        Ok(routed)
    }

    /// The caller's access, narrowed to the question's `datasources`.
    fn access_for(&self, question: &Question, access: &Access) -> Result<Access> {
        match &question.datasources {
            Some(names) => Ok(access.narrow(names, &self.router.index().catalog)?),
            None => Ok(access.clone()),
        }
    }
}

/// The catalog's datasources' template counts.
fn templates_per_datasource(router: &Router) -> Vec<usize> {
    let catalog = &router.index().catalog;
    catalog
        .datasources
        .iter()
        .map(|d| d.templates.len())
        .collect()
}

/// Per-request metrics (the router Lambda writes them as CloudWatch EMF; elsewhere they
/// go to whatever `metrics` recorder is installed, or nowhere) and the routed log line.
fn record_routing(routing: &Routing, question: &Question) {
    let t = &routing.timings;
    metrics::histogram!(metric::EMBED_LATENCY_MS).record(t.embedding_ms);
    metrics::histogram!(metric::SEARCH_LATENCY_MS).record(t.search_ms);
    metrics::histogram!(metric::STRING_LATENCY_MS).record(t.string_similarity_ms);
    metrics::histogram!(metric::RERANK_LATENCY_MS).record(t.rerank_ms);
    metrics::histogram!(metric::ROUTE_LATENCY_MS).record(t.total_ms);
    match routing.selected_match() {
        Some(m) => {
            metrics::counter!(metric::REQUESTS, metric::DATASOURCE => m.datasource.clone())
                .increment(1);
            metrics::histogram!(metric::CONFIDENCE).record(f64::from(m.scores.combined_score));
        }
        None => metrics::counter!(metric::NO_MATCH).increment(1),
    }
    let selected = routing.selected_match();
    tracing::info!(
        query_chars = question.query.chars().count(),
        session_id = question.session_id.as_deref().unwrap_or(""),
        datasource = selected.map(|m| m.datasource.as_str()).unwrap_or(""),
        template = selected.map(|m| m.template_id.as_str()).unwrap_or(""),
        outcome = ?routing.outcome,
        score = routing.best().map(|m| m.scores.combined_score).unwrap_or(0.0),
        embedding_ms = t.embedding_ms,
        search_ms = t.search_ms,
        string_similarity_ms = t.string_similarity_ms,
        rerank_ms = t.rerank_ms,
        total_ms = t.total_ms,
        "routed"
    );
}

/// Time first (ids sort by time), then 64 random bits: a request id is what
/// `POST /v1/feedback` needs to judge an answer, so it must not be guessable.
/// A fresh id: time-ordered, with 64 random bits (requests, A2A tasks and contexts).
pub fn new_request_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut random = [0u8; 8];
    if getrandom::fill(&mut random).is_err() {
        // No entropy source: distinct still, by a process-wide counter.
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        random = COUNTER.fetch_add(1, Ordering::Relaxed).to_be_bytes();
    }
    format!("{nanos:016x}-{}", hex::encode(random))
}
