//! Running a routed question on its adapter: the winner's template, or the optional
//! text-to-SQL fallback when nothing matched.

use std::time::Instant;

use serde_json::Map;

use super::routed::TurnContext;
use super::{Execution, Orchestrated, Question, Routed, Service};
use crate::orchestration::Checkpoint;
use switchyard_catalog::blocking::run_blocking;
use switchyard_catalog::metric;
use switchyard_catalog::template::DatasourceKind;
use switchyard_contract::adapter::{AdapterRequest, AdapterStatus, QueryVector, GENERATED_SQL};
use switchyard_routing::router::{Outcome, Routing};
use switchyard_routing::session::carried_parameters;

/// What running a routed question gave: the winner's execution, a split question's
/// workflow, or a `no_match`'s text-to-SQL fallback.
pub(super) struct Executed {
    pub execution: Option<Execution>,
    pub orchestration: Option<Orchestrated>,
    pub generated: Option<Execution>,
}

impl Service {
    /// Execute: the workflow when there is one, else the winner on its adapter (with the
    /// parameters the session carries); for a `no_match`, the text-to-SQL fallback.
    pub(super) async fn execute_routed(
        &self,
        question: &Question,
        routed: &Routed,
        workflow: Option<Checkpoint>,
        context: &TurnContext,
        request_id: &str,
        now: i64,
    ) -> Executed {
        let session_parameters = context.turns().map(carried_parameters).unwrap_or_default();
        let (execution, orchestration) = match workflow {
            Some(checkpoint) => {
                let decomposition = routed.decomposition.clone();
                let orchestrated = self
                    .orchestrate(
                        question,
                        checkpoint,
                        decomposition,
                        &session_parameters,
                        request_id,
                        now,
                    )
                    .await;
                (None, Some(orchestrated))
            }
            None if routed.routing.outcome == Outcome::Execute => {
                let routing = &routed.routing;
                let filters = &question.filters;
                let execution = self
                    .execute(routing, session_parameters, filters, request_id)
                    .await;
                (Some(execution), None)
            }
            None => (None, None),
        };
        // A `no_match` gets the fallback even when its split ran as a workflow (whose
        // answer is the one given): unchanged from before the steps were named.
        let generated = match routed.routing.outcome {
            Outcome::NoMatch => self.generated_sql(routed, request_id).await,
            _ => None,
        };
        Executed {
            execution,
            orchestration,
            generated,
        }
    }

    /// The optional text-to-SQL fallback: the suggested datasource's adapter asks the chat
    /// model for one query over the nearest tables and checks and runs it like a template.
    async fn generated_sql(&self, routed: &Routed, request_id: &str) -> Option<Execution> {
        let schema = routed.schema.as_ref()?;
        if !self.config.llm.text_to_sql {
            return None;
        }
        let datasource = &schema.suggested_datasource;
        let tables: Vec<&str> = schema
            .tables
            .iter()
            .filter(|t| &t.datasource == datasource)
            .map(|t| t.text.as_str())
            .collect();
        let deadline_ms = self
            .router
            .index()
            .catalog
            .datasource(datasource)
            .map_or(5000, |d| d.spec.limits.timeout_ms);
        let request = AdapterRequest {
            request_id: request_id.to_owned(),
            datasource: datasource.clone(),
            template_id: GENERATED_SQL.to_owned(),
            query: routed.routing.query.clone(),
            session_parameters: Map::new(),
            deadline_ms,
            upstream: Map::new(),
            query_vector: None,
            filters: Map::new(),
            schema_context: Some(tables.join("\n")),
            // Named by the service's invoker (`invoker::RoutedWith`), on every request.
            catalog_hash: None,
            idempotency_scope: None,
        };
        let invoked = Instant::now();
        let adapter = self.invoker.invoke(request).await;
        Some(Execution {
            adapter,
            adapter_ms: invoked.elapsed().as_secs_f64() * 1000.0,
        })
    }

    /// The question's vector for a datasource whose adapter searches with it (documents'
    /// chunks); `None` for the others, or when embedding fails (the search falls back to
    /// BM25).
    fn query_vector(&self, kind: DatasourceKind, query: &str) -> Option<QueryVector> {
        if !kind.searches_by_vector() {
            return None;
        }
        let embedder = self.router.documents_embedder();
        match run_blocking(|| embedder.embed_one(&self.router.embedding_text(query))) {
            Ok(values) => Some(QueryVector {
                model_id: embedder.model_id().to_owned(),
                values,
            }),
            Err(e) => {
                tracing::warn!(error = %e, "could not embed the question for a documents search");
                None
            }
        }
    }

    async fn execute(
        &self,
        routing: &Routing,
        session_parameters: Map<String, serde_json::Value>,
        filters: &Map<String, serde_json::Value>,
        request_id: &str,
    ) -> Execution {
        let selected = routing.selected_match().expect("execute has a winner");
        let (datasource, _) = self.router.template(selected);
        let request = AdapterRequest {
            request_id: request_id.to_owned(),
            datasource: selected.datasource.clone(),
            template_id: selected.template_id.clone(),
            query: routing.query.clone(),
            session_parameters,
            deadline_ms: datasource.spec.limits.timeout_ms,
            upstream: Map::new(),
            query_vector: self.query_vector(datasource.spec.kind, &routing.query),
            filters: filters.clone(),
            schema_context: None,
            // Named by the service's invoker (`invoker::RoutedWith`), on every request.
            catalog_hash: None,
            idempotency_scope: None,
        };
        let invoked = Instant::now();
        let adapter = self.invoker.invoke(request).await;
        let adapter_ms = invoked.elapsed().as_secs_f64() * 1000.0;
        let label = selected.datasource.clone();
        metrics::histogram!(metric::ADAPTER_LATENCY_MS, metric::DATASOURCE => label.clone())
            .record(adapter_ms);
        let answered = matches!(&adapter, Ok(r) if r.status() != AdapterStatus::Error);
        if !answered {
            metrics::counter!(metric::ADAPTER_ERRORS, metric::DATASOURCE => label).increment(1);
        }
        Execution {
            adapter,
            adapter_ms,
        }
    }
}
