//! Query time: filters narrow the documents, each chunk is scored through its vectors
//! (questions, summary, content; weights renormalised over those it has) and BM25, the two
//! are fused (weighted or RRF), one chunk per document is kept, and MMR picks the answer's
//! chunks: near-duplicates dropped, and each named filter value given its fair share when
//! a question compares several.

use std::collections::BTreeMap;

use serde::Serialize;

use super::chunk::terms;
use super::index::ChunkIndex;
use crate::config::DocumentsConfig;
use switchyard_text::config::Fusion;
use switchyard_text::keywords::TermExpansion;
use switchyard_vectors::embed::dot;

/// Which scores a search uses: all of them in service; one at a time in `eval-docs --stages`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signals {
    pub questions: bool,
    pub summary: bool,
    pub content: bool,
    pub bm25: bool,
}

impl Signals {
    pub const ALL: Signals = Signals {
        questions: true,
        summary: true,
        content: true,
        bm25: true,
    };

    fn any_vector(&self) -> bool {
        self.questions || self.summary || self.content
    }
}

/// One search.
#[derive(Debug, Clone)]
pub struct Query<'a> {
    pub text: &'a str,
    /// The question's unit vector, from the model the artifact was built with; without
    /// one the search is BM25 alone.
    pub vector: Option<&'a [f32]>,
    /// Metadata field → accepted values: a document passes when it carries one of each.
    pub filters: BTreeMap<String, Vec<String>>,
    pub top_k: usize,
    pub signals: Signals,
    /// Give each value of a filter naming several its share of the results.
    pub balance: bool,
}

/// What each signal gave a chunk.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChunkScores {
    pub questions: Option<f32>,
    pub summary: Option<f32>,
    pub content: Option<f32>,
    /// The vectors' weighted combination.
    pub vectors: Option<f32>,
    pub bm25: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    pub chunk: usize,
    pub document: usize,
    /// The fused score the chunk was ranked by.
    pub score: f32,
    pub scores: ChunkScores,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// Best first, at most `top_k`, one per document.
    pub hits: Vec<Hit>,
    /// The filter whose values shared the results out, when the query named several.
    pub balanced_by: Option<String>,
    /// Documents that passed the filters.
    pub documents_searched: usize,
}

impl ChunkIndex {
    pub fn search(
        &self,
        query: &Query<'_>,
        settings: &DocumentsConfig,
        expansion: &TermExpansion,
    ) -> Found {
        let allowed: Vec<bool> = self
            .documents
            .iter()
            .map(|d| {
                query.filters.iter().all(|(field, wanted)| {
                    d.metadata.get(field).is_some_and(|have| {
                        have.iter()
                            .any(|h| wanted.iter().any(|w| h.eq_ignore_ascii_case(w)))
                    })
                })
            })
            .collect();
        let chunks: Vec<usize> = (0..self.chunks.len())
            .filter(|&c| allowed[self.chunks[c].document as usize])
            .collect();
        let vector = query.vector.filter(|_| query.signals.any_vector());
        let vectors: Vec<Option<ChunkVectorScores>> = match vector {
            Some(v) => {
                let per_document = self.document_scores(v, &allowed, query.signals);
                chunks
                    .iter()
                    .map(|&c| {
                        Some(self.vector_scores(c, v, &per_document, query.signals, settings))
                    })
                    .collect()
            }
            None => chunks.iter().map(|_| None).collect(),
        };
        let bm25: Vec<f32> = if query.signals.bm25 {
            let mut text = query.text.to_owned();
            text.push(' ');
            text.push_str(&expansion.additions(query.text));
            let all = self.terms.scores(&terms(&text));
            chunks.iter().map(|&c| all[c]).collect()
        } else {
            vec![0.0; chunks.len()]
        };
        let fused = fuse(&vectors, &bm25, query.signals.bm25, settings);

        // One chunk per document: its best.
        let mut order: Vec<usize> = (0..chunks.len()).collect();
        order.sort_by(|&a, &b| fused[b].total_cmp(&fused[a]).then(a.cmp(&b)));
        let mut seen = vec![false; self.documents.len()];
        let pool = settings.candidates.max(query.top_k);
        let candidates: Vec<Hit> = order
            .into_iter()
            .filter(|&i| fused[i] > 0.0)
            .filter(|&i| {
                !std::mem::replace(&mut seen[self.chunks[chunks[i]].document as usize], true)
            })
            .take(pool)
            .map(|i| Hit {
                chunk: chunks[i],
                document: self.chunks[chunks[i]].document as usize,
                score: fused[i],
                scores: scores_of(vectors[i].as_ref(), bm25[i]),
            })
            .collect();
        let balanced_by = query
            .filters
            .iter()
            .filter(|_| query.balance)
            .find(|(_, values)| values.len() > 1)
            .map(|(field, values)| (field.clone(), values.clone()));
        let hits = self.select(candidates, query.top_k, settings, balanced_by.as_ref());
        Found {
            hits,
            balanced_by: balanced_by.map(|(field, _)| field),
            documents_searched: allowed.iter().filter(|&&a| a).count(),
        }
    }

