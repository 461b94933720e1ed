//! Routing: which template of which datasource fits a question best, and how sure we are.
//!
//! Embed once → per allowed datasource (rayon): the learned head's probabilities fused with
//! BM25, or the vector search when the index has no head → string similarity over the
//! candidates (rayon) → rank. Two scores per candidate: the *ranking score* orders them
//! (head probability + keywords + string + rerank), the *confidence* (cosine to the
//! centroid + string + rerank, weights renormalised over the stages that ran) decides
//! between execute and `no_match` against the threshold; close runners-up ask to clarify.
//! Reranking (async, a network call) is applied afterwards by `rerank::RerankStage`.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;

use crate::config::{Config, Fusion, Threshold};
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::head::softmax;
use crate::index::Index;
use crate::keywords::Bm25;
use crate::rerank::RerankCandidate;
use crate::similarity::{template_similarity, PreparedQuery, TemplateTexts};
use crate::template::{Datasource, Template};

/// The threshold used when `auto` has nothing to go on (a single datasource).
pub const FALLBACK_THRESHOLD: f32 = 0.40;

/// Above this many templates the router does not choose the automatic threshold again at
/// start when the confidence settings changed since the build.
const RECALIBRATE_MAX_TEMPLATES: usize = 2000;

pub const MAX_QUERY_CHARS: usize = 2000;

/// An f32 as the f64 with the same shortest decimal form, for JSON (0.8f32 → 0.8, not
/// 0.800000011920929).
pub fn decimal(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}

fn serialize_decimal<S: serde::Serializer>(x: &f32, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(decimal(*x))
}

fn serialize_decimal_option<S: serde::Serializer>(
    x: &Option<f32>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match x {
        Some(x) => serializer.serialize_some(&decimal(*x)),
        None => serializer.serialize_none(),
    }
}

/// Which datasources a caller may use. Every stage sees only these partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    All,
    Only(BTreeSet<String>),
}

impl Access {
    pub fn allows(&self, datasource: &str) -> bool {
        match self {
            Access::All => true,
            Access::Only(names) => names.contains(datasource),
        }
    }

