//! What can go wrong loading or running the model. Each error names the file or the step,
//! and keeps the runtime's or the tokenizer's own error as its source; a missing file says
//! which command fetches the model.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// Files the model folder lacks.
    #[error(
        "embedding model not found in {}: missing {}. Fetch it with `./infra/scripts/fetch-model.sh` \
         (or set SWITCHYARD_MODEL_DIR to a folder holding model.onnx, tokenizer.json and libonnxruntime.so)",
        dir.display(),
        missing.join(", ")
    )]
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

    /// An adapted encoder's graph that is not the one its index names.
    #[error(transparent)]
    Index(#[from] switchyard_index::error::IndexError),
}
