//! The checks on configuration values. Each section has its own check; they run in a fixed
//! order and the first value refused is reported, naming the field and where the value
//! came from.

use super::{
    AuthConfig, CompositeRetrieval, Config, DocumentsConfig, EmbeddingConfig, FeedbackConfig,
    IndexConfig, LlmConfig, OrchestrationConfig, Reranking, ServerConfig, SessionsConfig,
    StringSimilarity, Threshold,
};
use crate::error::{Error, Result};

/// A refused value: the field and what is wrong with it.
struct Invalid {
    field: String,
    message: String,
}

type Checked = std::result::Result<(), Invalid>;

fn invalid(field: impl Into<String>, message: impl Into<String>) -> Checked {
    Err(Invalid {
        field: field.into(),
        message: message.into(),
    })
}

impl Config {
    /// Check every section; `origin` names where the values came from in the error.
    pub(super) fn validate(&self, origin: &str) -> Result<()> {
        let c = &self.composite_retrieval;
        check_retrieval_scores(c)
            .and_then(|()| check_reranking(&c.reranking))
            .and_then(|()| check_string_similarity(&c.string_similarity))
            .and_then(|()| check_llm(&self.llm))
            .and_then(|()| check_sessions(&self.sessions))
            .and_then(|()| check_feedback(&self.feedback))
            .and_then(|()| check_orchestration(&self.orchestration, &self.llm))
            .and_then(|()| check_documents(&self.documents))
            .and_then(|()| check_auth(&self.auth))
            .and_then(|()| check_keywords_and_clarify(c))
            .and_then(|()| check_learned_head(&self.index))
            .and_then(|()| check_embedding(&self.embedding))
            .and_then(|()| check_server(&self.server))
            .and_then(|()| {
                if self.rerank_cache.memory_capacity == 0 {
                    return invalid("rerank_cache.memory_capacity", "must be at least 1");
                }
                Ok(())
            })
            .and_then(|()| check_index_search(&self.index))
            .map_err(|Invalid { field, message }| Error::Config {
                origin: origin.to_owned(),
                field,
                message,
            })
    }
}

/// The threshold, the candidate count and every weight of the retrieval stages.
fn check_retrieval_scores(c: &CompositeRetrieval) -> Checked {
    if matches!(c.confidence_threshold, Threshold::Fixed(t) if !(0.0..=1.0).contains(&t)) {
        return invalid(
            "composite_retrieval.confidence_threshold",
            "must be `auto` or a number between 0 and 1",
        );
    }
    for (datasource, t) in &c.datasource_thresholds {
        if !(0.0..=1.0).contains(t) {
            return invalid(
                format!("composite_retrieval.datasource_thresholds.{datasource}"),
                "must be a number between 0 and 1",
            );
        }
    }
    if c.max_templates_per_source == 0 {
        return invalid(
            "composite_retrieval.max_templates_per_source",
            "must be at least 1",
        );
    }
    if !(0.0..=1.0).contains(&c.template_scoring.max_weight) {
        return invalid(
            "composite_retrieval.template_scoring.max_weight",
            "must be between 0 and 1",
        );
    }
    for (field, weight) in [
        (
            "composite_retrieval.scoring.embedding_weight",
            c.scoring.embedding_weight,
        ),
        ("composite_retrieval.reranking.weight", c.reranking.weight),
        (
            "composite_retrieval.string_similarity.weight",
            c.string_similarity.weight,
        ),
        (
            "composite_retrieval.string_similarity.rank_weight",
            c.string_similarity.rank_weight,
        ),
        (
            "composite_retrieval.learned_scoring.weight",
            c.learned_scoring.weight,
        ),
        ("composite_retrieval.keywords.weight", c.keywords.weight),
        ("composite_retrieval.openings.weight", c.openings.weight),
        ("composite_retrieval.keywords.k1", c.keywords.k1),
        ("composite_retrieval.keywords.rrf_k", c.keywords.rrf_k),
        ("composite_retrieval.clarify.margin", c.clarify.margin),
    ] {
        if !(weight.is_finite() && weight >= 0.0) {
            return invalid(field, "must be a number of at least 0");
        }
    }
    if c.scoring.embedding_weight == 0.0 {
        return invalid(
            "composite_retrieval.scoring.embedding_weight",
            "must be above 0: stage 1 always runs",
        );
    }
    Ok(())
}

