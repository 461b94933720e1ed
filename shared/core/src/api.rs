//! The HTTP API, independent of transport: the local `serve` command and the router
//! Lambda both turn their requests into [`ApiRequest`] and send back [`ApiResponse`].
//!
//! `POST /v1/query` routes and executes, `POST /v1/route` routes only, `GET /v1/stats`
//! and `GET /v1/health` describe the deployment.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

use crate::auth::{authorize, Identity};
use crate::error::Error;
use crate::invoker::{AdapterInvoker, AdapterRequest, AdapterStatus};
use crate::rerank::RerankStage;
use crate::router::{decimal, Access, Match, Outcome, Router, Routing};
use crate::session::{carried_parameters, SessionStore, Turn};

/// Largest request body accepted (a 2,000-character query fits many times over).
pub const MAX_BODY_BYTES: usize = 64 * 1024;

pub struct ApiRequest {
    pub method: String,
    pub path: String,
    pub body: Vec<u8>,
    /// Who is calling: what they may use follows from the `auth` configuration.
    pub identity: Identity,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ApiResponse {
    pub status: u16,
    pub body: Value,
}

impl ApiResponse {
    fn ok(body: Value) -> Self {
        ApiResponse { status: 200, body }
    }

    pub fn error(status: u16, code: &str, field: Option<&str>, message: impl Into<String>) -> Self {
        let mut error = Map::new();
        error.insert("code".into(), code.into());
        if let Some(field) = field {
            error.insert("field".into(), field.into());
        }
        error.insert("message".into(), message.into().into());
        ApiResponse {
            status,
            body: json!({ "error": error }),
        }
    }

    fn from_error(e: &Error) -> Self {
        match e {
            Error::InvalidRequest { field, message } => ApiResponse::error(
                400,
                "invalid_request",
                Some(field),
                format!("{field}: {message}"),
            ),
            Error::UnknownDatasource(_) => ApiResponse::error(
                400,
                "unknown_datasource",
                Some("datasources"),
                e.to_string(),
            ),
            Error::Unauthenticated(_) => {
                ApiResponse::error(401, "unauthenticated", None, e.to_string())
            }
            Error::Forbidden(_) => ApiResponse::error(403, "forbidden", None, e.to_string()),
            _ => ApiResponse::error(500, "internal", None, e.to_string()),
        }
    }
}

/// A validated `/v1/query` or `/v1/route` body.
#[derive(Debug)]
struct QueryBody {
    query: String,
    session_id: Option<String>,
    datasources: Option<Vec<String>>,
}

const QUERY_FIELDS: [&str; 3] = ["query", "session_id", "datasources"];

fn parse_query_body(bytes: &[u8]) -> Result<QueryBody, Error> {
    if bytes.len() > MAX_BODY_BYTES {
        return Err(Error::invalid_request(
            "body",
            format!("is {} bytes; the limit is {MAX_BODY_BYTES}", bytes.len()),
        ));
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::invalid_request(
            "body",
            "is empty; send a JSON object with a `query`",
        ));
    }
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| Error::invalid_request("body", format!("is not valid JSON: {e}")))?;
    let Value::Object(object) = value else {
        return Err(Error::invalid_request("body", "must be a JSON object"));
    };
    if let Some(unknown) = object.keys().find(|k| !QUERY_FIELDS.contains(&k.as_str())) {
        return Err(Error::invalid_request(
            unknown,
            format!(
                "unknown field; known fields are {}",
                QUERY_FIELDS.join(", ")
            ),
        ));
    }
    let query = match object.get("query") {
        None | Some(Value::Null) => return Err(Error::invalid_request("query", "is required")),
        Some(Value::String(q)) => q.clone(),
        Some(_) => return Err(Error::invalid_request("query", "must be a string")),
    };
    Router::validate_query(&query)?;
    let session_id = match object.get("session_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.is_empty() && s.len() <= 128 => Some(s.clone()),
        Some(_) => {
            return Err(Error::invalid_request(
                "session_id",
                "must be a string of 1 to 128 characters",
            ))
        }
    };
    let datasources = match object.get("datasources") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => Some(
            items
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| Error::invalid_request("datasources", "must be a list of names"))?,
        ),
        Some(_) => {
            return Err(Error::invalid_request(
                "datasources",
                "must be a list of names",
            ))
        }
    };
    Ok(QueryBody {
        query,
        session_id,
        datasources,
    })
}

pub struct Api<I, S> {
    router: Router,
    invoker: I,
    sessions: S,
    rerank: Option<RerankStage>,
}

