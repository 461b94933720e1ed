//! Adapters through Lambda `Invoke`: the adapter request as the payload, the adapter
//! response back, within the datasource's deadline. One error per failure: no function
//! for the datasource (`AdapterUnavailable`), no answer in time (`AdapterTimeout`), the
//! function failed or answered something that is not an adapter response
//! (`AdapterFailed`, with the function's `errorType`/`errorMessage` when it gave them).
//! `intent` datasources need no adapter and are answered here.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_lambda::config::retry::RetryConfig;
use aws_sdk_lambda::primitives::Blob;
use serde_json::Value;
use switchyard_adapters::respond::{find, respond_intent};
use switchyard_catalog::template::{Catalog, DatasourceKind, Template};
use switchyard_catalog::BoxFuture;
use switchyard_contract::adapter::{AdapterInvoker, AdapterRequest, AdapterResponse};
use switchyard_contract::error::Result;
use switchyard_contract::ContractError;

use crate::error::AwsError;

/// Time added to a datasource's deadline for the invoke itself (network, an adapter's
/// cold start); the adapter enforces the deadline on its own work.
pub const INVOKE_GRACE: Duration = Duration::from_millis(3000);

pub struct LambdaInvoker {
    client: aws_sdk_lambda::Client,
    catalog: Catalog,
    /// Datasource → function name or ARN.
    functions: HashMap<String, String>,
}

impl LambdaInvoker {
    /// Function names from each datasource's `function_name`, overridden by the variable
    /// [`LambdaInvoker::function_variable`] names (looked up with `variable`).
    pub fn new(
        client: aws_sdk_lambda::Client,
        catalog: Catalog,
        variable: impl Fn(&str) -> Option<String>,
    ) -> Self {
        let functions = catalog
            .datasources
            .iter()
            .filter_map(|d| {
                let name = variable(&Self::function_variable(d.name()))
                    .or_else(|| d.spec.function_name.clone())?;
                Some((d.name().to_owned(), name))
            })
            .collect();
        LambdaInvoker {
            client,
            catalog,
            functions,
        }
    }

    /// `SWITCHYARD_ADAPTER_FUNCTION_<DATASOURCE>`, upper-cased, other characters as `_`.
    pub fn function_variable(datasource: &str) -> String {
        let name: String = datasource
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_uppercase()
                } else {
                    '_'
                }
            })
            .collect();
        format!("SWITCHYARD_ADAPTER_FUNCTION_{name}")
    }

    pub fn function(&self, datasource: &str) -> Option<&str> {
        self.functions.get(datasource).map(String::as_str)
    }

    /// One invoke. The SDK retries a failed invoke (throttling, a 5xx, a lost connection)
    /// only for a template that may run twice ([`Template::repeatable`]): a connection lost
    /// after the adapter ran would otherwise send a non-idempotent POST again.
    async fn call(
        &self,
        function: &str,
        template: &Template,
        request: &AdapterRequest,
    ) -> Result<AdapterResponse> {
        let datasource = request.datasource.clone();
        let failed = |message: String| ContractError::AdapterFailed {
            datasource: datasource.clone(),
            message: format!("function `{function}`: {message}"),
            source: None,
        };
        let payload = serde_json::to_vec(request).expect("a request always serialises");
        let deadline = Duration::from_millis(request.deadline_ms) + INVOKE_GRACE;
        let invoke = self
            .client
            .invoke()
            .function_name(function)
            .payload(Blob::new(payload));
        let sent = async {
            if template.repeatable() {
                invoke.send().await
            } else {
                let once =
                    aws_sdk_lambda::config::Config::builder().retry_config(RetryConfig::disabled());
                invoke.customize().config_override(once).send().await
            }
        };
        let output = match tokio::time::timeout(deadline, sent).await {
            Err(_) => {
                return Err(ContractError::AdapterTimeout {
                    datasource: datasource.clone(),
                    after_ms: deadline.as_millis() as u64,
                })
            }
            Ok(Err(e)) => {
                // Emulators (and some proxies) answer a failed function with a 5xx whose
                // body is the runtime's {errorType, errorMessage}.
                let body = e
                    .raw_response()
                    .and_then(|r| r.body().bytes())
                    .and_then(function_error_text);
                return Err(match body {
                    Some(body) => failed(body),
                    None => AwsError::Invoke {
                        datasource: datasource.clone(),
                        function: function.to_owned(),
                        source: Box::new(e),
                    }
                    .into(),
                });
            }
            Ok(Ok(output)) => output,
        };
        let bytes = output.payload.map(Blob::into_inner).unwrap_or_default();
        if let Some(kind) = output.function_error {
            let detail = function_error_text(&bytes).unwrap_or_else(|| kind.clone());
            return Err(failed(detail));
        }
        serde_json::from_slice::<AdapterResponse>(&bytes).map_err(|e| {
            failed(format!(
                "answered {} bytes that are not an adapter response: {e}",
                bytes.len()
            ))
        })
    }
}

/// `errorType: errorMessage` from a Lambda error payload.
fn function_error_text(bytes: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(bytes).ok()?;
    let message = value.get("errorMessage")?.as_str()?;
    Some(match value.get("errorType").and_then(Value::as_str) {
        Some(kind) => format!("{kind}: {message}"),
        None => message.to_owned(),
    })
}

impl AdapterInvoker for LambdaInvoker {
    fn invoke<'a>(&'a self, request: AdapterRequest) -> BoxFuture<'a, Result<AdapterResponse>> {
        Box::pin(async move {
            let (datasource, template) = find(&self.catalog, &request)?;
            if datasource.spec.kind == DatasourceKind::Intent {
                return Ok(respond_intent(datasource, template, &request).await);
            }
            let Some(function) = self.function(datasource.name()) else {
                return Err(ContractError::AdapterUnavailable {
                    datasource: request.datasource.clone(),
                    kind: datasource.spec.kind.as_str().to_owned(),
                });
            };
            self.call(function, template, &request).await
        })
    }
}
