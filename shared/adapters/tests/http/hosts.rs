//! `allowed_hosts` matches scheme and port: a bare entry means https (port 443 unless
//! written), an `http://host:port` entry allows plain http on exactly that port, for an
//! endpoint when the datasource opens and for a redirect when it is followed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::http::{header, StatusCode};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Map, Value};
use switchyard_adapters::http::HttpDatasource;

use crate::setup::{datasource, find, serve, SECOND};

/// Two servers on 127.0.0.1: the base, whose `/away` redirects to the other's `/landing`,
/// and the other, counting the requests that land.
struct Servers {
    base: String,
    other: String,
    other_port: u16,
    landed: Arc<AtomicUsize>,
}

async fn servers() -> Servers {
    let landed = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&landed);
    let other = serve(Router::new().route(
        "/landing",
        get(move || {
            count.fetch_add(1, Ordering::SeqCst);
            async { Json(json!({"landed": true})) }
        }),
    ))
    .await;
    let target = format!("{other}/landing");
    let base = serve(Router::new().route(
        "/away",
        get(move || {
            let target = target.clone();
            async move { (StatusCode::FOUND, [(header::LOCATION, target)]) }
        }),
    ))
    .await;
    let other_port = other.rsplit_once(':').unwrap().1.parse().unwrap();
    Servers {
        base,
        other,
        other_port,
        landed,
    }
}

impl Servers {
    /// Open a datasource on the base allowing `allowed`, with one template, `direct`,
    /// whose endpoint is `endpoint`.
    fn open(&self, allowed: &Value, endpoint: &str) -> Result<HttpDatasource, String> {
        let spec = datasource(
            json!({"connection": {"base_url": self.base}, "allowed_hosts": allowed}),
            vec![json!({"id": "direct", "endpoint_template": endpoint})],
        );
        HttpDatasource::open(&spec).map_err(|e| e.to_string())
    }

    /// The error opening refuses `endpoint` with.
    fn refused(&self, allowed: &Value, endpoint: &str) -> String {
        self.open(allowed, endpoint).err().unwrap_or_else(|| {
            panic!("allowed_hosts {allowed} let `{endpoint}` open; it should be refused")
        })
    }

    /// Call the base's `/away` on a datasource allowing `allowed`: the redirect's outcome.
    async fn follow(&self, allowed: &Value) -> Result<Value, String> {
        let spec = datasource(
            json!({"connection": {"base_url": self.base}, "allowed_hosts": allowed}),
            vec![json!({"id": "away", "endpoint_template": "/away"})],
        );
        let source = HttpDatasource::open(&spec).unwrap();
        source
            .call(find(&spec, "away"), &Map::new(), "r1", SECOND)
            .await
            .map(|result| result.data)
            .map_err(|e| e.to_string())
    }

    /// The error the redirect to the other server is refused with.
    async fn redirect_refused(&self, allowed: &Value) -> String {
        match self.follow(allowed).await {
            Err(error) => error,
            Ok(data) => panic!(
                "allowed_hosts {allowed} let the redirect to {} through ({data}); it should \
                 be refused",
                self.other
            ),
        }
    }

    fn landed(&self) -> usize {
        self.landed.load(Ordering::SeqCst)
    }
}

#[tokio::test]
async fn a_bare_allowed_hosts_entry_does_not_allow_plain_http() {
    let servers = servers().await;
    let port = servers.other_port;
    let bare = json!([format!("127.0.0.1:{port}")]);
    let plain = format!("http://127.0.0.1:{port}/landing");

    let error = servers.redirect_refused(&bare).await;
    assert!(
        error.contains("template `away`")
            && error.contains("redirect not allowed")
            && error.contains(&format!("not `http://127.0.0.1:{port}`")),
        "{error}"
    );
    assert_eq!(servers.landed(), 0, "the redirect reached plain http");

    let error = servers.refused(&bare, &plain);
    assert!(
        error.contains("template `direct`: endpoint host `127.0.0.1` is allowed only as")
            && error.contains(&format!("`https://127.0.0.1:{port}`"))
            && error.contains(&format!("not `http://127.0.0.1:{port}`"))
            && error.contains("a bare allowed_hosts entry means https"),
        "{error}"
    );
}

#[tokio::test]
async fn an_http_url_entry_allows_plain_http_on_its_port() {
    let servers = servers().await;
    let port = servers.other_port;
    let entry = json!([servers.other]);

    let opened = servers.open(&entry, &format!("{}/landing", servers.other));
    assert!(opened.is_ok(), "{:?}", opened.err());
    assert_eq!(
        servers.follow(&entry).await.unwrap(),
        json!({"landed": true})
    );
    assert_eq!(servers.landed(), 1);

    // Exactly that scheme: not https on the same host and port.
    let error = servers.refused(&entry, &format!("https://127.0.0.1:{port}/x"));
    assert!(
        error.contains("template `direct`")
            && error.contains(&format!("`http://127.0.0.1:{port}`"))
            && error.contains(&format!("not `https://127.0.0.1:{port}`")),
        "{error}"
    );
}

#[tokio::test]
async fn an_entry_for_another_port_is_refused() {
    let servers = servers().await;
    let port = servers.other_port;
    let plain = format!("http://127.0.0.1:{port}/landing");
    // `http://127.0.0.1` is port 80; the other entry names a port nothing listens on.
    for entry in ["http://127.0.0.1", "http://127.0.0.1:9"] {
        let allowed = json!([entry]);
        let error = servers.redirect_refused(&allowed).await;
        assert!(
            error.contains("redirect not allowed")
                && error.contains(&format!("not `http://127.0.0.1:{port}`")),
            "{entry}: {error}"
        );
        let error = servers.refused(&allowed, &plain);
        assert!(
            error.contains("template `direct`")
                && error.contains(&format!("not `http://127.0.0.1:{port}`")),
            "{entry}: {error}"
        );
    }
    assert_eq!(servers.landed(), 0, "a redirect reached another port");

    // A bare entry without a port is https on 443, not https on any port.
    let error = servers.refused(
        &json!(["api.partner.test"]),
        "https://api.partner.test:8443/x",
    );
    assert!(
        error.contains("allowed only as `https://api.partner.test:443`"),
        "{error}"
    );
}
