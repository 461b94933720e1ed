//! Adapter functions invoked through Lambda, and their failures named: a small Lambda
//! endpoint of this test fails or stalls on demand.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::post;
use serde_json::json;
use switchyard_aws::LambdaInvoker;
use switchyard_catalog::template::Catalog;
use switchyard_contract::adapter::{AdapterInvoker, AdapterRequest, AdapterStatus};
use switchyard_contract::ContractError;

use crate::setup::{adapter_functions, endpoint, root, sdk};

/// A Lambda Invoke endpoint that answers every call with `status`, `headers` and `body`
/// after `delay`: failure injection for what a real function rarely does on demand.
async fn fake_lambda(
    status: StatusCode,
    headers: Vec<(&'static str, &'static str)>,
    body: &'static str,
    delay: Duration,
) -> String {
    let app = axum::Router::new().route(
        "/2015-03-31/functions/{name}/invocations",
        post(move || {
            let headers = headers.clone();
            async move {
                tokio::time::sleep(delay).await;
                let mut response = (status, body).into_response();
                for (name, value) in headers {
                    response.headers_mut().insert(name, value.parse().unwrap());
                }
                response
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{address}")
}

async fn invoker_at(url: &str) -> LambdaInvoker {
    let catalog = Catalog::load(&root().join("templates/demo")).unwrap();
    let config = aws_sdk_lambda::config::Builder::from(&sdk(url).await)
        .retry_config(aws_sdk_lambda::config::retry::RetryConfig::standard().with_max_attempts(2))
        .build();
    LambdaInvoker::new(
        aws_sdk_lambda::Client::from_conf(config),
        catalog,
        adapter_functions,
    )
}

fn tools_request(deadline_ms: u64) -> AdapterRequest {
    serde_json::from_value(json!({
        "request_id": "r", "datasource": "tools", "template_id": "calculator_percentage",
        "query": "What is 15% of 200?", "session_parameters": {}, "deadline_ms": deadline_ms,
    }))
    .unwrap()
}

#[tokio::test]
async fn adapter_failures_are_named() {
    // A function error, as Lambda reports it.
    let url = fake_lambda(
        StatusCode::OK,
        vec![("x-amz-function-error", "Unhandled")],
        r#"{"errorType": "PanicError", "errorMessage": "adapter blew up"}"#,
        Duration::ZERO,
    )
    .await;
    let error = invoker_at(&url)
        .await
        .invoke(tools_request(1000))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ContractError::AdapterFailed { .. }),
        "{error}"
    );
    assert!(
        error.to_string().contains("PanicError: adapter blew up"),
        "{error}"
    );

    // A 5xx carrying the runtime's error shape (as emulators answer).
    let url = fake_lambda(
        StatusCode::INTERNAL_SERVER_ERROR,
        vec![],
        r#"{"errorType": "Runtime.ExitError", "errorMessage": "exited with status 101"}"#,
        Duration::ZERO,
    )
    .await;
    let error = invoker_at(&url)
        .await
        .invoke(tools_request(1000))
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("exited with status 101"),
        "{error}"
    );

    // An answer that is not an adapter response.
    let url = fake_lambda(StatusCode::OK, vec![], r#"{"hello": 1}"#, Duration::ZERO).await;
    let error = invoker_at(&url)
        .await
        .invoke(tools_request(1000))
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("not an adapter response"),
        "{error}"
    );

    // No answer within the deadline (plus the invoke grace).
    let url = fake_lambda(StatusCode::OK, vec![], "{}", Duration::from_secs(30)).await;
    let started = std::time::Instant::now();
    let error = invoker_at(&url)
        .await
        .invoke(tools_request(100))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ContractError::AdapterTimeout { .. }),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));

    // A datasource without a function is unavailable, not guessed.
    let catalog = Catalog::load(&root().join("templates/demo")).unwrap();
    let none = LambdaInvoker::new(
        aws_sdk_lambda::Client::new(&sdk(&url).await),
        catalog,
        |_| None,
    );
    let error = none.invoke(tools_request(100)).await.unwrap_err();
    assert!(
        matches!(error, ContractError::AdapterUnavailable { .. }),
        "{error}"
    );
}

