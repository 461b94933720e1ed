//! A documents datasource's corpus: a folder of Markdown or text files, each with optional
//! front matter, or a JSON-lines file. Loading is strict: a front-matter field of the wrong
//! type is an error naming the file and the field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::DocumentsError;
use switchyard_catalog::template::Datasource;
use switchyard_text::params::value_text;

/// One document, before chunking.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The file's path under the corpus folder without its extension, or the line's `doc_id`.
    pub id: String,
    pub title: String,
    /// The body without its front matter.
    pub text: String,
    pub summary: Option<String>,
    /// Questions the document answers (front matter `questions`).
    pub questions: Vec<String>,
    /// Every other front-matter field, as one or more text values (`product: [car, home]`).
    pub metadata: BTreeMap<String, Vec<String>>,
}

/// Where a documents datasource's corpus is: `connection.corpus`, relative to the
/// datasource's folder unless absolute.
pub fn corpus_path(
    datasource: &Datasource,
    datasource_dir: &Path,
) -> Result<PathBuf, DocumentsError> {
    let Some(corpus) = datasource.spec.connection.get("corpus") else {
        return Err(DocumentsError::corpus(
            datasource_dir.join(switchyard_catalog::template::DATASOURCE_FILE),
            "connection.corpus",
            "a documents datasource names its corpus: a folder of .md/.txt files or a .jsonl file",
        ));
    };
    let path = Path::new(corpus);
    Ok(if path.is_absolute() {
        path.to_owned()
    } else {
        datasource_dir.join(path)
    })
}

/// Load every document of the corpus at `path` (a folder or a `.jsonl` file), in a stable
/// order (file paths sorted; lines in order).
pub fn load_corpus(path: &Path) -> Result<Vec<Document>, DocumentsError> {
    let documents = if path.is_dir() {
        let mut files = Vec::new();
        collect_files(path, &mut files)?;
        files.sort();
        files
            .iter()
            .map(|file| load_file(path, file))
            .collect::<Result<Vec<_>, _>>()?
    } else if path.extension().is_some_and(|e| e == "jsonl") {
        load_lines(path)?
    } else {
        return Err(DocumentsError::corpus(
            path,
            "connection.corpus",
            "not a folder nor a .jsonl file (or it does not exist)",
        ));
    };
    if documents.is_empty() {
        return Err(DocumentsError::corpus(
            path,
            "connection.corpus",
            "the corpus has no documents (.md, .markdown, .txt files or JSON lines)",
        ));
    }
    Ok(documents)
}

/// A digest of the corpus's documents, so a chunk artifact built from other documents is
/// told apart.
pub fn corpus_hash(documents: &[Document]) -> String {
    let mut hasher = Sha256::new();
    for d in documents {
        for part in [&d.id, &d.title, &d.text] {
            hasher.update(part.as_bytes());
            hasher.update([0]);
        }
        hasher.update(d.summary.as_deref().unwrap_or("").as_bytes());
        hasher.update(d.questions.join("\u{1f}").as_bytes());
        hasher.update(serde_json::to_vec(&d.metadata).expect("serialisable"));
    }
    hex::encode(hasher.finalize())
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), DocumentsError> {
    for entry in std::fs::read_dir(dir).map_err(|e| DocumentsError::read(dir, e))? {
        let path = entry.map_err(|e| DocumentsError::read(dir, e))?.path();
        if path.is_dir() {
            collect_files(&path, out)?;
        } else if path
            .extension()
            .is_some_and(|e| e == "md" || e == "markdown" || e == "txt")
        {
            out.push(path);
        }
    }
    Ok(())
}

fn load_file(root: &Path, file: &Path) -> Result<Document, DocumentsError> {
    let raw = std::fs::read_to_string(file).map_err(|e| DocumentsError::read(file, e))?;
    let raw = raw.replace("\r\n", "\n");
    let (front, body) = split_front_matter(&raw);
    let fields = match front {
        Some(yaml) => match serde_saphyr::from_str::<Value>(yaml) {
            Ok(Value::Object(map)) => map,
            Ok(Value::Null) => Default::default(),
            Ok(_) => {
                return Err(DocumentsError::corpus(
                    file,
                    "front matter",
                    "must be a mapping of fields",
                ))
            }
            Err(e) => return Err(DocumentsError::corpus(file, "front matter", e.to_string())),
        },
        None => Default::default(),
    };
    let id = file
        .strip_prefix(root)
        .unwrap_or(file)
        .with_extension("")
        .to_string_lossy()
        .replace('\\', "/");
    let title_fallback = first_heading(body).unwrap_or_else(|| id.clone());
    document(id, title_fallback, body.trim().to_owned(), fields)
        .map_err(|(field, message)| DocumentsError::corpus(file, field, message))
}

