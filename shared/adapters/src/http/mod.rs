//! The HTTP adapter: JSON APIs (`endpoint_template`) and GraphQL (`graphql_template`).
//!
//! Requests only go to the datasource's `connection.base_url` origin and its `allowed_hosts`
//! (scheme, host and port: a bare entry means https; checked for every template when the
//! datasource opens, again for every request and for every redirect). Parameters fill the
//! endpoint path as percent-encoded segments, the query through URL encoding and the JSON
//! body as typed values: a value can never change the path, the host or the shape of the
//! request. Header values take secrets from the environment (`${NAME}`) at call time;
//! secret values are redacted from errors and data.
//!
//! Connection settings: `base_url` (or `base_url_env`, the variable holding it) and
//! `max_response_bytes` (default 1 MiB). `limits.timeout_ms` caps the caller's deadline and
//! `limits.max_rows` caps a returned list.

mod call;
mod hosts;
mod placeholders;
mod response;
mod secrets;

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::HeaderName;
use reqwest::{Client, Url};
use serde_json::{json, Map, Value};
use switchyard_catalog::template::{Datasource, Template};
use switchyard_catalog::BoxFuture;

use crate::adapter::{Adapter, Answer};
use crate::error::{AdapterError, Result};
use crate::render::{plain_text, render};
use call::method;
pub use call::FetchedPage;
use hosts::{allowed, authority, check_scheme, client, refusal, HostRule};
use placeholders::placeholders;
use response::Mapping;
use secrets::expand_env;
use switchyard_catalog::error::describe;

/// The response size cap when `connection.max_response_bytes` is not set: 1 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 1 << 20;

/// An answered request: the HTTP status, the (mapped) JSON data, and whether the response
/// size cap or the row cap cut it.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpResult {
    pub status: u16,
    pub data: Value,
    pub truncated: bool,
}

pub struct HttpDatasource {
    name: String,
    base_url: Option<Url>,
    /// The base URL comes from a variable this process does not have (an index build on a
    /// machine without the runtime environment): relative endpoints are checked at start.
    base_deferred: bool,
    hosts: Arc<Vec<HostRule>>,
    client: Client,
    /// For requests with secret headers: redirects within their origin only.
    client_with_secrets: Client,
    max_response_bytes: usize,
    max_rows: usize,
    timeout: Duration,
}

impl HttpDatasource {
    /// Open an HTTP or GraphQL datasource: `connection.base_url` (or `connection.base_url_env`,
    /// the name of the variable holding it). Every template is checked here: its endpoint
    /// must be on the base_url's origin or one `allowed_hosts` allows, placeholders may
    /// only fill the path, and its method, headers and `response_mapping` must be usable.
    pub fn open(datasource: &Datasource) -> Result<HttpDatasource> {
        Self::open_checked(datasource, false)
    }

    /// The checks an index build runs: as [`HttpDatasource::open`], but a `base_url_env`
    /// variable this machine lacks defers the checks of relative endpoints to the adapter's
    /// start instead of failing (absolute endpoints are still held to the allow-list).
    pub fn check(datasource: &Datasource) -> Result<()> {
        Self::open_checked(datasource, true).map(|_| ())
    }

