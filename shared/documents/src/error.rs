//! The documents crate's own error: a corpus that is missing, unreadable or malformed. It
//! reaches callers as the domain's `Error` variant the edges already map (`Template` for a
//! corpus at fault, `Io` for a file that cannot be read, the read error kept as its
//! source), so the messages people see and the statuses stay what they were. The chunk
//! artifact's refusals are the index's `ArtifactError`.

use std::path::PathBuf;

use switchyard_catalog::error::Error;

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

impl From<DocumentsError> for Error {
    fn from(error: DocumentsError) -> Error {
        match error {
            DocumentsError::Corpus {
                file,
                field,
                message,
            } => Error::template(file, None, field, message),
            DocumentsError::Read { path, source } => Error::io(path, source),
        }
    }
}
