//! The eval crate's own error: a data set file that cannot be read or has a bad line. It
//! reaches callers as the domain's `Error` (`Template` naming the file and line, `Io` with
//! the read error as its source), so what the CLI prints stays what it was.

use std::path::PathBuf;

use switchyard_catalog::error::Error;

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A line that does not parse or lacks what it needs, or a data set with no lines:
    /// the file and where in it.
    #[error("{}: {at}: {message}", file.display())]
    DataSet {
        file: PathBuf,
        at: String,
        message: String,
    },
    /// A data set file that cannot be read.
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl EvalError {
    pub fn data_set(
        file: impl Into<PathBuf>,
        at: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        EvalError::DataSet {
            file: file.into(),
            at: at.into(),
            message: message.into(),
        }
    }

    pub fn read(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        EvalError::Read {
            path: path.into(),
            source,
        }
    }
}

impl From<EvalError> for Error {
    fn from(error: EvalError) -> Error {
        match error {
            EvalError::DataSet { file, at, message } => Error::template(file, None, at, message),
            EvalError::Read { path, source } => Error::io(path, source),
        }
    }
}