    /// Per allowed document: its best question's cosine and its summary's.
    fn document_scores(
        &self,
        vector: &[f32],
        allowed: &[bool],
        signals: Signals,
    ) -> Vec<(Option<f32>, Option<f32>)> {
        let mut scores: Vec<(Option<f32>, Option<f32>)> = (0..self.documents.len())
            .map(|d| {
                let summary =
                    (signals.summary && allowed[d]).then(|| dot(self.summary_row(d), vector));
                (None, summary)
            })
            .collect();
        if signals.questions {
            for (owner, row) in self.question_rows().filter(|(o, _)| allowed[*o]) {
                let cosine = dot(row, vector);
                let best = &mut scores[owner].0;
                *best = Some(best.map_or(cosine, |b: f32| b.max(cosine)));
            }
        }
        scores
    }

    fn vector_scores(
        &self,
        chunk: usize,
        vector: &[f32],
        per_document: &[(Option<f32>, Option<f32>)],
        signals: Signals,
        settings: &DocumentsConfig,
    ) -> ChunkVectorScores {
        let (questions, summary) = per_document[self.chunks[chunk].document as usize];
        let content = signals
            .content
            .then(|| dot(self.content_row(chunk), vector));
        let w = &settings.weights;
        let parts = [
            (questions, w.questions),
            (summary, w.summary),
            (content, w.content),
        ];
        let weight: f32 = parts
            .iter()
            .filter(|(s, _)| s.is_some())
            .map(|(_, w)| w)
            .sum();
        let combined = (weight > 0.0).then(|| {
            parts
                .iter()
                .filter_map(|(s, w)| s.map(|s| s * w))
                .sum::<f32>()
                / weight
        });
        ChunkVectorScores {
            questions,
            summary,
            content,
            combined,
        }
    }

