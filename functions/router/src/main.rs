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

use lambda_http::{service_fn, Request, RequestExt};
use switchyard_core::config::Config;
use switchyard_router::{app, cold_start, handle, Clients, Settings};
use tracing::Instrument;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    tracing_subscriber::fmt()
        .json()
        .with_current_span(false)
        .without_time()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let metrics = metrics_cloudwatch_embedded::Builder::new()
        .cloudwatch_namespace("Switchyard")
        .with_dimension("Service", "router")
        .init()
        .map_err(|e| format!("installing the metrics recorder: {e}"))?;

    let settings = Settings::from_env(|name| std::env::var(name).ok())?;
    let config = Config::from_env(None)?;
    config.embedding.apply_threads();
    let sdk = switchyard_aws::sdk_config().await;
    let clients = Clients {
        s3: switchyard_aws::s3_client(&sdk),
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
    metrics::counter!("ColdStarts").increment(1);
    metrics::histogram!("ColdStartIndexLoadMs").record(report.fetch_ms + report.load_ms);

    let app = app(service);
    lambda_http::run(service_fn(move |event: Request| {
        let app = app.clone();
        async move {
            let request_id = event.lambda_context_ref().map(|c| c.request_id.clone());
            let span =
                tracing::info_span!("request", request_id = request_id.as_deref().unwrap_or(""));
            let response = handle(app, event).instrument(span).await;
            let emf = metrics.set_property("RequestId", request_id.unwrap_or_default());
            if let Err(e) = emf.flush(std::io::stdout()) {
                tracing::warn!(error = %e, "metrics not written");
            }
            Ok::<_, lambda_http::Error>(response)
        }
    }))
    .await
}
