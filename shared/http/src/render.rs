//! Domain results as the wire's typed answers: routing, answers, statistics.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use switchyard_contract::adapter::AdapterResponse;
use switchyard_contract::ContractError;
use switchyard_core::service::{Answer, Execution, Routed, SessionUse};
use switchyard_documents::schema::SchemaContext;
use switchyard_index::index::DriftStatus;
use switchyard_index::scoring::Weights;
use switchyard_routing::config::TransitionsConfig;
use switchyard_routing::router::{Match, Router, Routing, StageTimings};
use switchyard_routing::session::{ContextReport, Weighted};
use switchyard_routing::transitions::TransitionRates;

use crate::wire::*;

/// Renders with the router's catalog and configuration at hand.
pub struct Render<'a>(pub &'a Router);

impl Render<'_> {
    pub fn health(&self) -> Health {
        let index = self.0.index();
        Health {
            status: "ok".into(),
            model: index.manifest.model_id.clone(),
            templates: index.catalog.template_count(),
            datasources: index.manifest.datasources.len(),
            index_built_at: index.manifest.built_at,
            embedding: self.embedding_health(),
        }
    }

    fn embedding_health(&self) -> EmbeddingHealth {
        let drift = self.0.drift();
        EmbeddingHealth {
            drift: match drift.status {
                DriftStatus::Same => "same",
                DriftStatus::Drifted => "drifted",
                DriftStatus::NotRecorded => "not_recorded",
            }
            .to_owned(),
            probes: drift.probes,
            min_cosine: drift.min_cosine,
            mean_cosine: drift.mean_cosine,
            warn_below: drift.warn_below,
        }
    }

    /// Templates per datasource and the configuration in force, for allowed datasources only.
    /// `transitions`: the service's rates (`Service::transition_rates`), with the
    /// `sessions.transitions` section they were learned under.
    pub fn stats(
        &self,
        access: &switchyard_catalog::auth::Access,
        transitions: (&TransitionRates, &TransitionsConfig),
    ) -> Stats {
        let index = self.0.index();
        let child_adapters: BTreeMap<String, AdapterStats> = index
            .catalog
            .datasources
            .iter()
            .zip(&index.manifest.datasources)
            .filter(|(datasource, _)| access.allows(datasource.name()))
            .map(|(datasource, manifest)| {
                let stats = AdapterStats {
                    kind: datasource.spec.kind.as_str().to_owned(),
                    total_templates: datasource.templates.len(),
                    vectors: manifest.vectors,
                    search: manifest.search.clone(),
                };
                (datasource.name().to_owned(), stats)
            })
            .collect();
        let config = &self.0.config().composite_retrieval;
        let (threshold, threshold_source) = self.0.threshold();
        let mut multistage = Map::new();
        let mut put = |key: &str, value: Value| {
            multistage.insert(key.to_owned(), value);
        };
        put("enabled", self.multistage_enabled().into());
        put("learned_scoring", to_value(&config.learned_scoring));
        put("learned_head", to_value(&index.manifest.head));
        put("keywords", to_value(&config.keywords));
        put("clarify", to_value(&config.clarify));
        put("reranking", to_value(&config.reranking));
        put("string_similarity", to_value(&config.string_similarity));
        put("scoring", to_value(&config.scoring));
        Stats {
            child_adapter_count: child_adapters.len(),
            child_adapters,
            configuration: StatsConfiguration {
                confidence_threshold: threshold,
                threshold_source,
                max_templates_per_source: config.max_templates_per_source,
                parallel_search: config.parallel_search,
                search_timeout_ms: config.search_timeout_ms,
                template_scoring: to_value(&config.template_scoring),
            },
            multistage_selection: multistage,
            index: IndexStats {
                model_id: index.manifest.model_id.clone(),
                dimension: index.manifest.dimension,
                templates_hash: index.manifest.templates_hash.clone(),
                built_at: index.manifest.built_at,
            },
            transitions: transition_stats(transitions.0, transitions.1),
        }
    }

    fn multistage_enabled(&self) -> bool {
        let config = &self.0.config().composite_retrieval;
        config.reranking.enabled
            || config.string_similarity.enabled
            || config.keywords.enabled
            || config.learned_scoring.enabled
    }

    /// The route-only report: every match with its stage scores, the decision, the configuration.
    pub fn route_report(&self, routed: &Routed) -> RouteReport {
        let routing = &routed.routing;
        let config = &self.0.config().composite_retrieval;
        let routing_decision = match routing.selected_match() {
            Some(m) => RoutingDecision {
                would_route_to: Some(m.datasource.clone()),
                selected_template: Some(m.template_id.clone()),
                selection_score: Some(m.scores.combined_score),
                embedding_score: Some(m.scores.embedding_score),
                rerank_score: Some(m.scores.rerank_score),
                string_similarity_score: Some(m.scores.string_similarity_score),
                reason: routed.reason().into(),
            },
            None => RoutingDecision {
                would_route_to: None,
                selected_template: None,
                selection_score: routing.best().map(|m| m.scores.combined_score),
                embedding_score: None,
                rerank_score: None,
                string_similarity_score: None,
                reason: routed.reason().into(),
            },
        };
        let above = |m: &&Match| !m.is_declined() && m.scores.combined_score >= routing.threshold;
        RouteReport {
            query: routing.query.clone(),
            corrected_query: routing.corrected.clone(),
            outcome: routing.outcome,
            clarify_choices: routing
                .clarify_choices()
                .iter()
                .map(|m| TemplateRef {
                    datasource: m.datasource.clone(),
                    template_id: m.template_id.clone(),
                })
                .collect(),
            total_matches: routing.matches.len(),
            matches_above_threshold: routing.matches.iter().filter(above).count(),
            all_matches: routing
                .matches
                .iter()
                .map(|m| self.match_report(routing, m))
                .collect(),
            routing_decision,
            configuration: RouteConfiguration {
                confidence_threshold: routing.threshold,
                threshold_source: self.0.threshold().1,
                ranking: routing.ranking,
                adapters_searched: routing.adapters_searched.clone(),
                adapters_timed_out: routing.timed_out.clone(),
                multistage_enabled: self.multistage_enabled(),
                reranking_enabled: config.reranking.enabled,
                rerank: routing.rerank.clone(),
                string_similarity_enabled: config.string_similarity.enabled,
                scoring_weights: ScoringWeights {
                    embedding: routing.weights.embedding_weight,
                    reranking: routing.weights.rerank_weight,
                    string_similarity: routing.weights.string_similarity_weight,
                },
            },
            timings_ms: timings(&routing.timings),
            session: routed.context.as_ref().map(session_context),
            orchestration: None,
            suggested_datasource: routed
                .schema
                .as_ref()
                .map(|s| s.suggested_datasource.clone()),
            schema_context: schema_context(routed.schema.as_ref()),
        }
    }

    fn match_report(&self, routing: &Routing, m: &Match) -> MatchReport {
        let (_, template) = self.0.template(m);
        MatchReport {
            template_id: m.template_id.clone(),
            source_adapter: m.datasource.clone(),
            scores: StageScores::from(&m.scores),
            description: template.description.clone(),
            nl_examples: template.nl_examples.clone(),
            above_threshold: m.scores.combined_score >= routing.threshold,
            declined_by: m.declined_by.clone(),
            scoring_details: scoring_details(&routing.weights),
            context_probability: m.context_probability,
        }
    }

    pub(crate) fn composite_routing(&self, routing: &Routing, m: &Match) -> CompositeRouting {
        CompositeRouting {
            selected_adapter: m.datasource.clone(),
            template_id: m.template_id.clone(),
            similarity_score: m.scores.embedding_score,
            adapters_searched: routing.adapters_searched.clone(),
            total_matches_found: routing.matches.len(),
            multistage_scoring: MultistageScoring {
                enabled: self.multistage_enabled(),
                ranking: routing.ranking,
                outcome: routing.outcome,
                scores: StageScores::from(&m.scores),
                scoring_details: scoring_details(&routing.weights),
                rerank: routing.rerank.clone(),
            },
        }
    }

    /// A template offered to the user (a clarify choice, a no_match suggestion).
    fn choice(&self, m: &Match) -> Choice {
        let (_, template) = self.0.template(m);
        Choice {
            datasource: m.datasource.clone(),
            template_id: m.template_id.clone(),
            description: template.description.clone(),
            score: m.scores.rank_score,
            example: None,
            probability: None,
            confidence: None,
        }
    }

    /// A query's answer and its HTTP status (the adapter's failures are 501, 502 or 504).
    pub fn answer(&self, session_id: Option<String>, answer: Answer) -> (u16, QueryAnswer) {
        let Answer {
            request_id,
            routed,
            execution,
            orchestration,
            generated,
            session,
            acknowledged,
        } = answer;
        let session = session_report(&session, routed.context.as_ref());
        let routing = &routed.routing;
        if let Some(content) = acknowledged {
            let metadata = AcknowledgedMetadata {
                request_id,
                session_id,
                timings_ms: timings(&routing.timings),
                session,
            };
            return (
                200,
                QueryAnswer::Acknowledged(Acknowledged {
                    status: AcknowledgedStatus::Acknowledged,
                    content,
                    metadata,
                }),
            );
        }
        if let Some(orchestrated) = orchestration {
            return self.orchestrated(routing, request_id, session_id, session, orchestrated);
        }
        match execution {
            Some(execution) => self.executed(routing, request_id, session_id, session, execution),
            None if routing.selected_match().is_some() => (
                200,
                QueryAnswer::Clarify(self.clarify(routing, request_id, session)),
            ),
            None => (
                200,
                QueryAnswer::NoMatch(NoMatch {
                    generated: generated.map(generated_answer),
                    ..self.no_match(&routed, request_id, session)
                }),
            ),
        }
    }

    fn executed(
        &self,
        routing: &Routing,
        request_id: String,
        session_id: Option<String>,
        session: Option<SessionReport>,
        execution: Execution,
    ) -> (u16, QueryAnswer) {
        let selected = routing.selected_match().expect("executed has a winner");
        let (datasource, _) = self.0.template(selected);
        let adapter = match &execution.adapter {
            Ok(response) => AdapterReport {
                status: to_value(&response.status())
                    .as_str()
                    .unwrap_or("ok")
                    .to_owned(),
                execution_time_ms: Some(response.execution_time_ms),
                code: None,
            },
            Err(e) => AdapterReport {
                status: "error".into(),
                execution_time_ms: None,
                code: Some(adapter_error_code(e).1.into()),
            },
        };
        let metadata = QueryMetadata {
            request_id,
            session_id,
            source: datasource.spec.kind.as_str().to_owned(),
            template_id: selected.template_id.clone(),
            composite_routing: self.composite_routing(routing, selected),
            timings_ms: timings(&routing.timings),
            session,
            adapter,
        };
        let confidence = selected.scores.combined_score;
        match execution.adapter {
            Ok(AdapterResponse {
                outcome,
                content,
                data,
                parameters,
                missing,
                ..
            }) => (
                200,
                QueryAnswer::Answered(Answered {
                    status: outcome.status(),
                    error: outcome.error().map(str::to_owned),
                    content,
                    data,
                    parameters,
                    missing,
                    confidence,
                    metadata,
                }),
            ),
            Err(e) => {
                let (status, code) = adapter_error_code(&e);
                let answer = AdapterFailed {
                    status: "error".into(),
                    content: e.to_string(),
                    error: ErrorDetail {
                        code: code.into(),
                        field: None,
                        message: e.to_string(),
                    },
                    confidence,
                    metadata,
                };
                (status, QueryAnswer::AdapterFailed(answer))
            }
        }
    }

    fn clarify(
        &self,
        routing: &Routing,
        request_id: String,
        session: Option<SessionReport>,
    ) -> Clarify {
        let choices = routing
            .clarify_choices()
            .iter()
            .map(|m| {
                let (_, template) = self.0.template(m);
                Choice {
                    example: Some(template.nl_examples.first().cloned()),
                    probability: Some(m.scores.probability),
                    ..self.choice(m)
                }
            })
            .collect();
        let listed: Vec<String> = routing
            .clarify_choices()
            .iter()
            .map(|m| format!("\"{}\"", self.0.template(m).1.description))
            .collect();
        let best = routing.best().expect("clarify has choices");
        Clarify {
            status: "clarify".into(),
            content: format!("Which did you mean: {}?", listed.join(", or ")),
            confidence: best.scores.combined_score,
            choices,
            metadata: ClarifyMetadata {
                request_id,
                composite_routing: self.composite_routing(routing, best),
                timings_ms: timings(&routing.timings),
                session,
            },
        }
    }

    fn no_match(
        &self,
        routed: &Routed,
        request_id: String,
        session: Option<SessionReport>,
    ) -> NoMatch {
        let routing = &routed.routing;
        let suggestions = routing
            .matches
            .iter()
            .filter(|m| !m.is_declined())
            .take(3)
            .map(|m| Choice {
                confidence: Some(m.scores.combined_score),
                ..self.choice(m)
            })
            .collect();
        let best = routing.best().map_or(0.0, |m| m.scores.combined_score);
        NoMatch {
            status: "no_match".into(),
            content: format!(
                "No template matched well enough (best score {best:.3}, threshold {:.3}).",
                routing.threshold
            ),
            confidence: best,
            suggestions,
            suggested_datasource: routed
                .schema
                .as_ref()
                .map(|s| s.suggested_datasource.clone()),
            schema_context: schema_context(routed.schema.as_ref()),
            generated: None,
            metadata: NoMatchMetadata {
                request_id,
                composite_routing: NoMatchRouting {
                    selected_adapter: None,
                    template_id: None,
                    similarity_score: routing.best().map(|m| m.scores.embedding_score),
                    adapters_searched: routing.adapters_searched.clone(),
                    total_matches_found: routing.matches.len(),
                    reason: routed.reason().into(),
                },
                timings_ms: timings(&routing.timings),
                session,
            },
        }
    }
}

