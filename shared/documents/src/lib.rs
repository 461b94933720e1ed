//! Documents datasources: a corpus of files searched by meaning and by words.
//!
//! - `corpus`: the documents and their front matter (strict, errors name file and field);
//! - `error`: `DocumentsError`, a corpus missing, unreadable or malformed;
//! - `chunk`: chunks (headings, then windows with overlap), summaries, BM25's terms;
//! - `index`: the chunk artifact (vectors per chunk, summary and question; BM25
//!   postings), sealed like the routing index, built at `index build`;
//! - `search`: filters, vector and keyword scores fused, one chunk per document, MMR,
//!   dedup and balanced results.
//!
//! Which filter values a question names, and the local cache of built chunk artifacts,
//! are here.

pub mod chunk;
pub mod config;
pub mod corpus;
pub mod error;
pub mod index;
pub mod schema;
pub mod search;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

pub use corpus::{corpus_path, load_corpus, Document};
pub use error::DocumentsError;
pub use index::{ChunkIndex, ChunkManifest, DocumentEntry, CHUNK_FORMAT_VERSION};
pub use search::{ChunkScores, Found, Hit, Query, Signals};

use crate::config::DocumentsConfig;
use crate::error::Result;
use switchyard_catalog::template::{Datasource, Parameter};
use switchyard_text::params::value_text;
use switchyard_text::similarity::normalize_text;
use switchyard_vectors::embed::Embedder;

/// The filter values `question` names, by filter: allowed values and aliases found as
/// whole words, aliases resolved to their value.
pub fn filters_in_question(filters: &[Parameter], question: &str) -> BTreeMap<String, Vec<String>> {
    let haystack = format!(" {} ", normalize_text(question));
    let mentions = |name: &str| {
        let needle = normalize_text(name);
        !needle.is_empty() && haystack.contains(&format!(" {needle} "))
    };
    let mut found = BTreeMap::new();
    for filter in filters {
        let mut values: Vec<String> = filter
            .allowed_values
            .iter()
            .filter_map(value_text)
            .filter(|v| mentions(v))
            .collect();
        for (alias, value) in &filter.aliases {
            if mentions(alias) && !values.iter().any(|v| v.eq_ignore_ascii_case(value)) {
                values.push(value.clone());
            }
        }
        if !values.is_empty() {
            values.sort();
            found.insert(filter.name.clone(), values);
        }
    }
    found
}

/// Filters a request gives by name (`{"product": "car"}` or `{"product": ["car", "home"]}`):
/// a field that is not a filter is ignored (it may be a parameter); a value the filter does
/// not allow is an error naming the filter and the value.
pub fn requested_filters(
    filters: &[Parameter],
    given: &Map<String, Value>,
) -> std::result::Result<BTreeMap<String, Vec<String>>, String> {
    let mut out = BTreeMap::new();
    for filter in filters {
        let Some(value) = given.get(&filter.name) else {
            continue;
        };
        let values: Vec<String> = match value {
            Value::Array(items) => items.iter().filter_map(value_text).collect(),
            other => value_text(other).into_iter().collect(),
        };
        let mut canonical = Vec::new();
        for value in values {
            let known = filter
                .allowed_values
                .iter()
                .filter_map(value_text)
                .find(|v| v.eq_ignore_ascii_case(&value))
                .or_else(|| {
                    filter
                        .aliases
                        .iter()
                        .find(|(alias, _)| alias.eq_ignore_ascii_case(&value))
                        .map(|(_, v)| v.clone())
                });
            match known {
                Some(v) => canonical.push(v),
                None => {
                    let allowed: Vec<String> = filter
                        .allowed_values
                        .iter()
                        .filter_map(value_text)
                        .collect();
                    return Err(format!(
                        "filter `{}`: unknown value `{value}` (allowed: {})",
                        filter.name,
                        allowed.join(", ")
                    ));
                }
            }
        }
        if !canonical.is_empty() {
            out.insert(filter.name.clone(), canonical);
        }
    }
    Ok(out)
}

/// Where a chunk artifact is cached: the key covers the documents, the model, the chunk
/// and BM25 settings and the format, so any change builds a fresh one.
pub fn cache_path(
    cache_dir: &Path,
    datasource: &str,
    documents: &[Document],
    model_id: &str,
    settings: &DocumentsConfig,
) -> PathBuf {
    let mut hasher = Sha256::new();
    hasher.update(corpus::corpus_hash(documents));
    hasher.update(model_id);
    let chunking = (
        settings.chunk_words,
        settings.overlap_words,
        settings.summary_sentences,
        settings.k1.to_bits(),
        settings.b.to_bits(),
    );
    hasher.update(serde_json::to_vec(&chunking).expect("serialisable"));
    hasher.update(CHUNK_FORMAT_VERSION.to_le_bytes());
    let key = hex::encode(hasher.finalize());
    cache_dir
        .join("chunks")
        .join(format!("{datasource}-{}.chunks", &key[..16]))
}

/// The chunk artifact of a documents datasource whose folder is `datasource_dir`: reused
/// from the cache, or built (and cached). Returns it and whether it was built now.
pub fn load_or_build(
    datasource: &Datasource,
    datasource_dir: &Path,
    cache_dir: &Path,
    embedder: &dyn Embedder,
    settings: &DocumentsConfig,
    progress: index::Progress<'_>,
) -> Result<(ChunkIndex, bool)> {
    let documents = load_corpus(&corpus_path(datasource, datasource_dir)?)?;
    load_or_build_from(
        datasource.name(),
        &documents,
        cache_dir,
        embedder,
        settings,
        progress,
    )
}

/// The chunk artifact named `name` of `documents`: reused from the cache, or built (and
/// cached). Returns it and whether it was built now.
pub fn load_or_build_from(
    name: &str,
    documents: &[Document],
    cache_dir: &Path,
    embedder: &dyn Embedder,
    settings: &DocumentsConfig,
    progress: index::Progress<'_>,
) -> Result<(ChunkIndex, bool)> {
    let path = cache_path(cache_dir, name, documents, embedder.model_id(), settings);
    if path.is_file() {
        match ChunkIndex::read(&path) {
            Ok(chunks) if chunks.manifest.datasource == name => return Ok((chunks, false)),
            Ok(_) => {
                tracing::warn!(path = %path.display(), "cached chunks are another datasource's; rebuilding")
            }
            Err(e) => tracing::warn!(error = %e, "cached chunks unreadable; rebuilding"),
        }
    }
    let chunks = ChunkIndex::build(name, documents, embedder, settings, progress)?;
    chunks.write(&path)?;
    Ok((chunks, true))
}

/// The file name of a datasource's chunk artifact beside a routing index `index_file`:
/// `switchyard.idx` → `switchyard.<datasource>.chunks`.
pub fn artifact_beside(index_file: &Path, datasource: &str) -> PathBuf {
    index_file.with_extension(format!("{datasource}.chunks"))
}

/// Refuse a question vector from another model than the artifact's.
pub fn check_model(chunks: &ChunkIndex, model_id: &str, dimension: usize) -> Result<()> {
    if chunks.manifest.model_id != model_id || chunks.manifest.dimension != dimension {
        return Err(DocumentsError::Model {
            datasource: chunks.manifest.datasource.clone(),
            problem: format!(
                "the chunks were embedded with {} ({} dimensions) but the question with {model_id} ({dimension} dimensions); rebuild the index",
                chunks.manifest.model_id, chunks.manifest.dimension
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
