//! A moto_server of this test's own: start, pause, resume, kill, restart; the region's
//! resources (bucket, index, tables) in it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
};
use switchyard_aws::index::IndexPublishing;
use switchyard_s3::S3IndexStore;

use crate::setup::sdk;

pub const BUCKET: &str = "faults-index";
pub const PREFIX: &str = "indexes";
pub const SESSIONS: &str = "sessions";
pub const FEEDBACK: &str = "feedback";
pub const RERANK_CACHE: &str = "rerank-cache";

/// `moto_server` on PATH (the project virtualenv's `bin/` is there under the scripts),
/// else in the virtualenv `infra/scripts/venv.sh` makes.
fn moto_binary() -> PathBuf {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("moto_server"))
            .find(|candidate| candidate.is_file())
    });
    on_path.unwrap_or_else(|| {
        let cache = std::env::var_os("SWITCHYARD_CACHE_DIR")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("switchyard"))
            })
            .unwrap_or_else(|| {
                PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/switchyard")
            });
        let candidate = cache.join("venv/bin/moto_server");
        assert!(
            candidate.is_file(),
            "moto_server is neither on PATH nor at {}: run ./infra/scripts/aws-tools.sh",
            candidate.display()
        );
        candidate
    })
}

/// A moto_server in its own process group on 127.0.0.1; killed (the whole group) on drop.
pub struct Moto {
    port: u16,
    pub url: String,
    child: Option<Child>,
    log: PathBuf,
}

impl Moto {
    pub async fn start(log_dir: &Path) -> Moto {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut moto = Moto {
            port,
            url: format!("http://127.0.0.1:{port}"),
            child: None,
            log: log_dir.join("moto.log"),
        };
        moto.spawn().await;
        moto
    }

    /// Start moto on this port and wait until DynamoDB answers.
    pub async fn spawn(&mut self) {
        use std::os::unix::process::CommandExt;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let child = Command::new(moto_binary())
            .args(["-H", "127.0.0.1", "-p", &self.port.to_string()])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("moto_server starts");
        self.child = Some(child);
        let probe = probe_client(&self.url).await;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if probe.list_tables().send().await.is_ok() {
                return;
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("moto_server exited ({status}); see {}", self.log.display());
            }
            assert!(
                Instant::now() < deadline,
                "moto_server not answering after 60 s; see {}",
                self.log.display()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn signal(&self, signal: &str) {
        if let Some(child) = &self.child {
            let status = Command::new("kill")
                .args([
                    format!("-{signal}"),
                    "--".into(),
                    format!("-{}", child.id()),
                ])
                .status()
                .unwrap();
            assert!(status.success(), "kill -{signal} moto_server");
        }
    }

    pub fn pause(&self) {
        self.signal("STOP");
    }

    pub fn resume(&self) {
        self.signal("CONT");
    }

    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A DynamoDB client that gives up fast: readiness probes.
pub async fn probe_client(url: &str) -> aws_sdk_dynamodb::Client {
    let config = aws_sdk_dynamodb::config::Builder::from(&sdk(url).await)
        .retry_config(RetryConfig::disabled())
        .timeout_config(
            TimeoutConfig::builder()
                .operation_timeout(Duration::from_secs(1))
                .build(),
        )
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

async fn create_table(dynamodb: &aws_sdk_dynamodb::Client, table: &str, key: &str) {
    dynamodb
        .create_table()
        .table_name(table)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name(key)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name(key)
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await
        .unwrap();
}

/// The region's resources, as a deployment (or its recovery) creates them: the bucket
/// with `index` published, the sessions, feedback and rerank cache tables.
pub async fn provision(s3: &aws_sdk_s3::Client, dynamodb: &aws_sdk_dynamodb::Client, index: &[u8]) {
    s3.create_bucket().bucket(BUCKET).send().await.unwrap();
    create_table(dynamodb, SESSIONS, "session_id").await;
    create_table(dynamodb, FEEDBACK, "request_id").await;
    create_table(dynamodb, RERANK_CACHE, "cache_key").await;
    S3IndexStore::new(s3.clone(), BUCKET, PREFIX)
        .push(index)
        .await
        .unwrap();
}
