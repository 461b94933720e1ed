//! The vectors crate's error: an embedder that failed, an artifact (the routing index's, a
//! chunk artifact's) whose bytes cannot be trusted, or a file that cannot be written. An
//! artifact built with another model is the error of the crate that knows its manifest
//! (`IndexError::Model`, `DocumentsError::Model`), so operators' tooling tells a corrupt
//! upload from a model mismatch by the variant.

use std::path::PathBuf;

use switchyard_catalog::error::BoxError;

pub type Result<T, E = VectorsError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum VectorsError {
    /// Unreadable, truncated, corrupt or inconsistent bytes; `origin` is a path or S3 place.
    #[error("index {origin}: {problem}")]
    Artifact { origin: String, problem: String },

    /// The embedder failed; its own error (`switchyard-embed`'s) is the source.
    #[error("embedding: {0}")]
    Embedding(#[source] BoxError),

    /// An artifact that cannot be written.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl VectorsError {
    pub fn artifact(origin: impl Into<String>, problem: impl Into<String>) -> Self {
        VectorsError::Artifact {
            origin: origin.into(),
            problem: problem.into(),
        }
    }

    /// An embedder's own failure, kept whole as the source.
    pub fn embedding(source: impl Into<BoxError>) -> Self {
        VectorsError::Embedding(source.into())
    }

    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        VectorsError::Io {
            path: path.into(),
            source,
        }
    }
}