    fn open_checked(datasource: &Datasource, at_build: bool) -> Result<HttpDatasource> {
        let name = datasource.spec.name.clone();
        let fail = |message: String| AdapterError::Datasource {
            datasource: name.clone(),
            message,
        };
        let connection = &datasource.spec.connection;
        let (base_url, base_deferred) = base_url(connection, at_build).map_err(fail)?;

        let mut hosts = Vec::new();
        // The base_url keeps its own scheme and port; a bare `allowed_hosts` entry means https.
        hosts.extend(base_url.as_ref().map(HostRule::origin));
        for entry in &datasource.spec.allowed_hosts {
            hosts.push(HostRule::parse(entry).map_err(fail)?);
        }

        let max_response_bytes = match connection.get("max_response_bytes") {
            Some(text) => text
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    fail(format!(
                        "connection.max_response_bytes must be a positive number of bytes, found `{text}`"
                    ))
                })?,
            None => DEFAULT_MAX_RESPONSE_BYTES,
        };

        let hosts = Arc::new(hosts);
        let source = HttpDatasource {
            name: name.clone(),
            base_url,
            base_deferred,
            client: client(Arc::clone(&hosts), false).map_err(|e| fail(describe(&e)))?,
            client_with_secrets: client(Arc::clone(&hosts), true)
                .map_err(|e| fail(describe(&e)))?,
            hosts,
            max_response_bytes,
            max_rows: datasource.spec.limits.max_rows as usize,
            timeout: Duration::from_millis(datasource.spec.limits.timeout_ms.max(1)),
        };
        for template in &datasource.templates {
            if template.endpoint_template.is_some() || template.graphql_template.is_some() {
                source
                    .check_template(template)
                    .map_err(|m| fail(format!("template `{}`: {m}", template.id)))?;
            }
        }
        Ok(source)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Open-time checks of one template; the message is about the template.
    fn check_template(&self, template: &Template) -> std::result::Result<(), String> {
        if let Some(endpoint) = &template.endpoint_template {
            if let Some(authority) = authority(endpoint)? {
                if authority.contains(['{', '}']) {
                    return Err(format!(
                        "endpoint_template: placeholders may only fill the path, not the host (`{authority}`)"
                    ));
                }
            }
            let mut probe = endpoint.clone();
            for (range, name) in placeholders(endpoint).into_iter().rev() {
                if !template.parameters.iter().any(|p| p.name == name) {
                    return Err(format!(
                        "endpoint_template uses `{{{name}}}`, which is not one of its parameters"
                    ));
                }
                probe.replace_range(range, "x");
            }
            let deferred = self.base_deferred && authority(endpoint)?.is_none();
            let url = if deferred {
                None
            } else {
                Some(self.resolve(&probe)?)
            };
            if let Some(url) = url.filter(|url| !self.allows(url)) {
                return Err(format!("endpoint {}", refusal(&self.hosts, &url)));
            }
        } else if self.base_url.is_none() && !self.base_deferred {
            return Err("graphql_template needs connection.base_url (the GraphQL endpoint)".into());
        }
        if template.graphql_template.is_none() {
            method(template)?;
        }
        for (key, value) in template.headers.iter().flatten() {
            HeaderName::from_bytes(key.as_bytes())
                .map_err(|_| format!("header `{key}`: not a header name"))?;
            expand_env(value, |_| Some(String::new()))
                .map_err(|problem| format!("header `{key}`: {problem}"))?;
        }
        if let Some(mapping) = &template.response_mapping {
            Mapping::parse(mapping)?;
        }
        Ok(())
    }

    fn allows(&self, url: &Url) -> bool {
        allowed(&self.hosts, url)
    }

    fn fail(&self, template: &Template, message: String) -> AdapterError {
        AdapterError::Datasource {
            datasource: self.name.clone(),
            message: format!("template `{}`: {message}", template.id),
        }
    }
}

/// `connection.base_url`, or the URL in the variable `connection.base_url_env` names;
/// `true` when that variable is missing at build time (the checks needing it wait).
fn base_url(
    connection: &std::collections::BTreeMap<String, String>,
    at_build: bool,
) -> std::result::Result<(Option<Url>, bool), String> {
    let text = match (connection.get("base_url"), connection.get("base_url_env")) {
        (Some(url), _) => url.clone(),
        (None, Some(variable)) => match std::env::var(variable) {
            Ok(url) => url,
            Err(_) if at_build => return Ok((None, true)),
            Err(_) => {
                return Err(format!(
                    "connection.base_url_env: the variable {variable} is not set"
                ))
            }
        },
        (None, None) => return Ok((None, false)),
    };
    let url =
        Url::parse(text.trim()).map_err(|e| format!("connection.base_url does not parse: {e}"))?;
    check_scheme(&url).map_err(|m| format!("connection.base_url: {m}"))?;
    if url.host_str().is_none() {
        return Err("connection.base_url has no host".into());
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err("connection.base_url must not have a query or fragment".into());
    }
    Ok((Some(url), false))
}

impl Adapter for HttpDatasource {
    fn execute<'a>(
        &'a self,
        template: &'a Template,
        parameters: &'a Map<String, Value>,
        request: &'a switchyard_contract::adapter::AdapterRequest,
        deadline: Duration,
    ) -> BoxFuture<'a, Result<Answer>> {
        Box::pin(async move {
            let result = self
                .call(template, parameters, request.operation(), deadline)
                .await?;
            answer(template, parameters, result)
        })
    }
}

/// A call's result as an answer: the `response_template` over the parameters plus
/// `result`, or the result as plain text.
fn answer(
    template: &Template,
    parameters: &Map<String, Value>,
    result: HttpResult,
) -> Result<Answer> {
    let content = match &template.response_template {
        Some(source) => {
            let mut context = parameters.clone();
            context.insert("result".into(), result.data.clone());
            render(&template.id, source, &Value::Object(context))?
        }
        None => plain_text(&result.data),
    };
    let data = json!({
        "status": result.status,
        "result": result.data,
        "truncated": result.truncated,
    });
    Ok((content, data))
}
