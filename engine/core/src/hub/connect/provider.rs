//! One service's authorization server as the hub's client of it (`[connect.<service>]`):
//! its endpoints (given, or from its metadata, read once and again after a failure),
//! the authorization URL of a flow, and the token endpoint's three uses: a code
//! exchanged, a refresh token used, a token revoked (RFC 7009).

use serde_json::Value;
use zeroize::Zeroizing;

use crate::config::connect::{ConnectConfig, TokenPlacement};
use crate::hub::token_endpoint::{self, ClientAuth, HttpsClient};

/// The provider's endpoints.
#[derive(Debug, Clone)]
struct Endpoints {
    authorization: String,
    token: String,
    revocation: Option<String>,
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
    config: ConnectConfig,
    auth: ClientAuth,
    endpoints: tokio::sync::RwLock<Option<Endpoints>>,
    client: HttpsClient,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("client_id", &self.auth.client_id)
            .finish_non_exhaustive()
    }
}

impl Provider {
    /// From `[connect.<service>]`: checked, its secret read now.
    pub fn new(
        service: &str,
        config: &ConnectConfig,
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
        let endpoints = match (&config.authorization_url, &config.token_url) {
            (authorization, Some(token)) => Some(Endpoints {
                // A token exchange has no authorization endpoint; nothing asks for it.
                authorization: authorization.clone().unwrap_or_default(),
                token: token.clone(),
                revocation: config.revocation_url.clone(),
            }),
            _ => None,
        };
        Ok(Self {
            auth: ClientAuth {
                client_id: config.client_id.clone(),
                secret,
                method: config.token_endpoint_auth.unwrap_or_default(),
            },
            config: config.clone(),
            endpoints: tokio::sync::RwLock::new(endpoints),
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

    /// Exchanges the caller's access token for one with this service's audience and
    /// scopes (RFC 8693).
    pub async fn exchange_token(&self, subject_token: &str) -> Result<Grant, TokenError> {
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
        self.grant(&form).await
    }

    /// The issuer, when the provider was configured by it (RFC 9207's `iss` checked).
    pub fn issuer(&self) -> Option<&str> {
        self.config.issuer.as_deref()
    }

    async fn endpoints(&self) -> Result<Endpoints, String> {
        if let Some(e) = self.endpoints.read().await.as_ref() {
            return Ok(e.clone());
        }
        let issuer = self.config.issuer.as_deref().unwrap_or_default();
        let meta = token_endpoint::discover(&self.client, issuer).await?;
        let found = Endpoints {
            authorization: token_endpoint::endpoint(&meta, "authorization_endpoint")?,
            token: token_endpoint::endpoint(&meta, "token_endpoint")?,
            revocation: self
                .config
                .revocation_url
                .clone()
                .or_else(|| token_endpoint::endpoint(&meta, "revocation_endpoint").ok()),
        };
        *self.endpoints.write().await = Some(found.clone());
        Ok(found)
    }

    /// The URL the browser is sent to: code flow, PKCE S256, the flow's `state`, the
    /// scopes and the table's extra parameters.
    pub async fn authorization_url(
        &self,
        redirect_uri: &str,
        state: &str,
        challenge: &str,
    ) -> Result<String, String> {
        let endpoints = self.endpoints().await?;
        let mut url = url::Url::parse(&endpoints.authorization)
            .map_err(|_| "the provider's authorization endpoint is not a URL".to_string())?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &self.auth.client_id)
                .append_pair("redirect_uri", redirect_uri)
                .append_pair("state", state)
                .append_pair("code_challenge", challenge)
                .append_pair("code_challenge_method", "S256");
            if !self.config.scopes.is_empty() {
                query.append_pair("scope", &self.config.scopes.join(" "));
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
        code: &str,
        verifier: &str,
        redirect_uri: &str,
    ) -> Result<Grant, TokenError> {
        self.grant(&[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier),
        ])
        .await
    }

    /// Uses a refresh token.
    pub async fn refresh(&self, refresh_token: &str) -> Result<Grant, TokenError> {
        self.grant(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
        ])
        .await
    }

    async fn grant(&self, form: &[(&str, &str)]) -> Result<Grant, TokenError> {
        let endpoints = self.endpoints().await.map_err(TokenError::Unavailable)?;
        let mut pairs = form.to_vec();
        pairs.extend(
            self.config
                .token_params
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
        );
        let request = self
            .auth
            .form_post(&endpoints.token, &pairs)
            .map_err(TokenError::Unavailable)?;
        let (status, answer) = token_endpoint::send(&self.client, request)
            .await
            .map_err(TokenError::Unavailable)?;
        read_grant(status, &answer)
    }

    /// Revokes `token` (`hint`: `refresh_token` or `access_token`) where the provider
    /// has an endpoint; `Ok(false)` when it has none.
    pub async fn revoke(&self, token: &str, hint: &str) -> Result<bool, String> {
        let endpoints = self.endpoints().await?;
        let Some(url) = endpoints.revocation else {
            return Ok(false);
        };
        let request = self
            .auth
            .form_post(&url, &[("token", token), ("token_type_hint", hint)])?;
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
