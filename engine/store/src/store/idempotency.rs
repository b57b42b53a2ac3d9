//! Idempotency records (decision 009): the first call with a caller's
//! `Idempotency-Key` for a tool claims the key (`pending`); when its write has run, the
//! answer it returned is kept (`completed`) for 24 hours, and a repeat gets that answer
//! without a new upstream call. The claim is one `INSERT ... ON CONFLICT DO NOTHING`,
//! atomic on both backends, so two replicas racing with the same key make one call.

use super::{Store, StoreError, on_pool};

/// What claiming a key found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The key is this call's: run the write, then complete or release it.
    Owned,
    /// A call with these arguments completed: its status and envelope text.
    Completed {
        /// HTTP status it was answered with.
        status: u16,
        /// The envelope, as returned (redacted).
        envelope: String,
    },
    /// The key was used with other arguments.
    OtherArguments,
    /// A call with this key is still running (since `created_ms`).
    InFlight {
        /// When it claimed the key.
        created_ms: i64,
    },
}

type Row = (String, String, Option<i32>, Option<String>, i64);

impl Store {
    /// Claims `(owner, tool, key)` for a call whose arguments hash to `args_sha256`.
    /// Records older than `ttl_ms` no longer count.
    pub async fn claim_idempotency(
        &self,
        owner: &str,
        tool: &str,
        key: &str,
        args_sha256: &str,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<Claim, StoreError> {
        let fail = |e: sqlx::Error| self.failed("claim an idempotency key", &e);
        on_pool!(self, pool => {
            sqlx::query(
                "DELETE FROM idempotency WHERE owner = $1 AND tool = $2 AND key = $3 AND created_ms <= $4",
            )
            .bind(owner)
            .bind(tool)
            .bind(key)
            .bind(now_ms - ttl_ms)
            .execute(pool)
            .await
            .map_err(fail)?;
            let inserted = sqlx::query(
                "INSERT INTO idempotency (owner, tool, key, args_sha256, state, created_ms) \
                 VALUES ($1, $2, $3, $4, 'pending', $5) ON CONFLICT (owner, tool, key) DO NOTHING",
            )
            .bind(owner)
            .bind(tool)
            .bind(key)
            .bind(args_sha256)
            .bind(now_ms)
            .execute(pool)
            .await
            .map_err(fail)?
            .rows_affected();
            if inserted == 1 {
                return Ok(Claim::Owned);
            }
            let row: Option<Row> = sqlx::query_as(
                "SELECT args_sha256, state, status, envelope, created_ms FROM idempotency \
                 WHERE owner = $1 AND tool = $2 AND key = $3",
            )
            .bind(owner)
            .bind(tool)
            .bind(key)
            .fetch_optional(pool)
            .await
            .map_err(fail)?;
            Ok(match row {
                // Released between the insert and the read: the caller tries again.
                None => Claim::InFlight { created_ms: now_ms },
                Some((sha, _, _, _, _)) if sha != args_sha256 => Claim::OtherArguments,
                Some((_, state, Some(status), Some(envelope), _)) if state == "completed" => {
                    Claim::Completed {
                        status: u16::try_from(status).unwrap_or(200),
                        envelope,
                    }
                }
                Some((_, _, _, _, created_ms)) => Claim::InFlight { created_ms },
            })
        })
    }

    /// Keeps the answer of a claimed key's write.
    pub async fn complete_idempotency(
        &self,
        owner: &str,
        tool: &str,
        key: &str,
        status: u16,
        envelope: &str,
    ) -> Result<(), StoreError> {
        on_pool!(self, pool => sqlx::query(
            "UPDATE idempotency SET state = 'completed', status = $1, envelope = $2 \
             WHERE owner = $3 AND tool = $4 AND key = $5",
        )
        .bind(i32::from(status))
        .bind(envelope)
        .bind(owner)
        .bind(tool)
        .bind(key)
        .execute(pool)
        .await
        .map(|_| ())
        .map_err(|e| self.failed("keep an idempotent answer", &e)))
    }

    /// Frees a claimed key whose write did not run (refused before sending, a
    /// preview): the caller may use it again.
    pub async fn release_idempotency(
        &self,
        owner: &str,
        tool: &str,
        key: &str,
    ) -> Result<(), StoreError> {
        on_pool!(self, pool => sqlx::query(
            "DELETE FROM idempotency WHERE owner = $1 AND tool = $2 AND key = $3 AND state = 'pending'",
        )
        .bind(owner)
        .bind(tool)
        .bind(key)
        .execute(pool)
        .await
        .map(|_| ())
        .map_err(|e| self.failed("release an idempotency key", &e)))
    }
}
