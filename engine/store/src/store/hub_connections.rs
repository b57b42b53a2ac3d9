//! Accounts connected to the hub by OAuth (decision 020): one row per user and service,
//! holding only what `hub` (broker-core) sealed, and the flows under way.
//!
//! A refresh is coordinated here across replicas without a lock held over the network
//! call: a replica takes the row's lease (one conditional `UPDATE`: free or lapsed),
//! calls the provider, and writes the new tokens, the expiry and the next version in
//! one `UPDATE` that also frees the lease, only while it still holds it. Others see
//! the lease taken and wait for the version to move (or use the token still valid).

use super::{Store, StoreError, on_pool};

/// One connection, its tokens sealed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    /// The user's issuer.
    pub issuer: String,
    /// The user's subject at that issuer.
    pub subject: String,
    /// Service id.
    pub service: String,
    /// The tokens, sealed (base64url of nonce + ciphertext + tag).
    pub sealed: String,
    /// Which vault key sealed them.
    pub key_id: String,
    /// The account at the provider, as it named it (for the page), if it did.
    pub account: Option<String>,
    /// The scopes granted, space-separated.
    pub scopes: String,
    /// When the access token expires (Unix ms), if the provider said.
    pub expires_ms: Option<i64>,
    /// `connected` or `reconnect`.
    pub state: String,
    /// When it was connected (Unix ms).
    pub set_ms: i64,
    /// When it was last refreshed (Unix ms).
    pub refreshed_ms: Option<i64>,
    /// Refreshes since it was connected.
    pub version: i64,
}

/// The state of a connection the provider refused to refresh.
pub const RECONNECT: &str = "reconnect";
/// The state of a live connection.
pub const CONNECTED: &str = "connected";

type Row = (
    String,
    String,
    String,
    String,
    String,
    Option<String>,
    String,
    Option<i64>,
    String,
    i64,
    Option<i64>,
    i64,
);

/// The columns of a [`Connection`], in its order (a literal, so queries stay static).
macro_rules! columns {
    () => {
        "issuer, subject, service, sealed, key_id, account, scopes, expires_ms, state, set_ms, refreshed_ms, version"
    };
}

fn row(r: Row) -> Connection {
    Connection {
        issuer: r.0,
        subject: r.1,
        service: r.2,
        sealed: r.3,
        key_id: r.4,
        account: r.5,
        scopes: r.6,
        expires_ms: r.7,
        state: r.8,
        set_ms: r.9,
        refreshed_ms: r.10,
        version: r.11,
    }
}

/// An authorization flow under way: who started it, from which session, for which
/// service, and its sealed PKCE verifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flow {
    /// The `state` parameter.
    pub id: String,
    /// The user's issuer.
    pub issuer: String,
    /// The user's subject.
    pub subject: String,
    /// Service id.
    pub service: String,
    /// SHA-256 (hex) of the hub session's id that started it.
    pub session: String,
    /// The sealed verifier.
    pub sealed: String,
    /// When it lapses (Unix ms).
    pub expires_ms: i64,
}

/// A connection's primary key.
#[derive(Debug, Clone, Copy)]
pub struct Who<'a> {
    /// The user's issuer.
    pub issuer: &'a str,
    /// The user's subject.
    pub subject: &'a str,
    /// Service id.
    pub service: &'a str,
}

impl Store {
    /// Stores (or replaces) a connection, its lease free and its version 0; `true` when
    /// one was there before.
    pub async fn put_connection(&self, c: &Connection) -> Result<bool, StoreError> {
        let who = Who {
            issuer: &c.issuer,
            subject: &c.subject,
            service: &c.service,
        };
        let existed = self.connection(who).await?.is_some();
        let sql = "INSERT INTO hub_connections (issuer, subject, service, sealed, key_id, account, \
                   scopes, expires_ms, state, set_ms, refreshed_ms, version, lease_holder, lease_until) \
                   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULL, 0, NULL, NULL) \
                   ON CONFLICT (issuer, subject, service) DO UPDATE SET \
                   sealed = excluded.sealed, key_id = excluded.key_id, account = excluded.account, \
                   scopes = excluded.scopes, expires_ms = excluded.expires_ms, state = excluded.state, \
                   set_ms = excluded.set_ms, refreshed_ms = NULL, \
                   version = hub_connections.version + 1, lease_holder = NULL, lease_until = NULL";
        on_pool!(self, pool => sqlx::query(sql)
            .bind(&c.issuer)
            .bind(&c.subject)
            .bind(&c.service)
            .bind(&c.sealed)
            .bind(&c.key_id)
            .bind(&c.account)
            .bind(&c.scopes)
            .bind(c.expires_ms)
            .bind(&c.state)
            .bind(c.set_ms)
            .execute(pool)
            .await
            .map(|_| ())
            .map_err(|e| self.failed("store a hub connection", &e)))?;
        Ok(existed)
    }

