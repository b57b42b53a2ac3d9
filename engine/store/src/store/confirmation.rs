//! Confirmation state (decision 008): the key ring that seals confirmation
//! tokens, and the ids of spent tokens. Both are shared by every replica.

use super::{Store, StoreError, on_pool};

impl Store {
    /// Every sealing key, newest first: `(kid, secret, created_ms)`.
    pub async fn seal_keys(&self) -> Result<Vec<(String, String, i64)>, StoreError> {
        let sql = "SELECT kid, secret, created_ms FROM seal_keys ORDER BY created_ms DESC, kid";
        on_pool!(self, pool => sqlx::query_as(sql)
            .fetch_all(pool)
            .await
            .map_err(|e| self.failed("read seal keys", &e)))
    }

    /// Adds a sealing key.
    pub async fn add_seal_key(
        &self,
        kid: &str,
        secret: &str,
        created_ms: i64,
    ) -> Result<(), StoreError> {
        let sql = "INSERT INTO seal_keys (kid, secret, created_ms) VALUES ($1, $2, $3) \
                   ON CONFLICT (kid) DO NOTHING";
        on_pool!(self, pool => sqlx::query(sql)
            .bind(kid)
            .bind(secret)
            .bind(created_ms)
            .execute(pool)
            .await
            .map(|_| ())
            .map_err(|e| self.failed("add a seal key", &e)))
    }

    /// Spends a token id: `true` the first time, `false` when it was spent before (on
    /// any replica). One atomic insert.
    pub async fn spend_token(&self, id: &str, expires_ms: i64) -> Result<bool, StoreError> {
        let sql = "INSERT INTO spent_tokens (id, expires_ms) VALUES ($1, $2) \
                   ON CONFLICT (id) DO NOTHING";
        let rows = on_pool!(self, pool => sqlx::query(sql)
            .bind(id)
            .bind(expires_ms)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
            .map_err(|e| self.failed("spend a token", &e)))?;
        Ok(rows == 1)
    }

    /// Deletes spent-token ids whose tokens expired before `before_ms`: an expired token
    /// is refused by its expiry whether or not its id is still here. Returns how many.
    pub async fn prune_spent_tokens(&self, before_ms: i64) -> Result<u64, StoreError> {
        let sql = "DELETE FROM spent_tokens WHERE expires_ms < $1";
        on_pool!(self, pool => sqlx::query(sql)
            .bind(before_ms)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
            .map_err(|e| self.failed("prune spent tokens", &e)))
    }
}
