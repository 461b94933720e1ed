//! Switchyard's HTTP edge: one axum app for both transports. The router Lambda runs it with
//! `lambda_http::run`, `switchyard serve` with `axum::serve`. Requests and answers are the
//! typed structs of [`wire`]; every error maps to a status in [`error::ApiError`]; the
//! caller comes from [`extract::Caller`]; the OpenAPI document is generated from the same
//! types ([`openapi`]).

pub mod a2a;
pub mod admission;
pub mod chat;
pub mod error;
pub mod extract;
mod mcp;
pub mod openapi;
mod orchestration;
mod panics;
pub mod render;
pub mod wire;

use std::sync::Arc;
use std::time::Instant;

use axum::extract::rejection::PathRejection;
use axum::extract::Path;
use axum::extract::{FromRequestParts, Request, State};
use axum::handler::Handler;
use axum::http::request::Parts;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{on, MethodFilter, MethodRouter};
use axum::Json;
use switchyard_catalog::auth::{authorize, owner, Access};
use switchyard_catalog::metric;
use switchyard_core::service::{Question, Service};

pub use error::ApiError;
pub use extract::{Caller, CheckedJson, MAX_BODY_BYTES};
use render::Render;
use wire::{
    FeedbackRecorded, FeedbackRequest, Health, QueryAnswer, QueryRequest, RouteReport,
    SessionDeleted, Stats,
};

/// The app's state: the routing service, shared by every request.
pub type Shared = Arc<Service>;

/// The API: `POST /v1/query`, `POST /v1/route`, `GET /v1/stats`, `GET /v1/health`,
/// `GET /v1/openapi.json`, the OpenAI-compatible `POST /v1/chat/completions` and
/// `GET /v1/models` ([`chat`]), the MCP server at `/mcp` ([`mcp`]), and the A2A agent at
/// `POST /a2a` with its card at `/.well-known/agent-card.json` ([`a2a`]).
pub fn app(service: Shared) -> axum::Router {
    let admission = admission::Admission::new(&service.config().server);
    // MCP at /mcp: the caller is authorized before the protocol runs.
    let mcp = axum::Router::new()
        .nest_service(MCP_PATH, mcp::service(service.clone()))
        .layer(axum::middleware::from_fn_with_state(
            service.clone(),
            mcp::authorize,
        ));
    let mut router = axum::Router::new();
    for Endpoint { path, handler, .. } in endpoints() {
        router = router.route(path, handler);
    }
    router
        .merge(mcp)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn(record_latency))
        .layer(axum::middleware::from_fn_with_state(
            admission,
            admission::admit,
        ))
        // Outermost: a panic anywhere in a request answers that request 500.
        .layer(axum::middleware::from_fn(panics::catch))
        .with_state(service)
}

/// Where the MCP server answers (every method: POST for calls, GET and DELETE for its
/// sessions).
pub const MCP_PATH: &str = "/mcp";

/// One route of the app: its path, its method and what answers it.
pub(crate) struct Endpoint {
    pub path: &'static str,
    pub method: Method,
    pub handler: MethodRouter<Shared>,
}

