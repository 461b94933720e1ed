//! The adapter factory: which kinds get an adapter here, and which stay unavailable.

use serde_json::json;
use switchyard_adapters::{check_catalog, registry, LocalAdapters};
use switchyard_catalog::template::Catalog;
use switchyard_contract::adapter::{AdapterInvoker, AdapterRequest, AdapterStatus};
use switchyard_contract::ContractError;

fn template(id: &str) -> serde_json::Value {
    json!({"id": id, "description": format!("{id} questions"), "nl_examples": [format!("ask {id}")]})
}

/// An intent datasource, a documents datasource and a SQLite datasource whose files are
/// not here.
fn catalog() -> Catalog {
    serde_json::from_value(json!({"datasources": [
        {"spec": {"name": "intents", "kind": "intent", "description": "intents"},
         "templates": [template("greet")]},
        {"spec": {"name": "docs", "kind": "documents", "description": "documents",
                  "connection": {"corpus": "docs"}},
         "templates": [template("manual")]},
        {"spec": {"name": "db", "kind": "sql", "description": "db",
                  "connection": {"engine": "sqlite", "seed_sql": "data/db.sql"}},
         "templates": [{"id": "count", "description": "count rows", "nl_examples": ["how many"],
                        "sql_template": "SELECT count(*) AS n FROM t"}]},
    ]}))
    .unwrap()
}

fn request(datasource: &str, template_id: &str) -> AdapterRequest {
    serde_json::from_value(json!({
        "request_id": "r", "datasource": datasource, "template_id": template_id,
        "query": "q", "session_parameters": {}, "deadline_ms": 1000,
    }))
    .unwrap()
}

#[tokio::test]
async fn intents_are_served_and_documents_and_absent_files_are_unavailable() {
    let catalog = catalog();
    check_catalog(&catalog).unwrap();
    let missing = std::path::Path::new("/nonexistent/switchyard/catalog");
    let adapters = LocalAdapters::open(catalog, Some(missing)).await.unwrap();

    let answer = adapters.invoke(request("intents", "greet")).await.unwrap();
    assert_eq!(answer.status(), AdapterStatus::Ok);
    assert_eq!(answer.data["intent"], "greet");
    assert_eq!(answer.data["datasource"], "intents");

    for (datasource, template, kind) in [("docs", "manual", "documents"), ("db", "count", "sql")] {
        match adapters.invoke(request(datasource, template)).await {
            Err(ContractError::AdapterUnavailable {
                datasource: named,
                kind: named_kind,
            }) => assert_eq!((named.as_str(), named_kind.as_str()), (datasource, kind)),
            other => panic!("{datasource}: expected unavailable, got {other:?}"),
        }
    }
}

#[tokio::test]
/// Documents are served from their chunk artifact (`LocalAdapters::with_documents`).
async fn the_factory_opens_nothing_for_documents() {
    let catalog = catalog();
    let docs = catalog.datasource("docs").unwrap();
    assert!(registry::open(docs, None).await.unwrap().is_none());
    registry::check(docs).unwrap();
    let intents = catalog.datasource("intents").unwrap();
    assert!(registry::open(intents, None).await.unwrap().is_some());
}

#[test]
fn the_build_check_refuses_a_writing_sql_template() {
    let mut catalog = catalog();
    catalog.datasources[2].templates[0].sql_template = Some("DELETE FROM t".into());
    let error = check_catalog(&catalog).unwrap_err().to_string();
    assert!(error.contains("count"), "{error}");
}

/// A tools template naming an operation its tool lacks is refused by the check that
/// `index build` runs, naming the template and listing the operations, not at the first
/// question that reaches it.
#[test]
fn an_unknown_tool_operation_fails_the_index_build_check() {
    let tools = |tool: &str, operation: &str| -> Catalog {
        serde_json::from_value(json!({"datasources": [
            {"spec": {"name": "tools", "kind": "tools", "description": "tools"},
             "templates": [{"id": "calc_power", "description": "powers",
                            "nl_examples": ["2 to the 10th"], "tool_type": "function",
                            "tool_name": tool, "tool_operation": operation,
                            "execution": {"type": "builtin"}}]},
        ]}))
        .unwrap()
    };
    let message = check_catalog(&tools("calculator", "power"))
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("calc_power")
            && message.contains("unknown operation `power`")
            && message.contains("multiply"),
        "{message}"
    );
    let message = check_catalog(&tools("abacus", "add"))
        .unwrap_err()
        .to_string();
    assert!(message.contains("unknown tool `abacus`"), "{message}");
    check_catalog(&tools("calculator", "multiply")).unwrap();
}
