//! The datasources on the recorder: the HTTP datasource `api` and a tools datasource with
//! one `http_call` tool, and the requests and values sent through them.

use serde_json::{json, Map, Value};
use switchyard_adapters::http::HttpDatasource;
use switchyard_catalog::template::{Catalog, Datasource, Template};
use switchyard_contract::adapter::AdapterRequest;

use crate::servers::Recorder;

pub(crate) fn template(fields: Value) -> Template {
    let mut full = json!({"description": "a call", "nl_examples": ["call it"]});
    for (key, value) in fields.as_object().unwrap() {
        full[key] = value.clone();
    }
    serde_json::from_value(full).unwrap()
}

/// The datasource `api` on the recorder: its base URL has a path.
pub(crate) fn api(recorder: &Recorder) -> (HttpDatasource, Datasource) {
    let base = recorder.base();
    let parameters = json!([{"name": "id"}, {"name": "q"}, {"name": "a"}, {"name": "b"},
                            {"name": "n"}, {"name": "status"}]);
    let datasource = Datasource {
        spec: serde_json::from_value(json!({
            "name": "api", "kind": "http", "description": "the recorder",
            "connection": {"base_url": format!("{base}/api/v1/")},
        }))
        .unwrap(),
        templates: vec![
            template(json!({
                "id": "segment", "endpoint_template": "/items/{id}/tail",
                "parameters": parameters, "query_params": {"q": "{q}", "fixed": "1"},
            })),
            template(json!({
                "id": "absolute", "endpoint_template": format!("{base}/abs/{{id}}"),
                "parameters": parameters, "query_params": {"q": "{q}"},
            })),
            template(json!({
                "id": "adjacent", "endpoint_template": "items/{a}{b}/x",
                "parameters": parameters,
            })),
            template(json!({
                "id": "dotted", "endpoint_template": "files/.{a}/{b}.",
                "parameters": parameters,
            })),
            template(json!({
                "id": "redirect", "endpoint_template": format!("{base}/r/{{n}}/{{status}}"),
                "parameters": parameters,
            })),
        ],
    };
    (HttpDatasource::open(&datasource).unwrap(), datasource)
}

pub(crate) fn find<'a>(datasource: &'a Datasource, id: &str) -> &'a Template {
    datasource.templates.iter().find(|t| t.id == id).unwrap()
}

pub(crate) fn values(pairs: &[(&str, &str)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Value::from(*v)))
        .collect()
}

/// A tools datasource on the recorder with one `http_call` tool.
pub(crate) fn tools_catalog(recorder: &Recorder, endpoint: &str) -> Catalog {
    serde_json::from_value(json!({"datasources": [{
        "spec": {
            "name": "tools", "kind": "tools", "description": "tools",
            "connection": {"base_url": recorder.base()},
        },
        "templates": [{
            "id": "weather_forecast", "description": "The forecast for a city",
            "nl_examples": ["what is the weather in Paris"],
            "parameters": [{
                "name": "city", "type": "string", "required": true,
                "extraction_patterns": ["(?is)\\bweather in (.+)$"],
            }],
            "tool_type": "function", "tool_name": "forecast",
            "execution": {"type": "http_call", "endpoint_template": endpoint,
                          "http_method": "GET",
                          "query_params": {"city": "{city}", "units": "metric"}},
        }],
    }]}))
    .unwrap()
}

pub(crate) fn tool_request(query: &str, session: Map<String, Value>) -> AdapterRequest {
    serde_json::from_value(json!({
        "request_id": "ssrf", "datasource": "tools", "template_id": "weather_forecast",
        "query": query, "session_parameters": session, "deadline_ms": 3000,
    }))
    .unwrap()
}
