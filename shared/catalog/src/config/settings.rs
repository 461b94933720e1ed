//! The configuration's sections and fields, as `config.yaml` spells them.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use validator::Validate;

use super::validate::*;
use super::{CompositeRetrieval, Fusion, FusionStrategy};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[validate(schema(function = "chat_decomposer_has_a_model"))]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[validate(nested)]
    pub composite_retrieval: CompositeRetrieval,
    #[validate(nested)]
    pub embedding: EmbeddingConfig,
    #[validate(nested)]
    pub llm: LlmConfig,
    #[validate(nested)]
    pub index: IndexConfig,
    #[validate(nested)]
    pub sessions: SessionsConfig,
    #[validate(nested)]
    pub feedback: FeedbackConfig,
    #[validate(nested)]
    pub orchestration: OrchestrationConfig,
    #[validate(nested)]
    pub documents: DocumentsConfig,
    #[validate(nested)]
    pub rerank_cache: RerankCacheConfig,
    #[validate(nested)]
    pub auth: AuthConfig,
    #[validate(nested)]
    pub server: ServerConfig,
}

/// Admission to the HTTP app: requests beyond `max_in_flight` wait, at most `max_queued`
/// of them; the rest are answered 503 with `Retry-After` at once, so latency stays
/// bounded under overload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub max_in_flight: usize,
    pub max_queued: usize,
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub retry_after_seconds: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct FeedbackConfig {
    /// Keep each answer's routing decision, so `POST /v1/feedback` can judge it.
    pub enabled: bool,
    /// How long a decision waits for feedback (the DynamoDB item's `expires_at`).
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub ttl_seconds: u64,
    /// Decisions kept in memory when there is no table (local `serve`).
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub memory_capacity: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct SessionsConfig {
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub max_turns: usize,
    /// Sessions kept in memory when there is no table (local `serve`): at capacity the
    /// expired go first, then those expiring soonest.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub memory_capacity: usize,
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub ttl_seconds: u64,
    /// Turns older than this (seconds) are not context any more.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub window_seconds: u64,
    /// Keep the question's text with its turn (the context hypothesis reads the previous
    /// question); off, only the routing decision and parameters are kept.
    pub store_text: bool,
    #[validate(nested)]
    pub context: ContextConfig,
    #[validate(nested)]
    pub topics: TopicsConfig,
}

/// A caller's topic words across its sessions, a weak prior (`switchyard_core::topics`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct TopicsConfig {
    /// Needs `store_text` as well: topics are the questions' words.
    pub enabled: bool,
    /// A word unused this long is forgotten (the DynamoDB item's `expires_at` too).
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub ttl_seconds: u64,
    /// A word's weight halves every this many seconds.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub half_life_seconds: u64,
    /// The heaviest words kept per caller.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub max_words: usize,
    /// A template's prior is multiplied by `1 + weight × share` (the share of the caller's
    /// topic weight on the template's words).
    #[validate(custom(function = "non_negative"))]
    pub weight: f32,
}

/// How the turns before a question weigh on its routing (`switchyard_core::conversation`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[validate(schema(function = "informative_above_uninformative"))]
#[serde(deny_unknown_fields)]
pub struct ContextConfig {
    pub enabled: bool,
    /// Weight of a turn continuing the previous turn's template (the transitions are
    /// relative weights; the belief is normalised after each turn).
    #[validate(custom(function = "unit"))]
    pub stay: f32,
    /// ... of moving from a lookup template to an action template of the same datasource.
    #[validate(custom(function = "unit"))]
    pub lookup_to_action: f32,
    /// ... of moving to another template of the same datasource otherwise.
    #[validate(custom(function = "unit"))]
    pub same_datasource: f32,
    /// ... of moving to a template of another datasource.
    #[validate(custom(function = "unit"))]
    pub other_datasource: f32,
    /// A template is an action when its description starts with one of these verbs.
    pub action_verbs: Vec<String>,
    /// The turn's own probabilities are raised to this power (below 1 trusts them less)...
    #[validate(custom(function = "positive"))]
    pub evidence_power: f32,
    /// ... scaled down linearly between these confidences of the turn's best template:
    /// "Sure, that is great." matches nothing well and says little about the template.
    #[validate(custom(function = "unit"))]
    pub uninformative_below: f32,
    #[validate(custom(function = "unit"))]
    pub informative_above: f32,
    /// Added to every probability, so no template is ever ruled out by one turn.
    #[validate(custom(function = "positive"))]
    pub evidence_floor: f32,
    /// Weight of the routing of "previous question + this one" in the evidence (needs
    /// `store_text`).
    #[validate(custom(function = "unit"))]
    pub previous_question_weight: f32,
    /// The routing of "what the assistant said + this turn" is evidence raised to this
    /// power ("Would you like to book a table? Yes, please." is sure of the reservation).
    #[validate(custom(function = "non_negative"))]
    pub assistant_power: f32,
    /// Share of the prior given to what the assistant's turn alone routes to (what it
    /// offered), when it makes an offer ("Would you like to ...?") ...
    #[validate(custom(function = "unit"))]
    pub offer_weight: f32,
    /// ... which it does when its text holds one of these (lower case), and the turn
    /// accepts it: it opens with one of these.
    pub offer_cues: Vec<String>,
    pub acceptance_cues: Vec<String>,
    /// The previous turn's pull halves every this many seconds.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub half_life_seconds: u64,
    /// A datasource chosen at least this many times in the window is preferred...
    pub preference_uses: usize,
    /// ... by this factor on its templates' prior.
    #[validate(custom(function = "positive"))]
    pub preference_weight: f32,
    /// The context's winner is executed only with at least this probability.
    #[validate(custom(function = "unit"))]
    pub min_probability: f32,
    /// Templates of the belief kept with a turn.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub belief_size: usize,
}