fn check_reranking(r: &Reranking) -> Checked {
    if r.enabled && r.provider.is_some() && (r.endpoint.is_none() || r.model.is_none()) {
        return invalid(
            "composite_retrieval.reranking",
            "endpoint and model are needed when a provider is set",
        );
    }
    if r.top_candidates < 2 || r.batch_size == 0 || r.timeout_ms == 0 {
        return invalid(
            "composite_retrieval.reranking",
            "top_candidates must be at least 2, batch_size and timeout_ms at least 1",
        );
    }
    if !(r.margin.is_finite() && r.margin >= 0.0) {
        return invalid(
            "composite_retrieval.reranking.margin",
            "must be a number of at least 0",
        );
    }
    Ok(())
}

fn check_string_similarity(s: &StringSimilarity) -> Checked {
    if s.enabled && s.compare_fields.is_empty() {
        return invalid(
            "composite_retrieval.string_similarity.compare_fields",
            "must name at least one field when the stage is enabled",
        );
    }
    Ok(())
}

fn check_llm(llm: &LlmConfig) -> Checked {
    if (llm.fill_missing_parameters || llm.synthesize_response || llm.text_to_sql)
        && (llm.endpoint.is_none() || llm.model.is_none())
    {
        return invalid(
            "llm",
            "endpoint and model are needed when an LLM feature is on",
        );
    }
    Ok(())
}

fn check_sessions(sessions: &SessionsConfig) -> Checked {
    if sessions.max_turns == 0
        || sessions.ttl_seconds == 0
        || sessions.window_seconds == 0
        || sessions.memory_capacity == 0
    {
        return invalid(
            "sessions",
            "max_turns, memory_capacity, ttl_seconds and window_seconds must be at least 1",
        );
    }
    let c = &sessions.context;
    let probabilities = [
        ("stay", c.stay),
        ("lookup_to_action", c.lookup_to_action),
        ("same_datasource", c.same_datasource),
        ("other_datasource", c.other_datasource),
        ("uninformative_below", c.uninformative_below),
        ("informative_above", c.informative_above),
        ("previous_question_weight", c.previous_question_weight),
        ("offer_weight", c.offer_weight),
        ("min_probability", c.min_probability),
    ];
    for (name, value) in probabilities {
        if !(0.0..=1.0).contains(&value) {
            return invalid(
                format!("sessions.context.{name}"),
                format!("must be between 0 and 1, not {value}"),
            );
        }
    }
    let positive = |x: f32| x.is_finite() && x > 0.0;
    if !positive(c.evidence_power) || !positive(c.evidence_floor) || !positive(c.preference_weight)
    {
        return invalid(
            "sessions.context",
            "evidence_power, evidence_floor and preference_weight must be positive",
        );
    }
    if !(c.assistant_power.is_finite() && c.assistant_power >= 0.0) {
        return invalid(
            "sessions.context.assistant_power",
            format!("must be 0 or more, not {}", c.assistant_power),
        );
    }
    if c.uninformative_below >= c.informative_above {
        return invalid(
            "sessions.context.informative_above",
            "must be above uninformative_below",
        );
    }
    if c.half_life_seconds == 0 || c.belief_size == 0 {
        return invalid(
            "sessions.context",
            "half_life_seconds and belief_size must be at least 1",
        );
    }
    let t = &sessions.topics;
    if t.ttl_seconds == 0 || t.half_life_seconds == 0 || t.max_words == 0 {
        return invalid(
            "sessions.topics",
            "ttl_seconds, half_life_seconds and max_words must be at least 1",
        );
    }
    if !(t.weight.is_finite() && t.weight >= 0.0) {
        return invalid(
            "sessions.topics.weight",
            format!("must be 0 or more, not {}", t.weight),
        );
    }
    Ok(())
}