    /// A user's connection to a service.
    pub async fn connection(&self, who: Who<'_>) -> Result<Option<Connection>, StoreError> {
        let sql = concat!(
            "SELECT ",
            columns!(),
            " FROM hub_connections WHERE issuer = $1 AND subject = $2 AND service = $3"
        );
        let found: Option<Row> = on_pool!(self, pool => sqlx::query_as(sql)
            .bind(who.issuer)
            .bind(who.subject)
            .bind(who.service)
            .fetch_optional(pool)
            .await
            .map_err(|e| self.failed("read a hub connection", &e)))?;
        Ok(found.map(row))
    }

    /// Every connection of a user, by service.
    pub async fn connections_of(
        &self,
        issuer: &str,
        subject: &str,
    ) -> Result<Vec<Connection>, StoreError> {
        let sql = concat!(
            "SELECT ",
            columns!(),
            " FROM hub_connections WHERE issuer = $1 AND subject = $2 ORDER BY service"
        );
        let rows: Vec<Row> = on_pool!(self, pool => sqlx::query_as(sql)
            .bind(issuer)
            .bind(subject)
            .fetch_all(pool)
            .await
            .map_err(|e| self.failed("list hub connections", &e)))?;
        Ok(rows.into_iter().map(row).collect())
    }

    /// Every connection (for the console), at most `limit`, in key order.
    pub async fn all_connections(&self, limit: i64) -> Result<Vec<Connection>, StoreError> {
        let sql = concat!(
            "SELECT ",
            columns!(),
            " FROM hub_connections ORDER BY issuer, subject, service LIMIT $1"
        );
        let rows: Vec<Row> = on_pool!(self, pool => sqlx::query_as(sql)
            .bind(limit)
            .fetch_all(pool)
            .await
            .map_err(|e| self.failed("list hub connections", &e)))?;
        Ok(rows.into_iter().map(row).collect())
    }

    /// Takes the refresh lease of a connection for `holder` until `until_ms`, when it
    /// is free or lapsed at `now_ms` and the row is still at `version`; `true` when
    /// taken.
    pub async fn take_connection_lease(
        &self,
        who: Who<'_>,
        version: i64,
        holder: &str,
        now_ms: i64,
        until_ms: i64,
    ) -> Result<bool, StoreError> {
        let sql = "UPDATE hub_connections SET lease_holder = $1, lease_until = $2 \
                   WHERE issuer = $3 AND subject = $4 AND service = $5 AND version = $6 \
                   AND (lease_until IS NULL OR lease_until < $7)";
        let rows = on_pool!(self, pool => sqlx::query(sql)
            .bind(holder)
            .bind(until_ms)
            .bind(who.issuer)
            .bind(who.subject)
            .bind(who.service)
            .bind(version)
            .bind(now_ms)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
            .map_err(|e| self.failed("take a hub connection's refresh lease", &e)))?;
        Ok(rows == 1)
    }

    /// Writes a refresh's tokens (sealed together: the rotated refresh token beside its
    /// access token), expiry and scopes, moves the version on and frees the lease, in
    /// one statement, only while `holder` holds the lease; `true` when written.
    pub async fn refreshed_connection(
        &self,
        c: &Connection,
        holder: &str,
    ) -> Result<bool, StoreError> {
        let sql = "UPDATE hub_connections SET sealed = $1, key_id = $2, scopes = $3, \
                   expires_ms = $4, refreshed_ms = $5, state = 'connected', \
                   version = version + 1, lease_holder = NULL, lease_until = NULL \
                   WHERE issuer = $6 AND subject = $7 AND service = $8 AND lease_holder = $9";
        let rows = on_pool!(self, pool => sqlx::query(sql)
            .bind(&c.sealed)
            .bind(&c.key_id)
            .bind(&c.scopes)
            .bind(c.expires_ms)
            .bind(c.refreshed_ms)
            .bind(&c.issuer)
            .bind(&c.subject)
            .bind(&c.service)
            .bind(holder)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
            .map_err(|e| self.failed("store a refreshed hub connection", &e)))?;
        Ok(rows == 1)
    }

