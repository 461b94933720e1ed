//! Routing: which template of which datasource fits a question best, and how sure we are.
//!
//! One way through, each stage once and in this order:
//! 1. **retrieve** (`retrieve`): embed once; per allowed datasource (rayon) the learned
//!    head's probabilities fused with BM25, or the vector search when the index has no head;
//!    negative examples decline their datasource's candidates; a partition not searched
//!    within `search_timeout_ms` is left out (`deadline`);
//! 2. **string similarity** (`Router::compare_strings`) over the candidates (rayon);
//! 3. **rerank** (`switchyard_core::rerank::RerankStage`, async, optional): scores for close calls;
//! 4. **decide** (`decide`): confidence and ranking score per candidate, the order, and
//!    the outcome (execute, clarify, no_match).
//!
//! [`Router::route`] runs 1, 2 and 4 (no reranker); the service runs all four.

mod deadline;
mod decide;
mod retrieve;
mod routing;
mod threshold;

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use rayon::prelude::*;

pub use decide::{decide, order};
pub use routing::{
    Candidates, Declined, Match, Outcome, Ranking, RerankStatus, Reranked, Routing, StageScores,
    StageTimings,
};
use switchyard_catalog::auth::Access;
pub use threshold::{ThresholdSource, FALLBACK_THRESHOLD};

use crate::error::Result;
use crate::error::RoutingError;
use switchyard_catalog::metric;
use switchyard_catalog::template::{Datasource, Template};
use switchyard_index::config::RouterConfig;
use switchyard_index::index::{Drift, DriftStatus, Index};
use switchyard_index::scoring::rank_score;
use switchyard_text::config::Spelling;
use switchyard_text::keywords::{Bm25, Openings};
use switchyard_text::similarity::{template_similarity, PreparedQuery, TemplateTexts};
use switchyard_text::spelling::Speller;
use switchyard_vectors::embed::Embedder;

pub const MAX_QUERY_CHARS: usize = 2000;

pub struct Router {
    index: Arc<Index>,
    /// Normalised template texts for stage 2, `[datasource][template]`, each made when a
    /// question first has its template among the candidates: a cold start then skips a
    /// pass over every text (100,000 templates: 0.4 s).
    texts: Vec<Vec<OnceLock<TemplateTexts>>>,
    keywords: Bm25,
    openings: Openings,
    speller: Speller,
    /// The global template number of each partition's first template.
    starts: Arc<[usize]>,
    threshold: f32,
    threshold_source: ThresholdSource,
    /// Shared with the partition searches, which may outlive the wait for them.
    config: Arc<RouterConfig>,
    embedder: Arc<dyn Embedder>,
    /// The model documents and SQL schemas are searched with, when it is not `embedder`:
    /// the base model beside an encoder adapted to the templates (adapting to templates
    /// costs passage retrieval: SciFact nDCG@10 0.836 -> 0.735).
    documents_embedder: Option<Arc<dyn Embedder>>,
    /// What the drift check found when the index was loaded.
    drift: Drift,
}

/// The spelling corrector over the templates' texts (examples, descriptions and allowed
/// values) and the model's vocabulary; one that corrects nothing when off.
fn speller<'a>(
    templates: impl Iterator<Item = &'a Template>,
    embedder: &dyn Embedder,
    settings: &Spelling,
) -> Speller {
    if !settings.enabled {
        return Speller::default();
    }
    let texts = templates.flat_map(|template| {
        let values = template
            .parameters
            .iter()
            .flat_map(|p| p.allowed_values.iter().filter_map(|v| v.as_str()));
        template
            .nl_examples
            .iter()
            .map(String::as_str)
            .chain([template.description.as_str()])
            .chain(values)
    });
    Speller::new(texts, &embedder.vocabulary(), settings.min_letters)
}

pub fn ms_since(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}

impl Router {
    /// `origin` names where the index came from, for the model-mismatch error. The model
    /// is checked against the index's probe vectors: drift within tolerance is logged and
    /// counted (`EmbeddingDrift`), beyond it refused.
    pub fn new(
        index: Index,
        config: RouterConfig,
        embedder: Arc<dyn Embedder>,
        origin: &str,
    ) -> Result<Router> {
        let drift = index.check_embedder(embedder.as_ref(), &config.embedding.drift, origin)?;
        if drift.status == DriftStatus::Drifted {
            tracing::warn!(
                index = origin,
                model = %drift.model_id,
                min_cosine = drift.min_cosine,
                mean_cosine = drift.mean_cosine,
                warn_below = drift.warn_below,
                "the model embeds the index's probe sentences differently from its builder: \
                 routing figures may differ from the builder's; rebuild the index on this machine's model"
            );
            metrics::counter!(metric::EMBEDDING_DRIFT).increment(1);
        }
        Ok(Router::assemble(Arc::new(index), config, embedder, drift))
    }

