//! The issuer's signing keys, fetched and kept ([`KeySet`]).
//!
//! Where they come from: `jwks_uri` when the config names it, else the `jwks_uri` of
//! the issuer's metadata: OpenID discovery (`<issuer>/.well-known/openid-configuration`),
//! else RFC 8414 (`<origin>/.well-known/oauth-authorization-server<path>`). A metadata
//! document whose `issuer` is not the configured one exactly is refused (the mix-up
//! defence of RFC 8414 section 3.3).
//!
//! When they are fetched again:
//! - a token names a key the set does not have (a rotation), or the set is older than
//!   [`MAX_AGE`];
//! - at most once per [`MIN_INTERVAL`]: a token that asks sooner waits for the next
//!   allowed fetch instead of being refused, so a key rotated in is accepted at once
//!   while a flood of made-up key ids costs one fetch per interval;
//! - one fetch at a time: requests waiting meanwhile read its result; a request whose
//!   key a fetch finished after it asked is not in the set is refused without another.
//!
//! A fetch that fails keeps the keys already held.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::Value;

use super::jwt::{Jwk, Token, parse_key_set};

/// The least time between two fetches of the key set.
pub const MIN_INTERVAL: Duration = Duration::from_secs(1);
/// A key set older than this is fetched again when next used.
pub const MAX_AGE: Duration = Duration::from_secs(3600);
/// How long one metadata or key set request may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest metadata or key set document read.
const MAX_DOCUMENT_BYTES: usize = 256 * 1024;

type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Empty<Bytes>>;

/// The keys held and when they were fetched.
#[derive(Default)]
struct Held {
    keys: Vec<Arc<Jwk>>,
    fetched: Option<Instant>,
}

/// The issuer's signing keys, fetched on demand and kept.
pub struct KeySet {
    issuer: String,
    configured_uri: Option<String>,
    held: RwLock<Arc<Held>>,
    /// Held while fetching (one fetch at a time); the last fetch's start.
    fetching: tokio::sync::Mutex<Option<Instant>>,
    client: HttpsClient,
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeySet")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

/// Why no key could be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoKey {
    /// The set (fetched, or fetched after the token asked) has no key for the token.
    Unknown,
    /// No key set has ever been fetched: the authorization server is unreachable.
    Unavailable,
}

impl KeySet {
    /// A key set of `issuer`, from `jwks_uri` when given, else from its metadata.
    pub fn new(issuer: &str, jwks_uri: Option<&str>) -> Result<Self, String> {
        let client = crate::net::unpooled_client(FETCH_TIMEOUT)?;
        Ok(Self {
            issuer: issuer.to_string(),
            configured_uri: jwks_uri.map(String::from),
            held: RwLock::new(Arc::new(Held::default())),
            fetching: tokio::sync::Mutex::new(None),
            client,
        })
    }

    fn held(&self) -> Arc<Held> {
        self.held
            .read()
            .map(|h| Arc::clone(&h))
            .unwrap_or_else(|poisoned| Arc::clone(&poisoned.into_inner()))
    }

    fn candidates(held: &Held, token: &Token<'_>) -> Vec<Arc<Jwk>> {
        held.keys
            .iter()
            .filter(|k| k.matches(token))
            .cloned()
            .collect()
    }

    /// The keys that may have signed `token`, fetching the set again where the rules
    /// above say so.
    pub async fn keys_for(&self, token: &Token<'_>) -> Result<Vec<Arc<Jwk>>, NoKey> {
        let asked = Instant::now();
        let held = self.held();
        let found = Self::candidates(&held, token);
        let fresh = held.fetched.is_some_and(|t| t.elapsed() < MAX_AGE);
        if !found.is_empty() && fresh {
            return Ok(found);
        }
        let mut last = self.fetching.lock().await;
        let held = self.held();
        let found = Self::candidates(&held, token);
        // A fetch that began after this request asked has the newest word.
        if held.fetched.is_some_and(|t| t >= asked) {
            return if found.is_empty() {
                Err(NoKey::Unknown)
            } else {
                Ok(found)
            };
        }
        if let Some(previous) = *last {
            let next = previous + MIN_INTERVAL;
            if next > Instant::now() {
                tokio::time::sleep_until(next.into()).await;
            }
        }
        *last = Some(Instant::now());
        self.refresh().await;
        drop(last);
        let held = self.held();
        let found = Self::candidates(&held, token);
        match (found.is_empty(), held.fetched) {
            (false, _) => Ok(found),
            (true, None) => Err(NoKey::Unavailable),
            (true, Some(_)) => Err(NoKey::Unknown),
        }
    }

