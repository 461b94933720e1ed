//! The checks on what the recorder received and on what the adapter refused.

use switchyard_adapters::AdapterError;

use crate::servers::Seen;

/// Percent-decoding; `None` for a bad escape or bytes that are not UTF-8.
pub(crate) fn percent_decode(text: &str) -> Option<String> {
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
pub(crate) fn assert_in_place(
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
pub(crate) fn not_a_segment(value: &str) -> bool {
    matches!(value, "" | "." | "..")
}

pub(crate) fn assert_refused_naming(
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
