//! `documents` datasources: a search over the datasource's chunk artifact. The question's
//! vector comes with the request (the router has the model); filters come from the
//! question (the datasource's `filters`, by their values and aliases) and the request.
//! The answer lists the chunks found, each with its document, its score per signal and
//! the filters applied; the optional chat model may phrase an answer citing them.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Map, Value};
use switchyard_core::config::{Config, DocumentsConfig};
use switchyard_core::documents::{
    check_model, filters_in_question, requested_filters, ChunkIndex, Query, Signals,
};
use switchyard_core::invoker::AdapterRequest;
use switchyard_core::keywords::TermExpansion;
use switchyard_core::rerank::BoxFuture;
use switchyard_core::template::{Datasource, Parameter, Template};

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
}

impl DocumentsAdapter {
    /// Serve `datasource` from `chunks` (loaded from `origin`); an artifact built for
    /// another datasource is refused.
    pub fn new(
        datasource: &Datasource,
        chunks: ChunkIndex,
        origin: &str,
        config: &Config,
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
            settings: config.documents.clone(),
            expansion: TermExpansion::new(&config.composite_retrieval.keywords.term_expansion),
        })
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

    fn search(&self, request: &AdapterRequest) -> Result<Answer> {
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
        let found = self.chunks.search(&query, &self.settings, &self.expansion);
        let chunks: Vec<Value> = found
            .hits
            .iter()
            .enumerate()
            .map(|(rank, hit)| {
                let chunk = &self.chunks.chunks[hit.chunk];
                let document = &self.chunks.documents[hit.document];
                json!({
                    "rank": rank + 1,
                    "document": document.id,
                    "title": document.title,
                    "heading": chunk.heading,
                    "text": chunk.text,
                    "score": hit.score,
                    "scores": hit.scores,
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
        // The search is in memory and bounded (one pass over the chunks); the deadline is
        // the dispatcher's.
        let answer = self.search(request);
        Box::pin(async move { answer })
    }
}
