//! Layered configuration, the machinery: embedded defaults (`config.yaml`), then a file,
//! then environment variables `SWITCHYARD__SECTION__KEY=value`.
//!
//! The sections are owned by the crates that read them (`switchyard_text::config`,
//! `switchyard_index::config`, ...), each field's rule declared beside it;
//! `switchyard_core::config::Config` gathers them. This module holds what they share:
//!
//! - `load`: the layering of defaults, file and environment into any section tree, and
//!   one section of the embedded defaults (each section's `Default`); the cache folder;
//! - `rules`: the checks on values that sections name in their `#[validate(...)]`, and
//!   the flattening of refusals into the field's full path and a message.

mod load;
pub mod rules;

pub use load::{cache_dir, embedded, load, ENV_PREFIX};

/// `impl Default` for sections, each the section at its path of the embedded defaults:
/// `default_from_embedded! { Keywords => "composite_retrieval.keywords" }`.
#[macro_export]
macro_rules! default_from_embedded {
    ($($section:ty => $path:literal),* $(,)?) => {$(
        impl Default for $section {
            fn default() -> Self {
                $crate::config::embedded($path)
            }
        }
    )*};
}

#[cfg(test)]
mod tests;
