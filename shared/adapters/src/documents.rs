//! `documents` datasources: a search over the datasource's chunk artifact. The question's
//! vector comes with the request (the router has the model); filters come from the
//! question (the datasource's `filters`, by their values and aliases) and the request.
//! The answer lists the chunks found, each with its document, its score per signal and
//! the filters applied; the optional chat model may phrase an answer citing them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use switchyard_catalog::json::decimal;
use switchyard_catalog::template::{Datasource, Parameter, Template};
use switchyard_catalog::BoxFuture;
use switchyard_contract::adapter::AdapterRequest;
use switchyard_contract::rerank::{RerankCandidate, Reranker, Reranking};
use switchyard_documents::config::DocumentsConfig;
use switchyard_documents::{
    check_model, filters_in_question, requested_filters, ChunkIndex, Hit, Query, Signals,
};
use switchyard_text::config::Keywords;
use switchyard_text::keywords::TermExpansion;

use crate::adapter::{Adapter, Answer};
use crate::error::{AdapterError, Result};

/// Characters of a chunk shown in the answer's text (the data has it whole).
const PREVIEW_CHARS: usize = 240;

pub struct DocumentsAdapter {
    name: String,
    chunks: ChunkIndex,
    filters: Vec<Parameter>,
    settings: DocumentsConfig,
    expansion: TermExpansion,
    rerank: Option<ChunkRerank>,
}

/// The optional rerank provider over an answer's chunks: its score joins the fused one
/// with `weight`; a slow or failing provider leaves the order as it was, and says so.
#[derive(Clone)]
pub struct ChunkRerank {
    pub reranker: Arc<dyn Reranker>,
    pub weight: f32,
    pub timeout: Duration,
}

impl ChunkRerank {
    /// `reranker` with the weight and timeout of `composite_retrieval.reranking`.
    pub fn new(reranker: Arc<dyn Reranker>, settings: &Reranking) -> ChunkRerank {
        ChunkRerank {
            reranker,
            weight: settings.weight,
            timeout: Duration::from_millis(settings.timeout_ms),
        }
    }
}

impl DocumentsAdapter {
    /// Serve `datasource` from `chunks` (loaded from `origin`); an artifact built for
    /// another datasource is refused.
    pub fn new(
        datasource: &Datasource,
        chunks: ChunkIndex,
        origin: &str,
        documents: &DocumentsConfig,
        keywords: &Keywords,
    ) -> Result<DocumentsAdapter> {
        chunks
            .check_datasource(datasource.name(), origin)
            .map_err(|e| AdapterError::Datasource {
                datasource: datasource.name().to_owned(),
                message: e.to_string(),
            })?;
        Ok(DocumentsAdapter {
            name: datasource.name().to_owned(),
            chunks,
            filters: datasource.spec.filters.clone(),
            settings: documents.clone(),
            expansion: TermExpansion::new(&keywords.term_expansion),
            rerank: None,
        })
    }

    /// Rerank each answer's chunks with this provider.
    pub fn with_rerank(mut self, rerank: Option<ChunkRerank>) -> DocumentsAdapter {
        self.rerank = rerank;
        self
    }

    /// The provider's scores for `hits`, blended in and re-sorted; the status says what
    /// happened (`off`, `ok`, or why the order was kept).
    async fn reranked(&self, query: &str, hits: &mut [Hit]) -> (String, Option<Vec<f32>>) {
        let Some(rerank) = &self.rerank else {
            return ("off".into(), None);
        };
        if hits.len() < 2 {
            return ("skipped: fewer than two chunks".into(), None);
        }
        let candidates: Vec<RerankCandidate> = hits
            .iter()
            .map(|hit| RerankCandidate {
                datasource: self.name.clone(),
                template_id: self.chunks.documents[hit.document].id.clone(),
                description: self.chunks.chunks[hit.chunk].text.clone(),
                nl_examples: Vec::new(),
            })
            .collect();
        let asked =
            tokio::time::timeout(rerank.timeout, rerank.reranker.rerank(query, &candidates));
        let scores = match asked.await {
            Ok(Ok(scores)) if scores.len() == hits.len() => scores,
            Ok(Ok(scores)) => {
                return (
                    format!("failed: {} scores for {} chunks", scores.len(), hits.len()),
                    None,
                )
            }
            Ok(Err(e)) => return (format!("failed: {e}"), None),
            Err(_) => {
                return (
                    format!("timed out after {} ms", rerank.timeout.as_millis()),
                    None,
                )
            }
        };
        let mut blended: Vec<(usize, f32)> = hits
            .iter()
            .zip(&scores)
            .enumerate()
            .map(|(i, (hit, s))| (i, (1.0 - rerank.weight) * hit.score + rerank.weight * s))
            .collect();
        blended.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let before: Vec<Hit> = hits.to_vec();
        let mut order = Vec::with_capacity(hits.len());
        for (slot, (i, score)) in blended.into_iter().enumerate() {
            hits[slot] = Hit {
                score,
                ..before[i].clone()
            };
            order.push(scores[i]);
        }
        ("ok".into(), Some(order))
    }

