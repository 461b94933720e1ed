//! The prebuilt index and what scores a question against it: the sealed index artifact
//! (build, calibration, drift, partitions), the learned head, the composite score's
//! weights, and synthetic catalogs for benchmarks. The embedding trait and the artifact
//! frame are `switchyard-vectors`'.

pub mod bytes;
pub mod config;
pub mod error;
pub mod head;
pub mod index;
pub mod scoring;
pub mod synthetic;
