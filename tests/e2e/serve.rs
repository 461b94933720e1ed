//! `switchyard serve`: the local HTTP API over a real socket on 127.0.0.1.

use serde_json::{json, Value};
use sha2::Digest;
use switchyard_e2e::{serve, serve_base};

#[test]
fn serves_query_route_stats_and_health() {
    let cache = tempfile::tempdir().unwrap();
    let server = serve(cache.path(), &["--templates", "templates/demo"]);
    let client = reqwest::blocking::Client::new();
    let post = |path: &str, body: &str| {
        let response = client
            .post(format!("{}{path}", server.base))
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json::<Value>().unwrap())
    };

    let (status, health) = {
        let response = client
            .get(format!("{}/v1/health", server.base))
            .send()
            .unwrap();
        (
            response.status().as_u16(),
            response.json::<Value>().unwrap(),
        )
    };
    assert_eq!((status, &health["status"]), (200, &json!("ok")));

    let (status, report) = post(
        "/v1/route",
        r#"{"query": "How many employees work in Engineering?"}"#,
    );
    assert_eq!(status, 200);
    assert_eq!(report["routing_decision"]["would_route_to"], "hr");

    // The demo's questions, answered end to end with the sample data and the tools.
    for (question, datasource, answer) in [
        (
            "How many employees work in Engineering?",
            "hr",
            "14 employees",
        ),
        ("Who are the five highest paid people in Sales?", "hr", ""),
        ("How many Teslas are registered in King County?", "ev", "40"),
        ("What is 15% of 200?", "tools", "15% of 200 is **30**"),
        (
            "How many days between 2024-01-01 and 2024-03-15?",
            "tools",
            "74",
        ),
    ] {
        let (status, body) = post("/v1/query", &json!({ "query": question }).to_string());
        assert_eq!(status, 200, "{question}: {body}");
        assert_eq!(body["status"], "ok", "{question}: {body}");
        assert_eq!(
            body["metadata"]["composite_routing"]["selected_adapter"], datasource,
            "{question}: {body}"
        );
        let content = body["content"].as_str().unwrap();
        assert!(content.contains(answer), "{question}: {content}");
    }
    let (_, body) = post(
        "/v1/query",
        r#"{"query": "Who are the five highest paid people in Sales?"}"#,
    );
    assert_eq!(body["data"]["row_count"], 5, "{body}");

    // A hostile question: only the extracted value is bound, nothing is spliced or dropped.
    let (_, body) = post(
        "/v1/query",
        r#"{"query": "How many employees work in Engineering'; DROP TABLE employees; --"}"#,
    );
    assert_eq!(body["status"], "ok", "{body}");
    assert_eq!(body["parameters"]["department"], "Engineering");
    let (_, body) = post(
        "/v1/query",
        r#"{"query": "How many employees work in Sales?"}"#,
    );
    assert!(
        body["content"].as_str().unwrap().contains("12 employees"),
        "{body}"
    );

    let (status, error) = post("/v1/query", "{\"query\": ");
    assert_eq!(status, 400);
    assert_eq!(error["error"]["field"], "body");
    let (status, error) = post(
        "/v1/query",
        &json!({ "query": "x".repeat(2001) }).to_string(),
    );
    assert_eq!(status, 400);
    assert_eq!(error["error"]["field"], "query");

    let stats: Value = client
        .get(format!("{}/v1/stats", server.base))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(stats["child_adapter_count"], 4);
}

