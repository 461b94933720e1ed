//! Making the call: the request a template makes with its parameters, sent with bounded
//! retries within the deadline, the body read up to the size cap.
//!
//! Only a request the server may receive twice is sent again: an idempotent method (RFC
//! 9110 §9.2.2), or a POST or PATCH whose template says `idempotent: true`, which then
//! carries one `Idempotency-Key` on every attempt. A failed connection sent nothing, so it
//! is retried whatever the method.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT};
use reqwest::{Method, StatusCode, Url};
use serde_json::{json, Map, Value};
use switchyard_catalog::template::Template;
use switchyard_llm::{read_capped, redact_json};
use tokio::time::{sleep, timeout_at, Instant};

use crate::error::Result;
use crate::http::hosts::{authority, check_scheme, refusal};
use crate::http::placeholders::{fill_json, fill_path, query_texts, whole_placeholder};
use crate::http::response::{graphql_data, graphql_errors, parse_body, Mapping};
use crate::http::secrets::{expand_env, redact_error};
use crate::http::{HttpDatasource, HttpResult};
use switchyard_catalog::error::describe;

/// Pauses before the retries of a 429, 5xx or connection failure (never past the deadline).
const RETRY_BACKOFF: [Duration; 2] = [Duration::from_millis(100), Duration::from_millis(200)];

/// The header a server deduplicates retried POSTs and PATCHes by (IETF httpapi draft).
const IDEMPOTENCY_KEY: &str = "idempotency-key";

impl HttpDatasource {
    /// Run an HTTP/JSON (`endpoint_template`) or GraphQL (`graphql_template`) template with
    /// complete parameters. The whole call, retries included, ends by `deadline` (or the
    /// datasource's `limits.timeout_ms`, whichever is shorter).
    /// `operation` names the request ([`AdapterRequest::operation`]): an idempotent POST's
    /// `Idempotency-Key` is derived from it, so a retried request sends the same one.
    ///
    /// [`AdapterRequest::operation`]: switchyard_contract::adapter::AdapterRequest::operation
    pub async fn call(
        &self,
        template: &Template,
        parameters: &Map<String, Value>,
        operation: &str,
        deadline: Duration,
    ) -> Result<HttpResult> {
        let deadline = deadline.min(self.timeout);
        let until = Instant::now() + deadline;
        let mut secrets = Vec::new();
        let outcome = match timeout_at(
            until,
            self.run(template, parameters, operation, until, &mut secrets),
        )
        .await
        {
            Ok(outcome) => outcome,
            Err(_) => Err(self.fail(
                template,
                format!(
                    "no complete answer within the deadline of {} ms",
                    deadline.as_millis()
                ),
            )),
        };
        match outcome {
            Ok(mut result) => {
                redact_json(&mut result.data, &secrets);
                Ok(result)
            }
            Err(error) => Err(redact_error(error, &secrets)),
        }
    }

    /// The URL a template requests with `parameters`, its query included: what a `web`
    /// datasource caches a page by.
    pub fn page_url(&self, template: &Template, parameters: &Map<String, Value>) -> Result<Url> {
        let request = self.prepare(template, parameters, "", &mut Vec::new())?;
        let mut url = request.url;
        if !request.query.is_empty() {
            url.query_pairs_mut().extend_pairs(&request.query);
        }
        Ok(url)
    }

    /// Fetch the page a `web` template names, as any template's request is made (hosts
    /// checked for the request and every redirect, retries, the size cap, the deadline) but
    /// asking for HTML unless the template sets `Accept`.
    pub async fn fetch_page(
        &self,
        template: &Template,
        parameters: &Map<String, Value>,
        deadline: Duration,
    ) -> Result<FetchedPage> {
        let deadline = deadline.min(self.timeout);
        let until = Instant::now() + deadline;
        let mut secrets = Vec::new();
        let fetched = async {
            // A GET: no Idempotency-Key, so no operation to name.
            let mut request = self.prepare(template, parameters, "", &mut secrets)?;
            let accept_set = template
                .headers
                .iter()
                .flatten()
                .any(|(key, _)| key.eq_ignore_ascii_case("accept"));
            if !accept_set {
                request
                    .headers
                    .insert(ACCEPT, HeaderValue::from_static(PAGE_ACCEPT));
            }
            let (_, body, truncated, url) = self.exchange(template, &request, until).await?;
            Ok(FetchedPage {
                url,
                body,
                truncated,
            })
        };
        match timeout_at(until, fetched).await {
            Ok(outcome) => outcome.map_err(|error| redact_error(error, &secrets)),
            Err(_) => Err(self.fail(
                template,
                format!(
                    "no complete page within the deadline of {} ms",
                    deadline.as_millis()
                ),
            )),
        }
    }

