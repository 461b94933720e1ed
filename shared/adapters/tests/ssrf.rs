//! SSRF attempts through the HTTP adapter and `http_call` tools: hostile values in path
//! placeholders and query values (other hosts, `file:`, the cloud metadata address in its
//! IPv6, decimal, octal and hex spellings, `user@host`, `@ # \`, encoded `/` and `..`, CRLF),
//! redirects off the allowed host, and endpoints that name another host.
//!
//! The API is a raw TCP server on 127.0.0.1 that records the exact request line and headers
//! it receives and answers with JSON or a redirect; "trap" servers on other ports and
//! addresses must never be reached. Every attempt is refused with an error saying why, or
//! its value arrives inside its own path segment or query value on the allowed host.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use switchyard_adapters::http::HttpDatasource;
use switchyard_adapters::{check_catalog, AdapterError, LocalAdapters};
use switchyard_core::invoker::{AdapterInvoker, AdapterRequest, AdapterStatus};
use switchyard_core::template::{Catalog, Datasource, Template};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const DEADLINE: Duration = Duration::from_secs(3);

/// Hostile values for a path placeholder or a query value.
const VALUES: &[&str] = &[
    // The metadata address, spelled every way.
    "http://169.254.169.254/latest/meta-data/",
    "169.254.169.254",
    "http://[::ffff:169.254.169.254]/",
    "[::ffff:169.254.169.254]",
    "http://2852039166/",
    "2852039166",
    "http://0251.0376.0251.0376/",
    "0251.0376.0251.0376",
    "http://0xA9FEA9FE/",
    "0xA9FEA9FE",
    "http://0xa9.0xfe.0xa9.0xfe/",
    // Loopback, other schemes, other hosts.
    "http://[::1]/",
    "[::1]:22",
    "http://127.0.0.1:1/",
    "127.0.0.1:1",
    ":80",
    "localhost",
    "file:///etc/passwd",
    "file://localhost/etc/passwd",
    "gopher://127.0.0.1:6379/_INFO",
    "http://evil.test/",
    "//evil.test/x",
    "///evil.test",
    "evil.test",
    // Authority tricks.
    "user@evil.test",
    "@evil.test",
    "127.0.0.1@evil.test",
    "evil.test#@127.0.0.1",
    "x#frag",
    "#",
    "?",
    "?x=1",
    "&admin=1",
    "x&q=evil",
    "a=b",
    "\\evil.test",
    "\\\\evil.test\\x",
    "/\\evil.test",
    // Dot segments and encodings.
    "..",
    ".",
    "",
    "../..",
    "../../etc/passwd",
    "..\\..\\etc\\passwd",
    "%2e%2e",
    "%2E%2E%2F",
    "..%2F..%2F",
    ".%2e",
    "%2e.",
    "%2F",
    "a%2Fb",
    "%252F",
    "%00",
    "..%00",
    "..;/",
    "\0",
    // Request splitting.
    "x\r\nHost: evil.test",
    "x\r\n\r\nGET http://evil.test/ HTTP/1.1",
    "%0d%0aHost:%20evil.test",
    "x y",
    // Look-alikes.
    "\u{ff45}\u{ff56}\u{ff49}\u{ff4c}\u{ff0e}\u{ff54}\u{ff45}\u{ff53}\u{ff54}",
    "evil\u{3002}test",
    "\u{ff0f}\u{ff0f}evil.test",
    "\u{2215}evil.test",
    "\u{2024}\u{2024}",
    "\u{2025}",
    // Other placeholders.
    "{q}",
    "{id}",
];

/// What a server received: the request line and the headers (names lowercased).
#[derive(Debug, Clone)]
struct Seen {
    line: String,
    headers: Vec<(String, String)>,
}

/// A raw HTTP server that records each request and answers `/r/<i>/<status>` with a
/// redirect to its `i`th location, anything else with `{"line": <request line>}`.
struct Recorder {
    address: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    locations: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    /// A recorder on `ip` (any free port); `None` when this machine has no such address.
    async fn start(ip: &str) -> Option<Recorder> {
        let listener = TcpListener::bind((ip, 0)).await.ok()?;
        let address = listener.local_addr().ok()?;
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let locations: Arc<Mutex<Vec<String>>> = Arc::default();
        let (log, targets) = (Arc::clone(&seen), Arc::clone(&locations));
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(answer(stream, Arc::clone(&log), Arc::clone(&targets)));
            }
        });
        Some(Recorder {
            address,
            seen,
            locations,
        })
    }

    fn base(&self) -> String {
        format!("http://{}", self.address)
    }

    fn host(&self) -> String {
        self.address.to_string()
    }

    /// The requests received since the last call.
    fn take(&self) -> Vec<Seen> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }

    fn redirect_to(&self, locations: Vec<String>) {
        *self.locations.lock().unwrap() = locations;
    }
}

