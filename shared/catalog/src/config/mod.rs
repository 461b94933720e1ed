//! Configuration: which stages run, their weights and thresholds, and how the index is
//! built. Layered: embedded defaults (`config.yaml`), then a file, then environment
//! variables `SWITCHYARD__SECTION__KEY=value`.
//!
//! - `settings`: the sections and their fields (what `config.yaml` holds), each
//!   field's rule beside it; `retrieval`: the routing stages' section;
//! - `load`: the layering of defaults, file and environment, and the cache and model
//!   folders;
//! - `validate`: the checks on values, each error naming the field and its origin.

mod load;
mod retrieval;
mod settings;
mod validate;

pub use load::{cache_dir, ENV_PREFIX};
pub use retrieval::*;
pub use settings::*;

#[cfg(test)]
mod tests;