impl<I: AdapterInvoker, S: SessionStore> Api<I, S> {
    pub fn new(router: Router, invoker: I, sessions: S) -> Self {
        Api {
            router,
            invoker,
            sessions,
            rerank: None,
        }
    }

    /// Rerank close calls with this stage (`composite_retrieval.reranking.enabled` on).
    pub fn with_rerank(mut self, stage: RerankStage) -> Self {
        self.rerank = Some(stage);
        self
    }

    pub fn router(&self) -> &Router {
        &self.router
    }

    pub async fn handle(&self, request: ApiRequest) -> ApiResponse {
        let path = request.path.trim_end_matches('/');
        let known = matches!(path, "/v1/health" | "/v1/stats" | "/v1/route" | "/v1/query");
        // Health tells nothing about templates: it stays open for load balancers.
        let access = if known && path != "/v1/health" {
            match authorize(&self.router.config().auth, &request.identity) {
                Ok(access) => access,
                Err(e) => return ApiResponse::from_error(&e),
            }
        } else {
            Access::All
        };
        match (request.method.as_str(), path) {
            ("GET", "/v1/health") => self.health(),
            ("GET", "/v1/stats") => ApiResponse::ok(stats(&self.router, &access)),
            ("POST", "/v1/route") => match self.routing(&request, &access).await {
                Ok((routing, _)) => ApiResponse::ok(route_report(&self.router, &routing)),
                Err(e) => ApiResponse::from_error(&e),
            },
            ("POST", "/v1/query") => match self.routing(&request, &access).await {
                Ok((routing, body)) => self.query(routing, body).await,
                Err(e) => ApiResponse::from_error(&e),
            },
            (_, "/v1/health" | "/v1/stats" | "/v1/route" | "/v1/query") => ApiResponse::error(
                405,
                "method_not_allowed",
                None,
                format!("{} is not allowed on {path}", request.method),
            ),
            _ => ApiResponse::error(404, "not_found", None, format!("no endpoint {path}")),
        }
    }

    async fn routing(
        &self,
        request: &ApiRequest,
        access: &Access,
    ) -> Result<(Routing, QueryBody), Error> {
        let body = parse_query_body(&request.body)?;
        let access = match &body.datasources {
            Some(names) => access.narrow(names, self.router.index())?,
            None => access.clone(),
        };
        let mut routing = self.router.route(&body.query, &access)?;
        if let Some(stage) = &self.rerank {
            stage.apply(&self.router, &mut routing, unix_now()).await;
        }
        record_routing(&routing);
        tracing::info!(
            query_chars = body.query.chars().count(),
            session_id = body.session_id.as_deref().unwrap_or(""),
            datasource = routing
                .selected_match()
                .map(|m| m.datasource.as_str())
                .unwrap_or(""),
            template = routing
                .selected_match()
                .map(|m| m.template_id.as_str())
                .unwrap_or(""),
            outcome = ?routing.outcome,
            score = routing.best().map(|m| m.combined_score).unwrap_or(0.0),
            embedding_ms = routing.timings.embedding_ms,
            search_ms = routing.timings.search_ms,
            string_similarity_ms = routing.timings.string_similarity_ms,
            rerank_ms = routing.timings.rerank_ms,
            total_ms = routing.timings.total_ms,
            "routed"
        );
        Ok((routing, body))
    }

    fn health(&self) -> ApiResponse {
        let manifest = &self.router.index().manifest;
        ApiResponse::ok(json!({
            "status": "ok",
            "model": manifest.model_id,
            "templates": self.router.index().catalog.template_count(),
            "datasources": manifest.datasources.len(),
            "index_built_at": manifest.built_at,
        }))
    }

