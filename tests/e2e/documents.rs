//! The demo's documents datasource (`templates/demo/policies`): questions about the
//! insurance policies routed to it and answered from the right document; a comparison
//! answered from both products; filters refused by name; `index build` writes the chunk
//! artifact beside the index and `eval-docs` scores a judged set.

use serde_json::{json, Value};
use switchyard_e2e::{run, run_ok, serve, switchyard};

fn documents(answer: &Value) -> Vec<String> {
    answer["data"]["chunks"]
        .as_array()
        .unwrap_or_else(|| panic!("no chunks in {answer}"))
        .iter()
        .map(|c| c["document"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn policy_questions_are_answered_from_the_right_documents() {
    let cache = tempfile::tempdir().unwrap();
    let server = serve(cache.path(), &["--templates", "templates/demo"]);

    let (status, answer) = server.post(
        "/v1/query",
        json!({"query": "What is the excess on the travel policy?"}),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["status"], "ok", "{answer}");
    assert_eq!(
        answer["metadata"]["composite_routing"]["selected_adapter"], "policies",
        "{answer}"
    );
    assert_eq!(documents(&answer)[0], "travel");
    assert_eq!(
        answer["data"]["search"], "hybrid",
        "the router sent the question's vector"
    );
    let first = &answer["data"]["chunks"][0];
    assert!(
        first["text"].as_str().unwrap().contains("75 pounds"),
        "{first}"
    );
    for signal in ["questions", "summary", "content", "bm25"] {
        assert!(
            first["scores"][signal].as_f64().is_some(),
            "{signal} in {first}"
        );
    }

    // Two products named: both answer, each with its share.
    let (_, answer) = server.post(
        "/v1/query",
        json!({"query": "Compare the no-claim discount of car and home cover"}),
    );
    let mut found = documents(&answer);
    found.sort();
    assert_eq!(found, ["car", "home"], "{answer}");
    assert_eq!(answer["data"]["balanced_by"], "product");
    assert_eq!(answer["data"]["filters"]["product"], json!(["car", "home"]));

    // An alias narrows like its value; request filters join the question's.
    let (_, answer) = server.post("/v1/query", json!({"query": "How do I make a claim on my insurance?", "filters": {"product": "house"}, "datasources": ["policies"]}),
    );
    assert_eq!(documents(&answer), ["home"], "{answer}");

    // A filter value the datasource does not know is named.
    let (status, answer) = server.post("/v1/query", json!({"query": "What is the excess on the boat policy?", "filters": {"product": "boat"}, "datasources": ["policies"]}),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["status"], "error", "{answer}");
    let message = answer["content"].as_str().unwrap_or_default().to_owned() + &answer.to_string();
    assert!(
        message.contains("product") && message.contains("boat"),
        "{answer}"
    );
}

#[test]
fn index_build_writes_the_chunks_beside_the_index_and_eval_docs_scores_them() {
    let cache = tempfile::tempdir().unwrap();
    let out = cache.path().join("demo.idx");
    run_ok(
        switchyard(cache.path())
            .args(["--templates", "templates/demo", "index", "build", "--out"])
            .arg(&out),
    );
    let chunks = cache.path().join("demo.policies.chunks");
    assert!(chunks.is_file(), "index build writes {}", chunks.display());

    // Served from the built files: the index and the chunks beside it.
    let server = serve(
        cache.path(),
        &[
            "--templates",
            "templates/demo",
            "--index",
            out.to_str().unwrap(),
        ],
    );
    let (_, answer) = server.post(
        "/v1/query",
        json!({"query": "Is windscreen damage covered by my car insurance?"}),
    );
    assert_eq!(documents(&answer)[0], "car", "{answer}");
    drop(server);

    // A corrupt chunk artifact stops start-up with its path named.
    let mut bytes = std::fs::read(&chunks).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&chunks, bytes).unwrap();
    let output = run(switchyard(cache.path()).args([
        "--templates",
        "templates/demo",
        "--index",
        out.to_str().unwrap(),
        "serve",
        "--port",
        "0",
    ]));
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("demo.policies.chunks") && stderr.contains("checksum"),
        "{stderr}"
    );

    // eval-docs on a small judged set.
    let dataset = cache.path().join("judged.jsonl");
    std::fs::write(
        &dataset,
        [
            r#"{"query_id": "1", "text": "excess per person on a trip abroad", "relevant": ["travel"]}"#,
            r#"{"query_id": "2", "text": "courtesy car while mine is repaired", "relevant": ["car"]}"#,
            r#"{"query_id": "3", "text": "subsidence claim excess", "relevant": ["home"]}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    let report = run_ok(
        switchyard(cache.path())
            .args([
                "--templates",
                "templates/demo",
                "eval-docs",
                "--datasource",
                "policies",
                "--json",
                "--stages",
                "--dataset",
            ])
            .arg(&dataset),
    );
    let report: Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["queries"], 3);
    assert_eq!(report["ndcg_at_10"], 1.0, "{report}");
    assert_eq!(report["mrr"], 1.0, "{report}");
    assert!(report["latency_ms"]["p50"].as_f64().unwrap() > 0.0);
    let stages: Vec<&str> = report["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    assert_eq!(
        stages,
        [
            "questions",
            "summary",
            "content",
            "vectors",
            "bm25",
            "fused"
        ]
    );

    let output = run(switchyard(cache.path())
        .args([
            "--templates",
            "templates/demo",
            "eval-docs",
            "--datasource",
            "hr",
            "--dataset",
        ])
        .arg(&dataset));
    assert!(!String::from_utf8_lossy(&output.stderr).contains("panicked"));
    assert!(String::from_utf8_lossy(&output.stderr).contains("not documents"));
}

/// With a threshold no template clears, every question is `no_match`: the SQL tables
/// nearest to it name the datasource that could answer, among the caller's only.
#[test]
fn questions_no_template_fits_are_pointed_at_the_tables_that_could_answer() {
    let cache = tempfile::tempdir().unwrap();
    let config = cache.path().join("strict.yaml");
    std::fs::write(
        &config,
        "composite_retrieval:\n  confidence_threshold: 0.99\n",
    )
    .unwrap();
    let server = serve(
        cache.path(),
        &[
            "--templates",
            "templates/demo",
            "--config",
            config.to_str().unwrap(),
        ],
    );
    let question = "In which currency are the salaries paid?";
    let (_, answer) = server.post("/v1/query", json!({"query": question}));
    assert_eq!(answer["status"], "no_match", "{answer}");
    assert_eq!(answer["suggested_datasource"], "hr", "{answer}");
    let context = answer["schema_context"].as_array().unwrap();
    assert_eq!(context[0]["table"], "salaries", "{answer}");
    assert!(context[0]["text"]
        .as_str()
        .unwrap()
        .starts_with("Table: salaries (Alias: salary)."));

    // /v1/route shows the same.
    let (_, report) = server.post("/v1/route", json!({"query": question}));
    assert_eq!(report["suggested_datasource"], "hr", "{report}");

    // A caller without hr never sees its tables.
    let (_, answer) = server.post(
        "/v1/query",
        json!({"query": question, "datasources": ["ev", "policies"]}),
    );
    assert_eq!(answer["status"], "no_match", "{answer}");
    for table in answer["schema_context"].as_array().into_iter().flatten() {
        assert_eq!(table["datasource"], "ev", "{answer}");
    }
    assert!(!answer.to_string().contains("salaries"), "{answer}");
}

/// An OpenAI-compatible chat server on 127.0.0.1 whose reply is `sql_for(question)`.
fn fake_sql_model(sql_for: fn(&str) -> &'static str) -> String {
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |axum::Json(body): axum::Json<Value>| async move {
            let user = body["messages"].as_array().and_then(|m| m.last()).map(|m| m["content"].to_string()).unwrap_or_default();
            axum::Json(json!({"choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": format!("```sql\n{};\n```", sql_for(&user))}}]}))
        }),
    );
    format!("http://{}/v1", switchyard_e2e::serve_app(app))
}

