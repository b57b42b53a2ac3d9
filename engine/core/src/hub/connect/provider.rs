//! One service's authorization server as the hub's client of it (`[connect.<service>]`):
//! how it is reached ([`Ready`]: its endpoints given, read from its metadata, or found
//! from the MCP server's protected resource metadata; the broker's client id given or
//! registered; the resource indicator), the authorization URL of a flow, and the token
//! endpoint's uses: a code exchanged, a refresh token used, a caller's token exchanged,
//! a token revoked (RFC 7009). What is found is kept; a failure is tried again next time.

use std::sync::Arc;

use serde_json::Value;
use zeroize::Zeroizing;

use super::discover;
use crate::config::connect::{ConnectConfig, TokenPlacement};
use crate::hub::cipher::VaultCipher;
use crate::hub::token_endpoint::{self, ClientAuth, HttpsClient};
use crate::run::Parts;

/// The provider's endpoints.
#[derive(Debug, Clone)]
pub(super) struct Endpoints {
    pub(super) authorization: String,
    pub(super) token: String,
    pub(super) revocation: Option<String>,
    pub(super) registration: Option<String>,
    /// The authorization server (for RFC 9207's `iss`, and to key a registration).
    pub(super) issuer: Option<String>,
}

/// The redirect URI registered at every provider for `service`:
/// `public_url` + `/hub/oauth/<service>/callback`.
pub fn redirect_uri(base: &str, service: &str) -> String {
    format!("{base}/hub/oauth/{service}/callback")
}

/// How the provider is reached, once found.
pub struct Ready {
    endpoints: Endpoints,
    auth: ClientAuth,
    resource: Option<String>,
}

/// What a provider's work needs of the broker: the parts (the store, the service's
/// URL) and the vault (a registered client's secret).
#[derive(Clone, Copy)]
pub struct Reach<'a> {
    /// The parts.
    pub parts: &'a Parts,
    /// The vault.
    pub cipher: &'a VaultCipher,
}

/// What a token endpoint granted.
pub struct Grant {
    /// The access token.
    pub access: Zeroizing<String>,
    /// The refresh token, when one was given (a refresh that gives none keeps the old).
    pub refresh: Option<Zeroizing<String>>,
    /// Seconds the access token lives, when said.
    pub expires_in: Option<i64>,
    /// The scopes granted, when said (else those asked).
    pub scope: Option<String>,
    /// The account, as the ID token names it (shown on the page; nothing is decided by it).
    pub account: Option<String>,
}

/// Why a token request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenError {
    /// The provider refused it (its OAuth `error`): `invalid_grant` means the grant is
    /// spent or revoked.
    Refused(String),
    /// No usable answer (network, timeout, a 5xx, not JSON): worth retrying.
    Unavailable(String),
}

impl TokenError {
    /// Whether the grant itself is dead (the user must connect again).
    pub fn grant_dead(&self) -> bool {
        matches!(self, Self::Refused(code) if code == "invalid_grant")
    }
}

/// One service's provider.
pub struct Provider {
    service: String,
    config: ConnectConfig,
    /// The client as configured (`client_id`), else registered when first needed.
    configured: Option<ClientAuth>,
    /// `public_url`: the redirect URI a registration names.
    public_url: Option<String>,
    ready: tokio::sync::RwLock<Option<Arc<Ready>>>,
    client: HttpsClient,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("service", &self.service)
            .finish_non_exhaustive()
    }
}

impl Provider {
    /// From `[connect.<service>]`: checked, its secret read now.
    pub fn new(
        service: &str,
        config: &ConnectConfig,
        public_url: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        config.check(service)?;
        let secret = match &config.client_secret_env {
            Some(name) => Some(Zeroizing::new(env(name).filter(|v| !v.is_empty()).ok_or_else(
                || {
                    format!(
                        "[connect.{service}] client_secret_env names `{name}`, which is empty or not set"
                    )
                },
            )?)),
            None => None,
        };
        let configured = config.client_id.as_ref().map(|id| ClientAuth {
            client_id: id.clone(),
            secret,
            method: config.token_endpoint_auth.unwrap_or_default(),
        });
        Ok(Self {
            service: service.to_string(),
            config: config.clone(),
            configured,
            public_url: public_url.map(String::from),
            ready: tokio::sync::RwLock::new(None),
            client: token_endpoint::client()?,
        })
    }

    /// The scopes asked for.
    pub fn scopes(&self) -> &[String] {
        &self.config.scopes
    }

    /// Where the access token goes.
    pub fn placement(&self) -> TokenPlacement {
        self.config.token_placement
    }

