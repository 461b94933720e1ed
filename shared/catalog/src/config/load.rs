//! Loading: the embedded defaults, then a file, then each `SWITCHYARD__…` variable, as
//! layers of one `figment::Figment`, extracted once and validated. Every value keeps the
//! layer that gave it, so an error names the field and the source of its value: the file,
//! or the one variable.

use std::path::{Path, PathBuf};

use figment::value::{Dict, Map, Value};
use figment::{Figment, Metadata, Profile, Provider};
use serde::de::DeserializeOwned;
use validator::Validate;

use super::rules::refused;
use crate::error::{Error, Result};

const EMBEDDED_DEFAULTS: &str = include_str!("../config.yaml");
pub const ENV_PREFIX: &str = "SWITCHYARD__";
const DEFAULTS_ORIGIN: &str = "embedded defaults";

/// Embedded defaults, then `file` (if any), then the `SWITCHYARD__…` variables among
/// `env` (in name order; `A__B` sets field `a.b`, its value read as YAML), extracted as
/// `T` (the whole tree of sections) and checked by its rules.
pub fn load<T, I, K, V>(file: Option<&Path>, env: I) -> Result<T>
where
    T: DeserializeOwned + Validate,
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
    let config: T = figment
        .extract()
        .map_err(|e| extraction_error(&figment, e))?;
    refused(&config).map_err(|(field, message)| Error::Config {
        origin: origin_of(&figment, &field),
        field,
        message,
    })?;
    Ok(config)
}

/// The section at `path` (`composite_retrieval.keywords`) of the embedded defaults: each
/// section's `Default`, so a crate's tests and tools get the shipped values without the
/// whole configuration.
pub fn embedded<T: DeserializeOwned + Validate>(path: &str) -> T {
    let figment = Figment::new()
        .merge(Layer::yaml(DEFAULTS_ORIGIN, EMBEDDED_DEFAULTS).expect("config.yaml parses"));
    let section: T = figment
        .extract_inner(path)
        .unwrap_or_else(|e| panic!("config.yaml: section `{path}`: {e}"));
    if let Err((field, message)) = refused(&section) {
        panic!("config.yaml: section `{path}`: {field}: {message}");
    }
    section
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
