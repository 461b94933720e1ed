//! The OpenAPI 3.1 document, generated from the wire types and the handlers' annotations;
//! served at `GET /v1/openapi.json` and committed as `openapi.json` at the repository root
//! (`switchyard openapi > openapi.json`; a test fails when the two differ).

use axum::Json;
use utoipa::OpenApi;

use crate::wire;
use crate::wire::FeedbackNeedsAPart;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Switchyard",
        description = "Routes a plain-language question to the intent template that fits it best, across every datasource, and answers it.",
        license(name = "Apache-2.0")
    ),
    paths(
        crate::health,
        crate::stats,
        crate::route,
        crate::query,
        crate::feedback,
        crate::forget_session,
        crate::chat::completions,
        crate::chat::models,
        serve
    ),
    components(schemas(
        wire::QueryRequest,
        wire::Fusion,
        wire::ErrorBody,
        wire::Health,
        wire::Stats,
        wire::RouteReport,
        wire::QueryAnswer,
        wire::SessionDeleted,
        wire::FeedbackRequest,
        wire::FeedbackRecorded,
    )),
    modifiers(&FeedbackNeedsAPart)
)]
struct Document;

/// The document as a JSON value.
pub fn document() -> serde_json::Value {
    serde_json::to_value(Document::openapi()).expect("the OpenAPI document serializes")
}

/// The document as the committed file holds it: pretty JSON ending in a newline.
pub fn document_text() -> String {
    serde_json::to_string_pretty(&document()).expect("a JSON value serializes") + "\n"
}

/// This document.
#[utoipa::path(get, path = "/v1/openapi.json", responses((status = 200, description = "The OpenAPI 3.1 document")))]
pub(crate) async fn serve() -> Json<serde_json::Value> {
    Json(document())
}
