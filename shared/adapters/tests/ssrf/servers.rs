//! The servers: the recorder, which records each request and answers with JSON or a
//! redirect, and the traps, which must never be reached.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What a server received: the request line and the headers (names lowercased).
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) line: String,
    pub(crate) headers: Vec<(String, String)>,
}

/// A raw HTTP server that records each request and answers `/r/<i>/<status>` with a
/// redirect to its `i`th location, anything else with `{"line": <request line>}`.
pub(crate) struct Recorder {
    pub(crate) address: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    locations: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    /// A recorder on `ip` (any free port); `None` when this machine has no such address.
    pub(crate) async fn start(ip: &str) -> Option<Recorder> {
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

    pub(crate) fn base(&self) -> String {
        format!("http://{}", self.address)
    }

    pub(crate) fn host(&self) -> String {
        self.address.to_string()
    }

    /// The requests received since the last call.
    pub(crate) fn take(&self) -> Vec<Seen> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }

    pub(crate) fn redirect_to(&self, locations: Vec<String>) {
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
pub(crate) struct Traps(pub(crate) Vec<Recorder>);

impl Traps {
    pub(crate) async fn start() -> Traps {
        let mut traps = Vec::new();
        for ip in ["127.0.0.1", "127.0.0.2", "::1"] {
            traps.extend(Recorder::start(ip).await);
        }
        Traps(traps)
    }

    pub(crate) fn assert_untouched(&self, context: &str) {
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