    async fn run(
        &self,
        template: &Template,
        parameters: &Map<String, Value>,
        operation: &str,
        until: Instant,
        secrets: &mut Vec<String>,
    ) -> Result<HttpResult> {
        let request = self.prepare(template, parameters, operation, secrets)?;
        let (status, body, cut, _) = self.exchange(template, &request, until).await?;
        let parsed = parse_body(&body, cut, request.graphql, self.max_response_bytes)
            .map_err(|m| self.fail(template, m))?;
        let data = if request.graphql {
            graphql_data(parsed).map_err(|m| self.fail(template, m))?
        } else {
            parsed
        };
        let data = match &template.response_mapping {
            Some(mapping) => {
                let mapping = Mapping::parse(mapping).map_err(|m| self.fail(template, m))?;
                mapping.apply(data).map_err(|m| self.fail(template, m))?
            }
            None => data,
        };
        let (data, capped) = match data {
            Value::Array(mut items) if items.len() > self.max_rows => {
                items.truncate(self.max_rows);
                (Value::Array(items), true)
            }
            other => (other, false),
        };
        Ok(HttpResult {
            status: status.as_u16(),
            data,
            truncated: cut || capped,
        })
    }

    /// Send `request`, retrying 429, 5xx and connection failures when it may be sent again;
    /// gives the successful response's status, body (cut at the size cap, and whether it
    /// was cut) and URL after redirects.
    async fn exchange(
        &self,
        template: &Template,
        request: &Prepared,
        until: Instant,
    ) -> Result<(StatusCode, Vec<u8>, bool, Url)> {
        let mut attempt = 0;
        loop {
            tracing::debug!(
                datasource = %self.name,
                template = %template.id,
                method = %request.method,
                host = request.url.host_str().unwrap_or_default(),
                path = request.url.path(),
                attempt = attempt + 1,
                "HTTP request"
            );
            let outcome = self.build(request).send().await;
            let transient = match &outcome {
                Ok(response) => {
                    let status = response.status();
                    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
                }
                Err(error) => error.is_connect(),
            };
            // A 5xx may come after the server acted (a gateway timing out on a booking
            // that went through); a connection that never opened carried no request.
            let repeatable =
                request.repeatable || matches!(&outcome, Err(error) if error.is_connect());
            if transient && repeatable && attempt < RETRY_BACKOFF.len() {
                let pause = RETRY_BACKOFF[attempt];
                if Instant::now() + pause < until {
                    let reason = match &outcome {
                        Ok(response) => response.status().to_string(),
                        Err(error) => describe(error),
                    };
                    tracing::warn!(datasource = %self.name, template = %template.id, %reason, "retrying HTTP request");
                    drop(outcome);
                    sleep(pause).await;
                    attempt += 1;
                    continue;
                }
            }
            let attempts = match attempt {
                0 if transient && !repeatable => format!(
                    " ({} not retried: the template does not declare `idempotent: true`)",
                    request.method
                ),
                0 => String::new(),
                n => format!(" (after {} attempts)", n + 1),
            };
            let mut response = outcome.map_err(|e| {
                self.fail(
                    template,
                    format!("request failed{attempts}: {}", describe(&e)),
                )
            })?;
            let status = response.status();
            if !status.is_success() {
                let mut message = format!("HTTP {status}{attempts}");
                if request.graphql && status.is_client_error() {
                    // GraphQL servers explain a refused query in the body's `errors`.
                    if let Ok((body, _)) = read_capped(&mut response, self.max_response_bytes).await
                    {
                        if let Some(errors) = serde_json::from_slice::<Value>(&body)
                            .ok()
                            .and_then(|v| graphql_errors(&v))
                        {
                            message.push_str(&format!(": GraphQL errors: {errors}"));
                        }
                    }
                }
                return Err(self.fail(template, message));
            }
            let url = response.url().clone();
            let (body, cut) = read_capped(&mut response, self.max_response_bytes)
                .await
                .map_err(|e| {
                    self.fail(template, format!("reading the response: {}", describe(&e)))
                })?;
            return Ok((status, body, cut, url));
        }
    }

