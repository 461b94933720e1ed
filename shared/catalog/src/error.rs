//! The catalog crate's error: what reading templates, configuration and access rules can
//! fail with, and nothing else. Every variant names the file, field or datasource it is
//! about, so a message can be acted on without a debugger. Higher crates have errors of
//! their own that wrap this one with `#[from]`; the service's error gathers them all.

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

    #[error("unknown datasource `{0}`")]
    UnknownDatasource(String),

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
