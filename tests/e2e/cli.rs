//! The `switchyard` command, run as a user runs it.

use serde_json::Value;
use switchyard_e2e::{repo_root, run, run_ok, switchyard, switchyard_base};

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn route_selects_hr_and_tools_on_the_demo_catalog() {
    let cache = tempfile::tempdir().unwrap();
    let report = json(&run_ok(switchyard(cache.path()).args([
        "route",
        "How many employees work in Engineering?",
        "--json",
    ])));
    assert_eq!(
        report["routing_decision"]["would_route_to"], "hr",
        "{report:#}"
    );
    assert_eq!(
        report["routing_decision"]["selected_template"],
        "employees_count_by_department"
    );
    assert_eq!(
        report["configuration"]["adapters_searched"],
        serde_json::json!(["ev", "hr", "policies", "tools"])
    );

    let table = run_ok(switchyard(cache.path()).args(["route", "What is 15% of 200?"]));
    assert!(table.contains("→ tools / calculator_percentage"), "{table}");

    let report = json(&run_ok(switchyard(cache.path()).args([
        "route",
        "How many Teslas are registered in King County?",
        "--json",
    ])));
    assert_eq!(
        report["routing_decision"]["would_route_to"], "ev",
        "{report:#}"
    );

    // The tools datasource's negative examples keep a sports question off the clock.
    let report = json(&run_ok(switchyard(cache.path()).args([
        "route",
        "who won the football game yesterday",
        "--json",
    ])));
    assert!(
        report["routing_decision"]["would_route_to"].is_null(),
        "{report:#}"
    );
    // The clock scores highest, and only the negative example stops it.
    let matches = report["all_matches"].as_array().unwrap();
    let clock = matches
        .iter()
        .find(|m| m["template_id"] == "datetime_now")
        .expect("datetime_now is a candidate");
    let score = |m: &Value| m["combined_score"].as_f64().unwrap();
    assert!(
        matches.iter().all(|m| score(m) <= score(clock)),
        "{report:#}"
    );
    assert_eq!(
        clock["declined_by"]["negative_example"], "Who won the match last night?",
        "{report:#}"
    );
}

#[test]
fn eval_on_clinc150_meets_the_floor() {
    let cache = tempfile::tempdir().unwrap();
    let dataset = repo_root().join("tests/data/clinc150/val.jsonl");
    let out = run_ok(
        switchyard_base(cache.path())
            .args([
                "--templates",
                "templates/clinc150",
                "eval",
                "--json",
                "--latency-samples",
                "20",
                "--dataset",
            ])
            .arg(&dataset),
    );
    let report = json(&out);
    let intent = report["intent_accuracy"].as_f64().unwrap();
    let datasource = report["datasource_accuracy"].as_f64().unwrap();
    assert!(intent >= 0.85, "intent accuracy {intent}");
    assert!(datasource >= 0.94, "datasource accuracy {datasource}");
    for key in [
        "in_scope_accuracy",
        "oos_recall",
        "oos_precision",
        "threshold",
    ] {
        let value = report[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key} missing"));
        assert!((0.0..=1.0).contains(&value), "{key} = {value}");
    }
    for key in ["p50", "p95", "p99"] {
        assert!(
            report["latency_ms"][key].as_f64().unwrap() > 0.0,
            "latency {key}"
        );
    }
    assert_eq!(report["queries"], 3100);
    assert_eq!(report["oos_queries"], 100);
}

