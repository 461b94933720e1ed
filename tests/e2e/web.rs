//! A `web` datasource through `switchyard serve`: a question routed to a template naming a
//! page, the page fetched from a real web server on 127.0.0.1 (the saved pages of
//! tests/data/web), reduced to its main text and searched; the answer cites the page.

use std::process::Stdio;

use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde_json::json;
use switchyard_e2e::{repo_root, serve_app, serve_command, switchyard_base};

/// The saved pages under /pages/ on a free port; the server lives as long as the test.
fn site() -> String {
    let pages = repo_root().join("tests/data/web");
    let app = axum::Router::new().route(
        "/pages/{*path}",
        axum::routing::get(move |Path(path): Path<String>| {
            let file = (!path.split('/').any(|part| part == "..")).then(|| pages.join(&path));
            async move {
                match file.map(std::fs::read) {
                    Some(Ok(body)) => ([("content-type", "text/html")], body).into_response(),
                    _ => StatusCode::NOT_FOUND.into_response(),
                }
            }
        }),
    );
    format!("http://{}", serve_app(app))
}

#[test]
fn a_question_about_a_page_is_answered_from_the_page() {
    let web = site();
    // The catalog of tests/data/catalogs/servers without its MariaDB datasource: this test
    // needs no database server.
    let catalog = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        repo_root().join("tests/data/catalogs/servers/rust_docs"),
        catalog.path().join("rust_docs"),
    )
    .unwrap();
    let cache = tempfile::tempdir().unwrap();
    // The base model: a catalog of its own would adapt an encoder of its own (minutes of
    // training in a debug build) for a test of the web adapter's path, not of routing.
    let mut command = switchyard_base(cache.path());
    command.env("SWITCHYARD_TEST_WEB_URL", &web);
    let templates = catalog.path().to_str().unwrap().to_owned();
    let server = serve_command(
        command,
        &["--templates", templates.as_str()],
        Stdio::inherit(),
        "warn",
    );

    let (status, body) = server.post(
        "/v1/query",
        json!({"query": "What does opt-level do in a cargo profile?"}),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["metadata"]["template_id"], "cargo_profiles", "{body}");
    let content = body["content"].as_str().unwrap();
    assert!(
        content.contains(&format!("{web}/pages/cargo/profiles.html"))
            && content.contains("opt-level"),
        "{body}"
    );

    let (status, body) = server.post(
        "/v1/query",
        json!({"query": "How does the rustc jobserver limit parallel jobs?"}),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["metadata"]["template_id"], "rustc_book", "{body}");
    assert!(
        body["content"]
            .as_str()
            .unwrap()
            .contains("/pages/rustc/jobserver.html"),
        "{body}"
    );
}