/// A Lambda endpoint that counts its invokes and answers each with a 502, as a gateway does
/// when the connection is lost after the function ran.
async fn counting_lambda() -> (String, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let app = axum::Router::new().route(
        "/2015-03-31/functions/{name}/invocations",
        post(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            async { (StatusCode::BAD_GATEWAY, "{}").into_response() }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{address}"), calls)
}

/// The SDK retries a failed invoke only where running the template twice is harmless: a
/// calculation is asked again, a POST that may have booked something is not.
#[tokio::test]
async fn only_a_repeatable_template_is_invoked_again_after_a_failure() {
    let (url, calls) = counting_lambda().await;
    invoker_at(&url)
        .await
        .invoke(tools_request(1000))
        .await
        .unwrap_err();
    assert_eq!(
        calls.swap(0, Ordering::SeqCst),
        2,
        "a calculation is retried once"
    );

    // The same template as a POST without `idempotent: true`.
    let mut catalog = Catalog::load(&root().join("templates/demo")).unwrap();
    let tools = (catalog.datasources.iter_mut())
        .find(|d| d.name() == "tools")
        .unwrap();
    let template = (tools.templates.iter_mut())
        .find(|t| t.id == "calculator_percentage")
        .unwrap();
    template.endpoint_template = Some("https://booking.example/book".into());
    template.http_method = Some("POST".into());
    assert!(!template.repeatable());
    let config = aws_sdk_lambda::config::Builder::from(&sdk(&url).await)
        .retry_config(aws_sdk_lambda::config::retry::RetryConfig::standard().with_max_attempts(2))
        .build();
    let invoker = LambdaInvoker::new(
        aws_sdk_lambda::Client::from_conf(config),
        catalog,
        adapter_functions,
    );
    invoker.invoke(tools_request(1000)).await.unwrap_err();
    assert_eq!(calls.load(Ordering::SeqCst), 1, "a POST is invoked once");
}

/// A server-backed SQL datasource through the Lambda path: the router's invoker calls the
/// adapter function (under the second `cargo lambda watch` of `aws-local.sh`, serving
/// tests/data/catalogs/servers), which queries the MariaDB server of `mariadb.sh`.
#[tokio::test]
async fn a_mariadb_datasource_answers_through_the_adapter_function() {
    let url = endpoint("SWITCHYARD_TEST_LAMBDA_SQL_URL");
    let catalog = Catalog::load(&root().join("tests/data/catalogs/servers")).unwrap();
    let invoker = LambdaInvoker::new(
        aws_sdk_lambda::Client::new(&sdk(&url).await),
        catalog.clone(),
        adapter_functions,
    );
    let request = |make: &str| -> AdapterRequest {
        serde_json::from_value(json!({
            "request_id": "mariadb", "datasource": "ev",
            "template_id": "vehicles_count_by_make_in_county",
            // The values come from the session, as a previous turn supplies them.
            "query": "-", "session_parameters": {"make": make, "county": "King"},
            "deadline_ms": 5000,
            "catalog_hash": catalog.content_hash(),
        }))
        .unwrap()
    };
    let answer = invoker.invoke(request("Tesla")).await.unwrap();
    assert_eq!(
        answer.content, "40 Tesla vehicles are registered in King County.",
        "{answer:?}"
    );
    // A hostile value never reaches the server: `make` takes only its allowed values.
    let answer = invoker.invoke(request("Tesla' OR '1'='1")).await.unwrap();
    assert_eq!(answer.status(), AdapterStatus::Error, "{answer:?}");
    assert!(
        answer.error().unwrap().contains("allowed values"),
        "{answer:?}"
    );
    let answer = invoker.invoke(request("Tesla")).await.unwrap();
    assert_eq!(answer.data["rows"][0]["vehicle_count"], 40, "{answer:?}");
}

/// A `web` datasource through the Lambda path: the adapter function (the second `cargo
/// lambda watch`, serving tests/data/catalogs/servers) fetches the saved pages of
/// tests/data/web from the web server this test runs at SWITCHYARD_TEST_WEB_URL.
#[tokio::test]
async fn a_web_datasource_answers_through_the_adapter_function() {
    let url = endpoint("SWITCHYARD_TEST_LAMBDA_SQL_URL");
    let web = endpoint("SWITCHYARD_TEST_WEB_URL");
    let address = web.trim_start_matches("http://").to_owned();
    let pages = root().join("tests/data/web");
    let site = axum::Router::new().route(
        "/pages/{*path}",
        axum::routing::get(
            move |axum::extract::Path(path): axum::extract::Path<String>| {
                let file = pages.join(path.replace("..", ""));
                async move {
                    match std::fs::read(file) {
                        Ok(body) => ([("content-type", "text/html")], body).into_response(),
                        Err(_) => StatusCode::NOT_FOUND.into_response(),
                    }
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind(&address)
        .await
        .unwrap_or_else(|e| panic!("the test's web server cannot listen on {address}: {e}"));
    tokio::spawn(async move { axum::serve(listener, site).await.unwrap() });

    let catalog = Catalog::load(&root().join("tests/data/catalogs/servers")).unwrap();
    let invoker = LambdaInvoker::new(
        aws_sdk_lambda::Client::new(&sdk(&url).await),
        catalog.clone(),
        adapter_functions,
    );
    let request: AdapterRequest = serde_json::from_value(json!({
        "request_id": "web", "datasource": "rust_docs", "template_id": "rustc_book",
        "query": "How does the jobserver limit rustc's parallel jobs?",
        "session_parameters": {"chapter": "jobserver"},
        "deadline_ms": 5000,
        "catalog_hash": catalog.content_hash(),
    }))
    .unwrap();
    let answer = invoker.invoke(request).await.unwrap();
    assert_eq!(
        answer.data["url"],
        format!("{web}/pages/rustc/jobserver.html"),
        "{answer:?}"
    );
    assert!(
        answer.content.contains("Jobserver") && answer.content.contains("jobserver"),
        "{answer:?}"
    );
}
