//! Loading: the embedded defaults, then a file, then each `SWITCHYARD__…` variable, as
//! layers of one `figment::Figment`, extracted once and validated. Every value keeps the
//! layer that gave it, so an error names the field and the source of its value: the file,
//! or the one variable.

use std::path::{Path, PathBuf};

use figment::value::{Dict, Map, Value};
use figment::{Figment, Metadata, Profile, Provider};

use super::{Config, EmbeddingConfig};
use crate::error::{Error, Result};

const EMBEDDED_DEFAULTS: &str = include_str!("../config.yaml");
pub const ENV_PREFIX: &str = "SWITCHYARD__";
const DEFAULTS_ORIGIN: &str = "embedded defaults";

impl Default for Config {
    fn default() -> Self {
        Config::load(None, std::iter::empty::<(String, String)>())
            .expect("the embedded defaults are valid")
    }
}

impl Config {
    /// Embedded defaults, then `file` (if any), then the `SWITCHYARD__…` variables among
    /// `env` (in name order; `A__B` sets field `a.b`, its value read as YAML).
    pub fn load<I, K, V>(file: Option<&Path>, env: I) -> Result<Config>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut figment = Figment::new().merge(Layer::yaml(DEFAULTS_ORIGIN, EMBEDDED_DEFAULTS)?);
        if let Some(path) = file {
            let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
            figment = figment.merge(Layer::yaml(&path.display().to_string(), &text)?);
        }
        let mut variables: Vec<(String, String)> = env
            .into_iter()
            .filter(|(k, _)| k.as_ref().starts_with(ENV_PREFIX))
            .map(|(k, v)| (k.as_ref().to_owned(), v.as_ref().to_owned()))
            .collect();
        variables.sort();
        for (name, raw) in variables {
            figment = figment.merge(Layer::variable(&name, &raw)?);
        }
        let config: Config = figment
            .extract()
            .map_err(|e| extraction_error(&figment, e))?;
        config
            .validate()
            .map_err(|(field, message)| Error::Config {
                origin: origin_of(&figment, &field),
                field,
                message,
            })?;
        Ok(config)
    }

    /// Load from `SWITCHYARD_CONFIG` (if set) and the process environment.
    pub fn from_env(file: Option<&Path>) -> Result<Config> {
        let from_var = std::env::var_os("SWITCHYARD_CONFIG").map(PathBuf::from);
        Config::load(file.or(from_var.as_deref()), std::env::vars())
    }
}

/// One layer of configuration: a YAML document (the defaults, a file) or one variable,
/// named by where it came from.
struct Layer {
    origin: String,
    values: Dict,
}

impl Layer {
    fn yaml(origin: &str, text: &str) -> Result<Layer> {
        let values = if text.trim().is_empty() {
            Dict::new()
        } else {
            serde_saphyr::from_str::<Dict>(text).map_err(|e| Error::Config {
                origin: origin.to_owned(),
                field: "(document)".to_owned(),
                message: e.to_string(),
            })?
        };
        Ok(Layer {
            origin: origin.to_owned(),
            values,
        })
    }

    /// `SWITCHYARD__A__B=value`: `value`, read as YAML (so `[x, y]` is a list and `0.5` a
    /// number), at field `a.b`.
    fn variable(name: &str, raw: &str) -> Result<Layer> {
        let origin = format!("environment variable {name}");
        let key = name.strip_prefix(ENV_PREFIX).unwrap_or(name);
        let path: Vec<String> = key.split("__").map(str::to_ascii_lowercase).collect();
        if path.iter().any(String::is_empty) {
            return Err(Error::Config {
                origin,
                field: key.to_ascii_lowercase(),
                message: "names no field: sections are joined by `__`".to_owned(),
            });
        }
        let mut value = if raw.trim().is_empty() {
            Value::from(String::new())
        } else {
            serde_saphyr::from_str::<Value>(raw).map_err(|e| Error::Config {
                origin: origin.clone(),
                field: path.join("."),
                message: e.to_string(),
            })?
        };
        for key in path.iter().skip(1).rev() {
            value = Value::from(Dict::from([(key.clone(), value)]));
        }
        Ok(Layer {
            origin,
            values: Dict::from([(path[0].clone(), value)]),
        })
    }
}

impl Provider for Layer {
    fn metadata(&self) -> Metadata {
        Metadata::named(self.origin.clone())
    }

    fn data(&self) -> std::result::Result<Map<Profile, Dict>, figment::Error> {
        Ok(Profile::Default.collect(self.values.clone()))
    }
}

/// A value that does not deserialise: its field, and the layer that gave it (for an
/// unknown field, the layer that named it).
fn extraction_error(figment: &Figment, error: figment::Error) -> Error {
    let path = error.path.join(".");
    let (field, origin) = match &error.kind {
        figment::error::Kind::UnknownField(name, _) => {
            let field = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}.{name}")
            };
            let origin = origin_of(figment, &field);
            (field, origin)
        }
        _ => {
            let origin = match &error.metadata {
                Some(metadata) => metadata.name.to_string(),
                None => origin_of(figment, &path),
            };
            (path, origin)
        }
    };
    Error::Config {
        origin,
        field: if field.is_empty() {
            "(document)".to_owned()
        } else {
            field
        },
        message: error.kind.to_string(),
    }
}

/// The layer that gave `field` (or, for a field no layer gave, its nearest section).
fn origin_of(figment: &Figment, field: &str) -> String {
    let mut key = field;
    loop {
        if let Some(metadata) = figment.find_metadata(key) {
            return metadata.name.to_string();
        }
        match key.rsplit_once('.') {
            Some((parent, _)) => key = parent,
            None => return DEFAULTS_ORIGIN.to_owned(),
        }
    }
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
