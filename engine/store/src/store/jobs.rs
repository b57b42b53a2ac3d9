//! Jobs: asynchronous upstream jobs submitted through this broker (imagegen
//! generations, blueprint runs, agent tasks), so a caller can list its recent jobs
//! without an upstream call, from any replica, after a restart.
//!
//! A tool whose `[tool.response] job_id` names where its answer carries a job id records
//! the job here when the call succeeds; `submit_and_poll` notes the status it reads.
//! Jobs belong to an owner ([`owner`]): the caller's key name and a fingerprint (sha256
//! prefix) of the upstream key the job was submitted with, so two users behind one
//! broker key never see each other's jobs and no key is stored. The upstream stays the
//! source of truth.

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::{Store, StoreError, on_pool};

/// A job's columns: service, id, tool, status, submitted_at, updated_at.
type JobRow = (
    String,
    String,
    String,
    Option<String>,
    String,
    Option<String>,
);

fn job((service, id, tool, status, submitted_at, updated_at): JobRow) -> Job {
    Job {
        service,
        id,
        tool,
        status,
        submitted_at,
        updated_at,
    }
}

/// Most jobs a listing returns.
pub const LIST_LIMIT: i64 = 500;

impl Store {
    /// Records a submitted job; the same id of the same owner again updates nothing but
    /// keeps the first record (a redelivered answer is not a new job).
    pub async fn record_job(
        &self,
        service: &str,
        owner: &str,
        id: &str,
        tool: &str,
        at: jiff::Timestamp,
    ) -> Result<(), StoreError> {
        let sql = "INSERT INTO jobs (service, owner, id, tool, submitted_at, submitted_ms) \
                   VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (service, owner, id) DO NOTHING";
        on_pool!(self, pool => sqlx::query(sql)
            .bind(service)
            .bind(owner)
            .bind(id)
            .bind(tool)
            .bind(at.to_string())
            .bind(super::millis(at))
            .execute(pool)
            .await
            .map(|_| ())
            .map_err(|e| self.failed("record a job", &e)))
    }

    /// Notes the last status seen of a job this owner submitted (others are untouched).
    pub async fn update_job(
        &self,
        service: &str,
        owner: &str,
        id: &str,
        status: &str,
        at: jiff::Timestamp,
    ) -> Result<(), StoreError> {
        let sql = "UPDATE jobs SET status = $1, updated_at = $2 \
                   WHERE service = $3 AND owner = $4 AND id = $5";
        on_pool!(self, pool => sqlx::query(sql)
            .bind(status)
            .bind(at.to_string())
            .bind(service)
            .bind(owner)
            .bind(id)
            .execute(pool)
            .await
            .map(|_| ())
            .map_err(|e| self.failed("update a job", &e)))
    }

    /// The owner's jobs of a service, newest first, at most [`LIST_LIMIT`].
    pub async fn list_jobs(&self, service: &str, owner: &str) -> Result<Vec<Job>, StoreError> {
        let sql = "SELECT service, id, tool, status, submitted_at, updated_at FROM jobs \
                   WHERE service = $1 AND owner = $2 ORDER BY submitted_ms DESC, id DESC LIMIT $3";
        let rows: Vec<JobRow> = on_pool!(self, pool => sqlx::query_as(sql)
            .bind(service)
            .bind(owner)
            .bind(LIST_LIMIT)
            .fetch_all(pool)
            .await
            .map_err(|e| self.failed("list jobs", &e)))?;
        Ok(rows.into_iter().map(job).collect())
    }
}

/// A job as the console lists it: with its owner and the position a cursor names.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedJob {
    /// The job.
    pub job: Job,
    /// Its owner ([`owner`]).
    pub owner: String,
    /// When it was submitted (Unix ms).
    pub submitted_ms: i64,
}

/// Where a job list continues: after the job with this submission time, service,
/// owner and id.
pub type JobCursor = (i64, String, String, String);