    /// Milliseconds before expiry a token is refreshed.
    pub fn skew_ms(&self) -> i64 {
        self.config.skew_ms()
    }

    /// Whether each call's token is exchanged (RFC 8693) instead of a connection.
    pub fn exchanges(&self) -> bool {
        self.config.token_exchange
    }

    /// The redirect URI every provider of this service knows.
    pub fn redirect_uri(&self) -> Option<String> {
        self.public_url
            .as_deref()
            .map(|base| redirect_uri(base, &self.service))
    }

    /// How the provider is reached: found once (the endpoints, the client, the
    /// resource), kept; a failure is tried again on the next use.
    pub async fn ready(&self, reach: Reach<'_>) -> Result<Arc<Ready>, String> {
        if let Some(ready) = self.ready.read().await.as_ref() {
            return Ok(ready.clone());
        }
        let mut guard = self.ready.write().await;
        if let Some(ready) = guard.as_ref() {
            return Ok(ready.clone());
        }
        let (endpoints, found_resource) = self.endpoints(reach).await?;
        let auth = match &self.configured {
            Some(auth) => auth.clone(),
            None => self.registered(reach, &endpoints).await?,
        };
        let ready = Arc::new(Ready {
            endpoints,
            auth,
            resource: self.config.resource.clone().or(found_resource),
        });
        *guard = Some(ready.clone());
        Ok(ready)
    }

    /// The endpoints: given, from the issuer's metadata, or from the MCP server's
    /// protected resource metadata (with the resource it names).
    async fn endpoints(&self, reach: Reach<'_>) -> Result<(Endpoints, Option<String>), String> {
        if let (Some(token), None) = (&self.config.token_url, &self.config.issuer) {
            return Ok((
                Endpoints {
                    // A token exchange has no authorization endpoint; nothing asks for it.
                    authorization: self.config.authorization_url.clone().unwrap_or_default(),
                    token: token.clone(),
                    revocation: self.config.revocation_url.clone(),
                    registration: None,
                    issuer: None,
                },
                None,
            ));
        }
        let (issuer, resource) = match &self.config.issuer {
            Some(issuer) => (issuer.clone(), None),
            None => {
                let url = reach.parts.routes.base_url(&self.service).ok_or_else(|| {
                    format!(
                        "`{}` has no URL to read its protected resource metadata from",
                        self.service
                    )
                })?;
                let (resource, issuer) = discover::protected_resource(&self.client, url).await?;
                (issuer, Some(resource))
            }
        };
        let meta = token_endpoint::discover(&self.client, &issuer).await?;
        let endpoints = Endpoints {
            authorization: token_endpoint::endpoint(&meta, "authorization_endpoint").or_else(
                |e| {
                    if self.config.token_exchange {
                        Ok(String::new())
                    } else {
                        Err(e)
                    }
                },
            )?,
            token: token_endpoint::endpoint(&meta, "token_endpoint")?,
            revocation: self
                .config
                .revocation_url
                .clone()
                .or_else(|| token_endpoint::endpoint(&meta, "revocation_endpoint").ok()),
            registration: token_endpoint::endpoint(&meta, "registration_endpoint").ok(),
            issuer: Some(issuer),
        };
        Ok((endpoints, resource))
    }

    /// The client registered for this service at this server: the one the store keeps
    /// (another replica's, or an earlier run's), else registered now (RFC 7591) and
    /// kept for every replica.
    async fn registered(
        &self,
        reach: Reach<'_>,
        endpoints: &Endpoints,
    ) -> Result<ClientAuth, String> {
        let issuer = endpoints.issuer.clone().unwrap_or_default();
        let store = &reach.parts.store;
        let kept = |e: crate::store::StoreError| {
            format!("the registered client could not be read or kept: {e}")
        };
        if let Some(row) = store
            .oauth_client(&self.service, &issuer)
            .await
            .map_err(kept)?
        {
            return discover::opened(reach.cipher, &row);
        }
        let Some(registration) = &endpoints.registration else {
            return Err(format!(
                "[connect.{}] has no client_id, and the authorization server `{issuer}` offers no registration endpoint: register the broker there and set client_id",
                self.service
            ));
        };
        let redirect = self
            .redirect_uri()
            .ok_or("registering needs public_url (the redirect URI)")?;
        let asked = discover::Registration {
            endpoint: registration,
            redirect_uri: &redirect,
            scopes: &self.config.scopes,
            service: &self.service,
            issuer: &issuer,
        };
        let row = discover::register(
            &self.client,
            reach.cipher,
            asked,
            reach.parts.now().as_millisecond(),
        )
        .await?;
        store.put_oauth_client(&row).await.map_err(kept)?;
        // Another replica may have kept its own first: every replica uses the one kept.
        let row = store
            .oauth_client(&self.service, &issuer)
            .await
            .map_err(kept)?
            .ok_or("the registered client was not kept")?;
        tracing::info!(service = %self.service, issuer, "the broker registered itself as a client");
        discover::opened(reach.cipher, &row)
    }

