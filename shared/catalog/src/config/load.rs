//! Loading: the embedded defaults, then a file, then `SWITCHYARD__…` variables, merged
//! as JSON values and deserialised once; and the folders the settings point at.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Config, EmbeddingConfig};
use crate::error::{Error, Result};

const EMBEDDED_DEFAULTS: &str = include_str!("../config.yaml");
pub const ENV_PREFIX: &str = "SWITCHYARD__";

impl Default for Config {
    fn default() -> Self {
        Config::load(None, std::iter::empty::<(String, String)>())
            .expect("the embedded defaults are valid")
    }
}

impl Config {
    /// Embedded defaults, then `file` (if any), then the `SWITCHYARD__…` variables among `env`.
    pub fn load<I, K, V>(file: Option<&Path>, env: I) -> Result<Config>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut merged = parse_yaml(EMBEDDED_DEFAULTS, "embedded defaults")?;
        let mut origin = "embedded defaults".to_owned();
        if let Some(path) = file {
            let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
            let layer = parse_yaml(&text, &path.display().to_string())?;
            merge(&mut merged, layer);
            origin = path.display().to_string();
        }
        let mut overrides: Vec<(String, String)> = env
            .into_iter()
            .filter_map(|(k, v)| {
                let key = k.as_ref().strip_prefix(ENV_PREFIX)?.to_owned();
                Some((key, v.as_ref().to_owned()))
            })
            .collect();
        overrides.sort();
        for (key, raw) in overrides {
            let variable = format!("{ENV_PREFIX}{key}");
            let path: Vec<String> = key.split("__").map(str::to_ascii_lowercase).collect();
            let value = parse_yaml(&raw, &variable)?;
            set_path(&mut merged, &path, value);
            origin = format!("{origin} + environment");
        }
        let config: Config = serde_path_to_error::deserialize(merged).map_err(|e| {
            let path = e.path().to_string();
            Error::Config {
                origin: origin.clone(),
                field: path,
                message: e.into_inner().to_string(),
            }
        })?;
        config.validate(&origin)?;
        Ok(config)
    }

    /// Load from `SWITCHYARD_CONFIG` (if set) and the process environment.
    pub fn from_env(file: Option<&Path>) -> Result<Config> {
        let from_var = std::env::var_os("SWITCHYARD_CONFIG").map(PathBuf::from);
        Config::load(file.or(from_var.as_deref()), std::env::vars())
    }
}

fn parse_yaml(text: &str, origin: &str) -> Result<Value> {
    serde_saphyr::from_str::<Value>(text).map_err(|e| Error::Config {
        origin: origin.to_owned(),
        field: "(document)".to_owned(),
        message: e.to_string(),
    })
}

/// Merge `layer` over `base`: objects merge key by key, anything else replaces.
fn merge(base: &mut Value, layer: Value) {
    match (base, layer) {
        (Value::Object(base), Value::Object(layer)) => {
            for (key, value) in layer {
                match base.get_mut(&key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, layer) => *base = layer,
    }
}

fn set_path(root: &mut Value, path: &[String], value: Value) {
    let mut node = root;
    for key in &path[..path.len() - 1] {
        if !node.is_object() {
            *node = Value::Object(Default::default());
        }
        node = node
            .as_object_mut()
            .expect("made an object above")
            .entry(key.clone())
            .or_insert_with(|| Value::Object(Default::default()));
    }
    if !node.is_object() {
        *node = Value::Object(Default::default());
    }
    node.as_object_mut()
        .expect("made an object above")
        .insert(path[path.len() - 1].clone(), value);
}

/// The cache root: `$SWITCHYARD_CACHE_DIR`, else `$XDG_CACHE_HOME/switchyard`, else
/// `~/.cache/switchyard`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SWITCHYARD_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    base.join("switchyard")
}

impl EmbeddingConfig {
    /// Size rayon's global pool from `threads` (0 leaves rayon's own choice: the cores, or
    /// RAYON_NUM_THREADS), unless RAYON_NUM_THREADS is set, which wins. Call at process
    /// start, before any parallel work builds the pool; the process environment is not
    /// touched.
    pub fn apply_threads(&self) {
        if self.threads == 0 || std::env::var_os("RAYON_NUM_THREADS").is_some() {
            return;
        }
        if let Err(e) = rayon::ThreadPoolBuilder::new()
            .num_threads(self.threads)
            .build_global()
        {
            tracing::warn!(error = %e, threads = self.threads, "embedding.threads not applied: rayon's pool already exists");
        }
    }

    /// The model folder: configuration, then `$SWITCHYARD_MODEL_DIR`, then the cache.
    pub fn resolved_model_dir(&self) -> PathBuf {
        if let Some(dir) = &self.model_dir {
            return dir.clone();
        }
        if let Some(dir) = std::env::var_os("SWITCHYARD_MODEL_DIR") {
            return PathBuf::from(dir);
        }
        cache_dir().join("models").join("all-MiniLM-L6-v2")
    }
}
