//! Accounts connected by OAuth instead of a pasted key (decision 020, docs/hub.md
//! "Connecting an account").
//!
//! - `provider`: one service's authorization server (`[connect.<service>]`): endpoints,
//!   the authorization URL, code exchange, refresh, revocation.
//! - `flow`: the authorization code flow with PKCE, its `state` a row taken once and
//!   bound to the hub session and the service that started it; the callback.
//! - `page`: a service's row on `/hub`, the consent step of a connect link, the start
//!   and the callback as pages.
//! - `discover`: an MCP server's authorization server from its protected resource
//!   metadata (RFC 9728), and the broker registered there (RFC 7591).
//! - `exchange`: on-behalf-of (`token_exchange = true`): each caller's access token
//!   exchanged (RFC 8693), cached while it lives, never stored.
//! - `refresh`: the access token a call uses, refreshed before expiry by one replica at
//!   a time (a lease in the store), a refused refresh token marking the connection for
//!   a reconnect, a transient failure never deleting anything.
//! - this module: [`Connections`] (the providers by service), the sealed token pair,
//!   disconnecting (revoked at the provider, then gone).
//!
//! The tokens are sealed as stored keys are (AES-256-GCM under the vault key), bound to
//! user and service under their own purpose, and are only ever sent to the service they
//! were issued for, and searched for and scrubbed from its answers.

pub mod discover;
pub mod exchange;
pub mod flow;
pub mod page;
pub mod provider;
pub mod refresh;

use std::collections::BTreeMap;

use serde_json::{Value, json};
use zeroize::Zeroizing;

use super::cipher::VaultCipher;
use super::{Hub, Refused};
use crate::caller::User;
use crate::config::ConfigFile;
use crate::run::Parts;
use crate::store::hub_connections::{Connection, Who};
pub use provider::Provider;

/// The services whose accounts connect by OAuth, each with its provider.
#[derive(Debug, Default)]
pub struct Connections {
    providers: BTreeMap<String, Provider>,
    /// Tokens exchanged on callers' behalf, while they live.
    exchanged: exchange::Cache,
}

impl Connections {
    /// The `[connect.*]` tables of `config`, each for a service in `services` (those
    /// whose calls take a caller's key). Refused at start: an unknown service, a bad
    /// table, a secret not set.
    pub fn new(
        config: &ConfigFile,
        services: &[String],
        mcp_http: &[String],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let mut providers = BTreeMap::new();
        for (service, table) in &config.connect {
            if !services.iter().any(|s| s == service) {
                return Err(format!(
                    "[connect.{service}] names no service whose calls take a caller's key (known: {})",
                    services.join(", ")
                ));
            }
            if table.token_exchange
                && let (Some(issuer), Some(oauth)) = (&table.issuer, &config.oauth)
                && issuer != &oauth.issuer
            {
                return Err(format!(
                    "[connect.{service}] token_exchange = true exchanges callers' access tokens at the broker's own identity provider: its issuer must be [oauth] issuer `{}`",
                    oauth.issuer
                ));
            }
            if table.discovers() && !mcp_http.iter().any(|s| s == service) {
                return Err(format!(
                    "[connect.{service}] gives no `issuer` and no endpoint URLs: only an MCP server over HTTP names its authorization server (RFC 9728); give `issuer`, or `authorization_url` and `token_url`"
                ));
            }
            providers.insert(
                service.clone(),
                Provider::new(service, table, config.public_url.as_deref(), env)?,
            );
        }
        Ok(Self {
            providers,
            exchanged: exchange::Cache::default(),
        })
    }

    /// `service`'s provider, when its accounts connect by OAuth.
    pub fn provider(&self, service: &str) -> Option<&Provider> {
        self.providers.get(service)
    }

    /// Whether any service connects by OAuth.
    pub fn any(&self) -> bool {
        !self.providers.is_empty()
    }

    /// Whether `service`'s accounts are connected by a person (a flow), not exchanged
    /// on each call's behalf.
    pub fn by_flow(&self, service: &str) -> bool {
        self.provider(service).is_some_and(|p| !p.exchanges())
    }

    /// Whether `service` is called with each caller's token exchanged (RFC 8693).
    pub fn on_behalf(&self, service: &str) -> bool {
        self.provider(service).is_some_and(Provider::exchanges)
    }
}

