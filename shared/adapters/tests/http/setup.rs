//! Serving a router on a free port of 127.0.0.1, and datasources and templates built over
//! defaults.

use std::time::Duration;

use axum::Router;
use serde_json::{json, Map, Value};
use switchyard_adapters::http::HttpDatasource;
use switchyard_catalog::template::{Datasource, Template};

pub(crate) const SECOND: Duration = Duration::from_secs(1);
pub(crate) const GENEROUS: Duration = Duration::from_secs(5);

/// Serve `app` on a free port of 127.0.0.1; gives its base URL.
pub(crate) async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{address}")
}

fn merge(base: &mut Value, extra: Value) {
    for (key, value) in extra.as_object().unwrap() {
        base[key] = value.clone();
    }
}

fn template(fields: Value) -> Template {
    let mut full = json!({"description": "a call", "nl_examples": ["call it"]});
    merge(&mut full, fields);
    serde_json::from_value(full).unwrap()
}

/// A datasource named `api` with `spec` fields over the defaults.
pub(crate) fn datasource(spec: Value, templates: Vec<Value>) -> Datasource {
    let mut full = json!({"name": "api", "kind": "http", "description": "a test API"});
    merge(&mut full, spec);
    Datasource {
        spec: serde_json::from_value(full).unwrap(),
        templates: templates.into_iter().map(template).collect(),
    }
}

pub(crate) fn open(base: &str, templates: Vec<Value>) -> (HttpDatasource, Datasource) {
    let datasource = datasource(json!({"connection": {"base_url": base}}), templates);
    (HttpDatasource::open(&datasource).unwrap(), datasource)
}

pub(crate) fn find<'a>(datasource: &'a Datasource, id: &str) -> &'a Template {
    datasource.templates.iter().find(|t| t.id == id).unwrap()
}

pub(crate) fn params(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}
