//! The chunk artifact: a documents datasource's chunks, their vectors and their BM25
//! postings, built at `index build` and sealed in the routing index's frame (magic,
//! version, JSON manifest, postcard body, SHA-256), with its own refusal rules.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::chunk::{chunk_document, summary_of, terms, Chunk};
use super::corpus::{corpus_hash, Document};
use crate::config::DocumentsConfig;
use switchyard_text::keywords::TermIndex;
use switchyard_vectors::embed::Embedder;
use switchyard_vectors::error::Result;
use switchyard_vectors::frame::{seal, unseal, write_atomically};
use switchyard_vectors::VectorsError;

/// 2: the frame's checksum a CRC-64/NVME instead of a SHA-256.
pub const CHUNK_FORMAT_VERSION: u32 = 2;
const MAGIC: &[u8; 8] = b"SWYDCHK\0";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkManifest {
    pub format_version: u32,
    pub datasource: String,
    pub model_id: String,
    pub dimension: usize,
    /// [`corpus_hash`] of the documents the chunks come from.
    pub corpus_hash: String,
    /// Unix seconds; `SOURCE_DATE_EPOCH` fixes it for reproducible builds.
    pub built_at: u64,
    pub documents: usize,
    pub chunks: usize,
    pub questions: usize,
    pub chunk_words: usize,
    pub overlap_words: usize,
    pub summary_sentences: usize,
}

/// A document as the search reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentEntry {
    pub id: String,
    pub title: String,
    pub metadata: std::collections::BTreeMap<String, Vec<String>>,
}

/// A loaded, verified chunk artifact.
#[derive(Serialize, Deserialize)]
pub struct ChunkIndex {
    pub manifest: ChunkManifest,
    pub documents: Vec<DocumentEntry>,
    pub chunks: Vec<Chunk>,
    /// Row-major unit vectors: one per chunk (its content) ...
    pub(super) content: Vec<f32>,
    /// ... one per document (its summary) ...
    pub(super) summaries: Vec<f32>,
    /// ... and one per front-matter question, owned by `question_owner[row]`.
    pub(super) questions: Vec<f32>,
    pub(super) question_owner: Vec<u32>,
    /// BM25 over each chunk's title, heading, text and its document's questions.
    pub(super) terms: TermIndex,
}

/// Reports how far an index build has come: (texts embedded, texts in all).
pub type Progress<'a> = &'a (dyn Fn(usize, usize) + Sync);

impl ChunkIndex {
    /// Chunk and embed `documents` for the datasource `datasource`.
    pub fn build(
        datasource: &str,
        documents: &[Document],
        embedder: &dyn Embedder,
        settings: &DocumentsConfig,
        progress: Progress<'_>,
    ) -> Result<ChunkIndex> {
        let chunks: Vec<Chunk> = documents
            .iter()
            .enumerate()
            .flat_map(|(i, d)| {
                chunk_document(d, i as u32, settings.chunk_words, settings.overlap_words)
            })
            .collect();
        let mut texts: Vec<String> = chunks
            .iter()
            .map(|c| c.embedding_text(&documents[c.document as usize].title))
            .collect();
        texts.extend(
            documents
                .iter()
                .map(|d| summary_of(d, settings.summary_sentences)),
        );
        let mut question_owner = Vec::new();
        for (i, d) in documents.iter().enumerate() {
            for q in &d.questions {
                texts.push(q.clone());
                question_owner.push(i as u32);
            }
        }
        let mut rows = Vec::with_capacity(texts.len() * embedder.dimension());
        let batch = 64;
        for (n, group) in texts.chunks(batch).enumerate() {
            let refs: Vec<&str> = group.iter().map(String::as_str).collect();
            for vector in embedder.embed(&refs)? {
                rows.extend(vector);
            }
            progress((n * batch + group.len()).min(texts.len()), texts.len());
        }
        let dimension = embedder.dimension();
        let (content, rest) = rows.split_at(chunks.len() * dimension);
        let (summaries, questions) = rest.split_at(documents.len() * dimension);
        let terms = TermIndex::new(
            chunks.iter().map(|c| {
                let d = &documents[c.document as usize];
                let mut text = format!(
                    "{} {} {}",
                    d.title,
                    c.heading.as_deref().unwrap_or(""),
                    c.text
                );
                for q in &d.questions {
                    text.push(' ');
                    text.push_str(q);
                }
                terms(&text)
            }),
            settings.k1,
            settings.b,
        );
        let manifest = ChunkManifest {
            format_version: CHUNK_FORMAT_VERSION,
            datasource: datasource.to_owned(),
            model_id: embedder.model_id().to_owned(),
            dimension,
            corpus_hash: corpus_hash(documents),
            built_at: switchyard_vectors::frame::build_time(),
            documents: documents.len(),
            chunks: chunks.len(),
            questions: question_owner.len(),
            chunk_words: settings.chunk_words,
            overlap_words: settings.overlap_words,
            summary_sentences: settings.summary_sentences,
        };
        Ok(ChunkIndex {
            manifest,
            documents: documents
                .iter()
                .map(|d| DocumentEntry {
                    id: d.id.clone(),
                    title: d.title.clone(),
                    metadata: d.metadata.clone(),
                })
                .collect(),
            chunks,
            content: content.to_vec(),
            summaries: summaries.to_vec(),
            questions: questions.to_vec(),
            question_owner,
            terms,
        })
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let manifest = serde_json::to_vec(&self.manifest).expect("a manifest always serialises");
        let body = postcard::to_stdvec(&Body {
            documents: &self.documents,
            chunks: &self.chunks,
            content: &self.content,
            summaries: &self.summaries,
            questions: &self.questions,
            question_owner: &self.question_owner,
            terms: &self.terms,
        })
        .map_err(|e| {
            VectorsError::artifact("(memory)", format!("cannot serialise the chunks: {e}"))
        })?;
        Ok(seal(MAGIC, CHUNK_FORMAT_VERSION, &manifest, &body))
    }

