//! `template.yaml` against the code that runs under it: every variable a function is given
//! is one its code reads (a renamed variable on either side fails here, not at a cold
//! start in AWS), every layer path a function is pointed at holds the files the code
//! loads, every operation of the API has an HTTP API event, the dashboard plots what the
//! code emits, for every datasource deployed, and each datasource's deadline fits the
//! timeouts of the functions that run it (`timeouts`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

#[path = "common/template_yaml.rs"]
mod template_yaml;
use switchyard_aws::LambdaInvoker;
use switchyard_catalog::metric;
use switchyard_catalog::template::Catalog;
use switchyard_router::Settings;
use switchyard_s3::IndexLocation;
use template_yaml::{root, template};

#[path = "template/timeouts.rs"]
mod timeouts;

fn resource<'a>(template: &'a Value, name: &str) -> &'a Value {
    &template["Resources"][name]
}

fn variables(function: &Value) -> serde_json::Map<String, Value> {
    function["Properties"]["Environment"]["Variables"]
        .as_object()
        .cloned()
        .unwrap_or_default()
}

fn functions(template: &Value) -> Vec<(String, Value)> {
    template["Resources"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, r)| r["Type"] == "AWS::Serverless::Function")
        .map(|(name, r)| (name.clone(), r.clone()))
        .collect()
}