/// Questions that ask for several things (`switchyard_core::orchestration`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct OrchestrationConfig {
    pub enabled: bool,
    /// Decomposition is tried when at least this many of the seven signals fire.
    #[validate(range(
        min = 1,
        max = 7,
        message = "must be between 1 and 7 (there are seven signals)"
    ))]
    pub min_signals: usize,
    #[validate(nested)]
    pub signals: SignalLimits,
    /// Cues that join independent requests ("and", "also", ",") ...
    #[validate(custom(function = "no_empty_cue"))]
    pub parallel_cues: Vec<String>,
    /// ... and requests that follow one another ("then", "after that", "finally").
    #[validate(custom(function = "no_empty_cue"))]
    pub sequential_cues: Vec<String>,
    /// Verbs that ask for an action, beside the first words of the catalog's examples.
    pub action_verbs: Vec<String>,
    /// Words that point back at an earlier part's result ("their", "those").
    pub reference_words: Vec<String>,
    /// At most this many sub-questions, from at most this many cue-separated segments.
    #[validate(range(min = 2, max = 5, message = "must be between 2 and 5"))]
    pub max_parts: usize,
    #[validate(range(
        min = 2,
        max = 12,
        message = "must be between 2 and 12 (every span of every split is routed)"
    ))]
    pub max_segments: usize,
    /// A part counts as confident when it clears the threshold, or when the head gives
    /// it at least this probability and its confidence is at least the floor.
    #[validate(custom(function = "unit"))]
    pub part_probability: f32,
    #[validate(custom(function = "unit"))]
    pub part_confidence_floor: f32,
    /// No part of a split may be less sure than the whole question by more than this,
    /// unless the head gives it at least `sure_part_probability`.
    #[validate(custom(function = "unit"))]
    pub max_part_drop: f32,
    #[validate(custom(function = "unit"))]
    pub sure_part_probability: f32,
    /// Tasks of a phase run concurrently, at most this many at once.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub max_parallel_tasks: usize,
    /// How long a workflow's checkpoint is kept (DynamoDB `expires_at`).
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub checkpoint_ttl_seconds: u64,
    /// A request running a workflow holds it this long at most (a retry of the same
    /// `workflow_id` meanwhile gets 409): the longest a run can take.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub workflow_lease_seconds: u64,
    /// auto | simple | score | hierarchical | temporal | semantic
    pub fusion: FusionStrategy,
    /// `semantic` fusion merges rows or passages whose word overlap reaches this.
    #[validate(custom(function = "unit"))]
    pub duplicate_similarity: f32,
    /// Ask the configured chat model (`llm`) to split what the rules could not, when the
    /// signals say to try; its parts are checked like the rules' own.
    pub chat_decomposer: bool,
}