    /// Narrow to `requested` (a request's own `datasources` list). Naming a datasource
    /// that does not exist or is not allowed is an error naming it.
    pub fn narrow(&self, requested: &[String], index: &Index) -> Result<Access> {
        let mut names = BTreeSet::new();
        for name in requested {
            if index.catalog.datasource(name).is_none() || !self.allows(name) {
                return Err(Error::UnknownDatasource(name.clone()));
            }
            names.insert(name.clone());
        }
        Ok(Access::Only(names))
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Match {
    pub datasource: String,
    pub template_id: String,
    #[serde(skip)]
    pub datasource_position: usize,
    #[serde(skip)]
    pub template_position: usize,
    /// Cosine to the template (per `template_scoring`, the centroid by default).
    #[serde(serialize_with = "serialize_decimal")]
    pub embedding_score: f32,
    /// The learned head's probability, over the allowed templates.
    #[serde(serialize_with = "serialize_decimal_option")]
    pub learned_score: Option<f32>,
    /// BM25 relative to the best template's.
    #[serde(serialize_with = "serialize_decimal_option")]
    pub keyword_score: Option<f32>,
    #[serde(serialize_with = "serialize_decimal_option")]
    pub rerank_score: Option<f32>,
    #[serde(serialize_with = "serialize_decimal_option")]
    pub string_similarity_score: Option<f32>,
    /// The vector and keyword scores fused (stage 1's own ranking).
    #[serde(serialize_with = "serialize_decimal")]
    pub retrieval_score: f32,
    /// Orders the candidates: `retrieval_score` + string + rerank.
    #[serde(serialize_with = "serialize_decimal")]
    pub rank_score: f32,
    /// The confidence, compared with the threshold.
    #[serde(serialize_with = "serialize_decimal")]
    pub combined_score: f32,
    /// Calibrated probability that this is the template meant (the head's logits at the
    /// temperature fitted on held-out examples).
    #[serde(serialize_with = "serialize_decimal_option")]
    pub probability: Option<f32>,
    /// Set when the query is nearer one of the datasource's negative examples than to any
    /// of this template's texts: the template is then never selected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub declined_by: Option<Declined>,
}

impl Match {
    pub fn is_declined(&self) -> bool {
        self.declined_by.is_some()
    }
}

/// The negative example that ruled a match out, and the two cosines compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Declined {
    pub negative_example: String,
    #[serde(serialize_with = "serialize_decimal")]
    pub similarity: f32,
    /// Cosine to the template's nearest own text (an example, the description, id words).
    #[serde(serialize_with = "serialize_decimal")]
    pub template_similarity: f32,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Weights {
    #[serde(serialize_with = "serialize_decimal")]
    pub embedding_weight: f32,
    #[serde(serialize_with = "serialize_decimal")]
    pub rerank_weight: f32,
    #[serde(serialize_with = "serialize_decimal")]
    pub string_similarity_weight: f32,
}

/// What happened to stage 2 on this query.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RerankStatus {
    Disabled,
    /// Enabled in configuration, but no provider is configured.
    NoProvider,
    /// The top two were further apart than `reranking.margin`: no call was needed.
    NotNeeded {
        #[serde(serialize_with = "serialize_decimal")]
        margin: f32,
    },
    Applied {
        reranker: String,
        candidates: usize,
        cached: bool,
    },
    Failed {
        reranker: String,
        error: String,
    },
}

/// What the router decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Execute,
    /// The winner clears the threshold but runners-up are close: ask which was meant.
    Clarify,
    NoMatch,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct StageTimings {
    pub embedding_ms: f64,
    pub search_ms: f64,
    pub string_similarity_ms: f64,
    pub rerank_ms: f64,
    pub total_ms: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Routing {
    pub query: String,
    /// Best first.
    pub matches: Vec<Match>,
    pub adapters_searched: Vec<String>,
    /// Datasources whose search overran `search_timeout_ms` and were left out.
    pub timed_out: Vec<String>,
    /// Index into `matches` of the winner, if it clears the threshold.
    pub selected: Option<usize>,
    pub outcome: Outcome,
    /// With `Clarify`: how many of the first matches are the choices.
    pub choices: usize,
    #[serde(serialize_with = "serialize_decimal")]
    pub threshold: f32,
    pub weights: Weights,
    pub rerank: RerankStatus,
    /// `learned` (the index's head) or `similarity` (centroid cosine).
    pub ranking: &'static str,
    pub timings: StageTimings,
}

impl Routing {
    /// The highest-ranked match that may be chosen (declined matches never are).
    pub fn best(&self) -> Option<&Match> {
        self.matches.first().filter(|m| !m.is_declined())
    }

    pub fn selected_match(&self) -> Option<&Match> {
        self.selected.map(|i| &self.matches[i])
    }

    /// The matches to offer when asking to clarify.
    pub fn clarify_choices(&self) -> &[Match] {
        match self.outcome {
            Outcome::Clarify => &self.matches[..self.choices],
            _ => &[],
        }
    }

    pub fn reason(&self) -> &'static str {
        match (self.outcome, self.matches.is_empty()) {
            (Outcome::Execute, _) => "highest_ranked_confidence_above_threshold",
            (Outcome::Clarify, _) => "close_candidates_from_different_templates",
            (Outcome::NoMatch, true) => "no_templates_searched",
            // A template cleared the threshold but its datasource's negative example was nearer.
            (Outcome::NoMatch, false)
                if self
                    .matches
                    .iter()
                    .any(|m| m.is_declined() && m.combined_score >= self.threshold) =>
            {
                "declined_by_negative_example"
            }
            (Outcome::NoMatch, false) => "best_confidence_below_threshold",
        }
    }
}

/// (datasource position, its candidates, its nearest negative example (position, cosine),
/// milliseconds taken).
type PartitionResult = (usize, Vec<Candidate>, Option<(usize, f32)>, f64);

#[derive(Debug, Clone, Copy)]
struct Candidate {
    template: usize,
    learned: Option<f32>,
    probability: Option<f32>,
    keyword: Option<f32>,
    /// The vector and keyword scores fused: where the ranking score starts.
    fused: f32,
    embedding: f32,
}

pub struct Router {
    index: Arc<Index>,
    /// Normalised template texts for stage 3, `[datasource][template]`.
    texts: Vec<Vec<TemplateTexts>>,
    keywords: Bm25,
    /// The global template number of each partition's first template.
    starts: Vec<usize>,
    threshold: f32,
    threshold_source: &'static str,
    config: Config,
    embedder: Arc<dyn Embedder>,
}

fn ms_since(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}

impl Router {
    /// `origin` names where the index came from, for the model-mismatch error.
    pub fn new(
        index: Index,
        config: Config,
        embedder: Arc<dyn Embedder>,
        origin: &str,
    ) -> Result<Router> {
        index.check_embedder(embedder.as_ref(), origin)?;
        Ok(Router::assemble(Arc::new(index), config, embedder))
    }

