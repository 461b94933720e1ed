//! Who is calling and which datasources they may use. The transport collects the
//! caller's [`Identity`] (API Gateway JWT authorizer claims, an `x-api-key` header); the
//! configuration's `auth` block turns it into an [`Access`] that every stage honours.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use validator::{Validate, ValidationError};

use crate::config::rules::refuse;
use crate::error::{Error, Result};
use crate::template::Catalog;

/// The configuration's `auth` section: who must identify, and what each principal may use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[validate(schema(function = "api_keys_name_principals"))]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    pub required: bool,
    /// SHA-256 (hex) of an API key → the principal it identifies.
    pub api_keys: BTreeMap<String, String>,
    /// Principal → the datasources it may use (`"*"`: all).
    pub principals: BTreeMap<String, Vec<String>>,
    pub datasources_claim: String,
    pub principal_claim: String,
}

impl Default for AuthConfig {
    fn default() -> Self {
        crate::config::embedded("auth")
    }
}

/// API keys are listed by their SHA-256 and name a listed principal.
fn api_keys_name_principals(auth: &AuthConfig) -> Result<(), ValidationError> {
    for (hash, principal) in &auth.api_keys {
        let is_sha256 = hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit());
        if !is_sha256 {
            return Err(refuse(
                format!("api_keys.{hash}"),
                "keys are listed by the SHA-256 of the key, as 64 hex digits (never the key itself)",
            ));
        }
        if !auth.principals.contains_key(principal) {
            return Err(refuse(
                format!("api_keys.{hash}"),
                format!("names principal `{principal}`, which auth.principals does not list"),
            ));
        }
    }
    Ok(())
}

/// Which datasources a caller may use. Every stage sees only these partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    All,
    Only(BTreeSet<String>),
}

impl Access {
    pub fn allows(&self, datasource: &str) -> bool {
        match self {
            Access::All => true,
            Access::Only(names) => names.contains(datasource),
        }
    }

    /// Narrow to `requested` (a request's own `datasources` list). Naming a datasource
    /// that does not exist or is not allowed is an error naming it.
    pub fn narrow(&self, requested: &[String], catalog: &Catalog) -> Result<Access> {
        let mut names = BTreeSet::new();
        for name in requested {
            if catalog.datasource(name).is_none() || !self.allows(name) {
                return Err(Error::UnknownDatasource(name.clone()));
            }
            names.insert(name.clone());
        }
        Ok(Access::Only(names))
    }
}

/// What the transport knows of the caller.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Identity {
    /// The `x-api-key` header, if sent.
    pub api_key: Option<String>,
    /// Claims a JWT authorizer verified (API Gateway `requestContext.authorizer.jwt.claims`).
    pub claims: Option<Map<String, Value>>,
}

/// The datasources `identity` may use. With `auth.required: false`, everything. Otherwise
/// the JWT's datasources claim, else its principal claim, else the API key's principal;
/// no identity (or an unknown key) is [`Error::Unauthenticated`], an identity with no
/// datasources [`Error::Forbidden`].
pub fn authorize(config: &AuthConfig, identity: &Identity) -> Result<Access> {
    if !config.required {
        return Ok(Access::All);
    }
    if let Some(claims) = &identity.claims {
        if let Some(listed) = claims.get(&config.datasources_claim) {
            // Sessions, tasks and feedback belong to whoever the token names: a token that
            // names no one would share them with every other such token.
            let names = |claim: &str| claims.get(claim).and_then(Value::as_str).is_some();
            if !names("sub") && !names(&config.principal_claim) {
                return Err(Error::Forbidden(format!(
                    "the token has a `{}` claim but no `sub` or `{}` claim naming its caller",
                    config.datasources_claim, config.principal_claim
                )));
            }
            return access(claim_names(listed), "the token's datasources claim");
        }
        if let Some(principal) = claims.get(&config.principal_claim).and_then(Value::as_str) {
            return principal_access(config, principal);
        }
        return Err(Error::Forbidden(format!(
            "the token has neither a `{}` nor a `{}` claim",
            config.datasources_claim, config.principal_claim
        )));
    }
    if let Some(key) = &identity.api_key {
        let principal = key_principal(config, key)
            .ok_or_else(|| Error::Unauthenticated("unknown API key".into()))?;
        return principal_access(config, principal);
    }
    Err(Error::Unauthenticated(
        "send a bearer token or an x-api-key header".into(),
    ))
}

/// A caller's session or workflow id as stored: prefixed by a digest of its owner
/// ([`owner`]; fixed length, so two owners' keys never meet), or unchanged when there is
/// one tenant.
pub fn scoped(owner: &str, id: &str) -> String {
    if owner.is_empty() {
        return id.to_owned();
    }
    let digest = hex::encode(Sha256::digest(owner.as_bytes()));
    format!("{}/{id}", &digest[..16])
}

/// Whose session and workflow ids these are: the token's subject (else its principal
/// claim), or the API key's principal; empty when `auth.required` is off (one tenant).
/// Ids are scoped by it, so one caller can neither read nor forget another's session.
/// Call after [`authorize`] accepted the identity.
pub fn owner(config: &AuthConfig, identity: &Identity) -> String {
    if !config.required {
        return String::new();
    }
    if let Some(claims) = &identity.claims {
        let claim = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
        return match (claim("sub"), claim(&config.principal_claim)) {
            (Some(subject), _) => format!("sub:{subject}"),
            (None, Some(principal)) => format!("principal:{principal}"),
            (None, None) => String::new(),
        };
    }
    identity
        .api_key
        .as_deref()
        .and_then(|key| key_principal(config, key))
        .map(|principal| format!("principal:{principal}"))
        .unwrap_or_default()
}

