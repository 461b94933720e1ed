//! Stage 1, retrieve: per allowed datasource (rayon), the learned head's probabilities
//! fused with BM25, or the vector search when the index has no head; negative examples
//! decline their datasource's candidates; `rrf` fusion across datasources. A partition
//! whose search has not returned `search_timeout_ms` after the searches began is left out
//! and reported (`deadline`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use switchyard_catalog::metric;
use switchyard_index::config::{CompositeRetrieval, RouterConfig};
use switchyard_index::head::softmax;
use switchyard_index::index::Index;
use switchyard_text::config::Fusion;

use super::deadline;
use super::routing::{Candidates, Declined, Match, Ranking, StageScores, StageTimings};
use super::{ms_since, Router};
use switchyard_catalog::auth::Access;

/// One template found in a partition, before it becomes a [`Match`].
#[derive(Debug, Clone, Copy)]
struct Candidate {
    template: usize,
    learned: Option<f32>,
    probability: Option<f32>,
    keyword: Option<f32>,
    opening: Option<f32>,
    /// The vector and keyword scores fused: where the ranking score starts.
    fused: f32,
    embedding: f32,
}

/// What one partition's search found.
struct Searched {
    datasource: usize,
    found: Vec<Candidate>,
    /// The nearest negative example (its position) and its cosine.
    negative: Option<(usize, f32)>,
}

/// What the partition searches of one query read, owned: a search the router stopped
/// waiting for finishes on its own.
struct PartitionSearch {
    index: Arc<Index>,
    config: Arc<RouterConfig>,
    starts: Arc<[usize]>,
    vector: Vec<f32>,
    learned: Option<Learned>,
    /// The lexical scores of every template by global number, when their stages are on.
    keywords: Option<Vec<f32>>,
    openings: Option<Vec<f32>>,
}

/// Probabilities of every allowed template by global number: plain (ranking) and at the
/// fitted temperature (the calibrated probability).
struct Learned {
    plain: Vec<f32>,
    calibrated: Vec<f32>,
}

impl Router {
    pub(super) fn retrieve(&self, query: &str, vector: &[f32], access: &Access) -> Candidates {
        let start = Instant::now();
        let retrieval = &self.config.composite_retrieval;
        let routed = self.routed_text(query);
        let allowed: Vec<usize> = (0..self.index.partitions.len())
            .filter(|&d| access.allows(&self.index.partitions[d].datasource))
            .collect();
        let keyword_scores = retrieval
            .keywords
            .enabled
            .then(|| self.keyword_scores(&routed, &allowed));
        let search = PartitionSearch {
            index: self.index.clone(),
            config: self.config.clone(),
            starts: self.starts.clone(),
            vector: vector.to_vec(),
            learned: self.uses_head().then(|| self.learned(vector, &allowed)),
            keywords: keyword_scores,
            openings: retrieval
                .openings
                .enabled
                .then(|| self.openings.scores(&routed)),
        };
        let deadline = Instant::now() + Duration::from_millis(retrieval.search_timeout_ms);
        let gathered = deadline::gather(&allowed, retrieval.parallel_search, deadline, move |d| {
            search.partition(d)
        });
        let mut matches = Vec::new();
        for searched in &gathered.done {
            matches.extend(self.matches_of(searched, vector));
        }
        let timed_out: Vec<String> = gathered
            .late
            .iter()
            .map(|&d| self.index.partitions[d].datasource.clone())
            .collect();
        if !timed_out.is_empty() {
            tracing::warn!(datasources = ?timed_out, search_timeout_ms = retrieval.search_timeout_ms, "partition searches overran search_timeout_ms; left out");
            metrics::counter!(metric::SEARCH_TIMEOUTS).increment(timed_out.len() as u64);
        }
        if retrieval.keywords.enabled && retrieval.keywords.fusion == Fusion::Rrf {
            rrf_across_datasources(&mut matches, retrieval);
        }
        Candidates {
            query: query.to_owned(),
            corrected: (routed != query).then(|| routed.into_owned()),
            matches,
            adapters_searched: allowed
                .iter()
                .map(|&d| self.index.partitions[d].datasource.clone())
                .collect(),
            timed_out,
            ranking: if self.uses_head() {
                Ranking::Learned
            } else {
                Ranking::Similarity
            },
            timings: StageTimings {
                search_ms: ms_since(start),
                ..StageTimings::default()
            },
        }
    }

    /// BM25 over every template, relative to the best allowed template's.
    fn keyword_scores(&self, query: &str, allowed: &[usize]) -> Vec<f32> {
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
    }

    /// The head's logits over the allowed templates, softmax-normalised across them.
    fn learned(&self, vector: &[f32], allowed: &[usize]) -> Learned {
        let head = self.index.head.as_ref().expect("checked by uses_head");
        let mut logits = vec![f32::NEG_INFINITY; head.templates()];
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

    /// One partition's candidates as matches; those nearer a negative example of the
    /// datasource than to any of their own texts are declined.
    fn matches_of<'a>(
        &'a self,
        searched: &'a Searched,
        vector: &'a [f32],
    ) -> impl Iterator<Item = Match> + 'a {
        let d = searched.datasource;
        let partition = &self.index.partitions[d];
        let datasource = &self.index.catalog.datasources[d];
        searched.found.iter().map(move |c| {
            let declined_by = searched.negative.and_then(|(n, similarity)| {
                let template_similarity = partition.nearest_text(c.template, vector);
                (similarity >= template_similarity).then(|| Declined {
                    negative_example: datasource.spec.negative_examples[n].clone(),
                    similarity,
                    template_similarity,
                })
            });
            Match {
                datasource: partition.datasource.clone(),
                template_id: datasource.templates[c.template].id.clone(),
                datasource_position: d,
                template_position: c.template,
                scores: StageScores {
                    embedding_score: c.embedding,
                    learned_score: c.learned,
                    keyword_score: c.keyword,
                    opening_score: c.opening,
                    rerank_score: None,
                    string_similarity_score: None,
                    retrieval_score: c.fused,
                    rank_score: c.fused,
                    combined_score: c.embedding,
                    probability: c.probability,
                },
                declined_by,
                context_probability: None,
            }
        })
    }
}

