//! What can go wrong loading or running the model. Each error names the file or the step,
//! and keeps the runtime's or the tokenizer's own error as its source; the domain sees it
//! as `switchyard_catalog::error::Error::ModelMissing` (missing files, with the command that fetches
//! them) or `Error::Embedder` (the rest, cause kept).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// Files the model folder lacks.
    #[error("embedding model not found in {}: missing {}", dir.display(), missing.join(", "))]
    Missing { dir: PathBuf, missing: Vec<String> },

    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// ONNX Runtime's library did not load or start (kept as text: the process keeps the
    /// first attempt's outcome for every later model).
    #[error("{0}")]
    RuntimeLibrary(String),

    /// ONNX Runtime refused a step: opening a graph, making a tensor, running the model.
    #[error("{context}: {source}")]
    Runtime {
        context: String,
        #[source]
        source: ort::Error,
    },

    /// The tokenizer file did not load or configure.
    #[error("{}: {source}", path.display())]
    Tokenizer {
        path: PathBuf,
        #[source]
        source: tokenizers::Error,
    },

    #[error("tokenizing: {0}")]
    Tokenizing(#[source] tokenizers::Error),

    /// A graph without MiniLM's interface, or an output of the wrong shape.
    #[error("{origin}: {problem}")]
    Graph { origin: String, problem: String },
}

impl From<EmbedError> for switchyard_catalog::error::Error {
    fn from(error: EmbedError) -> Self {
        match error {
            EmbedError::Missing { dir, missing } => {
                switchyard_catalog::error::Error::ModelMissing {
                    dir,
                    missing: format!("missing {}", missing.join(", ")),
                }
            }
            other => switchyard_catalog::error::Error::Embedder(Box::new(other)),
        }
    }
}
