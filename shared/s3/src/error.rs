//! The S3 edge's own error: which call on which object failed, the SDK's error kept as the
//! source. It becomes the domain's `Error::Index` (the message the same one-line chain
//! callers saw before), the SDK error still reachable through `source()`.

use switchyard_catalog::error::{describe, BoxError, Error};

#[derive(Debug, thiserror::Error)]
pub enum S3Error {
    /// An S3 call on the index bucket failed; `problem` says which and how.
    #[error("index {place}: {problem}")]
    Object {
        place: String,
        problem: String,
        #[source]
        source: BoxError,
    },
}

impl From<S3Error> for Error {
    fn from(error: S3Error) -> Error {
        let S3Error::Object {
            place,
            problem,
            source,
        } = &error;
        Error::Index {
            origin: place.clone(),
            problem: format!("{problem}: {}", describe(source.as_ref())),
            source: Some(Box::new(error)),
        }
    }
}
