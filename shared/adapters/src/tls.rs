//! TLS to the SQL servers, asked for in the connection URL: PostgreSQL's `sslmode` and
//! `sslrootcert`, MySQL's `ssl-mode` and `ssl-ca` (the names their own clients use).
//!
//! Every encrypted connection verifies the server's certificate chain and its host name,
//! against Mozilla's roots (webpki-roots) and the CA file the URL names (for RDS, its
//! `global-bundle.pem`). An unverified connection stops only a passive listener, so
//! `require` and `verify-ca` verify as `verify-full` does; `prefer` and `allow`, which
//! fall back to plain text without a word, are refused. Without a mode the connection is
//! plain, as before: fine on loopback, not across a network.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, InvalidDnsNameError, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};

/// What the URL asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TlsMode {
    /// Plain text (no mode, or `disable` / `DISABLED`).
    Plain,
    /// Encrypted and verified, with this CA file's certificates trusted besides Mozilla's.
    Verified { ca_file: Option<String> },
}

/// The names one engine gives its TLS settings in a URL, and the values it takes.
pub(crate) struct UrlKeys {
    pub mode: &'static str,
    pub ca_file: &'static str,
    /// Values read as plain text.
    pub plain: &'static [&'static str],
    /// Values read as encrypted and verified.
    pub verified: &'static [&'static str],
    /// Other TLS settings of the engine or its driver, refused with the reason.
    pub refused: &'static [(&'static str, &'static str)],
}

pub(crate) const POSTGRES_KEYS: UrlKeys = UrlKeys {
    mode: "sslmode",
    ca_file: "sslrootcert",
    plain: &["disable"],
    verified: &["require", "verify-ca", "verify-full"],
    refused: &[
        ("sslcert", "client certificates are not supported"),
        ("sslkey", "client certificates are not supported"),
    ],
};

pub(crate) const MYSQL_KEYS: UrlKeys = UrlKeys {
    mode: "ssl-mode",
    ca_file: "ssl-ca",
    plain: &["disabled"],
    verified: &["required", "verify_ca", "verify_identity"],
    refused: &[
        ("require_ssl", "use ssl-mode=VERIFY_IDENTITY"),
        (
            "verify_ca",
            "certificates are always verified; use ssl-mode",
        ),
        (
            "verify_identity",
            "certificates are always verified; use ssl-mode",
        ),
        (
            "built_in_roots",
            "Mozilla's roots are always trusted; add yours with ssl-ca",
        ),
    ],
};

/// Takes the TLS settings out of `url` (a `scheme://…?k=v&…` URL, or PostgreSQL's
/// `key=value …` form): the URL the driver reads, and the mode. The error names the setting.
pub(crate) fn take_mode(url: &str, keys: &UrlKeys) -> Result<(String, TlsMode), String> {
    let (rest, mut settings) = split_settings(url, keys);
    let mut take = |key: &str| {
        settings
            .iter()
            .position(|(k, _)| k == key)
            .map(|i| settings.remove(i).1)
    };
    let mode = take(keys.mode);
    let ca_file = take(keys.ca_file);
    if let Some((key, _)) = settings.first() {
        let reason = keys.refused.iter().find(|(k, _)| k == key).map(|(_, r)| *r);
        return Err(format!(
            "`{key}` is not supported: {}",
            reason.unwrap_or("")
        ));
    }
    let mode = match mode.map(|m| m.to_ascii_lowercase()) {
        None => TlsMode::Plain,
        Some(m) if keys.plain.contains(&m.as_str()) => TlsMode::Plain,
        Some(m) if keys.verified.contains(&m.as_str()) => TlsMode::Verified {
            ca_file: ca_file.clone(),
        },
        Some(m) => {
            return Err(format!(
                "`{}={m}` is not supported: use one of {} (each verifies the server's \
                 certificate), or {} for plain text",
                keys.mode,
                keys.verified.join(", "),
                keys.plain.join(", ")
            ))
        }
    };
    if ca_file.is_some() && mode == TlsMode::Plain {
        return Err(format!(
            "`{}` names a CA file but `{}` does not ask for TLS: add {}={}",
            keys.ca_file,
            keys.mode,
            keys.mode,
            keys.verified[keys.verified.len() - 1]
        ));
    }
    Ok((rest, mode))
}

/// The URL without the settings `keys` knows of (its mode, CA file and refused ones), and
/// those settings, percent-decoded.
fn split_settings(url: &str, keys: &UrlKeys) -> (String, Vec<(String, String)>) {
    let ours = |key: &str| {
        key == keys.mode || key == keys.ca_file || keys.refused.iter().any(|(k, _)| *k == key)
    };
    let mut settings = Vec::new();
    if url.contains("://") {
        let Some((base, query)) = url.split_once('?') else {
            return (url.to_string(), settings);
        };
        let mut kept = Vec::new();
        for pair in query.split('&') {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let key = percent_decode(key);
            if ours(&key) {
                settings.push((key, percent_decode(value)));
            } else {
                kept.push(pair);
            }
        }
        let rest = if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        return (rest, settings);
    }
    // PostgreSQL's `host=… sslmode=…` form: whitespace between settings (a quoted value
    // with spaces is left to the driver).
    let mut kept = Vec::new();
    for token in url.split_whitespace() {
        match token.split_once('=') {
            Some((key, value)) if ours(key) => {
                settings.push((key.to_string(), value.trim_matches('\'').to_string()))
            }
            _ => kept.push(token),
        }
    }
    (kept.join(" "), settings)
}

