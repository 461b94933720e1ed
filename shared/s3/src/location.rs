//! Where a function finds what `index build` wrote: below a prefix in S3 (a deployed
//! stack), or beside an index file (local runs, `sam local`). The router and the adapter
//! function read the location from the same variables.

use std::path::{Path, PathBuf};

use crate::error::{Result, S3Error};
use switchyard_catalog::template::{Catalog, DatasourceKind};
use switchyard_documents::{artifact_beside, ChunkIndex};

use crate::index_store::{chunks_prefix, S3IndexStore};

#[derive(Debug, Clone, PartialEq)]
pub enum IndexLocation {
    /// `SWITCHYARD_INDEX_BUCKET` + `SWITCHYARD_INDEX_PREFIX` (default `indexes`): the
    /// artifact the `<prefix>/current` pointer names, and the chunks below `<prefix>/chunks`.
    S3 { bucket: String, prefix: String },
    /// `SWITCHYARD_INDEX`: an artifact file, with what `index build` wrote beside it.
    File(PathBuf),
}

/// The variable `name`, unless unset or empty: a CloudFormation template can declare a
/// variable with an empty value but cannot leave it out, so empty means unset.
pub fn variable_set(variable: impl Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    variable(name).filter(|value| !value.is_empty())
}

impl IndexLocation {
    /// The bucket when `SWITCHYARD_INDEX_BUCKET` is set, else the file of
    /// `SWITCHYARD_INDEX`; `None` when neither is.
    pub fn from_env(variable: impl Fn(&str) -> Option<String>) -> Option<IndexLocation> {
        match variable_set(&variable, "SWITCHYARD_INDEX_BUCKET") {
            Some(bucket) => Some(IndexLocation::S3 {
                bucket,
                prefix: variable_set(&variable, "SWITCHYARD_INDEX_PREFIX")
                    .unwrap_or_else(|| "indexes".into()),
            }),
            None => variable_set(&variable, "SWITCHYARD_INDEX")
                .map(|path| IndexLocation::File(PathBuf::from(path))),
        }
    }
}

/// The chunk artifacts of the catalog's documents datasources, published beside the
/// index: `<prefix>/chunks/<name>` in the bucket (read with `s3`), or beside the index
/// file. A missing or corrupt artifact is an error naming it.
pub async fn documents_chunks(
    catalog: &Catalog,
    location: &IndexLocation,
    s3: Option<&aws_sdk_s3::Client>,
) -> Result<Vec<(ChunkIndex, String)>> {
    let mut artifacts = Vec::new();
    let names = catalog
        .datasources
        .iter()
        .filter(|d| d.spec.kind == DatasourceKind::Documents)
        .map(|d| d.name());
    for name in names {
        artifacts.push(match location {
            IndexLocation::S3 { bucket, prefix } => {
                let s3 = s3.ok_or_else(|| {
                    S3Error::object(
                        format!("s3://{bucket}/{prefix}"),
                        "no S3 client to read the chunk artifacts with",
                    )
                })?;
                let store = S3IndexStore::new(s3.clone(), bucket, &chunks_prefix(prefix, name));
                let origin = store.origin();
                let bytes = store.fetch().await?;
                (ChunkIndex::from_bytes(&bytes, &origin)?, origin)
            }
            IndexLocation::File(index) => chunks_beside(index, name)?,
        });
    }
    Ok(artifacts)
}

fn chunks_beside(index: &Path, name: &str) -> Result<(ChunkIndex, String)> {
    let path = artifact_beside(index, name);
    if !path.is_file() {
        return Err(S3Error::object(
            path.display().to_string(),
            format!(
                "the chunks of `{name}` are missing: `index build` writes them beside the index"
            ),
        ));
    }
    Ok((ChunkIndex::read(&path)?, path.display().to_string()))
}
