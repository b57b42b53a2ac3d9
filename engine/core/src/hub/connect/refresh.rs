//! The access token a call of a connected service uses, refreshed before it expires.
//!
//! A token within `refresh_skew_seconds` of its expiry is refreshed by one replica at a
//! time: the one that takes the row's lease (the store's conditional update) calls the
//! provider, retries a transient failure twice, and writes the new pair (the rotated
//! refresh token beside its access token) in one statement that frees the lease. The
//! others use the token while it is still valid, else wait for the version to move. A
//! refresh token the provider refuses (`invalid_grant`) marks the connection for a
//! reconnect, and the call answers the link; nothing is ever deleted by a failure.

use std::time::Duration;

use zeroize::Zeroizing;

use super::{Tokens, who};
use crate::caller::User;
use crate::error::{CallError, Classification};
use crate::hub::Hub;
use crate::run::Parts;
use crate::store::hub_connections::{CONNECTED, Connection, RECONNECT};

/// How long a replica may hold a refresh lease (a refresh takes at most three token
/// requests of 10 s, and backoff).
const LEASE_MS: i64 = 40_000;
/// How often a waiting replica looks again.
const POLL: Duration = Duration::from_millis(100);
/// The pauses before the second and third try of a refresh that failed transiently.
const BACKOFF: [Duration; 2] = [Duration::from_millis(250), Duration::from_millis(1000)];

/// What a call gets from a connection.
pub enum Token {
    /// No connection (the call may use a stored key, else asks for one).
    None,
    /// A live access token.
    Live(Zeroizing<String>),
    /// The provider refused the refresh token, or the token expired with none: the user
    /// must connect again.
    Reconnect,
}

fn unavailable(service: &str) -> CallError {
    CallError::new(
        Classification::UpstreamUnavailable,
        format!(
            "your `{service}` account's access expired and its provider did not answer the refresh; nothing was sent and your connection is kept; retry shortly"
        ),
    )
}

fn store_down(e: &crate::store::StoreError) -> CallError {
    tracing::error!(error = %e, "hub store unavailable");
    CallError::new(
        Classification::NotConfigured,
        "the broker cannot read your connected accounts right now (its store does not answer); nothing was sent; retry shortly",
    )
}

