//! Sessions of people signed in to the broker's pages: the hub (signed in at the
//! identity provider) and the approval page (signed in with an approver credential).
//!
//! A session is a row in the store ([`crate::store::sessions`]), so it ends everywhere
//! at once: when its owner signs out, when an operator ends a user's sessions
//! (`tool-broker sessions revoke --user`), after [`DEFAULT_IDLE_MINUTES`] without use
//! (`session_idle_minutes`), or after its lifetime. The cookie holds only a random id
//! (256 bits); the store keeps its sha256.
//!
//! Cookies never depend on a request's headers: whether they are `Secure` comes from the
//! deployment's `public_url` ([`Site`]); over https their names carry the `__Host-`
//! prefix (`Secure`, `Path=/`, no `Domain`: no other host or path can set or shadow
//! them).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::Value;

use crate::store::Store;
use crate::store::sessions::SessionRow;

/// The characters of a session id: 32 random bytes in base64url without padding.
const ID_CHARS: usize = 43;

/// Minutes a session may go unused before it ends.
pub const DEFAULT_IDLE_MINUTES: u64 = 30;

/// Which page a session is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The hub (and, through its roles, the approval page).
    Hub,
    /// The approval page, for an approver credential.
    Approver,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Hub => "hub",
            Self::Approver => "approver",
        }
    }
}

/// Where the pages are served, as the deployment's `public_url` says: how cookies are
/// written and named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Site {
    secure: bool,
}

impl Site {
    /// The site of `public_url`: https makes cookies `Secure` and `__Host-` prefixed;
    /// without a public URL (a loopback or development broker) they are neither.
    pub fn of(public_url: Option<&str>) -> Self {
        Self {
            secure: public_url.is_some_and(|u| u.starts_with("https://")),
        }
    }

    /// Whether the pages are served over https.
    pub fn secure(self) -> bool {
        self.secure
    }

    /// A cookie's name on this site.
    pub fn name(self, base: &str) -> String {
        if self.secure {
            format!("__Host-{base}")
        } else {
            base.to_string()
        }
    }

    /// A `Set-Cookie` value: `HttpOnly`, `Path=/`, the given `SameSite`, and `Secure`
    /// on an https site.
    pub fn cookie(self, base: &str, value: &str, same_site: &str, max_age_s: i64) -> String {
        format!(
            "{}={value}; Path=/; HttpOnly; SameSite={same_site}; Max-Age={max_age_s}{}",
            self.name(base),
            if self.secure { "; Secure" } else { "" }
        )
    }

    /// The `Set-Cookie` value that removes a cookie.
    pub fn cleared(self, base: &str, same_site: &str) -> String {
        self.cookie(base, "", same_site, 0)
    }

    /// A cookie's value from the request, by its name on this site.
    pub fn read(self, headers: &hyper::HeaderMap, base: &str) -> Option<String> {
        cookie(headers, &self.name(base))
    }
}

/// A cookie's value from the request's `Cookie` headers.
pub fn cookie(headers: &hyper::HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(hyper::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

/// How long sessions live and may idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Times {
    /// The most a session lives (Unix ms).
    pub lifetime_ms: i64,
    /// The most a session may go unused (Unix ms).
    pub idle_ms: i64,
}

fn digest(id: &str) -> String {
    crate::catalog::identity::sha256_hex(id.as_bytes())
}

/// Starts a session of `kind` for `caller` with what its page needs (`claims`);
/// the cookie's value (the session's id), or `None` when no randomness or store is
/// available.
pub async fn start(
    store: &Store,
    kind: Kind,
    caller: &str,
    claims: &Value,
    times: Times,
    now_ms: i64,
) -> Option<String> {
    let mut raw = [0u8; 32];
    getrandom::fill(&mut raw).ok()?;
    let id = B64.encode(raw);
    let row = SessionRow {
        id_sha256: digest(&id),
        kind: kind.as_str().to_string(),
        caller: caller.to_string(),
        claims: claims.to_string(),
        created_ms: now_ms,
        seen_ms: now_ms,
        expires_ms: now_ms.saturating_add(times.lifetime_ms),
    };
    match store.start_session(&row).await {
        Ok(()) => Some(id),
        Err(e) => {
            tracing::warn!(error = %e, "a session could not be stored; sign-in refused");
            None
        }
    }
}

/// The live session of `kind` whose id the cookie `base` holds: its caller and
/// claims.
pub async fn find(
    store: &Store,
    site: Site,
    headers: &hyper::HeaderMap,
    base: &str,
    kind: Kind,
    times: Times,
    now_ms: i64,
) -> Option<(String, Value)> {
    let id = site.read(headers, base)?;
    // A value that is not an id this broker makes is never looked up.
    if id.len() != ID_CHARS
        || !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return None;
    }
    let row = match store
        .session(&digest(&id), kind.as_str(), now_ms, times.idle_ms)
        .await
    {
        Ok(row) => row?,
        Err(e) => {
            tracing::warn!(error = %e, "a session could not be read; treated as signed out");
            return None;
        }
    };
    let claims = serde_json::from_str(&row.claims).unwrap_or(Value::Null);
    Some((row.caller, claims))
}

/// Ends the session whose id the cookie `base` holds, if any.
pub async fn end(store: &Store, site: Site, headers: &hyper::HeaderMap, base: &str) {
    if let Some(id) = site.read(headers, base)
        && let Err(e) = store.end_session(&digest(&id)).await
    {
        tracing::warn!(error = %e, "a session could not be ended in the store");
    }
}