#[test]
fn eval_on_the_demo_questions_routes_and_refuses() {
    let cache = tempfile::tempdir().unwrap();
    let dataset = repo_root().join("tests/data/demo/queries.jsonl");
    let report = json(&run_ok(
        switchyard(cache.path())
            .args(["eval", "--json", "--latency-samples", "5", "--dataset"])
            .arg(&dataset),
    ));
    assert_eq!(report["queries"], 65);
    let intent = report["intent_accuracy"].as_f64().unwrap();
    let in_scope = report["in_scope_accuracy"].as_f64().unwrap();
    let refused = report["oos_recall"].as_f64().unwrap();
    // Measured 0.956, 0.956 (2 of 45 missed: average asked as a product, and a headcount
    // per department as one department's) and 0.75 (15 of 20; 0.65 without the tools
    // datasource's negative examples). The bounds leave one more miss of each kind: a
    // question fewer is 0.022 in scope and 0.05 off topic.
    assert!(intent >= 0.93, "intent accuracy {intent}");
    assert!(
        in_scope >= 0.93,
        "in-scope accuracy at the threshold {in_scope}"
    );
    assert!(refused >= 0.70, "off-topic questions refused {refused}");
}

#[test]
fn eval_on_conversations_shows_the_ceiling_and_where_the_errors_come_from() {
    let cache = tempfile::tempdir().unwrap();
    let dataset = repo_root().join("tests/data/demo/conversations.jsonl");
    let turns_out = cache.path().join("turns.jsonl");
    let report = json(&run_ok(
        switchyard(cache.path())
            .args(["eval", "--json", "--latency-samples", "0", "--dataset"])
            .arg(&dataset)
            .arg("--turns-out")
            .arg(&turns_out),
    ));
    let conversation = &report["conversation"];
    // --turns-out: one line per replayed turn, what it saw and chose, agreeing with the
    // report's accuracy.
    let records: Vec<serde_json::Value> = std::fs::read_to_string(&turns_out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 16);
    assert!(records
        .iter()
        .all(|r| r["own"].as_array().is_some_and(|o| !o.is_empty())));
    // The previous question with the turn is read for later turns that need it: fragments
    // and questions pointing back (`anaphora_words`), never for a first turn.
    assert!(records
        .iter()
        .filter(|r| r["position"] != 0)
        .any(|r| r["joint"].is_array()));
    assert!(records
        .iter()
        .filter(|r| r["position"] == 0)
        .all(|r| !r["joint"].is_array()));
    let right = records.iter().filter(|r| r["right"] == true).count() as f64 / 16.0;
    assert!(
        (right - conversation["with_session"]["all"].as_f64().unwrap()).abs() < 1e-9,
        "{right} against {conversation}"
    );
    assert_eq!(conversation["sessions"], 4, "{conversation}");
    assert_eq!(conversation["turns"]["all"], 16, "{conversation}");
    let share = |v: &serde_json::Value| v.as_f64().unwrap();
    let with_session = share(&conversation["with_session"]["all"]);
    // The split covers every wrong turn once: its shares add up to the error rate.
    let errors = &conversation["errors"];
    let wrong: f64 = [
        "first_turn",
        "carried_from_first",
        "carried_later",
        "wrong_stay",
        "wrong_switch",
        "wrong_target",
    ]
    .iter()
    .map(|k| share(&errors[*k]))
    .sum();
    assert!(
        (wrong - (1.0 - with_session)).abs() < 1e-9,
        "split {wrong} against {with_session} right: {conversation}"
    );
    // The oracle keeps its choice on every continuing turn: a right first turn carries
    // through each follow-up ("And in Sales?"), which alone route elsewhere.
    let oracle = &conversation["oracle"];
    assert!(share(&oracle["first"]) >= 0.75, "{conversation}");
    assert!(
        share(&oracle["continuing"]) >= share(&conversation["without_session"]["continuing"]),
        "{conversation}"
    );
}

