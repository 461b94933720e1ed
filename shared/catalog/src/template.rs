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
            DatasourceKind::Intent => "intent",
        }
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

/// Which body a template carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    Sql,
    Http,
    Graphql,
    Function,
}

impl Template {
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TemplateFile {
    templates: Vec<Value>,
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
            let datasource = load_datasource(&folder, &mut seen_ids)?;
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
        hex::encode(Sha256::digest(&canonical))
    }
}

fn read_yaml(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    serde_saphyr::from_str::<Value>(&text)
        .map_err(|e| Error::template(path, None, "yaml", e.to_string()))
}

/// Deserialise `value` into `T`, naming the failing field by its path.
fn typed<T: serde::de::DeserializeOwned>(
    value: Value,
    file: &Path,
    template: Option<&str>,
) -> Result<T> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let field = field_of(&path, &inner);
        Error::template(file, template, field, inner)
    })
}

/// The field a serde error is about: the path, extended by the name an
/// "unknown field `x`" or "missing field `x`" message carries.
fn field_of(path: &str, message: &str) -> String {
    let named = ["unknown field `", "missing field `"]
        .iter()
        .find_map(|prefix| message.strip_prefix(prefix))
        .and_then(|rest| rest.split('`').next());
    match (path, named) {
        (".", Some(name)) => name.to_owned(),
        (_, Some(name)) => format!("{path}.{name}"),
        (".", None) => "(document)".to_owned(),
        (_, None) => path.to_owned(),
    }
}

fn load_datasource(folder: &Path, seen_ids: &mut HashMap<String, PathBuf>) -> Result<Datasource> {
    let spec = load_spec(folder)?;
    let files = template_files(folder)?;
    let mut templates = Vec::new();
    for file in files {
        let document: TemplateFile = typed(read_yaml(&file)?, &file, None)?;
        for (position, raw) in document.templates.into_iter().enumerate() {
            let id = raw
                .get("id")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    Error::template(
                        &file,
                        None,
                        format!("templates[{position}].id"),
                        "missing or not a string",
                    )
                })?;
            let template: Template = typed(raw, &file, Some(&id))?;
            validate_template(&template, spec.kind, &file)?;
            if let Some(first) = seen_ids.get(&template.id) {
                return Err(Error::template(
                    &file,
                    Some(&template.id),
                    "id",
                    format!("duplicate id: already defined in {}", first.display()),
                ));
            }
            seen_ids.insert(template.id.clone(), file.clone());
            templates.push(template);
        }
    }
    if templates.is_empty() {
        return Err(Error::template(
            folder,
            None,
            "templates",
            "the datasource has no templates",
        ));
    }
    Ok(Datasource { spec, templates })
}

/// The folder's `datasource.yaml`, checked: present, named as the folder, described, and
/// without empty negative examples.
fn load_spec(folder: &Path) -> Result<DatasourceSpec> {
    let spec_path = folder.join(DATASOURCE_FILE);
    if !spec_path.is_file() {
        return Err(Error::template(
            &spec_path,
            None,
            DATASOURCE_FILE,
            "missing: every datasource folder needs one",
        ));
    }
    let spec: DatasourceSpec = typed(read_yaml(&spec_path)?, &spec_path, None)?;
    let folder_name = folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if spec.name != folder_name {
        return Err(Error::template(
            &spec_path,
            None,
            "name",
            format!("`{}` must equal the folder name `{folder_name}`", spec.name),
        ));
    }
    if spec.description.trim().is_empty() {
        return Err(Error::template(
            &spec_path,
            None,
            "description",
            "must not be empty",
        ));
    }
    if let Some(position) = spec
        .negative_examples
        .iter()
        .position(|e| e.trim().is_empty())
    {
        return Err(Error::template(
            &spec_path,
            None,
            format!("negative_examples[{position}]"),
            "must not be empty",
        ));
    }
    for (position, filter) in spec.filters.iter().enumerate() {
        let at = format!("filters[{position}]");
        if spec.kind != DatasourceKind::Documents {
            return Err(Error::template(
                &spec_path,
                None,
                at,
                "only a `documents` datasource has filters",
            ));
        }
        if filter.allowed_values.is_empty() {
            return Err(Error::template(
                &spec_path,
                None,
                format!("{at}.allowed_values"),
                format!("filter `{}` needs the values it may take", filter.name),
            ));
        }
    }
    Ok(spec)
}