    /// The issuer, when known (RFC 9207's `iss` checked against it).
    pub async fn issuer(&self, reach: Reach<'_>) -> Option<String> {
        self.ready(reach).await.ok()?.endpoints.issuer.clone()
    }

    /// The URL the browser is sent to: code flow, PKCE S256, the flow's `state`, the
    /// scopes, the resource and the table's extra parameters.
    pub async fn authorization_url(
        &self,
        reach: Reach<'_>,
        state: &str,
        challenge: &str,
    ) -> Result<String, String> {
        let ready = self.ready(reach).await?;
        let redirect_uri = self.redirect_uri().ok_or("no public_url")?;
        let mut url = url::Url::parse(&ready.endpoints.authorization)
            .map_err(|_| "the provider's authorization endpoint is not a URL".to_string())?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &ready.auth.client_id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("state", state)
                .append_pair("code_challenge", challenge)
                .append_pair("code_challenge_method", "S256");
            if !self.config.scopes.is_empty() {
                query.append_pair("scope", &self.config.scopes.join(" "));
            }
            if let Some(resource) = &ready.resource {
                query.append_pair("resource", resource);
            }
            for (name, value) in &self.config.authorization_params {
                query.append_pair(name, value);
            }
        }
        Ok(url.to_string())
    }

    /// Trades a code (with its PKCE verifier) for tokens.
    pub async fn exchange(
        &self,
        reach: Reach<'_>,
        code: &str,
        verifier: &str,
    ) -> Result<Grant, TokenError> {
        let redirect_uri = self
            .redirect_uri()
            .ok_or_else(|| TokenError::Unavailable("no public_url".into()))?;
        self.grant(
            reach,
            &[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", &redirect_uri),
                ("code_verifier", verifier),
            ],
        )
        .await
    }

    /// Uses a refresh token.
    pub async fn refresh(
        &self,
        reach: Reach<'_>,
        refresh_token: &str,
    ) -> Result<Grant, TokenError> {
        self.grant(
            reach,
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh_token),
            ],
        )
        .await
    }

    /// Exchanges the caller's access token for one with this service's audience and
    /// scopes (RFC 8693).
    pub async fn exchange_token(
        &self,
        reach: Reach<'_>,
        subject_token: &str,
    ) -> Result<Grant, TokenError> {
        let scope = self.config.scopes.join(" ");
        let mut form = vec![
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange",
            ),
            ("subject_token", subject_token),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:access_token",
            ),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:access_token",
            ),
        ];
        if let Some(audience) = &self.config.audience {
            form.push(("audience", audience));
        }
        if !scope.is_empty() {
            form.push(("scope", &scope));
        }
        self.grant(reach, &form).await
    }

    /// A token request: the grant's form, the resource (RFC 8707) and the table's
    /// `token_params`, the client authenticated.
    async fn grant(&self, reach: Reach<'_>, form: &[(&str, &str)]) -> Result<Grant, TokenError> {
        let ready = self.ready(reach).await.map_err(TokenError::Unavailable)?;
        let mut pairs = form.to_vec();
        if let Some(resource) = &ready.resource {
            pairs.push(("resource", resource));
        }
        pairs.extend(
            self.config
                .token_params
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
        );
        let request = ready
            .auth
            .form_post(&ready.endpoints.token, &pairs)
            .map_err(TokenError::Unavailable)?;
        let (status, answer) = token_endpoint::send(&self.client, request)
            .await
            .map_err(TokenError::Unavailable)?;
        read_grant(status, &answer)
    }

    /// Revokes `token` (`hint`: `refresh_token` or `access_token`) where the provider
    /// has an endpoint; `Ok(false)` when it has none.
    pub async fn revoke(&self, reach: Reach<'_>, token: &str, hint: &str) -> Result<bool, String> {
        let ready = self.ready(reach).await?;
        let Some(url) = &ready.endpoints.revocation else {
            return Ok(false);
        };
        let request = ready
            .auth
            .form_post(url, &[("token", token), ("token_type_hint", hint)])?;
        match token_endpoint::send(&self.client, request).await? {
            // RFC 7009 section 2.2: 200 whether or not the token was valid.
            (200, _) => Ok(true),
            (status, answer) => Err(format!(
                "{url} answered {status} ({})",
                token_endpoint::error_code(&answer)
            )),
        }
    }
}