/// `%XX` escapes decoded; `+` stays a plus, as libpq and mysql_async read a URL (it is a
/// space only in form encoding): "/certs/ca+rds.pem" names that file.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The PEM certificates of a CA file, read now so that a wrong path fails when the
/// datasource opens. The error names the file.
pub(crate) fn read_ca_file(path: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certificates = CertificateDer::pem_file_iter(Path::new(path))
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("the CA file {path}: {e}"))?;
    if certificates.is_empty() {
        return Err(format!("the CA file {path} holds no PEM certificate"));
    }
    Ok(certificates)
}

/// The one crypto provider, ring, installed for the process: mysql_async builds its
/// configuration with rustls' process default, which two compiled-in providers (ring,
/// and aws-lc-rs through the AWS SDK) leave unset.
pub(crate) fn install_crypto_provider() {
    // An error only says a provider is installed already.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A rustls client configuration trusting Mozilla's roots and `ca_file`'s certificates.
pub(crate) fn client_config(ca_file: Option<&str>) -> Result<ClientConfig, String> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = ca_file {
        let (added, _) = roots.add_parsable_certificates(read_ca_file(path)?);
        if added == 0 {
            return Err(format!("the CA file {path}: no certificate could be used"));
        }
    }
    ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))
        .map(|builder| builder.with_root_certificates(roots).with_no_client_auth())
}

/// A hint for a failed connection that a certificate could explain.
pub(crate) fn certificate_hint(error: &str, keys: &UrlKeys) -> String {
    let lower = error.to_ascii_lowercase();
    if lower.contains("certificate") || lower.contains("handshake") {
        format!(
            " (the server's certificate must be valid for the host in the URL and chain to \
             Mozilla's roots or to the CA file in `{}`; on RDS, AWS's global-bundle.pem)",
            keys.ca_file
        )
    } else {
        String::new()
    }
}

/// tokio-postgres' TLS over rustls, without channel binding (SCRAM without `-PLUS`).
#[derive(Clone)]
pub(crate) struct PostgresTls(pub Arc<ClientConfig>);

impl<S> MakeTlsConnect<S> for PostgresTls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = PostgresTlsConnect;
    type Error = InvalidDnsNameError;

    fn make_tls_connect(&mut self, host: &str) -> Result<PostgresTlsConnect, Self::Error> {
        Ok(PostgresTlsConnect {
            config: self.0.clone(),
            server: ServerName::try_from(host.to_string())?,
        })
    }
}

pub(crate) struct PostgresTlsConnect {
    config: Arc<ClientConfig>,
    server: ServerName<'static>,
}

impl<S> TlsConnect<S> for PostgresTlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = std::io::Result<RustlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            tokio_rustls::TlsConnector::from(self.config)
                .connect(self.server, stream)
                .await
                .map(RustlsStream)
        })
    }
}

pub(crate) struct RustlsStream<S>(tokio_rustls::client::TlsStream<S>);

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for RustlsStream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_leave_the_url_and_modes_are_read() {
        let (url, mode) = take_mode(
            "postgres://u:p@db.example.com:5432/ev?application_name=x&sslmode=verify-full&sslrootcert=%2Fopt%2Frds.pem",
            &POSTGRES_KEYS,
        )
        .unwrap();
        assert_eq!(
            url,
            "postgres://u:p@db.example.com:5432/ev?application_name=x"
        );
        assert_eq!(
            mode,
            TlsMode::Verified {
                ca_file: Some("/opt/rds.pem".into())
            }
        );
        let (url, mode) = take_mode("host=db sslmode=require user=u", &POSTGRES_KEYS).unwrap();
        assert_eq!(
            (url.as_str(), mode),
            ("host=db user=u", TlsMode::Verified { ca_file: None })
        );
        let (url, mode) = take_mode("mysql://root@h/ev?ssl-mode=DISABLED", &MYSQL_KEYS).unwrap();
        assert_eq!((url.as_str(), mode), ("mysql://root@h/ev", TlsMode::Plain));
        assert_eq!(
            take_mode("mysql://root@h/ev", &MYSQL_KEYS).unwrap().1,
            TlsMode::Plain
        );
        let (_, mode) = take_mode(
            "mysql://root@h/ev?ssl-mode=VERIFY_IDENTITY&ssl-ca=/certs/ca+rds%20bundle.pem",
            &MYSQL_KEYS,
        )
        .unwrap();
        assert_eq!(
            mode,
            TlsMode::Verified {
                ca_file: Some("/certs/ca+rds bundle.pem".into())
            }
        );
    }

    #[test]
    fn modes_that_fall_back_to_plain_text_and_loose_settings_are_refused() {
        let error = take_mode("postgres://h/ev?sslmode=prefer", &POSTGRES_KEYS).unwrap_err();
        assert!(
            error.contains("`sslmode=prefer` is not supported"),
            "{error}"
        );
        let error = take_mode("mysql://h/ev?ssl-mode=PREFERRED", &MYSQL_KEYS).unwrap_err();
        assert!(error.contains("ssl-mode=preferred"), "{error}");
        let error = take_mode("mysql://h/ev?verify_ca=false", &MYSQL_KEYS).unwrap_err();
        assert!(error.contains("`verify_ca` is not supported"), "{error}");
        let error = take_mode("postgres://h/ev?sslrootcert=/ca.pem", &POSTGRES_KEYS).unwrap_err();
        assert!(error.contains("add sslmode=verify-full"), "{error}");
    }

    #[test]
    fn a_missing_or_empty_ca_file_is_named() {
        let error = client_config(Some("/nonexistent/ca.pem")).unwrap_err();
        assert!(error.contains("/nonexistent/ca.pem"), "{error}");
        let empty =
            std::env::temp_dir().join(format!("switchyard-empty-ca-{}.pem", std::process::id()));
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let error = client_config(empty.to_str()).unwrap_err();
        assert!(error.contains("holds no PEM certificate"), "{error}");
        std::fs::remove_file(empty).unwrap();
    }
}
