//! Sessions of people signed in to the broker's pages (the hub, the approval page): one
//! row each, found by the sha256 of the random id its cookie holds. A session ends when
//! its owner signs out, an operator ends it ([`Store::end_sessions_of`]), it has not
//! been used for the idle time, or its lifetime is over; on every replica at once.

use super::{Store, StoreError, on_pool};

/// A session row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    /// sha256 (hex) of the cookie's id.
    pub id_sha256: String,
    /// `hub` or `approver`.
    pub kind: String,
    /// Who: `<issuer>#<subject>` for a user, the approver credential's name otherwise.
    pub caller: String,
    /// What the page needs of them (JSON text: name, roles...).
    pub claims: String,
    /// When it began (Unix ms).
    pub created_ms: i64,
    /// When it was last used (Unix ms), to the minute ([`TOUCH_EVERY_MS`]).
    pub seen_ms: i64,
    /// When it ends whatever its use (Unix ms).
    pub expires_ms: i64,
}

/// A session's last use is written at most this often (a page view is a read, not a
/// write, within the minute).
pub const TOUCH_EVERY_MS: i64 = 60_000;

type Row = (String, String, String, String, i64, i64, i64);

fn row(r: Row) -> SessionRow {
    SessionRow {
        id_sha256: r.0,
        kind: r.1,
        caller: r.2,
        claims: r.3,
        created_ms: r.4,
        seen_ms: r.5,
        expires_ms: r.6,
    }
}

impl Store {
    /// Stores a new session, and drops those ended by time (any kind).
    pub async fn start_session(&self, s: &SessionRow) -> Result<(), StoreError> {
        let purge = "DELETE FROM sessions WHERE expires_ms <= $1";
        on_pool!(self, pool => sqlx::query(purge)
            .bind(s.created_ms)
            .execute(pool)
            .await
            .map(|_| ())
            .map_err(|e| self.failed("drop ended sessions", &e)))?;
        let sql = "INSERT INTO sessions \
                   (id_sha256, kind, principal, claims, created_ms, seen_ms, expires_ms) \
                   VALUES ($1, $2, $3, $4, $5, $6, $7)";
        on_pool!(self, pool => sqlx::query(sql)
            .bind(&s.id_sha256)
            .bind(&s.kind)
            .bind(&s.caller)
            .bind(&s.claims)
            .bind(s.created_ms)
            .bind(s.seen_ms)
            .bind(s.expires_ms)
            .execute(pool)
            .await
            .map(|_| ())
            .map_err(|e| self.failed("store a session", &e)))
    }

    /// The live session of `kind` with this id: not past its lifetime and used within
    /// `idle_ms`. A session found ended is deleted; a live one has its last use
    /// written when that is older than [`TOUCH_EVERY_MS`].
    pub async fn session(
        &self,
        id_sha256: &str,
        kind: &str,
        now_ms: i64,
        idle_ms: i64,
    ) -> Result<Option<SessionRow>, StoreError> {
        let sql = "SELECT id_sha256, kind, principal, claims, created_ms, seen_ms, expires_ms \
                   FROM sessions WHERE id_sha256 = $1 AND kind = $2";
        let found: Option<Row> = on_pool!(self, pool => sqlx::query_as(sql)
            .bind(id_sha256)
            .bind(kind)
            .fetch_optional(pool)
            .await
            .map_err(|e| self.failed("read a session", &e)))?;
        let Some(session) = found.map(row) else {
            return Ok(None);
        };
        if now_ms >= session.expires_ms || now_ms >= session.seen_ms.saturating_add(idle_ms) {
            self.end_session(id_sha256).await?;
            return Ok(None);
        }
        if now_ms - session.seen_ms >= TOUCH_EVERY_MS {
            let touch = "UPDATE sessions SET seen_ms = $1 WHERE id_sha256 = $2";
            on_pool!(self, pool => sqlx::query(touch)
                .bind(now_ms)
                .bind(id_sha256)
                .execute(pool)
                .await
                .map(|_| ())
                .map_err(|e| self.failed("mark a session used", &e)))?;
        }
        Ok(Some(session))
    }

    /// Ends one session (signing out); `true` when there was one.
    pub async fn end_session(&self, id_sha256: &str) -> Result<bool, StoreError> {
        let sql = "DELETE FROM sessions WHERE id_sha256 = $1";
        on_pool!(self, pool => sqlx::query(sql)
            .bind(id_sha256)
            .execute(pool)
            .await
            .map(|r| r.rows_affected() > 0)
            .map_err(|e| self.failed("end a session", &e)))
    }

    /// Ends every session of `caller` (of any kind); how many there were.
    pub async fn end_sessions_of(&self, caller: &str) -> Result<u64, StoreError> {
        let sql = "DELETE FROM sessions WHERE principal = $1";
        on_pool!(self, pool => sqlx::query(sql)
            .bind(caller)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
            .map_err(|e| self.failed("end a user's sessions", &e)))
    }

    /// The live sessions (newest first, at most `limit`), for `sessions list`.
    pub async fn list_sessions(
        &self,
        now_ms: i64,
        limit: u32,
    ) -> Result<Vec<SessionRow>, StoreError> {
        let sql = "SELECT id_sha256, kind, principal, claims, created_ms, seen_ms, expires_ms \
                   FROM sessions WHERE expires_ms > $1 ORDER BY created_ms DESC LIMIT $2";
        let rows: Vec<Row> = on_pool!(self, pool => sqlx::query_as(sql)
            .bind(now_ms)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await
            .map_err(|e| self.failed("list sessions", &e)))?;
        Ok(rows.into_iter().map(row).collect())
    }
}