async fn answer(
    mut stream: TcpStream,
    seen: Arc<Mutex<Vec<Seen>>>,
    locations: Arc<Mutex<Vec<String>>>,
) {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buffer.windows(4).any(|w| w == b"\r\n\r\n") && buffer.len() < 1 << 20 {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
    let text = String::from_utf8_lossy(&buffer).into_owned();
    let head = text.split("\r\n\r\n").next().unwrap_or_default();
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap_or_default().to_owned();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    seen.lock().unwrap().push(Seen {
        line: line.clone(),
        headers,
    });
    let target = line.split(' ').nth(1).unwrap_or("/");
    let path = target.split('?').next().unwrap_or_default();
    let redirect = path.strip_prefix("/r/").and_then(|rest| {
        let (index, status) = rest.split_once('/')?;
        let location = locations
            .lock()
            .unwrap()
            .get(index.parse::<usize>().ok()?)?
            .clone();
        Some((status.parse::<u16>().ok()?, location))
    });
    let body = json!({"line": line}).to_string();
    let (status, extra) = match redirect {
        Some((status, location)) => (status, format!("Location: {location}\r\n")),
        None => (200, String::new()),
    };
    let response = format!(
        "HTTP/1.1 {status} Answer\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// Servers that must never be reached: another port on 127.0.0.1, another loopback address
/// and the IPv6 loopback (those this machine has).
struct Traps(Vec<Recorder>);

impl Traps {
    async fn start() -> Traps {
        let mut traps = Vec::new();
        for ip in ["127.0.0.1", "127.0.0.2", "::1"] {
            traps.extend(Recorder::start(ip).await);
        }
        Traps(traps)
    }

    fn assert_untouched(&self, context: &str) {
        for trap in &self.0 {
            let seen = trap.take();
            assert!(
                seen.is_empty(),
                "{context}: {} was reached: {seen:?}",
                trap.host()
            );
        }
    }
}

fn template(fields: Value) -> Template {
    let mut full = json!({"description": "a call", "nl_examples": ["call it"]});
    for (key, value) in fields.as_object().unwrap() {
        full[key] = value.clone();
    }
    serde_json::from_value(full).unwrap()
}

/// The datasource `api` on the recorder: its base URL has a path.
fn api(recorder: &Recorder) -> (HttpDatasource, Datasource) {
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

fn find<'a>(datasource: &'a Datasource, id: &str) -> &'a Template {
    datasource.templates.iter().find(|t| t.id == id).unwrap()
}

fn values(pairs: &[(&str, &str)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Value::from(*v)))
        .collect()
}

/// Percent-decoding; `None` for a bad escape or bytes that are not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The form-decoded pairs of a query string, sorted.
fn query_pairs(query: &str) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = reqwest::Url::parse(&format!("http://x/?{query}"))
        .unwrap()
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    pairs.sort();
    pairs
}

/// The one request `seen` holds went to `host`, its path has `shape` (`*` the segment the
/// value fills, which must decode to exactly `value`) and its query is exactly `query`.
fn assert_in_place(
    seen: &[Seen],
    host: &str,
    shape: &[&str],
    value: &str,
    query: &[(&str, &str)],
    context: &str,
) {
    assert_eq!(seen.len(), 1, "{context}: {seen:?}");
    let request = &seen[0];
    let parts: Vec<&str> = request.line.split(' ').collect();
    assert!(
        parts.len() == 3 && parts[0] == "GET" && parts[2] == "HTTP/1.1",
        "{context}: request line {:?}",
        request.line
    );
    let hosts: Vec<&str> = request
        .headers
        .iter()
        .filter(|(k, _)| k == "host")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(hosts, [host], "{context}: {request:?}");
    assert!(
        request
            .headers
            .iter()
            .all(|(k, v)| !k.contains("evil") && !v.contains("evil")),
        "{context}: a header was injected: {request:?}"
    );
    let (path, query_text) = parts[1].split_once('?').unwrap_or((parts[1], ""));
    let segments: Vec<&str> = path.split('/').collect();
    assert_eq!(segments.len(), shape.len(), "{context}: path {path}");
    for (segment, expected) in segments.iter().zip(shape) {
        if *expected == "*" {
            assert_eq!(
                percent_decode(segment).as_deref(),
                Some(value),
                "{context}: path {path}"
            );
        } else {
            assert_eq!(segment, expected, "{context}: path {path}");
        }
    }
    let mut expected: Vec<(String, String)> = query
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    expected.sort();
    assert_eq!(
        query_pairs(query_text),
        expected,
        "{context}: query {query_text}"
    );
}

