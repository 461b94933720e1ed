//! The Model Context Protocol at `/mcp`, on the same app as `/v1` (so `serve` and the
//! router Lambda behind API Gateway both have it), with the official Rust SDK (`rmcp`):
//! streamable HTTP in its stateless form with JSON responses, since a Lambda holds no
//! stream between calls.
//!
//! Three tools: `ask` (route and execute, as `POST /v1/query`), `route` (the decision
//! only, as `POST /v1/route`) and `list_datasources` (what the caller may ask about). The
//! arguments of `ask` and `route` are the API's own `QueryRequest`, and their input schema
//! is its schema in the OpenAPI document, so the two cannot drift apart. The caller is
//! authorized before the protocol runs, as for `/v1/*`: an unknown caller gets a JSON-RPC
//! error with 401, not a tool list.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Map, Value};

use crate::error::ApiError;
use crate::render::Render;
use crate::wire::QueryRequest;
use crate::{question, Authorized, Shared};

/// Example questions listed per template by `list_datasources`.
const EXAMPLES_PER_TEMPLATE: usize = 3;

/// The `/mcp` service. Origin validation is on with an empty allow-list: a browser page
/// (which always sends `Origin`) cannot drive it through DNS rebinding, while agents and
/// SDK clients, which send none, can; the `Host` check is off because behind API Gateway
/// the host is the API's own domain, and every call is authorized like `/v1/*`.
pub(crate) fn service(shared: Shared) -> StreamableHttpService<Tools, LocalSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .disable_allowed_hosts()
        .enforce_origin_validation();
    StreamableHttpService::new(
        move || {
            Ok(Tools {
                service: shared.clone(),
            })
        },
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// Authorize the caller before the protocol runs, and hand the tools its access.
pub(crate) async fn authorize(
    State(shared): State<Shared>,
    request: Request,
    next: Next,
) -> Response {
    let (mut parts, body) = request.into_parts();
    match Authorized::from_request_parts(&mut parts, &shared).await {
        Ok(authorized) => {
            parts.extensions.insert(authorized);
            next.run(Request::from_parts(parts, body)).await
        }
        Err(error) => {
            let (status, code, _) = error.parts();
            let body = json!({
                "jsonrpc": "2.0",
                "id": null,
                "error": {"code": -32001, "message": error.to_string(), "data": {"code": code}},
            });
            (status, Json(body)).into_response()
        }
    }
}

#[derive(Clone)]
pub(crate) struct Tools {
    service: Shared,
}

impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("switchyard", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Switchyard routes a plain-language question to the one template of its \
                 datasources that fits and answers it. Call list_datasources to see what can \
                 be asked, then ask.",
            )
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let authorized = context
            .extensions
            .get::<Parts>()
            .and_then(|parts| parts.extensions.get::<Authorized>())
            .cloned()
            .ok_or_else(|| ErrorData::internal_error("the caller was not authorized", None))?;
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let result = match request.name.as_ref() {
            "ask" => self.ask(arguments, authorized).await,
            "route" => self.route(arguments, authorized).await,
            "list_datasources" => Ok(self.list_datasources(&authorized)),
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool `{other}` (tools: ask, route, list_datasources)"),
                    None,
                ))
            }
        };
        match result {
            Ok(result) => Ok(result.into()),
            // Bad arguments are the caller's to fix: a protocol error naming the field.
            Err(ApiError::InvalidRequest { field, message }) => {
                Err(invalid_params(&field, &message))
            }
            Err(ApiError::Service(error)) if error.invalid_field().is_some() => {
                let (field, message) = error.invalid_field().unwrap_or_default();
                Err(invalid_params(field, message))
            }
            // Anything else happened while answering: a tool result flagged as an error.
            Err(error) => {
                Ok(CallToolResult::error(vec![ContentBlock::text(error.to_string())]).into())
            }
        }
    }
}

impl Tools {
    async fn ask(
        &self,
        arguments: Value,
        authorized: Authorized,
    ) -> Result<CallToolResult, ApiError> {
        let body: QueryRequest = crate::extract::parse_value(arguments)?;
        let question = question(body, authorized.owner);
        let answer = self.service.query(&question, &authorized.access).await?;
        let (status, answer) = Render(self.service.router()).answer(question.session_id, answer);
        let text = answer.content().to_owned();
        let structured =
            serde_json::to_value(&answer).map_err(|e| ApiError::Internal(e.to_string()))?;
        let mut result = if StatusCode::from_u16(status).is_ok_and(|s| s.is_success()) {
            CallToolResult::success(vec![ContentBlock::text(text)])
        } else {
            CallToolResult::error(vec![ContentBlock::text(text)])
        };
        result.structured_content = Some(structured);
        Ok(result)
    }

