//! Execution: handing a routed question to the adapter that owns its datasource.
//!
//! One contract for every transport: in-process locally, a Lambda `Invoke` on AWS.

use std::future::Future;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::params::extract;
use crate::template::{Catalog, DatasourceKind};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdapterRequest {
    pub request_id: String,
    pub datasource: String,
    pub template_id: String,
    pub query: String,
    #[serde(default)]
    pub session_parameters: Map<String, Value>,
    pub deadline_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdapterStatus {
    Ok,
    NeedsClarification,
    Error,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdapterResponse {
    pub status: AdapterStatus,
    pub content: String,
    #[serde(default)]
    pub data: Value,
    #[serde(default)]
    pub parameters: Map<String, Value>,
    /// Required parameters the question did not give, by name.
    #[serde(default)]
    pub missing: Vec<Value>,
    #[serde(default)]
    pub error: Option<String>,
    pub execution_time_ms: f64,
}

/// Runs a routed request on the datasource's adapter. Transport failures are errors
/// ([`Error::AdapterUnavailable`], [`Error::AdapterTimeout`], [`Error::AdapterFailed`]);
/// an adapter's own refusal is a response with status `error`.
pub trait AdapterInvoker: Send + Sync {
    fn invoke(
        &self,
        request: AdapterRequest,
    ) -> impl Future<Output = Result<AdapterResponse>> + Send;
}

/// The local invoker: answers `intent` datasources in-process (the matched intent and its
/// parameters; nothing is executed). Other kinds have no in-process adapter yet and are
/// refused with [`Error::AdapterUnavailable`], never a made-up result.
pub struct LocalInvoker {
    catalog: Catalog,
}

impl LocalInvoker {
    pub fn new(catalog: Catalog) -> Self {
        LocalInvoker { catalog }
    }

    fn answer(&self, request: &AdapterRequest) -> Result<AdapterResponse> {
        let start = Instant::now();
        let datasource = self
            .catalog
            .datasource(&request.datasource)
            .ok_or_else(|| Error::UnknownDatasource(request.datasource.clone()))?;
        if datasource.spec.kind != DatasourceKind::Intent {
            return Err(Error::AdapterUnavailable {
                datasource: request.datasource.clone(),
                kind: datasource.spec.kind.as_str().to_owned(),
            });
        }
        let template = datasource
            .templates
            .iter()
            .find(|t| t.id == request.template_id)
            .ok_or_else(|| Error::AdapterFailed {
                datasource: request.datasource.clone(),
                message: format!("unknown template `{}`", request.template_id),
            })?;
        let extraction = extract(template, &request.query, &request.session_parameters);
        let missing: Vec<Value> = extraction
            .missing
            .iter()
            .map(|m| serde_json::to_value(m).expect("serialisable"))
            .collect();
        let (status, content, error) = if let Some(bad) = extraction.invalid.first() {
            let message = format!("parameter `{}` = `{}`: {}", bad.name, bad.value, bad.reason);
            (AdapterStatus::Error, message.clone(), Some(message))
        } else if let Some(first) = extraction.missing.first() {
            let about = first
                .description
                .as_deref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default();
            (
                AdapterStatus::NeedsClarification,
                format!("Please give `{}`{about}.", first.name),
                None,
            )
        } else {
            (
                AdapterStatus::Ok,
                format!("Intent `{}`: {}", template.id, template.description),
                None,
            )
        };
        Ok(AdapterResponse {
            status,
            content,
            data: serde_json::json!({
                "intent": template.id,
                "datasource": datasource.spec.name,
                "description": template.description,
            }),
            parameters: extraction.parameters,
            missing,
            error,
            execution_time_ms: start.elapsed().as_secs_f64() * 1000.0,
        })
    }
}

impl AdapterInvoker for LocalInvoker {
    fn invoke(
        &self,
        request: AdapterRequest,
    ) -> impl Future<Output = Result<AdapterResponse>> + Send {
        let answer = self.answer(&request);
        async move { answer }
    }
}