    async fn query(&self, routing: Routing, body: QueryBody) -> ApiResponse {
        let request_id = new_request_id();
        let Some(selected) = routing.selected_match() else {
            return self.no_match(&routing, &request_id);
        };
        if routing.outcome == Outcome::Clarify {
            return self.clarify(&routing, &request_id);
        }
        let (datasource, _) = self.router.template(selected);
        let now = unix_now();
        // Context is a help, never a precondition: a failing store answers without it.
        let (session_parameters, mut session) = match &body.session_id {
            None => (Map::new(), json!(null)),
            Some(id) => match self.sessions.recent(id, now).await {
                Ok(turns) => (
                    carried_parameters(&turns),
                    json!({"status": "ok", "turns": turns.len()}),
                ),
                Err(e) => {
                    metrics::counter!("SessionStoreErrors").increment(1);
                    tracing::warn!(session_id = %id, error = %e, "session context unavailable; answering without it");
                    (
                        Map::new(),
                        json!({"status": "unavailable", "error": e.to_string()}),
                    )
                }
            },
        };
        let request = AdapterRequest {
            request_id: request_id.clone(),
            datasource: selected.datasource.clone(),
            template_id: selected.template_id.clone(),
            query: routing.query.clone(),
            session_parameters,
            deadline_ms: datasource.spec.limits.timeout_ms,
        };
        let mut metadata = json!({
            "request_id": request_id,
            "session_id": body.session_id,
            "source": datasource.spec.kind.as_str(),
            "template_id": selected.template_id,
            "composite_routing": Render(&self.router).composite_routing(&routing, selected),
            "timings_ms": routing.timings,
        });
        let invoked = std::time::Instant::now();
        let outcome = self.invoker.invoke(request).await;
        let adapter_ms = invoked.elapsed().as_secs_f64() * 1000.0;
        let datasource_label = selected.datasource.clone();
        metrics::histogram!("AdapterLatencyMs", "Datasource" => datasource_label.clone())
            .record(adapter_ms);
        let failed = !matches!(&outcome, Ok(r) if r.status != AdapterStatus::Error);
        if failed {
            metrics::counter!("AdapterErrors", "Datasource" => datasource_label).increment(1);
        }
        if let (Some(id), Ok(response)) = (&body.session_id, &outcome) {
            if response.status != AdapterStatus::Error && session["status"] == "ok" {
                let turn = Turn {
                    query: routing.query.clone(),
                    datasource: selected.datasource.clone(),
                    template_id: selected.template_id.clone(),
                    parameters: response.parameters.clone(),
                    at: now,
                };
                if let Err(e) = self.sessions.append(id, turn).await {
                    metrics::counter!("SessionStoreErrors").increment(1);
                    tracing::warn!(session_id = %id, error = %e, "turn not saved");
                    session["saved"] = json!(false);
                    session["error"] = json!(e.to_string());
                } else {
                    session["saved"] = json!(true);
                }
            }
        }
        metadata["session"] = session;
        let (status, answer) = match outcome {
            Ok(response) => {
                metadata["adapter"] = json!({
                    "status": response.status,
                    "execution_time_ms": response.execution_time_ms,
                });
                (
                    200,
                    json!({
                        "status": response.status,
                        "content": response.content,
                        "data": response.data,
                        "parameters": response.parameters,
                        "missing": response.missing,
                        "error": response.error,
                    }),
                )
            }
            Err(e) => {
                let (status, code) = match &e {
                    Error::AdapterUnavailable { .. } => (501, "adapter_unavailable"),
                    Error::AdapterTimeout { .. } => (504, "adapter_timeout"),
                    _ => (502, "adapter_error"),
                };
                metadata["adapter"] = json!({ "status": "error", "code": code });
                (
                    status,
                    json!({
                        "status": "error",
                        "content": e.to_string(),
                        "error": { "code": code, "message": e.to_string() },
                    }),
                )
            }
        };
        let mut body = answer;
        body["confidence"] = json!(decimal(selected.combined_score));
        body["metadata"] = metadata;
        ApiResponse { status, body }
    }

    /// The winner is sure enough, but close runners-up are other templates: ask which.
    fn clarify(&self, routing: &Routing, request_id: &str) -> ApiResponse {
        let choices: Vec<Value> = routing
            .clarify_choices()
            .iter()
            .map(|m| {
                let mut choice = Render(&self.router).candidate(m);
                let (_, template) = self.router.template(m);
                choice["example"] = json!(template.nl_examples.first());
                choice["probability"] = json!(m.probability.map(decimal));
                choice
            })
            .collect();
        let listed: Vec<String> = routing
            .clarify_choices()
            .iter()
            .map(|m| format!("\"{}\"", self.router.template(m).1.description))
            .collect();
        let best = routing.best().expect("clarify has choices");
        ApiResponse::ok(json!({
            "status": "clarify",
            "content": format!("Which did you mean: {}?", listed.join(", or ")),
            "confidence": decimal(best.combined_score),
            "choices": choices,
            "metadata": {
                "request_id": request_id,
                "composite_routing": Render(&self.router).composite_routing(routing, best),
                "timings_ms": routing.timings,
            },
        }))
    }

