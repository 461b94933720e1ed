//! A built artifact's refusal (the routing index's, a chunk artifact's): bytes that cannot
//! be trusted, or built with another model than the one at hand. It reaches callers as the
//! domain's `Error::Index`, this error as its source, so an operator's tooling can tell a
//! corrupt upload from a model mismatch.

use switchyard_catalog::error::Error;

#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// Unreadable, truncated, corrupt or inconsistent bytes; `origin` is a path or S3 place.
    /// (The domain error it becomes carries the problem; this names its kind, so a chain
    /// printed whole does not say it twice.)
    #[error("the artifact cannot be trusted")]
    Artifact { origin: String, problem: String },
    /// Built with another model, dimension or adapted encoder than the one at hand, or one
    /// whose probe sentences the model at hand embeds differently (drift).
    #[error("built for another model than the one at hand")]
    Model { origin: String, problem: String },
}

impl ArtifactError {
    pub fn artifact(origin: impl Into<String>, problem: impl Into<String>) -> Self {
        ArtifactError::Artifact {
            origin: origin.into(),
            problem: problem.into(),
        }
    }

    pub fn model(origin: impl Into<String>, problem: impl Into<String>) -> Self {
        ArtifactError::Model {
            origin: origin.into(),
            problem: problem.into(),
        }
    }
}

impl From<ArtifactError> for Error {
    fn from(error: ArtifactError) -> Error {
        let (ArtifactError::Artifact { origin, problem }
        | ArtifactError::Model { origin, problem }) = &error;
        Error::Index {
            origin: origin.clone(),
            problem: problem.clone(),
            source: Some(Box::new(error)),
        }
    }
}