    /// MMR over the candidates: relevance against likeness to what is already chosen;
    /// near-duplicates are dropped, and with `balance` each value takes its turn.
    fn select(
        &self,
        candidates: Vec<Hit>,
        top_k: usize,
        settings: &DocumentsConfig,
        balance: Option<&(String, Vec<String>)>,
    ) -> Vec<Hit> {
        let best = candidates.first().map_or(1.0, |h| h.score.max(1e-6));
        let lambda = settings.mmr_lambda;
        let mut likeness = vec![f32::NEG_INFINITY; candidates.len()];
        let mut taken = vec![false; candidates.len()];
        let groups: Vec<Vec<bool>> = balance.map_or_else(Vec::new, |(field, values)| {
            values
                .iter()
                .map(|v| {
                    candidates
                        .iter()
                        .map(|h| {
                            self.documents[h.document]
                                .metadata
                                .get(field)
                                .is_some_and(|have| have.iter().any(|x| x.eq_ignore_ascii_case(v)))
                        })
                        .collect()
                })
                .collect()
        });
        // The value whose best chunk ranks highest goes first.
        let mut groups = groups;
        groups.sort_by_key(|g| g.iter().position(|&member| member).unwrap_or(usize::MAX));
        let mut chosen = Vec::new();
        let mut turn = 0;
        while chosen.len() < top_k {
            let eligible = |i: usize, group: Option<&Vec<bool>>| {
                !taken[i]
                    && likeness[i] < settings.duplicate_similarity
                    && group.is_none_or(|g| g[i])
            };
            // The group whose turn it is; one with nothing left gives its turn away.
            let group = (0..groups.len())
                .map(|k| &groups[(turn + k) % groups.len()])
                .find(|g| (0..candidates.len()).any(|i| eligible(i, Some(g))));
            turn += 1;
            let pick = (0..candidates.len())
                .filter(|&i| eligible(i, group))
                .map(|i| {
                    let relevance = candidates[i].score / best;
                    let redundancy = if likeness[i].is_finite() {
                        likeness[i]
                    } else {
                        0.0
                    };
                    (i, lambda * relevance - (1.0 - lambda) * redundancy)
                })
                .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
            let Some((i, _)) = pick else { break };
            taken[i] = true;
            let row = self.content_row(candidates[i].chunk);
            for (j, like) in likeness.iter_mut().enumerate() {
                if !taken[j] {
                    *like = like.max(dot(row, self.content_row(candidates[j].chunk)));
                }
            }
            chosen.push(i);
        }
        let mut candidates: Vec<Option<Hit>> = candidates.into_iter().map(Some).collect();
        chosen
            .into_iter()
            .filter_map(|i| candidates[i].take())
            .collect()
    }
}

struct ChunkVectorScores {
    questions: Option<f32>,
    summary: Option<f32>,
    content: Option<f32>,
    combined: Option<f32>,
}

fn scores_of(vectors: Option<&ChunkVectorScores>, bm25: f32) -> ChunkScores {
    ChunkScores {
        questions: vectors.and_then(|v| v.questions),
        summary: vectors.and_then(|v| v.summary),
        content: vectors.and_then(|v| v.content),
        vectors: vectors.and_then(|v| v.combined),
        bm25,
    }
}

/// One score per chunk from its vector score and BM25.
fn fuse(
    vectors: &[Option<ChunkVectorScores>],
    bm25: &[f32],
    use_bm25: bool,
    settings: &DocumentsConfig,
) -> Vec<f32> {
    let vector: Vec<Option<f32>> = vectors
        .iter()
        .map(|v| v.as_ref().and_then(|v| v.combined))
        .collect();
    let has_vectors = vector.iter().any(Option::is_some);
    match (has_vectors, use_bm25) {
        (false, _) => {
            let best = bm25.iter().copied().fold(0.0f32, f32::max).max(1e-6);
            bm25.iter().map(|b| b / best).collect()
        }
        // Cosines of MiniLM are rarely negative; floored at 0 so "no evidence" is 0.
        (true, false) => vector.iter().map(|v| v.unwrap_or(0.0).max(0.0)).collect(),
        (true, true) => match settings.fusion {
            Fusion::Weighted => {
                let best = bm25.iter().copied().fold(0.0f32, f32::max).max(1e-6);
                let w = settings.keyword_weight;
                vector
                    .iter()
                    .zip(bm25)
                    .map(|(v, b)| (1.0 - w) * v.unwrap_or(0.0).max(0.0) + w * b / best)
                    .collect()
            }
            Fusion::Rrf => {
                let by_vector = ranks(&vector.iter().map(|v| v.unwrap_or(0.0)).collect::<Vec<_>>());
                let by_bm25 = ranks(bm25);
                let k = settings.rrf_k;
                (0..bm25.len())
                    .map(|i| {
                        let keyword = if bm25[i] > 0.0 {
                            1.0 / (k + by_bm25[i] as f32)
                        } else {
                            0.0
                        };
                        1.0 / (k + by_vector[i] as f32) + keyword
                    })
                    .collect()
            }
        },
    }
}

/// 1-based rank of each score, highest first.
fn ranks(scores: &[f32]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let mut rank = vec![0; scores.len()];
    for (r, i) in order.into_iter().enumerate() {
        rank[i] = r + 1;
    }
    rank
}