/// The principal of an API key, by its SHA-256. Every configured hash is compared, each in
/// constant time: how long this takes says nothing about which key, or how much of one,
/// was guessed.
fn key_principal<'a>(config: &'a AuthConfig, key: &str) -> Option<&'a str> {
    let hash = hex::encode(Sha256::digest(key.as_bytes()));
    config
        .api_keys
        .iter()
        .fold(None, |found, (known, principal)| {
            if constant_time_eq(known.as_bytes(), hash.as_bytes()) {
                Some(principal.as_str())
            } else {
                found
            }
        })
}

/// Equal bytes, found without stopping at the first difference.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

fn principal_access(config: &AuthConfig, principal: &str) -> Result<Access> {
    let names = config
        .principals
        .get(principal)
        .ok_or_else(|| Error::Forbidden(format!("principal `{principal}` has no datasources")))?;
    access(names.iter().cloned(), &format!("principal `{principal}`"))
}

fn access(names: impl IntoIterator<Item = String>, whose: &str) -> Result<Access> {
    let names: BTreeSet<String> = names.into_iter().filter(|n| !n.is_empty()).collect();
    if names.contains("*") {
        return Ok(Access::All);
    }
    if names.is_empty() {
        return Err(Error::Forbidden(format!("{whose} allows no datasources")));
    }
    Ok(Access::Only(names))
}

/// A claim's datasource names: a JSON list, or one string separated by spaces or commas
/// (API Gateway passes list claims as `"[a b]"` strings).
fn claim_names(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        Value::String(text) => text
            .trim_matches(|c| c == '[' || c == ']')
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn constant_time_eq_is_equality() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"xbc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(constant_time_eq(b"", b""));
    }

    use super::*;
    use serde_json::json;

    fn config() -> AuthConfig {
        let key_hash = hex::encode(Sha256::digest(b"k-hr"));
        serde_json::from_value(json!({
            "required": true,
            "api_keys": {key_hash: "hr-team"},
            "principals": {"hr-team": ["hr", "tools"], "admin": ["*"], "nobody": []},
            "datasources_claim": "switchyard_datasources",
            "principal_claim": "sub",
        }))
        .unwrap()
    }

    fn only(names: &[&str]) -> Access {
        Access::Only(names.iter().map(|s| s.to_string()).collect())
    }

    fn claims(value: Value) -> Identity {
        Identity {
            api_key: None,
            claims: Some(value.as_object().unwrap().clone()),
        }
    }

    #[test]
    fn identities_map_to_their_datasources() {
        let config = config();
        let key = Identity {
            api_key: Some("k-hr".into()),
            claims: None,
        };
        assert_eq!(authorize(&config, &key).unwrap(), only(&["hr", "tools"]));
        let listed = claims(json!({"sub": "ann", "switchyard_datasources": "[ev tools]"}));
        assert_eq!(authorize(&config, &listed).unwrap(), only(&["ev", "tools"]));
        let listed = claims(json!({"sub": "ann", "switchyard_datasources": ["ev"]}));
        assert_eq!(authorize(&config, &listed).unwrap(), only(&["ev"]));
        let admin = claims(json!({"sub": "admin"}));
        assert_eq!(authorize(&config, &admin).unwrap(), Access::All);
    }

    #[test]
    fn unknown_callers_are_401_and_empty_ones_403() {
        let config = config();
        let unauthenticated = |identity: &Identity| {
            matches!(authorize(&config, identity), Err(Error::Unauthenticated(_)))
        };
        let forbidden =
            |identity: &Identity| matches!(authorize(&config, identity), Err(Error::Forbidden(_)));
        assert!(unauthenticated(&Identity::default()));
        assert!(unauthenticated(&Identity {
            api_key: Some("guess".into()),
            claims: None
        }));
        assert!(forbidden(&claims(json!({"sub": "stranger"}))));
        assert!(forbidden(&claims(json!({"sub": "nobody"}))));
        assert!(forbidden(&claims(
            json!({"sub": "ann", "switchyard_datasources": ""})
        )));
        // Datasources for no one: its sessions would be every such token's.
        let anonymous = claims(json!({"switchyard_datasources": ["ev"]}));
        let refused = authorize(&config, &anonymous).unwrap_err().to_string();
        assert!(refused.contains("`sub`"), "{refused}");
        assert!(forbidden(&claims(json!({"email": "a@b"}))));
    }

    #[test]
    fn owners_tell_callers_apart() {
        let config = config();
        let key = |k: &str| Identity {
            api_key: Some(k.into()),
            claims: None,
        };
        assert_eq!(owner(&config, &key("k-hr")), "principal:hr-team");
        assert_eq!(owner(&config, &claims(json!({"sub": "ann"}))), "sub:ann");
        let mut by_group = config.clone();
        by_group.principal_claim = "group".into();
        let member = claims(json!({"group": "hr-team", "switchyard_datasources": ["hr"]}));
        assert_eq!(owner(&by_group, &member), "principal:hr-team");
        assert_ne!(
            owner(&config, &claims(json!({"sub": "bob"}))),
            owner(&config, &claims(json!({"sub": "ann"})))
        );
        let mut open = config;
        open.required = false;
        assert_eq!(owner(&open, &key("k-hr")), "");
    }

    #[test]
    fn not_required_allows_everyone() {
        let mut config = config();
        config.required = false;
        assert_eq!(
            authorize(&config, &Identity::default()).unwrap(),
            Access::All
        );
    }
}