    /// The same index and encoder under other settings (evaluation compares stages so).
    pub fn reconfigured(&self, config: RouterConfig) -> Router {
        let mut router = Router::assemble(
            self.index.clone(),
            config,
            self.embedder.clone(),
            self.drift.clone(),
        );
        router.documents_embedder = self.documents_embedder.clone();
        router
    }

    /// Search documents and SQL schemas with `embedder` (the base model, when the index's
    /// encoder is adapted to the templates) instead of the routing encoder.
    pub fn with_documents_embedder(mut self, embedder: Arc<dyn Embedder>) -> Router {
        self.documents_embedder = Some(embedder);
        self
    }

    fn assemble(
        index: Arc<Index>,
        config: RouterConfig,
        embedder: Arc<dyn Embedder>,
        drift: Drift,
    ) -> Router {
        let texts = index
            .catalog
            .datasources
            .iter()
            .map(|d| d.templates.iter().map(|_| OnceLock::new()).collect())
            .collect();
        // Two independent passes over every template's texts: side by side where the
        // instance has a second vCPU (100,000 templates: 1 s on one).
        let templates = || index.catalog.datasources.iter().flat_map(|d| &d.templates);
        let retrieval = &config.composite_retrieval;
        let ((keywords, openings), speller) = rayon::join(
            || {
                rayon::join(
                    || Bm25::new(templates(), &retrieval.keywords),
                    || Openings::new(templates(), &retrieval.openings),
                )
            },
            || speller(templates(), embedder.as_ref(), &retrieval.spelling),
        );
        let starts = index
            .partitions
            .iter()
            .scan(0, |next, partition| {
                let start = *next;
                *next += partition.template_count();
                Some(start)
            })
            .collect();
        let (threshold, threshold_source) = threshold::choose(&index, &config.composite_retrieval);
        Router {
            index,
            texts,
            keywords,
            openings,
            speller,
            starts,
            threshold,
            threshold_source,
            config: Arc::new(config),
            embedder,
            documents_embedder: None,
            drift,
        }
    }

    /// The drift check's result at load.
    pub fn drift(&self) -> &Drift {
        &self.drift
    }

    pub fn index(&self) -> &Index {
        &self.index
    }

    /// The sections it routes with (the service holds the rest of the configuration).
    pub fn config(&self) -> &RouterConfig {
        &self.config
    }

    pub fn embedder(&self) -> &dyn Embedder {
        self.embedder.as_ref()
    }

    /// The model chunk artifacts are built and searched with: the routing encoder unless
    /// [`Router::with_documents_embedder`] set another.
    pub fn documents_embedder(&self) -> &dyn Embedder {
        self.documents_embedder
            .as_deref()
            .unwrap_or(self.embedder.as_ref())
    }

    /// The confidence threshold in force and where it came from.
    pub fn threshold(&self) -> (f32, ThresholdSource) {
        (self.threshold, self.threshold_source)
    }

    pub fn template(&self, m: &Match) -> (&Datasource, &Template) {
        let datasource = &self.index.catalog.datasources[m.datasource_position];
        (datasource, &datasource.templates[m.template_position])
    }

    /// Check a query's length and content; errors name the `query` field.
    pub fn validate_query(query: &str) -> Result<(), RoutingError> {
        if query.trim().is_empty() {
            return Err(RoutingError::Query("must not be empty".into()));
        }
        let chars = query.chars().count();
        if chars > MAX_QUERY_CHARS {
            return Err(RoutingError::Query(format!(
                "is {chars} characters; the limit is {MAX_QUERY_CHARS}"
            )));
        }
        Ok(())
    }

    /// What the encoder sees for a query: the query as routed plus its configured term
    /// expansions.
    pub fn embedding_text(&self, query: &str) -> String {
        self.keywords.expansion().expand(&self.routed_text(query))
    }

