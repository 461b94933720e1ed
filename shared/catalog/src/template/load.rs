//! Reading a datasource folder: `datasource.yaml`, then each template file, strictly.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::check::validate_template;
use super::{Datasource, DatasourceKind, DatasourceSpec, Template, DATASOURCE_FILE};
use crate::error::{Error, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TemplateFile {
    templates: Vec<Value>,
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

pub(super) fn load_datasource(
    folder: &Path,
    seen_ids: &mut HashMap<String, PathBuf>,
) -> Result<Datasource> {
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
