//! `index push` as a deploy runs it, against moto_server's S3 on 127.0.0.1: the index, its
//! chunks and the DuckDB datasources' data files land where the functions read them.

use sha2::{Digest, Sha256};
use switchyard_e2e::{copy_dir, repo_root, run, run_ok, switchyard};

fn moto() -> String {
    std::env::var("SWITCHYARD_TEST_MOTO_URL").unwrap_or_else(|_| {
        panic!("SWITCHYARD_TEST_MOTO_URL is not set: start the emulators with ./infra/scripts/aws-local.sh start and export what `aws-local.sh env` prints (./infra/scripts/test.sh does both)")
    })
}

fn push(
    cache: &std::path::Path,
    templates: &std::path::Path,
    index: &std::path::Path,
    bucket: &str,
) -> std::process::Command {
    let mut command = switchyard(cache);
    command
        .arg("--templates")
        .arg(templates)
        .args(["index", "push"])
        .arg(index)
        .args(["--bucket", bucket])
        .env("AWS_ENDPOINT_URL", moto())
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test");
    command
}

#[test]
fn push_publishes_the_duckdb_data_beside_the_index_and_refuses_another_catalog() {
    let cache = tempfile::tempdir().unwrap();
    let index = cache.path().join("demo.idx");
    let demo = repo_root().join("templates/demo");
    run_ok(
        switchyard(cache.path())
            .arg("--templates")
            .arg(&demo)
            .args(["index", "build", "--out"])
            .arg(&index),
    );
    let bucket = format!("push-{}", std::process::id());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let s3 = runtime.block_on(async {
        let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .endpoint_url(moto())
            .region(aws_config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_s3::config::Credentials::new(
                "test", "test", None, None, "tests",
            ))
            .load()
            .await;
        switchyard_s3::s3_client(&sdk)
    });
    runtime
        .block_on(s3.create_bucket().bucket(&bucket).send())
        .unwrap();

    let printed: serde_json::Value =
        serde_json::from_str(&run_ok(&mut push(cache.path(), &demo, &index, &bucket))).unwrap();
    let data = &printed["data/ev"];
    assert_eq!(data["datasource"], "ev", "{printed}");
    let files = data["files"].as_array().unwrap();
    assert_eq!(files.len(), 1, "{data}");
    assert_eq!(files[0]["path"], "data/vehicles.csv");
    let csv = std::fs::read(demo.join("ev/data/vehicles.csv")).unwrap();
    assert_eq!(files[0]["sha256"], hex::encode(Sha256::digest(&csv)));
    // Read back as the adapter function reads it at cold start: the manifest, then the
    // file it names, checked.
    let fetched = tempfile::tempdir().unwrap();
    let store = switchyard_s3::S3DataStore::new(s3, &bucket, "indexes", "ev");
    let manifest = runtime
        .block_on(store.fetch(&["data/vehicles.csv".to_owned()], fetched.path()))
        .unwrap();
    assert_eq!(&serde_json::to_value(&manifest).unwrap(), data);
    assert_eq!(
        std::fs::read(fetched.path().join("data/vehicles.csv")).unwrap(),
        csv
    );
    assert!(printed["index"]["key"].is_string(), "{printed}");

    // The index of one catalog with the data of another would answer from data its
    // templates were not checked against: refused, and nothing of the copy is published.
    let other = cache.path().join("other");
    copy_dir(&demo, &other);
    let yaml = other.join("ev/templates.yaml");
    let changed = std::fs::read_to_string(&yaml).unwrap().replace(
        "Count the registered electric vehicles",
        "Count the electric vehicles",
    );
    std::fs::write(&yaml, changed).unwrap();
    let output = run(&mut push(cache.path(), &other, &index, &bucket));
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--templates")
            && stderr.contains("not the catalog the index was built from"),
        "{stderr}"
    );
}
