//! The eval crate's error: a data set file that cannot be read or has a bad line (the
//! file and line named), or what routing, the service or the documents' search failed
//! with while it was measured (their errors, kept whole).

use std::path::PathBuf;

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
    /// A feedback record the catalog cannot account for: `at` names the line or request.
    #[error("{at}: {message}")]
    Traffic { at: String, message: String },
    /// A catalog file `suggest` cannot insert a line into.
    #[error("{}: template `{template_id}`: {message}", path.display())]
    CatalogLayout {
        path: PathBuf,
        template_id: String,
        message: String,
    },
    #[error(transparent)]
    Routing(#[from] switchyard_routing::RoutingError),
    #[error(transparent)]
    Service(#[from] switchyard_core::ServiceError),
    #[error(transparent)]
    Documents(#[from] switchyard_documents::error::DocumentsError),
    #[error(transparent)]
    Vectors(#[from] switchyard_vectors::VectorsError),
}

pub type Result<T, E = EvalError> = std::result::Result<T, E>;

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
