//! Where requests may go: the datasource's origins (base_url's and `allowed_hosts`'), each a
//! scheme, a host and a port, checked for every request and every redirect; only http and
//! https. A bare `allowed_hosts` entry means https, so no redirect from https carries a
//! request (and its secret headers) to plain http unless an entry says `http://`.

use std::fmt;
use std::sync::Arc;

use reqwest::{redirect, Client, Url};

/// At most this many redirects, each to an allowed origin.
const MAX_REDIRECTS: usize = 5;

/// One allowed origin: a scheme (http or https), a host (a name, an IP, or `*.domain`: its
/// subdomains) and a port.
#[derive(Debug, Clone)]
pub(super) struct HostRule {
    scheme: &'static str,
    host: String,
    port: u16,
}

impl HostRule {
    /// The base_url's own origin: its scheme, host and port.
    pub(super) fn origin(url: &Url) -> HostRule {
        HostRule {
            scheme: known_scheme(url.scheme()).unwrap_or("https"),
            host: normal_host(url.host_str().unwrap_or_default()),
            port: url.port_or_known_default().unwrap_or(443),
        }
    }

    /// An `allowed_hosts` entry. A URL (`http://127.0.0.1:8080`, `https://api.example.com`)
    /// allows exactly its scheme and port (the scheme's default when none is written); a
    /// bare `host`, `host:port`, `[v6]:port` or `*.domain` allows https only, on port 443
    /// unless written. The error names the field and the entry.
    pub(super) fn parse(entry: &str) -> Result<HostRule, String> {
        let written = entry;
        let entry = entry.trim();
        let not_a_host = || format!("allowed_hosts: `{written}` is not a host");
        let port_of = |text: &str| {
            text.parse::<u16>()
                .map_err(|_| format!("allowed_hosts: `{written}`: `{text}` is not a port"))
        };
        if entry.contains("://") {
            let url = Url::parse(entry)
                .map_err(|e| format!("allowed_hosts: `{written}` is not a URL: {e}"))?;
            let scheme = known_scheme(url.scheme()).ok_or_else(|| {
                format!(
                    "allowed_hosts: `{written}`: only http and https are allowed, found `{}`",
                    url.scheme()
                )
            })?;
            let only_origin = url.username().is_empty()
                && url.password().is_none()
                && matches!(url.path(), "" | "/")
                && url.query().is_none()
                && url.fragment().is_none();
            if !only_origin {
                return Err(format!(
                    "allowed_hosts: `{written}` has more than a scheme, host and port \
                     (write it as `{scheme}://host:port`)"
                ));
            }
            let host = normal_host(url.host_str().ok_or_else(not_a_host)?);
            let port = url.port_or_known_default().ok_or_else(not_a_host)?;
            return valid_host(&host)
                .then_some(HostRule { scheme, host, port })
                .ok_or_else(not_a_host);
        }
        let (host, port) = if entry.starts_with('[') {
            let end = entry.find(']').ok_or_else(not_a_host)?;
            let port = match &entry[end + 1..] {
                "" => None,
                rest => Some(port_of(rest.strip_prefix(':').ok_or_else(not_a_host)?)?),
            };
            (&entry[..=end], port)
        } else {
            match entry.rsplit_once(':') {
                Some((host, port)) => (host, Some(port_of(port)?)),
                None => (entry, None),
            }
        };
        let host = normal_host(host);
        valid_host(&host)
            .then_some(HostRule {
                scheme: "https",
                host,
                port: port.unwrap_or(443),
            })
            .ok_or_else(not_a_host)
    }

    fn matches_host(&self, host: &str) -> bool {
        match self.host.strip_prefix("*.") {
            Some(domain) => host
                .strip_suffix(domain)
                .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
            None => self.host == host,
        }
    }

    pub(super) fn matches(&self, scheme: &str, host: &str, port: u16) -> bool {
        self.scheme == scheme && self.port == port && self.matches_host(host)
    }
}

impl fmt::Display for HostRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
    }
}

fn known_scheme(scheme: &str) -> Option<&'static str> {
    match scheme {
        "http" => Some("http"),
        "https" => Some("https"),
        _ => None,
    }
}

