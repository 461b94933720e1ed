//! A datasource's data files in S3 (a DuckDB datasource's database or CSV/Parquet files),
//! published beside the index by `index push` and fetched by its adapter function at cold
//! start. Each file is uploaded under a content-addressed key
//! (`<prefix>/data/<datasource>/<sha256>.<extension>`), read back and checked; then the
//! `<prefix>/data/<datasource>/current` manifest names them all, so a reader never sees a
//! manifest whose files are missing. A fetch streams each file to disk, checks its size
//! and SHA-256 against the manifest before it takes the file's place, and keeps a file
//! already there with the right checksum (a cold start retried in the same sandbox).

use std::path::{Component, Path, PathBuf};

use crate::error::{Result, S3Error};
use aws_sdk_s3::primitives::ByteStream;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::object;

/// Where the data files of `datasource` are published beside the index under `prefix`.
pub fn data_prefix(prefix: &str, datasource: &str) -> String {
    format!("{}/data/{datasource}", prefix.trim_matches('/'))
}

/// The `current` object of a datasource's data: which object holds each file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataManifest {
    pub datasource: String,
    pub files: Vec<DataObject>,
}

/// One published file: its path relative to the datasource folder, where it is, and what
/// it must hash to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataObject {
    pub path: String,
    pub key: String,
    pub sha256: String,
    pub bytes: u64,
}

pub struct S3DataStore {
    client: aws_sdk_s3::Client,
    bucket: String,
    datasource: String,
    /// `<prefix>/data/<datasource>`.
    prefix: String,
}

impl S3DataStore {
    /// The data of `datasource` beside the index published under `index_prefix`.
    pub fn new(
        client: aws_sdk_s3::Client,
        bucket: &str,
        index_prefix: &str,
        datasource: &str,
    ) -> Self {
        S3DataStore {
            client,
            bucket: bucket.to_owned(),
            datasource: datasource.to_owned(),
            prefix: data_prefix(index_prefix, datasource),
        }
    }

    pub fn manifest_key(&self) -> String {
        format!("{}/current", self.prefix)
    }

    fn place(&self, key: &str) -> String {
        object::place(&self.bucket, key)
    }

    fn fail(&self, key: &str, problem: impl Into<String>) -> S3Error {
        S3Error::object(self.place(key), problem)
    }

    /// Publish the datasource's files, each `(path relative to the datasource folder,
    /// the file on disk)`: uploaded, read back and checked, then named by the manifest.
    pub async fn push(&self, files: &[(String, PathBuf)]) -> Result<DataManifest> {
        let mut objects = Vec::new();
        for (path, file) in files {
            relative(path).map_err(|problem| self.fail(&self.manifest_key(), problem))?;
            let (sha256, bytes) = hash_file(file).await?;
            let extension = Path::new(path)
                .extension()
                .and_then(|e| e.to_str())
                .map(|e| format!(".{}", e.to_ascii_lowercase()))
                .unwrap_or_default();
            let key = format!("{}/{sha256}{extension}", self.prefix);
            let body = ByteStream::from_path(file).await.map_err(|e| {
                S3Error::object(file.display().to_string(), format!("cannot read it: {e}"))
            })?;
            object::put(
                &self.client,
                &self.bucket,
                &key,
                body,
                "application/octet-stream",
            )
            .await?;
            let (stored, stored_bytes) = self.stream(&key, None).await?;
            if stored != sha256 {
                return Err(self.fail(
                    &key,
                    format!(
                        "read back {stored_bytes} bytes with SHA-256 {stored}, uploaded {bytes} bytes of {} with {sha256}; `current` not moved",
                        file.display()
                    ),
                ));
            }
            objects.push(DataObject {
                path: path.clone(),
                key,
                sha256,
                bytes,
            });
        }
        let manifest = DataManifest {
            datasource: self.datasource.clone(),
            files: objects,
        };
        let body = serde_json::to_vec_pretty(&manifest).expect("a manifest always serialises");
        let key = self.manifest_key();
        object::put(
            &self.client,
            &self.bucket,
            &key,
            ByteStream::from(body),
            "application/json",
        )
        .await?;
        Ok(manifest)
    }

    /// The published manifest; it must be this datasource's.
    pub async fn manifest(&self) -> Result<DataManifest> {
        let key = self.manifest_key();
        let body = object::read(&self.client, &self.bucket, &key, &self.missing()).await?;
        let manifest: DataManifest = serde_json::from_slice(&body).map_err(|e| {
            self.fail(
                &key,
                format!("the manifest is not {{datasource, files: [{{path, key, sha256, bytes}}]}} JSON: {e}"),
            )
        })?;
        if manifest.datasource != self.datasource {
            return Err(self.fail(
                &key,
                format!(
                    "the manifest is datasource `{}`'s, not `{}`'s",
                    manifest.datasource, self.datasource
                ),
            ));
        }
        Ok(manifest)
    }

