//! The configuration sections the index and the router read: `composite_retrieval`
//! (`retrieval`), `index` and `embedding` (`index`), and [`RouterConfig`], the three
//! together, which an index is built with and a router holds.

mod index;
mod retrieval;

pub use index::*;
pub use retrieval::*;

use serde::{Deserialize, Serialize};
use validator::Validate;

/// What routing reads of the configuration: the stages, how the index is built (its
/// calibration and cache key depend on them) and the model's drift limits. Gathered by
/// `switchyard_core::config::Config::router`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct RouterConfig {
    #[validate(nested)]
    pub composite_retrieval: CompositeRetrieval,
    #[validate(nested)]
    pub index: IndexConfig,
    #[validate(nested)]
    pub embedding: EmbeddingConfig,
}
