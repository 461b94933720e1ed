//! The providers against real HTTP servers on 127.0.0.1 that speak each API's JSON. The
//! fake servers derive every score from the candidate text they received (`candidate N`
//! scores N/10), so a request or answer mapped to the wrong candidate shows.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode, Uri};
use axum::Router;
use serde_json::{json, Value};
use switchyard_catalog::error::Error;
use switchyard_contract::rerank::{RerankCandidate, Reranker};
use switchyard_contract::rerank::{RerankProvider, Reranking};
use switchyard_contract::ContractError;
use switchyard_rerank::from_config;

/// One request as the fake server saw it.
#[derive(Debug, Clone)]
struct Received {
    path: String,
    headers: HeaderMap,
    body: Value,
}

type Log = Arc<Mutex<Vec<Received>>>;

/// A server answering every POST with `reply(body)` (status, body text); it records each
/// request before answering.
async fn server<F>(reply: F) -> (String, Log)
where
    F: Fn(&Value) -> (u16, String, Duration) + Clone + Send + Sync + 'static,
{
    let log: Log = Arc::default();
    let recorded = log.clone();
    let app = Router::new().fallback(move |uri: Uri, headers: HeaderMap, body: String| {
        let reply = reply.clone();
        let recorded = recorded.clone();
        async move {
            let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            recorded.lock().unwrap().push(Received {
                path: uri.path().to_owned(),
                headers,
                body: body.clone(),
            });
            let (status, text, delay) = reply(&body);
            tokio::time::sleep(delay).await;
            (
                StatusCode::from_u16(status).unwrap(),
                [("content-type", "application/json")],
                text,
            )
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{address}"), log)
}

fn candidate(n: u32) -> RerankCandidate {
    RerankCandidate {
        datasource: "weather".into(),
        template_id: format!("t{n}"),
        description: format!("candidate {n}"),
        nl_examples: vec![format!("example question {n}")],
    }
}

/// The numbers N of every `candidate N` in `text`, in order.
fn candidate_numbers(text: &str) -> Vec<u32> {
    text.split("candidate ")
        .skip(1)
        .filter_map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect()
}

fn settings(provider: RerankProvider, endpoint: &str, key_env: Option<&str>) -> Reranking {
    Reranking {
        enabled: true,
        provider: Some(provider),
        endpoint: Some(endpoint.to_owned()),
        model: Some("judge-1".into()),
        api_key_env: key_env.map(str::to_owned),
        timeout_ms: 5_000,
        top_candidates: 5,
        batch_size: 10,
        margin: 0.1,
        weight: 0.5,
    }
}

fn build(settings: &Reranking) -> Arc<dyn Reranker> {
    match from_config(settings) {
        Ok(Some(reranker)) => reranker,
        Ok(None) => panic!("no reranker built"),
        Err(error) => panic!("{error}"),
    }
}

/// Set a test's own key variable (each test uses a distinct name).
fn key_env(name: &str, value: &str) -> String {
    std::env::set_var(name, value);
    name.to_owned()
}

fn rerank_error(result: switchyard_contract::error::Result<Vec<f32>>) -> String {
    match result {
        Ok(scores) => panic!("expected an error, got scores {scores:?}"),
        Err(error @ ContractError::Rerank { .. }) => {
            // The provider's error is kept as the source, not only as text.
            let kept = std::error::Error::source(&error)
                .and_then(|e| e.downcast_ref::<switchyard_rerank::RerankError>());
            assert!(kept.is_some(), "no RerankError under {error:?}");
            error.to_string()
        }
        Err(other) => panic!("expected a rerank error, got {other}"),
    }
}

/// A Cohere-style server: results sorted by relevance (not in the documents' order).
fn cohere_reply(body: &Value) -> (u16, String, Duration) {
    let documents = body["documents"].as_array().cloned().unwrap_or_default();
    let mut results: Vec<Value> = documents
        .iter()
        .enumerate()
        .map(|(index, document)| {
            let n = candidate_numbers(document.as_str().unwrap())[0];
            json!({"index": index, "relevance_score": f64::from(n) / 10.0})
        })
        .collect();
    results.sort_by(|a, b| {
        b["relevance_score"]
            .as_f64()
            .partial_cmp(&a["relevance_score"].as_f64())
            .unwrap()
    });
    (200, json!({"results": results}).to_string(), Duration::ZERO)
}

/// The `{"scores": [...]}` a judge would give the candidates named in `prompt`.
fn judge_scores(prompt: &str) -> Value {
    let scores: Vec<f64> = candidate_numbers(prompt)
        .into_iter()
        .map(|n| f64::from(n) / 10.0)
        .collect();
    json!({ "scores": scores })
}

fn openai_prompt(body: &Value) -> String {
    body["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// An OpenAI-style judge that wraps its JSON in prose and a code fence.
fn openai_reply(body: &Value) -> (u16, String, Duration) {
    let scores = judge_scores(&openai_prompt(body));
    let content = format!("Here are my scores:\n```json\n{scores}\n```\nLet me know!");
    let answer =
        json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]});
    (200, answer.to_string(), Duration::ZERO)
}

#[tokio::test]
async fn cohere_sends_the_documents_in_order_and_maps_results_back_by_index() {
    let (endpoint, log) = server(cohere_reply).await;
    let key = key_env("SWITCHYARD_RERANK_TEST_COHERE_KEY", "cohere-secret");
    // A trailing slash on the endpoint must not double the path's slash.
    let reranker = build(&settings(
        RerankProvider::Cohere,
        &format!("{endpoint}/"),
        Some(&key),
    ));
    assert_eq!(reranker.id(), "cohere:judge-1");

    let candidates = [candidate(3), candidate(1), candidate(2)];
    let scores = reranker
        .rerank("weather in Oslo", &candidates)
        .await
        .unwrap();
    assert_eq!(scores, vec![0.3, 0.1, 0.2]);

    let received = log.lock().unwrap().clone();
    assert_eq!(received.len(), 1, "all candidates go in one request");
    let request = &received[0];
    assert_eq!(request.path, "/v1/rerank");
    assert_eq!(request.headers["authorization"], "Bearer cohere-secret");
    assert_eq!(request.body["model"], "judge-1");
    assert_eq!(request.body["query"], "weather in Oslo");
    assert_eq!(request.body["top_n"], 3);
    let documents: Vec<String> = candidates.iter().map(RerankCandidate::document).collect();
    assert_eq!(request.body["documents"], json!(documents));
}

#[tokio::test]
async fn cohere_clamps_scores_and_refuses_missing_indexes() {
    let (endpoint, _) = server(|_: &Value| {
        let results = json!({"results": [
            {"index": 1, "relevance_score": 1.4},
            {"index": 0, "relevance_score": -0.3},
        ]});
        (200, results.to_string(), Duration::ZERO)
    })
    .await;
    let reranker = build(&settings(RerankProvider::Cohere, &endpoint, None));
    let scores = reranker
        .rerank("q", &[candidate(1), candidate(2)])
        .await
        .unwrap();
    assert_eq!(scores, vec![0.0, 1.0]);

    let error = rerank_error(
        reranker
            .rerank("q", &[candidate(1), candidate(2), candidate(3)])
            .await,
    );
    assert!(
        error.contains("response has 2 scores for 3 candidates"),
        "{error}"
    );
    assert!(error.contains("index 2"), "{error}");
}

#[tokio::test]
async fn cohere_sends_no_authorization_without_a_key() {
    let (endpoint, log) = server(cohere_reply).await;
    let reranker = build(&settings(RerankProvider::Cohere, &endpoint, None));
    reranker.rerank("q", &[candidate(1)]).await.unwrap();
    let received = log.lock().unwrap().clone();
    assert!(!received[0].headers.contains_key("authorization"));
}

#[tokio::test]
async fn openai_judge_sends_model_and_messages_and_parses_fenced_json() {
    let (endpoint, log) = server(openai_reply).await;
    let key = key_env("SWITCHYARD_RERANK_TEST_OPENAI_KEY", "openai-secret");
    let reranker = build(&settings(
        RerankProvider::Openai,
        &format!("{endpoint}/v1"),
        Some(&key),
    ));
    assert_eq!(reranker.id(), "openai:judge-1");

    let scores = reranker
        .rerank("weather in Oslo", &[candidate(7), candidate(2)])
        .await
        .unwrap();
    assert_eq!(scores, vec![0.7, 0.2]);

    let received = log.lock().unwrap().clone();
    assert_eq!(received.len(), 1);
    let request = &received[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.headers["authorization"], "Bearer openai-secret");
    assert_eq!(request.body["model"], "judge-1");
    assert_eq!(request.body["temperature"], 0);
    assert_eq!(request.body["messages"][0]["role"], "system");
    assert!(request.body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("\"scores\""));
    assert_eq!(request.body["messages"][1]["role"], "user");
    let prompt = openai_prompt(&request.body);
    assert!(prompt.contains("weather in Oslo"), "{prompt}");
    assert!(prompt.contains("[1] candidate 7"), "{prompt}");
    assert!(prompt.contains("[2] candidate 2"), "{prompt}");
}

#[tokio::test]
async fn openai_judge_batches_and_keeps_the_candidates_order() {
    // The batch holding candidate 1 answers last, so arrival order differs from batch order.
    let (endpoint, log) = server(|body: &Value| {
        let (status, text, _) = openai_reply(body);
        let first = candidate_numbers(&openai_prompt(body)).contains(&1);
        let delay = Duration::from_millis(if first { 300 } else { 0 });
        (status, text, delay)
    })
    .await;
    let mut settings = settings(RerankProvider::Openai, &endpoint, None);
    settings.batch_size = 2;
    let reranker = build(&settings);

    let candidates: Vec<_> = (1..=5).map(candidate).collect();
    let scores = reranker.rerank("q", &candidates).await.unwrap();
    assert_eq!(scores, vec![0.1, 0.2, 0.3, 0.4, 0.5]);

    let received = log.lock().unwrap().clone();
    assert_eq!(received.len(), 3);
    let mut batches: Vec<Vec<u32>> = received
        .iter()
        .map(|r| candidate_numbers(&openai_prompt(&r.body)))
        .collect();
    batches.sort();
    assert_eq!(batches, vec![vec![1, 2], vec![3, 4], vec![5]]);
}

#[tokio::test]
async fn openai_judge_sends_the_batches_concurrently() {
    let (endpoint, log) = server(|body: &Value| {
        let (status, text, _) = openai_reply(body);
        (status, text, Duration::from_millis(500))
    })
    .await;
    let mut settings = settings(RerankProvider::Openai, &endpoint, None);
    settings.batch_size = 1;
    let reranker = build(&settings);

    let started = Instant::now();
    let candidates: Vec<_> = (1..=4).map(candidate).collect();
    let scores = reranker.rerank("q", &candidates).await.unwrap();
    let elapsed = started.elapsed();
    assert_eq!(scores, vec![0.1, 0.2, 0.3, 0.4]);
    assert_eq!(log.lock().unwrap().len(), 4);
    // One after another would take at least 2 s.
    assert!(elapsed < Duration::from_millis(1500), "took {elapsed:?}");
}

#[tokio::test]
async fn a_failing_batch_fails_the_whole_rerank() {
    let (endpoint, _) = server(|body: &Value| {
        if candidate_numbers(&openai_prompt(body)).contains(&3) {
            (503, "overloaded".into(), Duration::ZERO)
        } else {
            openai_reply(body)
        }
    })
    .await;
    let mut settings = settings(RerankProvider::Openai, &endpoint, None);
    settings.batch_size = 2;
    let reranker = build(&settings);
    let candidates: Vec<_> = (1..=4).map(candidate).collect();
    let error = rerank_error(reranker.rerank("q", &candidates).await);
    assert!(error.contains("503"), "{error}");
    assert!(error.contains("overloaded"), "{error}");
}

#[tokio::test]
async fn anthropic_judge_sends_its_headers_and_parses_the_text_block() {
    let (endpoint, log) = server(|body: &Value| {
        let prompt = body["messages"][0]["content"].as_str().unwrap_or_default();
        let answer = json!({
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": judge_scores(prompt).to_string()}],
        });
        (200, answer.to_string(), Duration::ZERO)
    })
    .await;
    let key = key_env("SWITCHYARD_RERANK_TEST_ANTHROPIC_KEY", "anthropic-secret");
    let reranker = build(&settings(RerankProvider::Anthropic, &endpoint, Some(&key)));
    assert_eq!(reranker.id(), "anthropic:judge-1");

    let scores = reranker
        .rerank("weather in Oslo", &[candidate(2), candidate(9)])
        .await
        .unwrap();
    assert_eq!(scores, vec![0.2, 0.9]);

    let received = log.lock().unwrap().clone();
    assert_eq!(received.len(), 1);
    let request = &received[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.headers["x-api-key"], "anthropic-secret");
    assert_eq!(request.headers["anthropic-version"], "2023-06-01");
    assert_eq!(request.headers["content-type"], "application/json");
    assert!(!request.headers.contains_key("authorization"));
    assert_eq!(request.body["model"], "judge-1");
    assert_eq!(request.body["max_tokens"], 256);
    assert_eq!(request.body["temperature"], 0);
    assert!(request.body["system"]
        .as_str()
        .unwrap()
        .contains("\"scores\""));
    assert_eq!(request.body["messages"][0]["role"], "user");
    assert!(request.body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("[2] candidate 9"));
}

#[tokio::test]
async fn http_errors_name_the_status_and_the_body() {
    let (endpoint, _) =
        server(|_: &Value| (500, "internal: model crashed".into(), Duration::ZERO)).await;
    let reranker = build(&settings(RerankProvider::Cohere, &endpoint, None));
    let error = rerank_error(reranker.rerank("q", &[candidate(1)]).await);
    assert!(error.contains("cohere:judge-1"), "{error}");
    assert!(error.contains("HTTP 500"), "{error}");
    assert!(error.contains("internal: model crashed"), "{error}");
}

#[tokio::test]
async fn malformed_json_is_an_error() {
    let (endpoint, _) = server(|_: &Value| (200, "{\"results\": [".into(), Duration::ZERO)).await;
    let reranker = build(&settings(RerankProvider::Cohere, &endpoint, None));
    let error = rerank_error(reranker.rerank("q", &[candidate(1)]).await);
    assert!(error.contains("unexpected response"), "{error}");
    assert!(error.contains("{\"results\": ["), "{error}");
}

#[tokio::test]
async fn judge_prose_without_scores_is_an_error() {
    let (endpoint, _) = server(|_: &Value| {
        let answer = json!({"choices": [{"message": {"content": "The first one, clearly."}}]});
        (200, answer.to_string(), Duration::ZERO)
    })
    .await;
    let reranker = build(&settings(RerankProvider::Openai, &endpoint, None));
    let error = rerank_error(reranker.rerank("q", &[candidate(1)]).await);
    assert!(error.contains("cannot parse judge output"), "{error}");
    assert!(error.contains("The first one, clearly."), "{error}");
}

#[tokio::test]
async fn a_wrong_number_of_scores_is_an_error() {
    let (endpoint, _) = server(|_: &Value| {
        let answer = json!({"choices": [{"message": {"content": "{\"scores\": [0.5]}"}}]});
        (200, answer.to_string(), Duration::ZERO)
    })
    .await;
    let reranker = build(&settings(RerankProvider::Openai, &endpoint, None));
    let error = rerank_error(reranker.rerank("q", &[candidate(1), candidate(2)]).await);
    assert!(
        error.contains("response has 1 scores for 2 candidates"),
        "{error}"
    );
}

#[tokio::test]
async fn a_slow_provider_times_out() {
    let (endpoint, _) = server(|body: &Value| {
        let (status, text, _) = cohere_reply(body);
        (status, text, Duration::from_secs(10))
    })
    .await;
    let mut settings = settings(RerankProvider::Cohere, &endpoint, None);
    settings.timeout_ms = 300;
    let reranker = build(&settings);
    let started = Instant::now();
    let error = rerank_error(reranker.rerank("q", &[candidate(1)]).await);
    let elapsed = started.elapsed();
    assert!(error.contains("timed out after 300 ms"), "{error}");
    assert!(elapsed >= Duration::from_millis(250), "took {elapsed:?}");
    assert!(elapsed < Duration::from_millis(2300), "took {elapsed:?}");
}

#[test]
fn disabled_or_providerless_settings_build_nothing() {
    let mut disabled = settings(RerankProvider::Cohere, "http://127.0.0.1:1", None);
    disabled.enabled = false;
    assert!(from_config(&disabled).unwrap().is_none());

    let mut providerless = settings(RerankProvider::Cohere, "http://127.0.0.1:1", None);
    providerless.provider = None;
    assert!(from_config(&providerless).unwrap().is_none());
}

#[test]
fn a_missing_api_key_variable_is_a_configuration_error() {
    let variable = "SWITCHYARD_RERANK_TEST_NEVER_SET_KEY";
    std::env::remove_var(variable);
    let settings = settings(RerankProvider::Openai, "http://127.0.0.1:1", Some(variable));
    let error = from_config(&settings)
        .err()
        .expect("a missing key must fail");
    assert!(
        matches!(error, ContractError::Catalog(Error::Config { .. })),
        "{error}"
    );
    let message = error.to_string();
    assert!(message.contains(variable), "{message}");
    assert!(
        message.contains("composite_retrieval.reranking.api_key_env"),
        "{message}"
    );
}

#[test]
fn an_endpoint_must_be_http_or_https() {
    let settings = settings(RerankProvider::Cohere, "file:///etc/passwd", None);
    let error = from_config(&settings).err().expect("a file URL must fail");
    let message = error.to_string();
    assert!(message.contains("http or https"), "{message}");
    assert!(
        message.contains("composite_retrieval.reranking.endpoint"),
        "{message}"
    );
}