    /// Fetch the files at `paths` (relative to the datasource folder) into `folder`, each
    /// checked against the manifest; a path the manifest lacks is an error saying how to
    /// publish it. Returns the manifest.
    pub async fn fetch(&self, paths: &[String], folder: &Path) -> Result<DataManifest> {
        let manifest = self.manifest().await?;
        for path in paths {
            relative(path).map_err(|problem| self.fail(&self.manifest_key(), problem))?;
            let object = manifest.files.iter().find(|f| &f.path == path).ok_or_else(|| {
                self.fail(
                    &self.manifest_key(),
                    format!(
                        "no file `{path}` published for datasource `{}` (published: {}): run `switchyard index push` with the catalog that names it",
                        self.datasource,
                        manifest.files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>().join(", ")
                    ),
                )
            })?;
            let target = folder.join(path);
            if target.is_file() && hash_file(&target).await?.0 == object.sha256 {
                continue;
            }
            let parent = target.parent().unwrap_or(folder);
            tokio::fs::create_dir_all(parent).await.map_err(|e| {
                S3Error::object(
                    parent.display().to_string(),
                    format!("cannot create it: {e}"),
                )
            })?;
            // Beside the target, then renamed: the target is only ever a checked file.
            let partial = parent.join(format!(
                ".{}.partial-{}",
                target
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or("data"),
                std::process::id()
            ));
            let fetched = self.stream(&object.key, Some(&partial)).await;
            let checked = match fetched {
                Ok((sha256, bytes)) if sha256 == object.sha256 && bytes == object.bytes => Ok(()),
                Ok((sha256, bytes)) => Err(self.fail(
                    &object.key,
                    format!(
                        "{bytes} bytes with SHA-256 {sha256}; the manifest says {} bytes with {} (corrupt or replaced object)",
                        object.bytes, object.sha256
                    ),
                )),
                Err(e) => Err(e),
            };
            if let Err(e) = checked {
                let _ = tokio::fs::remove_file(&partial).await;
                return Err(e);
            }
            tokio::fs::rename(&partial, &target).await.map_err(|e| {
                S3Error::object(
                    target.display().to_string(),
                    format!("cannot write it: {e}"),
                )
            })?;
        }
        Ok(manifest)
    }

    /// What a missing object says: who publishes it.
    fn missing(&self) -> String {
        format!(
            "no such object: `switchyard index push` publishes datasource `{}`'s data",
            self.datasource
        )
    }

    async fn get(&self, key: &str) -> Result<aws_sdk_s3::operation::get_object::GetObjectOutput> {
        object::get(&self.client, &self.bucket, key, &self.missing()).await
    }

    /// Stream the object at `key` (to `file` when given), returning its SHA-256 and size.
    async fn stream(&self, key: &str, file: Option<&Path>) -> Result<(String, u64)> {
        let mut body = self.get(key).await?.body;
        let mut out = match file {
            Some(path) => Some(tokio::fs::File::create(path).await.map_err(|e| {
                S3Error::object(path.display().to_string(), format!("cannot write it: {e}"))
            })?),
            None => None,
        };
        let mut hasher = Sha256::new();
        let mut bytes = 0u64;
        while let Some(chunk) = body
            .try_next()
            .await
            .map_err(|e| object::failed(&self.bucket, key, "download failed", e))?
        {
            hasher.update(&chunk);
            bytes += chunk.len() as u64;
            if let (Some(out), Some(path)) = (out.as_mut(), file) {
                out.write_all(&chunk).await.map_err(|e| {
                    S3Error::object(path.display().to_string(), format!("cannot write it: {e}"))
                })?;
            }
        }
        if let (Some(mut out), Some(path)) = (out, file) {
            out.flush().await.map_err(|e| {
                S3Error::object(path.display().to_string(), format!("cannot write it: {e}"))
            })?;
        }
        Ok((hex::encode(hasher.finalize()), bytes))
    }
}

/// The SHA-256 and size of a file on disk, read in blocks.
async fn hash_file(path: &Path) -> Result<(String, u64)> {
    let unreadable = |e: std::io::Error| {
        S3Error::object(path.display().to_string(), format!("cannot read it: {e}"))
    };
    let mut file = tokio::fs::File::open(path).await.map_err(unreadable)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    let mut bytes = 0u64;
    loop {
        let read = file.read(&mut buffer).await.map_err(unreadable)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
        bytes += read as u64;
    }
    Ok((hex::encode(hasher.finalize()), bytes))
}

/// A published path stays inside the datasource folder it is fetched into.
fn relative(path: &str) -> std::result::Result<(), String> {
    let plain = Path::new(path)
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if plain && !path.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "`{path}` is not a path inside the datasource folder (relative, no `..`)"
        ))
    }
}