/// How documents datasources are chunked, embedded and searched (`switchyard_documents`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[validate(schema(function = "documents_sizes"))]
#[serde(deny_unknown_fields)]
pub struct DocumentsConfig {
    /// A chunk is at most this many words; consecutive chunks share `overlap_words`.
    #[validate(range(min = 20, message = "must be at least 20"))]
    pub chunk_words: usize,
    pub overlap_words: usize,
    /// The extractive summary: the title and this many first sentences.
    pub summary_sentences: usize,
    /// Weights of a chunk's vectors, renormalised over the vectors it has.
    #[validate(nested)]
    pub weights: VectorWeights,
    /// weighted: `(1 − keyword_weight) · vectors + keyword_weight · BM25 / best BM25`;
    /// rrf: reciprocal-rank fusion of the two rankings.
    pub fusion: Fusion,
    #[validate(custom(function = "unit"))]
    pub keyword_weight: f32,
    #[validate(custom(function = "positive"))]
    pub rrf_k: f32,
    #[validate(custom(function = "positive"))]
    pub k1: f32,
    #[validate(custom(function = "unit"))]
    pub b: f32,
    /// Fused candidates MMR chooses from, and chunks an answer lists.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub candidates: usize,
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub top_k: usize,
    /// MMR: 1 ranks by relevance alone, lower values prefer chunks unlike those chosen.
    #[validate(custom(function = "unit"))]
    pub mmr_lambda: f32,
    /// A chunk this similar (cosine) to one already chosen is a duplicate; so is a second
    /// chunk of the same document.
    #[validate(custom(function = "unit"))]
    pub duplicate_similarity: f32,
    /// A SQL table is suggested for a `no_match` only when its vector similarity to the
    /// question reaches this.
    #[validate(custom(function = "unit"))]
    pub schema_min_similarity: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[validate(schema(function = "some_vector_weight"))]
#[serde(deny_unknown_fields)]
pub struct VectorWeights {
    #[validate(custom(function = "non_negative"))]
    pub questions: f32,
    #[validate(custom(function = "non_negative"))]
    pub summary: f32,
    #[validate(custom(function = "non_negative"))]
    pub content: f32,
}

/// When each signal fires.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct SignalLimits {
    pub action_verbs: usize,
    pub words: usize,
    pub entities: usize,
    pub relationships: usize,
    #[validate(custom(function = "unit"))]
    pub low_confidence: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct RerankCacheConfig {
    pub ttl_seconds: u64,
    /// Entries kept in memory (without a table): the least recently used go.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub memory_capacity: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[validate(schema(function = "api_keys_name_principals"))]
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[validate(schema(function = "llm_features_have_a_model"))]
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingConfig {
    pub model_dir: Option<PathBuf>,
    pub threads: usize,
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub batch_size: usize,
    /// Questions whose vectors are kept (least recently used out); 0 keeps none.
    pub cache_size: usize,
    #[validate(nested)]
    pub drift: DriftConfig,
    #[validate(nested)]
    pub adaptation: AdaptationConfig,
}

/// Whether `index build` fine-tunes the encoder on the catalog's own texts, and how
/// (`switchyard-adapt`; the CLI runs it, the router only loads its result).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[validate(schema(function = "some_layer_trains"))]
#[serde(deny_unknown_fields)]
pub struct AdaptationConfig {
    pub mode: AdaptationMode,
    /// `auto` adapts catalogs of at least this many templates.
    pub min_templates: usize,
    pub seed: u64,
    #[validate(custom(function = "learning_rate"))]
    pub learning_rate: f64,
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub epochs: usize,
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub pairs_per_text: usize,
    /// The bound on a build's cost: at most this many training pairs per epoch.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub max_pairs: usize,
    /// Warn when the training, projected from its first steps, would take longer than
    /// this on this machine (0: never); the training itself is not cut, so that a catalog
    /// and seed give the same weights on every machine.
    pub warn_after_seconds: u64,
    /// Pairs per training step; the other pairs of a batch are each pair's negatives.
    #[validate(range(min = 2, message = "must be at least 2 (a pair needs a negative)"))]
    pub batch_size: usize,
    /// Layers before this one stay frozen (0 trains all six).
    #[validate(range(max = 5, message = "must be a layer of the model's six (0 to 5)"))]
    pub first_trained_layer: usize,
    /// Which templates share a training batch (and so serve as each other's negatives).
    pub batching: AdaptationBatching,
    /// Keep only the model's first this many layers, adapted as such: a faster encoder;
    /// null keeps all six.
    #[validate(range(
        min = 1,
        max = 6,
        message = "must be between 1 and the model's 6 layers, or null for all"
    ))]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[validate(schema(function = "refuse_below_warn"))]
#[serde(deny_unknown_fields)]
pub struct DriftConfig {
    #[validate(custom(function = "unit"))]
    pub warn_below: f32,
    pub refuse_below: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct IndexConfig {
    pub exact_scan_max_templates: usize,
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub candidate_pool: usize,
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub hnsw_ef_search: usize,
    pub hnsw_ef_construction: usize,
    pub seed: u64,
    #[validate(nested)]
    pub learned_head: LearnedHeadConfig,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct LearnedHeadConfig {
    pub enabled: bool,
    /// Larger catalogs skip the head and rank on centroid similarity.
    pub max_templates: usize,
    /// In a catalog of more templates than `rivals + 1`, each text is trained against its
    /// own template and the `rivals` with the nearest centroids only.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub rivals: usize,
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub epochs: usize,
    #[validate(custom(function = "positive"))]
    pub learning_rate: f32,
    /// λ in (λ/2)‖M − I‖²: how far the metric may move from plain cosine.
    #[validate(custom(function = "non_negative"))]
    pub l2: f32,
    /// s: logits are s · xᵀ M c.
    #[validate(custom(function = "positive"))]
    pub scale: f32,
    /// Training weight of a description row (examples and id words weigh 1).
    #[validate(custom(function = "non_negative"))]
    pub description_weight: f32,
}
