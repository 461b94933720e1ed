//! The demo catalog's SQL datasources and templates, read from its files: the honest
//! example of each template, and what a parameter's extraction takes and allows.

use std::path::{Path, PathBuf};

use regex::Regex;
use serde_json::{Map, Value};
use switchyard_catalog::template::{Catalog, Datasource, DatasourceKind, ParamType, Template};
use switchyard_text::params::extract;

pub(crate) fn demo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo")
}

/// The demo catalog's SQL datasources, as the files define them.
pub(crate) fn sql_datasources() -> Vec<Datasource> {
    let catalog = Catalog::load(&demo_root()).unwrap();
    let found: Vec<Datasource> = catalog
        .datasources
        .into_iter()
        .filter(|d| d.spec.kind == DatasourceKind::Sql)
        .collect();
    assert!(!found.is_empty(), "the demo catalog has no SQL datasource");
    found
}

/// `datasource` as SQLite and PostgreSQL load it: from its seed script. The demo serves the
/// EV rows with DuckDB from `data/vehicles.csv`; `data/ev.sql` holds the same rows.
pub(crate) fn seeded(datasource: Datasource) -> Datasource {
    if datasource.spec.connection.contains_key("seed_sql") {
        return datasource;
    }
    let seed = format!("data/{}.sql", datasource.name());
    assert!(
        demo_root().join(datasource.name()).join(&seed).is_file(),
        "`{}` has neither seed_sql nor {seed}",
        datasource.name()
    );
    let mut seeded = datasource;
    seeded.spec.connection = [("engine", "sqlite".to_owned()), ("seed_sql", seed)]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    seeded
}

pub(crate) fn demo_datasource(name: &str) -> Datasource {
    sql_datasources()
        .into_iter()
        .find(|d| d.name() == name)
        .map(seeded)
        .unwrap()
}

/// The first catalog example whose question gives every parameter, and its values.
pub(crate) fn honest_example(template: &Template) -> (String, Map<String, Value>) {
    template
        .nl_examples
        .iter()
        .find_map(|question| {
            let found = extract(template, question, &Map::new());
            (found.missing.is_empty() && found.invalid.is_empty())
                .then(|| (question.clone(), found.parameters))
        })
        .unwrap_or_else(|| panic!("no example of `{}` gives every parameter", template.id))
}

/// The byte range of the text a parameter's extraction patterns take from `question`.
pub(crate) fn captured(
    template: &Template,
    name: &str,
    question: &str,
) -> Option<std::ops::Range<usize>> {
    let parameter = template.parameters.iter().find(|p| p.name == name)?;
    parameter.extraction_patterns.iter().find_map(|pattern| {
        let captures = Regex::new(pattern).ok()?.captures(question)?;
        let value = captures.get(1).or_else(|| captures.get(0))?;
        Some(value.range())
    })
}

/// Whether an extracted value is what its parameter allows: a listed value, a whole
/// number within bounds, a calendar date, or text the question itself holds.
pub(crate) fn well_typed(template: &Template, name: &str, value: &Value, question: &str) -> bool {
    let Some(parameter) = template.parameters.iter().find(|p| p.name == name) else {
        return false;
    };
    if !parameter.allowed_values.is_empty() {
        return parameter.allowed_values.contains(value);
    }
    match parameter.param_type {
        ParamType::Integer => value.as_i64().is_some_and(|n| {
            parameter.min.is_none_or(|min| n as f64 >= min)
                && parameter.max.is_none_or(|max| n as f64 <= max)
        }),
        ParamType::Number => value.is_number(),
        ParamType::Date => value
            .as_str()
            .is_some_and(|d| chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").is_ok()),
        _ => value.as_str().is_some_and(|text| question.contains(text)),
    }
}

/// A server-side datasource's seed script and the name of the database seeded from it:
/// named after the script's hash, so a changed seed gets a new database.
pub(crate) fn seed(datasource: &Datasource) -> (String, String) {
    let seed = datasource
        .spec
        .connection
        .get("seed_sql")
        .unwrap_or_else(|| panic!("datasource `{}` has no seed_sql", datasource.name()));
    let script = std::fs::read_to_string(demo_root().join(datasource.name()).join(seed)).unwrap();
    let hash = script.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let name = format!(
        "switchyard_injection_{}_{:08x}",
        datasource.name(),
        hash as u32
    );
    (script, name)
}

/// `url` (one of `schemes`) with its database replaced; `None` for another scheme.
pub(crate) fn with_database(url: &str, schemes: &[&str], database: &str) -> Option<String> {
    let (head, query) = match url.split_once('?') {
        Some((head, query)) => (head, format!("?{query}")),
        None => (url, String::new()),
    };
    let (scheme, rest) = schemes
        .iter()
        .find_map(|scheme| Some((*scheme, head.strip_prefix(scheme)?)))?;
    let authority = rest.split('/').next().unwrap_or_default();
    Some(format!("{scheme}{authority}/{database}{query}"))
}
