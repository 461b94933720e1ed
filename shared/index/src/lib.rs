//! The prebuilt index and what scores a question against it: the embedding trait and its
//! cache, the sealed index artifact (build, calibration, drift, partitions), the learned
//! head, the composite score's weights, and synthetic catalogs for benchmarks.

pub mod config;
pub mod embed;
pub mod error;
pub mod head;
pub mod index;
pub mod scoring;
pub mod synthetic;

pub use error::IndexError;
