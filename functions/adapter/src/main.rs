//! The adapter Lambda: one binary for every datasource, configured by environment. At cold
//! start it loads its datasource's templates (`SWITCHYARD_TEMPLATES` catalog folder,
//! `SWITCHYARD_DATASOURCE` name; unset, every datasource of the catalog, as under
//! `cargo lambda watch`), checks them (SQL read-only, HTTP allow-lists) and opens
//! the connection; then each invocation is the adapter contract:
//! `{request_id, datasource, template_id, query, session_parameters, deadline_ms}` in,
//! `{status, content, data, parameters, missing, error, execution_time_ms}` out.

use std::path::PathBuf;

use anyhow::Context;
use lambda_runtime::{service_fn, LambdaEvent};
use switchyard_adapters::local::LlmFeatures;
use switchyard_adapters::LocalAdapters;
use switchyard_core::config::Config;
use switchyard_core::invoker::{AdapterInvoker, AdapterRequest, AdapterResponse, AdapterStatus};
use switchyard_core::template::Catalog;

/// Answer one request; a request for another datasource, or a transport-level failure,
/// is an `error` answer naming it rather than a Lambda error, so the router can show it.
async fn handle<I: AdapterInvoker>(adapters: &I, request: AdapterRequest) -> AdapterResponse {
    match adapters.invoke(request).await {
        Ok(response) => response,
        Err(e) => AdapterResponse {
            status: AdapterStatus::Error,
            content: e.to_string(),
            data: serde_json::Value::Null,
            parameters: Default::default(),
            missing: Vec::new(),
            error: Some(e.to_string()),
            execution_time_ms: 0.0,
        },
    }
}

/// The catalog folder and this function's datasource, from the environment.
async fn load() -> anyhow::Result<LocalAdapters> {
    let templates = PathBuf::from(
        std::env::var_os("SWITCHYARD_TEMPLATES")
            .context("SWITCHYARD_TEMPLATES must name the catalog folder")?,
    );
    let mut catalog = Catalog::load(&templates)?;
    if let Ok(name) = std::env::var("SWITCHYARD_DATASOURCE") {
        catalog.datasources.retain(|d| d.spec.name == name);
        anyhow::ensure!(
            !catalog.datasources.is_empty(),
            "SWITCHYARD_DATASOURCE: no datasource `{name}` in {}",
            templates.display()
        );
    }
    switchyard_adapters::check_catalog(&catalog)?;
    let config = Config::from_env(None)?;
    let llm = LlmFeatures::from_config(&config.llm)?;
    Ok(LocalAdapters::open(catalog, Some(&templates))
        .await?
        .with_llm(llm))
}

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    tracing_subscriber::fmt()
        .json()
        .with_current_span(false)
        .without_time()
        .init();
    let adapters = std::sync::Arc::new(load().await.map_err(|e| {
        tracing::error!(error = %format!("{e:#}"), "cold start failed");
        e
    })?);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<AdapterRequest>| {
        let adapters = adapters.clone();
        async move { Ok::<_, lambda_runtime::Error>(handle(adapters.as_ref(), event.payload).await) }
    }))
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(datasource: &str, template_id: &str, query: &str) -> AdapterRequest {
        serde_json::from_value(serde_json::json!({
            "request_id": "r1",
            "datasource": datasource,
            "template_id": template_id,
            "query": query,
            "session_parameters": {},
            "deadline_ms": 2000,
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn answers_its_datasource_and_names_others() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo");
        let mut catalog = Catalog::load(&root).unwrap();
        catalog.datasources.retain(|d| d.spec.name == "hr");
        let adapters = LocalAdapters::open(catalog, Some(&root)).await.unwrap();

        let answer = handle(
            &adapters,
            request(
                "hr",
                "employees_count_by_department",
                "How many employees work in Engineering?",
            ),
        )
        .await;
        assert_eq!(answer.status, AdapterStatus::Ok, "{answer:?}");
        assert_eq!(answer.content, "14 employees work in Engineering.");

        let answer = handle(
            &adapters,
            request("hr", "employees_count_by_department", "How many employees?"),
        )
        .await;
        assert_eq!(answer.status, AdapterStatus::NeedsClarification);
        assert_eq!(answer.missing[0]["name"], "department");

        let answer = handle(
            &adapters,
            request("ev", "vehicles_count_by_make", "How many Teslas?"),
        )
        .await;
        assert_eq!(answer.status, AdapterStatus::Error);
        assert!(answer.error.unwrap().contains("`ev`"));
    }
}
