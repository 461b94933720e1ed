//! The configuration's sections and fields, as `config.yaml` spells them.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub composite_retrieval: CompositeRetrieval,
    pub embedding: EmbeddingConfig,
    pub llm: LlmConfig,
    pub index: IndexConfig,
    pub sessions: SessionsConfig,
    pub feedback: FeedbackConfig,
    pub orchestration: OrchestrationConfig,
    pub documents: DocumentsConfig,
    pub rerank_cache: RerankCacheConfig,
    pub auth: AuthConfig,
    pub server: ServerConfig,
}

/// Admission to the HTTP app: requests beyond `max_in_flight` wait, at most `max_queued`
/// of them; the rest are answered 503 with `Retry-After` at once, so latency stays
/// bounded under overload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    pub max_in_flight: usize,
    pub max_queued: usize,
    pub retry_after_seconds: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeedbackConfig {
    /// Keep each answer's routing decision, so `POST /v1/feedback` can judge it.
    pub enabled: bool,
    /// How long a decision waits for feedback (the DynamoDB item's `expires_at`).
    pub ttl_seconds: u64,
    /// Decisions kept in memory when there is no table (local `serve`).
    pub memory_capacity: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionsConfig {
    pub max_turns: usize,
    /// Sessions kept in memory when there is no table (local `serve`): at capacity the
    /// expired go first, then those expiring soonest.
    pub memory_capacity: usize,
    pub ttl_seconds: u64,
    /// Turns older than this (seconds) are not context any more.
    pub window_seconds: u64,
    /// Keep the question's text with its turn (the context hypothesis reads the previous
    /// question); off, only the routing decision and parameters are kept.
    pub store_text: bool,
    pub context: ContextConfig,
    pub topics: TopicsConfig,
}

/// A caller's topic words across its sessions, a weak prior (`switchyard_core::topics`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopicsConfig {
    /// Needs `store_text` as well: topics are the questions' words.
    pub enabled: bool,
    /// A word unused this long is forgotten (the DynamoDB item's `expires_at` too).
    pub ttl_seconds: u64,
    /// A word's weight halves every this many seconds.
    pub half_life_seconds: u64,
    /// The heaviest words kept per caller.
    pub max_words: usize,
    /// A template's prior is multiplied by `1 + weight × share` (the share of the caller's
    /// topic weight on the template's words).
    pub weight: f32,
}

/// How the turns before a question weigh on its routing (`switchyard_core::conversation`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextConfig {
    pub enabled: bool,
    /// Weight of a turn continuing the previous turn's template (the transitions are
    /// relative weights; the belief is normalised after each turn).
    pub stay: f32,
    /// ... of moving from a lookup template to an action template of the same datasource.
    pub lookup_to_action: f32,
    /// ... of moving to another template of the same datasource otherwise.
    pub same_datasource: f32,
    /// ... of moving to a template of another datasource.
    pub other_datasource: f32,
    /// A template is an action when its description starts with one of these verbs.
    pub action_verbs: Vec<String>,
    /// The turn's own probabilities are raised to this power (below 1 trusts them less)...
    pub evidence_power: f32,
    /// ... scaled down linearly between these confidences of the turn's best template:
    /// "Sure, that is great." matches nothing well and says little about the template.
    pub uninformative_below: f32,
    pub informative_above: f32,
    /// Added to every probability, so no template is ever ruled out by one turn.
    pub evidence_floor: f32,
    /// Weight of the routing of "previous question + this one" in the evidence (needs
    /// `store_text`).
    pub previous_question_weight: f32,
    /// The routing of "what the assistant said + this turn" is evidence raised to this
    /// power ("Would you like to book a table? Yes, please." is sure of the reservation).
    pub assistant_power: f32,
    /// Share of the prior given to what the assistant's turn alone routes to (what it
    /// offered), when it makes an offer ("Would you like to ...?") ...
    pub offer_weight: f32,
    /// ... which it does when its text holds one of these (lower case), and the turn
    /// accepts it: it opens with one of these.
    pub offer_cues: Vec<String>,
    pub acceptance_cues: Vec<String>,
    /// The previous turn's pull halves every this many seconds.
    pub half_life_seconds: u64,
    /// A datasource chosen at least this many times in the window is preferred...
    pub preference_uses: usize,
    /// ... by this factor on its templates' prior.
    pub preference_weight: f32,
    /// The context's winner is executed only with at least this probability.
    pub min_probability: f32,
    /// Templates of the belief kept with a turn.
    pub belief_size: usize,
}

