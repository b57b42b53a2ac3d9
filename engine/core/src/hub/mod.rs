//! The hub (decision 012): each user's upstream keys, stored once, sealed at
//! rest, never shown again, used for that user's calls that carry no key header, and
//! asked for by URL when missing.
//!
//! - `cipher`: the vault's keys (AES-256-GCM, HKDF-derived from `vault_key_env`, the
//!   previous ones still open; rows bound to issuer, subject and service).
//! - this module: [`Hub`], what calls and the endpoints ask of it: a user's key for a
//!   service, storing, replacing and deleting one (audited, never the value), the list
//!   without values, the connect link a missing key answers, `vault rekey`.
//! - `connect`: accounts connected by OAuth (`[connect.<service>]`): the flow, the
//!   tokens refreshed across replicas, disconnecting (decision 020).
//! - `signin`: the broker as a confidential OpenID client of the `[oauth]` provider
//!   (code + PKCE), the hub session cookie.
//! - `token_endpoint`: an authorization server's metadata and token endpoint, as a
//!   client (shared by `signin` and `connect`).
//! - `view`: what the pages share (`HubCx`, redirects, refusals).
//! - `page`: the server-rendered pages (`/hub`, `/hub/connect/<service>`), CSRF-protected.
//! - `api`: the JSON API (`GET /hub/keys`, `PUT|DELETE /hub/keys/<service>`).
//!
//! May import: the catalog, config, callers, the store, the parts, the approval page's
//! HTML helpers, telemetry and [`crate::error`]. The call driver reads keys through it;
//! the endpoints route to its pages and API.

pub mod api;
pub mod cipher;
pub mod connect;
pub mod page;
pub mod signin;
pub mod token_endpoint;
pub mod view;

use hyper::HeaderMap;
use serde_json::{Value, json};
use zeroize::Zeroizing;

use crate::caller::User;
use crate::catalog::Catalog;
use crate::config::ConfigFile;
use crate::error::{CallError, Classification};
use crate::run::Parts;
use crate::store::hub_keys::SealedKey;
use cipher::{VaultCipher, row_binding};

/// The longest key the hub stores (bytes).
pub const MAX_KEY_BYTES: usize = 4096;
/// How long a connect link (and its MCP request state) is good for.
pub const CONNECT_TTL_MS: i64 = 30 * 60 * 1000;
/// Statement purposes.
pub(crate) const CONNECT_PURPOSE: &str = "hub-connect";
/// The MCP request state of a connect round.
pub const ROUND_PURPOSE: &str = "hub-connect-round";

/// The hub of a deployment with `vault_key_env`.
pub struct Hub {
    /// The vault's keys.
    pub cipher: VaultCipher,
    /// How people sign in to the pages (`[oauth.sign_in]`).
    pub sign_in: Option<signin::SignIn>,
    public_url: Option<String>,
    /// How cookies are written (from `public_url`).
    pub site: crate::confirm::session::Site,
    /// How long sessions live and may idle.
    pub times: crate::confirm::session::Times,
    /// The services whose callers bring their own key (a credential header), by id.
    services: Vec<String>,
    /// The services whose accounts connect by OAuth.
    connections: connect::Connections,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("cipher", &self.cipher)
            .field("services", &self.services)
            .finish_non_exhaustive()
    }
}

/// One service as the hub lists it: whether a key is stored and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Service id.
    pub service: String,
    /// When the key was stored (RFC 3339), if one is.
    pub set_at: Option<String>,
    /// Whether its accounts connect by OAuth (`[connect.<service>]`).
    pub connects: bool,
    /// Whether it is called with the caller's own token exchanged (nothing to connect).
    pub on_behalf: bool,
    /// The account connected, if one is.
    pub connection: Option<Linked>,
}

/// A connected account as the hub lists it (never a token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Linked {
    /// The account at the provider, as it named it.
    pub account: Option<String>,
    /// The scopes granted, space-separated.
    pub scopes: String,
    /// When it was connected (RFC 3339).
    pub since: String,
    /// When its access token expires (RFC 3339), if the provider said.
    pub expires_at: Option<String>,
    /// Whether the provider refused its refresh token (the user must connect again).
    pub needs_reconnect: bool,
}

fn rfc3339(ms: i64) -> Option<String> {
    jiff::Timestamp::from_millisecond(ms)
        .ok()
        .map(|t| t.to_string())
}

