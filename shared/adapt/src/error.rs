//! The crate's one error type: each variant names the file or setting it is about.

/// What can go wrong while adapting an encoder.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("model weights {file}: {problem}")]
    Weights { file: String, problem: String },
    #[error("tokenizer {file}: {problem}")]
    Tokenizer { file: String, problem: String },
    #[error("adaptation setting {setting}: {problem}")]
    Setting {
        setting: &'static str,
        problem: String,
    },
    #[error("training: {0}")]
    Training(#[from] candle_core::Error),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.display().to_string(),
            source,
        }
    }
}
