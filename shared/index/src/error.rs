//! What building or loading a routing index can fail with: the catalog it is built from
//! (a template that does not load), its vectors (the embedder, an artifact that cannot be
//! trusted or written), or a model other than the one it was built with.

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error(transparent)]
    Catalog(#[from] switchyard_catalog::error::Error),

    #[error(transparent)]
    Vectors(#[from] switchyard_vectors::VectorsError),

    /// Built with another model, dimension or adapted encoder than the one at hand, or one
    /// whose probe sentences the model at hand embeds differently (drift).
    #[error("index {origin}: {problem}")]
    Model { origin: String, problem: String },
}

impl IndexError {
    pub fn model(origin: impl Into<String>, problem: impl Into<String>) -> Self {
        IndexError::Model {
            origin: origin.into(),
            problem: problem.into(),
        }
    }
}
