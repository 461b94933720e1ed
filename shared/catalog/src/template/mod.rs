//! Template libraries: what a catalog folder holds, and whether it is valid.
//!
//! A catalog is a folder whose subfolders are datasources. Each datasource folder holds
//! `datasource.yaml` and one or more template files (`*.yaml`) with a `templates:` list.
//! Loading is strict: unknown fields, duplicate ids, empty `nl_examples`, bad regexes and
//! missing files are errors naming the file, the template id and the field.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

mod check;
mod load;

pub const DATASOURCE_FILE: &str = "datasource.yaml";

/// What kind of adapter answers a datasource's templates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DatasourceKind {
    Sql,
    Http,
    Graphql,
    Tools,
    Documents,
    /// Web pages fetched on demand (`endpoint_template`), searched for the question.
    Web,
    /// A pure intent classifier: templates have no body and nothing is executed.
    Intent,
}

impl DatasourceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DatasourceKind::Sql => "sql",
            DatasourceKind::Http => "http",
            DatasourceKind::Graphql => "graphql",
            DatasourceKind::Tools => "tools",
            DatasourceKind::Documents => "documents",
            DatasourceKind::Web => "web",
            DatasourceKind::Intent => "intent",
        }
    }

    /// Whether its adapter searches with the question's vector (the router has the model,
    /// the adapter has not): documents' chunks.
    pub fn searches_by_vector(self) -> bool {
        self == DatasourceKind::Documents
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasourceSpec {
    /// Must equal the folder name.
    pub name: String,
    pub kind: DatasourceKind,
    pub description: String,
    /// Kind-specific settings (engine, file paths, environment variable names of secrets).
    /// The adapter of the kind validates them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub connection: BTreeMap<String, String>,
    #[serde(default)]
    pub limits: Limits,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_hosts: Vec<String>,
    /// The adapter Lambda that answers this datasource on AWS (the router's
    /// `SWITCHYARD_ADAPTER_FUNCTION_<NAME>` variable overrides it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_name: Option<String>,
    /// Questions this datasource does not answer, though they sound like it might. A query
    /// nearer one of these than to a template's own texts is not routed to that template.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub negative_examples: Vec<String>,
    /// A documents datasource's metadata filters: a front-matter field each, found in a
    /// question through its allowed values and aliases, like a parameter's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<Parameter>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    #[serde(default = "Limits::default_max_rows")]
    pub max_rows: u32,
    /// The adapter's deadline for one request.
    #[serde(default = "Limits::default_timeout_ms")]
    pub timeout_ms: u64,
}

impl Limits {
    fn default_max_rows() -> u32 {
        1000
    }
    fn default_timeout_ms() -> u64 {
        5000
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_rows: Self::default_max_rows(),
            timeout_ms: Self::default_timeout_ms(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ParamType {
    #[default]
    String,
    Integer,
    Number,
    Boolean,
    Date,
    Enum,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Parameter {
    pub name: String,
    #[serde(rename = "type", default)]
    pub param_type: ParamType,
    #[serde(default)]
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_values: Vec<Value>,
    /// Alias → canonical value ("eng" → "Engineering"), matched case-insensitively.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub aliases: BTreeMap<String, String>,
    /// Regexes tried in order; the first capture group (or the whole match) is the value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extraction_patterns: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

/// One intent template. Field names follow the intent-template YAML users already write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Template {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub description: String,
    pub nl_examples: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<Parameter>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,

    // Bodies: exactly one kind per template, none for `intent` datasources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql_template: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint_template: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_method: Option<String>,
    /// A POST or PATCH (GraphQL's POST included) the server can take twice: the adapter
    /// retries it like a GET, every attempt of a call carrying one `Idempotency-Key`.
    /// Without it such a request is sent once, so a flaky gateway cannot book twice.
    #[serde(default, skip_serializing_if = "is_false")]
    pub idempotent: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_params: Option<BTreeMap<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graphql_template: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variables: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_operation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<Value>,

    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_template: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_mapping: Option<Value>,
}

/// Left out when false, so catalogs without the field keep their content hash.
fn is_false(value: &bool) -> bool {
    !*value
}

/// Which body a template carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    Sql,
    Http,
    Graphql,
    Function,
}

impl Template {
    /// Whether running it twice does what running it once does, so that a lost answer may
    /// be asked for again (a Lambda invoke retried, an HTTP request sent again): SQL (only
    /// read-only queries run), documents, pages and built-in tools always; an HTTP request
    /// (a tool's `http_call` included) by its method, a POST or PATCH and every GraphQL
    /// request only with `idempotent: true`.
    pub fn repeatable(&self) -> bool {
        if self.idempotent {
            return true;
        }
        if self.graphql_template.is_some() {
            return false;
        }
        let calls = self
            .execution
            .as_ref()
            .filter(|e| e.get("type").and_then(Value::as_str) == Some("http_call"));
        let method = match calls {
            Some(execution) => execution.get("http_method").and_then(Value::as_str),
            None if self.endpoint_template.is_some() => self.http_method.as_deref(),
            None => return true,
        };
        let method = method.unwrap_or("GET").trim().to_ascii_uppercase();
        !matches!(method.as_str(), "POST" | "PATCH")
    }

    /// The bodies present, by the field that marks each.
    fn bodies(&self) -> Vec<(BodyKind, &'static str)> {
        let mut bodies = Vec::new();
        if self.sql_template.is_some() {
            bodies.push((BodyKind::Sql, "sql_template"));
        }
        if self.endpoint_template.is_some() {
            bodies.push((BodyKind::Http, "endpoint_template"));
        }
        if self.graphql_template.is_some() {
            bodies.push((BodyKind::Graphql, "graphql_template"));
        }
        if self.tool_type.is_some() || self.tool_name.is_some() {
            bodies.push((BodyKind::Function, "tool_type"));
        }
        bodies
    }

    /// A short text of the body, embedded with the examples (SQL, endpoint, tool name).
    pub fn body_text(&self) -> Option<String> {
        if let Some(sql) = &self.sql_template {
            return Some(sql.clone());
        }
        if let Some(endpoint) = &self.endpoint_template {
            return Some(endpoint.clone());
        }
        if let Some(graphql) = &self.graphql_template {
            return Some(graphql.clone());
        }
        self.tool_name.as_ref().map(|tool| {
            format!(
                "{tool} {}",
                self.tool_operation.as_deref().unwrap_or_default()
            )
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Datasource {
    pub spec: DatasourceSpec,
    pub templates: Vec<Template>,
}

impl Datasource {
    pub fn name(&self) -> &str {
        &self.spec.name
    }
}

/// A loaded, validated catalog: datasources in folder-name order (the order that breaks ties).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Catalog {
    pub datasources: Vec<Datasource>,
}

impl Catalog {
    /// Load and validate every datasource folder under `dir`.
    pub fn load(dir: &Path) -> Result<Catalog> {
        let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
        let mut folders: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.is_dir())
            .collect();
        folders.sort();
        if folders.is_empty() {
            return Err(Error::template(
                dir,
                None,
                "datasources",
                "the catalog has no datasource folders (each needs a datasource.yaml and template files)",
            ));
        }

        let mut datasources = Vec::with_capacity(folders.len());
        // Template id → the file that defined it first, to name both in a duplicate error.
        let mut seen_ids: HashMap<String, PathBuf> = HashMap::new();
        for folder in folders {
            let datasource = load::load_datasource(&folder, &mut seen_ids)?;
            datasources.push(datasource);
        }
        Ok(Catalog { datasources })
    }

    pub fn datasource(&self, name: &str) -> Option<&Datasource> {
        self.datasources.iter().find(|d| d.spec.name == name)
    }

    pub fn template_count(&self) -> usize {
        self.datasources.iter().map(|d| d.templates.len()).sum()
    }

    /// Whether questions are also searched against texts other than the templates':
    /// documents' chunks, or SQL tables' schemas (for questions no template fits).
    pub fn searches_texts(&self) -> bool {
        self.datasources
            .iter()
            .any(|d| matches!(d.spec.kind, DatasourceKind::Documents | DatasourceKind::Sql))
    }

    /// SHA-256 of the catalog's canonical JSON: changes whenever anything routing or
    /// execution depends on changes, and only then.
    pub fn content_hash(&self) -> String {
        let canonical = serde_json::to_vec(self).expect("a catalog always serialises");
        Catalog::content_hash_of_json(&canonical)
    }

    /// [`Catalog::content_hash`] of a catalog already serialised to its canonical JSON
    /// (`serde_json`'s), as an index artifact keeps it: no second serialisation.
    pub fn content_hash_of_json(canonical: &[u8]) -> String {
        hex::encode(Sha256::digest(canonical))
    }
}