impl PartitionSearch {
    /// Partition `d`'s candidates and its nearest negative example.
    fn partition(&self, d: usize) -> Searched {
        Searched {
            datasource: d,
            found: self.search(d),
            negative: self.index.partitions[d].nearest_negative(&self.vector),
        }
    }

    /// The best `max_templates_per_source` templates of partition `d`.
    fn search(&self, d: usize) -> Vec<Candidate> {
        let retrieval = &self.config.composite_retrieval;
        let partition = &self.index.partitions[d];
        let vector = &self.vector;
        let start = self.starts[d];
        let limit = retrieval.max_templates_per_source;
        let keyword_of = |t: usize| self.keywords.as_ref().map(|k| k[start + t]);
        let opening_of = |t: usize| self.openings.as_ref().map(|o| o[start + t]);
        let mut found: Vec<Candidate> = match &self.learned {
            // Every template of the partition: the head has scored them all.
            Some(learned) => (0..partition.template_count())
                .map(|t| Candidate {
                    template: t,
                    learned: Some(learned.plain[start + t]),
                    probability: Some(learned.calibrated[start + t]),
                    keyword: keyword_of(t),
                    opening: opening_of(t),
                    fused: 0.0,
                    embedding: 0.0,
                })
                .collect(),
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
                    opening: opening_of(t),
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
        if self.learned.is_some() {
            for c in &mut found {
                c.embedding = partition.score(c.template, vector, &retrieval.template_scoring);
            }
        }
        found
    }
}

/// Reciprocal rank fusion over every datasource's matches at once.
fn rrf_across_datasources(matches: &mut [Match], retrieval: &CompositeRetrieval) {
    let found: Vec<Candidate> = matches
        .iter()
        .map(|m| Candidate {
            template: m.template_position,
            learned: m.scores.learned_score,
            probability: m.scores.probability,
            keyword: m.scores.keyword_score,
            opening: m.scores.opening_score,
            fused: 0.0,
            embedding: m.scores.embedding_score,
        })
        .collect();
    for (m, f) in matches.iter_mut().zip(fuse(&found, retrieval, Fusion::Rrf)) {
        m.scores.retrieval_score = f;
    }
}

/// Stage 1's score: each candidate's vector score (the head's weighted probability, or the
/// cosine without a head) with its opening word's share added, fused with its keyword
/// score.
fn fuse(found: &[Candidate], retrieval: &CompositeRetrieval, fusion: Fusion) -> Vec<f32> {
    let vector: Vec<f32> = found
        .iter()
        .map(|c| {
            let vector = match c.learned {
                Some(p) => retrieval.learned_scoring.weight * p,
                None => c.embedding,
            };
            vector + retrieval.openings.weight * c.opening.unwrap_or(0.0)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(learned: Option<f32>, embedding: f32, keyword: Option<f32>) -> Candidate {
        Candidate {
            template: 0,
            learned,
            probability: None,
            keyword,
            opening: None,
            fused: 0.0,
            embedding,
        }
    }

    #[test]
    fn weighted_fusion_adds_keywords_to_the_head_or_the_cosine() {
        let mut r = CompositeRetrieval::default();
        r.keywords.enabled = true;
        r.keywords.weight = 0.5;
        r.learned_scoring.weight = 2.0;
        r.openings.weight = 0.3;
        let mut found = [
            candidate(Some(0.5), 0.1, Some(1.0)),
            candidate(None, 0.7, None),
        ];
        let fused = fuse(&found, &r, Fusion::Weighted);
        assert!((fused[0] - 1.5).abs() < 1e-6, "{fused:?}");
        assert!((fused[1] - 0.7).abs() < 1e-6, "{fused:?}");
        // The opening word's share adds to the vector score, weighted.
        found[1].opening = Some(0.5);
        let fused = fuse(&found, &r, Fusion::Weighted);
        assert!((fused[1] - 0.85).abs() < 1e-6, "{fused:?}");
        found[1].opening = None;
        r.keywords.enabled = false;
        assert!((fuse(&found, &r, Fusion::Weighted)[0] - 1.0).abs() < 1e-6);
    }

    #[test]
    fn rrf_scores_first_in_both_rankings_one() {
        let mut r = CompositeRetrieval::default();
        r.keywords.enabled = true;
        let found = [
            candidate(None, 0.9, Some(1.0)),
            candidate(None, 0.2, Some(0.1)),
        ];
        let fused = fuse(&found, &r, Fusion::Rrf);
        assert!((fused[0] - 1.0).abs() < 1e-6, "{fused:?}");
        assert!(fused[1] < fused[0]);
    }
}