/// The folder a `/opt/…` path of a function comes from, in the repository: under the
/// ContentUri of one of its layers. The templates layer's Makefile copies its ContentUri
/// (templates/) to /opt/templates; other layers are mounted as they are. A path that exists
/// wins; otherwise the first candidate (the model layer's folder is filled by
/// model-layer.sh, so it may not exist yet).
fn layer_path(template: &Value, function: &Value, opt_path: &str) -> PathBuf {
    let relative = Path::new(opt_path)
        .strip_prefix("/opt")
        .unwrap_or_else(|_| panic!("{opt_path} is not under /opt, where layers are mounted"));
    let layers = function["Properties"]["Layers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let candidates: Vec<PathBuf> = layers
        .iter()
        .filter_map(|layer| {
            let layer = resource(template, layer.as_str().unwrap());
            let content = root().join(layer["Properties"]["ContentUri"].as_str().unwrap());
            let mounted = if layer["Metadata"]["BuildMethod"] == "makefile" {
                "templates"
            } else {
                ""
            };
            relative
                .strip_prefix(mounted)
                .ok()
                .map(|rest| content.join(rest))
        })
        .collect();
    candidates
        .iter()
        .find(|c| c.exists())
        .or(candidates.first())
        .cloned()
        .unwrap_or_else(|| panic!("no layer of this function provides {opt_path}"))
}

#[test]
fn the_router_reads_every_variable_the_template_gives_it() {
    let template = template();
    let router = resource(&template, "RouterFunction");
    let given = variables(router);
    let settings =
        Settings::from_env(|name| given.get(name).and_then(Value::as_str).map(String::from))
            .expect("the template's variables make valid settings");
    assert_eq!(
        settings.index,
        IndexLocation::S3 {
            bucket: "IndexBucket".into(),
            prefix: "IndexPrefix".into()
        }
    );
    let tables = [
        (
            "SWITCHYARD_SESSIONS_TABLE",
            &settings.sessions_table,
            "SessionsTable",
        ),
        (
            "SWITCHYARD_RERANK_CACHE_TABLE",
            &settings.rerank_cache_table,
            "RerankCacheTable",
        ),
        (
            "SWITCHYARD_FEEDBACK_TABLE",
            &settings.feedback_table,
            "FeedbackTable",
        ),
        (
            "SWITCHYARD_WORKFLOW_TABLE",
            &settings.workflow_table,
            "WorkflowTable",
        ),
        (
            "SWITCHYARD_TOPICS_TABLE",
            &settings.topics_table,
            "TopicsTable",
        ),
    ];
    for (variable, read, table) in tables {
        assert_eq!(
            read.as_deref(),
            Some(table),
            "the router does not get {table} through {variable}: renamed in template.yaml or in Settings?"
        );
    }
    assert_eq!(
        settings.templates, None,
        "empty SWITCHYARD_TEMPLATES: adapters are invoked"
    );

    // No variable the code does not read (a renamed one would be silently ignored).
    let adapter_variables: BTreeSet<String> = functions(&template)
        .iter()
        .filter_map(|(_, f)| variables(f).get("SWITCHYARD_DATASOURCE").cloned())
        .map(|d| LambdaInvoker::function_variable(d.as_str().unwrap()))
        .collect();
    let known = Settings::VARIABLES
        .iter()
        .map(|v| v.to_string())
        .chain(adapter_variables.iter().cloned())
        .chain(["SWITCHYARD_MODEL_DIR", "RUST_LOG"].map(String::from))
        .collect::<BTreeSet<_>>();
    for name in given.keys() {
        assert!(
            known.contains(name) || name.starts_with("SWITCHYARD__"),
            "RouterFunction's {name} is read by no code (known: {known:?})"
        );
    }
    for name in &adapter_variables {
        assert!(given.contains_key(name), "RouterFunction lacks {name}");
    }
}

#[test]
fn the_model_layer_holds_what_the_embedder_loads() {
    let template = template();
    let router = resource(&template, "RouterFunction");
    let model_dir = variables(router)["SWITCHYARD_MODEL_DIR"]
        .as_str()
        .unwrap()
        .to_owned();
    let folder = layer_path(&template, router, &model_dir);
    assert!(
        folder.ends_with("infra/model-layer/model"),
        "{model_dir} comes from {}",
        folder.display()
    );
    // model-layer.sh fills that folder: it must copy every file the embedder opens.
    let script = std::fs::read_to_string(root().join("infra/scripts/model-layer.sh")).unwrap();
    assert!(
        script.contains("LAYER_DIR=\"infra/model-layer/model\""),
        "model-layer.sh fills another folder"
    );
    let files = script
        .lines()
        .find_map(|l| l.strip_prefix("FILES=\""))
        .and_then(|l| l.strip_suffix('"'))
        .expect("model-layer.sh names its FILES");
    let copied: BTreeSet<&str> = files.split_whitespace().collect();
    for needed in [
        switchyard_embed::MODEL_FILE,
        switchyard_embed::TOKENIZER_FILE,
        switchyard_embed::RUNTIME_FILE,
    ] {
        assert!(
            copied.contains(needed),
            "model-layer.sh does not copy {needed} into the layer"
        );
    }
}

#[test]
fn each_adapter_function_serves_a_datasource_of_its_layer_catalog() {
    let template = template();
    let router = resource(&template, "RouterFunction");
    let mut served = BTreeSet::new();
    for (name, function) in functions(&template) {
        let vars = variables(&function);
        let Some(datasource) = vars.get("SWITCHYARD_DATASOURCE").and_then(Value::as_str) else {
            continue;
        };
        let catalog_path = vars["SWITCHYARD_TEMPLATES"].as_str().unwrap();
        let folder = layer_path(&template, &function, catalog_path);
        let catalog = Catalog::load(&folder)
            .unwrap_or_else(|e| panic!("{name}: {catalog_path} ({}) : {e}", folder.display()));
        assert!(
            catalog.datasource(datasource).is_some(),
            "{name}: no datasource `{datasource}` in {}",
            folder.display()
        );
        assert_eq!(
            function["Metadata"]["BuildProperties"]["Binary"], "switchyard-adapter",
            "{name} runs another binary"
        );
        served.insert(datasource.to_owned());
    }
    // The router reaches every datasource of the catalog its adapters serve.
    let catalog = Catalog::load(&root().join("templates/demo")).unwrap();
    for datasource in &catalog.datasources {
        assert!(
            served.contains(datasource.name()),
            "no adapter function for `{}`",
            datasource.name()
        );
    }
    // In-process adapters need the catalogs in the router too.
    let layers = router["Properties"]["Layers"].as_array().unwrap();
    assert!(
        layers.iter().any(|l| l == "TemplatesLayer"),
        "RouterFunction lacks the TemplatesLayer"
    );
}

/// Paths the app serves that the deployed stack deliberately does not reach, with why.
/// None today: every route `serve` answers is a route users of the stack get.
const LOCAL_ONLY: &[(&str, &str)] = &[];

#[test]
fn every_route_the_app_serves_has_an_http_api_event() {
    let template = template();
    let events: BTreeSet<(String, String)> = resource(&template, "RouterFunction")["Properties"]
        ["Events"]
        .as_object()
        .unwrap()
        .values()
        .filter(|e| e["Type"] == "HttpApi")
        .map(|e| {
            (
                e["Properties"]["Path"].as_str().unwrap().to_owned(),
                e["Properties"]["Method"].as_str().unwrap().to_uppercase(),
            )
        })
        .collect();
    // The routes come from the app itself (the list it is built from), not from
    // openapi.json, which documents only `/v1`: A2A was served and never deployed.
    let served = switchyard_http::served();
    assert!(served.iter().any(|(path, _)| *path == "/a2a"), "{served:?}");
    let mut missing = Vec::new();
    for (path, method) in served {
        if LOCAL_ONLY.iter().any(|(local, _)| *local == path) {
            continue;
        }
        let method = method.map_or("ANY".to_owned(), |m| m.as_str().to_owned());
        let routed = events.contains(&(path.to_owned(), method.clone()))
            || events.contains(&(path.to_owned(), "ANY".into()));
        if !routed {
            missing.push(format!("{method} {path}"));
        }
    }
    assert!(
        missing.is_empty(),
        "the app serves these and template.yaml's RouterFunction has no HttpApi event for them \
         (add one, or list the path in LOCAL_ONLY with a reason): {missing:?}"
    );
    // And every documented operation is one the app serves.
    let openapi: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("openapi.json")).unwrap())
            .unwrap();
    let served = switchyard_http::served();
    for (path, item) in openapi["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            assert!(
                served.iter().any(|(p, m)| p == path
                    && m.as_ref()
                        .is_none_or(|m| m.as_str().eq_ignore_ascii_case(method))),
                "openapi.json documents {method} {path}, which the app does not serve"
            );
        }
    }
}

