//! The HTTP adapter: JSON APIs (`endpoint_template`) and GraphQL (`graphql_template`).
//!
//! Requests only go to the datasource's `connection.base_url` host and its `allowed_hosts`
//! (checked for every template when the datasource opens, again for every request and for
//! every redirect). Parameters fill the endpoint path as percent-encoded segments, the
//! query through URL encoding and the JSON body as typed values: a value can never change
//! the path, the host or the shape of the request. Header values take secrets from the
//! environment (`${NAME}`) at call time; secret values are redacted from errors and data.
//!
//! Connection settings: `base_url` (or `base_url_env`, the variable holding it) and
//! `max_response_bytes` (default 1 MiB). `limits.timeout_ms` caps the caller's deadline and
//! `limits.max_rows` caps a returned list.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT};
use reqwest::{redirect, Client, Method, StatusCode, Url};
use serde_json::{json, Map, Value};
use switchyard_core::template::{Datasource, Template};
use tokio::time::{sleep, timeout_at, Instant};

use crate::error::{describe, AdapterError, Result};

/// The response size cap when `connection.max_response_bytes` is not set: 1 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 1 << 20;

/// Pauses before the retries of a 429, 5xx or connection failure (never past the deadline).
const RETRY_BACKOFF: [Duration; 2] = [Duration::from_millis(100), Duration::from_millis(200)];

/// At most this many redirects, each to an allowed host.
const MAX_REDIRECTS: usize = 5;

/// What a secret value is replaced with in errors and returned data.
const REDACTED: &str = "[redacted]";

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
    max_response_bytes: usize,
    max_rows: usize,
    timeout: Duration,
}

impl HttpDatasource {
    /// Open an HTTP or GraphQL datasource: `connection.base_url` (or `connection.base_url_env`,
    /// the name of the variable holding it). Every template is checked here: its endpoint
    /// must be http(s) on the base_url's host or a host in `allowed_hosts`, placeholders may
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
        let mut base_deferred = false;
        let base_text = match (connection.get("base_url"), connection.get("base_url_env")) {
            (Some(url), _) => Some(url.clone()),
            (None, Some(variable)) => match std::env::var(variable) {
                Ok(url) => Some(url),
                Err(_) if at_build => {
                    base_deferred = true;
                    None
                }
                Err(_) => {
                    return Err(fail(format!(
                        "connection.base_url_env: the variable {variable} is not set"
                    )))
                }
            },
            (None, None) => None,
        };
        let base_url = match base_text {
            Some(text) => {
                let url = Url::parse(text.trim())
                    .map_err(|e| fail(format!("connection.base_url does not parse: {e}")))?;
                check_scheme(&url).map_err(|m| fail(format!("connection.base_url: {m}")))?;
                if url.host_str().is_none() {
                    return Err(fail("connection.base_url has no host".into()));
                }
                if url.query().is_some() || url.fragment().is_some() {
                    return Err(fail(
                        "connection.base_url must not have a query or fragment".into(),
                    ));
                }
                Some(url)
            }
            None => None,
        };

        let mut hosts = Vec::new();
        if let Some(base) = &base_url {
            hosts.push(HostRule {
                host: base.host_str().unwrap_or_default().to_ascii_lowercase(),
                port: base.port_or_known_default(),
            });
        }
        for entry in &datasource.spec.allowed_hosts {
            hosts.push(
                HostRule::parse(entry)
                    .ok_or_else(|| fail(format!("allowed_hosts: `{entry}` is not a host")))?,
            );
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
            client: client(Arc::clone(&hosts)).map_err(|e| fail(describe(&e)))?,
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

    /// Run an HTTP/JSON (`endpoint_template`) or GraphQL (`graphql_template`) template with
    /// complete parameters. The whole call, retries included, ends by `deadline` (or the
    /// datasource's `limits.timeout_ms`, whichever is shorter).
    pub async fn call(
        &self,
        template: &Template,
        parameters: &Map<String, Value>,
        deadline: Duration,
    ) -> Result<HttpResult> {
        let deadline = deadline.min(self.timeout);
        let until = Instant::now() + deadline;
        let mut secrets = Vec::new();
        let outcome =
            match timeout_at(until, self.run(template, parameters, until, &mut secrets)).await {
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
                redact_value(&mut result.data, &secrets);
                Ok(result)
            }
            Err(error) => Err(redact_error(error, &secrets)),
        }
    }

