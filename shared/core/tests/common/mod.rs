//! Shared test fixtures: the real embedding model (loaded once) and small catalogs
//! written into temporary folders.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use switchyard_embed::MiniLmEmbedder;
use switchyard_index::config::EmbeddingConfig;
use switchyard_vectors::embed::Embedder;

/// The repository's root (two levels above this crate).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The real all-MiniLM-L6-v2, from where `infra/scripts/fetch-model.sh` puts it.
pub fn embedder() -> Arc<dyn Embedder> {
    static EMBEDDER: OnceLock<Arc<MiniLmEmbedder>> = OnceLock::new();
    EMBEDDER
        .get_or_init(|| {
            let config = EmbeddingConfig::default();
            Arc::new(MiniLmEmbedder::from_config(&config).unwrap_or_else(|e| panic!("{e}")))
        })
        .clone()
}

/// Write `files` (relative path → contents) under a new temporary folder.
pub fn catalog(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, contents) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
    dir
}

pub const HR_DATASOURCE: &str = "name: hr\nkind: sql\ndescription: Employees and departments\n";
pub const HR_TEMPLATES: &str = r#"templates:
  - id: employees_by_department
    description: Count the employees in a department
    nl_examples:
      - How many employees work in Engineering?
      - Headcount of the Sales department
    parameters:
      - name: department
        required: true
        allowed_values: [Engineering, Sales]
    sql_template: SELECT COUNT(*) FROM employees WHERE department = :department
  - id: top_earners
    description: The highest paid employees
    nl_examples:
      - Who are the best paid people?
      - Top five salaries in the company
    sql_template: SELECT name FROM employees ORDER BY salary DESC LIMIT 5
"#;
pub const ASSISTANT_DATASOURCE: &str =
    "name: assistant\nkind: intent\ndescription: Small talk and reminders\n";
pub const ASSISTANT_TEMPLATES: &str = r#"templates:
  - id: weather
    description: Tell the weather forecast for a city
    nl_examples:
      - What's the weather like in Paris?
      - Will it rain tomorrow?
    parameters:
      - name: city
        extraction_patterns: ['(?i)\bin ([A-Z][a-z]+)']
  - id: set_reminder
    description: Set a reminder for later
    nl_examples:
      - Remind me to call mom at five
      - Set a reminder to buy milk
    parameters:
      - name: task
        required: true
        description: What to be reminded of
        extraction_patterns: ['(?i)remind me to (.+)']
"#;

/// A two-datasource catalog: `assistant` (intent) and `hr` (sql).
pub fn small_catalog() -> tempfile::TempDir {
    catalog(&[
        ("assistant/datasource.yaml", ASSISTANT_DATASOURCE),
        ("assistant/templates.yaml", ASSISTANT_TEMPLATES),
        ("hr/datasource.yaml", HR_DATASOURCE),
        ("hr/templates.yaml", HR_TEMPLATES),
    ])
}