#[test]
fn bench_reports_cold_start_and_percentiles_on_one_thread() {
    let cache = tempfile::tempdir().unwrap();
    let dataset = repo_root().join("tests/data/demo/queries.jsonl");
    let report = json(&run_ok(
        switchyard(cache.path())
            .args([
                "bench",
                "--json",
                "--queries",
                "20",
                "--synthetic",
                "500,60",
                "--dataset",
            ])
            .arg(&dataset),
    ));
    assert_eq!(report["threads"], 1, "{report:#}");
    assert_eq!(report["queries"], 20);
    assert!(report["model"].as_str().unwrap().contains("int8"));
    let ms = |key: &str| report[key].as_f64().unwrap_or_else(|| panic!("{key}"));
    assert!(ms("model_load_ms") > 0.0 && ms("first_query_ms") > 0.0);
    assert!(ms("cold_start_ms") >= ms("model_load_ms") + ms("index_load_ms"));
    for stage in ["embedding_ms", "route_ms"] {
        let p = |q: &str| report[stage][q].as_f64().unwrap();
        assert!(
            0.0 < p("p50") && p("p50") <= p("p95") && p("p95") <= p("p99"),
            "{stage}: {report:#}"
        );
        assert_eq!(report[stage]["samples"], 20);
    }
    // One row per synthetic size, smallest first, each built, loaded and routed.
    let rows = report["synthetic"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{report:#}");
    assert_eq!(
        (rows[0]["templates"].as_u64(), rows[1]["templates"].as_u64()),
        (Some(60), Some(500))
    );
    for row in rows {
        assert!(row["artifact_bytes"].as_u64().unwrap() > 0, "{row:#}");
        assert!(row["load_ms"].as_f64().unwrap() > 0.0, "{row:#}");
        assert!(row["route_ms"]["p50"].as_f64().unwrap() > 0.0, "{row:#}");
        // Both under the head's limit: the head scores every template, as the exact scan's
        // copy does, so they agree on every query.
        assert_eq!(row["search"], "head", "{row:#}");
        assert_eq!(row["top1_agreement"].as_f64(), Some(1.0), "{row:#}");
    }

    let refused = run(switchyard(cache.path()).args(["bench", "--queries", "0"]));
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("--queries"), "{stderr}");
}

#[test]
fn index_build_inspect_and_corruption() {
    let cache = tempfile::tempdir().unwrap();
    let artifact = cache.path().join("demo.idx");
    let built = run(switchyard(cache.path())
        .args(["index", "build", "--out"])
        .arg(&artifact));
    let stderr = String::from_utf8_lossy(&built.stderr);
    assert!(built.status.success(), "{stderr}");
    // `mode: auto` keeps the adapted encoder: the base model does not route the examples
    // its training held out better (demo: 33 of 38 against 29 when measured).
    let gate = stderr
        .lines()
        .find_map(|l| l.strip_prefix("encoder: adapted (held-out examples routed right: "))
        .unwrap_or_else(|| panic!("the gate's verdict: {stderr}"));
    let shares: Vec<f64> = gate
        .split(['%', ' '])
        .filter_map(|w| w.parse().ok())
        .collect();
    assert!(shares.len() >= 2 && shares[0] >= shares[1], "{gate}");
    let manifest = json(&run_ok(
        switchyard(cache.path())
            .args(["index", "inspect"])
            .arg(&artifact),
    ));
    // The demo catalog's encoder is adapted to it (the default), and says from what.
    let model_id = manifest["model_id"].as_str().unwrap();
    assert!(
        model_id.starts_with(
            "sentence-transformers/all-MiniLM-L6-v2@onnx-int8-per-channel-7bit+adapted@"
        ),
        "{model_id}"
    );
    assert_eq!(manifest["dimension"], 384);
    assert_eq!(manifest["datasources"].as_array().unwrap().len(), 4);
    // The drift check's probe sentences, shown by their texts.
    let probes = manifest["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 8);
    assert!(
        probes.iter().all(serde_json::Value::is_string),
        "{manifest}"
    );

    // The built artifact routes through --index.
    let report = json(&run_ok(
        switchyard(cache.path())
            .arg("--index")
            .arg(&artifact)
            .args(["route", "What is 15% of 200?", "--json"]),
    ));
    assert_eq!(report["routing_decision"]["would_route_to"], "tools");

    let mut bytes = std::fs::read(&artifact).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(&artifact, &bytes).unwrap();
    let output = run(switchyard(cache.path())
        .arg("--index")
        .arg(&artifact)
        .args(["route", "hello"]));
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("demo.idx") && stderr.contains("checksum"),
        "{stderr}"
    );
}

#[test]
fn bad_inputs_are_named() {
    let cache = tempfile::tempdir().unwrap();
    let output =
        run(switchyard(cache.path()).args(["--templates", "templates/nope", "route", "hi"]));
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("templates/nope"));

    let output = run(switchyard(cache.path())
        .env("SWITCHYARD_MODEL_DIR", cache.path())
        .args(["route", "hi"]));
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("fetch-model.sh"));

    let long = "a".repeat(2001);
    let output = run(switchyard(cache.path()).args(["route", &long]));
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("query"));

    let output = run(switchyard(cache.path())
        .env(
            "SWITCHYARD__COMPOSITE_RETRIEVAL__CONFIDENCE_THRESHOLD",
            "high",
        )
        .args(["stats"]));
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("confidence_threshold") && stderr.contains("environment"),
        "{stderr}"
    );
}