#[test]
fn intent_catalog_answers_in_process() {
    let cache = tempfile::tempdir().unwrap();
    let server = serve_base(cache.path(), &["--templates", "templates/clinc150"]);
    let answer: Value = reqwest::blocking::Client::new()
        .post(format!("{}/v1/query", server.base))
        .body(r#"{"query": "what is the balance in my checking account"}"#)
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(answer["status"], "ok", "{answer}");
    assert_eq!(answer["data"]["intent"], "balance");
    assert_eq!(
        answer["metadata"]["composite_routing"]["selected_adapter"],
        "banking"
    );
}

#[test]
fn logs_hold_neither_question_texts_nor_api_keys() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let key = "sk-live-7f3a9c1e-never-log-me";
    let key_hash = hex::encode(sha2::Sha256::digest(key.as_bytes()));
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "auth:\n  required: true\n  api_keys: {{\"{key_hash}\": team}}\n  principals: {{team: [\"*\"]}}\n"
        ),
    )
    .unwrap();
    let log_path = dir.path().join("serve.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let server = switchyard_e2e::serve_with_logs(
        cache.path(),
        &[
            "--templates".as_ref(),
            "templates/demo".as_ref(),
            "--config".as_ref(),
            config.as_os_str(),
        ],
        log.into(),
        "debug",
    );
    let client = reqwest::blocking::Client::new();
    let marker = "zanzibar-quokka-4471";
    let questions = [
        format!("How many employees work in Engineering, {marker}?"),
        format!("what is 15% of 200 {marker}"),
        format!("{marker} tell me something off topic"),
        format!("How many employees work in Sales and what is 15% of 200 {marker}?"),
    ];
    for (i, question) in questions.iter().enumerate() {
        for path in ["/v1/query", "/v1/route"] {
            let status = client
                .post(format!("{}{path}", server.base))
                .header("x-api-key", key)
                .json(&json!({"query": question, "session_id": format!("s{i}")}))
                .send()
                .unwrap()
                .status();
            assert!(status.is_success(), "{path} {question}: {status}");
        }
    }
    // A wrong key and a malformed body: refused, and neither echoed into the log.
    let wrong = client
        .post(format!("{}/v1/query", server.base))
        .header("x-api-key", format!("{key}-wrong"))
        .json(&json!({"query": marker}))
        .send()
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);
    let bad = client
        .post(format!("{}/v1/query", server.base))
        .header("x-api-key", key)
        .header("content-type", "application/json")
        .body(format!("{{\"query\": \"{marker}\""))
        .send()
        .unwrap();
    assert_eq!(bad.status().as_u16(), 400);
    drop(server);

    let logs = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        logs.contains("routed"),
        "the run logged its requests:\n{logs}"
    );
    assert!(
        !logs.contains(marker),
        "a question's text is in the log:\n{logs}"
    );
    assert!(!logs.contains(key), "the API key is in the log:\n{logs}");
    assert!(!logs.contains(&key_hash), "the key's hash is in the log");
}

/// The demo catalog with its `ev` datasource on the MariaDB server that
/// `./infra/scripts/mariadb.sh start` runs (URL in SWITCHYARD_TEST_MYSQL_URL; `test.sh`
/// starts it): the same templates and examples, so the same adapted encoder.
#[test]
fn answers_from_mariadb_through_serve() {
    let variable = "SWITCHYARD_TEST_MYSQL_URL";
    assert!(
        std::env::var_os(variable).is_some(),
        "{variable} is not set: start the server with `./infra/scripts/mariadb.sh start` and export \
         {variable}=mysql://root@127.0.0.1:53306/ev (./infra/scripts/test.sh does both)"
    );
    let demo = switchyard_e2e::repo_root().join("templates/demo");
    let catalog = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(&demo).unwrap() {
        let entry = entry.unwrap();
        let target = catalog.path().join(entry.file_name());
        if entry.file_name() == "ev" {
            std::fs::create_dir(&target).unwrap();
            std::fs::copy(
                entry.path().join("templates.yaml"),
                target.join("templates.yaml"),
            )
            .unwrap();
            let spec = std::fs::read_to_string(entry.path().join("datasource.yaml")).unwrap();
            let head = spec.split("connection:").next().unwrap();
            std::fs::write(
                target.join("datasource.yaml"),
                format!(
                    "{head}connection:\n  engine: mysql\n  url_env: {variable}\nlimits:\n  max_rows: 1000\n  timeout_ms: 5000\n"
                ),
            )
            .unwrap();
        } else {
            std::os::unix::fs::symlink(entry.path(), &target).unwrap();
        }
    }
    let cache = tempfile::tempdir().unwrap();
    let templates = catalog.path().to_str().unwrap().to_owned();
    let server = serve(cache.path(), &["--templates", templates.as_str()]);
    for (question, template, answer) in [
        (
            "How many Teslas are registered in King County?",
            "vehicles_count_by_make_in_county",
            "40 Tesla vehicles are registered in King County.",
        ),
        (
            "Ford EV registrations in Snohomish county",
            "vehicles_count_by_make_in_county",
            "2 Ford vehicles are registered in Snohomish County.",
        ),
    ] {
        let (status, body) = server.post("/v1/query", json!({ "query": question }));
        assert_eq!(status, 200, "{question}: {body}");
        assert_eq!(body["metadata"]["template_id"], template, "{body}");
        assert_eq!(body["content"], answer, "{question}: {body}");
    }
}