/// Off by default; on, a question no template fits is answered by a query the chat model
/// writes over the nearest tables — labelled generated, and refused when it would write.
#[test]
fn text_to_sql_answers_over_the_schema_context_and_refuses_writes() {
    let endpoint = fake_sql_model(|question| {
        if question.contains("Question: In which currency") {
            "SELECT DISTINCT currency FROM salaries"
        } else {
            "DELETE FROM salaries"
        }
    });
    let cache = tempfile::tempdir().unwrap();
    let config = cache.path().join("text-to-sql.yaml");
    std::fs::write(
        &config,
        format!("composite_retrieval:\n  confidence_threshold: 0.99\nllm:\n  endpoint: {endpoint}\n  model: test-model\n  text_to_sql: true\n"),
    )
    .unwrap();
    let server = serve(
        cache.path(),
        &[
            "--templates",
            "templates/demo",
            "--config",
            config.to_str().unwrap(),
        ],
    );

    let (_, answer) = server.post(
        "/v1/query",
        json!({"query": "In which currency are the salaries paid?"}),
    );
    assert_eq!(answer["status"], "no_match", "{answer}");
    let generated = &answer["generated"];
    assert_eq!(generated["status"], "ok", "{answer}");
    assert_eq!(generated["sql"], "SELECT DISTINCT currency FROM salaries");
    assert_eq!(generated["data"]["generated"], true);
    let content = generated["content"].as_str().unwrap();
    assert!(
        content.starts_with("(generated SQL)") && content.contains("USD"),
        "{content}"
    );

    let (_, answer) = server.post(
        "/v1/query",
        json!({"query": "Remove every salary record of the staff"}),
    );
    let generated = &answer["generated"];
    assert_eq!(generated["status"], "error", "{answer}");
    assert_eq!(generated["sql"], "DELETE FROM salaries");
    let error = generated["error"].as_str().unwrap();
    assert!(
        error.contains("refused") && error.contains("read-only"),
        "{error}"
    );
}
