//! Redirects off the allowed host, through the HTTP adapter and an `http_call` tool.

use serde_json::Map;
use switchyard_adapters::LocalAdapters;
use switchyard_contract::adapter::{AdapterInvoker, AdapterStatus};

use crate::datasources::{api, find, tool_request, tools_catalog, values};
use crate::servers::{Recorder, Traps};
use crate::DEADLINE;

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
                    "r1",
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
                    "r1",
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
    assert_eq!(answer.status(), AdapterStatus::Error, "{answer:?}");
    let error = answer.error().unwrap();
    assert!(
        error.contains("169.254.169.254") && error.contains("not allowed"),
        "{error}"
    );
    traps.assert_untouched("http_call redirect");
}
