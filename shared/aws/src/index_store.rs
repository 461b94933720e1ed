//! Index artifacts in S3. `push` uploads under a content-addressed key
//! (`<prefix>/<sha256>.idx`), reads it back and checks it, and only then moves the
//! `<prefix>/current` pointer, so a failed upload never leaves the pointer on a broken
//! artifact. The router reads the pointer, then the artifact it names, and checks the
//! bytes against the pointer's hash before deserialising them.

use aws_sdk_s3::primitives::ByteStream;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use switchyard_catalog::error::{Error, Result};
use switchyard_documents::ChunkIndex;
use switchyard_index::index::{EncoderManifest, Index, IndexSource};

use crate::error::AwsError;

/// Where the chunk artifact named `name` (a documents datasource, or the schema) is
/// published beside the index under `prefix`.
pub fn chunks_prefix(prefix: &str, name: &str) -> String {
    format!("{}/chunks/{name}", prefix.trim_matches('/'))
}

/// The `current` object: which artifact the router loads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexPointer {
    pub key: String,
    pub sha256: String,
    pub bytes: u64,
}

pub struct S3IndexStore {
    client: aws_sdk_s3::Client,
    bucket: String,
    prefix: String,
}

impl S3IndexStore {
    pub fn new(client: aws_sdk_s3::Client, bucket: &str, prefix: &str) -> Self {
        S3IndexStore {
            client,
            bucket: bucket.to_owned(),
            prefix: prefix.trim_matches('/').to_owned(),
        }
    }

    pub fn pointer_key(&self) -> String {
        format!("{}/current", self.prefix)
    }

    fn place(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }

    /// Publish an artifact: it must be a valid index (refused before any upload), is
    /// uploaded, read back and compared, and then becomes `current`.
    pub async fn push(&self, bytes: &[u8]) -> Result<IndexPointer> {
        Index::from_bytes(bytes, "the artifact to push")?;
        self.publish(bytes, "idx").await
    }

    /// Publish a documents datasource's (or the schema's) chunk artifact, checked the
    /// same way; its store's prefix is [`chunks_prefix`].
    pub async fn push_chunks(&self, bytes: &[u8]) -> Result<IndexPointer> {
        ChunkIndex::from_bytes(bytes, "the chunk artifact to push")?;
        self.publish(bytes, "chunks").await
    }

    async fn publish(&self, bytes: &[u8], extension: &str) -> Result<IndexPointer> {
        let sha256 = hex::encode(Sha256::digest(bytes));
        let key = format!("{}/{sha256}.{extension}", self.prefix);
        self.put(&key, bytes.to_vec(), "application/octet-stream")
            .await?;
        let stored = self.get(&key).await?;
        let stored_sha256 = hex::encode(Sha256::digest(&stored));
        if stored_sha256 != sha256 {
            return Err(Error::index(
                self.place(&key),
                format!(
                    "read back {} bytes with SHA-256 {stored_sha256}, uploaded {} bytes with {sha256}; `current` not moved",
                    stored.len(),
                    bytes.len()
                ),
            ));
        }
        let pointer = IndexPointer {
            key,
            sha256,
            bytes: bytes.len() as u64,
        };
        let body = serde_json::to_vec_pretty(&pointer).expect("a pointer always serialises");
        self.put(&self.pointer_key(), body, "application/json")
            .await?;
        Ok(pointer)
    }

    /// Where an adapted encoder's int8 graph is published: addressed by its checksum,
    /// which the index's manifest names, so no pointer can pair an index with another
    /// build's encoder.
    pub fn encoder_key(&self, sha256: &str) -> String {
        format!("{}/encoders/{sha256}.onnx", self.prefix)
    }

    /// Publish the adapted encoder `manifest` names (before the index that names it):
    /// checked against the manifest, uploaded, read back and compared.
    pub async fn push_encoder(&self, bytes: &[u8], manifest: &EncoderManifest) -> Result<String> {
        let key = self.encoder_key(&manifest.onnx_sha256);
        manifest.check_graph(bytes, "the encoder to push", "the index to push")?;
        self.put(&key, bytes.to_vec(), "application/octet-stream")
            .await?;
        let stored = self.get(&key).await?;
        manifest.check_graph(&stored, &self.place(&key), "the index to push")?;
        Ok(self.place(&key))
    }

    /// The adapted encoder an index names and where it was read; the embedder that loads
    /// it checks it against the manifest (`MiniLmEmbedder::adapted`).
    pub async fn fetch_encoder(&self, manifest: &EncoderManifest) -> Result<(String, Vec<u8>)> {
        let key = self.encoder_key(&manifest.onnx_sha256);
        let bytes = self.get(&key).await?;
        Ok((self.place(&key), bytes))
    }

    /// The pointer the router follows.
    pub async fn current(&self) -> Result<IndexPointer> {
        let key = self.pointer_key();
        let bytes = self.get(&key).await?;
        serde_json::from_slice(&bytes).map_err(|e| {
            Error::index(
                self.place(&key),
                format!("the pointer is not {{key, sha256, bytes}} JSON: {e}"),
            )
        })
    }

    /// The current artifact's bytes, checked against the pointer's hash.
    pub async fn fetch_current(&self) -> Result<(IndexPointer, Vec<u8>)> {
        let pointer = self.current().await?;
        let bytes = self.get(&pointer.key).await?;
        let sha256 = hex::encode(Sha256::digest(&bytes));
        if sha256 != pointer.sha256 {
            return Err(Error::index(
                self.place(&pointer.key),
                format!(
                    "SHA-256 {sha256} does not match the pointer's {} (corrupt or replaced artifact)",
                    pointer.sha256
                ),
            ));
        }
        Ok((pointer, bytes))
    }

    async fn put(&self, key: &str, body: Vec<u8>, content_type: &str) -> Result<()> {
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type(content_type)
            .body(ByteStream::from(body))
            .send()
            .await
            .map_err(|e| AwsError::Index {
                place: self.place(key),
                problem: "upload failed".into(),
                source: Box::new(e),
            })?;
        Ok(())
    }

    async fn get(&self, key: &str) -> Result<Vec<u8>> {
        let object = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| match e.as_service_error() {
                Some(service) if service.is_no_such_key() => {
                    Error::index(self.place(key), "no such object")
                }
                _ => AwsError::Index {
                    place: self.place(key),
                    problem: "download failed".into(),
                    source: Box::new(e),
                }
                .into(),
            })?;
        let body = object.body.collect().await.map_err(|e| AwsError::Index {
            place: self.place(key),
            problem: "download failed".into(),
            source: Box::new(e),
        })?;
        Ok(body.into_bytes().to_vec())
    }
}

impl IndexSource for S3IndexStore {
    fn origin(&self) -> String {
        self.place(&self.pointer_key())
    }

    async fn fetch(&self) -> Result<Vec<u8>> {
        self.fetch_current().await.map(|(_, bytes)| bytes)
    }
}