    pub fn write(&self, path: &Path) -> Result<()> {
        write_atomically(path, &self.to_bytes()?)
    }

    pub fn read(path: &Path) -> Result<ChunkIndex> {
        let bytes = std::fs::read(path).map_err(|e| VectorsError::io(path, e))?;
        ChunkIndex::from_bytes(&bytes, &path.display().to_string())
    }

    /// Parse and verify a chunk artifact; `origin` names it in errors.
    pub fn from_bytes(bytes: &[u8], origin: &str) -> Result<ChunkIndex> {
        let fail = |problem: String| VectorsError::artifact(origin, problem);
        let (manifest, body) = unseal(bytes, MAGIC, CHUNK_FORMAT_VERSION, "chunk").map_err(fail)?;
        let manifest: ChunkManifest =
            serde_json::from_slice(manifest).map_err(|e| fail(format!("bad manifest: {e}")))?;
        let body: OwnedBody =
            postcard::from_bytes(body).map_err(|e| fail(format!("bad body: {e}")))?;
        let index = ChunkIndex {
            manifest,
            documents: body.documents,
            chunks: body.chunks,
            content: body.content,
            summaries: body.summaries,
            questions: body.questions,
            question_owner: body.question_owner,
            terms: body.terms,
        };
        index.check_consistency().map_err(fail)?;
        Ok(index)
    }

    /// Refuse an artifact built for another datasource.
    pub fn check_datasource(&self, datasource: &str, origin: &str) -> Result<()> {
        if self.manifest.datasource != datasource {
            return Err(VectorsError::artifact(
                origin,
                format!(
                    "built for the datasource `{}`, not `{datasource}`",
                    self.manifest.datasource
                ),
            ));
        }
        Ok(())
    }

    fn check_consistency(&self) -> std::result::Result<(), String> {
        let m = &self.manifest;
        let d = m.dimension.max(1);
        let consistent = m.documents == self.documents.len()
            && m.chunks == self.chunks.len()
            && m.questions == self.question_owner.len()
            && m.chunks.checked_mul(d) == Some(self.content.len())
            && m.documents.checked_mul(d) == Some(self.summaries.len())
            && m.questions.checked_mul(d) == Some(self.questions.len())
            && self.terms.len() == m.chunks
            && self.terms.is_well_formed()
            && self
                .chunks
                .iter()
                .all(|c| (c.document as usize) < m.documents)
            && self
                .question_owner
                .iter()
                .all(|&o| (o as usize) < m.documents);
        if consistent {
            Ok(())
        } else {
            Err("the manifest's counts do not match the chunks and vectors".into())
        }
    }

    pub(super) fn content_row(&self, chunk: usize) -> &[f32] {
        let d = self.manifest.dimension;
        &self.content[chunk * d..(chunk + 1) * d]
    }

    pub(super) fn summary_row(&self, document: usize) -> &[f32] {
        let d = self.manifest.dimension;
        &self.summaries[document * d..(document + 1) * d]
    }

    pub(super) fn question_rows(&self) -> impl Iterator<Item = (usize, &[f32])> {
        self.questions
            .chunks_exact(self.manifest.dimension.max(1))
            .zip(&self.question_owner)
            .map(|(row, &owner)| (owner as usize, row))
    }
}

#[derive(Serialize)]
struct Body<'a> {
    documents: &'a [DocumentEntry],
    chunks: &'a [Chunk],
    content: &'a [f32],
    summaries: &'a [f32],
    questions: &'a [f32],
    question_owner: &'a [u32],
    terms: &'a TermIndex,
}

#[derive(Deserialize)]
struct OwnedBody {
    documents: Vec<DocumentEntry>,
    chunks: Vec<Chunk>,
    content: Vec<f32>,
    summaries: Vec<f32>,
    questions: Vec<f32>,
    question_owner: Vec<u32>,
    terms: TermIndex,
}