    async fn run(
        &self,
        template: &Template,
        parameters: &Map<String, Value>,
        until: Instant,
        secrets: &mut Vec<String>,
    ) -> Result<HttpResult> {
        let request = self.prepare(template, parameters, secrets)?;
        let (status, body, cut) = self.exchange(template, &request, until).await?;
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

    /// Send `request`, retrying 429, 5xx and connection failures; gives the successful
    /// response's status and body (cut at the size cap, and whether it was cut).
    async fn exchange(
        &self,
        template: &Template,
        request: &Prepared,
        until: Instant,
    ) -> Result<(StatusCode, Vec<u8>, bool)> {
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
            let retryable = match &outcome {
                Ok(response) => {
                    let status = response.status();
                    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
                }
                Err(error) => error.is_connect(),
            };
            if retryable && attempt < RETRY_BACKOFF.len() {
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
            let (body, cut) = read_capped(&mut response, self.max_response_bytes)
                .await
                .map_err(|e| {
                    self.fail(template, format!("reading the response: {}", describe(&e)))
                })?;
            return Ok((status, body, cut));
        }
    }

    fn build(&self, request: &Prepared) -> reqwest::RequestBuilder {
        let mut builder = self
            .client
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
            return Err(self.fail(
                template,
                format!(
                    "host `{}` is not allowed",
                    url.host_str().unwrap_or_default()
                ),
            ));
        }

        let method = if graphql {
            Method::POST
        } else {
            method(template).map_err(|m| self.fail(template, m))?
        };

        let mut query = Vec::new();
        for (key, value) in template.query_params.iter().flatten() {
            let value = match whole_placeholder(value) {
                Some(name) => match parameters.get(name) {
                    Some(value) => value,
                    None => continue,
                },
                None => value,
            };
            let texts = query_texts(value).ok_or_else(|| {
                self.fail(
                    template,
                    format!("query_params.{key}: an object cannot be a query value"),
                )
            })?;
            query.extend(texts.into_iter().map(|text| (key.clone(), text)));
        }

        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        for (key, value) in template.headers.iter().flatten() {
            let name = HeaderName::from_bytes(key.as_bytes())
                .map_err(|_| self.fail(template, format!("header `{key}`: not a header name")))?;
            let (text, used) = expand_env(value, |variable| std::env::var(variable).ok())
                .map_err(|problem| self.fail(template, format!("header `{key}`: {problem}")))?;
            let secret = !used.is_empty();
            secrets.extend(used);
            let mut header = HeaderValue::from_str(&text).map_err(|_| {
                self.fail(
                    template,
                    format!("header `{key}`: the value is not a valid header value"),
                )
            })?;
            header.set_sensitive(secret);
            headers.insert(name, header);
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
        })
    }

    /// The URL of a filled endpoint: absolute, or relative to the base_url.
    fn endpoint_url(&self, template: &Template, endpoint: &str) -> Result<Url> {
        self.resolve(endpoint).map_err(|m| self.fail(template, m))
    }

    fn resolve(&self, endpoint: &str) -> std::result::Result<Url, String> {
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
                return Err(format!(
                    "endpoint host `{}` is neither the base_url's host nor in allowed_hosts",
                    url.host_str().unwrap_or_default()
                ));
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

/// One request, ready to send (and to send again on a retry).
struct Prepared {
    method: Method,
    url: Url,
    query: Vec<(String, String)>,
    headers: HeaderMap,
    body: Option<Value>,
    graphql: bool,
}

/// One allowed host: a name, an IP, or `*.domain` (its subdomains), with an optional port.
#[derive(Debug, Clone)]
struct HostRule {
    host: String,
    port: Option<u16>,
}

impl HostRule {
    /// `host`, `host:port`, `[v6]:port`, `*.domain`, or a URL whose host and port are taken.
    fn parse(entry: &str) -> Option<HostRule> {
        let entry = entry.trim();
        if entry.contains("://") {
            let url = Url::parse(entry).ok()?;
            return Some(HostRule {
                host: url.host_str()?.to_ascii_lowercase(),
                port: url.port(),
            });
        }
        let (host, port) = if entry.starts_with('[') {
            let end = entry.find(']')?;
            let port = match &entry[end + 1..] {
                "" => None,
                rest => Some(rest.strip_prefix(':')?.parse().ok()?),
            };
            (&entry[..=end], port)
        } else {
            match entry.rsplit_once(':') {
                Some((host, port)) => (host, Some(port.parse().ok()?)),
                None => (entry, None),
            }
        };
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let name = host.strip_prefix("*.").unwrap_or(&host);
        let valid = !name.is_empty()
            && name.chars().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '[' | ']' | ':')
            });
        valid.then_some(HostRule { host, port })
    }

    fn matches(&self, host: &str, port: Option<u16>) -> bool {
        let host_matches = match self.host.strip_prefix("*.") {
            Some(domain) => host
                .strip_suffix(domain)
                .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
            None => self.host == host,
        };
        host_matches && self.port.is_none_or(|p| Some(p) == port)
    }
}