impl Linked {
    fn of(c: &crate::store::hub_connections::Connection) -> Self {
        Self {
            account: c.account.clone(),
            scopes: c.scopes.clone(),
            since: rfc3339(c.set_ms).unwrap_or_default(),
            expires_at: c.expires_ms.and_then(rfc3339),
            needs_reconnect: c.state == crate::store::hub_connections::RECONNECT,
        }
    }
}

/// Why the hub refused to store or delete.
#[derive(Debug)]
pub enum Refused {
    /// Not a service whose callers bring a key, or one the user may not use.
    UnknownService(String),
    /// The key is empty, too long or has characters a header cannot carry.
    BadKey(&'static str),
    /// The store failed (logged).
    Store,
}

impl Refused {
    /// The message a person reads (never the key).
    pub fn message(&self) -> String {
        match self {
            Self::UnknownService(s) => format!(
                "`{s}` is not a service whose calls take your own key, or your account may not use it"
            ),
            Self::BadKey(why) => (*why).to_string(),
            Self::Store => "the hub cannot store keys right now (its store does not answer); nothing was changed; retry shortly".into(),
        }
    }
}

/// The secret a variable names, read once at start.
fn secret_of(
    env: &dyn Fn(&str) -> Option<String>,
    name: &str,
    what: &str,
) -> Result<String, String> {
    env(name)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| format!("{what} names the variable `{name}`, which is empty or not set"))
}

