//! `eval-docs`: how well a documents datasource's search finds the documents a query's
//! judgements name (nDCG@10, recall@10 and @100, MRR) and how long the search takes
//! (the query embedding excluded: it is computed before, in batches).

use std::collections::HashSet;
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{percentiles, Percentiles};
use crate::error::EvalError;
use crate::error::Result;
use switchyard_documents::config::DocumentsConfig;
use switchyard_documents::{ChunkIndex, Query, Signals};
use switchyard_text::keywords::TermExpansion;

/// One judged query: `{"query_id", "text", "relevant": [doc ids]}`.
#[derive(Debug, Clone, Deserialize)]
pub struct JudgedQuery {
    pub query_id: String,
    pub text: String,
    pub relevant: Vec<String>,
}

pub fn load_judged(path: &Path) -> Result<Vec<JudgedQuery>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|e| EvalError::read(path, e))?;
    let mut queries = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let query: JudgedQuery = serde_json::from_str(line).map_err(|e| {
            EvalError::data_set(
                path,
                format!("line {}", n + 1),
                format!("expected {{\"query_id\", \"text\", \"relevant\": [doc ids]}}: {e}"),
            )
        })?;
        queries.push(query);
    }
    if queries.is_empty() {
        return Err(EvalError::data_set(path, "lines", "no judged queries"));
    }
    Ok(queries)
}

/// One row of the report: a configuration of the search and what it scores.
#[derive(Debug, Clone, Serialize)]
pub struct RetrievalReport {
    pub stage: String,
    pub queries: usize,
    pub ndcg_at_10: f64,
    pub recall_at_10: f64,
    pub recall_at_100: f64,
    pub mrr: f64,
    /// Search alone, one query at a time.
    pub latency_ms: Percentiles,
}

/// The stages `--stages` compares: each vector type alone, the vectors, BM25, all fused.
pub fn stages() -> Vec<(&'static str, Signals)> {
    let none = Signals {
        questions: false,
        summary: false,
        content: false,
        bm25: false,
    };
    vec![
        (
            "questions",
            Signals {
                questions: true,
                ..none
            },
        ),
        (
            "summary",
            Signals {
                summary: true,
                ..none
            },
        ),
        (
            "content",
            Signals {
                content: true,
                ..none
            },
        ),
        (
            "vectors",
            Signals {
                bm25: false,
                ..Signals::ALL
            },
        ),
        ("bm25", Signals { bm25: true, ..none }),
        ("fused", Signals::ALL),
    ]
}

/// Search every query (`vectors[i]` is query `i`'s unit vector) for its 100 best documents
/// and score the rankings against the judgements.
pub fn evaluate_retrieval(
    chunks: &ChunkIndex,
    queries: &[JudgedQuery],
    vectors: &[Vec<f32>],
    settings: &DocumentsConfig,
    expansion: &TermExpansion,
    stage: (&str, Signals),
) -> RetrievalReport {
    let (mut ndcg, mut recall_10, mut recall_100, mut mrr) = (0.0, 0.0, 0.0, 0.0);
    let mut latency = Vec::with_capacity(queries.len());
    for (query, vector) in queries.iter().zip(vectors) {
        let search = Query {
            text: &query.text,
            vector: Some(vector),
            filters: Default::default(),
            top_k: 100,
            signals: stage.1,
            balance: true,
        };
        let start = Instant::now();
        let found = chunks.search(&search, settings, expansion);
        latency.push(start.elapsed().as_secs_f64() * 1000.0);
        let ranked: Vec<&str> = found
            .hits
            .iter()
            .map(|h| chunks.documents[h.document].id.as_str())
            .collect();
        let relevant: HashSet<&str> = query.relevant.iter().map(String::as_str).collect();
        let scores = score(&ranked, &relevant);
        ndcg += scores.0;
        recall_10 += scores.1;
        recall_100 += scores.2;
        mrr += scores.3;
    }
    let n = queries.len().max(1) as f64;
    RetrievalReport {
        stage: stage.0.to_owned(),
        queries: queries.len(),
        ndcg_at_10: ndcg / n,
        recall_at_10: recall_10 / n,
        recall_at_100: recall_100 / n,
        mrr: mrr / n,
        latency_ms: percentiles(latency),
    }
}

/// (nDCG@10, recall@10, recall@100, reciprocal rank) of one ranking, binary relevance.
fn score(ranked: &[&str], relevant: &HashSet<&str>) -> (f64, f64, f64, f64) {
    if relevant.is_empty() {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let hit = |d: &&str| relevant.contains(d);
    let dcg: f64 = ranked
        .iter()
        .take(10)
        .enumerate()
        .filter(|(_, d)| hit(d))
        .map(|(i, _)| 1.0 / (i as f64 + 2.0).log2())
        .sum();
    let ideal: f64 = (0..relevant.len().min(10))
        .map(|i| 1.0 / (i as f64 + 2.0).log2())
        .sum();
    let found_in = |k: usize| ranked.iter().take(k).filter(|d| hit(d)).count() as f64;
    let reciprocal = ranked
        .iter()
        .position(hit)
        .map_or(0.0, |p| 1.0 / (p as f64 + 1.0));
    let total = relevant.len() as f64;
    (
        dcg / ideal,
        found_in(10) / total,
        found_in(100) / total,
        reciprocal,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ndcg_recall_and_mrr_of_a_ranking() {
        let relevant: HashSet<&str> = ["b", "z"].into_iter().collect();
        let (ndcg, r10, r100, rr) = score(&["a", "b", "c"], &relevant);
        let ideal = 1.0 + 1.0 / 3f64.log2();
        assert!((ndcg - (1.0 / 3f64.log2()) / ideal).abs() < 1e-9);
        assert_eq!((r10, r100, rr), (0.5, 0.5, 0.5));
        assert_eq!(score(&["b", "z"], &relevant), (1.0, 1.0, 1.0, 1.0));
        assert_eq!(score(&[], &relevant), (0.0, 0.0, 0.0, 0.0));
    }
}
