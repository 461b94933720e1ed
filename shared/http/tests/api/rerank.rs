//! The reranking stage: its answers applied and cached, skipped for clear winners, and
//! failing or slow rerankers degrading to the other stages.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use switchyard_catalog::auth::Access;
use switchyard_catalog::BoxFuture;
use switchyard_contract::rerank::{RerankCandidate, Reranker};
use switchyard_contract::ContractError;
use switchyard_core::config::Config;
use switchyard_core::rerank::RerankStage;
use switchyard_core::rerank_cache::MemoryRerankCache;

use crate::setup::{api, call, config_with, service, TestApi};

/// A reranker that counts its calls and answers after `delay`, or fails.
struct ScriptedReranker {
    calls: AtomicUsize,
    delay: Duration,
    fail: bool,
}

impl ScriptedReranker {
    fn new(delay_ms: u64, fail: bool) -> Arc<ScriptedReranker> {
        Arc::new(ScriptedReranker {
            calls: AtomicUsize::new(0),
            delay: Duration::from_millis(delay_ms),
            fail,
        })
    }
}

impl Reranker for ScriptedReranker {
    fn id(&self) -> &str {
        "scripted"
    }

    fn rerank<'a>(
        &'a self,
        _query: &'a str,
        candidates: &'a [RerankCandidate],
    ) -> BoxFuture<'a, switchyard_contract::error::Result<Vec<f32>>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            if self.fail {
                return Err(ContractError::Rerank {
                    reranker: "scripted".into(),
                    message: "HTTP 503 from the provider".into(),
                    source: None,
                });
            }
            // Prefer the last candidate, so applying the scores is visible.
            Ok((0..candidates.len())
                .map(|i| (i + 1) as f32 / candidates.len() as f32)
                .collect())
        })
    }
}

fn rerank_api(reranker: Arc<ScriptedReranker>, margin: &str) -> TestApi {
    let config = config_with(&[
        (
            "SWITCHYARD__COMPOSITE_RETRIEVAL__RERANKING__ENABLED",
            "true",
        ),
        ("SWITCHYARD__COMPOSITE_RETRIEVAL__RERANKING__MARGIN", margin),
        (
            "SWITCHYARD__COMPOSITE_RETRIEVAL__RERANKING__TIMEOUT_MS",
            "200",
        ),
        ("SWITCHYARD__COMPOSITE_RETRIEVAL__RERANKING__WEIGHT", "3"),
    ]);
    let cache = Arc::new(MemoryRerankCache::new(100));
    Arc::new(service(config).with_rerank(RerankStage::new(reranker, cache, 300)))
}

fn rerank_status(api: &TestApi, query: &str) -> (Value, Value) {
    let report = call(
        api,
        "POST",
        "/v1/route",
        &json!({ "query": query }).to_string(),
    )
    .body;
    (report["configuration"]["rerank"].clone(), report)
}

#[test]
fn reranker_answers_are_applied_and_cached() {
    let reranker = ScriptedReranker::new(0, false);
    let api = rerank_api(reranker.clone(), "5");
    let (status, report) = rerank_status(&api, "Top five salaries");
    assert_eq!(status["status"], "applied", "{report}");
    // The cache is every caller's: whether an answer came from it is not said.
    assert!(status.get("cached").is_none(), "{status}");
    let matches = report["all_matches"].as_array().unwrap();
    assert!(matches.iter().all(|m| m["rerank_score"].is_number()));
    assert!(
        report["configuration"]["scoring_weights"]["reranking"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    // A weight of 3 on scores that favour the last candidate reorders the ranking.
    let last = rerank_status(&api, "Top five salaries").1["all_matches"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(last[0]["rerank_score"], 1.0, "{last:?}");

    // The repeated query was answered from the cache: one provider call in all.
    let (status, _) = rerank_status(&api, "  top five SALARIES ");
    assert_eq!(status["status"], "applied", "{status}");
    assert!(status.get("cached").is_none(), "{status}");
    assert_eq!(reranker.calls.load(Ordering::SeqCst), 1);
}

#[test]
fn clear_winners_skip_the_reranker() {
    let reranker = ScriptedReranker::new(0, false);
    let api = rerank_api(reranker.clone(), "0");
    let (status, _) = rerank_status(&api, "Top five salaries");
    assert_eq!(status["status"], "not_needed");
    assert_eq!(reranker.calls.load(Ordering::SeqCst), 0);
}

#[test]
fn failing_or_slow_rerankers_degrade_to_the_other_stages() {
    let plain = api(Config::default());
    let expected = plain
        .router()
        .route("Top five salaries", &Access::All)
        .unwrap();
    for (reranker, error) in [
        (ScriptedReranker::new(0, true), "HTTP 503"),
        (
            ScriptedReranker::new(2_000, false),
            "timed out after 200 ms",
        ),
    ] {
        let api = rerank_api(reranker, "5");
        let began = std::time::Instant::now();
        let (status, report) = rerank_status(&api, "Top five salaries");
        assert!(began.elapsed() < Duration::from_millis(1_500));
        assert_eq!(status["status"], "failed", "{report}");
        assert!(
            status["error"].as_str().unwrap().contains(error),
            "{status}"
        );
        assert_eq!(
            report["routing_decision"]["selected_template"],
            expected.best().unwrap().template_id.as_str()
        );
        assert_eq!(report["configuration"]["scoring_weights"]["reranking"], 0.0);
        let response = call(
            &api,
            "POST",
            "/v1/query",
            r#"{"query": "Will it rain tomorrow?"}"#,
        );
        assert_eq!(response.status, 200, "{}", response.body);
        assert_eq!(
            response.body["metadata"]["composite_routing"]["multistage_scoring"]["rerank"]
                ["status"],
            "failed"
        );
    }
}
