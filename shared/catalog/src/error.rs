//! The one error type of the domain crate. Every variant names the file, field or
//! datasource it is about, so a message can be acted on without a debugger.

use std::path::PathBuf;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The cause an edge's error keeps (an SDK's, a provider's), for `source()` chains.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A template library problem: the file, the template id (when known) and the field.
    #[error("{}: {}{field}: {message}", file.display(), template.as_ref().map(|t| format!("template `{t}`: ")).unwrap_or_default())]
    Template {
        file: PathBuf,
        template: Option<String>,
        field: String,
        message: String,
    },

    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// Configuration that does not parse or holds a bad value; `origin` is the file or
    /// environment variable it came from.
    #[error("configuration ({origin}): {field}: {message}")]
    Config {
        origin: String,
        field: String,
        message: String,
    },

    #[error(
        "embedding model not found in {}: {missing}. Fetch it with `./infra/scripts/fetch-model.sh` \
         (or set SWITCHYARD_MODEL_DIR to a folder holding model.onnx, tokenizer.json and libonnxruntime.so)",
        dir.display()
    )]
    ModelMissing { dir: PathBuf, missing: String },

    #[error("embedding: {0}")]
    Embedding(String),

    /// The embedding model's own error (`switchyard-embed`'s `EmbedError`), cause kept.
    #[error("embedding: {0}")]
    Embedder(#[source] Box<dyn std::error::Error + Send + Sync>),

    /// A corrupt, truncated or mismatched index artifact; `origin` is its path or S3 location.
    #[error("index {origin}: {problem}")]
    Index {
        origin: String,
        problem: String,
        #[source]
        source: Option<BoxError>,
    },

    /// A request that does not follow the API's contract: `field` names what is wrong.
    #[error("{field}: {message}")]
    InvalidRequest { field: String, message: String },

    #[error("unknown datasource `{0}`")]
    UnknownDatasource(String),

    /// No adapter for this kind of datasource exists (yet) in this deployment.
    #[error("no adapter for datasource `{datasource}` of kind `{kind}` is available")]
    AdapterUnavailable { datasource: String, kind: String },

    #[error("adapter for datasource `{datasource}` did not answer within {after_ms} ms")]
    AdapterTimeout { datasource: String, after_ms: u64 },

    #[error("adapter for datasource `{datasource}` failed: {message}")]
    AdapterFailed {
        datasource: String,
        message: String,
        #[source]
        source: Option<BoxError>,
    },

    #[error("reranker `{reranker}`: {message}")]
    Rerank {
        reranker: String,
        message: String,
        #[source]
        source: Option<BoxError>,
    },

    /// A store (sessions, rerank cache, feedback, workflows, topics; `store` names which)
    /// failed; `source` keeps the client's error.
    #[error("{store}: {message}")]
    Store {
        store: String,
        message: String,
        #[source]
        source: Option<BoxError>,
    },

    /// The caller is not identified (401).
    #[error("unauthenticated: {0}")]
    Unauthenticated(String),

    /// The caller is identified but may use nothing here (403).
    #[error("forbidden: {0}")]
    Forbidden(String),
}

impl Error {
    pub fn template(
        file: impl Into<PathBuf>,
        template: Option<&str>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Error::Template {
            file: file.into(),
            template: template.map(str::to_owned),
            field: field.into(),
            message: message.into(),
        }
    }

    pub fn index(origin: impl Into<String>, problem: impl Into<String>) -> Self {
        Error::Index {
            origin: origin.into(),
            problem: problem.into(),
            source: None,
        }
    }

    pub fn invalid_request(field: impl Into<String>, message: impl Into<String>) -> Self {
        Error::InvalidRequest {
            field: field.into(),
            message: message.into(),
        }
    }

    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// An error with its causes, on one line (client libraries hide the useful part in the
/// chain).
pub fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
