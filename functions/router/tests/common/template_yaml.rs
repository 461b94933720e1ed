//! `template.yaml` as plain YAML, for the test binaries that read it (`template.rs`,
//! `aws/iam.rs`): CloudFormation's short-form tags (`!Ref X`, `!Sub "…"`, `!GetAtt X.Arn`)
//! dropped, so `!Ref SessionsTable` reads as the logical id `SessionsTable`.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn template() -> Value {
    let text = std::fs::read_to_string(root().join("template.yaml")).unwrap();
    let plain = [
        "!Ref ", "!Sub ", "!GetAtt ", "!If ", "!Not ", "!Equals ", "!Split ",
    ]
    .iter()
    .fold(text, |text, tag| text.replace(tag, ""));
    serde_saphyr::from_str(&plain).expect("template.yaml parses as YAML")
}
