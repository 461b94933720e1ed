//! The documents crate's error: a corpus that is missing, unreadable or malformed (the file
//! and field at fault named), its chunk artifact's and embedder's failures
//! (`switchyard-vectors`' error, kept whole), or chunks embedded with another model.

use std::path::PathBuf;

use switchyard_vectors::VectorsError;

pub type Result<T, E = DocumentsError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum DocumentsError {
    /// A corpus that is not where the datasource says, empty, or with a field of the wrong
    /// shape: the file (or folder) and the field at fault.
    #[error("{}: {field}: {message}", file.display())]
    Corpus {
        file: PathBuf,
        field: String,
        message: String,
    },
    /// A corpus file or folder that cannot be read.
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Vectors(#[from] VectorsError),

    /// Chunks embedded with another model than the question: `datasource`'s artifact.
    #[error("index {datasource}: {problem}")]
    Model { datasource: String, problem: String },
}

impl DocumentsError {
    pub fn corpus(
        file: impl Into<PathBuf>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        DocumentsError::Corpus {
            file: file.into(),
            field: field.into(),
            message: message.into(),
        }
    }

    pub fn read(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        DocumentsError::Read {
            path: path.into(),
            source,
        }
    }
}