/// A token endpoint's answer read: a grant, or why not. A 200 holding an `error`
/// (as some providers answer) is a refusal; a token that could not travel in a header
/// is refused as unusable.
fn read_grant(status: u16, answer: &Value) -> Result<Grant, TokenError> {
    if status >= 500 || status == 429 {
        return Err(TokenError::Unavailable(format!(
            "the token endpoint answered {status}"
        )));
    }
    if answer.get("error").is_some() || status != 200 {
        let code = token_endpoint::error_code(answer);
        return Err(TokenError::Refused(code));
    }
    let text = |name: &str| answer.get(name).and_then(Value::as_str);
    let token_ok =
        |t: &str| !t.is_empty() && t.len() <= 8192 && t.bytes().all(|b| b.is_ascii_graphic());
    let access = text("access_token")
        .filter(|t| token_ok(t))
        .ok_or_else(|| {
            TokenError::Unavailable("the token endpoint answered no usable access_token".into())
        })?;
    // RFC 8693 section 2.2.1: `N_A` when the issued token is not an access token to
    // present as such; an access token asked for is sent as a bearer token.
    if let Some(kind) = text("token_type")
        && !kind.eq_ignore_ascii_case("bearer")
        && kind != "N_A"
    {
        return Err(TokenError::Unavailable(format!(
            "the token endpoint answered a `{}` token; only bearer tokens are sent",
            kind.chars()
                .filter(char::is_ascii_alphanumeric)
                .take(32)
                .collect::<String>()
        )));
    }
    let expires_in = match answer.get("expires_in") {
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(s)) => s.parse().ok(),
        _ => None,
    }
    .filter(|s| *s > 0);
    Ok(Grant {
        access: Zeroizing::new(access.to_string()),
        refresh: text("refresh_token")
            .filter(|t| token_ok(t))
            .map(|t| Zeroizing::new(t.to_string())),
        expires_in,
        scope: text("scope").map(String::from),
        account: text("id_token").and_then(account_of),
    })
}

/// The account an ID token names (`email`, `preferred_username`, `name`, else `sub`),
/// read for display only: it came straight from the token endpoint over TLS, and no
/// decision rests on it.
fn account_of(id_token: &str) -> Option<String> {
    use base64::Engine as _;
    let payload = id_token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    ["email", "preferred_username", "name", "sub"]
        .iter()
        .find_map(|c| claims.get(*c).and_then(Value::as_str))
        .map(|a| a.chars().take(200).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_token_answer_is_read_or_refused_with_its_code_only() {
        let grant = read_grant(
            200,
            &json!({"access_token": "at-1", "token_type": "Bearer", "expires_in": "3600", "refresh_token": "rt-1", "scope": "a b"}),
        )
        .unwrap();
        assert_eq!(
            (
                grant.access.as_str(),
                grant.refresh.as_deref().map(String::as_str),
                grant.expires_in,
                grant.scope.as_deref()
            ),
            ("at-1", Some("rt-1"), Some(3600), Some("a b"))
        );
        assert_eq!(
            read_grant(
                400,
                &json!({"error": "invalid_grant", "error_description": "token rt-1 is revoked"})
            )
            .err(),
            Some(TokenError::Refused("invalid_grant".into()))
        );
        // GitHub answers its refusals with 200.
        assert!(
            matches!(read_grant(200, &json!({"error": "bad_verification_code"})), Err(TokenError::Refused(c)) if c == "bad_verification_code")
        );
        assert!(matches!(
            read_grant(503, &Value::Null),
            Err(TokenError::Unavailable(_))
        ));
        assert!(matches!(
            read_grant(200, &json!({"access_token": "two words"})),
            Err(TokenError::Unavailable(_))
        ));
        assert!(matches!(
            read_grant(200, &json!({"access_token": "x", "token_type": "mac"})),
            Err(TokenError::Unavailable(_))
        ));
        assert!(TokenError::Refused("invalid_grant".into()).grant_dead());
        assert!(!TokenError::Refused("invalid_client".into()).grant_dead());
    }

    #[test]
    fn the_account_is_read_from_the_id_token_for_display() {
        use base64::Engine as _;
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(json!({"sub": "u1", "email": "dana@example.com"}).to_string());
        assert_eq!(
            account_of(&format!("h.{payload}.s")).as_deref(),
            Some("dana@example.com")
        );
        assert_eq!(account_of("not-a-jwt"), None);
    }
}
