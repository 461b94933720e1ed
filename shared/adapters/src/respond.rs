//! How every adapter answers: find the request's template, extract its parameters
//! (clarifying a missing one, refusing a bad one), then run. And the simplest adapter,
//! an `intent` datasource's, which runs nothing and answers the matched intent.

use std::future::Future;
use std::time::Instant;

use serde_json::{Map, Value};

use switchyard_catalog::error::Error;
use switchyard_catalog::template::{Catalog, Datasource, DatasourceKind, Template};
use switchyard_catalog::BoxFuture;
use switchyard_contract::adapter::{
    AdapterInvoker, AdapterOutcome, AdapterRequest, AdapterResponse,
};
use switchyard_contract::error::{ContractError, Result};
use switchyard_text::params::extract;

/// Answer `request` for `template`: extract its parameters; a bad value is `error` naming
/// it, a missing required one is `needs_clarification` naming it; otherwise `execute` runs
/// with the parameters and gives (content, data) or a plain error message.
pub async fn respond<F, Fut>(
    template: &Template,
    request: &AdapterRequest,
    execute: F,
) -> AdapterResponse
where
    F: FnOnce(Map<String, Value>) -> Fut,
    Fut: Future<Output = std::result::Result<(String, Value), String>>,
{
    let start = Instant::now();
    let extraction = extract(template, &request.query, &request.session_parameters);
    let mut response = AdapterResponse {
        outcome: AdapterOutcome::Ok,
        content: String::new(),
        data: Value::Null,
        parameters: extraction.parameters.clone(),
        missing: extraction
            .missing
            .iter()
            .map(|m| serde_json::to_value(m).expect("serialisable"))
            .collect(),
        execution_time_ms: 0.0,
    };
    let failure = if let Some(bad) = extraction.invalid.first() {
        Some(format!(
            "parameter `{}` = `{}`: {}",
            bad.name, bad.value, bad.reason
        ))
    } else if let Some(first) = extraction.missing.first() {
        let about = first
            .description
            .as_deref()
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        response.outcome = AdapterOutcome::NeedsClarification;
        response.content = format!("Please give `{}`{about}.", first.name);
        None
    } else {
        match execute(extraction.parameters.clone()).await {
            Ok((content, data)) => {
                response.content = content;
                response.data = data;
                None
            }
            Err(message) => Some(message),
        }
    };
    if let Some(message) = failure {
        response.content = message.clone();
        response.outcome = AdapterOutcome::Error(Some(message));
    }
    response.execution_time_ms = start.elapsed().as_secs_f64() * 1000.0;
    response
}

/// How an `intent` datasource answers `request` for `template`: its parameters are
/// extracted (and clarified) like any adapter's, then the matched intent is the answer.
/// Every invoker that answers intents in-process calls this.
pub async fn respond_intent(
    datasource: &Datasource,
    template: &Template,
    request: &AdapterRequest,
) -> AdapterResponse {
    let answer = intent_answer(datasource.name(), template);
    respond(template, request, |_| async move { Ok(answer) }).await
}

/// What an `intent` datasource answers: the matched intent; nothing is executed.
pub fn intent_answer(datasource: &str, template: &Template) -> (String, Value) {
    (
        format!("Intent `{}`: {}", template.id, template.description),
        serde_json::json!({
            "intent": template.id,
            "datasource": datasource,
            "description": template.description,
        }),
    )
}

/// Find a request's datasource and template in `catalog`.
pub fn find<'a>(
    catalog: &'a Catalog,
    request: &AdapterRequest,
) -> Result<(&'a Datasource, &'a Template)> {
    let datasource = catalog
        .datasource(&request.datasource)
        .ok_or_else(|| Error::UnknownDatasource(request.datasource.clone()))?;
    let template = datasource
        .templates
        .iter()
        .find(|t| t.id == request.template_id)
        .ok_or_else(|| ContractError::AdapterFailed {
            datasource: request.datasource.clone(),
            message: format!("unknown template `{}`", request.template_id),
            source: None,
        })?;
    Ok((datasource, template))
}

/// The intent-only invoker: answers `intent` datasources in-process and refuses every
/// other kind with [`ContractError::AdapterUnavailable`]. (The adapters crate answers more kinds.)
pub struct IntentInvoker {
    catalog: Catalog,
}

impl IntentInvoker {
    pub fn new(catalog: Catalog) -> Self {
        IntentInvoker { catalog }
    }

    async fn answer(&self, request: &AdapterRequest) -> Result<AdapterResponse> {
        let (datasource, template) = find(&self.catalog, request)?;
        if datasource.spec.kind != DatasourceKind::Intent {
            return Err(ContractError::AdapterUnavailable {
                datasource: request.datasource.clone(),
                kind: datasource.spec.kind.as_str().to_owned(),
            });
        }
        Ok(respond_intent(datasource, template, request).await)
    }
}

impl AdapterInvoker for IntentInvoker {
    fn invoke<'a>(&'a self, request: AdapterRequest) -> BoxFuture<'a, Result<AdapterResponse>> {
        Box::pin(async move { self.answer(&request).await })
    }
}
