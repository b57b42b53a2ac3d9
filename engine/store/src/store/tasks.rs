//! MCP tasks (the tasks extension of MCP 2026-07-28): tool calls run in the background
//! for a client that opted in (`mcp::tasks`, broker-surfaces). Every status change is one
//! conditional `UPDATE` from `working`, so a cancel and a finish racing on two replicas
//! settle the task once.

use super::{Store, StoreError, on_pool};

/// One task as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredTask {
    /// Random id.
    pub id: String,
    /// The caller: key name and upstream key fingerprint.
    pub owner: String,
    /// Full tool name.
    pub tool: String,
    /// `working`, `completed`, `failed` or `cancelled`.
    pub status: String,
    /// JSON text of the result (completed) or error (failed).
    pub result: Option<String>,
    /// Created (Unix ms).
    pub created_ms: i64,
    /// Last status change (Unix ms).
    pub updated_ms: i64,
    /// Last sign of life of the replica running it (Unix ms).
    pub heartbeat_ms: i64,
    /// Forgotten after (Unix ms).
    pub expires_ms: i64,
}

type Row = (
    String,
    String,
    String,
    String,
    Option<String>,
    i64,
    i64,
    i64,
    i64,
);

fn task(r: Row) -> StoredTask {
    StoredTask {
        id: r.0,
        owner: r.1,
        tool: r.2,
        status: r.3,
        result: r.4,
        created_ms: r.5,
        updated_ms: r.6,
        heartbeat_ms: r.7,
        expires_ms: r.8,
    }
}

impl Store {
    /// Records a new working task (durably: `tasks/get` finds it once this returns).
    pub async fn create_task(&self, t: &StoredTask) -> Result<(), StoreError> {
        let sql = "INSERT INTO tasks (id, owner, tool, status, created_ms, updated_ms, \
                   heartbeat_ms, expires_ms) VALUES ($1, $2, $3, 'working', $4, $4, $4, $5)";
        on_pool!(self, pool => sqlx::query(sql)
            .bind(&t.id)
            .bind(&t.owner)
            .bind(&t.tool)
            .bind(t.created_ms)
            .bind(t.expires_ms)
            .execute(pool)
            .await
            .map(|_| ())
            .map_err(|e| self.failed("record a task", &e)))
    }

    /// Tasks newest first across owners, at most `limit`, for the console: with
    /// `status` only those, before the cursor `before` (`(created_ms, id)` of the last
    /// one shown). Expired tasks are left out, as `tasks/get` leaves them out.
    pub async fn list_tasks(
        &self,
        status: Option<&str>,
        now_ms: i64,
        before: Option<(i64, &str)>,
        limit: i64,
    ) -> Result<Vec<StoredTask>, StoreError> {
        let sql = "SELECT id, owner, tool, status, result, created_ms, updated_ms, heartbeat_ms, \
                   expires_ms FROM tasks WHERE expires_ms > $1 AND ($2 = '' OR status = $2) \
                   AND (created_ms < $3 OR (created_ms = $3 AND id < $4)) \
                   ORDER BY created_ms DESC, id DESC LIMIT $5";
        let (before_ms, before_id) = before.unwrap_or((i64::MAX, ""));
        let rows: Vec<Row> = on_pool!(self, pool => sqlx::query_as(sql)
            .bind(now_ms)
            .bind(status.unwrap_or(""))
            .bind(before_ms)
            .bind(before_id)
            .bind(limit)
            .fetch_all(pool)
            .await
            .map_err(|e| self.failed("list tasks", &e)))?;
        Ok(rows.into_iter().map(task).collect())
    }

    /// A task by id, unless it has expired.
    pub async fn task(&self, id: &str, now_ms: i64) -> Result<Option<StoredTask>, StoreError> {
        let sql = "SELECT id, owner, tool, status, result, created_ms, updated_ms, heartbeat_ms, \
                   expires_ms FROM tasks WHERE id = $1 AND expires_ms > $2";
        let row: Option<Row> = on_pool!(self, pool => sqlx::query_as(sql)
            .bind(id)
            .bind(now_ms)
            .fetch_optional(pool)
            .await
            .map_err(|e| self.failed("read a task", &e)))?;
        Ok(row.map(task))
    }

    /// Settles a working task (`completed`, `failed`, `cancelled`) with its result;
    /// `false` when it was settled before (by a cancel, or on another replica).
    pub async fn settle_task(
        &self,
        id: &str,
        status: &str,
        result: Option<&str>,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let sql = "UPDATE tasks SET status = $1, result = $2, updated_ms = $3 \
                   WHERE id = $4 AND status = 'working'";
        let rows = on_pool!(self, pool => sqlx::query(sql)
            .bind(status)
            .bind(result)
            .bind(now_ms)
            .bind(id)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
            .map_err(|e| self.failed("settle a task", &e)))?;
        Ok(rows == 1)
    }

    /// Renews a working task's heartbeat; `false` when it is no longer working (a
    /// cancel from any replica: the runner stops watching).
    pub async fn task_heartbeat(&self, id: &str, now_ms: i64) -> Result<bool, StoreError> {
        let sql = "UPDATE tasks SET heartbeat_ms = $1 WHERE id = $2 AND status = 'working'";
        let rows = on_pool!(self, pool => sqlx::query(sql)
            .bind(now_ms)
            .bind(id)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
            .map_err(|e| self.failed("renew a task", &e)))?;
        Ok(rows == 1)
    }

    /// Deletes tasks that expired before `before_ms`; how many.
    pub async fn prune_tasks(&self, before_ms: i64) -> Result<u64, StoreError> {
        let sql = "DELETE FROM tasks WHERE expires_ms < $1";
        on_pool!(self, pool => sqlx::query(sql)
            .bind(before_ms)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
            .map_err(|e| self.failed("prune tasks", &e)))
    }
}