#[test]
fn index_build_refuses_a_write_template() {
    let cache = tempfile::tempdir().unwrap();
    let catalog = cache.path().join("catalog");
    let hr = catalog.join("hr");
    std::fs::create_dir_all(&hr).unwrap();
    std::fs::write(
        hr.join("datasource.yaml"),
        "name: hr\nkind: sql\ndescription: HR\nconnection: {engine: sqlite, seed_sql: hr.sql}\n",
    )
    .unwrap();
    std::fs::write(
        hr.join("templates.yaml"),
        "templates:\n  - id: wipe\n    description: Remove staff\n    nl_examples: [fire everyone]\n    sql_template: DELETE FROM employees\n",
    )
    .unwrap();
    let output = run(switchyard(cache.path())
        .arg("--templates")
        .arg(&catalog)
        .args(["index", "build", "--out"])
        .arg(cache.path().join("x.idx")));
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("wipe") && stderr.contains("read-only"),
        "{stderr}"
    );
}

#[test]
fn suggest_turns_judged_traffic_into_a_patch_that_applies() {
    // On the frozen base model: the adapted encoder answers all 65 demo questions right,
    // leaving no evidence; the base one misses 2 in scope and answers 5 off-topic ones,
    // which is what the loop learns from.
    let switchyard = switchyard_base;
    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let dataset = repo_root().join("tests/data/demo/queries.jsonl");
    let feedback = work.path().join("feedback.jsonl");
    run_ok(
        switchyard(cache.path())
            .args(["eval", "--json", "--latency-samples", "0", "--dataset"])
            .arg(&dataset)
            .arg("--judge-out")
            .arg(&feedback),
    );
    let records = std::fs::read_to_string(&feedback).unwrap();
    assert_eq!(records.lines().count(), 65, "one record per question");

    let patch = work.path().join("catalog.patch");
    let output = run(switchyard(cache.path())
        .args(["suggest", "--feedback"])
        .arg(&feedback)
        .arg("--dataset")
        .arg(&dataset)
        .arg("--out")
        .arg(&patch)
        .arg("--report")
        .arg(work.path().join("report.html")));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    // The page shows the patched catalog beside the catalog as it is (the browser check
    // in infra/scripts/report-check.sh opens `eval --report`'s).
    let page = std::fs::read_to_string(work.path().join("report.html")).unwrap();
    assert!(
        page.contains(r#"data-chart="risk-coverage""#) && page.contains("<th>before</th>"),
        "{page}"
    );
    // The demo's misses (2 in scope, 5 off topic answered) come back as lines with their
    // evidence, and the figures on the data set are said.
    let text = std::fs::read_to_string(&patch).unwrap();
    assert!(text.contains("# suggested: feedback on traffic-"), "{text}");
    assert!(stderr.contains("intent accuracy"), "{stderr}");
    // The data set is the traffic: the patch is measured by folds (the default 3), each
    // fold against the patch made without its questions, not on its own lines.
    assert!(stderr.contains("measured by 3 folds"), "{stderr}");
    let copy = work.path().join("templates");
    std::fs::create_dir_all(&copy).unwrap();
    let status = std::process::Command::new("cp")
        .args(["-r"])
        .arg(repo_root().join("templates/demo"))
        .arg(&copy)
        .status()
        .unwrap();
    assert!(status.success());
    let applied = std::process::Command::new("git")
        .args(["apply", "--verbose"])
        .arg(&patch)
        .current_dir(work.path())
        .output()
        .unwrap();
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    // The patched catalog still loads.
    run_ok(
        switchyard(cache.path())
            .arg("--templates")
            .arg(copy.join("demo"))
            .arg("stats"),
    );
}

#[test]
fn suggest_names_the_bad_record_and_writes_nothing() {
    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let patch = work.path().join("catalog.patch");
    let good = r#"{"decision":{"request_id":"r1","datasource":"hr","template_id":"employees_count_by_department","outcome":"execute","confidence":0.9,"margin":0.2,"threshold":0.4,"processing_ms":3.0,"at":1,"query":"staff in sales"}}"#;
    let cases = [
        (format!("{good}\n{{not json\n"), "line 2"),
        (
            good.replace("employees_count_by_department", "no_such_template"),
            "hr/no_such_template",
        ),
        (
            format!(
                "{}\n",
                good.replace(
                    r#""query":"staff in sales"}"#,
                    r#""query":"staff in sales"},"feedback":{"expected_template":"hr/nope"}"#
                )
            ),
            "hr/nope",
        ),
    ];
    for (records, named) in cases {
        let feedback = work.path().join("feedback.jsonl");
        std::fs::write(&feedback, records).unwrap();
        let output = run(switchyard_base(cache.path())
            .args(["suggest", "--feedback"])
            .arg(&feedback)
            .arg("--out")
            .arg(&patch));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{stderr}");
        assert!(stderr.contains(named), "{named} not in: {stderr}");
        assert!(!patch.exists(), "nothing is written");
    }
}

#[test]
fn serve_keeps_its_traffic_for_suggest() {
    // `serve --traffic` writes what the deployed router's feedback table holds: each
    // decision, then the same request judged. `suggest` reads it back.
    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let traffic = work.path().join("traffic.jsonl");
    let mut command = switchyard(cache.path());
    // The question's text is kept only where the deployment says so (as checkpoints).
    command.env("SWITCHYARD__SESSIONS__STORE_TEXT", "true");
    let server = switchyard_e2e::serve_command_with(
        command,
        &["--templates", "templates/demo"],
        &[std::ffi::OsStr::new("--traffic"), traffic.as_os_str()],
        std::process::Stdio::inherit(),
        "warn",
    );
    let ask = |question: &str| {
        let (status, body) = server.post("/v1/query", serde_json::json!({ "query": question }));
        assert_eq!(status, 200, "{body}");
        body["metadata"]["request_id"].as_str().unwrap().to_owned()
    };
    ask("How many employees work in Engineering?");
    let corrected = ask("What is 15% of 200?");
    // A judge who says another template should have answered: suggest must propose the
    // question as that template's example.
    let (status, body) = server.post(
        "/v1/feedback",
        serde_json::json!({
            "request_id": corrected,
            "expected_template": "hr/employees_count_by_department",
        }),
    );
    assert_eq!(status, 200, "{body}");
    drop(server);

    let lines = std::fs::read_to_string(&traffic).unwrap();
    assert_eq!(
        lines.lines().count(),
        3,
        "two decisions, one judged: {lines}"
    );
    let patch = work.path().join("catalog.patch");
    let output = run(switchyard(cache.path())
        .args(["--templates", "templates/demo", "suggest", "--feedback"])
        .arg(&traffic)
        .arg("--out")
        .arg(&patch));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("2 records"),
        "one record per request: {stderr}"
    );
    let text = std::fs::read_to_string(&patch).unwrap();
    assert!(
        text.contains("What is 15% of 200?") && text.contains(&corrected),
        "{text}"
    );
}