fn check_feedback(feedback: &FeedbackConfig) -> Checked {
    if feedback.ttl_seconds == 0 || feedback.memory_capacity == 0 {
        return invalid(
            "feedback",
            "ttl_seconds and memory_capacity must be at least 1",
        );
    }
    Ok(())
}

fn check_orchestration(o: &OrchestrationConfig, llm: &LlmConfig) -> Checked {
    if o.chat_decomposer && (llm.endpoint.is_none() || llm.model.is_none()) {
        return invalid(
            "orchestration.chat_decomposer",
            "needs the chat model: set llm.endpoint and llm.model",
        );
    }
    if !(1..=7).contains(&o.min_signals) {
        return invalid(
            "orchestration.min_signals",
            "must be between 1 and 7 (there are seven signals)",
        );
    }
    if o.max_parts < 2 || o.max_segments < 2 {
        return invalid(
            "orchestration",
            "max_parts and max_segments must be at least 2",
        );
    }
    // Every span of every split is routed: keep the embedding batch bounded.
    if o.max_segments > 12 || o.max_parts > 5 {
        return invalid(
            "orchestration",
            "max_segments is at most 12 and max_parts at most 5",
        );
    }
    if o.max_parallel_tasks == 0 || o.checkpoint_ttl_seconds == 0 || o.workflow_lease_seconds == 0 {
        return invalid(
            "orchestration",
            "max_parallel_tasks, checkpoint_ttl_seconds and workflow_lease_seconds must be at least 1",
        );
    }
    let unit = [
        ("part_probability", o.part_probability),
        ("part_confidence_floor", o.part_confidence_floor),
        ("max_part_drop", o.max_part_drop),
        ("sure_part_probability", o.sure_part_probability),
        ("duplicate_similarity", o.duplicate_similarity),
        ("signals.low_confidence", o.signals.low_confidence),
    ];
    for (field, value) in unit {
        if !(0.0..=1.0).contains(&value) {
            return invalid(format!("orchestration.{field}"), "must be between 0 and 1");
        }
    }
    if o.parallel_cues
        .iter()
        .chain(&o.sequential_cues)
        .any(|c| c.trim().is_empty())
    {
        return invalid("orchestration.parallel_cues", "cues must not be empty");
    }
    Ok(())
}

fn check_documents(d: &DocumentsConfig) -> Checked {
    if d.chunk_words < 20 || d.overlap_words >= d.chunk_words {
        return invalid(
            "documents.chunk_words",
            "must be at least 20 and above documents.overlap_words",
        );
    }
    if d.candidates == 0 || d.top_k == 0 || d.top_k > d.candidates {
        return invalid(
            "documents.top_k",
            "must be at least 1 and at most documents.candidates",
        );
    }
    let unit = [
        ("keyword_weight", d.keyword_weight),
        ("mmr_lambda", d.mmr_lambda),
        ("duplicate_similarity", d.duplicate_similarity),
        ("schema_min_similarity", d.schema_min_similarity),
        ("b", d.b),
    ];
    for (field, value) in unit {
        if !(0.0..=1.0).contains(&value) {
            return invalid(format!("documents.{field}"), "must be between 0 and 1");
        }
    }
    let w = &d.weights;
    if [w.questions, w.summary, w.content].iter().any(|x| *x < 0.0)
        || w.questions + w.summary + w.content <= 0.0
    {
        return invalid(
            "documents.weights",
            "must not be negative, and at least one must be above 0",
        );
    }
    if d.k1 <= 0.0 || d.rrf_k <= 0.0 {
        return invalid("documents.k1", "k1 and rrf_k must be above 0");
    }
    Ok(())
}