/// The HTTP status and code of an adapter that could not answer (transport failures;
/// anything else the invoker returns is a bad gateway too).
fn adapter_error_code(e: &ContractError) -> (u16, &'static str) {
    match crate::error::contract_parts(e) {
        (status, code @ ("adapter_unavailable" | "adapter_timeout"), _) => (status.as_u16(), code),
        _ => (502, "adapter_error"),
    }
}

pub(crate) fn session_report(
    session: &SessionUse,
    context: Option<&ContextReport>,
) -> Option<SessionReport> {
    match session {
        SessionUse::None => None,
        SessionUse::Used { turns, saved } => Some(SessionReport {
            status: "ok".into(),
            turns: Some(*turns),
            saved: saved.as_ref().map(Result::is_ok),
            error: saved.as_ref().and_then(|s| s.clone().err()),
            context: context.map(session_context),
        }),
        SessionUse::Unavailable { error } => Some(SessionReport {
            status: "unavailable".into(),
            turns: None,
            saved: None,
            error: Some(error.clone()),
            context: None,
        }),
    }
}

fn session_context(report: &ContextReport) -> SessionContext {
    let hypothesis = |w: &Weighted| Hypothesis {
        datasource: w.datasource.clone(),
        template_id: w.template_id.clone(),
        probability: w.probability,
    };
    SessionContext {
        used: to_value(&report.used).as_str().unwrap_or("turn").to_owned(),
        turns: report.turns,
        previous: report.previous.as_ref().map(|p| TemplateRef {
            datasource: p.datasource.clone(),
            template_id: p.template_id.clone(),
        }),
        seconds_since_previous: report.seconds_since_previous,
        weight: report.weight,
        preferred_datasource: report.preferred_datasource.clone(),
        previous_question: report.previous_question,
        turn: report.turn.as_ref().map(hypothesis),
        context: report.context.as_ref().map(hypothesis),
        self_contained: report.self_contained,
        topic_words: report.topic_words,
        topic_boost: report.topic_boost,
        assistant: report.assistant.as_ref().map(|a| AssistantContext {
            offered: a.offered.as_ref().map(hypothesis),
            offers: a.offers,
            evidence_power: a.evidence_power,
            prior_weight: a.prior_weight,
        }),
    }
}

