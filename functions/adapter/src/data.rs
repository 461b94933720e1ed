//! Where this function's datasources find their files. Deployed (`SWITCHYARD_INDEX_BUCKET`
//! set), a DuckDB datasource's data comes from S3, published beside the index by
//! `switchyard index push` (`<prefix>/data/<datasource>`), fetched at cold start into the
//! temporary directory (a Lambda's only writable place) and checked against its manifest;
//! the catalog layer then carries templates, not data, and new data needs a push, not a
//! deploy. Otherwise (`SWITCHYARD_INDEX`, `sam local`, `cargo lambda watch`) every file is
//! read from the catalog folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use switchyard_adapters::duckdb_data::data_files;
use switchyard_catalog::template::Catalog;
use switchyard_s3::{IndexLocation, S3DataStore};

/// The folder each DuckDB datasource of `catalog` was fetched into, below `root`: empty
/// unless the index (and so the data) is in S3.
pub async fn fetch_duckdb_data(
    catalog: &Catalog,
    location: Option<&IndexLocation>,
    s3: Option<&aws_sdk_s3::Client>,
    root: &Path,
) -> anyhow::Result<BTreeMap<String, PathBuf>> {
    let mut fetched = BTreeMap::new();
    let (Some(IndexLocation::S3 { bucket, prefix }), Some(s3)) = (location, s3) else {
        return Ok(fetched);
    };
    for datasource in &catalog.datasources {
        let Some(files) = data_files(datasource)? else {
            continue;
        };
        let name = datasource.name();
        let folder = root.join(name);
        let paths: Vec<String> = files.into_iter().map(|f| f.path).collect();
        let started = std::time::Instant::now();
        let manifest = S3DataStore::new(s3.clone(), bucket, prefix, name)
            .fetch(&paths, &folder)
            .await
            .with_context(|| format!("fetching the data of datasource `{name}`"))?;
        let bytes: u64 = manifest
            .files
            .iter()
            .filter(|f| paths.contains(&f.path))
            .map(|f| f.bytes)
            .sum();
        tracing::info!(
            datasource = %name,
            files = paths.len(),
            bytes,
            ms = started.elapsed().as_millis() as u64,
            "data fetched from S3 and checked"
        );
        fetched.insert(name.to_owned(), folder);
    }
    Ok(fetched)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::{handle, load_with};
    use switchyard_contract::adapter::{AdapterRequest, AdapterStatus};

    fn demo() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo")
    }

    /// An S3 client on the test's moto_server (`SWITCHYARD_TEST_MOTO_URL`).
    pub(crate) async fn moto_s3() -> aws_sdk_s3::Client {
        let moto = std::env::var("SWITCHYARD_TEST_MOTO_URL").expect(
            "SWITCHYARD_TEST_MOTO_URL is not set: start the emulators with ./infra/scripts/aws-local.sh start (./infra/scripts/test.sh does)",
        );
        let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .endpoint_url(&moto)
            .region(aws_config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_s3::config::Credentials::new(
                "test", "test", None, None, "tests",
            ))
            .load()
            .await;
        switchyard_s3::s3_client(&sdk)
    }

    fn teslas() -> AdapterRequest {
        serde_json::from_value(serde_json::json!({
            "request_id": "r1", "datasource": "ev", "template_id": "vehicles_count_by_make",
            "query": "How many Teslas are registered?", "session_parameters": {}, "deadline_ms": 5000,
        }))
        .unwrap()
    }

    /// The `ev` adapter function's cold start, deployed: its environment names the catalog
    /// layer and the index bucket.
    async fn cold_start(
        s3: &aws_sdk_s3::Client,
        bucket: &str,
        data_root: &Path,
    ) -> anyhow::Result<(switchyard_adapters::LocalAdapters, String)> {
        let templates = demo().display().to_string();
        let variable = move |name: &str| match name {
            "SWITCHYARD_TEMPLATES" => Some(templates.clone()),
            "SWITCHYARD_DATASOURCE" => Some("ev".to_owned()),
            _ => None,
        };
        let location = IndexLocation::S3 {
            bucket: bucket.to_owned(),
            prefix: "demo".into(),
        };
        load_with(variable, Some(location), Some(s3.clone()), data_root).await
    }

    /// On moto_server: a DuckDB datasource answers from the data published in S3, not
    /// from the catalog folder's copy; unpublished, corrupt or mismatched data stops the
    /// cold start naming the object, and leaves no file behind.
    #[tokio::test]
    async fn a_duckdb_datasource_answers_from_its_data_in_s3_checked() {
        let s3 = moto_s3().await;
        let bucket = format!("adapter-data-{}", std::process::id());
        s3.create_bucket().bucket(&bucket).send().await.unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let data_root = scratch.path().join("fetched");
        let manifest_place = format!("s3://{bucket}/demo/data/ev/current");

        // Nothing published: the cold start stops and says how to publish.
        let error = format!(
            "{:#}",
            cold_start(&s3, &bucket, &data_root).await.err().unwrap()
        );
        for named in [manifest_place.as_str(), "switchyard index push", "`ev`"] {
            assert!(error.contains(named), "{named:?} missing from: {error}");
        }

        // Published: the first 20 rows of the catalog's CSV, so the answer shows which
        // copy was read (the catalog folder's has 200 rows).
        let catalog_csv = std::fs::read_to_string(demo().join("ev/data/vehicles.csv")).unwrap();
        let published: String = catalog_csv
            .lines()
            .take(21)
            .map(|l| format!("{l}\n"))
            .collect();
        let teslas_published = published.lines().filter(|l| l.contains(",Tesla,")).count();
        let teslas_in_catalog = catalog_csv
            .lines()
            .filter(|l| l.contains(",Tesla,"))
            .count();
        assert!(teslas_published > 0 && teslas_published < teslas_in_catalog);
        let file = scratch.path().join("vehicles.csv");
        std::fs::write(&file, &published).unwrap();
        let store = S3DataStore::new(s3.clone(), &bucket, "demo", "ev");
        let manifest = store
            .push(&[("data/vehicles.csv".to_owned(), file.clone())])
            .await
            .unwrap();
        assert_eq!(manifest.files.len(), 1);
        assert!(manifest.files[0].key.starts_with("demo/data/ev/"));
        assert!(manifest.files[0].key.ends_with(".csv"));

        let (adapters, hash) = cold_start(&s3, &bucket, &data_root).await.unwrap();
        let answer = handle(&adapters, &hash, teslas()).await;
        assert_eq!(answer.status(), AdapterStatus::Ok, "{answer:?}");
        let expected = format!("There are {teslas_published} registered Tesla vehicles.");
        assert_eq!(
            answer.content, expected,
            "the published rows, not the catalog's"
        );
        let fetched = data_root.join("ev/data/vehicles.csv");
        assert_eq!(std::fs::read_to_string(&fetched).unwrap(), published);

        // The object replaced behind the manifest's back: a cold start in the same sandbox
        // keeps the checked copy it has and does not download again...
        let key = manifest.files[0].key.clone();
        s3.put_object()
            .bucket(&bucket)
            .key(&key)
            .body(aws_sdk_s3::primitives::ByteStream::from(
                b"id,make\n1,Evil\n".to_vec(),
            ))
            .send()
            .await
            .unwrap();
        let (adapters, hash) = cold_start(&s3, &bucket, &data_root).await.unwrap();
        let answer = handle(&adapters, &hash, teslas()).await;
        assert_eq!(answer.status(), AdapterStatus::Ok, "{answer:?}");
        assert_eq!(answer.content, expected);
        // ...and a new sandbox refuses the corrupt object, naming it, writing nothing.
        let fresh_root = scratch.path().join("fresh");
        let error = format!(
            "{:#}",
            cold_start(&s3, &bucket, &fresh_root).await.err().unwrap()
        );
        for named in [
            key.as_str(),
            manifest.files[0].sha256.as_str(),
            "corrupt or replaced",
        ] {
            assert!(error.contains(named), "{named:?} missing from: {error}");
        }
        let left: Vec<_> = walk(&fresh_root);
        assert!(left.is_empty(), "nothing may be left behind: {left:?}");

        // A manifest that lacks the catalog's file names what it has.
        let other = scratch.path().join("other.csv");
        std::fs::write(&other, "id\n1\n").unwrap();
        store
            .push(&[("data/other.csv".to_owned(), other)])
            .await
            .unwrap();
        let error = format!(
            "{:#}",
            cold_start(&s3, &bucket, &fresh_root).await.err().unwrap()
        );
        for named in [
            "data/vehicles.csv",
            "data/other.csv",
            manifest_place.as_str(),
        ] {
            assert!(error.contains(named), "{named:?} missing from: {error}");
        }
    }

    fn walk(folder: &Path) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(folder) else {
            return Vec::new();
        };
        entries
            .flatten()
            .flat_map(|e| {
                let path = e.path();
                if path.is_dir() {
                    walk(&path)
                } else {
                    vec![path]
                }
            })
            .collect()
    }
}
