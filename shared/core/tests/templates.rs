//! Template libraries: every way a catalog can be wrong gets an error naming the file,
//! the template and the field.

mod common;

use common::{catalog, ASSISTANT_DATASOURCE, ASSISTANT_TEMPLATES, HR_DATASOURCE, HR_TEMPLATES};
use switchyard_catalog::template::Catalog;

fn load_error(files: &[(&str, &str)]) -> String {
    let dir = catalog(files);
    Catalog::load(dir.path())
        .expect_err("the catalog is invalid")
        .to_string()
}

fn assert_names(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(message.contains(part), "{part:?} missing from: {message}");
    }
}

#[test]
fn valid_catalog_loads_in_folder_order() {
    let dir = common::small_catalog();
    let catalog = Catalog::load(dir.path()).unwrap();
    let names: Vec<&str> = catalog.datasources.iter().map(|d| d.name()).collect();
    assert_eq!(names, ["assistant", "hr"]);
    assert_eq!(catalog.template_count(), 4);
    // The hash is stable and changes with the content.
    assert_eq!(
        catalog.content_hash(),
        Catalog::load(dir.path()).unwrap().content_hash()
    );
    let changed = common::catalog(&[
        ("assistant/datasource.yaml", ASSISTANT_DATASOURCE),
        (
            "assistant/templates.yaml",
            &ASSISTANT_TEMPLATES.replace("Paris", "Rome"),
        ),
        ("hr/datasource.yaml", HR_DATASOURCE),
        ("hr/templates.yaml", HR_TEMPLATES),
    ]);
    assert_ne!(
        catalog.content_hash(),
        Catalog::load(changed.path()).unwrap().content_hash()
    );
}

#[test]
fn unknown_template_field_names_file_template_and_field() {
    let message = load_error(&[
        ("hr/datasource.yaml", HR_DATASOURCE),
        (
            "hr/templates.yaml",
            &HR_TEMPLATES.replace(
                "    sql_template: SELECT name",
                "    colour: blue\n    sql_template: SELECT name",
            ),
        ),
    ]);
    assert_names(
        &message,
        &["hr/templates.yaml", "template `top_earners`", "colour"],
    );
}

#[test]
fn unknown_datasource_field_is_named() {
    let message = load_error(&[
        (
            "hr/datasource.yaml",
            "name: hr\nkind: sql\ndescription: x\nhost: db\n",
        ),
        ("hr/templates.yaml", HR_TEMPLATES),
    ]);
    assert_names(&message, &["hr/datasource.yaml", "host"]);
}

#[test]
fn wrong_type_names_the_field_path() {
    let message = load_error(&[
        ("hr/datasource.yaml", HR_DATASOURCE),
        (
            "hr/templates.yaml",
            &HR_TEMPLATES.replace("        required: true", "        required: [1]"),
        ),
    ]);
    assert_names(
        &message,
        &[
            "hr/templates.yaml",
            "employees_by_department",
            "parameters[0].required",
        ],
    );
}

#[test]
fn duplicate_ids_name_both_files() {
    let message = load_error(&[
        ("hr/datasource.yaml", HR_DATASOURCE),
        ("hr/templates.yaml", HR_TEMPLATES),
        (
            "hr2/datasource.yaml",
            &HR_DATASOURCE.replace("name: hr", "name: hr2"),
        ),
        ("hr2/templates.yaml", HR_TEMPLATES),
    ]);
    assert_names(
        &message,
        &[
            "hr2/templates.yaml",
            "employees_by_department",
            "id",
            "duplicate",
            "hr/templates.yaml",
        ],
    );
}

#[test]
fn empty_nl_examples_are_refused() {
    let message = load_error(&[
        ("assistant/datasource.yaml", ASSISTANT_DATASOURCE),
        (
            "assistant/templates.yaml",
            "templates:\n  - id: weather\n    description: Weather\n    nl_examples: []\n",
        ),
    ]);
    assert_names(
        &message,
        &[
            "assistant/templates.yaml",
            "template `weather`",
            "nl_examples",
        ],
    );
}

#[test]
fn empty_negative_examples_are_refused() {
    let message = load_error(&[
        (
            "hr/datasource.yaml",
            &format!("{HR_DATASOURCE}negative_examples: [How many people work at Google?, '  ']\n"),
        ),
        ("hr/templates.yaml", HR_TEMPLATES),
    ]);
    assert_names(
        &message,
        &[
            "hr/datasource.yaml",
            "negative_examples[1]",
            "must not be empty",
        ],
    );
}

#[test]
fn bad_regex_names_the_pattern() {
    let message = load_error(&[
        ("assistant/datasource.yaml", ASSISTANT_DATASOURCE),
        (
            "assistant/templates.yaml",
            &ASSISTANT_TEMPLATES.replace(r"(?i)\bin ([A-Z][a-z]+)", "in (unclosed"),
        ),
    ]);
    assert_names(
        &message,
        &[
            "assistant/templates.yaml",
            "template `weather`",
            "parameters[0].extraction_patterns[0]",
            "bad regex",
        ],
    );
}

#[test]
fn missing_datasource_file_is_named() {
    let message = load_error(&[("hr/templates.yaml", HR_TEMPLATES)]);
    assert_names(&message, &["hr/datasource.yaml", "missing"]);
}

#[test]
fn datasource_without_template_files_is_refused() {
    let message = load_error(&[("hr/datasource.yaml", HR_DATASOURCE)]);
    assert_names(&message, &["hr", "templates", "no template files"]);
}

