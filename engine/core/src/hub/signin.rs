//! Signing in to the hub's pages and the approval page: the broker as a confidential
//! OpenID Connect client of the `[oauth]` provider ([`SignIn`]), and the session it
//! leaves ([`Session`]).
//!
//! `GET /hub/login?next=<path>` answers a redirect to the provider's authorization
//! endpoint (code flow, PKCE S256, `state`, `nonce`) and a short login cookie sealing
//! them. `GET /hub/callback` checks `state` (and `iss` when the provider sends it, RFC
//! 9207), exchanges the code at the token endpoint with the client secret and the PKCE
//! verifier, checks the ID token like an access token but for this client (signature,
//! `iss`, `aud`, `exp`, `nonce`), and starts a session in the store
//! ([`crate::confirm::session`]: issuer, subject, display name, roles), its cookie
//! `HttpOnly`, `SameSite=Lax` (the provider's redirect back is a cross-site navigation,
//! which a `Strict` cookie would not follow), and `Secure` with the `__Host-` prefix when
//! `public_url` is https: the redirect URL and the cookies come from `public_url`, which
//! sign-in requires, never from a request's headers. Every form the pages show carries a
//! CSRF token sealed for the user and the form's action.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use bytes::Bytes;
use http_body_util::Full;
use hyper::HeaderMap;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use super::cipher::VaultCipher;
use super::token_endpoint;
use crate::caller::oauth::OAuth;
use crate::config::oauth::SignInConfig;
use crate::confirm::session::{self as page_session, Kind, Site, Times};
use crate::store::Store;

/// The session cookie.
pub const SESSION_COOKIE: &str = "tb_hub";
const LOGIN_COOKIE: &str = "tb_hub_login";
const LOGIN_MS: i64 = 10 * 60 * 1000;
/// How long a form's CSRF token holds.
pub const FORM_MS: i64 = 3600 * 1000;
const LOGIN_PURPOSE: &str = "hub-login";
const FORM_PURPOSE: &str = "hub-form";

/// The provider's endpoints, from its metadata.
#[derive(Debug, Clone)]
struct Endpoints {
    authorization: String,
    token: String,
}

/// The broker's client at the provider.
pub struct SignIn {
    issuer: String,
    client_id: String,
    redirect_url: Option<String>,
    scopes: String,
    auth: token_endpoint::ClientAuth,
    /// The role that makes a signed-in user an approver.
    pub approver_role: Option<String>,
    endpoints: tokio::sync::RwLock<Option<Endpoints>>,
    client: token_endpoint::HttpsClient,
}

impl std::fmt::Debug for SignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignIn")
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// A person signed in to the hub's pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The provider.
    pub issuer: String,
    /// `sub`.
    pub subject: String,
    /// What the page calls them (`preferred_username`, `name`, `email`, else `sub`).
    pub name: String,
    /// The roles claim of their ID token.
    pub roles: Vec<String>,
}

impl Session {
    /// The user this session is.
    pub fn user(&self) -> crate::caller::User {
        crate::caller::User {
            issuer: self.issuer.clone(),
            subject: self.subject.clone(),
        }
    }
}

pub(crate) fn random_text(bytes: usize) -> Option<String> {
    let mut raw = vec![0u8; bytes];
    getrandom::fill(&mut raw).ok()?;
    Some(B64.encode(raw))
}

/// A path the sign-in may return to: the hub's pages, an approval page or the
/// console, never another site.
pub fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n)
            if (n.starts_with("/hub")
                || n.starts_with("/approvals/")
                || n.starts_with("/admin"))
                && !n.starts_with("//")
                && !n.contains('\\')
                && n.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            n.to_string()
        }
        _ => "/hub".into(),
    }
}

/// The identity provider's redirect back to the broker, as it arrived: the broker's
/// public base URL (the `redirect_uri` it gave), the cookie settings, the request's
/// headers (the login cookie) and its query (`code`, `state`).
#[derive(Debug, Clone, Copy)]
pub struct Redirected<'a> {
    /// The broker's public base URL.
    pub base: &'a str,
    /// How the hub's cookies are set and read.
    pub site: Site,
    /// The request's headers.
    pub headers: &'a HeaderMap,
    /// The request's query.
    pub query: &'a str,
}