/// Questions that ask for several things (`switchyard_core::orchestration`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrchestrationConfig {
    pub enabled: bool,
    /// Decomposition is tried when at least this many of the seven signals fire.
    pub min_signals: usize,
    pub signals: SignalLimits,
    /// Cues that join independent requests ("and", "also", ",") ...
    pub parallel_cues: Vec<String>,
    /// ... and requests that follow one another ("then", "after that", "finally").
    pub sequential_cues: Vec<String>,
    /// Verbs that ask for an action, beside the first words of the catalog's examples.
    pub action_verbs: Vec<String>,
    /// Words that point back at an earlier part's result ("their", "those").
    pub reference_words: Vec<String>,
    /// At most this many sub-questions, from at most this many cue-separated segments.
    pub max_parts: usize,
    pub max_segments: usize,
    /// A part counts as confident when it clears the threshold, or when the head gives
    /// it at least this probability and its confidence is at least the floor.
    pub part_probability: f32,
    pub part_confidence_floor: f32,
    /// No part of a split may be less sure than the whole question by more than this,
    /// unless the head gives it at least `sure_part_probability`.
    pub max_part_drop: f32,
    pub sure_part_probability: f32,
    /// Tasks of a phase run concurrently, at most this many at once.
    pub max_parallel_tasks: usize,
    /// How long a workflow's checkpoint is kept (DynamoDB `expires_at`).
    pub checkpoint_ttl_seconds: u64,
    /// A request running a workflow holds it this long at most (a retry of the same
    /// `workflow_id` meanwhile gets 409): the longest a run can take.
    pub workflow_lease_seconds: u64,
    /// auto | simple | score | hierarchical | temporal | semantic
    pub fusion: FusionStrategy,
    /// `semantic` fusion merges rows or passages whose word overlap reaches this.
    pub duplicate_similarity: f32,
    /// Ask the configured chat model (`llm`) to split what the rules could not, when the
    /// signals say to try; its parts are checked like the rules' own.
    pub chat_decomposer: bool,
}

/// How documents datasources are chunked, embedded and searched (`switchyard_documents`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DocumentsConfig {
    /// A chunk is at most this many words; consecutive chunks share `overlap_words`.
    pub chunk_words: usize,
    pub overlap_words: usize,
    /// The extractive summary: the title and this many first sentences.
    pub summary_sentences: usize,
    /// Weights of a chunk's vectors, renormalised over the vectors it has.
    pub weights: VectorWeights,
    /// weighted: `(1 − keyword_weight) · vectors + keyword_weight · BM25 / best BM25`;
    /// rrf: reciprocal-rank fusion of the two rankings.
    pub fusion: Fusion,
    pub keyword_weight: f32,
    pub rrf_k: f32,
    pub k1: f32,
    pub b: f32,
    /// Fused candidates MMR chooses from, and chunks an answer lists.
    pub candidates: usize,
    pub top_k: usize,
    /// MMR: 1 ranks by relevance alone, lower values prefer chunks unlike those chosen.
    pub mmr_lambda: f32,
    /// A chunk this similar (cosine) to one already chosen is a duplicate; so is a second
    /// chunk of the same document.
    pub duplicate_similarity: f32,
    /// A SQL table is suggested for a `no_match` only when its vector similarity to the
    /// question reaches this.
    pub schema_min_similarity: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorWeights {
    pub questions: f32,
    pub summary: f32,
    pub content: f32,
}

