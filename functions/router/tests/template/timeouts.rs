//! Each datasource's deadline (`limits.timeout_ms`) against the Lambda timeouts of the
//! functions that run it: its adapter function's `Timeout`, and the router's, which waits
//! for the invoke that long plus `INVOKE_GRACE`. A deadline the function cuts off answers
//! with Lambda's timeout instead of the adapter's error naming the datasource.

use std::time::Duration;

use serde_json::Value;
use switchyard_aws::invoker::INVOKE_GRACE;
use switchyard_catalog::template::Catalog;

use super::template_yaml::template;
use super::{functions, layer_path, resource, variables};

/// A function's `Timeout`, in milliseconds.
fn timeout_ms(name: &str, function: &Value) -> u64 {
    let seconds = function["Properties"]["Timeout"]
        .as_u64()
        .unwrap_or_else(|| panic!("{name} has no Timeout in seconds"));
    seconds * 1000
}

/// The problems of the deployed datasources' deadlines: `(function, its Timeout in ms,
/// the datasource's catalog)` for each adapter function, and the router's Timeout.
fn problems(adapters: &[(String, u64, String, Catalog)], router_ms: u64) -> Vec<String> {
    let grace = INVOKE_GRACE.as_millis() as u64;
    let mut problems = Vec::new();
    for (function, function_ms, datasource, catalog) in adapters {
        let Some(spec) = catalog.datasource(datasource).map(|d| &d.spec) else {
            problems.push(format!("{function}: no datasource `{datasource}`"));
            continue;
        };
        let deadline = spec.limits.timeout_ms;
        if deadline >= *function_ms {
            problems.push(format!(
                "datasource `{datasource}`: limits.timeout_ms {deadline} is not below \
                 {function}'s Timeout ({function_ms} ms)"
            ));
        }
        if deadline + grace > router_ms {
            problems.push(format!(
                "datasource `{datasource}`: limits.timeout_ms {deadline} plus the invoke's \
                 grace ({grace} ms) exceeds RouterFunction's Timeout ({router_ms} ms)"
            ));
        }
    }
    problems
}

/// The adapter functions of `template`: name, Timeout in ms, datasource, its catalog.
fn adapters(template: &Value) -> Vec<(String, u64, String, Catalog)> {
    let mut adapters = Vec::new();
    for (name, function) in functions(template) {
        let vars = variables(&function);
        let Some(datasource) = vars.get("SWITCHYARD_DATASOURCE").and_then(Value::as_str) else {
            continue;
        };
        let path = vars["SWITCHYARD_TEMPLATES"].as_str().unwrap();
        let catalog = Catalog::load(&layer_path(template, &function, path)).unwrap();
        let function_ms = timeout_ms(&name, &function);
        adapters.push((name, function_ms, datasource.to_owned(), catalog));
    }
    adapters
}

#[test]
fn every_datasource_deadline_fits_the_timeouts_of_the_functions_that_run_it() {
    let template = template();
    let adapters = adapters(&template);
    assert!(
        !adapters.is_empty(),
        "no adapter function names a datasource"
    );
    let router_ms = timeout_ms("RouterFunction", resource(&template, "RouterFunction"));
    let problems = problems(&adapters, router_ms);
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn a_deadline_past_its_function_timeout_is_refused_naming_both() {
    let template = template();
    let mut adapters = adapters(&template);
    let (function, function_ms, datasource, catalog) = adapters
        .iter_mut()
        .find(|(_, _, datasource, _)| datasource == "ev")
        .expect("the ev adapter function");
    let ev = (catalog.datasources.iter_mut())
        .find(|d| d.name() == "ev")
        .unwrap();
    ev.spec.limits.timeout_ms = *function_ms + Duration::from_secs(1).as_millis() as u64;
    let (function, function_ms, datasource) = (function.clone(), *function_ms, datasource.clone());
    let problems = problems(&adapters, 12_000);
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert_eq!(
        problems[0],
        format!(
            "datasource `{datasource}`: limits.timeout_ms {} is not below {function}'s \
             Timeout ({function_ms} ms)",
            function_ms + 1000
        )
    );
    assert!(
        problems[1].contains("RouterFunction's Timeout (12000 ms)"),
        "{problems:#?}"
    );
}
