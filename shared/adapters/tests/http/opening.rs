//! What opening a datasource refuses: endpoints outside the allowed hosts, bad endpoints
//! and mappings, and a base URL that is not set or not http.

use serde_json::{json, Value};
use switchyard_adapters::http::HttpDatasource;

use crate::setup::datasource;

#[test]
fn endpoints_outside_the_allowed_hosts_are_refused_at_open() {
    let refused = |templates: Vec<Value>, allowed: Value| {
        let spec = datasource(
            json!({"connection": {"base_url": "http://127.0.0.1:9/api"}, "allowed_hosts": allowed}),
            templates,
        );
        HttpDatasource::open(&spec).err().map(|e| e.to_string())
    };
    let fine = json!({"id": "fine", "endpoint_template": "/x"});

    let error = refused(
        vec![
            fine.clone(),
            json!({"id": "leaky", "endpoint_template": "http://evil.example.com/steal"}),
        ],
        json!([]),
    )
    .unwrap();
    assert_eq!(
        error,
        "datasource `api`: template `leaky`: endpoint host `evil.example.com` is neither the base_url's host nor in allowed_hosts"
    );

    // Listed hosts, the base_url's host (absolute too) and wildcard subdomains are allowed.
    assert_eq!(
        refused(
            vec![
                fine.clone(),
                json!({"id": "partner", "endpoint_template": "https://api.partner.test/v1/{id}", "parameters": [{"name": "id"}]}),
                json!({"id": "same", "endpoint_template": "http://127.0.0.1:9/other"}),
                json!({"id": "sub", "endpoint_template": "https://eu.cdn.test/x"}),
            ],
            json!(["api.partner.test", "*.cdn.test"]),
        ),
        None
    );

    let error = refused(
        vec![json!({"id": "port", "endpoint_template": "http://127.0.0.1:10/x"})],
        json!([]),
    )
    .unwrap();
    assert!(error.contains("template `port`"), "{error}");

    let error = refused(
        vec![
            json!({"id": "tenant", "endpoint_template": "http://{tenant}.example.com/x", "parameters": [{"name": "tenant"}]}),
        ],
        json!(["*.example.com"]),
    )
    .unwrap();
    assert!(
        error.contains("template `tenant`") && error.contains("only fill the path"),
        "{error}"
    );

    let error = refused(
        vec![json!({"id": "file", "endpoint_template": "file:///etc/passwd"})],
        json!([]),
    )
    .unwrap();
    assert!(
        error.contains("template `file`") && error.contains("only http and https"),
        "{error}"
    );

    let error = refused(
        vec![json!({"id": "undeclared", "endpoint_template": "/users/{user}"})],
        json!([]),
    )
    .unwrap();
    assert!(
        error.contains("`{user}`, which is not one of its parameters"),
        "{error}"
    );

    let error = refused(
        vec![
            json!({"id": "mapped", "endpoint_template": "/x", "response_mapping": {"itemz": "a"}}),
        ],
        json!([]),
    )
    .unwrap();
    assert!(
        error.contains("response_mapping.itemz is unknown"),
        "{error}"
    );
}

#[test]
fn the_base_url_may_come_from_the_environment() {
    std::env::set_var("SWITCHYARD_HTTP_TEST_BASE", "http://127.0.0.1:9");
    let spec = datasource(
        json!({"connection": {"base_url_env": "SWITCHYARD_HTTP_TEST_BASE"}}),
        vec![json!({"id": "x", "endpoint_template": "/x"})],
    );
    assert!(HttpDatasource::open(&spec).is_ok());
    let spec = datasource(
        json!({"connection": {"base_url_env": "SWITCHYARD_HTTP_TEST_BASE_UNSET"}}),
        vec![json!({"id": "x", "endpoint_template": "/x"})],
    );
    assert_eq!(
        HttpDatasource::open(&spec).err().unwrap().to_string(),
        "datasource `api`: connection.base_url_env: the variable SWITCHYARD_HTTP_TEST_BASE_UNSET is not set"
    );
    let spec = datasource(
        json!({"connection": {"base_url": "ftp://127.0.0.1/"}}),
        vec![json!({"id": "x", "endpoint_template": "/x"})],
    );
    assert!(HttpDatasource::open(&spec)
        .err()
        .unwrap()
        .to_string()
        .contains("only http and https"));
}