impl Hub {
    /// The hub of `config`: `None` without `vault_key_env`. Refused at start: a short
    /// or missing secret, a vault without `[oauth]` (the hub keeps keys per user), a bad
    /// `[oauth.sign_in]`.
    pub fn new(
        config: &ConfigFile,
        catalog: &Catalog,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, String> {
        let Some(cipher) = Self::cipher(config, env)? else {
            if !config.connect.is_empty() {
                return Err("[connect.*] is for the hub, which needs `vault_key_env` (the key that seals connected accounts' tokens)".into());
            }
            if config.oauth.as_ref().is_some_and(|o| o.sign_in.is_some()) {
                return Err("[oauth.sign_in] is for the hub, which needs `vault_key_env` (the key that seals users' keys)".into());
            }
            return Ok(None);
        };
        let Some(oauth) = &config.oauth else {
            return Err("`vault_key_env` turns on the hub, which keeps keys per user: it needs an [oauth] table (docs/hub.md)".into());
        };
        let sign_in = match &oauth.sign_in {
            Some(s) => {
                if config.public_url.is_none() {
                    return Err("[oauth.sign_in] needs public_url (e.g. public_url = \"https://broker.example.com\"): the sign-in's redirect URL and its cookies (Secure, __Host-) come from the broker's public address, never from a request's headers".into());
                }
                Some(signin::SignIn::new(s, &oauth.issuer, env)?)
            }
            None => None,
        };
        let services: Vec<String> = catalog
            .services
            .values()
            .filter(|s| s.headers.caller_key.is_some())
            .map(|s| s.id.clone())
            .collect();
        let mcp_http: Vec<String> = catalog
            .services
            .values()
            .filter(|s| {
                s.mcp
                    .as_ref()
                    .is_some_and(|m| m.transport == crate::catalog::mcp::Transport::Http)
            })
            .map(|s| s.id.clone())
            .collect();
        let connections = connect::Connections::new(config, &services, &mcp_http, env)?;
        if connections.any() && sign_in.is_none() {
            return Err("[connect.*] needs [oauth.sign_in] and public_url: an account is connected by a person signed in to the hub, and the provider's redirect URL is public_url + /hub/oauth/<service>/callback".into());
        }
        Ok(Some(Self {
            cipher,
            sign_in,
            public_url: config.public_url.clone(),
            site: crate::confirm::session::Site::of(config.public_url.as_deref()),
            times: crate::confirm::session_times(config)?,
            services,
            connections,
        }))
    }

    /// The vault cipher of `config` alone (for `vault rekey`); `None` without
    /// `vault_key_env`.
    pub fn cipher(
        config: &ConfigFile,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<VaultCipher>, String> {
        let Some(name) = &config.vault_key_env else {
            return Ok(None);
        };
        let secret = Zeroizing::new(secret_of(env, name, "vault_key_env")?);
        let previous = config
            .vault_previous_key_envs
            .iter()
            .map(|n| secret_of(env, n, "vault_previous_key_envs").map(Zeroizing::new))
            .collect::<Result<Vec<_>, _>>()?;
        VaultCipher::new(&secret, &previous).map(Some)
    }

    /// Whether `service`'s callers bring their own key.
    pub fn holds(&self, service: &str) -> bool {
        self.services.iter().any(|s| s == service)
    }

    /// The services whose callers bring their own key.
    pub fn services(&self) -> &[String] {
        &self.services
    }

    /// The user's key for `service`, opened; `Ok(None)` when none is stored or the row
    /// does not open (logged: moved between users, or sealed under a key this
    /// deployment lost).
    pub async fn key_for(
        &self,
        parts: &Parts,
        user: &User,
        service: &str,
    ) -> Result<Option<Zeroizing<String>>, CallError> {
        let row = parts
            .store
            .hub_key(&user.issuer, &user.subject, service)
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "hub store unavailable");
                CallError::new(
                    Classification::NotConfigured,
                    "the broker cannot read your stored keys right now (its store does not answer); nothing was sent; retry shortly",
                )
            })?;
        let Some(row) = row else {
            return Ok(None);
        };
        let binding = row_binding(&user.issuer, &user.subject, service);
        match self.cipher.open_row(&binding, &row.sealed) {
            Some((key, _)) => Ok(Some(key)),
            None => {
                tracing::error!(service, key_id = %row.key_id, "a stored hub key does not open: altered, moved to another user, or sealed under a vault key this deployment no longer has; the user must store it again");
                Ok(None)
            }
        }
    }

    /// What a call of `service` for `user` carries from the hub: its connected
    /// account's access token (refreshed first when near expiry; for an on-behalf-of
    /// service, the caller's `subject_token` exchanged), else the key the user stored.
    pub async fn credential_for(
        &self,
        parts: &Parts,
        user: &User,
        service: &str,
        subject_token: Option<&str>,
    ) -> Result<Stored, CallError> {
        use connect::refresh::Token;
        match self
            .connection_token(parts, user, service, subject_token)
            .await?
        {
            Token::Live(token) => {
                let bearer = self.connections.provider(service).is_some_and(|p| {
                    p.placement() == crate::config::connect::TokenPlacement::Bearer
                });
                Ok(Stored::Token { token, bearer })
            }
            Token::Reconnect => Ok(Stored::Reconnect),
            Token::None => Ok(match self.key_for(parts, user, service).await? {
                Some(key) => Stored::Key(key),
                None => Stored::None,
            }),
        }
    }

    /// The services the user has a key stored for (rows present; nothing opened). A
    /// store failure is logged and reads as none.
    pub async fn stored_services(&self, parts: &Parts, user: &User) -> Vec<String> {
        match parts.store.hub_keys_of(&user.issuer, &user.subject).await {
            Ok(rows) => rows.into_iter().map(|r| r.service).collect(),
            Err(e) => {
                tracing::error!(error = %e, "hub store unavailable; stored keys not reported");
                Vec::new()
            }
        }
    }

    /// What the user may see in the hub: each service whose callers bring a key and
    /// that `may_use` allows, with when its key was stored.
    pub async fn list(
        &self,
        parts: &Parts,
        user: &User,
        may_use: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<Vec<Entry>, Refused> {
        let down = |e: crate::store::StoreError| {
            tracing::error!(error = %e, "hub store unavailable");
            Refused::Store
        };
        let rows = parts
            .store
            .hub_keys_of(&user.issuer, &user.subject)
            .await
            .map_err(down)?;
        let linked = if self.connections.any() {
            parts
                .store
                .connections_of(&user.issuer, &user.subject)
                .await
                .map_err(down)?
        } else {
            Vec::new()
        };
        Ok(self
            .services
            .iter()
            .filter(|s| may_use(s))
            .map(|s| Entry {
                service: s.clone(),
                set_at: rows
                    .iter()
                    .find(|r| &r.service == s)
                    .and_then(|r| rfc3339(r.set_ms)),
                connects: self.connections.by_flow(s),
                on_behalf: self.connections.on_behalf(s),
                connection: linked.iter().find(|c| &c.service == s).map(Linked::of),
            })
            .collect())
    }

    /// Stores or replaces the user's key for `service` (audited as `via`, never the
    /// value); `true` when it replaced one.
    pub async fn put(
        &self,
        parts: &Parts,
        user: &User,
        service: &str,
        key: &str,
        via: &str,
    ) -> Result<bool, Refused> {
        if !self.holds(service) {
            return Err(Refused::UnknownService(service.to_string()));
        }
        let key = check_key(key)?;
        let binding = row_binding(&user.issuer, &user.subject, service);
        let sealed = self.cipher.seal_row(&binding, key).ok_or(Refused::Store)?;
        let row = SealedKey {
            issuer: user.issuer.clone(),
            subject: user.subject.clone(),
            service: service.to_string(),
            sealed,
            key_id: self.cipher.current_id().to_string(),
            set_ms: parts.now().as_millisecond(),
        };
        let replaced = parts.store.put_hub_key(&row).await.map_err(|e| {
            tracing::error!(error = %e, "hub key not stored");
            Refused::Store
        })?;
        use crate::store::audit::Outcome;
        let outcome = if replaced {
            Outcome::KeyReplaced
        } else {
            Outcome::KeyStored
        };
        audit(parts, user, service, outcome, via).await;
        tracing::info!(user = %caller_name(user), service, replaced, via, "hub key stored");
        Ok(replaced)
    }

    /// Deletes the user's key for `service` (audited when there was one), and ends
    /// its connected account (revoked at the provider: [`Hub::disconnect`]); `true`
    /// when there was either.
    pub async fn delete(
        &self,
        parts: &Parts,
        user: &User,
        service: &str,
        via: &str,
    ) -> Result<bool, Refused> {
        if !self.holds(service) {
            return Err(Refused::UnknownService(service.to_string()));
        }
        let disconnected = match self.connections.provider(service) {
            Some(_) => {
                self.disconnect(parts, user, service, via).await? != connect::Disconnected::Nothing
            }
            None => false,
        };
        let deleted = parts
            .store
            .delete_hub_key(&user.issuer, &user.subject, service)
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "hub key not deleted");
                Refused::Store
            })?;
        if deleted {
            audit(
                parts,
                user,
                service,
                crate::store::audit::Outcome::KeyDeleted,
                via,
            )
            .await;
            tracing::info!(user = %caller_name(user), service, via, "hub key deleted");
        }
        Ok(deleted || disconnected)
    }

    /// The broker's public base: `public_url`, else the host the request came to
    /// (`https` when a proxy says so).
    pub fn base_url(&self, headers: &HeaderMap) -> String {
        crate::caller::origin::public_base(self.public_url.as_deref(), headers)
    }

    /// The link where `user` stores their `service` key: `/hub/connect/<service>` with
    /// a sealed state naming the user, so the page stores only for them.
    pub fn connect_url(
        &self,
        headers: &HeaderMap,
        user: &User,
        service: &str,
        now_ms: i64,
    ) -> Option<String> {
        let state = self.cipher.seal_statement(
            CONNECT_PURPOSE,
            &json!({ "iss": user.issuer, "sub": user.subject, "svc": service, "exp": now_ms + CONNECT_TTL_MS }),
        )?;
        Some(format!(
            "{}/hub/connect/{service}?state={state}",
            self.base_url(headers)
        ))
    }

    /// The refusal of a call that needs `user`'s `service` key and has none:
    /// `missing_required_credentials` with `details.connectUrl`.
    pub fn missing_key(
        &self,
        tool: &str,
        service: &str,
        header: &str,
        user: &User,
        headers: &HeaderMap,
        now_ms: i64,
    ) -> CallError {
        let Some(url) = self.connect_url(headers, user, service, now_ms) else {
            return CallError::internal();
        };
        CallError::new(
            Classification::MissingRequiredCredentials,
            format!(
                "`{tool}` needs your `{service}` key and none is stored for you: give the user the link in error.details.connectUrl to store it once (or send it in the `{header}` request header), then call again; nothing was sent upstream"
            ),
        )
        .with_details(json!({ "service": service, "connectUrl": url }))
    }

    /// Re-seals every stored key under the current vault key (`tool-broker vault
    /// rekey`): rows under a previous key are opened and sealed anew; a row no key opens
    /// is counted and left.
    pub async fn rekey(
        cipher: &VaultCipher,
        store: &crate::store::Store,
    ) -> Result<Rekeyed, crate::store::StoreError> {
        let mut done = Rekeyed::default();
        let mut after = (String::new(), String::new(), String::new());
        loop {
            let rows = store
                .hub_keys_not_under(cipher.current_id(), (&after.0, &after.1, &after.2), 500)
                .await?;
            let Some(last) = rows.last() else {
                connect::rekey(cipher, store, &mut done).await?;
                return Ok(done);
            };
            after = (
                last.issuer.clone(),
                last.subject.clone(),
                last.service.clone(),
            );
            for row in rows {
                let binding = row_binding(&row.issuer, &row.subject, &row.service);
                let Some((key, _)) = cipher.open_row(&binding, &row.sealed) else {
                    tracing::error!(service = %row.service, key_id = %row.key_id, "a stored hub key opens under no vault key given; left as it is");
                    done.unopened += 1;
                    continue;
                };
                let Some(sealed) = cipher.seal_row(&binding, &key) else {
                    done.unopened += 1;
                    continue;
                };
                let resealed = SealedKey {
                    sealed,
                    key_id: cipher.current_id().to_string(),
                    ..row.clone()
                };
                if store.reseal_hub_key(&resealed, &row.sealed).await? {
                    done.resealed += 1;
                } else {
                    done.changed_meanwhile += 1;
                }
            }
        }
    }
}

