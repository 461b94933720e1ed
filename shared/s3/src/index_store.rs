//! Artifacts in S3 behind a pointer. `publish` uploads under a content-addressed key
//! (`<prefix>/<sha256>.<ext>`), reads it back and checks it, and only then moves the
//! `<prefix>/current` pointer, so a failed upload never leaves the pointer on a broken
//! artifact. The router reads the pointer, then the artifact it names, and checks the
//! bytes against the pointer before deserialising them: their length and their frame's
//! CRC-64 (the artifact's own checksum, recomputed at memory speed), or the SHA-256 of
//! them all for a pointer written before pointers named the frame's checksum.

use crate::error::{Result, S3Error};
use aws_sdk_s3::primitives::ByteStream;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use switchyard_documents::ChunkIndex;
use switchyard_vectors::frame;

use crate::object;

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
    /// The checksum of the artifact's frame (hex), which the router recomputes instead of
    /// the SHA-256: 0.35 s less of a cold start at 849 MB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_checksum: Option<String>,
}

/// The CRC-64 of everything before the frame's checksum (hex); `None` for bytes too short
/// to be a frame.
fn frame_checksum(bytes: &[u8]) -> Option<String> {
    let sealed = bytes.len().checked_sub(frame::CHECKSUM_LEN)?;
    Some(hex::encode(frame::checksum(&bytes[..sealed])))
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

    /// An object's place, as errors and logs name it.
    pub fn place(&self, key: &str) -> String {
        object::place(&self.bucket, key)
    }

    /// Publish a documents datasource's (or the schema's) chunk artifact, checked the
    /// same way; its store's prefix is [`chunks_prefix`].
    pub async fn push_chunks(&self, bytes: &[u8]) -> Result<IndexPointer> {
        ChunkIndex::from_bytes(bytes, "the chunk artifact to push")?;
        self.publish(bytes, "chunks").await
    }

    /// Upload `bytes` under their checksum (`<sha256>.<extension>`), read them back and
    /// compare, and only then move `current` to them. Checks nothing inside: callers
    /// check what they publish (`push_chunks` here; the index in `switchyard-aws`).
    pub async fn publish(&self, bytes: &[u8], extension: &str) -> Result<IndexPointer> {
        let sha256 = hex::encode(Sha256::digest(bytes));
        let key = format!("{}/{sha256}.{extension}", self.prefix);
        self.put(&key, bytes.to_vec(), "application/octet-stream")
            .await?;
        let stored = self.get(&key).await?;
        let stored_sha256 = hex::encode(Sha256::digest(&stored));
        if stored_sha256 != sha256 {
            return Err(S3Error::object(
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
            frame_checksum: frame_checksum(bytes),
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

    /// The pointer the router follows.
    pub async fn current(&self) -> Result<IndexPointer> {
        let key = self.pointer_key();
        let bytes = self.get(&key).await?;
        serde_json::from_slice(&bytes).map_err(|e| {
            S3Error::object(
                self.place(&key),
                format!("the pointer is not {{key, sha256, bytes}} JSON: {e}"),
            )
        })
    }

    /// The current artifact's bytes, checked against the pointer: length and frame
    /// checksum, or (an older pointer) the SHA-256.
    pub async fn fetch_current(&self) -> Result<(IndexPointer, Vec<u8>)> {
        let pointer = self.current().await?;
        let bytes = self.get(&pointer.key).await?;
        // Each side described the same way, so that a mismatch says what was found.
        let (found, expected) = match &pointer.frame_checksum {
            Some(expected) => (
                format!(
                    "{} bytes with frame checksum {}",
                    bytes.len(),
                    frame_checksum(&bytes).unwrap_or_default()
                ),
                format!("{} bytes with frame checksum {expected}", pointer.bytes),
            ),
            None => (
                format!("SHA-256 {}", hex::encode(Sha256::digest(&bytes))),
                format!("SHA-256 {}", pointer.sha256),
            ),
        };
        if found != expected {
            return Err(S3Error::object(
                self.place(&pointer.key),
                format!(
                    "{found} does not match the pointer's {expected} (corrupt or replaced artifact)"
                ),
            ));
        }
        Ok((pointer, bytes))
    }

    pub async fn put(&self, key: &str, body: Vec<u8>, content_type: &str) -> Result<()> {
        object::put(
            &self.client,
            &self.bucket,
            key,
            ByteStream::from(body),
            content_type,
        )
        .await
    }

    pub async fn get(&self, key: &str) -> Result<Vec<u8>> {
        object::read(&self.client, &self.bucket, key, "no such object").await
    }

    /// Where the router's artifact is named: the `current` pointer.
    pub fn origin(&self) -> String {
        self.place(&self.pointer_key())
    }

    /// The current artifact's bytes, checked against the pointer.
    pub async fn fetch(&self) -> Result<Vec<u8>> {
        self.fetch_current().await.map(|(_, bytes)| bytes)
    }
}