impl SignIn {
    /// From `[oauth.sign_in]`: the secret read now, the redirect URL checked.
    pub fn new(
        config: &SignInConfig,
        issuer: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let secret = env(&config.client_secret_env)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| {
                format!(
                    "[oauth.sign_in] client_secret_env names `{}`, which is empty or not set",
                    config.client_secret_env
                )
            })?;
        if config.client_id.trim().is_empty() {
            return Err("[oauth.sign_in] client_id is empty".into());
        }
        if let Some(url) = &config.redirect_url {
            let parsed = url::Url::parse(url)
                .map_err(|e| format!("[oauth.sign_in] redirect_url `{url}`: {e}"))?;
            if parsed.path() != "/hub/callback" || parsed.query().is_some() {
                return Err(format!(
                    "[oauth.sign_in] redirect_url `{url}` must be the broker's /hub/callback (no query)"
                ));
            }
        }
        let mut scopes = config.scopes.clone().unwrap_or_default();
        if !scopes.iter().any(|s| s == "openid") {
            scopes.insert(0, "openid".into());
        }
        let client = token_endpoint::client()?;
        Ok(Self {
            issuer: issuer.to_string(),
            client_id: config.client_id.clone(),
            redirect_url: config.redirect_url.clone(),
            scopes: scopes.join(" "),
            auth: token_endpoint::ClientAuth {
                client_id: config.client_id.clone(),
                secret: Some(Zeroizing::new(secret)),
                method: config.token_endpoint_auth.unwrap_or_default(),
            },
            approver_role: config.approver_role.clone(),
            endpoints: tokio::sync::RwLock::new(None),
            client,
        })
    }

    fn redirect_uri(&self, base: &str) -> String {
        self.redirect_url
            .clone()
            .unwrap_or_else(|| format!("{base}/hub/callback"))
    }

    async fn send(&self, request: hyper::Request<Full<Bytes>>) -> Result<(u16, Value), String> {
        token_endpoint::send(&self.client, request).await
    }

    /// The provider's endpoints: its metadata, fetched once (again after a failure).
    async fn endpoints(&self) -> Result<Endpoints, String> {
        if let Some(e) = self.endpoints.read().await.as_ref() {
            return Ok(e.clone());
        }
        let meta = token_endpoint::discover(&self.client, &self.issuer).await?;
        let found = Endpoints {
            authorization: token_endpoint::endpoint(&meta, "authorization_endpoint")?,
            token: token_endpoint::endpoint(&meta, "token_endpoint")?,
        };
        *self.endpoints.write().await = Some(found.clone());
        Ok(found)
    }

    /// The start of a sign-in: the provider URL to send the browser to and the login
    /// cookie that remembers `state`, `nonce`, the PKCE verifier and where to return.
    pub async fn start(
        &self,
        cipher: &VaultCipher,
        base: &str,
        site: Site,
        next: &str,
        now_ms: i64,
    ) -> Result<(String, String), String> {
        let endpoints = self.endpoints().await?;
        let (Some(state), Some(nonce), Some(verifier)) =
            (random_text(16), random_text(16), random_text(32))
        else {
            return Err("no randomness available".into());
        };
        let challenge = B64.encode(Sha256::digest(verifier.as_bytes()));
        let sealed = cipher
            .seal_statement(
                LOGIN_PURPOSE,
                &json!({ "state": state, "nonce": nonce, "verifier": verifier, "next": next, "exp": now_ms + LOGIN_MS }),
            )
            .ok_or("no randomness available")?;
        let mut url = url::Url::parse(&endpoints.authorization)
            .map_err(|_| "the provider's authorization_endpoint is not a URL".to_string())?;
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.client_id)
            .append_pair("redirect_uri", &self.redirect_uri(base))
            .append_pair("scope", &self.scopes)
            .append_pair("state", &state)
            .append_pair("nonce", &nonce)
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256");
        let cookie = site.cookie(LOGIN_COOKIE, &sealed, "Lax", LOGIN_MS / 1000);
        Ok((url.to_string(), cookie))
    }

    /// The provider's redirect back: the session and where to go. The error is what a
    /// person reads (never a code, token or secret).
    pub async fn finish(
        &self,
        cipher: &VaultCipher,
        oauth: &OAuth,
        back: Redirected<'_>,
        now: jiff::Timestamp,
    ) -> Result<(Session, String), String> {
        let Redirected {
            base,
            site,
            headers,
            query,
        } = back;
        let now_ms = now.as_millisecond();
        let fields: std::collections::BTreeMap<String, String> =
            url::form_urlencoded::parse(query.as_bytes())
                .into_owned()
                .collect();
        let login = site
            .read(headers, LOGIN_COOKIE)
            .and_then(|c| cipher.open_statement(LOGIN_PURPOSE, &c, now_ms))
            .ok_or("this sign-in is stale or was started in another browser; start again")?;
        let text = |name: &str| login.get(name).and_then(Value::as_str).unwrap_or_default();
        let state_ok = fields.get("state").is_some_and(|s| {
            use subtle::ConstantTimeEq;
            bool::from(s.as_bytes().ct_eq(text("state").as_bytes()))
        });
        if !state_ok {
            return Err(
                "the provider's answer does not belong to this sign-in; start again".into(),
            );
        }
        if let Some(iss) = fields.get("iss")
            && iss != &self.issuer
        {
            return Err("the answer came from another identity provider than this broker's".into());
        }
        if let Some(error) = fields.get("error") {
            let code = token_endpoint::safe_code(error);
            return Err(format!(
                "the identity provider refused the sign-in ({code})"
            ));
        }
        let code = fields
            .get("code")
            .ok_or("the provider's answer has no code; start again")?;
        let endpoints = self.endpoints().await?;
        let request = self.token_request(endpoints.token.as_str(), code, base, text("verifier"))?;
        let (status, answer) = self.send(request).await.map_err(|e| {
            tracing::warn!(error = %e, "hub sign-in: token endpoint unreachable");
            "the identity provider's token endpoint does not answer; try again shortly".to_string()
        })?;
        if status != 200 {
            let error = answer
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("unknown");
            tracing::warn!(
                status,
                error,
                "hub sign-in: the token endpoint refused the code"
            );
            return Err(format!(
                "the identity provider refused to finish the sign-in ({status})"
            ));
        }
        let id_token = answer.get("id_token").and_then(Value::as_str).ok_or(
            "the identity provider answered no ID token (is `openid` among the client's scopes?)",
        )?;
        let claims = oauth
            .verify_id_token(id_token, &self.client_id, now)
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "hub sign-in: ID token refused");
                format!("the identity provider's ID token was refused: {e}")
            })?;
        if claims.get("nonce").and_then(Value::as_str) != Some(text("nonce")) {
            return Err("the ID token does not belong to this sign-in (nonce); start again".into());
        }
        let subject = claims
            .get("sub")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let name = ["preferred_username", "name", "email"]
            .iter()
            .find_map(|c| claims.get(*c).and_then(Value::as_str))
            .unwrap_or(&subject)
            .to_string();
        let session = Session {
            issuer: oauth.issuer().to_string(),
            subject,
            name,
            roles: oauth.role_names(&claims),
        };
        Ok((session, safe_next(Some(text("next")))))
    }

    /// The token request that trades `code` for tokens (code + PKCE `verifier`), the
    /// client authenticated as the provider asks. The secret is wiped once written.
    fn token_request(
        &self,
        token_url: &str,
        code: &str,
        base: &str,
        verifier: &str,
    ) -> Result<hyper::Request<Full<Bytes>>, String> {
        let redirect_uri = self.redirect_uri(base);
        self.auth.form_post(
            token_url,
            &[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", &redirect_uri),
                ("code_verifier", verifier),
            ],
        )
    }
}

