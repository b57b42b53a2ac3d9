//! The issuer's signing keys, fetched and kept ([`KeySet`]).
//!
//! Where they come from: `jwks_uri` when the config names it, else the `jwks_uri` of
//! the issuer's metadata: OpenID discovery (`<issuer>/.well-known/openid-configuration`),
//! else RFC 8414 (`<origin>/.well-known/oauth-authorization-server<path>`). A metadata
//! document whose `issuer` is not the configured one exactly is refused (the mix-up
//! defence of RFC 8414 section 3.3).
//!
//! An identity provider's outage must not become the broker's latency, so a call never
//! waits on a fetch for a key the set already holds:
//! - the keys of the last good fetch stay in use however old they are, until a fetch
//!   replaces them; a set older than its maximum age (`[oauth] keys_max_age_seconds`,
//!   default [`MAX_AGE`]) is fetched again in the background, the call going on with
//!   the keys held;
//! - one fetch at a time, in a task of its own; a fetch that fails keeps the held keys
//!   and backs off: the next one waits [`MIN_INTERVAL`], doubled for each failure in a
//!   row, up to [`MAX_BACKOFF`];
//! - a token naming a key the set does not have (a rotation) asks for a fetch once per
//!   interval: while the provider answers, the call waits for that fetch (at most
//!   [`UNKNOWN_KEY_WAIT`]) so a key rotated in is accepted at once, and a flood of
//!   made-up key ids costs one fetch per interval; while the last fetch failed, it is
//!   refused at once from the keys held and the fetch (if the backoff allows one) runs
//!   in the background.

use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::Value;

use super::jwt::{Jwk, Token, parse_key_set};

/// The least time between two fetches of the key set while the provider answers.
pub const MIN_INTERVAL: Duration = Duration::from_secs(1);
/// The longest wait between two fetches while the provider does not answer.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// A key set older than this is fetched again (in the background) when next used.
pub const MAX_AGE: Duration = Duration::from_secs(3600);
/// The longest a call with an unknown key id waits for the fetch it asked for.
pub const UNKNOWN_KEY_WAIT: Duration = Duration::from_secs(2);
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

/// How fetching goes: the last attempt, the failures in a row since the last success,
/// and whether a fetch is running.
#[derive(Debug, Default, Clone, Copy)]
struct Health {
    last_attempt: Option<Instant>,
    failures: u32,
    in_flight: bool,
}

impl Health {
    /// The wait between two attempts: [`MIN_INTERVAL`], doubled per failure in a row.
    fn interval(self) -> Duration {
        let doubled = MIN_INTERVAL.saturating_mul(1u32 << self.failures.min(16));
        doubled.min(MAX_BACKOFF)
    }

    /// When the next attempt may start.
    fn next_allowed(self) -> Option<Instant> {
        self.last_attempt.map(|at| at + self.interval())
    }
}

/// The issuer's signing keys, fetched on demand and kept.
pub struct KeySet {
    inner: Arc<Inner>,
}

struct Inner {
    issuer: String,
    configured_uri: Option<String>,
    max_age: Duration,
    held: RwLock<Arc<Held>>,
    health: Mutex<Health>,
    /// Counts finished attempts; a call waiting for a fetch watches it.
    attempts: tokio::sync::watch::Sender<u64>,
    client: HttpsClient,
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeySet")
            .field("issuer", &self.inner.issuer)
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
    /// A key set of `issuer`, from `jwks_uri` when given, else from its metadata; held
    /// keys older than `max_age` are fetched again in the background.
    pub fn new(issuer: &str, jwks_uri: Option<&str>, max_age: Duration) -> Result<Self, String> {
        let client = crate::net::unpooled_client(FETCH_TIMEOUT)?;
        Ok(Self {
            inner: Arc::new(Inner {
                issuer: issuer.to_string(),
                configured_uri: jwks_uri.map(String::from),
                max_age,
                held: RwLock::new(Arc::new(Held::default())),
                health: Mutex::new(Health::default()),
                attempts: tokio::sync::watch::Sender::new(0),
                client,
            }),
        })
    }