/// What the hub holds for a call.
pub enum Stored {
    /// Nothing: no connection, no key.
    None,
    /// A key the user stored.
    Key(Zeroizing<String>),
    /// A connected account's access token; `bearer`: it goes in `Authorization:
    /// Bearer` rather than where the service's key goes.
    Token {
        /// The access token.
        token: Zeroizing<String>,
        /// Its placement.
        bearer: bool,
    },
    /// The connection needs the user to connect again.
    Reconnect,
}

/// What `vault rekey` did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Rekeyed {
    /// Rows sealed anew under the current key.
    pub resealed: u64,
    /// Rows no given key opens (left as they are).
    pub unopened: u64,
    /// Rows the user replaced or deleted while they were re-sealed (left to the user).
    pub changed_meanwhile: u64,
}

/// `<issuer>#<subject>`: how the audit and the log name a user.
pub fn caller_name(user: &User) -> String {
    format!("{}#{}", user.issuer, user.subject)
}

/// A key as given, trimmed: not empty, at most [`MAX_KEY_BYTES`], visible ASCII only
/// (it travels in a header or a query parameter).
fn check_key(key: &str) -> Result<&str, Refused> {
    let key = key.trim();
    if key.is_empty() {
        return Err(Refused::BadKey("the key is empty"));
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(Refused::BadKey("the key is longer than 4096 bytes"));
    }
    if !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Refused::BadKey(
            "the key may hold only visible ASCII characters (no spaces or control characters)",
        ));
    }
    Ok(key)
}

