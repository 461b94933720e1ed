//! Publishing the router's index and its adapted encoder in S3: the checks that need the
//! index (a valid artifact, the encoder its manifest names) before the upload
//! [`S3IndexStore`] does.

use std::future::Future;

use switchyard_index::error::IndexError;
use switchyard_index::index::{EncoderManifest, Index};
use switchyard_s3::S3Error;
use switchyard_s3::{IndexPointer, S3IndexStore};

/// The index's side of an [`S3IndexStore`].
pub trait IndexPublishing {
    /// Publish an artifact: it must be a valid index (refused before any upload), is
    /// uploaded, read back and compared, and then becomes `current`.
    fn push(&self, bytes: &[u8]) -> impl Future<Output = Result<IndexPointer, S3Error>> + Send;

    /// Publish the adapted encoder `manifest` names (before the index that names it):
    /// checked against the manifest, uploaded, read back and compared. Gives its place.
    fn push_encoder(
        &self,
        bytes: &[u8],
        manifest: &EncoderManifest,
    ) -> impl Future<Output = Result<String, S3Error>> + Send;

    /// The adapted encoder an index names and where it was read; the embedder that loads
    /// it checks it against the manifest (`MiniLmEmbedder::adapted`).
    fn fetch_encoder(
        &self,
        manifest: &EncoderManifest,
    ) -> impl Future<Output = Result<(String, Vec<u8>), S3Error>> + Send;
}

impl IndexPublishing for S3IndexStore {
    async fn push(&self, bytes: &[u8]) -> Result<IndexPointer, S3Error> {
        Index::from_bytes(bytes, "the artifact to push")?;
        self.publish(bytes, "idx").await
    }

    async fn push_encoder(
        &self,
        bytes: &[u8],
        manifest: &EncoderManifest,
    ) -> Result<String, S3Error> {
        let key = self.encoder_key(&manifest.onnx_sha256);
        manifest
            .check_graph(bytes, "the encoder to push", "the index to push")
            .map_err(refused)?;
        self.put(&key, bytes.to_vec(), "application/octet-stream")
            .await?;
        let stored = self.get(&key).await?;
        manifest
            .check_graph(&stored, &self.place(&key), "the index to push")
            .map_err(refused)?;
        Ok(self.place(&key))
    }

    async fn fetch_encoder(
        &self,
        manifest: &EncoderManifest,
    ) -> Result<(String, Vec<u8>), S3Error> {
        let key = self.encoder_key(&manifest.onnx_sha256);
        let bytes = self.get(&key).await?;
        Ok((self.place(&key), bytes))
    }
}

/// An encoder the index does not name, refused before (or after) it is stored: the S3
/// edge's "not what it should be", with the index's own words.
fn refused(error: IndexError) -> S3Error {
    match error {
        IndexError::Model { origin, problem } => S3Error::object(origin, problem),
        other => S3Error::object("the index to push", other.to_string()),
    }
}