    fn no_match(&self, routing: &Routing, request_id: &str) -> ApiResponse {
        let suggestions: Vec<Value> = routing
            .matches
            .iter()
            .filter(|m| !m.is_declined())
            .take(3)
            .map(|m| {
                let mut suggestion = Render(&self.router).candidate(m);
                suggestion["confidence"] = json!(decimal(m.combined_score));
                suggestion
            })
            .collect();
        let best = routing.best().map(|m| m.combined_score).unwrap_or(0.0);
        ApiResponse::ok(json!({
            "status": "no_match",
            "content": format!(
                "No template matched well enough (best score {best:.3}, threshold {:.3}).",
                routing.threshold
            ),
            "confidence": best,
            "suggestions": suggestions,
            "metadata": {
                "request_id": request_id,
                "composite_routing": {
                    "selected_adapter": null,
                    "template_id": null,
                    "similarity_score": routing.best().map(|m| decimal(m.embedding_score)),
                    "adapters_searched": routing.adapters_searched,
                    "total_matches_found": routing.matches.len(),
                    "reason": routing.reason(),
                },
                "timings_ms": routing.timings,
            },
        }))
    }
}

/// Renders routing results and statistics as the JSON shapes users know.
struct Render<'a>(&'a Router);

impl Render<'_> {
    /// A template offered to the user (a clarify choice, a no_match suggestion).
    fn candidate(&self, m: &Match) -> Value {
        let (_, template) = self.0.template(m);
        json!({
            "datasource": m.datasource,
            "template_id": m.template_id,
            "description": template.description,
            "score": decimal(m.rank_score),
        })
    }

    /// Templates per datasource and the configuration in force, for allowed datasources only.
    fn stats(&self, access: &Access) -> Value {
        let index = self.0.index();
        let mut adapters = Map::new();
        for (datasource, manifest) in index
            .catalog
            .datasources
            .iter()
            .zip(&index.manifest.datasources)
        {
            if !access.allows(datasource.name()) {
                continue;
            }
            adapters.insert(
                datasource.name().to_owned(),
                json!({
                    "kind": datasource.spec.kind.as_str(),
                    "total_templates": datasource.templates.len(),
                    "vectors": manifest.vectors,
                    "search": manifest.search,
                }),
            );
        }
        let config = &self.0.config().composite_retrieval;
        json!({
            "child_adapter_count": adapters.len(),
            "child_adapters": adapters,
            "configuration": {
                "confidence_threshold": decimal(self.0.threshold().0),
                "threshold_source": self.0.threshold().1,
                "max_templates_per_source": config.max_templates_per_source,
                "parallel_search": config.parallel_search,
                "search_timeout_ms": config.search_timeout_ms,
                "template_scoring": config.template_scoring,
            },
            "multistage_selection": {
                "enabled": self.multistage_enabled(),
                "learned_scoring": config.learned_scoring,
                "learned_head": index.manifest.head,
                "keywords": config.keywords,
                "clarify": config.clarify,
                "reranking": config.reranking,
                "string_similarity": config.string_similarity,
                "scoring": config.scoring,
            },
            "index": {
                "model_id": index.manifest.model_id,
                "dimension": index.manifest.dimension,
                "templates_hash": index.manifest.templates_hash,
                "built_at": index.manifest.built_at,
            },
        })
    }

    fn multistage_enabled(&self) -> bool {
        let config = &self.0.config().composite_retrieval;
        config.reranking.enabled
            || config.string_similarity.enabled
            || config.keywords.enabled
            || config.learned_scoring.enabled
    }

    fn scoring_details(&self, routing: &Routing) -> Value {
        json!({
            "embedding_weight": decimal(routing.weights.embedding_weight),
            "rerank_weight": decimal(routing.weights.rerank_weight),
            "string_similarity_weight": decimal(routing.weights.string_similarity_weight),
        })
    }

    fn match_json(&self, routing: &Routing, m: &Match) -> Value {
        let (_, template) = self.0.template(m);
        json!({
            "template_id": m.template_id,
            "source_adapter": m.datasource,
            "embedding_score": decimal(m.embedding_score),
            "learned_score": m.learned_score.map(decimal),
            "keyword_score": m.keyword_score.map(decimal),
            "combined_score": decimal(m.combined_score),
            "rank_score": decimal(m.rank_score),
            "probability": m.probability.map(decimal),
            "rerank_score": m.rerank_score.map(decimal),
            "string_similarity_score": m.string_similarity_score.map(decimal),
            "description": template.description,
            "nl_examples": template.nl_examples,
            "above_threshold": m.combined_score >= routing.threshold,
            "declined_by": m.declined_by,
            "scoring_details": self.scoring_details(routing),
        })
    }

    /// The route-only report: every match with its stage scores, the decision, the configuration.
    fn route_report(&self, routing: &Routing) -> Value {
        let config = &self.0.config().composite_retrieval;
        let decision = match routing.selected_match() {
            Some(m) => json!({
                "would_route_to": m.datasource,
                "selected_template": m.template_id,
                "selection_score": decimal(m.combined_score),
                "embedding_score": decimal(m.embedding_score),
                "rerank_score": m.rerank_score.map(decimal),
                "string_similarity_score": m.string_similarity_score.map(decimal),
                "reason": routing.reason(),
            }),
            None => json!({
                "would_route_to": null,
                "selected_template": null,
                "selection_score": routing.best().map(|m| decimal(m.combined_score)),
                "reason": routing.reason(),
            }),
        };
        json!({
            "query": routing.query,
            "outcome": routing.outcome,
            "clarify_choices": routing.clarify_choices().iter().map(|m| json!({"datasource": m.datasource, "template_id": m.template_id})).collect::<Vec<_>>(),
            "total_matches": routing.matches.len(),
            "matches_above_threshold": routing.matches.iter().filter(|m| !m.is_declined() && m.combined_score >= routing.threshold).count(),
            "all_matches": routing.matches.iter().map(|m| self.match_json(routing, m)).collect::<Vec<_>>(),
            "routing_decision": decision,
            "configuration": {
                "confidence_threshold": decimal(routing.threshold),
                "threshold_source": self.0.threshold().1,
                "ranking": routing.ranking,
                "adapters_searched": routing.adapters_searched,
                "adapters_timed_out": routing.timed_out,
                "multistage_enabled": self.multistage_enabled(),
                "reranking_enabled": config.reranking.enabled,
                "rerank": routing.rerank,
                "string_similarity_enabled": config.string_similarity.enabled,
                "scoring_weights": {
                    "embedding": decimal(routing.weights.embedding_weight),
                    "reranking": decimal(routing.weights.rerank_weight),
                    "string_similarity": decimal(routing.weights.string_similarity_weight),
                },
            },
            "timings_ms": routing.timings,
        })
    }

    fn composite_routing(&self, routing: &Routing, m: &Match) -> Value {
        json!({
            "selected_adapter": m.datasource,
            "template_id": m.template_id,
            "similarity_score": decimal(m.embedding_score),
            "adapters_searched": routing.adapters_searched,
            "total_matches_found": routing.matches.len(),
            "multistage_scoring": {
                "enabled": self.multistage_enabled(),
                "ranking": routing.ranking,
                "outcome": routing.outcome,
                "rank_score": decimal(m.rank_score),
                "learned_score": m.learned_score.map(decimal),
                "keyword_score": m.keyword_score.map(decimal),
                "probability": m.probability.map(decimal),
                "combined_score": decimal(m.combined_score),
                "embedding_score": decimal(m.embedding_score),
                "rerank_score": m.rerank_score.map(decimal),
                "string_similarity_score": m.string_similarity_score.map(decimal),
                "scoring_details": self.scoring_details(routing),
                "rerank": routing.rerank,
            },
        })
    }
}

