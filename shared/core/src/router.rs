//! Routing: which template of which datasource fits a question best, and how sure we are.
//!
//! Embed once → search the allowed partitions (rayon) → string similarity over the
//! candidates (rayon) → optional rerank → combine with weights renormalised over the
//! stages that ran → decide against `confidence_threshold`.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;

use crate::config::Config;
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::index::Index;
use crate::similarity::{template_similarity, PreparedQuery, TemplateTexts};
use crate::template::{Datasource, Template};

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
    #[serde(serialize_with = "serialize_decimal")]
    pub embedding_score: f32,
    #[serde(serialize_with = "serialize_decimal_option")]
    pub rerank_score: Option<f32>,
    #[serde(serialize_with = "serialize_decimal_option")]
    pub string_similarity_score: Option<f32>,
    #[serde(serialize_with = "serialize_decimal")]
    pub combined_score: f32,
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
    Applied {
        reranker: String,
        candidates: usize,
    },
    Failed {
        reranker: String,
        error: String,
    },
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
    #[serde(serialize_with = "serialize_decimal")]
    pub threshold: f32,
    pub weights: Weights,
    pub rerank: RerankStatus,
    pub timings: StageTimings,
}

impl Routing {
    pub fn best(&self) -> Option<&Match> {
        self.matches.first()
    }

    pub fn selected_match(&self) -> Option<&Match> {
        self.selected.map(|i| &self.matches[i])
    }

    pub fn reason(&self) -> &'static str {
        match (self.selected, self.matches.is_empty()) {
            (Some(_), _) => "highest_combined_score_above_threshold",
            (None, true) => "no_templates_searched",
            (None, false) => "best_score_below_threshold",
        }
    }
}

/// (datasource position, its (template position, score) hits, milliseconds taken).
type PartitionResult = (usize, Vec<(usize, f32)>, f64);

pub struct Router {
    index: Index,
    /// Normalised template texts for stage 3, `[datasource][template]`.
    texts: Vec<Vec<TemplateTexts>>,
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
        let texts = index
            .catalog
            .datasources
            .iter()
            .map(|d| d.templates.iter().map(TemplateTexts::of).collect())
            .collect();
        Ok(Router {
            index,
            texts,
            config,
            embedder,
        })
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

    pub fn route(&self, query: &str, access: &Access) -> Result<Routing> {
        Router::validate_query(query)?;
        let start = Instant::now();
        let vector = self.embedder.embed_one(query)?;
        let embedding_ms = ms_since(start);
        let mut routing = self.route_vector(query, &vector, access)?;
        routing.timings.embedding_ms = embedding_ms;
        routing.timings.total_ms = ms_since(start);
        Ok(routing)
    }

    /// Route with the query's vector already computed (batch evaluation).
    pub fn route_vector(&self, query: &str, vector: &[f32], access: &Access) -> Result<Routing> {
        let start = Instant::now();
        let retrieval = &self.config.composite_retrieval;
        let allowed: Vec<usize> = (0..self.index.partitions.len())
            .filter(|&d| access.allows(&self.index.partitions[d].datasource))
            .collect();

        // Stage 1: vector search, one partition per datasource.
        let budget_ms = retrieval.search_timeout_ms as f64;
        let search_one = |&d: &usize| {
            let began = Instant::now();
            let found = self.index.partitions[d].search(
                vector,
                retrieval.max_templates_per_source,
                self.config.index.candidate_pool,
                &retrieval.template_scoring,
            );
            (d, found, ms_since(began))
        };
        let searched: Vec<PartitionResult> = if retrieval.parallel_search {
            allowed.par_iter().map(search_one).collect()
        } else {
            allowed.iter().map(search_one).collect()
        };
        let mut timed_out = Vec::new();
        let mut matches = Vec::new();
        for (d, found, took_ms) in searched {
            let partition = &self.index.partitions[d];
            if took_ms > budget_ms {
                tracing::warn!(datasource = %partition.datasource, took_ms, budget_ms, "partition search overran its budget; left out");
                timed_out.push(partition.datasource.clone());
                continue;
            }
            let datasource = &self.index.catalog.datasources[d];
            for (t, score) in found {
                matches.push(Match {
                    datasource: partition.datasource.clone(),
                    template_id: datasource.templates[t].id.clone(),
                    datasource_position: d,
                    template_position: t,
                    embedding_score: score,
                    rerank_score: None,
                    string_similarity_score: None,
                    combined_score: score,
                });
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

        // Stage 2: rerank the top candidates by embedding score.
        let stage2_start = Instant::now();
        let rerank = RerankStatus::Disabled;
        let rerank_ms = ms_since(stage2_start);

        let weights = self.weights(matches!(rerank, RerankStatus::Applied { .. }));
        for m in &mut matches {
            let total =
                weights.embedding_weight + weights.rerank_weight + weights.string_similarity_weight;
            m.combined_score = (weights.embedding_weight * m.embedding_score
                + weights.rerank_weight * m.rerank_score.unwrap_or(m.embedding_score)
                + weights.string_similarity_weight * m.string_similarity_score.unwrap_or(0.0))
                / total;
        }
        matches.sort_by(|a, b| {
            b.combined_score
                .total_cmp(&a.combined_score)
                .then(b.embedding_score.total_cmp(&a.embedding_score))
                .then(a.datasource_position.cmp(&b.datasource_position))
                .then(a.template_position.cmp(&b.template_position))
        });
        let threshold = retrieval.confidence_threshold;
        let selected = matches
            .first()
            .filter(|m| m.combined_score >= threshold)
            .map(|_| 0);

        Ok(Routing {
            query: query.to_owned(),
            matches,
            adapters_searched: allowed
                .iter()
                .map(|&d| self.index.partitions[d].datasource.clone())
                .collect(),
            timed_out,
            selected,
            threshold,
            weights,
            rerank,
            timings: StageTimings {
                embedding_ms: 0.0,
                search_ms,
                string_similarity_ms,
                rerank_ms,
                total_ms: ms_since(start),
            },
        })
    }

    /// Weights of the stages that ran, renormalised to sum to 1.
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
