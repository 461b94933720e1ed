//! What building or loading a routing index can fail with: the catalog it is built from
//! (a template that does not load), or its vectors (the embedder, an artifact that cannot
//! be trusted or written). The index itself raises nothing else.

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error(transparent)]
    Catalog(#[from] switchyard_catalog::error::Error),

    #[error(transparent)]
    Vectors(#[from] switchyard_vectors::VectorsError),
}
