//! The one error type of the model client. Messages name the URL, the status or the
//! variable they are about; API keys never appear in them.

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// An endpoint that is not an http(s) URL with a host (or has a query or fragment).
    #[error("endpoint {0}")]
    Endpoint(String),

    /// A client that cannot be built: an empty model name, a TLS backend that fails.
    #[error("{0}")]
    Config(String),

    /// The variable that should hold the API key is not set.
    #[error("the API key variable {0} is not set (or not unicode)")]
    KeyNotSet(String),

    /// The API key cannot be sent as a header value.
    #[error("the API key is not a valid header value")]
    KeyNotHeader,

    /// No complete reply within the client's timeout.
    #[error("no reply within {ms} ms")]
    Timeout { ms: u128 },

    /// The request could not be sent, or the reply could not be read.
    #[error("request to {url} failed: {message}")]
    Request { url: String, message: String },

    /// The server answered with an error status; `detail` is its error message or an
    /// excerpt of its body.
    #[error("HTTP {status} from {url}: {detail}")]
    Status {
        status: reqwest::StatusCode,
        url: String,
        detail: String,
    },

    /// The reply is larger than the client reads.
    #[error("the reply from {url} exceeded {cap} bytes")]
    TooLarge { url: String, cap: usize },

    /// The reply is not JSON.
    #[error("unexpected response from {url}: the reply is not JSON ({message}); body: {body}")]
    NotJson {
        url: String,
        message: String,
        body: String,
    },
}

pub type Result<T, E = LlmError> = std::result::Result<T, E>;

impl LlmError {
    /// The error with every secret replaced, should a server echo a key back.
    pub fn redacted(mut self, secrets: &[String]) -> LlmError {
        match &mut self {
            LlmError::Endpoint(text)
            | LlmError::Config(text)
            | LlmError::Request { message: text, .. }
            | LlmError::Status { detail: text, .. } => crate::redact_text(text, secrets),
            LlmError::NotJson { message, body, .. } => {
                crate::redact_text(message, secrets);
                crate::redact_text(body, secrets);
            }
            LlmError::KeyNotSet(_)
            | LlmError::KeyNotHeader
            | LlmError::Timeout { .. }
            | LlmError::TooLarge { .. } => {}
        }
        self
    }
}