    async fn route(
        &self,
        arguments: Value,
        authorized: Authorized,
    ) -> Result<CallToolResult, ApiError> {
        let body: QueryRequest = crate::extract::parse_value(arguments)?;
        let routed = self
            .service
            .route(&question(body, authorized.owner), &authorized.access)
            .await?;
        let render = Render(self.service.router());
        let mut report = render.route_report(&routed);
        report.orchestration = render.plan_report(&routed);
        let decision = &report.routing_decision;
        let text = format!(
            "{}: {} ({})",
            report.outcome.as_str(),
            decision
                .selected_template
                .as_deref()
                .unwrap_or("no template"),
            decision.reason
        );
        let structured =
            serde_json::to_value(&report).map_err(|e| ApiError::Internal(e.to_string()))?;
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(structured);
        Ok(result)
    }

    /// The datasources the caller may use, each with its templates and a few of their
    /// example questions.
    fn list_datasources(&self, authorized: &Authorized) -> CallToolResult {
        let catalog = &self.service.router().index().catalog;
        let allowed: Vec<_> = catalog
            .datasources
            .iter()
            .filter(|d| authorized.access.allows(d.name()))
            .collect();
        let datasources: Vec<Value> = allowed
            .iter()
            .map(|d| {
                let templates: Vec<Value> = d
                    .templates
                    .iter()
                    .map(|t| {
                        json!({
                            "id": t.id,
                            "description": t.description,
                            "examples": t.nl_examples.iter().take(EXAMPLES_PER_TEMPLATE).collect::<Vec<_>>(),
                        })
                    })
                    .collect();
                json!({
                    "name": d.name(),
                    "kind": d.spec.kind.as_str(),
                    "description": d.spec.description,
                    "templates": templates,
                })
            })
            .collect();
        let text = allowed
            .iter()
            .map(|d| format!("{}: {}", d.name(), d.spec.description))
            .collect::<Vec<_>>()
            .join("\n");
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(json!({ "datasources": datasources }));
        result
    }
}

/// The three tools; `ask` and `route` take the API's `QueryRequest`, its schema inlined
/// from the OpenAPI document.
fn tools() -> Vec<Tool> {
    let query = query_request_schema();
    vec![
        Tool::new(
            "ask",
            "Route a question to the best template of the datasources the caller may use and \
             execute it. Returns the answer's text, and as structured content the template, \
             confidence, rows or passages, and status (ok, needs_clarification with the \
             choices, no_match, acknowledged when a turn only thanked: nothing ran). Pass \
             session_id to follow up in a conversation.",
            query.clone(),
        ),
        Tool::new(
            "route",
            "The routing decision for a question without executing it: every candidate \
             template with its stage scores, the outcome and the selected template.",
            query,
        ),
        Tool::new(
            "list_datasources",
            "What the caller may ask about: each datasource with its description and its \
             templates, with a few example questions each.",
            Arc::new(
                json!({"type": "object", "properties": {}, "additionalProperties": false})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            ),
        ),
    ]
}

/// `QueryRequest`'s schema from the OpenAPI document, with every `$ref` inlined (a tool's
/// input schema stands alone).
fn query_request_schema() -> Arc<JsonObject> {
    let document = crate::openapi::document();
    let components = document["components"]["schemas"].clone();
    let schema = inline(&components["QueryRequest"], &components, 0);
    Arc::new(schema.as_object().cloned().unwrap_or_default())
}

fn inline(schema: &Value, components: &Value, depth: usize) -> Value {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get("$ref") {
                let name = reference.rsplit('/').next().unwrap_or_default();
                if depth < 8 {
                    return inline(&components[name], components, depth + 1);
                }
            }
            let inlined: Map<String, Value> = map
                .iter()
                .map(|(key, value)| (key.clone(), inline(value, components, depth)))
                .collect();
            Value::Object(inlined)
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| inline(v, components, depth)).collect())
        }
        other => other.clone(),
    }
}

/// Bad arguments, as the protocol's error naming the field.
fn invalid_params(field: &str, message: &str) -> ErrorData {
    ErrorData::invalid_params(format!("{field}: {message}"), Some(json!({"field": field})))
}