fn allowed(rules: &[HostRule], url: &Url) -> bool {
    if check_scheme(url).is_err() {
        return false;
    }
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let port = url.port_or_known_default();
    rules.iter().any(|rule| rule.matches(&host, port))
}

/// A client that follows at most a few redirects, each to an allowed host.
fn client(hosts: Arc<Vec<HostRule>>) -> reqwest::Result<Client> {
    let policy = redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else if allowed(&hosts, attempt.url()) {
            attempt.follow()
        } else {
            let host = attempt.url().host_str().unwrap_or_default().to_owned();
            attempt.error(format!("redirect to host `{host}`, which is not allowed"))
        }
    });
    Client::builder().redirect(policy).build()
}

fn check_scheme(url: &Url) -> std::result::Result<(), String> {
    match url.scheme() {
        "http" | "https" => Ok(()),
        other => Err(format!("only http and https are allowed, found `{other}`")),
    }
}

fn method(template: &Template) -> std::result::Result<Method, String> {
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

/// The authority (`host:port`) of an absolute endpoint, `None` for a relative one; an
/// endpoint with another scheme is refused.
fn authority(endpoint: &str) -> std::result::Result<Option<&str>, String> {
    let Some(position) = endpoint.find("://") else {
        return Ok(None);
    };
    let scheme = &endpoint[..position];
    let is_scheme = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !is_scheme {
        // "://" inside the path of a relative endpoint.
        return Ok(None);
    }
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return Err(format!(
            "endpoint_template: only http and https are allowed, found `{scheme}`"
        ));
    }
    let rest = &endpoint[position + 3..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    Ok(Some(&rest[..end]))
}

fn is_name(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The `{name}` placeholders of a text: byte range (braces included) and name.
fn placeholders(text: &str) -> Vec<(Range<usize>, &str)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(open) = text[from..].find('{').map(|i| from + i) {
        match text[open + 1..].find('}').map(|i| open + 1 + i) {
            Some(close) if is_name(&text[open + 1..close]) => {
                found.push((open..close + 1, &text[open + 1..close]));
                from = close + 1;
            }
            Some(_) => from = open + 1,
            None => break,
        }
    }
    found
}

/// `name` when `value` is exactly the string `"{name}"`.
fn whole_placeholder(value: &Value) -> Option<&str> {
    let inner = value.as_str()?.strip_prefix('{')?.strip_suffix('}')?;
    is_name(inner).then_some(inner)
}

/// Fill the endpoint's `{name}` placeholders, each value percent-encoded as one path
/// segment: `/`, `?`, `#` and `%` are encoded, and `.`/`..` or an empty value are refused.
fn fill_path(endpoint: &str, parameters: &Map<String, Value>) -> Result<String> {
    let mut filled = endpoint.to_owned();
    for (range, name) in placeholders(endpoint).into_iter().rev() {
        let refuse = |message: &str| AdapterError::Parameter {
            name: name.to_owned(),
            message: message.to_owned(),
        };
        let text = match parameters.get(name) {
            None | Some(Value::Null) => {
                return Err(refuse("required by the endpoint path, but has no value"))
            }
            Some(Value::String(text)) => text.clone(),
            Some(Value::Number(number)) => number.to_string(),
            Some(Value::Bool(flag)) => flag.to_string(),
            Some(_) => return Err(refuse("a list or object cannot be a path segment")),
        };
        if text.is_empty() || text == "." || text == ".." {
            return Err(refuse(&format!(
                "`{text}` cannot be a path segment (empty, `.` or `..`)"
            )));
        }
        filled.replace_range(range, &encode_segment(&text));
    }
    Ok(filled)
}

/// Percent-encode every byte but the unreserved characters (RFC 3986).
fn encode_segment(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// A query value as the texts to send (a list repeats the key; null sends nothing).
fn query_texts(value: &Value) -> Option<Vec<String>> {
    match value {
        Value::Null => Some(Vec::new()),
        Value::String(text) => Some(vec![text.clone()]),
        Value::Number(_) | Value::Bool(_) => Some(vec![value.to_string()]),
        Value::Array(items) => {
            let mut texts = Vec::new();
            for item in items {
                match item {
                    Value::Array(_) | Value::Object(_) => return None,
                    other => texts.extend(query_texts(other)?),
                }
            }
            Some(texts)
        }
        Value::Object(_) => None,
    }
}

/// A JSON template with every `"{name}"` string replaced by the parameter's JSON value;
/// a placeholder without a value is left out of its object (null in a list).
fn fill_json(value: &Value, parameters: &Map<String, Value>) -> Option<Value> {
    if let Some(name) = whole_placeholder(value) {
        return parameters.get(name).cloned();
    }
    Some(match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter_map(|(key, item)| Some((key.clone(), fill_json(item, parameters)?)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| fill_json(item, parameters).unwrap_or(Value::Null))
                .collect(),
        ),
        other => other.clone(),
    })
}

/// Replace each `${NAME}` in a header value with the variable's value; gives the text and
/// the values used. A missing variable is named, never its value.
fn expand_env(
    value: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> std::result::Result<(String, Vec<String>), String> {
    let mut text = String::with_capacity(value.len());
    let mut used = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        text.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| "`${` without a closing `}`".to_owned())?;
        let variable = &after[..end];
        if !is_name(variable) {
            return Err(format!(
                "`${{{variable}}}` is not an environment variable name"
            ));
        }
        let secret = lookup(variable)
            .ok_or_else(|| format!("the environment variable {variable} is not set"))?;
        text.push_str(&secret);
        if !secret.is_empty() {
            used.push(secret);
        }
        rest = &after[end + 1..];
    }
    text.push_str(rest);
    Ok((text, used))
}