/// A connection's two tokens, as sealed.
pub(crate) struct Tokens {
    /// The access token.
    pub access: Zeroizing<String>,
    /// The refresh token, if the provider gave one.
    pub refresh: Option<Zeroizing<String>>,
}

/// The associated data of a connection's seal: a row copied to another user, issuer or
/// service (or into `hub_keys`) does not open.
fn binding(who: Who<'_>) -> Vec<u8> {
    serde_json::to_vec(&["hub-connection/v1", who.issuer, who.subject, who.service])
        .unwrap_or_default()
}

impl Tokens {
    fn seal(&self, cipher: &VaultCipher, who: Who<'_>) -> Option<String> {
        let text = Zeroizing::new(
            json!({ "a": self.access.as_str(), "r": self.refresh.as_deref().map(String::as_str) })
                .to_string(),
        );
        cipher.seal_row(&binding(who), &text)
    }

    fn open(cipher: &VaultCipher, who: Who<'_>, sealed: &str) -> Option<Self> {
        let (text, _) = cipher.open_row(&binding(who), sealed)?;
        let value: Value = serde_json::from_str(&text).ok()?;
        let out = Self {
            access: Zeroizing::new(value.get("a")?.as_str()?.to_string()),
            refresh: value
                .get("r")
                .and_then(Value::as_str)
                .map(|r| Zeroizing::new(r.to_string())),
        };
        if let Value::Object(mut map) = value {
            for v in map.values_mut() {
                if let Value::String(s) = v {
                    zeroize::Zeroize::zeroize(s);
                }
            }
        }
        Some(out)
    }
}

/// A user's key for a service as a connection row names it.
pub(crate) fn who<'a>(user: &'a User, service: &'a str) -> Who<'a> {
    Who {
        issuer: &user.issuer,
        subject: &user.subject,
        service,
    }
}

/// What was done to disconnect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disconnected {
    /// There was no connection.
    Nothing,
    /// Deleted, and revoked at the provider.
    Revoked,
    /// Deleted; the provider has no revocation endpoint.
    NoEndpoint,
    /// Deleted; the provider could not be reached to revoke (logged): the user may
    /// revoke the broker's access in the provider's own settings.
    NotRevoked,
}

impl Hub {
    /// How accounts connect by OAuth, per service.
    pub fn connections(&self) -> &Connections {
        &self.connections
    }

    /// What a provider's work needs: the parts and the vault.
    pub fn reach<'a>(&'a self, parts: &'a Parts) -> provider::Reach<'a> {
        provider::Reach {
            parts,
            cipher: &self.cipher,
        }
    }

    /// Ends the user's connection to `service`: the row deleted, then its tokens
    /// revoked at the provider (RFC 7009: the refresh token, which takes its access
    /// tokens with it, else the access token), audited as `via`.
    pub async fn disconnect(
        &self,
        parts: &Parts,
        user: &User,
        service: &str,
        via: &str,
    ) -> Result<Disconnected, Refused> {
        let Some(provider) = self.connections.provider(service) else {
            return Err(Refused::UnknownService(service.to_string()));
        };
        let key = who(user, service);
        let row = parts.store.delete_connection(key).await.map_err(|e| {
            tracing::error!(error = %e, "hub connection not deleted");
            Refused::Store
        })?;
        let Some(row) = row else {
            return Ok(Disconnected::Nothing);
        };
        let done = match Tokens::open(&self.cipher, key, &row.sealed) {
            Some(tokens) => {
                let (token, hint) = match &tokens.refresh {
                    Some(r) => (r.as_str(), "refresh_token"),
                    None => (tokens.access.as_str(), "access_token"),
                };
                match provider.revoke(self.reach(parts), token, hint).await {
                    Ok(true) => Disconnected::Revoked,
                    Ok(false) => Disconnected::NoEndpoint,
                    Err(e) => {
                        tracing::warn!(service, error = %e, "a disconnected account's tokens could not be revoked at the provider; they are deleted here");
                        Disconnected::NotRevoked
                    }
                }
            }
            None => Disconnected::NotRevoked,
        };
        super::audit(
            parts,
            user,
            service,
            crate::store::audit::Outcome::Disconnected,
            via,
        )
        .await;
        tracing::info!(user = %super::caller_name(user), service, via, revoked = ?done, "hub connection ended");
        Ok(done)
    }

