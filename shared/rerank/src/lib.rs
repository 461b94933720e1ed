//! Reranker providers behind `switchyard_core::rerank::Reranker`: a Cohere-style rerank
//! API ([`cohere`]) and chat models as judges ([`chat`]: OpenAI-compatible servers such as
//! OpenAI, Ollama and vLLM, and Anthropic's messages API).
//!
//! [`from_config`] builds the configured provider once (one HTTP client, the API key read
//! from its variable at start). A provider fails with `Error::Rerank` naming the provider,
//! the HTTP status and a body excerpt, a score count mismatch, a timeout or an unparsable
//! judge answer; the caller keeps its routing when that happens.

mod chat;
mod cohere;

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::{Client, Url};
use serde::de::DeserializeOwned;
use serde_json::Value;
use switchyard_core::config::{RerankProvider, Reranking};
use switchyard_core::error::describe;
use switchyard_core::rerank::Reranker;
use switchyard_core::Error;

use crate::chat::{ChatJudge, Dialect};
use crate::cohere::Cohere;

/// The settings' place in the configuration, for error messages.
const FIELD: &str = "composite_retrieval.reranking";

/// At most this many characters of a response body go into an error.
const EXCERPT_CHARS: usize = 300;

/// The reranker the settings describe: `None` when reranking is disabled or no provider is
/// set. Fails when the endpoint, model or API key variable cannot be used.
pub fn from_config(settings: &Reranking) -> Result<Option<Arc<dyn Reranker>>, Error> {
    let Some(provider) = settings.provider.filter(|_| settings.enabled) else {
        return Ok(None);
    };
    let model = settings
        .model
        .as_deref()
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .ok_or_else(|| config_error("model", "is needed when a provider is set".into()))?;
    let endpoint = settings
        .endpoint
        .as_deref()
        .ok_or_else(|| config_error("endpoint", "is needed when a provider is set".into()))?;
    let api_key = match settings.api_key_env.as_deref() {
        Some(variable) => Some(read_key(variable)?),
        None => None,
    };
    if settings.batch_size == 0 {
        return Err(config_error("batch_size", "must be at least 1".into()));
    }

    let (name, path) = match provider {
        RerankProvider::Cohere => ("cohere", "/v1/rerank"),
        RerankProvider::Openai => ("openai", "/chat/completions"),
        RerankProvider::Anthropic => ("anthropic", "/v1/messages"),
    };
    let http = Http::new(
        format!("{name}:{model}"),
        endpoint,
        path,
        settings.timeout_ms,
    )?;
    let model = model.to_owned();
    let reranker: Arc<dyn Reranker> = match provider {
        RerankProvider::Cohere => Arc::new(Cohere::new(http, model, api_key)),
        RerankProvider::Openai => Arc::new(ChatJudge::new(
            http,
            model,
            api_key,
            Dialect::Openai,
            settings.batch_size,
        )),
        RerankProvider::Anthropic => Arc::new(ChatJudge::new(
            http,
            model,
            api_key,
            Dialect::Anthropic,
            settings.batch_size,
        )),
    };
    Ok(Some(reranker))
}

fn read_key(variable: &str) -> Result<String, Error> {
    let error = |message: String| Error::Config {
        origin: format!("environment variable {variable}"),
        field: format!("{FIELD}.api_key_env"),
        message,
    };
    match std::env::var(variable) {
        Ok(key) if !key.trim().is_empty() => Ok(key.trim().to_owned()),
        Ok(_) => Err(error(format!(
            "the variable {variable} holding the API key is empty"
        ))),
        Err(_) => Err(error(format!(
            "the variable {variable} holding the API key is not set"
        ))),
    }
}

fn config_error(field: &str, message: String) -> Error {
    Error::Config {
        origin: "reranking settings".into(),
        field: format!("{FIELD}.{field}"),
        message,
    }
}

/// One provider's HTTP side: the client (built once, with the request timeout), the full
/// URL of its API call and the reranker id that errors are reported under.
struct Http {
    id: String,
    client: Client,
    url: Url,
    timeout_ms: u64,
}

impl Http {
    fn new(id: String, endpoint: &str, path: &str, timeout_ms: u64) -> Result<Http, Error> {
        let url = join_url(endpoint, path).map_err(|m| config_error("endpoint", m))?;
        let client = Client::builder()
            .timeout(Duration::from_millis(timeout_ms))
            .build()
            .map_err(|e| Error::Rerank {
                reranker: id.clone(),
                message: format!("cannot build the HTTP client: {}", describe(&e)),
            })?;
        Ok(Http {
            id,
            client,
            url,
            timeout_ms,
        })
    }

    fn error(&self, message: String) -> Error {
        Error::Rerank {
            reranker: self.id.clone(),
            message,
        }
    }

    /// POST `body` as JSON and decode a successful answer as `T`.
    async fn post<T: DeserializeOwned>(
        &self,
        headers: HeaderMap,
        body: &Value,
    ) -> Result<T, Error> {
        let sent = self
            .client
            .post(self.url.clone())
            .headers(headers)
            .json(body)
            .send()
            .await
            .map_err(|e| self.request_error(&e))?;
        let status = sent.status();
        let text = sent.text().await.map_err(|e| self.request_error(&e))?;
        if !status.is_success() {
            return Err(self.error(format!(
                "HTTP {status} from {}: {}",
                self.url,
                excerpt(&text)
            )));
        }
        serde_json::from_str(&text).map_err(|e| {
            self.error(format!(
                "unexpected response from {}: {e}; body: {}",
                self.url,
                excerpt(&text)
            ))
        })
    }

    fn request_error(&self, error: &reqwest::Error) -> Error {
        if error.is_timeout() {
            self.error(format!("timed out after {} ms", self.timeout_ms))
        } else {
            self.error(format!(
                "request to {} failed: {}",
                self.url,
                describe(error)
            ))
        }
    }
}

/// `endpoint` + `path` with exactly one slash between them; only http(s) with a host.
fn join_url(endpoint: &str, path: &str) -> Result<Url, String> {
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

/// The start of `text` on one line, cut on a character boundary.
fn excerpt(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None if flat.is_empty() => "(empty body)".into(),
        None => flat,
    }
}

/// A provider's score as a value in [0, 1]; `None` for NaN or infinity.
fn unit_score(score: f64) -> Option<f32> {
    score.is_finite().then(|| score.clamp(0.0, 1.0) as f32)
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
    fn scores_are_clamped_and_non_finite_refused() {
        assert_eq!(unit_score(1.5), Some(1.0));
        assert_eq!(unit_score(-0.2), Some(0.0));
        assert_eq!(unit_score(0.25), Some(0.25));
        assert_eq!(unit_score(f64::NAN), None);
    }
}