/// Starts `session` in the store; the cookie that holds it.
pub async fn start_session(
    store: &Store,
    site: Site,
    times: Times,
    session: &Session,
    now_ms: i64,
) -> Option<String> {
    let caller = super::caller_name(&session.user());
    let claims = json!({
        "iss": session.issuer,
        "sub": session.subject,
        "name": session.name,
        "roles": session.roles,
    });
    let id = page_session::start(store, Kind::Hub, &caller, &claims, times, now_ms).await?;
    Some(site.cookie(SESSION_COOKIE, &id, "Lax", times.lifetime_ms / 1000))
}

/// The cookies that end a session and a sign-in in progress.
pub fn cleared_cookies(site: Site) -> [String; 2] {
    [
        site.cleared(SESSION_COOKIE, "Lax"),
        site.cleared(LOGIN_COOKIE, "Lax"),
    ]
}

/// The live session the request's cookie names, if any.
pub async fn session(
    store: &Store,
    site: Site,
    times: Times,
    headers: &HeaderMap,
    now_ms: i64,
) -> Option<Session> {
    let (_, claims) = page_session::find(
        store,
        site,
        headers,
        SESSION_COOKIE,
        Kind::Hub,
        times,
        now_ms,
    )
    .await?;
    let text = |name: &str| claims.get(name).and_then(Value::as_str).map(String::from);
    Some(Session {
        issuer: text("iss")?,
        subject: text("sub")?,
        name: text("name").unwrap_or_default(),
        roles: claims
            .get("roles")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default(),
    })
}