    /// The refusal of a call whose connection the provider no longer honours:
    /// `missing_required_credentials` with the link to connect again.
    pub fn reconnect(
        &self,
        tool: &str,
        service: &str,
        user: &User,
        headers: &hyper::HeaderMap,
        now_ms: i64,
    ) -> crate::error::CallError {
        let Some(url) = self.connect_url(headers, user, service, now_ms) else {
            return crate::error::CallError::internal();
        };
        crate::error::CallError::new(
            crate::error::Classification::MissingRequiredCredentials,
            format!(
                "`{tool}` needs your `{service}` account, whose connection has expired or was revoked at the provider: give the user the link in error.details.connectUrl to connect it again, then call again; nothing was sent upstream"
            ),
        )
        .with_details(json!({ "service": service, "connectUrl": url, "reconnect": true }))
    }
}

/// Re-seals every connection and registered client's secret under the current vault
/// key (`vault rekey`), counted into `done` as stored keys are.
pub(crate) async fn rekey(
    cipher: &VaultCipher,
    store: &crate::store::Store,
    done: &mut super::Rekeyed,
) -> Result<(), crate::store::StoreError> {
    for row in store.oauth_clients_not_under(cipher.current_id()).await? {
        let (Some(old), Some(resealed)) = (&row.sealed, discover::resealed(cipher, &row)) else {
            done.unopened += 1;
            continue;
        };
        if store.reseal_oauth_client(&resealed, old).await? {
            done.resealed += 1;
        } else {
            done.changed_meanwhile += 1;
        }
    }
    let mut after = (String::new(), String::new(), String::new());
    loop {
        let rows = store
            .connections_not_under(cipher.current_id(), (&after.0, &after.1, &after.2), 500)
            .await?;
        let Some(last) = rows.last() else {
            return Ok(());
        };
        after = (
            last.issuer.clone(),
            last.subject.clone(),
            last.service.clone(),
        );
        for row in rows {
            let key = Who {
                issuer: &row.issuer,
                subject: &row.subject,
                service: &row.service,
            };
            let Some(sealed) =
                Tokens::open(cipher, key, &row.sealed).and_then(|t| t.seal(cipher, key))
            else {
                tracing::error!(service = %row.service, key_id = %row.key_id, "a hub connection opens under no vault key given; left as it is");
                done.unopened += 1;
                continue;
            };
            let resealed = Connection {
                sealed,
                key_id: cipher.current_id().to_string(),
                ..row.clone()
            };
            if store.reseal_connection(&resealed, &row.sealed).await? {
                done.resealed += 1;
            } else {
                done.changed_meanwhile += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_pair_opens_only_for_its_user_and_service() {
        let cipher = VaultCipher::new("a-vault-secret-of-at-least-32-characters", &[]).unwrap();
        let tokens = Tokens {
            access: Zeroizing::new("at-1".into()),
            refresh: Some(Zeroizing::new("rt-1".into())),
        };
        let dana = Who {
            issuer: "https://idp",
            subject: "dana",
            service: "crm",
        };
        let sealed = tokens.seal(&cipher, dana).unwrap();
        let opened = Tokens::open(&cipher, dana, &sealed).unwrap();
        assert_eq!(
            (
                opened.access.as_str(),
                opened.refresh.as_deref().map(String::as_str)
            ),
            ("at-1", Some("rt-1"))
        );
        assert!(
            Tokens::open(
                &cipher,
                Who {
                    subject: "eve",
                    ..dana
                },
                &sealed
            )
            .is_none()
        );
        assert!(
            Tokens::open(
                &cipher,
                Who {
                    service: "payments",
                    ..dana
                },
                &sealed
            )
            .is_none()
        );
        // A stored key's binding does not open a connection, nor the reverse.
        let key = cipher
            .seal_row(
                &super::super::cipher::row_binding("https://idp", "dana", "crm"),
                "k",
            )
            .unwrap();
        assert!(Tokens::open(&cipher, dana, &key).is_none());
    }
}
