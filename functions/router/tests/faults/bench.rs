//! The bench the faults act on: the moto of this test with the region's resources in it,
//! the Lambda proxy in front of `cargo lambda watch`, the two indexes; cold starts of the
//! router Lambda against them. How each fault is injected is in `inject`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicU8;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_lambda::primitives::Blob;
use serde_json::json;
use switchyard_contract::rerank::RerankProvider;
use switchyard_core::config::Config;
use switchyard_router::{app, cold_start, Clients, ColdStart, RouterService, Settings};
use switchyard_s3::IndexLocation;

use crate::fakes::{adapter_functions, start_lambda_proxy, LambdaProxy, ADAPTER_FUNCTION, HEALTHY};
use crate::load::Load;
use crate::moto::{provision, Moto, BUCKET, FEEDBACK, PREFIX, RERANK_CACHE, SESSIONS};
use crate::setup::{demo_catalog, index_bytes, sdk};

pub struct Region {
    pub s3: aws_sdk_s3::Client,
    pub dynamodb: aws_sdk_dynamodb::Client,
}

pub async fn region(moto: &Moto) -> Region {
    let config = sdk(&moto.url).await;
    let dynamodb = aws_sdk_dynamodb::config::Builder::from(&config)
        .timeout_config(
            TimeoutConfig::builder()
                .operation_timeout(Duration::from_secs(10))
                .build(),
        )
        .build();
    Region {
        s3: switchyard_s3::s3_client(&config),
        dynamodb: aws_sdk_dynamodb::Client::from_conf(dynamodb),
    }
}

fn settings() -> Settings {
    Settings {
        index: IndexLocation::S3 {
            bucket: BUCKET.into(),
            prefix: PREFIX.into(),
        },
        sessions_table: Some(SESSIONS.into()),
        rerank_cache_table: Some(RERANK_CACHE.into()),
        feedback_table: Some(FEEDBACK.into()),
        workflow_table: None,
        topics_table: None,
        templates: None,
    }
}

/// What the faults act on: the moto of this test, the region's resources in it, the
/// Lambda proxy's switch for `ev`, the two indexes; and the turns checked before the kill.
pub struct Bench {
    pub moto: Moto,
    pub admin: Region,
    proxy_url: String,
    pub ev_mode: Arc<AtomicU8>,
    pub index_a: Vec<u8>,
    pub index_b: Vec<u8>,
    /// When the turns saved so far were read back, just before the kill.
    pub cut: Instant,
    pub killed: Instant,
    pub checked_before_kill: usize,
    pub lost_before_kill: BTreeMap<usize, usize>,
}

impl Bench {
    /// The moto of this test (its log in `log_dir`) with the region provisioned, the
    /// adapter function warmed up, the Lambda proxy listening; and the load's clients
    /// pointed at a cold start of the router Lambda on index A.
    pub async fn start(lambda_url: &str, log_dir: &Path, requests: usize) -> (Bench, Load) {
        let moto = Moto::start(log_dir).await;

        // The indexes: the demo catalog (A), and the same without `policies` (B).
        let index_a = index_bytes(demo_catalog());
        let mut catalog_b = demo_catalog();
        catalog_b.datasources.retain(|d| d.name() != "policies");
        let index_b = index_bytes(catalog_b);
        let admin = region(&moto).await;
        provision(&admin.s3, &admin.dynamodb, &index_a).await;

        // The adapter function under cargo lambda watch answers before the clock starts (its
        // first invoke may build the binary).
        let upstream = aws_sdk_lambda::Client::new(&sdk(lambda_url).await);
        let warm_up = json!({"request_id": "warm-up", "datasource": "tools",
            "template_id": "calculator_percentage", "query": "What is 15% of 200?",
            "session_parameters": {}, "deadline_ms": 5000});
        tokio::time::timeout(
            Duration::from_secs(600),
            upstream
                .invoke()
                .function_name(ADAPTER_FUNCTION)
                .payload(Blob::new(warm_up.to_string()))
                .send(),
        )
        .await
        .expect("cargo lambda watch answers within 10 minutes")
        .expect("the adapter function answers");
        let ev_mode = Arc::new(AtomicU8::new(HEALTHY));
        let proxy_url = start_lambda_proxy(LambdaProxy {
            upstream,
            ev_mode: ev_mode.clone(),
            ev_failures: Arc::default(),
        })
        .await;
        let bench = Bench {
            moto,
            admin,
            proxy_url,
            ev_mode,
            index_a,
            index_b,
            cut: Instant::now(),
            killed: Instant::now(),
            checked_before_kill: 0,
            lost_before_kill: BTreeMap::new(),
        };

        let (service, report) = bench.cold_start(Config::default()).await.unwrap();
        assert_eq!(report.index_bytes, bench.index_a.len());
        let load = Load {
            target: Arc::new(RwLock::new(app(service))),
            replies: Arc::default(),
            done: Arc::default(),
            fault_over: Arc::default(),
            requests,
        };
        (bench, load)
    }

    /// A cold start of the router Lambda with the clients `main` builds (the SDK's
    /// defaults) on the emulators.
    pub async fn cold_start(
        &self,
        config: Config,
    ) -> Result<(RouterService, ColdStart), switchyard_router::ColdStartError> {
        let moto = sdk(&self.moto.url).await;
        let clients = Clients {
            s3: switchyard_s3::s3_client(&moto),
            dynamodb: aws_sdk_dynamodb::Client::new(&moto),
            lambda: aws_sdk_lambda::Client::new(&sdk(&self.proxy_url).await),
        };
        cold_start(&settings(), config, clients, adapter_functions).await
    }

    pub async fn refused_cold_start(&self) -> String {
        match self.cold_start(Config::default()).await {
            Ok(_) => panic!("a corrupt index must not load"),
            Err(e) => e.to_string(),
        }
    }

    /// An app whose reranker is the fake provider on `port`: every question is a close
    /// call (margin 5), and nothing is cached, so each asks the provider.
    pub async fn reranking_app(&self, port: u16) -> axum::Router {
        let mut config = Config::default();
        let reranking = &mut config.composite_retrieval.reranking;
        reranking.enabled = true;
        reranking.provider = Some(RerankProvider::Cohere);
        reranking.endpoint = Some(format!("http://127.0.0.1:{port}"));
        reranking.model = Some("rerank-fake".into());
        reranking.timeout_ms = 1000;
        reranking.margin = 5.0;
        config.rerank_cache.ttl_seconds = 0;
        let (service, _) = self.cold_start(config).await.unwrap();
        app(service)
    }
}
