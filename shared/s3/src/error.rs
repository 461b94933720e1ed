//! The S3 edge's error: which object a call failed on and how (the SDK's error kept as the
//! source), an object that is missing or not what it should be, or a chunk artifact it
//! fetched that cannot be trusted (the vectors crate's error, kept whole).

use switchyard_catalog::error::{describe, BoxError};
use switchyard_vectors::VectorsError;

pub type Result<T, E = S3Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum S3Error {
    /// An S3 call failed; `problem` says which, and the message ends with the SDK's cause.
    #[error("index {place}: {problem}: {}", describe(source.as_ref()))]
    Call {
        place: String,
        problem: String,
        #[source]
        source: BoxError,
    },

    /// An object (or a local file on its way to or from S3) that is missing, unreadable or
    /// not what the pointer says.
    #[error("index {place}: {problem}")]
    Object { place: String, problem: String },

    #[error(transparent)]
    Vectors(#[from] VectorsError),
}

impl S3Error {
    pub fn object(place: impl Into<String>, problem: impl Into<String>) -> Self {
        S3Error::Object {
            place: place.into(),
            problem: problem.into(),
        }
    }
}
