//! The router Lambda. At cold start, in `main`: configuration, the index artifact (from S3
//! through its `current` pointer, or a file), the embedding model (the layer at
//! `SWITCHYARD_MODEL_DIR`), the session store and the adapter invoker are loaded and
//! checked once, then moved into the HTTP app that `switchyard serve` runs too.
//! Each request's metrics are written to stdout in CloudWatch Embedded Metric Format.
//!
//! Environment: `SWITCHYARD_INDEX_BUCKET` + `SWITCHYARD_INDEX_PREFIX` (or
//! `SWITCHYARD_INDEX`), `SWITCHYARD_MODEL_DIR`, `SWITCHYARD_SESSIONS_TABLE`,
//! `SWITCHYARD_RERANK_CACHE_TABLE`, `SWITCHYARD_FEEDBACK_TABLE`,
//! `SWITCHYARD_WORKFLOW_TABLE`, `SWITCHYARD_TOPICS_TABLE`, `SWITCHYARD_ADAPTER_FUNCTION_<DATASOURCE>`,
//! `SWITCHYARD__…` configuration.

use lambda_http::Request;
use switchyard_catalog::metric;
use switchyard_core::config::Config;
use switchyard_router::{app, cold_start, handle, Clients, Settings};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    tracing_subscriber::fmt()
        .json()
        .with_current_span(false)
        .without_time()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    // The crate's Lambda integration flushes each invocation's metrics to stdout when it
    // ends, tags them with the request id and counts the cold start.
    let metrics = metrics_cloudwatch_embedded::Builder::new()
        .cloudwatch_namespace(metric::NAMESPACE)
        .with_dimension("Service", "router")
        .with_lambda_request_id("RequestId")
        .lambda_cold_start_metric(metric::COLD_STARTS)
        .init()
        .map_err(|e| format!("installing the metrics recorder: {e}"))?;

    let settings = Settings::from_env(|name| std::env::var(name).ok())?;
    let config = Config::from_env(None)?;
    config.embedding.apply_threads();
    let sdk = switchyard_s3::sdk_config().await;
    let clients = Clients {
        s3: switchyard_s3::s3_client(&sdk),
        dynamodb: aws_sdk_dynamodb::Client::new(&sdk),
        lambda: aws_sdk_lambda::Client::new(&sdk),
    };
    let (service, report) = cold_start(&settings, config, clients, |name| std::env::var(name).ok())
        .await
        .map_err(|e| {
            tracing::error!(error = %e, ?settings, "cold start failed");
            e
        })?;
    tracing::info!(
        index = %report.index_origin,
        index_bytes = report.index_bytes,
        fetch_ms = report.fetch_ms,
        load_ms = report.load_ms,
        model_ms = report.model_ms,
        drift_check_ms = report.drift_check_ms,
        total_ms = report.total_ms,
        "cold start"
    );
    metrics::histogram!(metric::COLD_START_INDEX_LOAD_MS).record(report.fetch_ms + report.load_ms);

    let app = app(service);
    metrics_cloudwatch_embedded::lambda::handler::run_http(metrics, move |event: Request| {
        let app = app.clone();
        async move { Ok::<_, lambda_http::Error>(handle(app, event).await) }
    })
    .await
}