/// A digest of the hub session's id the request's cookie holds (under its own
/// prefix, so it is not the store's key of the session): what binds an authorization
/// flow to the session that started it.
pub fn session_digest(site: Site, headers: &HeaderMap) -> Option<String> {
    let id = site.read(headers, SESSION_COOKIE)?;
    Some(crate::catalog::identity::sha256_hex(
        format!("hub-flow-session:{id}").as_bytes(),
    ))
}

/// Ends the session the request's cookie names, on every replica.
pub async fn end_session(store: &Store, site: Site, headers: &HeaderMap) {
    page_session::end(store, site, headers, SESSION_COOKIE).await;
}

/// A CSRF token for one form (`action`, e.g. `put:payments`) of one user.
pub fn form_token(
    cipher: &VaultCipher,
    session: &Session,
    action: &str,
    now_ms: i64,
) -> Option<String> {
    cipher.seal_statement(
        FORM_PURPOSE,
        &json!({ "iss": session.issuer, "sub": session.subject, "act": action, "exp": now_ms + FORM_MS }),
    )
}

/// Whether `token` is a live CSRF token of this user for this form.
pub fn form_token_ok(
    cipher: &VaultCipher,
    session: &Session,
    action: &str,
    token: Option<&str>,
    now_ms: i64,
) -> bool {
    token
        .and_then(|t| cipher.open_statement(FORM_PURPOSE, t, now_ms))
        .is_some_and(|c| {
            c["iss"] == session.issuer.as_str()
                && c["sub"] == session.subject.as_str()
                && c["act"] == action
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_in_returns_only_to_the_brokers_own_pages() {
        assert_eq!(
            safe_next(Some("/hub/connect/payments?state=x")),
            "/hub/connect/payments?state=x"
        );
        assert_eq!(safe_next(Some("/approvals/ab12")), "/approvals/ab12");
        assert_eq!(
            safe_next(Some("/admin/audit?tool=crm.x")),
            "/admin/audit?tool=crm.x"
        );
        for bad in [
            "https://evil.example",
            "//evil.example/hub",
            "/hub\\..",
            "/other",
            "/hub x",
        ] {
            assert_eq!(safe_next(Some(bad)), "/hub", "{bad}");
        }
        assert_eq!(safe_next(None), "/hub");
    }

    #[test]
    fn a_form_token_is_for_one_user_and_one_action() {
        let cipher = VaultCipher::new("a-vault-secret-of-at-least-32-characters", &[]).unwrap();
        let alice = Session {
            issuer: "https://idp".into(),
            subject: "alice".into(),
            name: "Alice".into(),
            roles: vec![],
        };
        let bob = Session {
            subject: "bob".into(),
            ..alice.clone()
        };
        let token = form_token(&cipher, &alice, "put:payments", 0).unwrap();
        assert!(form_token_ok(
            &cipher,
            &alice,
            "put:payments",
            Some(&token),
            1
        ));
        assert!(!form_token_ok(
            &cipher,
            &bob,
            "put:payments",
            Some(&token),
            1
        ));
        assert!(!form_token_ok(
            &cipher,
            &alice,
            "delete:payments",
            Some(&token),
            1
        ));
        assert!(!form_token_ok(
            &cipher,
            &alice,
            "put:payments",
            Some(&token),
            FORM_MS
        ));
        assert!(!form_token_ok(&cipher, &alice, "put:payments", None, 1));
    }
}
