//! SSRF attempts through the HTTP adapter and `http_call` tools: hostile values in path
//! placeholders and query values (other hosts, `file:`, the cloud metadata address in its
//! IPv6, decimal, octal and hex spellings, `user@host`, `@ # \`, encoded `/` and `..`, CRLF),
//! redirects off the allowed host, and endpoints that name another host.
//!
//! The API is a raw TCP server on 127.0.0.1 that records the exact request line and headers
//! it receives and answers with JSON or a redirect; "trap" servers on other ports and
//! addresses must never be reached. Every attempt is refused with an error saying why, or
//! its value arrives inside its own path segment or query value on the allowed host.

mod checks;
mod datasources;
mod redirects;
mod servers;
mod values;

use std::time::Duration;

use serde_json::{json, Map};
use switchyard_adapters::http::HttpDatasource;
use switchyard_adapters::{check_catalog, LocalAdapters};
use switchyard_catalog::template::Datasource;
use switchyard_contract::adapter::{AdapterInvoker, AdapterStatus};

use checks::{assert_in_place, assert_refused_naming, not_a_segment, percent_decode};
use datasources::{api, find, template, tool_request, tools_catalog, values};
use servers::{Recorder, Traps};
use values::VALUES;

const DEADLINE: Duration = Duration::from_secs(3);

#[tokio::test]
async fn hostile_values_stay_in_their_path_segment_and_query_value() {
    let recorder = Recorder::start("127.0.0.1").await.unwrap();
    let traps = Traps::start().await;
    let (source, spec) = api(&recorder);
    let host = recorder.host();
    let mut requests = 0;
    for value in VALUES {
        let context = format!("{value:?}");

        // A relative endpoint: the value as a path segment and as a query value.
        let result = source
            .call(
                find(&spec, "segment"),
                &values(&[("id", value), ("q", value)]),
                "r1",
                DEADLINE,
            )
            .await;
        if not_a_segment(value) {
            assert_refused_naming(result, &["id"], &context);
            assert!(recorder.take().is_empty(), "{context}");
        } else {
            let answer = result.unwrap_or_else(|e| panic!("{context}: {e}"));
            assert_eq!(answer.status, 200, "{context}");
            assert_in_place(
                &recorder.take(),
                &host,
                &["", "api", "v1", "items", "*", "tail"],
                value,
                &[("q", value), ("fixed", "1")],
                &context,
            );
            requests += 1;
        }

        // An absolute endpoint on the allowed host.
        let result = source
            .call(
                find(&spec, "absolute"),
                &values(&[("id", value), ("q", value)]),
                "r1",
                DEADLINE,
            )
            .await;
        if not_a_segment(value) {
            assert_refused_naming(result, &["id"], &context);
        } else {
            result.unwrap_or_else(|e| panic!("{context}: {e}"));
            assert_in_place(
                &recorder.take(),
                &host,
                &["", "abs", "*"],
                value,
                &[("q", value)],
                &context,
            );
            requests += 1;
        }

        // Two values in one segment, and one value beside literal dots: together they
        // never make a dot segment or a second segment.
        for (id, (a, b)) in [
            ("adjacent", (*value, "x")),
            ("adjacent", ("x", *value)),
            ("adjacent", (*value, *value)),
            ("dotted", (*value, *value)),
        ] {
            let context = format!("{id} {a:?} {b:?}");
            let result = source
                .call(
                    find(&spec, id),
                    &values(&[("a", a), ("b", b)]),
                    "r1",
                    DEADLINE,
                )
                .await;
            if not_a_segment(a) || not_a_segment(b) {
                assert_refused_naming(result, &["a", "b"], &context);
                assert!(recorder.take().is_empty(), "{context}");
                continue;
            }
            result.unwrap_or_else(|e| panic!("{context}: {e}"));
            let seen = recorder.take();
            if id == "adjacent" {
                let joined = format!("{a}{b}");
                let shape = ["", "api", "v1", "items", "*", "x"];
                assert_in_place(&seen, &host, &shape, &joined, &[], &context);
            } else {
                // files/.{a}/{b}. : two segments, each decoding to its text.
                let line = &seen[0].line;
                let path = line.split(' ').nth(1).unwrap();
                let segments: Vec<&str> = path.split('/').collect();
                assert_eq!(segments.len(), 6, "{context}: {path}");
                assert_eq!(
                    percent_decode(segments[4]),
                    Some(format!(".{a}")),
                    "{context}"
                );
                assert_eq!(
                    percent_decode(segments[5]),
                    Some(format!("{b}.")),
                    "{context}"
                );
                assert_eq!(seen.len(), 1, "{context}");
            }
            requests += 1;
        }
    }
    traps.assert_untouched("hostile values");
    println!(
        "{} hostile values through path and query placeholders: {requests} requests, each on \
         {host}, each value in its own segment and query value; traps untouched ({})",
        VALUES.len(),
        traps
            .0
            .iter()
            .map(Recorder::host)
            .collect::<Vec<_>>()
            .join(", ")
    );
}

