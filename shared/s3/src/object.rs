//! One object's calls, made alike by both stores: the place errors name, an upload, and a
//! download whose missing object is said in the store's own words.

use crate::error::{Result, S3Error};
use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::operation::get_object::GetObjectOutput;
use aws_sdk_s3::primitives::ByteStream;

/// `s3://bucket/key`, as errors and logs name an object.
pub(crate) fn place(bucket: &str, key: &str) -> String {
    format!("s3://{bucket}/{key}")
}

/// A failed call's error, the SDK's kept as its source.
pub(crate) fn failed(
    bucket: &str,
    key: &str,
    problem: &str,
    error: impl std::error::Error + Send + Sync + 'static,
) -> S3Error {
    S3Error::Call {
        place: place(bucket, key),
        problem: problem.into(),
        source: Box::new(error),
    }
}

pub(crate) async fn put(
    client: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
    body: ByteStream,
    content_type: &str,
) -> Result<()> {
    client
        .put_object()
        .bucket(bucket)
        .key(key)
        .content_type(content_type)
        .body(body)
        .send()
        .await
        .map_err(|e| failed(bucket, key, "upload failed", e))?;
    Ok(())
}

/// The object at `key`; a missing one is an error saying `missing`.
pub(crate) async fn get(
    client: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
    missing: &str,
) -> Result<GetObjectOutput> {
    client
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .map_err(|e| match e.as_service_error() {
            Some(service) if service.is_no_such_key() => {
                S3Error::object(place(bucket, key), missing)
            }
            // To a role without s3:ListBucket (ours: read below a prefix, nothing more), S3
            // answers a missing object with AccessDenied, not NoSuchKey.
            Some(service) if service.code() == Some("AccessDenied") => S3Error::object(
                place(bucket, key),
                format!(
                    "access denied: the object is missing ({missing}; without                      s3:ListBucket S3 says AccessDenied for a missing object), or this                      role may not read it (s3:GetObject on the key)"
                ),
            ),
            _ => failed(bucket, key, "download failed", e),
        })
}

/// The whole body of the object at `key`.
pub(crate) async fn read(
    client: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
    missing: &str,
) -> Result<Vec<u8>> {
    let object = get(client, bucket, key, missing).await?;
    let body = object
        .body
        .collect()
        .await
        .map_err(|e| failed(bucket, key, "download failed", e))?;
    Ok(body.into_bytes().to_vec())
}
