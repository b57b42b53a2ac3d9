//! On-behalf-of (`token_exchange = true`): the caller's own access token exchanged at
//! the broker's identity provider (RFC 8693) for one with the service's audience and
//! scopes, per call, cached in memory until near its expiry, never stored.
//!
//! The cache is keyed by a digest of the user, the service and the caller's token (a
//! new token of the same user exchanges again), holds at most 10,000 entries, and is
//! per replica: a replica that has not seen the token exchanges it once.

use std::collections::HashMap;
use std::sync::Mutex;

use zeroize::Zeroizing;

use super::provider::TokenError;
use super::refresh::Token;
use crate::caller::User;
use crate::error::{CallError, Classification};
use crate::hub::Hub;
use crate::run::Parts;

/// Exchanged tokens a replica keeps at most.
const MOST: usize = 10_000;
/// How long an exchanged token the provider gave no lifetime is kept.
const NO_LIFETIME_MS: i64 = 60_000;

/// Exchanged tokens by digest: the token and when to stop using it (Unix ms).
#[derive(Default)]
pub struct Cache(Mutex<HashMap<String, (Zeroizing<String>, i64)>>);

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cache")
    }
}

impl Cache {
    fn get(&self, key: &str, now_ms: i64) -> Option<Zeroizing<String>> {
        let map = self.0.lock().ok()?;
        map.get(key)
            .filter(|(_, until)| now_ms < *until)
            .map(|(token, _)| token.clone())
    }

    fn put(&self, key: String, token: Zeroizing<String>, until_ms: i64, now_ms: i64) {
        if let Ok(mut map) = self.0.lock() {
            if map.len() >= MOST {
                map.retain(|_, (_, until)| now_ms < *until);
                if map.len() >= MOST {
                    map.clear();
                }
            }
            map.insert(key, (token, until_ms));
        }
    }
}

fn digest(user: &User, service: &str, subject_token: &str) -> String {
    let text = Zeroizing::new(
        serde_json::to_string(&[&user.issuer, &user.subject, service, subject_token])
            .unwrap_or_default(),
    );
    crate::catalog::identity::sha256_hex(text.as_bytes())
}

impl Hub {
    /// The token a call of an on-behalf-of `service` carries: the caller's access
    /// token (`subject_token`) exchanged, or the one exchanged before while it lives.
    pub(super) async fn exchanged_token(
        &self,
        parts: &Parts,
        user: &User,
        service: &str,
        subject_token: Option<&str>,
    ) -> Result<Token, CallError> {
        let provider = self
            .connections
            .provider(service)
            .ok_or_else(CallError::internal)?;
        let Some(subject_token) = subject_token else {
            return Err(CallError::new(
                Classification::MissingRequiredCredentials,
                format!(
                    "`{service}` is called on your behalf with your own access token, exchanged for one it accepts: call with your access token (Authorization: Bearer)"
                ),
            ));
        };
        let key = digest(user, service, subject_token);
        let now = parts.now().as_millisecond();
        if let Some(token) = self.connections.exchanged.get(&key, now) {
            return Ok(Token::Live(token));
        }
        match provider
            .exchange_token(self.reach(parts), subject_token)
            .await
        {
            Ok(grant) => {
                let until = grant.expires_in.map_or(now + NO_LIFETIME_MS, |s| {
                    now + (s * 1000 - provider.skew_ms()).max(0)
                });
                self.connections
                    .exchanged
                    .put(key, grant.access.clone(), until, now);
                tracing::info!(user = %crate::hub::caller_name(user), service, "access token exchanged");
                Ok(Token::Live(grant.access))
            }
            Err(TokenError::Refused(code)) => {
                tracing::warn!(
                    service,
                    code,
                    "the identity provider refused a token exchange"
                );
                Err(CallError::new(
                    Classification::Forbidden,
                    format!(
                        "the identity provider refused to exchange your access token for one `{service}` accepts ({code}); nothing was sent"
                    ),
                ))
            }
            Err(TokenError::Unavailable(e)) => {
                tracing::warn!(service, error = %e, "a token exchange failed");
                Err(CallError::new(
                    Classification::UpstreamUnavailable,
                    format!(
                        "the identity provider did not answer the exchange of your access token for `{service}`; nothing was sent; retry shortly"
                    ),
                ))
            }
        }
    }
}
