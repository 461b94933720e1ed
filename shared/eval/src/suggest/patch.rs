//! The suggestions as lines inserted into the catalog's own files (comments and layout
//! kept), each with its evidence as a YAML comment, and as a unified diff `git apply`
//! takes from the repository's root.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::evidence::{Example, Negative};
use crate::error::EvalError;

/// A catalog file's text before and after the suggestions.
pub struct Edited {
    pub path: PathBuf,
    pub before: String,
    pub after: String,
}

/// The catalog files under `catalog` with `examples` added to their templates'
/// `nl_examples` and `negatives` to their datasources' `negative_examples`.
pub fn edit(
    catalog: &Path,
    examples: &[Example],
    negatives: &[Negative],
) -> Result<Vec<Edited>, EvalError> {
    let mut files = Files::new();
    // Which file holds each template, looked up once per template.
    let mut found: BTreeMap<(String, String), PathBuf> = BTreeMap::new();
    for example in examples {
        let folder = catalog.join(&example.datasource);
        let key = (example.datasource.clone(), example.template_id.clone());
        let path = match found.get(&key) {
            Some(path) => path.clone(),
            None => {
                let path = template_file(&folder, &example.template_id)?;
                found.insert(key, path.clone());
                path
            }
        };
        let lines = lines_of(&mut files, &path)?;
        let line = item_line(&example.text, &example.why, "      ");
        insert_example(lines, &example.template_id, line).map_err(|message| {
            EvalError::CatalogLayout {
                path: path.clone(),
                template_id: example.template_id.clone(),
                message,
            }
        })?;
    }
    for negative in negatives {
        let path = catalog.join(&negative.datasource).join("datasource.yaml");
        let lines = lines_of(&mut files, &path)?;
        insert_negative(lines, item_line(&negative.text, &negative.why, "  "));
    }
    Ok(files
        .into_iter()
        .map(|(path, (before, lines))| Edited {
            path,
            before,
            after: lines.join("\n") + "\n",
        })
        .filter(|e| e.before != e.after)
        .collect())
}

type Files = BTreeMap<PathBuf, (String, Vec<String>)>;

/// The lines of the file at `path`, read the first time it is asked for.
fn lines_of<'f>(files: &'f mut Files, path: &Path) -> Result<&'f mut Vec<String>, EvalError> {
    if !files.contains_key(path) {
        let text = std::fs::read_to_string(path).map_err(|source| EvalError::read(path, source))?;
        let lines = text.lines().map(str::to_owned).collect();
        files.insert(path.to_path_buf(), (text, lines));
    }
    Ok(&mut files.get_mut(path).expect("just read").1)
}

/// `- "text"  # why`, the text quoted as JSON (a valid YAML double-quoted scalar).
fn item_line(text: &str, why: &str, indent: &str) -> String {
    let quoted = serde_json::to_string(text).expect("a string serializes");
    let why = why.replace(['\n', '\r'], " ");
    format!("{indent}- {quoted}  # suggested: {why}")
}

/// The file of `folder` holding template `id` (its `- id:` line).
fn template_file(folder: &Path, id: &str) -> Result<PathBuf, EvalError> {
    let read_dir = std::fs::read_dir(folder).map_err(|source| EvalError::read(folder, source))?;
    let mut paths: Vec<PathBuf> = read_dir
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if text.lines().any(|l| id_of(l) == Some(id)) {
            return Ok(path);
        }
    }
    Err(EvalError::CatalogLayout {
        path: folder.to_path_buf(),
        template_id: id.to_owned(),
        message: "no file of the datasource has a `- id:` line for it".into(),
    })
}