/// Read the body up to `cap` bytes; `true` when more arrived and was dropped.
async fn read_capped(
    response: &mut reqwest::Response,
    cap: usize,
) -> reqwest::Result<(Vec<u8>, bool)> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = cap - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// The body as JSON. A cut body that is not complete JSON is an error; an uncut non-JSON
/// body is returned as text (GraphQL answers must be JSON).
fn parse_body(
    body: &[u8],
    cut: bool,
    graphql: bool,
    cap: usize,
) -> std::result::Result<Value, String> {
    let exceeded = || {
        format!("the response exceeded {cap} bytes (connection.max_response_bytes) and what arrived is not complete JSON")
    };
    if body.iter().all(u8::is_ascii_whitespace) {
        return match (cut, graphql) {
            (true, _) => Err(exceeded()),
            (false, true) => Err("the GraphQL response is empty".into()),
            (false, false) => Ok(Value::Null),
        };
    }
    match serde_json::from_slice(body) {
        Ok(value) => Ok(value),
        Err(_) if cut => Err(exceeded()),
        Err(e) if graphql => Err(format!("the GraphQL response is not JSON: {e}")),
        Err(_) => Ok(Value::String(String::from_utf8_lossy(body).into_owned())),
    }
}

/// The messages of a GraphQL response's non-empty `errors`, joined.
fn graphql_errors(response: &Value) -> Option<String> {
    let errors = response.get("errors")?.as_array()?;
    if errors.is_empty() {
        return None;
    }
    Some(
        errors
            .iter()
            .map(|error| match error.get("message").and_then(Value::as_str) {
                Some(message) => message.to_owned(),
                None => error.to_string(),
            })
            .collect::<Vec<_>>()
            .join("; "),
    )
}

/// A GraphQL response's `data`, or its `errors` as the failure.
fn graphql_data(response: Value) -> std::result::Result<Value, String> {
    if let Some(errors) = graphql_errors(&response) {
        return Err(format!("GraphQL errors: {errors}"));
    }
    match response {
        Value::Object(mut map) => match map.remove("data") {
            Some(Value::Null) | None => Err("the GraphQL response has no data".into()),
            Some(data) => Ok(data),
        },
        _ => Err("the GraphQL response is not an object".into()),
    }
}

/// `response_mapping`: `items_path` (a dot path to what is returned) and `fields` (a list of
/// dot paths, or an object of output name → dot path) picked from each item.
#[derive(Debug)]
struct Mapping {
    items_path: Option<String>,
    fields: Vec<(String, String)>,
}