    fn refuse(&self, message: String) -> AdapterError {
        AdapterError::Datasource {
            datasource: self.name.clone(),
            message,
        }
    }

    /// The request's filters and the question's, merged by filter.
    fn filters(&self, request: &AdapterRequest) -> Result<BTreeMap<String, Vec<String>>> {
        let mut filters = requested_filters(&self.filters, &request.filters)
            .map_err(|message| self.refuse(message))?;
        for (name, values) in filters_in_question(&self.filters, &request.query) {
            let merged = filters.entry(name).or_default();
            for value in values {
                if !merged.contains(&value) {
                    merged.push(value);
                }
            }
        }
        Ok(filters)
    }

    async fn search(&self, request: &AdapterRequest) -> Result<Answer> {
        let filters = self.filters(request)?;
        let vector = match &request.query_vector {
            Some(v) => {
                check_model(&self.chunks, &v.model_id, v.values.len())
                    .map_err(|e| self.refuse(e.to_string()))?;
                Some(v.values.as_slice())
            }
            None => None,
        };
        let query = Query {
            text: &request.query,
            vector,
            filters: filters.clone(),
            top_k: self.settings.top_k,
            signals: Signals::ALL,
            balance: true,
        };
        let mut found = self.chunks.search(&query, &self.settings, &self.expansion);
        let (rerank, rerank_scores) = self.reranked(&request.query, &mut found.hits).await;
        let chunks: Vec<Value> = found
            .hits
            .iter()
            .enumerate()
            .map(|(rank, hit)| {
                let s = &hit.scores;
                let mut scores = json!({
                    "questions": s.questions.map(decimal),
                    "summary": s.summary.map(decimal),
                    "content": s.content.map(decimal),
                    "vectors": s.vectors.map(decimal),
                    "bm25": decimal(s.bm25),
                });
                if let Some(reranked) = &rerank_scores {
                    scores["rerank"] = decimal(reranked[rank]).into();
                }
                let chunk = &self.chunks.chunks[hit.chunk];
                let document = &self.chunks.documents[hit.document];
                json!({
                    "rank": rank + 1,
                    "document": document.id,
                    "title": document.title,
                    "heading": chunk.heading,
                    "text": chunk.text,
                    "score": decimal(hit.score),
                    "scores": scores,
                    "metadata": document.metadata,
                })
            })
            .collect();
        let content = if found.hits.is_empty() {
            format!("No passage of `{}` matches the question.", self.name)
        } else {
            found
                .hits
                .iter()
                .enumerate()
                .map(|(rank, hit)| {
                    let chunk = &self.chunks.chunks[hit.chunk];
                    let document = &self.chunks.documents[hit.document];
                    let section = chunk
                        .heading
                        .as_deref()
                        .map_or_else(String::new, |h| format!(" — {h}"));
                    format!(
                        "[{}] {}{section} ({}): {}",
                        rank + 1,
                        document.title,
                        document.id,
                        preview(&chunk.text)
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let data = json!({
            "chunks": chunks,
            "filters": filters,
            "balanced_by": found.balanced_by,
            "documents_searched": found.documents_searched,
            "rerank": rerank,
            "search": if vector.is_some() { "hybrid" } else { "bm25 (the request had no question vector)" },
        });
        Ok((content, data))
    }
}

fn preview(text: &str) -> String {
    if text.chars().count() <= PREVIEW_CHARS {
        return text.to_owned();
    }
    let cut: String = text.chars().take(PREVIEW_CHARS).collect();
    format!("{}…", cut.trim_end())
}

impl Adapter for DocumentsAdapter {
    fn execute<'a>(
        &'a self,
        _: &'a Template,
        _: &'a Map<String, Value>,
        request: &'a AdapterRequest,
        _: Duration,
    ) -> BoxFuture<'a, Result<Answer>> {
        // The search is in memory and bounded (one pass over the chunks); the rerank
        // provider has its own timeout.
        Box::pin(self.search(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_vectors::embed::HashingEmbedder;

    /// Scores chunks by how late they come: a provider that disagrees with the search.
    struct Reversing;
    /// A provider that is down.
    struct Failing;

    impl Reranker for Reversing {
        fn id(&self) -> &str {
            "reversing"
        }
        fn rerank<'a>(
            &'a self,
            _: &'a str,
            candidates: &'a [RerankCandidate],
        ) -> BoxFuture<'a, switchyard_contract::error::Result<Vec<f32>>> {
            let n = candidates.len() as f32;
            Box::pin(async move { Ok((0..candidates.len()).map(|i| i as f32 / n).collect()) })
        }
    }

    impl Reranker for Failing {
        fn id(&self) -> &str {
            "failing"
        }
        fn rerank<'a>(
            &'a self,
            _: &'a str,
            _: &'a [RerankCandidate],
        ) -> BoxFuture<'a, switchyard_contract::error::Result<Vec<f32>>> {
            Box::pin(async {
                Err(switchyard_contract::ContractError::Rerank {
                    reranker: "failing".into(),
                    message: "503".into(),
                    source: None,
                })
            })
        }
    }

    fn adapter(reranker: Option<Arc<dyn Reranker>>) -> DocumentsAdapter {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo");
        let catalog = switchyard_catalog::template::Catalog::load(&root).unwrap();
        let policies = catalog.datasource("policies").unwrap();
        let corpus = switchyard_documents::corpus_path(policies, &root.join("policies"));
        let docs = switchyard_documents::load_corpus(&corpus.unwrap()).unwrap();
        let documents = DocumentsConfig::default();
        let chunks = ChunkIndex::build(
            "policies",
            &docs,
            &HashingEmbedder::new(64),
            &documents,
            &|_, _| {},
        )
        .unwrap();
        DocumentsAdapter::new(policies, chunks, "memory", &documents, &Keywords::default())
            .unwrap()
            .with_rerank(reranker.map(|reranker| ChunkRerank {
                reranker,
                weight: 1.0,
                timeout: Duration::from_secs(1),
            }))
    }

    fn request(query: &str) -> AdapterRequest {
        serde_json::from_value(json!({"request_id": "r", "datasource": "policies",
            "template_id": "policy_question", "query": query, "deadline_ms": 1000}))
        .unwrap()
    }

    fn documents(data: &Value) -> Vec<String> {
        data["chunks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["document"].as_str().unwrap().to_owned())
            .collect()
    }

    #[tokio::test]
    async fn the_rerank_provider_reorders_the_chunks_and_its_failure_keeps_them() {
        let question = request("What is the excess on a claim?");
        let (_, plain) = adapter(None).search(&question).await.unwrap();
        assert_eq!(plain["rerank"], "off");
        let order = documents(&plain);
        assert!(order.len() >= 2, "{plain}");

        let (_, reranked) = adapter(Some(Arc::new(Reversing)))
            .search(&question)
            .await
            .unwrap();
        assert_eq!(reranked["rerank"], "ok", "{reranked}");
        let mut reversed = order.clone();
        reversed.reverse();
        assert_eq!(documents(&reranked), reversed);
        assert!(reranked["chunks"][0]["scores"]["rerank"].as_f64().is_some());

        let (_, kept) = adapter(Some(Arc::new(Failing)))
            .search(&question)
            .await
            .unwrap();
        assert!(
            kept["rerank"].as_str().unwrap().starts_with("failed"),
            "{kept}"
        );
        assert_eq!(documents(&kept), order);
    }

    /// Scores read as the f32 they are (at most 9 significant digits), not as the f64
    /// noise a `Value` would hold.
    #[tokio::test]
    async fn chunk_scores_keep_their_shortest_form() {
        let (_, data) = adapter(None)
            .search(&request("What is the excess on a claim?"))
            .await
            .unwrap();
        let chunk = &data["chunks"][0];
        let mut numbers = vec![chunk["score"].clone()];
        numbers.extend(chunk["scores"].as_object().unwrap().values().cloned());
        for number in numbers.iter().filter(|n| n.is_number()) {
            let digits = number
                .to_string()
                .chars()
                .filter(char::is_ascii_digit)
                .count();
            assert!(digits <= 10, "{number} in {chunk}");
        }
    }
}
