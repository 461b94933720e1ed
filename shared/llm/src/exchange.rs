//! The HTTP exchange every model call shares: one JSON POST, bounded in time and size.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue, ACCEPT};
use reqwest::{redirect, Client, Url};
use serde_json::Value;

use crate::error::{LlmError, Result};

/// The largest reply read: 1 MiB.
pub const MAX_RESPONSE_BYTES: usize = 1 << 20;

/// At most this many characters of a body go into an error.
const EXCERPT_CHARS: usize = 300;

/// One JSON API call: the full URL, a client built once (no redirects: a key must not
/// follow one to another host) and the timeout bounding each whole exchange.
#[derive(Debug, Clone)]
pub struct JsonEndpoint {
    url: Url,
    client: Client,
    timeout: Duration,
}

impl JsonEndpoint {
    /// `endpoint` (a base URL) joined with `path`; see [`join_url`].
    pub fn new(endpoint: &str, path: &str, timeout: Duration) -> Result<JsonEndpoint> {
        let url = join_url(endpoint, path).map_err(LlmError::Endpoint)?;
        let client = Client::builder()
            .redirect(redirect::Policy::none())
            .build()
            .map_err(|e| {
                LlmError::Config(format!("cannot build the HTTP client: {}", describe(&e)))
            })?;
        Ok(JsonEndpoint {
            url,
            client,
            timeout: timeout.max(Duration::from_millis(1)),
        })
    }

    pub fn url(&self) -> &Url {
        &self.url
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// POST `body` with `headers` within the timeout; gives the successful reply as JSON.
    /// `secrets` (the keys in `headers`) are redacted from every error.
    pub async fn post(
        &self,
        headers: HeaderMap,
        body: &Value,
        secrets: &[String],
    ) -> Result<Value> {
        let exchange = self.exchange(headers, body);
        let outcome = match tokio::time::timeout(self.timeout, exchange).await {
            Ok(outcome) => outcome,
            Err(_) => Err(LlmError::Timeout {
                ms: self.timeout.as_millis(),
            }),
        };
        outcome.map_err(|error| error.redacted(secrets))
    }

    async fn exchange(&self, headers: HeaderMap, body: &Value) -> Result<Value> {
        let url = self.url.to_string();
        let failed = |error: reqwest::Error| LlmError::Request {
            url: url.clone(),
            message: describe(&error),
        };
        tracing::debug!(url = %url, "model API request");
        let mut response = self
            .client
            .post(self.url.clone())
            .header(ACCEPT, HeaderValue::from_static("application/json"))
            .headers(headers)
            .json(body)
            .send()
            .await
            .map_err(failed)?;
        let status = response.status();
        let (bytes, cut) = read_capped(&mut response, MAX_RESPONSE_BYTES)
            .await
            .map_err(failed)?;
        if !status.is_success() {
            return Err(LlmError::Status {
                status,
                url,
                detail: error_detail(&bytes),
            });
        }
        if cut {
            return Err(LlmError::TooLarge {
                url,
                cap: MAX_RESPONSE_BYTES,
            });
        }
        serde_json::from_slice(&bytes).map_err(|e| LlmError::NotJson {
            url,
            message: e.to_string(),
            body: excerpt(&String::from_utf8_lossy(&bytes)),
        })
    }
}

/// What an error reply says: its `error.message` (OpenAI, Anthropic) or `message`
/// (Cohere) when it is JSON that has one, else an excerpt of the body.
fn error_detail(body: &[u8]) -> String {
    let message = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|reply| {
            reply
                .pointer("/error/message")
                .or_else(|| reply.get("message"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
    excerpt(&message.unwrap_or_else(|| String::from_utf8_lossy(body).into_owned()))
}

/// Read the body up to `cap` bytes; `true` when more arrived and was dropped.
pub async fn read_capped(
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

/// `endpoint` + `path` with exactly one slash between them; only http(s) with a host, and
/// no query or fragment.
pub fn join_url(endpoint: &str, path: &str) -> std::result::Result<Url, String> {
    let base = endpoint.trim().trim_end_matches('/');
    let url = Url::parse(&format!("{base}/{}", path.trim_start_matches('/')))
        .map_err(|e| format!("`{endpoint}` is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "`{endpoint}` must be http or https, found `{}`",
            url.scheme()
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("`{endpoint}` has no host"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(format!("`{endpoint}` must not have a query or fragment"));
    }
    Ok(url)
}

/// `Bearer <key>`, marked sensitive so it stays out of debug output.
pub fn bearer(key: &str) -> Result<HeaderValue> {
    sensitive(&format!("Bearer {key}"))
}

/// A header value holding a key, marked sensitive.
pub(crate) fn sensitive(text: &str) -> Result<HeaderValue> {
    let mut value = HeaderValue::from_str(text).map_err(|_| LlmError::KeyNotHeader)?;
    value.set_sensitive(true);
    Ok(value)
}

/// The start of `text` on one line, cut on a character boundary.
pub fn excerpt(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None if flat.is_empty() => "(empty body)".into(),
        None => flat,
    }
}

/// An error with its causes, on one line (client libraries hide the useful part in the
/// chain).
pub fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_endpoint_and_path_with_one_slash() {
        for endpoint in ["http://h:1/v1", "http://h:1/v1/", " http://h:1/v1// "] {
            let url = join_url(endpoint, "/chat/completions").unwrap();
            assert_eq!(url.as_str(), "http://h:1/v1/chat/completions");
        }
        assert_eq!(
            join_url("https://api.cohere.com", "/v1/rerank")
                .unwrap()
                .as_str(),
            "https://api.cohere.com/v1/rerank"
        );
    }

    #[test]
    fn refuses_other_schemes_and_bad_urls() {
        assert!(join_url("ftp://h/", "/v1/rerank")
            .unwrap_err()
            .contains("http or https"));
        assert!(join_url("not a url", "/v1/rerank").is_err());
        assert!(join_url("http://h/?a=1", "/v1/rerank").is_err());
    }

    #[test]
    fn excerpt_is_short_and_one_line() {
        let long = "é\n".repeat(1000);
        let cut = excerpt(&long);
        assert!(cut.chars().count() <= EXCERPT_CHARS + 1);
        assert!(!cut.contains('\n'));
        assert_eq!(excerpt("  "), "(empty body)");
    }

    #[test]
    fn error_detail_prefers_the_message_field() {
        assert_eq!(error_detail(br#"{"error": {"message": "down"}}"#), "down");
        assert_eq!(error_detail(br#"{"message": "bad model"}"#), "bad model");
        assert_eq!(error_detail(b"internal:\n crashed"), "internal: crashed");
    }

    #[test]
    fn keys_are_sensitive_header_values() {
        assert!(bearer("sk-1").unwrap().is_sensitive());
        assert!(matches!(bearer("bad\nkey"), Err(LlmError::KeyNotHeader)));
    }
}