#[tokio::test]
async fn hostile_values_through_http_call_tools() {
    let recorder = Recorder::start("127.0.0.1").await.unwrap();
    let traps = Traps::start().await;
    let catalog = tools_catalog(&recorder, "/forecast/{city}");
    check_catalog(&catalog).unwrap();
    let adapters = LocalAdapters::open(catalog, None).await.unwrap();
    let host = recorder.host();
    let (mut sent, mut refused, mut asked) = (0, 0, 0);
    for value in VALUES {
        // The value supplied beside the question, and written in the question.
        let requests = [
            tool_request("what is the weather", values(&[("city", value)])),
            tool_request(&format!("what is the weather in {value}"), Map::new()),
        ];
        for request in requests {
            let context = format!("{:?}", request.query);
            let answer = adapters.invoke(request).await.unwrap();
            match answer.status() {
                AdapterStatus::Ok => {
                    let city = answer.parameters["city"].as_str().unwrap().to_owned();
                    assert_in_place(
                        &recorder.take(),
                        &host,
                        &["", "forecast", "*"],
                        &city,
                        &[("city", &city), ("units", "metric")],
                        &context,
                    );
                    sent += 1;
                }
                AdapterStatus::Error => {
                    let error = answer.error().unwrap_or_default();
                    assert!(error.contains("parameter `city`"), "{context}: {error}");
                    assert!(recorder.take().is_empty(), "{context}");
                    refused += 1;
                }
                AdapterStatus::NeedsClarification => {
                    assert!(recorder.take().is_empty(), "{context}");
                    asked += 1;
                }
            }
        }
    }
    traps.assert_untouched("http_call values");
    println!(
        "http_call: {} values x 2 (session value, question text): {sent} requests in place, \
         {refused} refused naming the parameter, {asked} asked for the city",
        VALUES.len()
    );
}

#[tokio::test]
async fn endpoints_naming_another_host_are_refused_when_opened() {
    let recorder = Recorder::start("127.0.0.1").await.unwrap();
    let port = recorder.address.port();
    let off_host = [
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        "http://[::ffff:169.254.169.254]/".into(),
        "http://[::ffff:a9fe:a9fe]/".into(),
        "http://2852039166/".into(),
        "http://0251.0376.0251.0376/".into(),
        "http://0xA9FEA9FE/".into(),
        "HTTP://169.254.169.254/".into(),
        "http://[::1]/".into(),
        format!("http://[::1]:{port}/"),
        format!("http://localhost:{port}/"),
        format!("http://127.0.0.1:{}/", port.wrapping_add(1).max(1)),
        format!("http://127.0.0.1:{port}@169.254.169.254/"),
        format!("http://169.254.169.254#@127.0.0.1:{port}/"),
        format!("http://169.254.169.254?@127.0.0.1:{port}/"),
        format!("http://evil.test\\@127.0.0.1:{port}/"),
        "file:///etc/passwd".into(),
        "gopher://127.0.0.1:6379/_INFO".into(),
        "ftp://127.0.0.1/".into(),
    ];
    let with_placeholders = [
        "http://{host}/x".to_owned(),
        "http://127.0.0.1:{port}/x".into(),
        format!("http://{{user}}@127.0.0.1:{port}/x"),
        format!("http://127.0.0.1:{port}{{path}}"),
        "https://{sub}.example.com/".into(),
        "{scheme}://169.254.169.254/".into(),
    ];
    let mut refused = 0;
    for endpoint in off_host.iter().chain(&with_placeholders) {
        // As an HTTP template, and as an http_call tool (the index build's check).
        let datasource = Datasource {
            spec: serde_json::from_value(json!({
                "name": "api", "kind": "http", "description": "d",
                "connection": {"base_url": recorder.base()},
            }))
            .unwrap(),
            templates: vec![template(json!({
                "id": "leaky", "endpoint_template": endpoint,
                "parameters": [{"name": "host"}, {"name": "port"}, {"name": "user"},
                               {"name": "path"}, {"name": "sub"}, {"name": "scheme"}],
            }))],
        };
        let message = HttpDatasource::open(&datasource)
            .err()
            .unwrap_or_else(|| panic!("{endpoint}: opened"))
            .to_string();
        assert!(
            message.contains("leaky")
                && (message.contains("neither the base_url's host nor in allowed_hosts")
                    // The base_url's host on another scheme or port.
                    || message.contains("is allowed only as")
                    || message.contains("only http and https")
                    || message.contains("placeholders may only fill the path")),
            "{endpoint}: {message}"
        );
        let mut catalog = tools_catalog(&recorder, endpoint);
        catalog.datasources[0].templates[0].parameters = datasource.templates[0].parameters.clone();
        let message = check_catalog(&catalog)
            .err()
            .unwrap_or_else(|| panic!("{endpoint}: passed as an http_call"))
            .to_string();
        assert!(
            message.contains("weather_forecast"),
            "{endpoint}: {message}"
        );
        refused += 2;
    }
    println!(
        "{} endpoints naming another host or filling the authority: {refused} refusals \
         (HTTP templates and http_call tools)",
        off_host.len() + with_placeholders.len()
    );
}