    /// Ends `holder`'s lease, marking the connection `state` (`connected` to leave it
    /// as it was, [`RECONNECT`] when the provider refused its refresh token).
    pub async fn release_connection_lease(
        &self,
        who: Who<'_>,
        holder: &str,
        state: &str,
    ) -> Result<bool, StoreError> {
        let sql = "UPDATE hub_connections SET lease_holder = NULL, lease_until = NULL, state = $1, \
                   version = CASE WHEN $1 = state THEN version ELSE version + 1 END \
                   WHERE issuer = $2 AND subject = $3 AND service = $4 AND lease_holder = $5";
        let rows = on_pool!(self, pool => sqlx::query(sql)
            .bind(state)
            .bind(who.issuer)
            .bind(who.subject)
            .bind(who.service)
            .bind(holder)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
            .map_err(|e| self.failed("release a hub connection's refresh lease", &e)))?;
        Ok(rows == 1)
    }

    /// Deletes a connection; the row deleted (its sealed tokens, to revoke), if any.
    pub async fn delete_connection(&self, who: Who<'_>) -> Result<Option<Connection>, StoreError> {
        let sql = concat!(
            "DELETE FROM hub_connections WHERE issuer = $1 AND subject = $2 AND service = $3 \
             RETURNING ",
            columns!(),
            ""
        );
        let found: Option<Row> = on_pool!(self, pool => sqlx::query_as(sql)
            .bind(who.issuer)
            .bind(who.subject)
            .bind(who.service)
            .fetch_optional(pool)
            .await
            .map_err(|e| self.failed("delete a hub connection", &e)))?;
        Ok(found.map(row))
    }

    /// Up to `limit` connections sealed under another key than `current`, in key order
    /// after `after`, for `vault rekey`.
    pub async fn connections_not_under(
        &self,
        current: &str,
        after: (&str, &str, &str),
        limit: i64,
    ) -> Result<Vec<Connection>, StoreError> {
        let sql = concat!(
            "SELECT ",
            columns!(),
            " FROM hub_connections WHERE key_id <> $1 \
             AND (issuer, subject, service) > ($2, $3, $4) ORDER BY issuer, subject, service LIMIT $5"
        );
        let rows: Vec<Row> = on_pool!(self, pool => sqlx::query_as(sql)
            .bind(current)
            .bind(after.0)
            .bind(after.1)
            .bind(after.2)
            .bind(limit)
            .fetch_all(pool)
            .await
            .map_err(|e| self.failed("read hub connections to re-seal", &e)))?;
        Ok(rows.into_iter().map(row).collect())
    }

    /// Replaces a connection's seal when it is still the one read; `true` when done.
    pub async fn reseal_connection(
        &self,
        c: &Connection,
        old_sealed: &str,
    ) -> Result<bool, StoreError> {
        let sql = "UPDATE hub_connections SET sealed = $1, key_id = $2 \
                   WHERE issuer = $3 AND subject = $4 AND service = $5 AND sealed = $6";
        let rows = on_pool!(self, pool => sqlx::query(sql)
            .bind(&c.sealed)
            .bind(&c.key_id)
            .bind(&c.issuer)
            .bind(&c.subject)
            .bind(&c.service)
            .bind(old_sealed)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
            .map_err(|e| self.failed("re-seal a hub connection", &e)))?;
        Ok(rows == 1)
    }

    /// Records a flow under way (and drops the lapsed ones).
    pub async fn put_oauth_flow(&self, f: &Flow, now_ms: i64) -> Result<(), StoreError> {
        on_pool!(self, pool => sqlx::query("DELETE FROM hub_oauth_flows WHERE expires_ms < $1")
            .bind(now_ms)
            .execute(pool)
            .await
            .map(|_| ())
            .map_err(|e| self.failed("prune hub authorization flows", &e)))?;
        let sql = "INSERT INTO hub_oauth_flows (id, issuer, subject, service, session, sealed, expires_ms) \
                   VALUES ($1, $2, $3, $4, $5, $6, $7)";
        on_pool!(self, pool => sqlx::query(sql)
            .bind(&f.id)
            .bind(&f.issuer)
            .bind(&f.subject)
            .bind(&f.service)
            .bind(&f.session)
            .bind(&f.sealed)
            .bind(f.expires_ms)
            .execute(pool)
            .await
            .map(|_| ())
            .map_err(|e| self.failed("store a hub authorization flow", &e)))
    }

    /// Takes a flow once: the row is deleted as it is read, so a `state` replayed finds
    /// nothing. A lapsed flow reads as none.
    pub async fn take_oauth_flow(&self, id: &str, now_ms: i64) -> Result<Option<Flow>, StoreError> {
        let sql = "DELETE FROM hub_oauth_flows WHERE id = $1 \
                   RETURNING id, issuer, subject, service, session, sealed, expires_ms";
        let found: Option<(String, String, String, String, String, String, i64)> = on_pool!(self, pool => sqlx::query_as(sql)
                .bind(id)
                .fetch_optional(pool)
                .await
                .map_err(|e| self.failed("take a hub authorization flow", &e)))?;
        Ok(found.filter(|f| f.6 >= now_ms).map(|f| Flow {
            id: f.0,
            issuer: f.1,
            subject: f.2,
            service: f.3,
            session: f.4,
            sealed: f.5,
            expires_ms: f.6,
        }))
    }
}

