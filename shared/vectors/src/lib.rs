//! Vectors and the files that hold them, below both the routing index and the documents'
//! chunk artifacts: the [`embed::Embedder`] trait (texts in, unit vectors out), the sealed
//! [`frame`] both artifacts are written in, and the [`VectorsError`] either refuses with.
//! Neither HNSW nor a model is here, so the adapter function can read chunk artifacts
//! without linking the router's index.

pub mod embed;
pub mod error;
pub mod frame;

pub use error::VectorsError;