fn normal_host(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

fn valid_host(host: &str) -> bool {
    let name = host.strip_prefix("*.").unwrap_or(host);
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '[' | ']' | ':'))
}

/// A URL's scheme, host and port as the rules compare them; `None` for a URL no rule
/// could allow (another scheme, no host).
fn origin_of(url: &Url) -> Option<(&str, String, u16)> {
    check_scheme(url).ok()?;
    let host = normal_host(url.host_str()?);
    Some((url.scheme(), host, url.port_or_known_default()?))
}

pub(super) fn allowed(rules: &[HostRule], url: &Url) -> bool {
    origin_of(url).is_some_and(|(scheme, host, port)| {
        rules.iter().any(|rule| rule.matches(scheme, &host, port))
    })
}

/// Why `url`, which [`allowed`] refuses, is not allowed: its host is on no rule, or the
/// schemes and ports its host is allowed on.
pub(super) fn refusal(rules: &[HostRule], url: &Url) -> String {
    let Some((scheme, host, port)) = origin_of(url) else {
        return match check_scheme(url) {
            Err(message) => message,
            Ok(()) => "the URL has no host".into(),
        };
    };
    let on_host: Vec<String> = rules
        .iter()
        .filter(|rule| rule.matches_host(&host))
        .map(|rule| format!("`{rule}`"))
        .collect();
    if on_host.is_empty() {
        return format!("host `{host}` is neither the base_url's host nor in allowed_hosts");
    }
    format!(
        "host `{host}` is allowed only as {}, not `{scheme}://{host}:{port}` (a bare \
         allowed_hosts entry means https, on port 443 unless written; an entry \
         `http://host:port` allows plain http)",
        on_host.join(", ")
    )
}

/// A client that follows at most a few redirects, each to an allowed origin; with
/// `same_origin`, none that leaves the first request's scheme, host and port: that client
/// sends the requests carrying secret headers (`x-api-key: ${KEY}`), which reqwest would
/// carry to any host the redirect names (it drops only `Authorization` and cookies), in
/// clear after a redirect from https to http.
pub(super) fn client(hosts: Arc<Vec<HostRule>>, same_origin: bool) -> reqwest::Result<Client> {
    let policy = redirect::Policy::custom(move |attempt| {
        let origin = |url: &Url| {
            (
                url.scheme().to_owned(),
                url.host_str().map(str::to_ascii_lowercase),
                url.port_or_known_default(),
            )
        };
        let first = attempt.previous().first().map(origin);
        if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else if same_origin && first.is_some_and(|first| first != origin(attempt.url())) {
            let to = attempt.url().origin().ascii_serialization();
            attempt.error(format!(
                "redirect to {to}, another origin: the request carries secret headers, which go nowhere else"
            ))
        } else if allowed(&hosts, attempt.url()) {
            attempt.follow()
        } else {
            let why = refusal(&hosts, attempt.url());
            attempt.error(format!("redirect not allowed: {why}"))
        }
    });
    Client::builder().redirect(policy).build()
}

pub(super) fn check_scheme(url: &Url) -> std::result::Result<(), String> {
    match url.scheme() {
        "http" | "https" => Ok(()),
        other => Err(format!("only http and https are allowed, found `{other}`")),
    }
}