fn transition_stats(rates: &TransitionRates, config: &TransitionsConfig) -> TransitionStats {
    let shares = |s: &switchyard_routing::transitions::TransitionShares| TransitionShares {
        stay: s.stay,
        same_datasource: s.same_datasource,
        other_datasource: s.other_datasource,
    };
    let observed = rates.observed;
    TransitionStats {
        learn: config.learn,
        prior_turns: config.prior_turns,
        observed: TransitionCounts {
            stay: observed.stay,
            same_datasource: observed.same_datasource,
            other_datasource: observed.other_datasource,
        },
        configured: shares(&rates.configured),
        learned: shares(&rates.learned),
    }
}

fn scoring_details(weights: &Weights) -> ScoringDetails {
    ScoringDetails {
        embedding_weight: weights.embedding_weight,
        rerank_weight: weights.rerank_weight,
        string_similarity_weight: weights.string_similarity_weight,
    }
}

pub(crate) fn timings(t: &StageTimings) -> Timings {
    Timings {
        embedding_ms: t.embedding_ms,
        search_ms: t.search_ms,
        string_similarity_ms: t.string_similarity_ms,
        rerank_ms: t.rerank_ms,
        total_ms: t.total_ms,
    }
}

/// Configuration structs are plain serde data: they always serialize.
pub(crate) fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The tables a question with no template could be answered from, when schemas are indexed.
fn schema_context(schema: Option<&SchemaContext>) -> Option<Vec<SchemaTableReport>> {
    schema.map(|schema| {
        schema
            .tables
            .iter()
            .map(|t| SchemaTableReport {
                datasource: t.datasource.clone(),
                table: t.table.clone(),
                text: t.text.clone(),
                score: t.score,
                similarity: t.similarity,
            })
            .collect()
    })
}

/// The text-to-SQL fallback's answer, labelled generated.
fn generated_answer(execution: switchyard_core::service::Execution) -> GeneratedAnswer {
    match execution.adapter {
        Ok(response) => GeneratedAnswer {
            status: response.status(),
            sql: response.data["sql"].as_str().map(str::to_owned),
            error: response.error().map(str::to_owned),
            content: response.content,
            data: response.data,
        },
        Err(e) => GeneratedAnswer {
            status: switchyard_contract::adapter::AdapterStatus::Error,
            sql: None,
            content: e.to_string(),
            error: Some(e.to_string()),
            data: serde_json::Value::Null,
        },
    }
}
