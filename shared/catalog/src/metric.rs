//! Under which names does the service report? Every metric any crate emits (through the
//! `metrics` facade; the router Lambda writes them as CloudWatch EMF), named once here so
//! the emit sites and the dashboard's test (`functions/router/tests/template.rs`) read
//! the same list. Here, the lowest crate, because crates from `switchyard-index` up to the
//! router and adapter functions emit them.
//!
//! Each constant is its value in SCREAMING_SNAKE_CASE: the dashboard's test maps the
//! constants named at the emit sites back to the names so.

/// The CloudWatch namespace the router function writes to.
pub const NAMESPACE: &str = "Switchyard";
/// The dimension of the metrics in [`PER_DATASOURCE`].
pub const DATASOURCE: &str = "Datasource";

// Latencies, per request (ms).
pub const REQUEST_LATENCY_MS: &str = "RequestLatencyMs";
pub const EMBED_LATENCY_MS: &str = "EmbedLatencyMs";
pub const SEARCH_LATENCY_MS: &str = "SearchLatencyMs";
pub const STRING_LATENCY_MS: &str = "StringLatencyMs";
pub const RERANK_LATENCY_MS: &str = "RerankLatencyMs";
pub const ROUTE_LATENCY_MS: &str = "RouteLatencyMs";
pub const ADAPTER_LATENCY_MS: &str = "AdapterLatencyMs";

// Outcomes.
pub const REQUESTS: &str = "Requests";
pub const NO_MATCH: &str = "NoMatch";
pub const CONFIDENCE: &str = "Confidence";
pub const REQUESTS_SHED: &str = "RequestsShed";
/// Partition searches left out of a question: not back within `search_timeout_ms`.
pub const SEARCH_TIMEOUTS: &str = "SearchTimeouts";
pub const ADAPTER_ERRORS: &str = "AdapterErrors";
pub const ORCHESTRATED_QUESTIONS: &str = "OrchestratedQuestions";
pub const ORCHESTRATION_COVERAGE: &str = "OrchestrationCoverage";
pub const FEEDBACK_REWARD: &str = "FeedbackReward";

// Caches.
pub const EMBED_CACHE_HITS: &str = "EmbedCacheHits";
pub const EMBED_CACHE_MISSES: &str = "EmbedCacheMisses";
/// Rerank scores answered from the rerank cache (no provider call).
pub const RERANK_CACHE_HITS: &str = "RerankCacheHits";

// Failures the request survives.
pub const RERANK_FAILURES: &str = "RerankFailures";
pub const RERANK_CACHE_ERRORS: &str = "RerankCacheErrors";
pub const SESSION_STORE_ERRORS: &str = "SessionStoreErrors";
/// Oldest turns dropped to keep a stored session within its size bound.
pub const SESSION_TURNS_TRIMMED: &str = "SessionTurnsTrimmed";
pub const TOPIC_STORE_ERRORS: &str = "TopicStoreErrors";
/// The deployment's transition counts not added to their store (kept for the next try).
pub const TRANSITION_STORE_ERRORS: &str = "TransitionStoreErrors";
pub const FEEDBACK_STORE_ERRORS: &str = "FeedbackStoreErrors";
pub const WORKFLOW_STORE_ERRORS: &str = "WorkflowStoreErrors";
pub const WORKFLOWS_BUSY: &str = "WorkflowsBusy";
pub const SPLITTER_ERRORS: &str = "SplitterErrors";
/// Requests whose handling panicked (answered 500; the process goes on).
pub const PANICS: &str = "Panics";

// The router function's life.
pub const COLD_STARTS: &str = "ColdStarts";
pub const COLD_START_INDEX_LOAD_MS: &str = "ColdStartIndexLoadMs";
pub const EMBEDDING_DRIFT: &str = "EmbeddingDrift";

// The adapter function's.
/// Requests refused because they were routed with another catalog than the function's.
pub const CATALOG_MISMATCHES: &str = "CatalogMismatches";

/// Every metric above.
pub const ALL: &[&str] = &[
    REQUEST_LATENCY_MS,
    EMBED_LATENCY_MS,
    SEARCH_LATENCY_MS,
    STRING_LATENCY_MS,
    RERANK_LATENCY_MS,
    ROUTE_LATENCY_MS,
    ADAPTER_LATENCY_MS,
    REQUESTS,
    NO_MATCH,
    CONFIDENCE,
    REQUESTS_SHED,
    SEARCH_TIMEOUTS,
    ADAPTER_ERRORS,
    ORCHESTRATED_QUESTIONS,
    ORCHESTRATION_COVERAGE,
    FEEDBACK_REWARD,
    EMBED_CACHE_HITS,
    EMBED_CACHE_MISSES,
    RERANK_CACHE_HITS,
    RERANK_FAILURES,
    RERANK_CACHE_ERRORS,
    SESSION_STORE_ERRORS,
    SESSION_TURNS_TRIMMED,
    TOPIC_STORE_ERRORS,
    TRANSITION_STORE_ERRORS,
    FEEDBACK_STORE_ERRORS,
    WORKFLOW_STORE_ERRORS,
    WORKFLOWS_BUSY,
    SPLITTER_ERRORS,
    PANICS,
    COLD_STARTS,
    COLD_START_INDEX_LOAD_MS,
    EMBEDDING_DRIFT,
    CATALOG_MISMATCHES,
];

/// The metrics emitted with a [`DATASOURCE`] dimension (and only with it).
pub const PER_DATASOURCE: &[&str] = &[REQUESTS, ADAPTER_LATENCY_MS, ADAPTER_ERRORS];