    /// The same index and encoder under other settings (evaluation compares stages so).
    pub fn reconfigured(&self, config: Config) -> Router {
        Router::assemble(self.index.clone(), config, self.embedder.clone())
    }

    fn assemble(index: Arc<Index>, config: Config, embedder: Arc<dyn Embedder>) -> Router {
        let texts = index
            .catalog
            .datasources
            .iter()
            .map(|d| d.templates.iter().map(TemplateTexts::of).collect())
            .collect();
        let keywords = Bm25::new(
            index.catalog.datasources.iter().flat_map(|d| &d.templates),
            &config.composite_retrieval.keywords,
        );
        let mut starts = Vec::with_capacity(index.partitions.len());
        let mut next = 0;
        for partition in &index.partitions {
            starts.push(next);
            next += partition.template_count();
        }
        let retrieval = &config.composite_retrieval;
        let (threshold, threshold_source) = match retrieval.confidence_threshold {
            Threshold::Fixed(value) => (value, "configured"),
            Threshold::Auto(_) => {
                let stored = index.manifest.calibration.as_ref().filter(|c| {
                    c.embedding_weight == retrieval.scoring.embedding_weight
                        && c.string_similarity == retrieval.string_similarity
                });
                let stale = index.manifest.calibration.as_ref();
                match stored {
                    Some(calibration) => (calibration.threshold, "automatic"),
                    // Choosing again scans every example against every template: too slow
                    // for a cold start on a big catalog. Keep the built one and say so.
                    None if stale.is_some()
                        && index.catalog.template_count() > RECALIBRATE_MAX_TEMPLATES =>
                    {
                        tracing::warn!("the index's automatic threshold was chosen for other confidence settings; rebuild the index to choose it for these");
                        (
                            stale.map_or(FALLBACK_THRESHOLD, |c| c.threshold),
                            "automatic_for_build_settings",
                        )
                    }
                    None => {
                        // Settings changed since the build: choose again for these.
                        let began = Instant::now();
                        match index.calibrate(retrieval) {
                            Some(calibration) => {
                                tracing::info!(threshold = calibration.threshold, took_ms = ms_since(began), "automatic threshold recomputed for the current confidence settings");
                                (calibration.threshold, "automatic")
                            }
                            None => (FALLBACK_THRESHOLD, "fallback_single_datasource"),
                        }
                    }
                }
            }
        };
        Router {
            index,
            texts,
            keywords,
            starts,
            threshold,
            threshold_source,
            config,
            embedder,
        }
    }