impl Store {
    /// Jobs newest first across services and owners, at most `limit`, after `after`
    /// (the last one shown), for the console.
    pub async fn list_recent_jobs(
        &self,
        after: Option<&JobCursor>,
        limit: i64,
    ) -> Result<Vec<ListedJob>, StoreError> {
        let sql = "SELECT service, id, tool, status, submitted_at, updated_at, owner, submitted_ms \
                   FROM jobs WHERE (submitted_ms, service, owner, id) < ($1, $2, $3, $4) \
                   ORDER BY submitted_ms DESC, service DESC, owner DESC, id DESC LIMIT $5";
        let (ms, service, owner, id) =
            after
                .cloned()
                .unwrap_or((i64::MAX, String::new(), String::new(), String::new()));
        type Row = (
            String,
            String,
            String,
            Option<String>,
            String,
            Option<String>,
            String,
            i64,
        );
        let rows: Vec<Row> = on_pool!(self, pool => sqlx::query_as(sql)
            .bind(ms)
            .bind(&service)
            .bind(&owner)
            .bind(&id)
            .bind(limit)
            .fetch_all(pool)
            .await
            .map_err(|e| self.failed("list jobs", &e)))?;
        Ok(rows
            .into_iter()
            .map(
                |(service, id, tool, status, at, updated, owner, submitted_ms)| ListedJob {
                    job: job((service, id, tool, status, at, updated)),
                    owner,
                    submitted_ms,
                },
            )
            .collect())
    }
}

impl Store {
    /// Records a verified callback; `false` when the event was seen before (a
    /// redelivery), and then nothing changes.
    pub async fn record_webhook_event(
        &self,
        service: &str,
        event_id: &str,
        job_id: Option<&str>,
        status: Option<&str>,
        payload: &str,
        at: jiff::Timestamp,
    ) -> Result<bool, StoreError> {
        let sql = "INSERT INTO webhook_events (service, event_id, job_id, status, payload, received_at) \
                   VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (service, event_id) DO NOTHING";
        on_pool!(self, pool => sqlx::query(sql)
            .bind(service)
            .bind(event_id)
            .bind(job_id)
            .bind(status)
            .bind(payload)
            .bind(at.to_string())
            .execute(pool)
            .await
            .map(|r| r.rows_affected() == 1)
            .map_err(|e| self.failed("record a webhook event", &e)))
    }

    /// Notes a job's status reported by the upstream itself (a webhook): every record of
    /// that job id in the service, whoever submitted it. Returns how many changed.
    pub async fn update_job_from_upstream(
        &self,
        service: &str,
        id: &str,
        status: &str,
        at: jiff::Timestamp,
    ) -> Result<u64, StoreError> {
        let sql = "UPDATE jobs SET status = $1, updated_at = $2 WHERE service = $3 AND id = $4";
        on_pool!(self, pool => sqlx::query(sql)
            .bind(status)
            .bind(at.to_string())
            .bind(service)
            .bind(id)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
            .map_err(|e| self.failed("update a job from a webhook", &e)))
    }
}

/// One recorded job.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    /// Service id.
    pub service: String,
    /// The upstream's job id.
    pub id: String,
    /// Tool that submitted it.
    pub tool: String,
    /// Last status seen (none until a status read).
    pub status: Option<String>,
    /// When it was submitted (RFC 3339).
    pub submitted_at: String,
    /// When the status was last seen.
    pub updated_at: Option<String>,
}

/// The owner of a job: caller key name plus upstream key fingerprint.
pub fn owner(caller: &str, upstream_key: Option<&str>) -> String {
    match upstream_key {
        Some(key) => {
            let digest = Sha256::digest(key.as_bytes());
            format!("{caller}:{}", crate::catalog::identity::hex(&digest[..8]))
        }
        None => caller.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_fingerprints_never_keys() {
        let a = owner("agent", Some("key-a"));
        let b = owner("agent", Some("key-b"));
        assert_ne!(a, b);
        assert!(!a.contains("key-a"));
        assert_eq!(owner("agent", None), "agent");
    }
}