    fn build(&self, request: &Prepared) -> reqwest::RequestBuilder {
        let client = match request.secret_headers {
            true => &self.client_with_secrets,
            false => &self.client,
        };
        let mut builder = client
            .request(request.method.clone(), request.url.clone())
            .headers(request.headers.clone());
        if !request.query.is_empty() {
            builder = builder.query(&request.query);
        }
        if let Some(body) = &request.body {
            builder = builder.json(body);
        }
        builder
    }

    /// The request a template makes with `parameters`; the secrets it uses go to `secrets`.
    fn prepare(
        &self,
        template: &Template,
        parameters: &Map<String, Value>,
        operation: &str,
        secrets: &mut Vec<String>,
    ) -> Result<Prepared> {
        let graphql = template.graphql_template.is_some();
        if !graphql && template.endpoint_template.is_none() {
            return Err(self.fail(
                template,
                "has no endpoint_template or graphql_template".into(),
            ));
        }
        let url = match &template.endpoint_template {
            Some(endpoint) => self.endpoint_url(template, &fill_path(endpoint, parameters)?)?,
            None => self.base_url.clone().ok_or_else(|| {
                self.fail(
                    template,
                    "needs connection.base_url (the GraphQL endpoint)".into(),
                )
            })?,
        };
        if !self.allows(&url) {
            return Err(self.fail(template, refusal(&self.hosts, &url)));
        }

        let method = if graphql {
            Method::POST
        } else {
            method(template).map_err(|m| self.fail(template, m))?
        };

        let query = query_pairs(template, parameters).map_err(|m| self.fail(template, m))?;
        let known = secrets.len();
        let mut headers = headers(template, secrets).map_err(|m| self.fail(template, m))?;
        let secret_headers = secrets.len() > known;
        let by_method = idempotent_method(&method);
        // One key per operation, so every attempt sends the same, and so does a retry of
        // the whole request; a key the template sets itself is the caller's and is kept.
        if !by_method && template.idempotent && !headers.contains_key(IDEMPOTENCY_KEY) {
            let key = idempotency_key(operation, &self.name, &template.id, parameters);
            headers.insert(IDEMPOTENCY_KEY, key);
        }

        let body = if let Some(query_text) = &template.graphql_template {
            let variables = match &template.variables {
                Some(variables) => fill_json(variables, parameters).unwrap_or(Value::Null),
                None => Value::Object(parameters.clone()),
            };
            Some(json!({"query": query_text, "variables": variables}))
        } else {
            template
                .body
                .as_ref()
                .map(|body| fill_json(body, parameters).unwrap_or(Value::Null))
        };

        Ok(Prepared {
            method,
            url,
            query,
            headers,
            body,
            graphql,
            repeatable: template.repeatable(),
            secret_headers,
        })
    }

    /// The URL of a filled endpoint: absolute, or relative to the base_url.
    fn endpoint_url(&self, template: &Template, endpoint: &str) -> Result<Url> {
        self.resolve(endpoint).map_err(|m| self.fail(template, m))
    }

    pub(super) fn resolve(&self, endpoint: &str) -> std::result::Result<Url, String> {
        let text = match authority(endpoint)? {
            Some(_) => endpoint.to_owned(),
            None => {
                let base = self.base_url.as_ref().ok_or_else(|| {
                    "a relative endpoint_template needs connection.base_url".to_owned()
                })?;
                format!(
                    "{}/{}",
                    base.as_str().trim_end_matches('/'),
                    endpoint.trim_start_matches('/')
                )
            }
        };
        let url =
            Url::parse(&text).map_err(|e| format!("endpoint_template does not parse: {e}"))?;
        check_scheme(&url).map_err(|m| format!("endpoint_template: {m}"))?;
        Ok(url)
    }
}

/// What a `web` datasource asks a server for: a page, else text.
const PAGE_ACCEPT: &str = "text/html,application/xhtml+xml;q=0.9,text/plain;q=0.8";

/// A fetched page: its URL after redirects and its body, cut at the size cap or not.
#[derive(Debug, Clone)]
pub struct FetchedPage {
    pub url: Url,
    pub body: Vec<u8>,
    pub truncated: bool,
}

