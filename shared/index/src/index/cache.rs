//! The local index cache: built indexes under the cache folder, keyed by everything that
//! changes their bytes.

use std::path::Path;

use sha2::{Digest, Sha256};

use super::{EncoderManifest, Index, Progress, FORMAT_VERSION};
use crate::config::RouterConfig;
use crate::error::IndexError;
use switchyard_catalog::template::Catalog;
use switchyard_vectors::embed::Embedder;

/// Where a built index for `catalog` is cached: the key covers the templates, the model,
/// the index settings and the format, so any change builds a fresh one.
pub fn cache_path(
    cache_dir: &Path,
    templates_dir: &Path,
    catalog: &Catalog,
    model_id: &str,
    config: &RouterConfig,
) -> std::path::PathBuf {
    let mut hasher = Sha256::new();
    hasher.update(catalog.content_hash());
    hasher.update(model_id);
    hasher.update(serde_json::to_vec(&config.index).expect("serialisable"));
    hasher.update(FORMAT_VERSION.to_le_bytes());
    let key = hex::encode(hasher.finalize());
    let name = templates_dir
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "catalog".to_owned());
    cache_dir
        .join("index")
        .join(format!("{name}-{}.idx", &key[..16]))
}

/// Load the catalog in `templates_dir`, then reuse its cached index or build and cache one.
/// Returns the index and whether it was built now.
pub fn load_or_build(
    templates_dir: &Path,
    cache_dir: &Path,
    embedder: &dyn Embedder,
    encoder: Option<EncoderManifest>,
    config: &RouterConfig,
    progress: Progress<'_>,
) -> Result<(Index, bool), IndexError> {
    let catalog = Catalog::load(templates_dir)?;
    let path = cache_path(
        cache_dir,
        templates_dir,
        &catalog,
        embedder.model_id(),
        config,
    );
    if path.is_file() {
        match Index::read(&path) {
            Ok(index) if index.manifest.templates_hash == catalog.content_hash() => {
                return Ok((index, false))
            }
            Ok(_) => tracing::warn!(path = %path.display(), "cached index is stale; rebuilding"),
            Err(e) => tracing::warn!(error = %e, "cached index unreadable; rebuilding"),
        }
    }
    let index = Index::build_with_encoder(catalog, embedder, encoder, config, progress)?;
    index.write(&path)?;
    Ok((index, true))
}