/// A metric name's constant in `switchyard_core::metric`: `NoMatch` is `NO_MATCH`.
fn constant_of(name: &str) -> String {
    let mut constant = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            constant.push('_');
        }
        constant.push(c.to_ascii_uppercase());
    }
    constant
}

fn rust_files(folder: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy();
        if path.is_dir() && name != "tests" && name != "target" {
            rust_files(&path, out);
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// What the code emits, read from its emit sites (each `counter!`, `histogram!`, `gauge!`
/// and the EMF crate's cold start counter).
struct Emitted {
    /// Metric name -> whether it carries the datasource dimension.
    names: BTreeMap<&'static str, bool>,
    /// Sites that name no constant of `switchyard_core::metric`, so the list misses them.
    unnamed: Vec<String>,
}

fn emitted() -> Emitted {
    let constants: BTreeMap<String, &str> =
        metric::ALL.iter().map(|n| (constant_of(n), *n)).collect();
    let mut files = Vec::new();
    for folder in ["shared", "functions", "infra"] {
        rust_files(&root().join(folder), &mut files);
    }
    let mut names = BTreeMap::new();
    let mut unnamed = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for site in [
            "counter!(",
            "histogram!(",
            "gauge!(",
            "lambda_cold_start_metric(",
        ] {
            for (at, _) in text.match_indices(site) {
                let rest = &text[at + site.len()..];
                // The arguments, up to the parenthesis that closes the call.
                let mut depth = 0;
                let end = rest
                    .find(|c| {
                        match c {
                            '(' => depth += 1,
                            ')' if depth == 0 => return true,
                            ')' => depth -= 1,
                            _ => {}
                        }
                        false
                    })
                    .unwrap();
                let arguments = &rest[..end];
                let first = arguments.split(',').next().unwrap().trim();
                let per_datasource = arguments.contains("metric::DATASOURCE =>");
                match constants.get(first.rsplit("::").next().unwrap()) {
                    Some(name) => {
                        let before = names.insert(*name, per_datasource);
                        assert!(
                            before.is_none_or(|b| b == per_datasource),
                            "{name} is emitted both with and without the datasource dimension"
                        );
                    }
                    None => unnamed.push(format!(
                        "{}: {site}{first}",
                        file.strip_prefix(root()).unwrap_or(&file).display()
                    )),
                }
            }
        }
    }
    Emitted { names, unnamed }
}

#[test]
fn the_metric_list_is_what_the_code_emits() {
    let emitted = emitted();
    assert!(
        emitted.unnamed.is_empty(),
        "metrics emitted under a name that is no constant of switchyard_core::metric \
         (add it to shared/catalog/src/metric.rs and its ALL, and emit the constant): {:#?}",
        emitted.unnamed
    );
    for name in metric::ALL {
        assert!(
            emitted.names.contains_key(name),
            "switchyard_core::metric lists {name} but no code emits it"
        );
    }
    for (name, per_datasource) in &emitted.names {
        assert_eq!(
            *per_datasource,
            metric::PER_DATASOURCE.contains(name),
            "{name}: switchyard_catalog::metric::PER_DATASOURCE disagrees with its emit sites"
        );
    }
}

/// One metric line of a dashboard widget, in namespace `Switchyard`.
struct Line {
    widget: String,
    name: String,
    dimensions: BTreeMap<String, String>,
    stat: String,
}

/// The dashboard's widgets' lines in the namespace the code writes to.
fn dashboard_lines(template: &Value) -> Vec<Line> {
    let body = resource(template, "SwitchyardDashboard")["Properties"]["DashboardBody"]
        .as_str()
        .expect("the dashboard's body is one string");
    let body: Value = serde_json::from_str(body).expect("the dashboard's body is JSON");
    let mut lines = Vec::new();
    for widget in body["widgets"].as_array().unwrap() {
        let properties = &widget["properties"];
        let widget_name = properties["title"]
            .as_str()
            .unwrap_or("untitled")
            .to_owned();
        for line in properties["metrics"].as_array().into_iter().flatten() {
            let line = line.as_array().unwrap();
            let words: Vec<&str> = line.iter().filter_map(Value::as_str).collect();
            assert!(
                !words.contains(&".") && !words.contains(&"..."),
                "{widget_name}: write each line out in full (no `.` shorthand): {line:?}"
            );
            if words[0].starts_with("AWS/") {
                continue;
            }
            assert_eq!(
                words[0],
                metric::NAMESPACE,
                "{widget_name}: a line outside the namespace the router writes to"
            );
            let options = line.last().filter(|o| o.is_object());
            lines.push(Line {
                widget: widget_name.clone(),
                name: words[1].to_owned(),
                dimensions: words[2..]
                    .chunks(2)
                    .map(|pair| (pair[0].to_owned(), pair[1].to_owned()))
                    .collect(),
                stat: options
                    .and_then(|o| o["stat"].as_str())
                    .or(properties["stat"].as_str())
                    .unwrap_or_default()
                    .to_owned(),
            });
        }
    }
    lines
}

#[test]
fn the_dashboard_plots_only_metrics_the_code_emits() {
    let emitted = emitted().names;
    let mut unknown = Vec::new();
    for line in dashboard_lines(&template()) {
        match emitted.get(line.name.as_str()) {
            None => unknown.push(format!("{}: {}", line.widget, line.name)),
            Some(&per_datasource) => assert_eq!(
                line.dimensions.contains_key(metric::DATASOURCE),
                per_datasource,
                "{}: {} is plotted {} the datasource dimension; the code emits it {}",
                line.widget,
                line.name,
                if per_datasource { "without" } else { "with" },
                if per_datasource {
                    "with it"
                } else {
                    "without it"
                },
            ),
        }
    }
    assert!(
        unknown.is_empty(),
        "the dashboard plots metrics no code emits: {unknown:?} (emitted: {:?})",
        emitted.keys().collect::<Vec<_>>()
    );
}

#[test]
fn each_per_datasource_widget_plots_every_deployed_datasource() {
    let template = template();
    // The catalogs the adapter functions serve: what the template deploys.
    let mut deployed = BTreeSet::new();
    for (_, function) in functions(&template) {
        let vars = variables(&function);
        if vars.contains_key("SWITCHYARD_DATASOURCE") {
            let path = vars["SWITCHYARD_TEMPLATES"].as_str().unwrap();
            let catalog = Catalog::load(&layer_path(&template, &function, path)).unwrap();
            deployed.extend(catalog.datasources.iter().map(|d| d.name().to_owned()));
        }
    }
    assert!(
        !deployed.is_empty(),
        "no adapter function names a datasource"
    );
    // Per widget, metric and statistic: the datasources it plots.
    let mut plotted: BTreeMap<(String, String, String), BTreeSet<String>> = BTreeMap::new();
    for line in dashboard_lines(&template) {
        if let Some(datasource) = line.dimensions.get(metric::DATASOURCE) {
            plotted
                .entry((line.widget, line.name, line.stat))
                .or_default()
                .insert(datasource.clone());
        }
    }
    assert!(
        !plotted.is_empty(),
        "the dashboard has no per-datasource widget"
    );
    let mut wrong = Vec::new();
    for ((widget, name, stat), datasources) in plotted {
        let missing: Vec<&String> = deployed.difference(&datasources).collect();
        if !missing.is_empty() {
            wrong.push(format!("\"{widget}\": {name} ({stat}) lacks {missing:?}"));
        }
        let unknown: Vec<&String> = datasources.difference(&deployed).collect();
        if !unknown.is_empty() {
            wrong.push(format!(
                "\"{widget}\": {name} ({stat}) has undeployed {unknown:?}"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "per-datasource widgets against the deployed datasources {deployed:?}: {wrong:#?}"
    );
}
