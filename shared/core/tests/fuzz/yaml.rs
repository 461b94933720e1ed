//! A catalog's YAML files: random and mutated text never panics the loader and every error
//! names its file; the valid files load; alias bombs are bounded.

use std::path::Path;

use proptest::prelude::*;
use proptest::sample::Index as Position;
use switchyard_catalog::template::Catalog;

use crate::setup::{assert_peak_bounded, config};

const DATASOURCE_YAML: &str = "name: ds\nkind: sql\ndescription: Employees and departments\nconnection:\n  engine: sqlite\nlimits:\n  max_rows: 10\nnegative_examples:\n  - what is the weather\n";
const TEMPLATES_YAML: &str = r#"templates:
  - id: employees_by_department
    description: Count the employees in a department
    nl_examples:
      - How many employees work in Engineering?
      - "Headcount of the Sales department"
    parameters:
      - name: department
        type: enum
        required: true
        allowed_values: [Engineering, Sales]
        aliases: {eng: Engineering}
        extraction_patterns: ['(?i)in (\w+)']
        min: 1
        max: 2
    sql_template: SELECT COUNT(*) FROM employees WHERE department = :department
  - id: top_earners
    description: >-
      The highest paid employees
    nl_examples: [Who are the best paid people?]
    sql_template: |
      SELECT name FROM employees ORDER BY salary DESC LIMIT 5
"#;

/// Text that looks like YAML: its punctuation, indentation and a few words.
fn yamlish() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("\n".to_owned()),
        Just("  ".to_owned()),
        Just("- ".to_owned()),
        Just(": ".to_owned()),
        Just("templates".to_owned()),
        Just("id".to_owned()),
        Just("name".to_owned()),
        Just("kind".to_owned()),
        Just("sql".to_owned()),
        Just("nl_examples".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("&a ".to_owned()),
        Just("*a".to_owned()),
        Just("<<: *a".to_owned()),
        Just("!!str ".to_owned()),
        Just("!!binary ".to_owned()),
        Just("|".to_owned()),
        Just(">-".to_owned()),
        Just("'".to_owned()),
        Just("\"".to_owned()),
        Just("\\u00".to_owned()),
        Just("#".to_owned()),
        Just("---\n".to_owned()),
        Just("...\n".to_owned()),
        Just("%YAML 1.2\n".to_owned()),
        Just("? ".to_owned()),
        Just("~".to_owned()),
        Just("1e999".to_owned()),
        Just("-0x1F".to_owned()),
        Just("\t".to_owned()),
        Just("\u{feff}".to_owned()),
        "[a-z_]{1,8}",
        any::<String>(),
    ];
    prop::collection::vec(token, 0..48).prop_map(|t| t.concat())
}

/// Line edits of a valid file: delete, duplicate, move, re-indent, replace, insert.
fn mutated_lines(original: &'static str) -> impl Strategy<Value = String> {
    let edit = (0u8..7, any::<Position>(), any::<Position>(), yamlish());
    prop::collection::vec(edit, 1..4).prop_map(move |edits| {
        let mut lines: Vec<String> = original.lines().map(str::to_owned).collect();
        for (kind, a, b, text) in edits {
            if lines.is_empty() {
                lines.push(text);
                continue;
            }
            let i = a.index(lines.len());
            let j = b.index(lines.len());
            match kind {
                0 => {
                    lines.remove(i);
                }
                1 => {
                    let line = lines[i].clone();
                    lines.insert(j, line);
                }
                2 => lines.swap(i, j),
                3 => lines[i] = format!("  {}", lines[i]),
                4 => lines[i] = lines[i].trim_start().to_owned(),
                5 => {
                    let line = &lines[i];
                    let cut = line.find(": ").map_or(line.len(), |c| c + 2);
                    lines[i] = format!("{}{}", &line[..cut], text);
                }
                _ => lines.insert(i, text),
            }
        }
        lines.join("\n")
    })
}

/// Character edits of a valid file (it stays UTF-8).
fn mutated_chars(original: &'static str) -> impl Strategy<Value = String> {
    let edit = (0u8..3, any::<Position>(), any::<char>());
    prop::collection::vec(edit, 1..6).prop_map(move |edits| {
        let mut chars: Vec<char> = original.chars().collect();
        for (kind, at, c) in edits {
            let i = at.index(chars.len().max(1)).min(chars.len());
            match kind {
                0 if i < chars.len() => {
                    chars.remove(i);
                }
                1 if i < chars.len() => chars[i] = c,
                _ => chars.insert(i, c),
            }
        }
        chars.into_iter().collect()
    })
}

fn file_text(original: &'static str) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        2 => Just(original.as_bytes().to_vec()),
        3 => mutated_lines(original).prop_map(String::into_bytes),
        3 => mutated_chars(original).prop_map(String::into_bytes),
        2 => yamlish().prop_map(String::into_bytes),
        1 => prop::collection::vec(any::<u8>(), 0..64),
    ]
}

/// A fresh catalog folder with one datasource `ds`, the two files written as given.
fn write_catalog(datasource: &[u8], templates: &[u8]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("ds");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("datasource.yaml"), datasource).unwrap();
    std::fs::write(folder.join("templates.yaml"), templates).unwrap();
    dir
}

/// A catalog error names the file at fault (or, when the datasource has no template at
/// all, its folder).
fn names_a_file(message: &str, folder: &Path) -> bool {
    let file = |name: &str| folder.join(name).display().to_string();
    message.starts_with(&file("datasource.yaml"))
        || message.starts_with(&file("templates.yaml"))
        || message.starts_with(&format!(
            "{}: templates: the datasource has no templates",
            folder.display()
        ))
}

proptest! {
    #![proptest_config(config(500))]

    /// Random and mutated YAML never panics the loader, and every error names its file.
    #[test]
    fn catalog_yaml_errors_name_the_file(
        datasource in file_text(DATASOURCE_YAML),
        templates in file_text(TEMPLATES_YAML),
    ) {
        let dir = write_catalog(&datasource, &templates);
        let started = std::time::Instant::now();
        let loaded = Catalog::load(dir.path());
        prop_assert!(started.elapsed().as_secs() < 5, "took {:?}", started.elapsed());
        if let Err(e) = loaded {
            let message = e.to_string();
            prop_assert!(names_a_file(&message, &dir.path().join("ds")), "{message}");
        }
        assert_peak_bounded();
    }
}

#[test]
fn the_valid_yaml_loads() {
    let dir = write_catalog(DATASOURCE_YAML.as_bytes(), TEMPLATES_YAML.as_bytes());
    let catalog = Catalog::load(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(catalog.template_count(), 2);
}

/// "Billion laughs": nested aliases must not expand into gigabytes.
#[test]
fn yaml_alias_bombs_are_bounded() {
    let mut bomb = String::from(
        "a: &a [\"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\"]\n",
    );
    for (name, previous) in ["b", "c", "d", "e", "f", "g", "h", "i"]
        .iter()
        .zip(["a", "b", "c", "d", "e", "f", "g", "h"])
    {
        bomb.push_str(&format!(
            "{name}: &{name} [*{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}]\n"
        ));
    }
    let templates = format!("{bomb}templates: [*i]\n");
    let dir = write_catalog(DATASOURCE_YAML.as_bytes(), templates.as_bytes());
    let started = std::time::Instant::now();
    let Err(error) = Catalog::load(dir.path()) else {
        panic!("a billion-laughs catalog must be refused");
    };
    let message = error.to_string();
    assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
    assert!(names_a_file(&message, &dir.path().join("ds")), "{message}");
    assert_peak_bounded();
}
