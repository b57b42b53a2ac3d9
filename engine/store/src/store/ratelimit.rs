//! Rate-limit windows in the store: a sliding log of counted requests per caller and
//! tool, checked and appended in one transaction. On PostgreSQL the transaction first
//! takes an advisory lock on the window's key, so two replicas counting the same
//! caller serialise and a limit of 10 lets 10 through in all. On SQLite the one
//! connection serialises every count.

use super::{Backend, Store, StoreError};

/// What a count decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// Counted; the request may go.
    Allowed,
    /// Over the limit: retry after this many milliseconds (the oldest counted request
    /// leaves the window then).
    Refused {
        /// Milliseconds until a slot frees.
        retry_after_ms: i64,
    },
}

/// A 64-bit lock key for a window (FNV-1a of its text).
pub(super) fn lock_key(key: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in key.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    i64::from_ne_bytes(hash.to_ne_bytes())
}

impl Store {
    /// Counts one request in `key`'s window of `window_ms`, allowing `limit` per window.
    pub async fn count_request(
        &self,
        key: &str,
        limit: u32,
        window_ms: i64,
        now_ms: i64,
    ) -> Result<Count, StoreError> {
        let fail = |e: sqlx::Error| self.failed("count a rate-limited request", &e);
        macro_rules! count {
            ($tx:expr) => {{
                let tx = &mut $tx;
                sqlx::query("DELETE FROM rate_hits WHERE key = $1 AND at_ms <= $2")
                    .bind(key)
                    .bind(now_ms - window_ms)
                    .execute(&mut **tx)
                    .await
                    .map_err(fail)?;
                let (count, oldest): (i64, Option<i64>) =
                    sqlx::query_as("SELECT COUNT(*), MIN(at_ms) FROM rate_hits WHERE key = $1")
                        .bind(key)
                        .fetch_one(&mut **tx)
                        .await
                        .map_err(fail)?;
                if count >= i64::from(limit) {
                    let oldest = oldest.unwrap_or(now_ms);
                    Count::Refused {
                        retry_after_ms: (oldest + window_ms - now_ms).max(1),
                    }
                } else {
                    sqlx::query("INSERT INTO rate_hits (key, at_ms) VALUES ($1, $2)")
                        .bind(key)
                        .bind(now_ms)
                        .execute(&mut **tx)
                        .await
                        .map_err(fail)?;
                    Count::Allowed
                }
            }};
        }
        match &self.backend {
            Backend::Sqlite(pool) => {
                let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.map_err(fail)?;
                let decided = count!(tx);
                tx.commit().await.map_err(fail)?;
                Ok(decided)
            }
            Backend::Postgres(pool) => {
                let mut tx = pool.begin().await.map_err(fail)?;
                sqlx::query("SELECT pg_advisory_xact_lock($1)")
                    .bind(lock_key(key))
                    .execute(&mut *tx)
                    .await
                    .map_err(fail)?;
                let decided = count!(tx);
                tx.commit().await.map_err(fail)?;
                Ok(decided)
            }
        }
    }
}