impl Endpoint {
    pub(crate) fn new<H, T>(path: &'static str, method: Method, handler: H) -> Endpoint
    where
        H: Handler<T, Shared>,
        T: 'static,
    {
        let filter = MethodFilter::try_from(method.clone()).expect("a method axum can route");
        Endpoint {
            path,
            method,
            handler: on(filter, handler),
        }
    }
}

/// Every route `app` serves, each once: the one list the app is built from, so what the
/// deployed stack must reach ([`served`]) cannot drift from what the app answers.
fn endpoints() -> Vec<Endpoint> {
    let mut endpoints = vec![
        Endpoint::new("/v1/health", Method::GET, health),
        Endpoint::new("/v1/stats", Method::GET, stats),
        Endpoint::new("/v1/route", Method::POST, route),
        Endpoint::new("/v1/query", Method::POST, query),
        Endpoint::new("/v1/feedback", Method::POST, feedback),
        Endpoint::new("/v1/sessions/{session_id}", Method::DELETE, forget_session),
        Endpoint::new("/v1/chat/completions", Method::POST, chat::completions),
        Endpoint::new("/v1/models", Method::GET, chat::models),
        Endpoint::new("/v1/openapi.json", Method::GET, openapi::serve),
    ];
    endpoints.extend(a2a::endpoints());
    endpoints
}

/// What the app answers, as (path, method); `None` for a path that takes every method
/// ([`MCP_PATH`]). The router function's API events must reach each of them
/// (`functions/router/tests/template.rs`).
pub fn served() -> Vec<(&'static str, Option<Method>)> {
    let mut served: Vec<_> = endpoints()
        .into_iter()
        .map(|e| (e.path, Some(e.method)))
        .collect();
    served.push((MCP_PATH, None));
    served
}

/// What the caller may use, from its identity and the `auth` configuration: 401 for an
/// unknown caller, 403 for one without datasources. Runs before the body is read. The
/// owner scopes the caller's session and workflow ids (`auth::owner`).
#[derive(Clone)]
pub struct Authorized {
    pub access: Access,
    pub owner: String,
}

impl FromRequestParts<Shared> for Authorized {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, service: &Shared) -> Result<Self, ApiError> {
        let Caller(identity) = Caller::from_request_parts(parts, service)
            .await
            .unwrap_or_else(|never| match never {});
        let config = &service.config().auth;
        Ok(Authorized {
            access: authorize(config, &identity)?,
            owner: owner(config, &identity),
        })
    }
}

fn question(body: QueryRequest, owner: String) -> Question {
    Question {
        owner,
        query: body.query,
        session_id: body.session_id,
        datasources: body.datasources,
        workflow_id: body.workflow_id,
        fusion: body.fusion,
        filters: body.filters.unwrap_or_default(),
        assistant: body.assistant,
        // The caller's text; the same text as the session's last answer is known as ours.
        assistant_is_ours: false,
    }
}

/// Open to everyone (load balancers): it tells nothing about templates.
#[utoipa::path(get, path = "/v1/health", responses(
    (status = 200, body = Health),
    (status = 503, body = wire::ErrorBody, description = "overloaded: retry after the Retry-After header's seconds"),
))]
async fn health(State(service): State<Shared>) -> Json<Health> {
    Json(Render(service.router()).health())
}

/// Templates per datasource and the configuration in force, for the caller's datasources.
#[utoipa::path(get, path = "/v1/stats", responses(
    (status = 200, body = Stats),
    (status = 401, body = wire::ErrorBody),
    (status = 403, body = wire::ErrorBody),
    (status = 503, body = wire::ErrorBody, description = "overloaded: retry after the Retry-After header's seconds"),
))]
async fn stats(
    State(service): State<Shared>,
    Authorized { access, .. }: Authorized,
) -> Json<Stats> {
    let rates = service.transition_rates();
    let config = &service.config().sessions.transitions;
    Json(Render(service.router()).stats(&access, (&rates, config)))
}

/// Route only: every match with its stage scores, the decision and the configuration.
#[utoipa::path(post, path = "/v1/route", request_body = QueryRequest, responses(
    (status = 200, body = RouteReport),
    (status = 400, body = wire::ErrorBody),
    (status = 401, body = wire::ErrorBody),
    (status = 403, body = wire::ErrorBody),
    (status = 413, body = wire::ErrorBody),
    (status = 503, body = wire::ErrorBody, description = "overloaded: retry after the Retry-After header's seconds"),
))]
async fn route(
    State(service): State<Shared>,
    Authorized { access, owner }: Authorized,
    CheckedJson(body): CheckedJson<QueryRequest>,
) -> Result<Json<RouteReport>, ApiError> {
    let routed = service.route(&question(body, owner), &access).await?;
    let render = Render(service.router());
    let mut report = render.route_report(&routed);
    report.orchestration = render.plan_report(&routed);
    Ok(Json(report))
}