/// One request, ready to send (and to send again on a retry).
struct Prepared {
    method: Method,
    url: Url,
    query: Vec<(String, String)>,
    headers: HeaderMap,
    body: Option<Value>,
    graphql: bool,
    /// The server may receive it more than once: retries are allowed.
    repeatable: bool,
    /// Its headers hold secrets: it follows no redirect to another origin.
    secret_headers: bool,
}

/// Idempotent by HTTP semantics (RFC 9110 §9.2.2): sending it twice does what once does.
fn idempotent_method(method: &Method) -> bool {
    [
        Method::GET,
        Method::HEAD,
        Method::OPTIONS,
        Method::TRACE,
        Method::PUT,
        Method::DELETE,
    ]
    .contains(method)
}

/// The `Idempotency-Key` of `operation` on a template with `parameters`: a SHA-256 of
/// them, written as a UUID (version 8, RFC 9562's custom one). The parameters are hashed
/// in key order, whatever order they were given in.
fn idempotency_key(
    operation: &str,
    datasource: &str,
    template_id: &str,
    parameters: &Map<String, Value>,
) -> HeaderValue {
    use sha2::{Digest, Sha256};
    let mut sorted: Vec<(&String, &Value)> = parameters.iter().collect();
    sorted.sort_by_key(|(name, _)| *name);
    let mut hash = Sha256::new();
    for part in [operation, datasource, template_id] {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    for (name, value) in sorted {
        hash.update(name.as_bytes());
        hash.update([0]);
        hash.update(value.to_string().as_bytes());
        hash.update([0]);
    }
    let mut bytes: [u8; 16] = hash.finalize()[..16].try_into().unwrap_or_default();
    bytes[6] = (bytes[6] & 0x0f) | 0x80; // version 8
    bytes[8] = (bytes[8] & 0x3f) | 0x80; // the RFC 9562 variant
    let hex = hex::encode(bytes);
    let text = format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    );
    HeaderValue::from_str(&text).expect("hex digits and dashes are a header value")
}

pub(super) fn method(template: &Template) -> std::result::Result<Method, String> {
    let text = template
        .http_method
        .as_deref()
        .unwrap_or("GET")
        .trim()
        .to_ascii_uppercase();
    match text.as_str() {
        "GET" => Ok(Method::GET),
        "POST" => Ok(Method::POST),
        "PUT" => Ok(Method::PUT),
        "PATCH" => Ok(Method::PATCH),
        "DELETE" => Ok(Method::DELETE),
        "HEAD" => Ok(Method::HEAD),
        other => Err(format!(
            "http_method `{other}` is not one of GET, POST, PUT, PATCH, DELETE, HEAD"
        )),
    }
}

/// The query a template sends: each `query_params` value, a `"{name}"` placeholder taking
/// the parameter's value (left out when it has none).
fn query_pairs(
    template: &Template,
    parameters: &Map<String, Value>,
) -> std::result::Result<Vec<(String, String)>, String> {
    let mut query = Vec::new();
    for (key, value) in template.query_params.iter().flatten() {
        let value = match whole_placeholder(value) {
            Some(name) => match parameters.get(name) {
                Some(value) => value,
                None => continue,
            },
            None => value,
        };
        let texts = query_texts(value)
            .ok_or_else(|| format!("query_params.{key}: an object cannot be a query value"))?;
        query.extend(texts.into_iter().map(|text| (key.clone(), text)));
    }
    Ok(query)
}

/// The headers a template sends, `${NAME}` secrets expanded (and their values added to
/// `secrets`, their headers marked sensitive).
fn headers(
    template: &Template,
    secrets: &mut Vec<String>,
) -> std::result::Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
    for (key, value) in template.headers.iter().flatten() {
        let name = HeaderName::from_bytes(key.as_bytes())
            .map_err(|_| format!("header `{key}`: not a header name"))?;
        let (text, used) = expand_env(value, |variable| std::env::var(variable).ok())
            .map_err(|problem| format!("header `{key}`: {problem}"))?;
        let secret = !used.is_empty();
        secrets.extend(used);
        let mut header = HeaderValue::from_str(&text)
            .map_err(|_| format!("header `{key}`: the value is not a valid header value"))?;
        header.set_sensitive(secret);
        headers.insert(name, header);
    }
    Ok(headers)
}
