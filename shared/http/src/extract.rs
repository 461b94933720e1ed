//! What a request carries, checked on the way in: the JSON body (every problem names its
//! field) and the caller's identity (an `x-api-key` header, a JWT authorizer's claims).

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use lambda_http::request::RequestContext;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use switchyard_catalog::auth::Identity;

use crate::error::ApiError;

/// Largest request body accepted (a 2,000-character query fits many times over).
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// A JSON body of `T`, refused with the offending field named: an empty or oversized body,
/// bad JSON, not an object, an unknown field, a missing or mistyped one.
pub struct CheckedJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for CheckedJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, _: &S) -> Result<Self, ApiError> {
        let bytes = axum::body::to_bytes(request.into_body(), MAX_BODY_BYTES)
            .await
            .map_err(|_| ApiError::PayloadTooLarge {
                limit: MAX_BODY_BYTES,
            })?;
        parse(&bytes).map(CheckedJson)
    }
}

fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        // Name the operation's own first required field: what `{}` would be missing.
        let hint = match parse::<T>(b"{}") {
            Err(ApiError::InvalidRequest { field, .. }) if field != "body" => {
                format!(" with `{field}`")
            }
            _ => String::new(),
        };
        return Err(ApiError::invalid(
            "body",
            format!("is empty; send a JSON object{hint}"),
        ));
    }
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::invalid("body", format!("is not valid JSON: {e}")))?;
    parse_value(value)
}

/// A JSON value as `T`, refused with the offending field named (the MCP tools' arguments
/// go through here as `/v1` bodies do).
pub(crate) fn parse_value<T: DeserializeOwned>(value: Value) -> Result<T, ApiError> {
    if !value.is_object() {
        return Err(ApiError::invalid("body", "must be a JSON object"));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let message = e.inner().to_string();
        let path = e.path().to_string();
        // A missing field has no path of its own; serde names it in the message.
        let field = match message.strip_prefix("missing field `") {
            Some(rest) if path == "." => rest.split('`').next().unwrap_or("body").to_owned(),
            _ => path
                .split(['.', '['])
                .next()
                .filter(|f| !f.is_empty())
                .unwrap_or("body")
                .to_owned(),
        };
        let message = match message.strip_prefix("missing field") {
            Some(_) => "is required".to_owned(),
            None => message,
        };
        ApiError::invalid(field, message)
    })
}

/// The caller, as both transports see it: the `x-api-key` header, and on API Gateway the
/// claims its JWT authorizer verified (absent under `switchyard serve`).
pub struct Caller(pub Identity);

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let api_key = parts
            .headers
            .get("x-api-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let claims = match parts.extensions.get::<RequestContext>() {
            Some(RequestContext::ApiGatewayV2(context)) => context
                .authorizer
                .as_ref()
                .and_then(|a| a.jwt.as_ref())
                .map(|jwt| {
                    jwt.claims
                        .iter()
                        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                        .collect::<Map<String, Value>>()
                }),
            _ => None,
        };
        Ok(Caller(Identity { api_key, claims }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::QueryRequest;

    fn field_of(body: &str) -> String {
        match parse::<QueryRequest>(body.as_bytes()) {
            Err(ApiError::InvalidRequest { field, .. }) => field,
            other => panic!("{body}: {:?}", other.map(|q| q.query)),
        }
    }

    #[test]
    fn every_problem_names_its_field() {
        assert_eq!(field_of(""), "body");
        assert_eq!(field_of("{not json"), "body");
        assert_eq!(field_of("[1, 2]"), "body");
        assert_eq!(field_of("{}"), "query");
        assert_eq!(field_of(r#"{"query": 42}"#), "query");
        assert_eq!(field_of(r#"{"query": "hi", "limit": 3}"#), "limit");
        assert_eq!(
            field_of(r#"{"query": "hi", "session_id": 7}"#),
            "session_id"
        );
        assert_eq!(
            field_of(r#"{"query": "hi", "datasources": ["a", 3]}"#),
            "datasources"
        );
    }

    #[test]
    fn an_empty_body_names_the_operations_own_field() {
        let message = |result: Result<(), ApiError>| match result {
            Err(ApiError::InvalidRequest { field, message }) => format!("{field} {message}"),
            other => panic!("{other:?}"),
        };
        let query = parse::<QueryRequest>(b" ").map(|_| ());
        assert_eq!(
            message(query),
            "body is empty; send a JSON object with `query`"
        );
        let feedback = parse::<crate::wire::FeedbackRequest>(b"").map(|_| ());
        assert_eq!(
            message(feedback),
            "body is empty; send a JSON object with `request_id`"
        );
    }

    #[test]
    fn a_good_body_parses() {
        let q: QueryRequest = parse(br#"{"query": "hi", "datasources": ["hr"]}"#).unwrap();
        assert_eq!(
            (q.query.as_str(), q.datasources.unwrap()),
            ("hi", vec!["hr".to_owned()])
        );
    }
}