/// When each signal fires.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignalLimits {
    pub action_verbs: usize,
    pub words: usize,
    pub entities: usize,
    pub relationships: usize,
    pub low_confidence: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RerankCacheConfig {
    pub ttl_seconds: u64,
    /// Entries kept in memory (without a table): the least recently used go.
    pub memory_capacity: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    pub required: bool,
    /// SHA-256 (hex) of an API key → the principal it identifies.
    pub api_keys: std::collections::BTreeMap<String, String>,
    /// Principal → the datasources it may use (`"*"`: all).
    pub principals: std::collections::BTreeMap<String, Vec<String>>,
    pub datasources_claim: String,
    pub principal_claim: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    pub endpoint: Option<String>,
    pub model: Option<String>,
    pub api_key_env: Option<String>,
    pub timeout_ms: u64,
    pub fill_missing_parameters: bool,
    pub synthesize_response: bool,
    /// A question no template fits, with SQL tables near it (`schema_context`): ask the
    /// model for one read-only query over them, checked and run like a template's.
    pub text_to_sql: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompositeRetrieval {
    pub confidence_threshold: Threshold,
    /// Thresholds of single datasources, over `confidence_threshold` (`switchyard tune`
    /// proposes them when a datasource has enough feedback).
    #[serde(default)]
    pub datasource_thresholds: std::collections::BTreeMap<String, f32>,
    pub max_templates_per_source: usize,
    pub parallel_search: bool,
    pub search_timeout_ms: u64,
    pub template_scoring: TemplateScoring,
    pub learned_scoring: LearnedScoring,
    pub keywords: Keywords,
    pub openings: Openings,
    pub reranking: Reranking,
    pub string_similarity: StringSimilarity,
    pub scoring: Scoring,
    pub clarify: Clarify,
}

/// `auto` (chosen from the templates when the index is built) or a number in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Threshold {
    Fixed(f32),
    Auto(AutoThreshold),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AutoThreshold {
    Auto,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LearnedScoring {
    /// Rank with the index's learned head when it has one.
    pub enabled: bool,
    /// Weight of the head's probability in the ranking score.
    pub weight: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keywords {
    pub enabled: bool,
    /// `weighted`: add `weight ·` BM25 (divided by the best template's) to the vector
    /// score; `rrf`: reciprocal-rank fusion of the two rankings.
    pub fusion: Fusion,
    pub weight: f32,
    pub rrf_k: f32,
    pub k1: f32,
    pub b: f32,
    /// Abbreviations and synonyms of this deployment: "ncd" → "no claim discount".
    pub term_expansion: std::collections::BTreeMap<String, String>,
}

/// The question's opening word: an intent is often asked with the word its examples open
/// with ("play …", "rate …", "book …"), whatever else the question names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Openings {
    pub enabled: bool,
    /// Added to the ranking score: `weight ·` the template's share of the catalog's
    /// examples that open with the question's opening word.
    pub weight: f32,
    /// Words passed over before the opening word ("please", "can you").
    pub skip_words: Vec<String>,
}

/// How a split question's answers are fused into one (`switchyard_core::orchestration::fuse`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FusionStrategy {
    #[default]
    Auto,
    Simple,
    Score,
    Hierarchical,
    Temporal,
    Semantic,
}

/// How vector and keyword scores are combined: a weighted sum, or reciprocal-rank fusion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fusion {
    Weighted,
    Rrf,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Clarify {
    pub enabled: bool,
    /// Ask which one was meant when the top two ranking scores are this close.
    pub margin: f32,
    /// How many choices a clarify answer lists (2 or 3).
    pub choices: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateScoring {
    pub method: TemplateScoringMethod,
    pub max_weight: f32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TemplateScoringMethod {
    Max,
    Centroid,
    Blend,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reranking {
    pub enabled: bool,
    pub provider: Option<RerankProvider>,
    /// Base URL of the provider's API, e.g. `https://api.cohere.com`,
    /// `http://127.0.0.1:11434/v1` (Ollama) or `https://api.anthropic.com`.
    pub endpoint: Option<String>,
    pub model: Option<String>,
    /// Name of the environment variable holding the API key.
    pub api_key_env: Option<String>,
    pub timeout_ms: u64,
    pub top_candidates: usize,
    /// Candidates per request to a chat judge; batches are sent in parallel.
    pub batch_size: usize,
    /// Rerank only when the top two candidates' ranking scores are within this margin.
    pub margin: f32,
    pub weight: f32,
}

/// Which API a reranker speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RerankProvider {
    /// `POST {endpoint}/v1/rerank` (Cohere, and the servers that copy its API).
    Cohere,
    /// `POST {endpoint}/chat/completions` with a judging prompt (OpenAI, Ollama, vLLM).
    Openai,
    /// `POST {endpoint}/v1/messages` with a judging prompt.
    Anthropic,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StringSimilarity {
    pub enabled: bool,
    pub algorithm: StringAlgorithm,
    /// Weight in the confidence (with `scoring.embedding_weight`).
    pub weight: f32,
    /// Weight in the ranking score.
    pub rank_weight: f32,
    pub compare_fields: Vec<CompareField>,
    pub min_threshold: f32,
    pub aggregation: Aggregation,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StringAlgorithm {
    JaroWinkler,
    Levenshtein,
    Ratio,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompareField {
    Description,
    NlExamples,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aggregation {
    Max,
    Mean,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scoring {
    pub embedding_weight: f32,
    pub tie_breaker: TieBreaker,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TieBreaker {
    /// Equal combined scores: higher embedding score, then earlier datasource.
    Embedding,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingConfig {
    pub model_dir: Option<PathBuf>,
    pub threads: usize,
    pub batch_size: usize,
    /// Questions whose vectors are kept (least recently used out); 0 keeps none.
    pub cache_size: usize,
    pub drift: DriftConfig,
    pub adaptation: AdaptationConfig,
}

/// Whether `index build` fine-tunes the encoder on the catalog's own texts, and how
/// (`switchyard-adapt`; the CLI runs it, the router only loads its result).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdaptationConfig {
    pub mode: AdaptationMode,
    /// `auto` adapts catalogs of at least this many templates.
    pub min_templates: usize,
    pub seed: u64,
    pub learning_rate: f64,
    pub epochs: usize,
    pub pairs_per_text: usize,
    /// The bound on a build's cost: at most this many training pairs per epoch.
    pub max_pairs: usize,
    /// Warn when the training, projected from its first steps, would take longer than
    /// this on this machine (0: never); the training itself is not cut, so that a catalog
    /// and seed give the same weights on every machine.
    pub warn_after_seconds: u64,
    /// Pairs per training step; the other pairs of a batch are each pair's negatives.
    pub batch_size: usize,
    /// Layers before this one stay frozen (0 trains all six).
    pub first_trained_layer: usize,
    /// Which templates share a training batch (and so serve as each other's negatives).
    pub batching: AdaptationBatching,
    /// Keep only the model's first this many layers, adapted as such: a faster encoder;
    /// null keeps all six.
    pub layers: Option<usize>,
    /// The Python that builds the int8 graph from the adapted weights (with onnx and
    /// onnxruntime, as `infra/scripts/fetch-model.sh` installs them); null means
    /// `$SWITCHYARD_PYTHON`, else the project virtualenv's, else `python3`.
    pub python: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdaptationMode {
    /// The frozen base model, always.
    Base,
    /// Adapted for catalogs of at least `min_templates` templates.
    Auto,
    /// Adapted, whatever the catalog's size.
    Adapted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdaptationBatching {
    /// Any templates, in a seeded random order.
    Random,
    /// Templates near each other by the base model: harder negatives.
    Nearest,
}

/// How far the model at hand may embed the index's probe sentences from the builder's
/// vectors (cosine): below `warn_below` it warns, below `refuse_below` it refuses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriftConfig {
    pub warn_below: f32,
    pub refuse_below: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexConfig {
    pub exact_scan_max_templates: usize,
    pub candidate_pool: usize,
    pub hnsw_ef_search: usize,
    pub hnsw_ef_construction: usize,
    pub seed: u64,
    pub learned_head: LearnedHeadConfig,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LearnedHeadConfig {
    pub enabled: bool,
    /// Larger catalogs skip the head and rank on centroid similarity.
    pub max_templates: usize,
    /// In a catalog of more templates than `rivals + 1`, each text is trained against its
    /// own template and the `rivals` with the nearest centroids only.
    pub rivals: usize,
    pub epochs: usize,
    pub learning_rate: f32,
    /// λ in (λ/2)‖M − I‖²: how far the metric may move from plain cosine.
    pub l2: f32,
    /// s: logits are s · xᵀ M c.
    pub scale: f32,
    /// Training weight of a description row (examples and id words weigh 1).
    pub description_weight: f32,
}