/// Route and execute on the chosen datasource's adapter.
#[utoipa::path(post, path = "/v1/query", request_body = QueryRequest, responses(
    (status = 200, body = QueryAnswer),
    (status = 400, body = wire::ErrorBody),
    (status = 401, body = wire::ErrorBody),
    (status = 403, body = wire::ErrorBody),
    (status = 409, body = wire::ErrorBody, description = "workflow_running: another request is running this workflow_id; retry after the Retry-After header's seconds"),
    (status = 413, body = wire::ErrorBody),
    (status = 501, description = "The datasource's kind has no adapter here", body = QueryAnswer),
    (status = 502, description = "The adapter failed", body = QueryAnswer),
    (status = 504, description = "The adapter timed out", body = QueryAnswer),
    (status = 503, body = wire::ErrorBody, description = "overloaded: retry after the Retry-After header's seconds"),
))]
async fn query(
    State(service): State<Shared>,
    Authorized { access, owner }: Authorized,
    CheckedJson(body): CheckedJson<QueryRequest>,
) -> Result<(StatusCode, Json<QueryAnswer>), ApiError> {
    let question = question(body, owner);
    let answer = service.query(&question, &access).await?;
    let (status, answer) = Render(service.router()).answer(question.session_id, answer);
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    Ok((status, Json(answer)))
}

/// Judge an earlier answer; the reward is stored with its routing decision for
/// `switchyard tune`.
///
/// Only the caller that got the answer may judge it (the caller a session belongs to: the
/// token's subject or principal, or the API key's principal; with `auth.required` off,
/// everyone is one caller).
#[utoipa::path(post, path = "/v1/feedback", request_body = FeedbackRequest, responses(
    (status = 200, body = FeedbackRecorded),
    (status = 400, body = wire::ErrorBody),
    (status = 401, body = wire::ErrorBody),
    (status = 403, body = wire::ErrorBody),
    (status = 404, description = "No answer with that request_id is kept for this caller: unknown, expired, or another caller's (answered alike, so an id reveals nothing of other callers' answers)", body = wire::ErrorBody),
    (status = 413, body = wire::ErrorBody),
    (status = 503, description = "The feedback store failed, or overloaded (with Retry-After)", body = wire::ErrorBody),
))]
async fn feedback(
    State(service): State<Shared>,
    Authorized { owner, .. }: Authorized,
    CheckedJson(body): CheckedJson<FeedbackRequest>,
) -> Result<Json<FeedbackRecorded>, ApiError> {
    let feedback = switchyard_core::feedback::Feedback {
        user_satisfaction: body.user_satisfaction,
        agent_success: body.agent_success,
        search_quality: body.search_quality,
        expected_template: body.expected_template,
    };
    let record = service.feedback(&owner, &body.request_id, feedback).await?;
    let decision = record.decision;
    Ok(Json(FeedbackRecorded {
        request_id: decision.request_id,
        reward: record.reward.unwrap_or(0.0),
        datasource: decision.datasource,
        template_id: decision.template_id,
        outcome: decision.outcome,
        confidence: decision.confidence,
    }))
}

/// Forget a session: its turns, parameters and question texts.
///
/// The A2A tasks whose `contextId` is the session go with it (their messages, answers and
/// split questions' checkpoints).
#[utoipa::path(delete, path = "/v1/sessions/{session_id}",
    params(("session_id" = String, Path, description = "The conversation id, 1 to 128 characters", min_length = 1, max_length = 128)),
    responses(
        (status = 200, body = SessionDeleted),
        (status = 400, body = wire::ErrorBody),
        (status = 401, body = wire::ErrorBody),
        (status = 403, body = wire::ErrorBody),
        (status = 503, description = "The session or task store failed, or overloaded (with Retry-After)", body = wire::ErrorBody),
))]
async fn forget_session(
    State(service): State<Shared>,
    Authorized { owner, .. }: Authorized,
    session_id: Result<Path<String>, PathRejection>,
) -> Result<Json<SessionDeleted>, ApiError> {
    // axum's own rejection is plain text; the API's errors are JSON naming the field.
    let Path(session_id) =
        session_id.map_err(|_| ApiError::invalid("session_id", "must be percent-encoded UTF-8"))?;
    let deleted = service.forget_session(&owner, &session_id).await?;
    Ok(Json(SessionDeleted {
        session_id,
        deleted,
    }))
}

async fn not_found(request: Request) -> ApiError {
    ApiError::NotFound(request.uri().path().to_owned())
}

async fn method_not_allowed(request: Request) -> ApiError {
    ApiError::MethodNotAllowed {
        method: request.method().to_string(),
        path: request.uri().path().to_owned(),
    }
}

async fn record_latency(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let response = next.run(request).await;
    metrics::histogram!(metric::REQUEST_LATENCY_MS)
        .record(started.elapsed().as_secs_f64() * 1000.0);
    response.into_response()
}