/// The authority (`host:port`) of an absolute endpoint, `None` for a relative one; an
/// endpoint with another scheme is refused.
pub(super) fn authority(endpoint: &str) -> std::result::Result<Option<&str>, String> {
    let Some(position) = endpoint.find("://") else {
        return Ok(None);
    };
    let scheme = &endpoint[..position];
    let is_scheme = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !is_scheme {
        // "://" inside the path of a relative endpoint.
        return Ok(None);
    }
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return Err(format!(
            "endpoint_template: only http and https are allowed, found `{scheme}`"
        ));
    }
    let rest = &endpoint[position + 3..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    Ok(Some(&rest[..end]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn host_rules() {
        let rule = HostRule::parse("*.example.com").unwrap();
        assert!(rule.matches("https", "api.example.com", 443));
        assert!(!rule.matches("https", "example.com", 443));
        assert!(!rule.matches("https", "evilexample.com", 443));
        let rule = HostRule::parse("api.test:8080").unwrap();
        assert!(rule.matches("https", "api.test", 8080));
        assert!(!rule.matches("https", "api.test", 80));
        assert!(HostRule::parse("[::1]:80")
            .unwrap()
            .matches("https", "[::1]", 80));
        assert_eq!(
            HostRule::parse("bad host").unwrap_err(),
            "allowed_hosts: `bad host` is not a host"
        );
    }

    #[test]
    fn a_bare_entry_means_https_and_a_url_its_own_scheme_and_port() {
        let rules = |entry: &str| vec![HostRule::parse(entry).unwrap()];
        let bare = rules("api.test");
        assert!(allowed(&bare, &url("https://api.test/x")));
        assert!(allowed(&bare, &url("https://API.test:443/x")));
        assert!(!allowed(&bare, &url("http://api.test/x")));
        assert!(!allowed(&bare, &url("http://api.test:443/x")));
        assert!(!allowed(&bare, &url("https://api.test:8443/x")));
        let bare_port = rules("api.test:8443");
        assert!(allowed(&bare_port, &url("https://api.test:8443/")));
        assert!(!allowed(&bare_port, &url("http://api.test:8443/")));
        let wildcard = rules("*.cdn.test");
        assert!(allowed(&wildcard, &url("https://eu.cdn.test/")));
        assert!(!allowed(&wildcard, &url("http://eu.cdn.test/")));

        let http = rules("http://127.0.0.1:8080");
        assert!(allowed(&http, &url("http://127.0.0.1:8080/x")));
        assert!(!allowed(&http, &url("https://127.0.0.1:8080/x")));
        assert!(!allowed(&http, &url("http://127.0.0.1:8081/x")));
        let http_default = rules("HTTP://Api.Test");
        assert!(allowed(&http_default, &url("http://api.test:80/")));
        assert!(!allowed(&http_default, &url("http://api.test:8080/")));
        assert!(!allowed(&http_default, &url("https://api.test/")));
        let https = rules("https://api.test/");
        assert!(allowed(&https, &url("https://api.test/")));
        assert!(!allowed(&https, &url("http://api.test/")));
        let wildcard = rules("http://*.cdn.test:8000");
        assert!(allowed(&wildcard, &url("http://eu.cdn.test:8000/")));
        assert!(!allowed(&wildcard, &url("https://eu.cdn.test:8000/")));

        let base = vec![HostRule::origin(&url("http://127.0.0.1:9/api"))];
        assert!(allowed(&base, &url("http://127.0.0.1:9/other")));
        assert!(!allowed(&base, &url("https://127.0.0.1:9/other")));
        assert!(!allowed(&base, &url("http://127.0.0.1:10/other")));
    }

    #[test]
    fn entries_and_refusals_say_what_is_wrong() {
        for (entry, error) in [
            ("ftp://files.test", "allowed_hosts: `ftp://files.test`: only http and https are allowed, found `ftp`"),
            ("https://api.test/v1", "allowed_hosts: `https://api.test/v1` has more than a scheme, host and port (write it as `https://host:port`)"),
            ("https://user@api.test", "allowed_hosts: `https://user@api.test` has more than a scheme, host and port (write it as `https://host:port`)"),
            ("api.test:https", "allowed_hosts: `api.test:https`: `https` is not a port"),
            ("http://", "allowed_hosts: `http://` is not a URL: empty host"),
        ] {
            assert_eq!(HostRule::parse(entry).unwrap_err(), error, "{entry}");
        }
        let rules = vec![
            HostRule::origin(&url("https://base.test")),
            HostRule::parse("api.test").unwrap(),
        ];
        assert_eq!(
            refusal(&rules, &url("http://evil.test/")),
            "host `evil.test` is neither the base_url's host nor in allowed_hosts"
        );
        assert_eq!(
            refusal(&rules, &url("http://api.test:8080/")),
            "host `api.test` is allowed only as `https://api.test:443`, not \
             `http://api.test:8080` (a bare allowed_hosts entry means https, on port 443 \
             unless written; an entry `http://host:port` allows plain http)"
        );
    }
}