impl Hub {
    /// The access token of the user's connection to `service`, refreshed first when it
    /// is near expiry; for an on-behalf-of service, the caller's `subject_token`
    /// exchanged.
    pub async fn connection_token(
        &self,
        parts: &Parts,
        user: &User,
        service: &str,
        subject_token: Option<&str>,
    ) -> Result<Token, CallError> {
        let Some(provider) = self.connections.provider(service) else {
            return Ok(Token::None);
        };
        if provider.exchanges() {
            return self
                .exchanged_token(parts, user, service, subject_token)
                .await;
        }
        let key = who(user, service);
        let started = parts.now().as_millisecond();
        loop {
            let Some(row) = parts
                .store
                .connection(key)
                .await
                .map_err(|e| store_down(&e))?
            else {
                return Ok(Token::None);
            };
            if row.state == RECONNECT {
                return Ok(Token::Reconnect);
            }
            let Some(tokens) = Tokens::open(&self.cipher, key, &row.sealed) else {
                tracing::error!(service, key_id = %row.key_id, "a hub connection does not open: altered, moved, or sealed under a vault key this deployment no longer has; the user must connect again");
                return Ok(Token::Reconnect);
            };
            let now = parts.now().as_millisecond();
            let valid = row.expires_ms.is_none_or(|e| now < e);
            if row.expires_ms.is_none_or(|e| now + provider.skew_ms() < e) {
                return Ok(Token::Live(tokens.access));
            }
            let Some(refresh_token) = &tokens.refresh else {
                return Ok(if valid {
                    Token::Live(tokens.access)
                } else {
                    Token::Reconnect
                });
            };
            let holder = super::super::signin::random_text(16).ok_or_else(CallError::internal)?;
            let took = parts
                .store
                .take_connection_lease(key, row.version, &holder, now, now + LEASE_MS)
                .await
                .map_err(|e| store_down(&e))?;
            if took {
                let refreshed = self
                    .refresh_held(parts, user, &row, refresh_token, &holder)
                    .await;
                return match refreshed {
                    Ok(token) => Ok(token),
                    Err(_) if valid => Ok(Token::Live(tokens.access)),
                    Err(e) => Err(e),
                };
            }
            // Another replica refreshes (or the row moved on): the token still valid
            // serves; else wait for theirs, within a lease's time.
            if valid {
                return Ok(Token::Live(tokens.access));
            }
            if parts.now().as_millisecond() - started > LEASE_MS + 1000 {
                return Err(unavailable(service));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The refresh under a lease `holder` took: the provider asked (a transient failure
    /// tried three times in all), the answer written, the lease freed.
    async fn refresh_held(
        &self,
        parts: &Parts,
        user: &User,
        row: &Connection,
        refresh_token: &str,
        holder: &str,
    ) -> Result<Token, CallError> {
        let service = row.service.as_str();
        let key = who(user, service);
        let provider = self
            .connections
            .provider(service)
            .ok_or_else(CallError::internal)?;
        let reach = self.reach(parts);
        let mut outcome = provider.refresh(reach, refresh_token).await;
        for pause in BACKOFF {
            match &outcome {
                Err(super::provider::TokenError::Unavailable(e)) => {
                    tracing::warn!(service, error = %e, "a connection's refresh failed; trying again");
                    tokio::time::sleep(pause).await;
                    outcome = provider.refresh(reach, refresh_token).await;
                }
                _ => break,
            }
        }
        let release = |state: &'static str| async move {
            if let Err(e) = parts
                .store
                .release_connection_lease(key, holder, state)
                .await
            {
                tracing::error!(error = %e, "a hub connection's refresh lease not released; it lapses by itself");
            }
        };
        match outcome {
            Ok(grant) => {
                parts.metrics.record_refresh("refreshed");
                let now = parts.now().as_millisecond();
                let tokens = Tokens {
                    access: grant.access,
                    // A provider that does not rotate keeps the refresh token it gave.
                    refresh: grant
                        .refresh
                        .or_else(|| Some(Zeroizing::new(refresh_token.to_string()))),
                };
                let sealed = tokens
                    .seal(&self.cipher, key)
                    .ok_or_else(CallError::internal)?;
                let next = Connection {
                    sealed,
                    key_id: self.cipher.current_id().to_string(),
                    scopes: grant.scope.unwrap_or_else(|| row.scopes.clone()),
                    expires_ms: grant.expires_in.map(|s| now + s * 1000),
                    refreshed_ms: Some(now),
                    ..row.clone()
                };
                self.write_refreshed(parts, &next, holder).await;
                tracing::info!(user = %crate::hub::caller_name(user), service, "hub connection refreshed");
                Ok(Token::Live(tokens.access))
            }
            Err(e) if e.grant_dead() => {
                parts.metrics.record_refresh("reconnect_needed");
                release(RECONNECT).await;
                crate::hub::audit(
                    parts,
                    user,
                    service,
                    crate::store::audit::Outcome::ReconnectNeeded,
                    "hub:refresh",
                )
                .await;
                tracing::warn!(user = %crate::hub::caller_name(user), service, "the provider refused a connection's refresh token; the user must connect again");
                Ok(Token::Reconnect)
            }
            Err(e) => {
                parts.metrics.record_refresh("failed");
                release(CONNECTED).await;
                let why = match e {
                    super::provider::TokenError::Refused(code) => {
                        format!("the token endpoint refused the refresh ({code})")
                    }
                    super::provider::TokenError::Unavailable(e) => e,
                };
                tracing::error!(service, error = %why, "a connection's refresh failed; the connection is kept");
                Err(unavailable(service))
            }
        }
    }

    /// Writes a refresh's pair, trying again while the store fails: the provider has
    /// rotated the refresh token, and losing the new one would cost the connection.
    async fn write_refreshed(&self, parts: &Parts, next: &Connection, holder: &str) {
        for pause in [Duration::ZERO, BACKOFF[0], BACKOFF[1]] {
            tokio::time::sleep(pause).await;
            match parts.store.refreshed_connection(next, holder).await {
                Ok(true) => return,
                Ok(false) => {
                    tracing::warn!(service = %next.service, "a connection's refresh lease lapsed before its tokens were written; another replica refreshes it");
                    return;
                }
                Err(e) => {
                    tracing::error!(error = %e, service = %next.service, "a refreshed connection not stored; trying again");
                }
            }
        }
        tracing::error!(service = %next.service, "a refreshed connection could not be stored: its new refresh token is lost, and the user may have to connect again");
    }
}
