//! The hub's sealed keys (decision 012): one row per user and service, holding
//! only what `hub` (broker-core) sealed. Nothing here can read a key: the store never sees
//! the vault key. A replace is one upsert, so two replicas storing at once leave one
//! row, and the caller learns whether a row was there before (for the audit).

use super::{Store, StoreError, on_pool};

/// One stored key, sealed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedKey {
    /// The user's issuer.
    pub issuer: String,
    /// The user's subject at that issuer.
    pub subject: String,
    /// Service id.
    pub service: String,
    /// The sealed key (base64url of nonce + ciphertext + tag).
    pub sealed: String,
    /// Which vault key sealed it.
    pub key_id: String,
    /// When it was stored (Unix ms).
    pub set_ms: i64,
}

type Row = (String, String, String, String, String, i64);

fn row(r: Row) -> SealedKey {
    SealedKey {
        issuer: r.0,
        subject: r.1,
        service: r.2,
        sealed: r.3,
        key_id: r.4,
        set_ms: r.5,
    }
}

impl Store {
    /// Stores (or replaces) a user's sealed key for a service; `true` when one was
    /// there before (a replace).
    pub async fn put_hub_key(&self, k: &SealedKey) -> Result<bool, StoreError> {
        let existed = self
            .hub_key(&k.issuer, &k.subject, &k.service)
            .await?
            .is_some();
        let sql = "INSERT INTO hub_keys (issuer, subject, service, sealed, key_id, set_ms) \
                   VALUES ($1, $2, $3, $4, $5, $6) \
                   ON CONFLICT (issuer, subject, service) DO UPDATE SET \
                   sealed = excluded.sealed, key_id = excluded.key_id, set_ms = excluded.set_ms";
        on_pool!(self, pool => sqlx::query(sql)
            .bind(&k.issuer)
            .bind(&k.subject)
            .bind(&k.service)
            .bind(&k.sealed)
            .bind(&k.key_id)
            .bind(k.set_ms)
            .execute(pool)
            .await
            .map(|_| ())
            .map_err(|e| self.failed("store a hub key", &e)))?;
        Ok(existed)
    }

    /// A user's sealed key for a service.
    pub async fn hub_key(
        &self,
        issuer: &str,
        subject: &str,
        service: &str,
    ) -> Result<Option<SealedKey>, StoreError> {
        let sql = "SELECT issuer, subject, service, sealed, key_id, set_ms FROM hub_keys \
                   WHERE issuer = $1 AND subject = $2 AND service = $3";
        let found: Option<Row> = on_pool!(self, pool => sqlx::query_as(sql)
            .bind(issuer)
            .bind(subject)
            .bind(service)
            .fetch_optional(pool)
            .await
            .map_err(|e| self.failed("read a hub key", &e)))?;
        Ok(found.map(row))
    }

    /// Every sealed key of a user, by service.
    pub async fn hub_keys_of(
        &self,
        issuer: &str,
        subject: &str,
    ) -> Result<Vec<SealedKey>, StoreError> {
        let sql = "SELECT issuer, subject, service, sealed, key_id, set_ms FROM hub_keys \
                   WHERE issuer = $1 AND subject = $2 ORDER BY service";
        let rows: Vec<Row> = on_pool!(self, pool => sqlx::query_as(sql)
            .bind(issuer)
            .bind(subject)
            .fetch_all(pool)
            .await
            .map_err(|e| self.failed("list hub keys", &e)))?;
        Ok(rows.into_iter().map(row).collect())
    }

    /// Who holds a stored key for which service and since when, for the console:
    /// `(issuer, subject, service, set_ms)`, at most `limit` rows; never a seal.
    pub async fn hub_key_holders(
        &self,
        limit: i64,
    ) -> Result<Vec<(String, String, String, i64)>, StoreError> {
        let sql = "SELECT issuer, subject, service, set_ms FROM hub_keys \
                   ORDER BY issuer, subject, service LIMIT $1";
        on_pool!(self, pool => sqlx::query_as(sql)
            .bind(limit)
            .fetch_all(pool)
            .await
            .map_err(|e| self.failed("list hub key holders", &e)))
    }

    /// Deletes a user's key for a service; `true` when there was one.
    pub async fn delete_hub_key(
        &self,
        issuer: &str,
        subject: &str,
        service: &str,
    ) -> Result<bool, StoreError> {
        let sql = "DELETE FROM hub_keys WHERE issuer = $1 AND subject = $2 AND service = $3";
        let rows = on_pool!(self, pool => sqlx::query(sql)
            .bind(issuer)
            .bind(subject)
            .bind(service)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
            .map_err(|e| self.failed("delete a hub key", &e)))?;
        Ok(rows > 0)
    }

    /// Up to `limit` rows sealed under another key than `current`, in key order after
    /// `after` (issuer, subject, service; empty strings to start), for `vault rekey`.
    pub async fn hub_keys_not_under(
        &self,
        current: &str,
        after: (&str, &str, &str),
        limit: i64,
    ) -> Result<Vec<SealedKey>, StoreError> {
        let sql = "SELECT issuer, subject, service, sealed, key_id, set_ms FROM hub_keys \
                   WHERE key_id <> $1 AND (issuer, subject, service) > ($2, $3, $4) \
                   ORDER BY issuer, subject, service LIMIT $5";
        let rows: Vec<Row> = on_pool!(self, pool => sqlx::query_as(sql)
            .bind(current)
            .bind(after.0)
            .bind(after.1)
            .bind(after.2)
            .bind(limit)
            .fetch_all(pool)
            .await
            .map_err(|e| self.failed("read hub keys to re-seal", &e)))?;
        Ok(rows.into_iter().map(row).collect())
    }

    /// Replaces a row's seal when it is still the one read (`old_sealed`): a key the
    /// user replaced meanwhile is left as it is. `true` when re-sealed.
    pub async fn reseal_hub_key(
        &self,
        k: &SealedKey,
        old_sealed: &str,
    ) -> Result<bool, StoreError> {
        let sql = "UPDATE hub_keys SET sealed = $1, key_id = $2 \
                   WHERE issuer = $3 AND subject = $4 AND service = $5 AND sealed = $6";
        let rows = on_pool!(self, pool => sqlx::query(sql)
            .bind(&k.sealed)
            .bind(&k.key_id)
            .bind(&k.issuer)
            .bind(&k.subject)
            .bind(&k.service)
            .bind(old_sealed)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
            .map_err(|e| self.failed("re-seal a hub key", &e)))?;
        Ok(rows == 1)
    }
}