/// The template files of a datasource folder (`*.yaml`, `*.yml` beside
/// `datasource.yaml`), sorted; none is an error.
fn template_files(folder: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(folder)
        .map_err(|e| Error::io(folder, e))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            path.is_file()
                && path
                    .extension()
                    .is_some_and(|ext| ext == "yaml" || ext == "yml")
                && path.file_name().is_some_and(|n| n != DATASOURCE_FILE)
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::template(
            folder,
            None,
            "templates",
            "no template files (*.yaml with a `templates:` list) beside datasource.yaml",
        ));
    }
    Ok(files)
}

/// A template problem: the field and what is wrong with it.
type Problem = (String, String);

fn problem(
    field: impl Into<String>,
    message: impl Into<String>,
) -> std::result::Result<(), Problem> {
    Err((field.into(), message.into()))
}

fn validate_template(template: &Template, kind: DatasourceKind, file: &Path) -> Result<()> {
    check_texts(template)
        .and_then(|()| check_parameters(template))
        .and_then(|()| check_body(template, kind))
        .map_err(|(field, message)| Error::template(file, Some(&template.id), field, message))
}

/// The id's characters, a description, and at least one non-empty example.
fn check_texts(template: &Template) -> std::result::Result<(), Problem> {
    let id_ok = !template.id.is_empty()
        && template
            .id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !id_ok {
        return problem(
            "id",
            "must be non-empty and use only letters, digits, `_`, `-` and `.`",
        );
    }
    if template.description.trim().is_empty() {
        return problem("description", "must not be empty");
    }
    if template.nl_examples.is_empty() {
        return problem("nl_examples", "must list at least one example question");
    }
    if let Some(position) = template
        .nl_examples
        .iter()
        .position(|e| e.trim().is_empty())
    {
        return problem(format!("nl_examples[{position}]"), "must not be empty");
    }
    Ok(())
}

/// Parameter names present and unique, patterns that compile, `min` not above `max`.
fn check_parameters(template: &Template) -> std::result::Result<(), Problem> {
    let mut names = std::collections::HashSet::new();
    for (position, parameter) in template.parameters.iter().enumerate() {
        let at = format!("parameters[{position}]");
        if parameter.name.trim().is_empty() {
            return problem(format!("{at}.name"), "must not be empty");
        }
        if !names.insert(parameter.name.as_str()) {
            return problem(
                format!("{at}.name"),
                format!("duplicate parameter `{}`", parameter.name),
            );
        }
        for (p, pattern) in parameter.extraction_patterns.iter().enumerate() {
            if let Err(e) = regex::Regex::new(pattern) {
                return problem(
                    format!("{at}.extraction_patterns[{p}]"),
                    format!("bad regex: {e}"),
                );
            }
        }
        if let (Some(min), Some(max)) = (parameter.min, parameter.max) {
            if min > max {
                return problem(format!("{at}.min"), format!("{min} is above max {max}"));
            }
        }
    }
    Ok(())
}

/// At most one body, and the one the datasource's kind needs (none for `intent`).
fn check_body(template: &Template, kind: DatasourceKind) -> std::result::Result<(), Problem> {
    let bodies = template.bodies();
    if bodies.len() > 1 {
        let fields: Vec<&str> = bodies.iter().map(|(_, f)| *f).collect();
        return problem(
            fields[1],
            format!("a template has one body, found {}", fields.join(" and ")),
        );
    }
    let body = bodies.first().copied();
    let expected = match kind {
        DatasourceKind::Intent => {
            if let Some((_, field)) = body {
                return problem(field, "templates of an `intent` datasource have no body");
            }
            return Ok(());
        }
        DatasourceKind::Documents => return Ok(()),
        DatasourceKind::Sql => (BodyKind::Sql, "sql_template"),
        DatasourceKind::Http => (BodyKind::Http, "endpoint_template"),
        DatasourceKind::Graphql => (BodyKind::Graphql, "graphql_template"),
        DatasourceKind::Tools => (BodyKind::Function, "tool_type"),
    };
    match body {
        Some((found, _)) if found == expected.0 => {}
        Some((_, field)) => {
            return problem(
                field,
                format!(
                    "a `{}` datasource's templates need `{}` instead",
                    kind.as_str(),
                    expected.1
                ),
            )
        }
        None => {
            return problem(
                expected.1,
                format!("required for a `{}` datasource", kind.as_str()),
            )
        }
    }
    if expected.0 == BodyKind::Function {
        if template.tool_type.as_deref() != Some("function") {
            return problem("tool_type", "must be `function`");
        }
        if template.tool_name.is_none() {
            return problem("tool_name", "required with `tool_type: function`");
        }
    }
    Ok(())
}