/// A value the adapter must refuse as a path segment: empty, `.` or `..`.
fn not_a_segment(value: &str) -> bool {
    matches!(value, "" | "." | "..")
}

fn assert_refused_naming(
    result: Result<switchyard_adapters::http::HttpResult, AdapterError>,
    names: &[&str],
    context: &str,
) {
    match result {
        Err(AdapterError::Parameter { name, message }) => {
            assert!(
                names.contains(&name.as_str()),
                "{context}: {name}: {message}"
            )
        }
        other => panic!("{context}: not refused: {other:?}"),
    }
}

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
                .call(find(&spec, id), &values(&[("a", a), ("b", b)]), DEADLINE)
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

/// A tools datasource on the recorder with one `http_call` tool.
fn tools_catalog(recorder: &Recorder, endpoint: &str) -> Catalog {
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

fn tool_request(query: &str, session: Map<String, Value>) -> AdapterRequest {
    serde_json::from_value(json!({
        "request_id": "ssrf", "datasource": "tools", "template_id": "weather_forecast",
        "query": query, "session_parameters": session, "deadline_ms": 3000,
    }))
    .unwrap()
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
            match answer.status {
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
                    let error = answer.error.unwrap_or_default();
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
async fn redirects_never_leave_the_allowed_host() {
    let recorder = Recorder::start("127.0.0.1").await.unwrap();
    let traps = Traps::start().await;
    let port = recorder.address.port();
    let trap_base = |ip: &str, fallback: &str| {
        traps
            .0
            .iter()
            .find(|t| t.address.ip().to_string() == ip)
            .map(Recorder::base)
            .unwrap_or_else(|| fallback.to_owned())
    };
    // Off the allowed host (127.0.0.1 on the recorder's port): each must be refused.
    let mut refused_targets: Vec<(&str, String)> = vec![
        (
            "metadata",
            "http://169.254.169.254/latest/meta-data/".into(),
        ),
        (
            "metadata, IPv4-mapped IPv6",
            "http://[::ffff:169.254.169.254]/latest/meta-data/".into(),
        ),
        (
            "metadata, decimal",
            "http://2852039166/latest/meta-data/".into(),
        ),
        ("metadata, octal", "http://0251.0376.0251.0376/".into()),
        ("metadata, hex", "http://0xA9FEA9FE/".into()),
        ("metadata, dotted hex", "http://0xa9.0xfe.0xa9.0xfe/".into()),
        (
            "metadata behind userinfo",
            format!("http://127.0.0.1:{port}@169.254.169.254/"),
        ),
        (
            "metadata behind a fragment",
            format!("http://169.254.169.254#@127.0.0.1:{port}/"),
        ),
        (
            "a backslash before the userinfo",
            format!("http://evil.test\\@127.0.0.1:{port}/"),
        ),
        ("another port", trap_base("127.0.0.1", "http://127.0.0.1:1")),
        (
            "another loopback address",
            trap_base("127.0.0.2", "http://127.0.0.2:1"),
        ),
        ("IPv6 loopback", trap_base("::1", "http://[::1]:1")),
        (
            "the same server under another name",
            format!("http://localhost:{port}/ok"),
        ),
        (
            "the same server, IPv4-mapped IPv6",
            format!("http://[::ffff:127.0.0.1]:{port}/ok"),
        ),
        ("file", "file:///etc/passwd".into()),
        ("gopher", "gopher://127.0.0.1:6379/_INFO".into()),
        ("another host", "http://evil.test/".into()),
        ("scheme-relative", "//evil.test/x".into()),
        ("backslash-relative", "/\\evil.test/x".into()),
    ];
    let hop_to_metadata = refused_targets.len();
    refused_targets.push(("two hops, then metadata", "/r/0/302".into()));
    let looping = refused_targets.len();
    refused_targets.push(("a loop", format!("/r/{looping}/302")));
    // On the allowed host: followed.
    let followed_at = refused_targets.len();
    let followed: Vec<(&str, String)> = vec![
        ("the same host, another path", "/api/v1/ok".into()),
        (
            "the same host, decimal",
            format!("http://2130706433:{port}/api/v1/ok"),
        ),
    ];
    let mut locations: Vec<String> = refused_targets.iter().map(|(_, l)| l.clone()).collect();
    locations.extend(followed.iter().map(|(_, l)| l.clone()));
    recorder.redirect_to(locations);

    let (source, spec) = api(&recorder);
    let redirect = find(&spec, "redirect");
    let (mut calls, mut unfollowed_count) = (0, 0);
    for status in ["301", "302", "303", "307", "308"] {
        for (index, (what, location)) in refused_targets.iter().enumerate() {
            let context = format!("{status} to {what} ({location})");
            let n = index.to_string();
            let error = source
                .call(
                    redirect,
                    &values(&[("n", &n), ("status", status)]),
                    DEADLINE,
                )
                .await
                .map(|r| r.data)
                .unwrap_err();
            let message = error.to_string();
            // Refused by the redirect policy, or (a scheme the client never follows) the
            // redirect itself answered as an error.
            let by_policy = if index == looping {
                message.contains("redirect") && message.contains("more than 5 redirects")
            } else {
                message.contains("redirect") && message.contains("not allowed")
            };
            let unfollowed = message.contains(&format!("HTTP {status} "));
            assert!(
                (by_policy || unfollowed) && message.contains("template `redirect`"),
                "{context}: {message}"
            );
            if unfollowed {
                unfollowed_count += 1;
            }
            // The recorder saw the request it redirected (and the same-host hops), nothing
            // under another name.
            let seen = recorder.take();
            let hops = match index {
                i if i == hop_to_metadata => 2,
                // The first request and five followed hops on the allowed host.
                i if i == looping => 6,
                _ => 1,
            };
            assert_eq!(seen.len(), hops, "{context}: {seen:?}");
            assert!(
                seen.iter().all(|s| s.line.starts_with("GET /r/")),
                "{context}: {seen:?}"
            );
            calls += 1;
        }
        for (offset, (what, location)) in followed.iter().enumerate() {
            let context = format!("{status} to {what} ({location})");
            let n = (followed_at + offset).to_string();
            let answer = source
                .call(
                    redirect,
                    &values(&[("n", &n), ("status", status)]),
                    DEADLINE,
                )
                .await
                .unwrap_or_else(|e| panic!("{context}: {e}"));
            let seen = recorder.take();
            assert_eq!(seen.len(), 2, "{context}: {seen:?}");
            assert_eq!(answer.data["line"], "GET /api/v1/ok HTTP/1.1", "{context}");
            assert!(
                seen[1].headers.contains(&("host".into(), recorder.host())),
                "{context}: {seen:?}"
            );
            calls += 1;
        }
    }
    traps.assert_untouched("redirects");
    println!(
        "redirects: {} targets x 5 statuses ({calls} calls): {} refused ({unfollowed_count} of \
         them schemes the client does not follow, answered as the 3xx error), {} followed on \
         the allowed host; traps untouched",
        refused_targets.len() + followed.len(),
        refused_targets.len() * 5,
        followed.len() * 5,
    );

    // The same policy holds for http_call tools.
    let catalog = tools_catalog(&recorder, "/r/{city}/302");
    let adapters = LocalAdapters::open(catalog, None).await.unwrap();
    let answer = adapters
        .invoke(tool_request("weather in 0", Map::new()))
        .await
        .unwrap();
    assert_eq!(answer.status, AdapterStatus::Error, "{answer:?}");
    let error = answer.error.unwrap();
    assert!(
        error.contains("169.254.169.254") && error.contains("not allowed"),
        "{error}"
    );
    traps.assert_untouched("http_call redirect");
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
