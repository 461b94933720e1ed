//! Stand-ins for a database server that stops answering, on 127.0.0.1: a listener that
//! accepts connections and never reads or writes, and a proxy to the real server that can
//! be frozen (from then on it forwards nothing, in either direction, and keeps every
//! socket open), as a server or network that hangs does.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A port that accepts TCP connections and never answers (kept open while the runtime
/// runs).
pub async fn silent_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    port
}

/// `url` with its `host:port` replaced by 127.0.0.1 and `port`.
pub fn url_at(url: &str, port: u16) -> String {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let credentials = authority.rsplit_once('@').map(|(c, _)| format!("{c}@"));
    format!(
        "{scheme}://{}127.0.0.1:{port}/{path}",
        credentials.unwrap_or_default()
    )
}

/// The `host:port` of `url`.
pub fn address_of(url: &str) -> String {
    let rest = url.split_once("://").unwrap().1;
    let authority = rest.split('/').next().unwrap();
    authority.rsplit('@').next().unwrap().to_owned()
}

/// A TCP proxy to `upstream` that forwards until [`Proxy::freeze`].
pub struct Proxy {
    pub port: u16,
    /// Whether connections accepted from now on are frozen.
    frozen: Arc<AtomicBool>,
    /// Each open connection's own flag.
    connections: Arc<Mutex<Vec<Arc<AtomicBool>>>>,
}

impl Proxy {
    pub async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let frozen = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(Mutex::new(Vec::new()));
        let (new_frozen, list) = (frozen.clone(), connections.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = TcpStream::connect(&upstream).await.unwrap();
                let flag = Arc::new(AtomicBool::new(new_frozen.load(Ordering::SeqCst)));
                list.lock().unwrap().push(flag.clone());
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                tokio::spawn(pump(client_read, server_write, flag.clone()));
                tokio::spawn(pump(server_read, client_write, flag));
            }
        });
        Proxy {
            port,
            frozen,
            connections,
        }
    }

    /// From now on nothing is forwarded, on open connections and new ones; connections
    /// stay open.
    pub fn freeze(&self) {
        self.frozen.store(true, Ordering::SeqCst);
        for connection in self.connections.lock().unwrap().iter() {
            connection.store(true, Ordering::SeqCst);
        }
    }

    /// New connections are forwarded again; the frozen ones stay frozen (a server that
    /// came back does not revive a hung socket). The MySQL tests' alone: PostgreSQL's one
    /// connection is opened again by the adapter, with no pool to use up.
    #[allow(dead_code)]
    pub fn thaw_new_connections(&self) {
        self.frozen.store(false, Ordering::SeqCst);
    }
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    frozen: Arc<AtomicBool>,
) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        if frozen.load(Ordering::SeqCst) {
            break;
        }
        let n = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if frozen.load(Ordering::SeqCst) || to.write_all(&buffer[..n]).await.is_err() {
            break;
        }
    }
    // Hold both halves open, forwarding nothing.
    std::future::pending::<()>().await;
    drop((from, to));
}