async fn audit(
    parts: &Parts,
    user: &User,
    service: &str,
    outcome: crate::store::audit::Outcome,
    via: &str,
) {
    use crate::store::audit::AuditRecord;
    let record = AuditRecord {
        seq: 0,
        at: parts.now().to_string(),
        key_name: caller_name(user),
        tool: format!("hub/keys/{service}"),
        descriptor_hash: String::new(),
        catalog_version: parts
            .catalog
            .services
            .get(service)
            .map(|s| s.catalog_version.clone())
            .unwrap_or_default(),
        args_sha256: String::new(),
        outcome,
        upstream_status: None,
        classification: "ok".into(),
        trace_id: String::new(),
        duration_ms: 0,
        confirmation: Some(via.to_string()),
        guards: None,
        policies: None,
        cost: None,
    };
    if let Err(e) = parts.store.append_audit(&record).await {
        tracing::error!(error = %e, "hub key change not audited");
    }
}

/// The JSON of a list entry: `{"service", "present", "setAt"}`.
pub fn entry_json(e: &Entry) -> Value {
    let connection = e.connection.as_ref().map(|c| {
        json!({
            "account": c.account, "scopes": c.scopes, "since": c.since,
            "expiresAt": c.expires_at, "needsReconnect": c.needs_reconnect,
        })
    });
    json!({
        "service": e.service, "present": e.set_at.is_some(), "setAt": e.set_at,
        "connects": e.connects, "onBehalfOf": e.on_behalf, "connection": connection,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_must_be_one_visible_ascii_word() {
        assert_eq!(check_key("  sk_live_1 \n").ok(), Some("sk_live_1"));
        for bad in ["", "   ", "two words", "tab\there", "ключ"] {
            assert!(check_key(bad).is_err(), "{bad:?}");
        }
        assert!(check_key(&"k".repeat(MAX_KEY_BYTES + 1)).is_err());
    }
}
