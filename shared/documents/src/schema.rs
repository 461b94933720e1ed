//! SQL datasources' schemas as searchable documents: one per table, flattened to text with
//! sample values and ranges (by the adapters' introspection), indexed like a documents
//! datasource's chunks. When no template fits a question, the tables nearest to it —
//! only of the datasources the caller may use — name the datasource that could answer.

use std::collections::BTreeMap;

use serde::Serialize;

use super::corpus::Document;
use super::index::ChunkIndex;
use super::search::{Query, Signals};
use crate::config::DocumentsConfig;
use switchyard_text::keywords::TermExpansion;

/// The name the schema artifact is built under (not a datasource: `_` keeps it apart).
pub const SCHEMA_ARTIFACT: &str = "_schema";

/// Tables listed in a `schema_context`.
const CONTEXT_TABLES: usize = 3;

/// One table of one SQL datasource, flattened.
#[derive(Debug, Clone, PartialEq)]
pub struct TableText {
    pub datasource: String,
    pub table: String,
    pub text: String,
}

/// The tables as documents: id `datasource.table`, filterable by `datasource`.
pub fn table_documents(tables: &[TableText]) -> Vec<Document> {
    tables
        .iter()
        .map(|t| Document {
            id: format!("{}.{}", t.datasource, t.table),
            title: format!("Table {} of {}", t.table, t.datasource),
            text: t.text.clone(),
            summary: Some(t.text.clone()),
            questions: Vec::new(),
            metadata: BTreeMap::from([
                ("datasource".to_owned(), vec![t.datasource.clone()]),
                ("table".to_owned(), vec![t.table.clone()]),
            ]),
        })
        .collect()
}

/// Where a question with no template could be answered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SchemaContext {
    pub suggested_datasource: String,
    /// The nearest tables, best first (the suggested datasource's first).
    pub tables: Vec<SchemaTable>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SchemaTable {
    pub datasource: String,
    pub table: String,
    pub text: String,
    pub score: f32,
    /// The table's vector similarity to the question (what the floor applies to).
    pub similarity: Option<f32>,
}

/// The tables nearest to `query` among `allowed` datasources (`None`: every datasource),
/// and the datasource of the best one; `None` when no table shares anything with it.
pub fn schema_context(
    schema: &ChunkIndex,
    query: &str,
    vector: Option<&[f32]>,
    allowed: Option<&[String]>,
    settings: &DocumentsConfig,
    expansion: &TermExpansion,
) -> Option<SchemaContext> {
    let mut filters = BTreeMap::new();
    if let Some(allowed) = allowed {
        if allowed.is_empty() {
            return None;
        }
        filters.insert("datasource".to_owned(), allowed.to_vec());
    }
    let search = Query {
        text: query,
        vector,
        filters,
        top_k: CONTEXT_TABLES,
        signals: Signals::ALL,
        // The best datasource leads; sharing the tables out over every allowed
        // datasource would bury it.
        balance: false,
    };
    let settings = DocumentsConfig {
        top_k: CONTEXT_TABLES,
        candidates: settings.candidates.max(CONTEXT_TABLES),
        ..settings.clone()
    };
    let found = schema.search(&search, &settings, expansion);
    let mut tables: Vec<SchemaTable> = found
        .hits
        .iter()
        .map(|hit| {
            let document = &schema.documents[hit.document];
            let field = |name: &str| {
                document
                    .metadata
                    .get(name)
                    .and_then(|v| v.first())
                    .cloned()
                    .unwrap_or_default()
            };
            SchemaTable {
                datasource: field("datasource"),
                table: field("table"),
                text: schema.chunks[hit.chunk].text.clone(),
                score: hit.score,
                similarity: hit.scores.vectors,
            }
        })
        // BM25 alone is relative (the best match scores 1 however weak): a table is only
        // suggested when its meaning is near the question too, or when there is no vector.
        .filter(|t| {
            t.similarity
                .is_none_or(|s| s >= settings.schema_min_similarity)
        })
        .collect();
    let suggested = tables.first()?.datasource.clone();
    tables.sort_by_key(|t| t.datasource != suggested);
    Some(SchemaContext {
        suggested_datasource: suggested,
        tables,
    })
}