    /// Fetches the key set at start, as one of the serialised fetches: a request that
    /// asks meanwhile waits for it rather than fetching beside it.
    pub async fn warm(&self) -> bool {
        let mut last = self.fetching.lock().await;
        *last = Some(Instant::now());
        self.refresh().await
    }

    /// Fetches the key set now, keeping the held keys when it fails; says whether it
    /// was fetched. Callers serialise through `fetching`.
    pub async fn refresh(&self) -> bool {
        match self.fetch().await {
            Ok(keys) => {
                let count = keys.len();
                let held = Arc::new(Held {
                    keys: keys.into_iter().map(Arc::new).collect(),
                    fetched: Some(Instant::now()),
                });
                match self.held.write() {
                    Ok(mut slot) => *slot = held,
                    Err(poisoned) => *poisoned.into_inner() = held,
                }
                tracing::info!(issuer = %self.issuer, keys = count, "authorization server keys fetched");
                true
            }
            Err(e) => {
                tracing::warn!(issuer = %self.issuer, error = %e, "authorization server keys not fetched; the keys held stay in use");
                false
            }
        }
    }

    async fn fetch(&self) -> Result<Vec<Jwk>, String> {
        let uri = match &self.configured_uri {
            Some(uri) => uri.clone(),
            None => self.discover().await?,
        };
        let document = self.get_json(&uri).await?;
        parse_key_set(&document).map_err(|e| format!("{uri}: {e}"))
    }

    /// The `jwks_uri` of the issuer's metadata: OpenID discovery, else RFC 8414.
    async fn discover(&self) -> Result<String, String> {
        let mut tried = Vec::new();
        for url in metadata_urls(&self.issuer) {
            match self.get_json(&url).await {
                Ok(meta) => {
                    if meta.get("issuer").and_then(Value::as_str) != Some(self.issuer.as_str()) {
                        return Err(format!(
                            "{url} names another issuer than the configured `{}`",
                            self.issuer
                        ));
                    }
                    return meta
                        .get("jwks_uri")
                        .and_then(Value::as_str)
                        .map(String::from)
                        .ok_or_else(|| format!("{url} has no `jwks_uri`"));
                }
                Err(e) => tried.push(e),
            }
        }
        Err(tried.join("; "))
    }

    async fn get_json(&self, url: &str) -> Result<Value, String> {
        let uri: hyper::Uri = url.parse().map_err(|_| format!("`{url}` is not a URL"))?;
        let request = hyper::Request::get(uri)
            .header(hyper::header::ACCEPT, "application/json")
            .body(Empty::<Bytes>::new())
            .map_err(|e| format!("{url}: {e}"))?;
        let fetch = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| format!("{url}: {e}"))?;
            if !response.status().is_success() {
                return Err(format!("{url} answered {}", response.status().as_u16()));
            }
            let body = Limited::new(response.into_body(), MAX_DOCUMENT_BYTES)
                .collect()
                .await
                .map_err(|_| format!("{url}: the answer broke off or is over 256 KiB"))?
                .to_bytes();
            serde_json::from_slice::<Value>(&body).map_err(|_| format!("{url}: not JSON"))
        };
        tokio::time::timeout(FETCH_TIMEOUT, fetch)
            .await
            .map_err(|_| format!("{url} did not answer within 5 s"))?
    }
}

/// Where an issuer's metadata may be: OpenID discovery first (most providers), then
/// RFC 8414 with the path inserted after the well-known prefix.
pub fn metadata_urls(issuer: &str) -> Vec<String> {
    let trimmed = issuer.trim_end_matches('/');
    let mut urls = vec![format!("{trimmed}/.well-known/openid-configuration")];
    if let Some((scheme, rest)) = trimmed.split_once("://") {
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        urls.push(format!(
            "{scheme}://{authority}/.well-known/oauth-authorization-server{path}"
        ));
    }
    urls
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_looked_for_where_both_standards_put_it() {
        assert_eq!(
            metadata_urls("https://idp.example.com/realms/a/"),
            [
                "https://idp.example.com/realms/a/.well-known/openid-configuration",
                "https://idp.example.com/.well-known/oauth-authorization-server/realms/a",
            ]
        );
        assert_eq!(
            metadata_urls("http://127.0.0.1:9000")[1],
            "http://127.0.0.1:9000/.well-known/oauth-authorization-server"
        );
    }
}