/// Templates per datasource and the configuration in force, for allowed datasources only.
pub fn stats(router: &Router, access: &Access) -> Value {
    Render(router).stats(access)
}

/// The route-only report: every match with its stage scores, the decision, the configuration.
pub fn route_report(router: &Router, routing: &Routing) -> Value {
    Render(router).route_report(routing)
}

/// Per-request metrics (the router Lambda writes them as CloudWatch EMF; elsewhere they
/// go to whatever `metrics` recorder is installed, or nowhere).
fn record_routing(routing: &Routing) {
    let t = &routing.timings;
    metrics::histogram!("EmbedLatencyMs").record(t.embedding_ms);
    metrics::histogram!("SearchLatencyMs").record(t.search_ms);
    metrics::histogram!("StringLatencyMs").record(t.string_similarity_ms);
    metrics::histogram!("RerankLatencyMs").record(t.rerank_ms);
    metrics::histogram!("RouteLatencyMs").record(t.total_ms);
    match routing.selected_match() {
        Some(m) => {
            metrics::counter!("Requests", "Datasource" => m.datasource.clone()).increment(1);
            metrics::histogram!("Confidence").record(f64::from(m.combined_score));
        }
        None => metrics::counter!("NoMatch").increment(1),
    }
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn new_request_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    format!(
        "{nanos:016x}-{:04x}",
        COUNTER.fetch_add(1, Ordering::Relaxed) & 0xffff
    )
}