    /// The keys that may have signed `token`, by the rules above.
    pub async fn keys_for(&self, token: &Token<'_>) -> Result<Vec<Arc<Jwk>>, NoKey> {
        let held = self.inner.held();
        let found = Inner::candidates(&held, token);
        if !found.is_empty() {
            if held
                .fetched
                .is_none_or(|t| t.elapsed() >= self.inner.max_age)
            {
                self.start_fetch(Instant::now());
            }
            return Ok(found);
        }
        let failing = self.inner.health().failures > 0;
        if failing {
            self.start_fetch(Instant::now());
            return Err(Inner::refusal(&held));
        }
        // The provider answers: wait for one fetch begun after this call asked (the one
        // it starts, or one already running), within the allowed interval.
        let mut attempts = self.inner.attempts.subscribe();
        let waited = tokio::time::timeout(UNKNOWN_KEY_WAIT, async {
            loop {
                // Seen before health is read: an attempt that ends after this is awaited.
                attempts.borrow_and_update();
                let health = self.inner.health();
                if health.in_flight {
                    let _ = attempts.changed().await;
                    // A fetch already running may have begun before this call asked;
                    // the held keys now are at least as new as that, which is enough
                    // for a key it published (one more fetch would be the next call's).
                    return;
                }
                let now = Instant::now();
                match health.next_allowed().filter(|at| *at > now) {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => {
                        if self.start_fetch(now) {
                            let _ = attempts.changed().await;
                            return;
                        }
                    }
                }
            }
        });
        let _ = waited.await;
        let held = self.inner.held();
        let found = Inner::candidates(&held, token);
        if found.is_empty() {
            Err(Inner::refusal(&held))
        } else {
            Ok(found)
        }
    }

    /// Fetches the key set at start (at once, whatever the interval) and waits for it;
    /// says whether it was fetched.
    pub async fn warm(&self) -> bool {
        let mut attempts = self.inner.attempts.subscribe();
        attempts.borrow_and_update();
        if self.start_fetch_now() {
            let _ = attempts.changed().await;
        }
        self.inner.health().failures == 0 && self.inner.held().fetched.is_some()
    }

    /// Starts a fetch in the background when none is running and the interval since the
    /// last attempt allows one; says whether this call started it.
    fn start_fetch(&self, now: Instant) -> bool {
        self.start_fetch_if(|health| health.next_allowed().is_none_or(|at| at <= now))
    }

    /// Starts a fetch unless one is running, whatever the interval.
    fn start_fetch_now(&self) -> bool {
        self.start_fetch_if(|_| true)
    }

    /// Starts a fetch when none is running and `allowed` says so.
    fn start_fetch_if(&self, allowed: impl FnOnce(&Health) -> bool) -> bool {
        let mut health = self.inner.health_mut();
        if health.in_flight || !allowed(&health) {
            return false;
        }
        health.in_flight = true;
        health.last_attempt = Some(Instant::now());
        drop(health);
        self.spawn_fetch();
        true
    }

    fn spawn_fetch(&self) {
        let inner = Arc::clone(&self.inner);
        tokio::spawn(async move {
            let fetched = inner.refresh().await;
            {
                let mut health = inner.health_mut();
                health.in_flight = false;
                health.failures = if fetched {
                    0
                } else {
                    health.failures.saturating_add(1)
                };
            }
            inner.attempts.send_modify(|n| *n += 1);
        });
    }
}

impl Inner {
    fn held(&self) -> Arc<Held> {
        self.held
            .read()
            .map(|h| Arc::clone(&h))
            .unwrap_or_else(|poisoned| Arc::clone(&poisoned.into_inner()))
    }

    fn health(&self) -> Health {
        *self.health_mut()
    }

    fn health_mut(&self) -> std::sync::MutexGuard<'_, Health> {
        self.health
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn candidates(held: &Held, token: &Token<'_>) -> Vec<Arc<Jwk>> {
        held.keys
            .iter()
            .filter(|k| k.matches(token))
            .cloned()
            .collect()
    }

    /// The refusal of a token no held key matches.
    fn refusal(held: &Held) -> NoKey {
        if held.fetched.is_some() {
            NoKey::Unknown
        } else {
            NoKey::Unavailable
        }
    }

    /// Fetches the key set now, keeping the held keys when it fails; says whether it
    /// was fetched. Run by one task at a time ([`KeySet::start_fetch`]).
    async fn refresh(&self) -> bool {
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
                let failures = self.health().failures.saturating_add(1);
                tracing::warn!(issuer = %self.issuer, error = %e, failures, "authorization server keys not fetched; the keys held stay in use");
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