impl Mapping {
    fn parse(value: &Value) -> std::result::Result<Mapping, String> {
        let object = value
            .as_object()
            .ok_or_else(|| "response_mapping must be an object".to_owned())?;
        let mut mapping = Mapping {
            items_path: None,
            fields: Vec::new(),
        };
        for (key, item) in object {
            match key.as_str() {
                "items_path" => {
                    let path = item.as_str().ok_or_else(|| {
                        "response_mapping.items_path must be a dot path".to_owned()
                    })?;
                    mapping.items_path = Some(path.to_owned());
                }
                "fields" => {
                    let bad = || {
                        "response_mapping.fields must be a list of paths or an object of name: path"
                            .to_owned()
                    };
                    mapping.fields = match item {
                        Value::Array(paths) => paths
                            .iter()
                            .map(|p| p.as_str().map(|p| (p.to_owned(), p.to_owned())))
                            .collect::<Option<_>>()
                            .ok_or_else(bad)?,
                        Value::Object(named) => named
                            .iter()
                            .map(|(name, p)| p.as_str().map(|p| (name.clone(), p.to_owned())))
                            .collect::<Option<_>>()
                            .ok_or_else(bad)?,
                        _ => return Err(bad()),
                    };
                    if mapping.fields.is_empty() {
                        return Err("response_mapping.fields must name at least one field".into());
                    }
                }
                other => {
                    return Err(format!(
                        "response_mapping.{other} is unknown (use items_path and fields)"
                    ))
                }
            }
        }
        Ok(mapping)
    }

    fn apply(&self, data: Value) -> std::result::Result<Value, String> {
        let picked = match &self.items_path {
            Some(path) => lookup(&data, path).cloned().ok_or_else(|| {
                format!("response_mapping.items_path `{path}` is not in the response")
            })?,
            None => data,
        };
        if self.fields.is_empty() {
            return Ok(picked);
        }
        Ok(match &picked {
            Value::Array(items) => Value::Array(items.iter().map(|i| self.project(i)).collect()),
            item => self.project(item),
        })
    }

    fn project(&self, item: &Value) -> Value {
        Value::Object(
            self.fields
                .iter()
                .map(|(name, path)| {
                    (
                        name.clone(),
                        lookup(item, path).cloned().unwrap_or(Value::Null),
                    )
                })
                .collect(),
        )
    }
}

/// The value at a dot path (`data.items`, `rows.0.name`); an empty path is the value itself.
fn lookup<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    if path.is_empty() {
        return Some(value);
    }
    path.split('.')
        .try_fold(value, |current, segment| match current {
            Value::Object(map) => map.get(segment),
            Value::Array(items) => items.get(segment.parse::<usize>().ok()?),
            _ => None,
        })
}

fn redact_text(text: &mut String, secrets: &[String]) {
    for secret in secrets {
        if text.contains(secret.as_str()) {
            *text = text.replace(secret.as_str(), REDACTED);
        }
    }
}

fn redact_value(value: &mut Value, secrets: &[String]) {
    if secrets.is_empty() {
        return;
    }
    match value {
        Value::String(text) => redact_text(text, secrets),
        Value::Array(items) => items.iter_mut().for_each(|i| redact_value(i, secrets)),
        Value::Object(map) => map.values_mut().for_each(|i| redact_value(i, secrets)),
        _ => {}
    }
}

fn redact_error(mut error: AdapterError, secrets: &[String]) -> AdapterError {
    if let AdapterError::Datasource { message, .. } | AdapterError::Parameter { message, .. } =
        &mut error
    {
        redact_text(message, secrets);
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_encoded_and_dot_segments_refused() {
        assert_eq!(encode_segment("a/b?c#d %"), "a%2Fb%3Fc%23d%20%25");
        assert_eq!(encode_segment("é"), "%C3%A9");
        let parameters = json!({"id": "..", "n": 7}).as_object().unwrap().clone();
        assert!(fill_path("/u/{id}", &parameters).is_err());
        assert_eq!(fill_path("/u/{n}/x{", &parameters).unwrap(), "/u/7/x{");
    }

    #[test]
    fn host_rules() {
        let rule = HostRule::parse("*.example.com").unwrap();
        assert!(rule.matches("api.example.com", Some(443)));
        assert!(!rule.matches("example.com", Some(443)));
        assert!(!rule.matches("evilexample.com", Some(443)));
        let rule = HostRule::parse("api.test:8080").unwrap();
        assert!(rule.matches("api.test", Some(8080)));
        assert!(!rule.matches("api.test", Some(80)));
        assert!(HostRule::parse("[::1]:80")
            .unwrap()
            .matches("[::1]", Some(80)));
        assert!(HostRule::parse("bad host").is_none());
    }

    #[test]
    fn env_expansion_names_the_variable() {
        let (text, used) =
            expand_env("Bearer ${T}", |v| (v == "T").then(|| "xyz".to_owned())).unwrap();
        assert_eq!(
            (text.as_str(), used),
            ("Bearer xyz", vec!["xyz".to_owned()])
        );
        let problem = expand_env("${MISSING_ONE}", |_| None).unwrap_err();
        assert_eq!(problem, "the environment variable MISSING_ONE is not set");
        assert!(expand_env("${oops", |_| None).is_err());
    }
}