    pub fn index(&self) -> &Index {
        &self.index
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn embedder(&self) -> &dyn Embedder {
        self.embedder.as_ref()
    }

    /// The confidence threshold in force and where it came from (`configured`,
    /// `automatic`, `automatic_for_build_settings`, `fallback_single_datasource`).
    pub fn threshold(&self) -> (f32, &'static str) {
        (self.threshold, self.threshold_source)
    }

    pub fn template(&self, m: &Match) -> (&Datasource, &Template) {
        let datasource = &self.index.catalog.datasources[m.datasource_position];
        (datasource, &datasource.templates[m.template_position])
    }

    /// Check a query's length and content; errors name the `query` field.
    pub fn validate_query(query: &str) -> Result<()> {
        if query.trim().is_empty() {
            return Err(Error::invalid_request("query", "must not be empty"));
        }
        let chars = query.chars().count();
        if chars > MAX_QUERY_CHARS {
            return Err(Error::invalid_request(
                "query",
                format!("is {chars} characters; the limit is {MAX_QUERY_CHARS}"),
            ));
        }
        Ok(())
    }

    /// What the encoder sees for a query: the query plus its configured term expansions.
    pub fn embedding_text(&self, query: &str) -> String {
        self.keywords.expansion().expand(query)
    }

    pub fn route(&self, query: &str, access: &Access) -> Result<Routing> {
        Router::validate_query(query)?;
        let start = Instant::now();
        let vector = self.embedder.embed_one(&self.embedding_text(query))?;
        let embedding_ms = ms_since(start);
        let mut routing = self.route_vector(query, &vector, access)?;
        routing.timings.embedding_ms = embedding_ms;
        routing.timings.total_ms = ms_since(start);
        Ok(routing)
    }

    fn uses_head(&self) -> bool {
        self.config.composite_retrieval.learned_scoring.enabled && self.index.head.is_some()
    }

    /// Route with the query's vector already computed (batch evaluation).
    pub fn route_vector(&self, query: &str, vector: &[f32], access: &Access) -> Result<Routing> {
        let start = Instant::now();
        let retrieval = &self.config.composite_retrieval;
        let allowed: Vec<usize> = (0..self.index.partitions.len())
            .filter(|&d| access.allows(&self.index.partitions[d].datasource))
            .collect();

        // Keyword scores over every allowed template, relative to the best.
        let keyword_scores = retrieval.keywords.enabled.then(|| {
            let mut scores = self.keywords.scores(query);
            let best = allowed
                .iter()
                .flat_map(|&d| {
                    let start = self.starts[d];
                    scores[start..start + self.index.partitions[d].template_count()]
                        .iter()
                        .copied()
                })
                .fold(0.0f32, f32::max);
            if best > 0.0 {
                scores.iter_mut().for_each(|s| *s /= best);
            }
            scores
        });
        // The head's logits over the allowed templates, softmax-normalised across them.
        let learned = self.uses_head().then(|| self.learned(vector, &allowed));

        // Stage 1, one partition per datasource.
        let budget_ms = retrieval.search_timeout_ms as f64;
        let search_one = |&d: &usize| {
            let began = Instant::now();
            let found = self.candidates(d, vector, learned.as_ref(), keyword_scores.as_deref());
            let negative = self.index.partitions[d].nearest_negative(vector);
            (d, found, negative, ms_since(began))
        };
        let searched: Vec<PartitionResult> = if retrieval.parallel_search {
            allowed.par_iter().map(search_one).collect()
        } else {
            allowed.iter().map(search_one).collect()
        };
        let mut timed_out = Vec::new();
        let mut matches = Vec::new();
        for (d, found, negative, took_ms) in searched {
            let partition = &self.index.partitions[d];
            if took_ms > budget_ms {
                tracing::warn!(datasource = %partition.datasource, took_ms, budget_ms, "partition search overran its budget; left out");
                timed_out.push(partition.datasource.clone());
                continue;
            }
            let datasource = &self.index.catalog.datasources[d];
            for c in found {
                let declined_by = negative.and_then(|(n, similarity)| {
                    let template_similarity = partition.nearest_text(c.template, vector);
                    (similarity >= template_similarity).then(|| Declined {
                        negative_example: datasource.spec.negative_examples[n].clone(),
                        similarity,
                        template_similarity,
                    })
                });
                matches.push(Match {
                    datasource: partition.datasource.clone(),
                    template_id: datasource.templates[c.template].id.clone(),
                    datasource_position: d,
                    template_position: c.template,
                    embedding_score: c.embedding,
                    learned_score: c.learned,
                    keyword_score: c.keyword,
                    rerank_score: None,
                    string_similarity_score: None,
                    retrieval_score: c.fused,
                    rank_score: c.fused,
                    combined_score: c.embedding,
                    probability: c.probability,
                    declined_by,
                });
            }
        }
        if retrieval.keywords.enabled && retrieval.keywords.fusion == Fusion::Rrf {
            let found: Vec<Candidate> = matches
                .iter()
                .map(|m| Candidate {
                    template: m.template_position,
                    learned: m.learned_score,
                    probability: m.probability,
                    keyword: m.keyword_score,
                    fused: 0.0,
                    embedding: m.embedding_score,
                })
                .collect();
            for (m, f) in matches.iter_mut().zip(fuse(&found, retrieval, Fusion::Rrf)) {
                m.retrieval_score = f;
            }
        }
        let search_ms = ms_since(start);

        // Stage 3: string similarity over the candidates only.
        let stage3_start = Instant::now();
        let strings = &retrieval.string_similarity;
        if strings.enabled {
            let prepared = PreparedQuery::new(query);
            let texts = &self.texts;
            matches.par_iter_mut().for_each(|m| {
                let template = &texts[m.datasource_position][m.template_position];
                m.string_similarity_score = Some(template_similarity(&prepared, template, strings));
            });
        }
        let string_similarity_ms = ms_since(stage3_start);

        let mut routing = Routing {
            query: query.to_owned(),
            matches,
            adapters_searched: allowed
                .iter()
                .map(|&d| self.index.partitions[d].datasource.clone())
                .collect(),
            timed_out,
            selected: None,
            outcome: Outcome::NoMatch,
            choices: 0,
            threshold: self.threshold,
            weights: self.weights(false),
            rerank: if retrieval.reranking.enabled {
                RerankStatus::NoProvider
            } else {
                RerankStatus::Disabled
            },
            ranking: if self.uses_head() {
                "learned"
            } else {
                "similarity"
            },
            timings: StageTimings {
                embedding_ms: 0.0,
                search_ms,
                string_similarity_ms,
                rerank_ms: 0.0,
                total_ms: 0.0,
            },
        };
        self.decide(&mut routing);
        routing.timings.total_ms = ms_since(start);
        Ok(routing)
    }

    /// Probabilities (plain and calibrated) of every allowed template, by global number.
    fn learned(&self, vector: &[f32], allowed: &[usize]) -> Learned {
        let head = self.index.head.as_ref().expect("checked by uses_head");
        let total = head.templates();
        let mut logits = vec![f32::NEG_INFINITY; total];
        for &d in allowed {
            let range = self.starts[d]..self.starts[d] + self.index.partitions[d].template_count();
            let values = head.logits(vector, range.clone());
            logits[range].copy_from_slice(&values);
        }
        let mut plain = logits.clone();
        softmax(&mut plain);
        let mut calibrated: Vec<f32> = logits.iter().map(|l| l / head.temperature).collect();
        softmax(&mut calibrated);
        Learned { plain, calibrated }
    }

    /// The best `max_templates_per_source` templates of partition `d`.
    fn candidates(
        &self,
        d: usize,
        vector: &[f32],
        learned: Option<&Learned>,
        keywords: Option<&[f32]>,
    ) -> Vec<Candidate> {
        let retrieval = &self.config.composite_retrieval;
        let partition = &self.index.partitions[d];
        let start = self.starts[d];
        let limit = retrieval.max_templates_per_source;
        let keyword_of = |t: usize| keywords.map(|k| k[start + t]);
        let mut found: Vec<Candidate> = match learned {
            Some(learned) => {
                // Every template of the partition: the head has scored them all.
                (0..partition.template_count())
                    .map(|t| Candidate {
                        template: t,
                        learned: Some(learned.plain[start + t]),
                        probability: Some(learned.calibrated[start + t]),
                        keyword: keyword_of(t),
                        fused: 0.0,
                        embedding: 0.0,
                    })
                    .collect()
            }
            None => partition
                .search(
                    vector,
                    limit,
                    self.config.index.candidate_pool,
                    &retrieval.template_scoring,
                )
                .into_iter()
                .map(|(t, embedding)| Candidate {
                    template: t,
                    learned: None,
                    probability: None,
                    keyword: keyword_of(t),
                    fused: 0.0,
                    embedding,
                })
                .collect(),
        };
        // Candidates are chosen by weighted fusion; rrf is applied across datasources later.
        let fused = fuse(&found, retrieval, Fusion::Weighted);
        for (c, f) in found.iter_mut().zip(fused) {
            c.fused = f;
        }
        found.sort_by(|a, b| {
            b.fused
                .total_cmp(&a.fused)
                .then(a.template.cmp(&b.template))
        });
        found.truncate(limit);
        if learned.is_some() {
            for c in &mut found {
                c.embedding = partition.score(c.template, vector, &retrieval.template_scoring);
            }
        }
        found
    }

    /// Ranking scores and confidences from the stage scores; order; decide.
    pub fn decide(&self, routing: &mut Routing) {
        let retrieval = &self.config.composite_retrieval;
        let rerank_applied = matches!(routing.rerank, RerankStatus::Applied { .. });
        let weights = self.weights(rerank_applied);
        let strings = &retrieval.string_similarity;
        for m in &mut routing.matches {
            let string = m.string_similarity_score.unwrap_or(0.0);
            let rerank = m.rerank_score.unwrap_or(m.embedding_score);
            m.combined_score = weights.embedding_weight * m.embedding_score
                + weights.rerank_weight * rerank
                + weights.string_similarity_weight * string;
            m.rank_score = m.retrieval_score
                + if strings.enabled {
                    strings.rank_weight * string
                } else {
                    0.0
                }
                + if rerank_applied {
                    retrieval.reranking.weight * m.rerank_score.unwrap_or(0.0)
                } else {
                    0.0
                };
        }
        // Declined matches go last: they stay visible in the metadata but are never chosen.
        routing.matches.sort_by(|a, b| {
            a.is_declined()
                .cmp(&b.is_declined())
                .then(b.rank_score.total_cmp(&a.rank_score))
                .then(b.embedding_score.total_cmp(&a.embedding_score))
                .then(a.datasource_position.cmp(&b.datasource_position))
                .then(a.template_position.cmp(&b.template_position))
        });
        routing.weights = weights;
        routing.selected = routing
            .matches
            .first()
            .filter(|m| !m.is_declined() && m.combined_score >= routing.threshold)
            .map(|_| 0);
        let clarify = &retrieval.clarify;
        let close = routing.matches.first().map_or(0, |top| {
            routing
                .matches
                .iter()
                .take(clarify.choices)
                .take_while(|m| !m.is_declined() && top.rank_score - m.rank_score < clarify.margin)
                .count()
        });
        // Only the learned ranking is calibrated: its margin means the same on every query.
        let calibrated = routing.ranking == "learned";
        (routing.outcome, routing.choices) = match routing.selected {
            None => (Outcome::NoMatch, 0),
            Some(_) if clarify.enabled && calibrated && close >= 2 => (Outcome::Clarify, close),
            Some(_) => (Outcome::Execute, 0),
        };
    }

    /// The candidates a reranker judges: the first `top_candidates` by ranking score.
    pub fn rerank_candidates(&self, routing: &Routing) -> Vec<RerankCandidate> {
        let top = self.config.composite_retrieval.reranking.top_candidates;
        routing
            .matches
            .iter()
            .take_while(|m| !m.is_declined())
            .take(top)
            .map(|m| {
                let (datasource, template) = self.template(m);
                RerankCandidate {
                    datasource: datasource.spec.name.clone(),
                    template_id: template.id.clone(),
                    description: template.description.clone(),
                    nl_examples: template.nl_examples.clone(),
                }
            })
            .collect()
    }

    /// Weights of the confidence's stages that ran, renormalised to sum to 1.
    pub fn weights(&self, rerank_applied: bool) -> Weights {
        let retrieval = &self.config.composite_retrieval;
        let embedding = retrieval.scoring.embedding_weight;
        let rerank = if rerank_applied {
            retrieval.reranking.weight
        } else {
            0.0
        };
        let strings = if retrieval.string_similarity.enabled {
            retrieval.string_similarity.weight
        } else {
            0.0
        };
        let total = embedding + rerank + strings;
        Weights {
            embedding_weight: embedding / total,
            rerank_weight: rerank / total,
            string_similarity_weight: strings / total,
        }
    }
}

struct Learned {
    plain: Vec<f32>,
    calibrated: Vec<f32>,
}

/// Stage 1's score: each candidate's vector score (the head's weighted probability, or the
/// cosine without a head) fused with its keyword score.
fn fuse(
    found: &[Candidate],
    retrieval: &crate::config::CompositeRetrieval,
    fusion: Fusion,
) -> Vec<f32> {
    let vector: Vec<f32> = found
        .iter()
        .map(|c| match c.learned {
            Some(p) => retrieval.learned_scoring.weight * p,
            None => c.embedding,
        })
        .collect();
    let keywords = &retrieval.keywords;
    let keyword = |i: usize| found[i].keyword.unwrap_or(0.0);
    if !keywords.enabled {
        return vector;
    }
    match fusion {
        Fusion::Weighted => (0..vector.len())
            .map(|i| vector[i] + keywords.weight * keyword(i))
            .collect(),
        Fusion::Rrf => {
            // 1/(k + rank) per ranking, scaled so first in both scores 1.
            let ranks = |score: &dyn Fn(usize) -> f32| {
                let mut order: Vec<usize> = (0..vector.len()).collect();
                order.sort_by(|&a, &b| score(b).total_cmp(&score(a)).then(a.cmp(&b)));
                let mut rank = vec![0usize; vector.len()];
                for (r, i) in order.into_iter().enumerate() {
                    rank[i] = r + 1;
                }
                rank
            };
            let by_vector = ranks(&|i| vector[i]);
            let by_keyword = ranks(&keyword);
            let k = keywords.rrf_k;
            (0..vector.len())
                .map(|i| {
                    (k + 1.0) / 2.0
                        * (1.0 / (k + by_vector[i] as f32) + 1.0 / (k + by_keyword[i] as f32))
                })
                .collect()
        }
    }
}
