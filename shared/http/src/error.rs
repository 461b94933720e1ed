//! One error type for the HTTP edge, mapped to a status and a JSON body in one place.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use switchyard_catalog::error::Error as CatalogError;
use switchyard_contract::ContractError;
use switchyard_core::ServiceError;

use crate::wire::{ErrorBody, ErrorDetail};

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A request the API refuses; the field at fault is named.
    #[error("{field}: {message}")]
    InvalidRequest { field: String, message: String },
    #[error("body: larger than {limit} bytes")]
    PayloadTooLarge { limit: usize },
    #[error("no endpoint {0}")]
    NotFound(String),
    #[error("{method} is not allowed on {path}")]
    MethodNotAllowed { method: String, path: String },
    #[error("the server is busy; retry in {retry_after_seconds} s")]
    Overloaded { retry_after_seconds: u64 },
    #[error("{0}")]
    Internal(String),
    #[error(transparent)]
    Service(#[from] ServiceError),
}

impl From<CatalogError> for ApiError {
    fn from(e: CatalogError) -> Self {
        ApiError::Service(e.into())
    }
}

impl ApiError {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError::InvalidRequest {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The status, the stable code and the field at fault.
    pub(crate) fn parts(&self) -> (StatusCode, &'static str, Option<String>) {
        match self {
            ApiError::InvalidRequest { field, .. } => (
                StatusCode::BAD_REQUEST,
                "invalid_request",
                Some(field.clone()),
            ),
            ApiError::PayloadTooLarge { .. } => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                Some("body".into()),
            ),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found", None),
            ApiError::MethodNotAllowed { .. } => {
                (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", None)
            }
            ApiError::Overloaded { .. } => (StatusCode::SERVICE_UNAVAILABLE, "overloaded", None),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal", None),
            ApiError::Service(e) => service_parts(e),
        }
    }
}

// The one table from the service's error (and the errors it gathers) to the status, the
// stable code and the field at fault. Whatever it does not name is a 500 `internal`.

fn service_parts(e: &ServiceError) -> (StatusCode, &'static str, Option<String>) {
    if let Some((field, _)) = e.invalid_field() {
        return (
            StatusCode::BAD_REQUEST,
            "invalid_request",
            Some(field.to_owned()),
        );
    }
    match e {
        ServiceError::UnknownRequest(_) => (
            StatusCode::NOT_FOUND,
            "unknown_request",
            Some("request_id".into()),
        ),
        ServiceError::WorkflowRunning { .. } => (
            StatusCode::CONFLICT,
            "workflow_running",
            Some("workflow_id".into()),
        ),
        ServiceError::Catalog(e) => catalog_parts(e),
        ServiceError::Contract(e) => contract_parts(e),
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal", None),
    }
}

fn catalog_parts(e: &CatalogError) -> (StatusCode, &'static str, Option<String>) {
    match e {
        CatalogError::UnknownDatasource(_) => (
            StatusCode::BAD_REQUEST,
            "unknown_datasource",
            Some("datasources".into()),
        ),
        CatalogError::Unauthenticated(_) => (StatusCode::UNAUTHORIZED, "unauthenticated", None),
        CatalogError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden", None),
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal", None),
    }
}

/// Also the status of an adapter failure a query answer reports.
pub(crate) fn contract_parts(e: &ContractError) -> (StatusCode, &'static str, Option<String>) {
    match e {
        ContractError::AdapterUnavailable { .. } => {
            (StatusCode::NOT_IMPLEMENTED, "adapter_unavailable", None)
        }
        ContractError::AdapterTimeout { .. } => {
            (StatusCode::GATEWAY_TIMEOUT, "adapter_timeout", None)
        }
        ContractError::AdapterFailed { .. } => (StatusCode::BAD_GATEWAY, "adapter_error", None),
        ContractError::Store { .. } => (StatusCode::SERVICE_UNAVAILABLE, "store_unavailable", None),
        ContractError::Catalog(e) => catalog_parts(e),
        ContractError::Rerank { .. } => (StatusCode::INTERNAL_SERVER_ERROR, "internal", None),
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code, field) = self.parts();
        let retry_after = match &self {
            ApiError::Overloaded {
                retry_after_seconds,
            }
            | ApiError::Service(ServiceError::WorkflowRunning {
                retry_after_seconds,
                ..
            }) => Some(*retry_after_seconds),
            _ => None,
        };
        if status.is_server_error() && retry_after.is_none() {
            tracing::error!(error = %self, "request failed");
        }
        let body = ErrorBody {
            error: ErrorDetail {
                code: code.into(),
                field,
                message: self.to_string(),
            },
        };
        let mut response = (status, Json(body)).into_response();
        if let Some(seconds) = retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, seconds.into());
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_running_workflow_is_a_conflict_to_retry_later() {
        let error = ApiError::from(ServiceError::WorkflowRunning {
            workflow_id: "wf-1".into(),
            retry_after_seconds: 1,
        });
        let response = error.into_response();
        assert_eq!(response.status(), StatusCode::CONFLICT);
        assert_eq!(response.headers()[axum::http::header::RETRY_AFTER], "1");
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"]["code"], "workflow_running");
        assert_eq!(body["error"]["field"], "workflow_id");
        assert!(body["error"]["message"].as_str().unwrap().contains("wf-1"));
    }
}