#[test]
fn missing_catalog_folder_is_named() {
    let message = Catalog::load(std::path::Path::new("/no/such/catalog"))
        .unwrap_err()
        .to_string();
    assert_names(&message, &["/no/such/catalog"]);
}

#[test]
fn datasource_name_must_match_its_folder() {
    let message = load_error(&[
        ("people/datasource.yaml", HR_DATASOURCE),
        ("people/templates.yaml", HR_TEMPLATES),
    ]);
    assert_names(
        &message,
        &["people/datasource.yaml", "name", "`hr`", "`people`"],
    );
}

#[test]
fn intent_templates_have_no_body() {
    let message = load_error(&[
        ("assistant/datasource.yaml", ASSISTANT_DATASOURCE),
        ("assistant/templates.yaml", "templates:\n  - id: weather\n    description: Weather\n    nl_examples: [rain?]\n    sql_template: SELECT 1\n"),
    ]);
    assert_names(&message, &["template `weather`", "sql_template", "intent"]);
}

#[test]
fn sql_templates_need_their_body() {
    let message = load_error(&[
        ("hr/datasource.yaml", HR_DATASOURCE),
        (
            "hr/templates.yaml",
            "templates:\n  - id: count\n    description: Count\n    nl_examples: [how many?]\n",
        ),
    ]);
    assert_names(
        &message,
        &[
            "hr/templates.yaml",
            "template `count`",
            "sql_template",
            "required",
        ],
    );
}

#[test]
fn broken_yaml_names_the_file() {
    let message = load_error(&[
        ("hr/datasource.yaml", HR_DATASOURCE),
        ("hr/templates.yaml", "templates:\n  - id: [unclosed\n"),
    ]);
    assert_names(&message, &["hr/templates.yaml", "yaml"]);
}

#[test]
fn shipped_catalogs_load() {
    let root = common::repo_root().join("templates");
    for (name, datasources, templates) in [
        ("demo", 4, 37),
        ("clinc150", 10, 150),
        ("clinc150-5", 10, 150),
    ] {
        let catalog = Catalog::load(&root.join(name)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(catalog.datasources.len(), datasources, "{name}");
        assert_eq!(catalog.template_count(), templates, "{name}");
    }
}

const API_DATASOURCE: &str =
    "name: api\nkind: http\ndescription: Bookings\nconnection: {base_url: 'http://127.0.0.1:9'}\n";

/// An HTTP template file whose `book` template has `extra` (YAML lines) after its method.
fn api_templates(method: &str, extra: &str) -> String {
    format!(
        "templates:\n  - id: book\n    description: Book a room\n    nl_examples: [book a room]\n    endpoint_template: /bookings\n    http_method: {method}\n{extra}"
    )
}

#[test]
fn a_post_or_patch_template_may_declare_itself_idempotent() {
    for method in ["POST", "patch"] {
        let dir = catalog(&[
            ("api/datasource.yaml", API_DATASOURCE),
            (
                "api/templates.yaml",
                &api_templates(method, "    idempotent: true\n"),
            ),
        ]);
        let catalog = Catalog::load(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert!(catalog.datasources[0].templates[0].idempotent, "{method}");
    }
    // Not said: not idempotent, and the catalog's hash is what it was before the field.
    let dir = catalog(&[
        ("api/datasource.yaml", API_DATASOURCE),
        ("api/templates.yaml", &api_templates("POST", "")),
    ]);
    let catalog = Catalog::load(dir.path()).unwrap();
    assert!(!catalog.datasources[0].templates[0].idempotent);
    let json = serde_json::to_string(&catalog).unwrap();
    assert!(!json.contains("idempotent"), "{json}");
}

#[test]
fn an_unknown_field_beside_idempotent_is_refused() {
    let message = load_error(&[
        ("api/datasource.yaml", API_DATASOURCE),
        (
            "api/templates.yaml",
            &api_templates("POST", "    idempotent: true\n    idempotency_key: k1\n"),
        ),
    ]);
    assert_names(
        &message,
        &["api/templates.yaml", "template `book`", "idempotency_key"],
    );
    let message = load_error(&[
        ("api/datasource.yaml", API_DATASOURCE),
        (
            "api/templates.yaml",
            &api_templates("POST", "    idempotent: yes please\n"),
        ),
    ]);
    assert_names(&message, &["api/templates.yaml", "book", "idempotent"]);
}

#[test]
fn idempotent_is_refused_where_it_changes_nothing() {
    // A GET (the default method) or a PUT is retried anyway.
    for method in ["GET", "PUT"] {
        let message = load_error(&[
            ("api/datasource.yaml", API_DATASOURCE),
            (
                "api/templates.yaml",
                &api_templates(method, "    idempotent: true\n"),
            ),
        ]);
        assert_names(
            &message,
            &[
                "api/templates.yaml",
                "template `book`",
                "idempotent",
                &format!("a {method} request is retried anyway"),
            ],
        );
    }
    // Not an HTTP request at all.
    let message = load_error(&[
        ("hr/datasource.yaml", HR_DATASOURCE),
        (
            "hr/templates.yaml",
            &HR_TEMPLATES.replace(
                "    sql_template: SELECT name",
                "    idempotent: true\n    sql_template: SELECT name",
            ),
        ),
    ]);
    assert_names(
        &message,
        &[
            "hr/templates.yaml",
            "template `top_earners`",
            "idempotent",
            "only HTTP and GraphQL",
        ],
    );
}