/// The template id a `- id: ...` line opens.
fn id_of(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("- id:")?.trim();
    Some(rest.trim_matches(|c| c == '"' || c == '\''))
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// After the last item of template `id`'s `nl_examples:` list.
fn insert_example(lines: &mut Vec<String>, id: &str, line: String) -> Result<(), String> {
    let start = lines
        .iter()
        .position(|l| id_of(l) == Some(id))
        .ok_or("no `- id:` line")?;
    let template_indent = indent(&lines[start]);
    let end = (start + 1..lines.len())
        .find(|&i| {
            let l = &lines[i];
            !l.trim().is_empty() && indent(l) <= template_indent
        })
        .unwrap_or(lines.len());
    let key = (start..end)
        .find(|&i| lines[i].trim_start().starts_with("nl_examples:"))
        .ok_or("no `nl_examples:` list")?;
    let key_indent = indent(&lines[key]);
    let mut last = key;
    for (i, l) in lines.iter().enumerate().take(end).skip(key + 1) {
        if l.trim().is_empty() || l.trim_start().starts_with('#') {
            continue;
        }
        if indent(l) > key_indent || (indent(l) == key_indent && l.trim_start().starts_with("- ")) {
            last = i;
        } else {
            break;
        }
    }
    let item_indent = match lines.get(key + 1) {
        Some(l) if l.trim_start().starts_with("- ") => indent(l),
        _ => key_indent + 2,
    };
    lines.insert(
        last + 1,
        format!("{}{}", " ".repeat(item_indent), line.trim_start()),
    );
    Ok(())
}

/// After the last item of `negative_examples:`, or as a new list at the end.
fn insert_negative(lines: &mut Vec<String>, line: String) {
    match lines
        .iter()
        .position(|l| l.starts_with("negative_examples:"))
    {
        Some(key) => {
            let mut last = key;
            for (i, l) in lines.iter().enumerate().skip(key + 1) {
                if l.starts_with(' ') || l.starts_with('-') {
                    last = i;
                } else if !l.trim().is_empty() {
                    break;
                }
            }
            lines.insert(last + 1, line);
        }
        None => {
            lines.push("negative_examples:".to_owned());
            lines.push(line);
        }
    }
}

/// A unified diff of the edits, paths relative to `root` (`git apply` from there).
pub fn unified_diff(edits: &[Edited], root: &Path) -> String {
    let mut out = String::new();
    for edit in edits {
        let name = edit
            .path
            .strip_prefix(root)
            .unwrap_or(&edit.path)
            .display()
            .to_string();
        out.push_str(&format!("--- a/{name}\n+++ b/{name}\n"));
        let before: Vec<&str> = edit.before.lines().collect();
        let after: Vec<&str> = edit.after.lines().collect();
        out.push_str(&hunks(&before, &after));
    }
    out
}

/// Hunks for an edit that only inserts lines (what `edit` does), 3 lines of context.
fn hunks(before: &[&str], after: &[&str]) -> String {
    // Walk both: equal lines advance together, the rest of `after` is inserted.
    let mut inserted = vec![false; after.len()];
    let mut i = 0;
    for (j, line) in after.iter().enumerate() {
        if i < before.len() && before[i] == *line {
            i += 1;
        } else {
            inserted[j] = true;
        }
    }
    let mut out = String::new();
    let mut j = 0;
    while j < after.len() {
        if !inserted[j] {
            j += 1;
            continue;
        }
        let start = j.saturating_sub(3);
        let mut end = j;
        loop {
            while end < after.len() && inserted[end] {
                end += 1;
            }
            let next = (end..after.len().min(end + 7)).find(|&k| inserted[k]);
            match next {
                Some(k) => end = k,
                None => break,
            }
        }
        let stop = (end + 3).min(after.len());
        let old_start = (0..start).filter(|&k| !inserted[k]).count();
        let old_len = (start..stop).filter(|&k| !inserted[k]).count();
        out.push_str(&format!(
            "@@ -{},{} +{},{} @@\n",
            old_start + 1,
            old_len,
            start + 1,
            stop - start
        ));
        for (k, line) in after.iter().enumerate().take(stop).skip(start) {
            out.push(if inserted[k] { '+' } else { ' ' });
            out.push_str(line);
            out.push('\n');
        }
        j = stop;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMPLATES: &str = "templates:\n  - id: \"a\"\n    description: \"A\"\n    nl_examples:\n      - \"one\"\n      - \"two\"\n    tags: [\"x\"]\n  - id: \"b\"\n    nl_examples:\n      - \"three\"\n";

    #[test]
    fn an_example_lands_at_the_end_of_its_template_list() {
        let mut lines: Vec<String> = TEMPLATES.lines().map(str::to_owned).collect();
        insert_example(&mut lines, "a", "- \"new\"  # suggested: why".into()).unwrap();
        assert_eq!(lines[6], "      - \"new\"  # suggested: why");
        assert_eq!(lines[7], "    tags: [\"x\"]");
        insert_example(&mut lines, "b", "- \"late\"".into()).unwrap();
        assert_eq!(lines.last().unwrap(), "      - \"late\"");
        assert!(insert_example(&mut lines, "c", "- \"x\"".into()).is_err());
    }

    #[test]
    fn the_diff_has_the_hunks_git_apply_reads() {
        let before: Vec<&str> = TEMPLATES.lines().collect();
        let mut lines: Vec<String> = TEMPLATES.lines().map(str::to_owned).collect();
        insert_example(&mut lines, "a", "- \"new\"".into()).unwrap();
        let after: Vec<&str> = lines.iter().map(String::as_str).collect();
        let diff = hunks(&before, &after);
        assert!(diff.starts_with("@@ -4,6 +4,7 @@\n"), "{diff}");
        assert!(diff.contains("\n+      - \"new\"\n"), "{diff}");
    }

    #[test]
    fn a_negative_starts_the_list_when_there_is_none() {
        let mut lines = vec!["name: \"ev\"".to_owned(), "kind: sql".to_owned()];
        insert_negative(&mut lines, "  - \"q\"".into());
        assert_eq!(
            lines,
            vec![
                "name: \"ev\"",
                "kind: sql",
                "negative_examples:",
                "  - \"q\""
            ]
        );
        insert_negative(&mut lines, "  - \"r\"".into());
        assert_eq!(lines.last().unwrap(), "  - \"r\"");
    }
}