    /// The query as the stages read it: misspelt words corrected against the catalog's
    /// (`composite_retrieval.spelling`).
    pub fn routed_text<'q>(&self, query: &'q str) -> Cow<'q, str> {
        self.speller.correct(query)
    }

    fn uses_head(&self) -> bool {
        self.config.composite_retrieval.learned_scoring.enabled && self.index.head.is_some()
    }

    /// Stages 1 and 2: embed the query, retrieve and compare strings.
    pub fn candidates(&self, query: &str, access: &Access) -> Result<Candidates> {
        Router::validate_query(query)?;
        let start = Instant::now();
        let vector = self.embedder.embed_one(&self.embedding_text(query))?;
        let embedding_ms = ms_since(start);
        let mut candidates = self.candidates_for_vector(query, &vector, access);
        candidates.timings.embedding_ms = embedding_ms;
        candidates.timings.total_ms = ms_since(start);
        Ok(candidates)
    }

    /// Stages 1 and 2 for the conversation's other texts (the previous question with the
    /// turn, what the assistant said alone and with it), embedded in one batch; their
    /// candidates in their order.
    pub fn candidates_of_texts(
        &self,
        texts: &[String],
        access: &Access,
    ) -> Result<Vec<Candidates>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let expanded: Vec<String> = texts.iter().map(|t| self.embedding_text(t)).collect();
        let batch: Vec<&str> = expanded.iter().map(String::as_str).collect();
        let vectors = self.embedder.embed(&batch)?;
        Ok(texts
            .iter()
            .zip(&vectors)
            .map(|(text, vector)| self.candidates_for_vector(text, vector, access))
            .collect())
    }

    /// Stages 1 and 2 with the query's vector already computed (batch evaluation).
    pub fn candidates_for_vector(
        &self,
        query: &str,
        vector: &[f32],
        access: &Access,
    ) -> Candidates {
        let start = Instant::now();
        let mut candidates = self.retrieve(query, vector, access);
        self.compare_strings(&mut candidates);
        candidates.timings.total_ms = ms_since(start);
        candidates
    }

    /// Stage 4 on candidates no reranker saw.
    pub fn decide(&self, candidates: Candidates, reranked: Reranked) -> Routing {
        decide(
            candidates,
            reranked,
            self.threshold,
            &self.config.composite_retrieval,
        )
    }

    /// What the rerank stage reports when it does not run.
    pub fn not_reranked(&self) -> Reranked {
        Reranked {
            status: if self.config.composite_retrieval.reranking.enabled {
                RerankStatus::NoProvider
            } else {
                RerankStatus::Disabled
            },
            scores: Vec::new(),
            took_ms: 0.0,
        }
    }

    /// Route without a reranker: stages 1, 2 and 4.
    pub fn route(&self, query: &str, access: &Access) -> Result<Routing> {
        let candidates = self.candidates(query, access)?;
        Ok(self.decide(candidates, self.not_reranked()))
    }

    /// Route several texts at once: their embedding texts embedded in one batch, each then
    /// retrieved, compared and decided without the rerank stage (the sub-questions of a
    /// split, a conversation's context texts). Texts are not validated: callers pass parts
    /// of a validated question, or texts they bound themselves.
    pub fn route_batch(&self, texts: &[&str], access: &Access) -> Result<Vec<Routing>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let embedding: Vec<String> = texts.iter().map(|t| self.embedding_text(t)).collect();
        let batch: Vec<&str> = embedding.iter().map(String::as_str).collect();
        let vectors = self.embedder.embed(&batch)?;
        Ok(texts
            .iter()
            .zip(&vectors)
            .map(|(text, vector)| {
                let candidates = self.candidates_for_vector(text, vector, access);
                self.decide(candidates, self.not_reranked())
            })
            .collect())
    }

    /// [`Router::route`] with the query's vector already computed (batch evaluation).
    pub fn route_vector(&self, query: &str, vector: &[f32], access: &Access) -> Result<Routing> {
        Router::validate_query(query)?;
        let candidates = self.candidates_for_vector(query, vector, access);
        Ok(self.decide(candidates, self.not_reranked()))
    }

    /// Stage 2: string similarity over the candidates only, then order them by the
    /// ranking score so far (the rerank stage gates on its top two).
    fn compare_strings(&self, candidates: &mut Candidates) {
        let began = Instant::now();
        let retrieval = &self.config.composite_retrieval;
        let strings = &retrieval.string_similarity;
        if strings.enabled {
            let prepared =
                PreparedQuery::new(candidates.corrected.as_ref().unwrap_or(&candidates.query));
            let texts = &self.texts;
            let catalog = &self.index.catalog;
            candidates.matches.par_iter_mut().for_each(|m| {
                let (d, t) = (m.datasource_position, m.template_position);
                let template = texts[d][t]
                    .get_or_init(|| TemplateTexts::of(&catalog.datasources[d].templates[t]));
                m.scores.string_similarity_score =
                    Some(template_similarity(&prepared, template, strings));
            });
        }
        for m in &mut candidates.matches {
            m.scores.rank_score = rank_score(
                retrieval,
                m.scores.retrieval_score,
                m.scores.string_similarity_score,
                None,
            );
        }
        order(&mut candidates.matches);
        candidates.timings.string_similarity_ms = ms_since(began);
    }
}