/// API keys are listed by their SHA-256 and name a listed principal.
fn check_auth(auth: &AuthConfig) -> Checked {
    for (hash, principal) in &auth.api_keys {
        let is_sha256 = hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit());
        if !is_sha256 {
            return invalid(
                format!("auth.api_keys.{hash}"),
                "keys are listed by the SHA-256 of the key, as 64 hex digits (never the key itself)",
            );
        }
        if !auth.principals.contains_key(principal) {
            return invalid(
                format!("auth.api_keys.{hash}"),
                format!("names principal `{principal}`, which auth.principals does not list"),
            );
        }
    }
    Ok(())
}

fn check_keywords_and_clarify(c: &CompositeRetrieval) -> Checked {
    if !(0.0..=1.0).contains(&c.keywords.b) {
        return invalid("composite_retrieval.keywords.b", "must be between 0 and 1");
    }
    if !(2..=3).contains(&c.clarify.choices) {
        return invalid("composite_retrieval.clarify.choices", "must be 2 or 3");
    }
    Ok(())
}

fn check_learned_head(index: &IndexConfig) -> Checked {
    let head = &index.learned_head;
    if head.epochs == 0
        || head.rivals == 0
        || !(head.learning_rate > 0.0
            && head.scale > 0.0
            && head.l2 >= 0.0
            && head.description_weight >= 0.0)
    {
        return invalid(
            "index.learned_head",
            "epochs, rivals, learning_rate and scale must be above 0; l2 and description_weight at least 0",
        );
    }
    Ok(())
}

fn check_embedding(embedding: &EmbeddingConfig) -> Checked {
    if embedding.batch_size == 0 {
        return invalid("embedding.batch_size", "must be at least 1");
    }
    let adaptation = &embedding.adaptation;
    if !(adaptation.learning_rate > 0.0 && adaptation.learning_rate < 1.0) {
        return invalid(
            "embedding.adaptation.learning_rate",
            "must be a number in (0, 1)",
        );
    }
    for (field, value) in [
        ("embedding.adaptation.epochs", adaptation.epochs),
        (
            "embedding.adaptation.pairs_per_text",
            adaptation.pairs_per_text,
        ),
        ("embedding.adaptation.max_pairs", adaptation.max_pairs),
    ] {
        if value == 0 {
            return invalid(field, "must be at least 1");
        }
    }
    if adaptation.batch_size < 2 {
        return invalid(
            "embedding.adaptation.batch_size",
            "must be at least 2 (a pair needs a negative)",
        );
    }
    if adaptation.first_trained_layer > 5 {
        return invalid(
            "embedding.adaptation.first_trained_layer",
            "must be a layer of the model's six (0 to 5)",
        );
    }
    if let Some(layers) = adaptation.layers {
        if !(1..=6).contains(&layers) {
            return invalid(
                "embedding.adaptation.layers",
                "must be between 1 and the model's 6 layers, or null for all",
            );
        }
        if adaptation.first_trained_layer >= layers {
            return invalid(
                "embedding.adaptation.first_trained_layer",
                "must be below embedding.adaptation.layers (some layer must train)",
            );
        }
    }
    let drift = &embedding.drift;
    if !(0.0..=1.0).contains(&drift.warn_below) {
        return invalid("embedding.drift.warn_below", "must be a cosine in [0, 1]");
    }
    if !(0.0..=drift.warn_below).contains(&drift.refuse_below) {
        return invalid(
            "embedding.drift.refuse_below",
            "must be a cosine in [0, embedding.drift.warn_below]",
        );
    }
    Ok(())
}

fn check_server(server: &ServerConfig) -> Checked {
    if server.max_in_flight == 0 {
        return invalid("server.max_in_flight", "must be at least 1");
    }
    if server.retry_after_seconds == 0 {
        return invalid("server.retry_after_seconds", "must be at least 1");
    }
    Ok(())
}

fn check_index_search(index: &IndexConfig) -> Checked {
    if index.candidate_pool == 0 || index.hnsw_ef_search == 0 {
        return invalid(
            "index",
            "candidate_pool and hnsw_ef_search must be at least 1",
        );
    }
    Ok(())
}
