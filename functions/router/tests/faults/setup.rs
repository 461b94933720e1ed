//! Process-wide counters and shared set-up.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use switchyard_catalog::template::Catalog;
use switchyard_core::config::Config;
use switchyard_embed::MiniLmEmbedder;
use switchyard_index::index::Index;

pub static PANICS: AtomicUsize = AtomicUsize::new(0);

/// Count every panic in the process (a request's task included), then report it as usual.
pub fn count_panics() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            previous(info);
        }));
    });
}

pub fn endpoint(variable: &str) -> String {
    std::env::var(variable).unwrap_or_else(|_| {
        panic!("{variable} is not set: start the emulators with ./infra/scripts/aws-local.sh start and export what `aws-local.sh env` prints (./infra/scripts/test.sh and ./infra/scripts/faults.sh do both)")
    })
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn embedder() -> Arc<MiniLmEmbedder> {
    static MODEL: OnceLock<Arc<MiniLmEmbedder>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            Arc::new(MiniLmEmbedder::from_config(&Config::default().embedding).expect("the model"))
        })
        .clone()
}

pub fn index_bytes(catalog: Catalog) -> Vec<u8> {
    Index::build(
        catalog,
        embedder().as_ref(),
        &Config::default().router(),
        &|_, _| {},
    )
    .unwrap()
    .to_bytes()
    .unwrap()
}

pub fn demo_catalog() -> Catalog {
    Catalog::load(&root().join("templates/demo")).unwrap()
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    use std::io::Write;
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sha256sum (coreutils)");
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let output = child.wait_with_output().unwrap();
    String::from_utf8(output.stdout).unwrap()[..64].to_owned()
}

pub async fn sdk(url: &str) -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(url)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_s3::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .load()
        .await
}
