//! Where requests may go: the datasource's hosts (base_url's and `allowed_hosts`), checked
//! for every request and every redirect; only http and https.

use std::sync::Arc;

use reqwest::{redirect, Client, Url};

/// At most this many redirects, each to an allowed host.
const MAX_REDIRECTS: usize = 5;

/// One allowed host: a name, an IP, or `*.domain` (its subdomains), with an optional port.
#[derive(Debug, Clone)]
pub(super) struct HostRule {
    pub(super) host: String,
    pub(super) port: Option<u16>,
}

impl HostRule {
    /// `host`, `host:port`, `[v6]:port`, `*.domain`, or a URL whose host and port are taken.
    pub(super) fn parse(entry: &str) -> Option<HostRule> {
        let entry = entry.trim();
        if entry.contains("://") {
            let url = Url::parse(entry).ok()?;
            return Some(HostRule {
                host: url.host_str()?.to_ascii_lowercase(),
                port: url.port(),
            });
        }
        let (host, port) = if entry.starts_with('[') {
            let end = entry.find(']')?;
            let port = match &entry[end + 1..] {
                "" => None,
                rest => Some(rest.strip_prefix(':')?.parse().ok()?),
            };
            (&entry[..=end], port)
        } else {
            match entry.rsplit_once(':') {
                Some((host, port)) => (host, Some(port.parse().ok()?)),
                None => (entry, None),
            }
        };
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let name = host.strip_prefix("*.").unwrap_or(&host);
        let valid = !name.is_empty()
            && name.chars().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '[' | ']' | ':')
            });
        valid.then_some(HostRule { host, port })
    }

    pub(super) fn matches(&self, host: &str, port: Option<u16>) -> bool {
        let host_matches = match self.host.strip_prefix("*.") {
            Some(domain) => host
                .strip_suffix(domain)
                .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
            None => self.host == host,
        };
        host_matches && self.port.is_none_or(|p| Some(p) == port)
    }
}

pub(super) fn allowed(rules: &[HostRule], url: &Url) -> bool {
    if check_scheme(url).is_err() {
        return false;
    }
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let port = url.port_or_known_default();
    rules.iter().any(|rule| rule.matches(&host, port))
}

/// A client that follows at most a few redirects, each to an allowed host; with
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
            let host = attempt.url().host_str().unwrap_or_default().to_owned();
            attempt.error(format!("redirect to host `{host}`, which is not allowed"))
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

    #[test]
    fn host_rules() {
        let rule = HostRule::parse("*.example.com").unwrap();
        assert!(rule.matches("api.example.com", Some(443)));
        assert!(!rule.matches("example.com", Some(443)));
        assert!(!rule.matches("evilexample.com", Some(443)));
        let rule = HostRule::parse("api.test:8080").unwrap();
        assert!(rule.matches("api.test", Some(8080)));
        assert!(!rule.matches("api.test", Some(80)));
        assert!(HostRule::parse("[::1]:80")
            .unwrap()
            .matches("[::1]", Some(80)));
        assert!(HostRule::parse("bad host").is_none());
    }
}