fn load_lines(path: &Path) -> Result<Vec<Document>, DocumentsError> {
    let text = std::fs::read_to_string(path).map_err(|e| DocumentsError::read(path, e))?;
    let mut documents = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let at = |field: &str| format!("line {}: {field}", n + 1);
        let mut fields = match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(map)) => map,
            Ok(_) => {
                return Err(DocumentsError::corpus(
                    path,
                    at("line"),
                    "must be an object",
                ))
            }
            Err(e) => return Err(DocumentsError::corpus(path, at("line"), e.to_string())),
        };
        let id = match fields.remove("doc_id").or_else(|| fields.remove("id")) {
            Some(Value::String(id)) if !id.trim().is_empty() => id,
            Some(Value::Number(n)) => n.to_string(),
            _ => {
                return Err(DocumentsError::corpus(
                    path,
                    at("doc_id"),
                    "every line needs a `doc_id` (or `id`): a non-empty string",
                ))
            }
        };
        let body = match fields.remove("text") {
            Some(Value::String(text)) => text,
            _ => {
                return Err(DocumentsError::corpus(
                    path,
                    at("text"),
                    "every line needs a `text` string",
                ))
            }
        };
        let fallback = id.clone();
        documents.push(
            document(id, fallback, body, fields)
                .map_err(|(field, message)| DocumentsError::corpus(path, at(&field), message))?,
        );
    }
    Ok(documents)
}

/// A document from its fields; the error is (field, problem).
fn document(
    id: String,
    title_fallback: String,
    text: String,
    mut fields: serde_json::Map<String, Value>,
) -> Result<Document, (String, String)> {
    let title = match fields.remove("title") {
        None | Some(Value::Null) => title_fallback,
        Some(Value::String(title)) => title,
        Some(_) => return Err(("title".into(), "must be text".into())),
    };
    let summary = match fields.remove("summary") {
        None | Some(Value::Null) => None,
        Some(Value::String(summary)) => Some(summary),
        Some(_) => return Err(("summary".into(), "must be text".into())),
    };
    let questions = match fields.remove("questions") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .into_iter()
            .enumerate()
            .map(|(i, q)| match q {
                Value::String(q) if !q.trim().is_empty() => Ok(q),
                _ => Err((format!("questions[{i}]"), "must be non-empty text".into())),
            })
            .collect::<std::result::Result<_, _>>()?,
        Some(_) => return Err(("questions".into(), "must be a list of questions".into())),
    };
    let mut metadata = BTreeMap::new();
    for (field, value) in fields {
        let values = match value {
            Value::Array(items) => items
                .iter()
                .map(value_text)
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| (field.clone(), "must be a value or a list of values".into()))?,
            Value::Null => continue,
            other => vec![value_text(&other)
                .ok_or_else(|| (field.clone(), "must be a value or a list of values".into()))?],
        };
        metadata.insert(field, values);
    }
    Ok(Document {
        id,
        title,
        text,
        summary,
        questions,
        metadata,
    })
}

/// (front matter, body): front matter is a `---` line, YAML, and a closing `---` line.
fn split_front_matter(raw: &str) -> (Option<&str>, &str) {
    let Some(rest) = raw.strip_prefix("---\n") else {
        return (None, raw);
    };
    match rest.find("\n---") {
        Some(end) => {
            let after = &rest[end + 4..];
            let body = after.split_once('\n').map_or("", |(_, body)| body);
            (Some(&rest[..end]), body)
        }
        None => (None, raw),
    }
}

fn first_heading(body: &str) -> Option<String> {
    body.lines()
        .find_map(|line| line.strip_prefix("# "))
        .map(|h| h.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    #[test]
    fn front_matter_fields_become_title_summary_questions_and_metadata() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "travel.md",
            "---\ntitle: Travel cover\nproduct: travel\ntags: [a, b]\nquestions:\n  - What is the excess?\n---\n# Travel\n\nThe excess is 100.\n",
        );
        write(dir.path(), "plain.txt", "# Plain heading\nJust text.");
        let docs = load_corpus(dir.path()).unwrap();
        assert_eq!(docs.len(), 2);
        let (plain, travel) = (&docs[0], &docs[1]);
        assert_eq!(plain.id, "plain");
        assert_eq!(plain.title, "Plain heading");
        assert_eq!(travel.title, "Travel cover");
        assert_eq!(travel.questions, ["What is the excess?"]);
        assert_eq!(travel.metadata["product"], ["travel"]);
        assert_eq!(travel.metadata["tags"], ["a", "b"]);
        assert!(travel.text.starts_with("# Travel"));
    }

    #[test]
    fn a_field_of_the_wrong_type_names_the_file_and_the_field() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "bad.md", "---\nquestions: 5\n---\nbody\n");
        let error = load_corpus(dir.path()).unwrap_err().to_string();
        assert!(
            error.contains("bad.md") && error.contains("questions"),
            "{error}"
        );
        write(dir.path(), "bad.md", "---\ntitle: {a: 1}\n---\nbody\n");
        let error = load_corpus(dir.path()).unwrap_err().to_string();
        assert!(
            error.contains("bad.md") && error.contains("title"),
            "{error}"
        );
    }

    #[test]
    fn json_lines_need_an_id_and_text() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.jsonl");
        std::fs::write(
            &file,
            "{\"doc_id\": \"1\", \"title\": \"T\", \"text\": \"x\"}\n{\"doc_id\": 2}\n",
        )
        .unwrap();
        let error = load_corpus(&file).unwrap_err().to_string();
        assert!(
            error.contains("line 2") && error.contains("text"),
            "{error}"
        );
        std::fs::write(&file, "{\"doc_id\": 7, \"text\": \"x\", \"year\": 2020}\n").unwrap();
        let docs = load_corpus(&file).unwrap();
        assert_eq!(docs[0].id, "7");
        assert_eq!(docs[0].metadata["year"], ["2020"]);
        assert!(load_corpus(&dir.path().join("absent.jsonl")).is_err());
    }
}