/// A client the broker registered at an authorization server (RFC 7591).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthClient {
    /// The service it is for.
    pub service: String,
    /// The authorization server.
    pub issuer: String,
    /// The client id it was given.
    pub client_id: String,
    /// Its secret, sealed; `None` for a public client.
    pub sealed: Option<String>,
    /// `client_secret_basic`, `client_secret_post` or `none`.
    pub auth_method: String,
    /// Which vault key sealed the secret.
    pub key_id: String,
    /// When it was registered (Unix ms).
    pub registered_ms: i64,
}

type ClientRow = (String, String, String, Option<String>, String, String, i64);

fn client(r: ClientRow) -> OAuthClient {
    OAuthClient {
        service: r.0,
        issuer: r.1,
        client_id: r.2,
        sealed: r.3,
        auth_method: r.4,
        key_id: r.5,
        registered_ms: r.6,
    }
}

impl Store {
    /// The client registered for `service` at `issuer`, if one is.
    pub async fn oauth_client(
        &self,
        service: &str,
        issuer: &str,
    ) -> Result<Option<OAuthClient>, StoreError> {
        let sql = "SELECT service, issuer, client_id, sealed, auth_method, key_id, registered_ms \
                   FROM hub_oauth_clients WHERE service = $1 AND issuer = $2";
        let found: Option<ClientRow> = on_pool!(self, pool => sqlx::query_as(sql)
            .bind(service)
            .bind(issuer)
            .fetch_optional(pool)
            .await
            .map_err(|e| self.failed("read a registered client", &e)))?;
        Ok(found.map(client))
    }

    /// Keeps a registered client unless another replica kept one first; `true` when
    /// this one was kept (read [`Store::oauth_client`] either way).
    pub async fn put_oauth_client(&self, c: &OAuthClient) -> Result<bool, StoreError> {
        let sql = "INSERT INTO hub_oauth_clients (service, issuer, client_id, sealed, auth_method, key_id, registered_ms) \
                   VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (service, issuer) DO NOTHING";
        let rows = on_pool!(self, pool => sqlx::query(sql)
            .bind(&c.service)
            .bind(&c.issuer)
            .bind(&c.client_id)
            .bind(&c.sealed)
            .bind(&c.auth_method)
            .bind(&c.key_id)
            .bind(c.registered_ms)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
            .map_err(|e| self.failed("store a registered client", &e)))?;
        Ok(rows == 1)
    }
}

impl Store {
    /// Every registered client sealed under another key than `current` (few: one per
    /// service and server), for `vault rekey`.
    pub async fn oauth_clients_not_under(
        &self,
        current: &str,
    ) -> Result<Vec<OAuthClient>, StoreError> {
        let sql = "SELECT service, issuer, client_id, sealed, auth_method, key_id, registered_ms \
                   FROM hub_oauth_clients WHERE key_id <> $1 AND sealed IS NOT NULL ORDER BY service, issuer";
        let rows: Vec<ClientRow> = on_pool!(self, pool => sqlx::query_as(sql)
            .bind(current)
            .fetch_all(pool)
            .await
            .map_err(|e| self.failed("read registered clients to re-seal", &e)))?;
        Ok(rows.into_iter().map(client).collect())
    }

    /// Replaces a registered client's sealed secret when it is still the one read.
    pub async fn reseal_oauth_client(
        &self,
        c: &OAuthClient,
        old_sealed: &str,
    ) -> Result<bool, StoreError> {
        let sql = "UPDATE hub_oauth_clients SET sealed = $1, key_id = $2 \
                   WHERE service = $3 AND issuer = $4 AND sealed = $5";
        let rows = on_pool!(self, pool => sqlx::query(sql)
            .bind(&c.sealed)
            .bind(&c.key_id)
            .bind(&c.service)
            .bind(&c.issuer)
            .bind(old_sealed)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
            .map_err(|e| self.failed("re-seal a registered client", &e)))?;
        Ok(rows == 1)
    }
}

impl Store {
    /// How many connections each service has in each state (`connected`, `reconnect`),
    /// for `/metrics`.
    pub async fn connection_counts(&self) -> Result<Vec<(String, String, i64)>, StoreError> {
        let sql = "SELECT service, state, COUNT(*) FROM hub_connections GROUP BY service, state ORDER BY service, state";
        on_pool!(self, pool => sqlx::query_as(sql)
            .fetch_all(pool)
            .await
            .map_err(|e| self.failed("count hub connections", &e)))
    }
}
