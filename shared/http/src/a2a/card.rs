//! The Agent Card: who Switchyard is to other agents, what it can be asked (one skill per
//! datasource the caller may use, with its templates' descriptions and example questions)
//! and how callers authenticate. A restricted caller's card lists only its datasources.

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};
use switchyard_catalog::auth::Access;

use super::wire::{
    AgentCapabilities, AgentCard, AgentInterface, AgentProvider, AgentSkill, PROTOCOL_VERSION,
};
use super::ENDPOINT;
use crate::{Authorized, Shared};

/// Example questions per skill (the first of each template, then the seconds, ...).
const EXAMPLES_PER_SKILL: usize = 8;

/// `GET /.well-known/agent-card.json`: the caller's card; an unknown caller is refused as
/// on `/v1` (the card lists the catalog's datasources, which are the caller's to see).
pub(crate) async fn serve(State(service): State<Shared>, request: Request) -> Response {
    let (mut parts, _) = request.into_parts();
    match Authorized::from_request_parts(&mut parts, &service).await {
        Ok(authorized) => {
            let base = base_url(service.config().server.public_url.as_deref(), &parts);
            Json(card(&service, &authorized.access, &base)).into_response()
        }
        Err(error) => error.into_response(),
    }
}

/// The card for a caller with `access`, its endpoint under `base` (`https://host[/stage]`).
pub(crate) fn card(service: &Shared, access: &Access, base: &str) -> AgentCard {
    let config = service.config();
    let catalog = &service.router().index().catalog;
    let skills = catalog
        .datasources
        .iter()
        .filter(|d| access.allows(d.name()))
        .map(|datasource| {
            let templates = &datasource.templates;
            let listed: Vec<String> = templates
                .iter()
                .map(|t| format!("{}: {}", t.id, t.description))
                .collect();
            // Round-robin over the templates, so every template shows before any repeats.
            let longest = templates.iter().map(|t| t.nl_examples.len()).max();
            let examples = (0..longest.unwrap_or(0))
                .flat_map(|i| templates.iter().filter_map(move |t| t.nl_examples.get(i)))
                .take(EXAMPLES_PER_SKILL)
                .cloned()
                .collect();
            AgentSkill {
                id: datasource.name().to_owned(),
                name: datasource.name().to_owned(),
                description: format!(
                    "{} Templates: {}.",
                    datasource.spec.description.trim_end_matches('.').to_owned() + ".",
                    listed.join("; ")
                ),
                tags: vec![datasource.spec.kind.as_str().to_owned()],
                examples,
            }
        })
        .collect();
    let (schemes, requirements) = security(config.auth.required, !config.auth.api_keys.is_empty());
    AgentCard {
        name: "Switchyard".to_owned(),
        description: "Answers plain-language questions from its catalog of datasources (SQL, HTTP and GraphQL APIs, tools, documents): routes each question to the one template that fits, runs it with the parameters it found, and says why. Follows conversations (the context id), asks when it is unsure, and splits questions that ask several things.".to_owned(),
        supported_interfaces: vec![AgentInterface {
            url: format!("{base}{ENDPOINT}"),
            protocol_binding: "JSONRPC".to_owned(),
            protocol_version: PROTOCOL_VERSION.to_owned(),
        }],
        provider: AgentProvider {
            organization: "Switchyard".to_owned(),
            url: "https://github.com/switchyard".to_owned(),
        },
        version: env!("CARGO_PKG_VERSION").to_owned(),
        capabilities: AgentCapabilities {
            streaming: false,
            push_notifications: false,
        },
        security_schemes: schemes,
        security_requirements: requirements,
        default_input_modes: vec!["text/plain".to_owned()],
        default_output_modes: vec!["text/plain".to_owned(), "application/json".to_owned()],
        skills,
    }
}

/// How callers authenticate, as the HTTP API does: an `x-api-key` header where keys are
/// configured, a bearer token (API Gateway's JWT authorizer) otherwise; nothing when
/// `auth.required` is off.
fn security(required: bool, keys: bool) -> (Map<String, Value>, Vec<Value>) {
    if !required {
        return (Map::new(), Vec::new());
    }
    let mut schemes = Map::new();
    let name = if keys {
        schemes.insert(
            "apiKey".to_owned(),
            json!({"apiKeySecurityScheme": {"location": "header", "name": "x-api-key"}}),
        );
        "apiKey"
    } else {
        schemes.insert(
            "bearer".to_owned(),
            json!({"httpAuthSecurityScheme": {"scheme": "bearer", "bearerFormat": "JWT"}}),
        );
        "bearer"
    };
    (schemes, vec![json!({"schemes": {name: {}}})])
}

/// Where callers reach this API: `server.public_url` when set (behind API Gateway, its
/// stage URL or custom domain), else the request's: on Lambda the URI names the API's
/// domain (the event's, which need not be in a `Host` header), under `serve` the `Host`.
fn base_url(configured: Option<&str>, parts: &Parts) -> String {
    if let Some(url) = configured {
        return url.trim_end_matches('/').to_owned();
    }
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
    let host = parts
        .uri
        .authority()
        .map(|a| a.as_str())
        .or_else(|| header("host"))
        .unwrap_or("localhost");
    let scheme = header("x-forwarded-proto")
        .or(parts.uri.scheme_str())
        .unwrap_or("http");
    format!("{scheme}://{host}")
}
