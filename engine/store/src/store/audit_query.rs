//! The write audit as the operator's console reads it: filtered, newest first, paged
//! by position, and pruned past its retention.
//!
//! Only the filters given become SQL conditions (each value a parameter), so each can
//! use its index (`audit_by_key`, `audit_by_tool_seq`, `audit_by_outcome`, migration
//! 12); the time bounds are written `+at_ms` so neither planner trades the walk down
//! `seq` for a sort. A page asks for one record more than it shows, to know whether
//! another follows.

use super::audit::{AuditRecord, Row, record};
use super::{Store, StoreError, on_pool};

/// What a console page of the audit selects.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Records at or after this time (Unix ms).
    pub since_ms: Option<i64>,
    /// Records before this time (Unix ms).
    pub until_ms: Option<i64>,
    /// Who: a key's name or a user's `<issuer>#<subject>`, exactly.
    pub caller: Option<String>,
    /// One tool (full name).
    pub tool: Option<String>,
    /// One service's tools (`<service>.*`).
    pub service: Option<String>,
    /// One outcome word (`executed`, `refused`, ...).
    pub outcome: Option<String>,
    /// Records one policy decided (its id among `policies`).
    pub policy: Option<String>,
    /// Records before this position (the cursor of the page before).
    pub before_seq: Option<i64>,
    /// At most this many.
    pub limit: i64,
}

/// One name the audit holds records of (a key's name or `<issuer>#<subject>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditCaller {
    /// The name.
    pub name: String,
    /// Their newest record's time (Unix ms).
    pub last_ms: i64,
    /// How many records name them.
    pub records: u64,
}

enum Bind {
    Int(i64),
    Text(String),
}

/// The `LIKE` pattern matching `"<id>"` inside the JSON array of policy ids.
fn policy_pattern(id: &str) -> String {
    let quoted = serde_json::Value::from(id).to_string();
    let mut pattern = String::from("%");
    for c in quoted.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

impl AuditFilter {
    /// The `WHERE` clause and its parameters.
    fn conditions(&self) -> (String, Vec<Bind>) {
        let mut sql = Vec::new();
        let mut binds = Vec::new();
        let mut add = |condition: &str, bind: Bind| {
            binds.push(bind);
            sql.push(condition.replace('?', &format!("${}", binds.len())));
        };
        if let Some(seq) = self.before_seq {
            add("seq < ?", Bind::Int(seq));
        }
        if let Some(since) = self.since_ms {
            add("+at_ms >= ?", Bind::Int(since));
        }
        if let Some(until) = self.until_ms {
            add("+at_ms < ?", Bind::Int(until));
        }
        if let Some(p) = &self.caller {
            add("key_name = ?", Bind::Text(p.clone()));
        }
        if let Some(t) = &self.tool {
            add("tool = ?", Bind::Text(t.clone()));
        }
        if let Some(s) = &self.service {
            // `<service>.` up to `<service>/` (the next byte): every tool of the service.
            add("tool >= ?", Bind::Text(format!("{s}.")));
            add("tool < ?", Bind::Text(format!("{s}/")));
        }
        if let Some(o) = &self.outcome {
            add("outcome = ?", Bind::Text(o.clone()));
        }
        if let Some(p) = &self.policy {
            add("policies LIKE ? ESCAPE '\\'", Bind::Text(policy_pattern(p)));
        }
        let clause = if sql.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", sql.join(" AND "))
        };
        (clause, binds)
    }
}

/// What one pruning removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Audit records removed.
    pub audit: u64,
    /// Finished tasks removed.
    pub tasks: u64,
    /// Jobs submitted before the bound removed.
    pub jobs: u64,
    /// Approvals that expired before the bound removed (their decisions stay in the
    /// audit).
    pub approvals: u64,
}

/// Records removed per transaction while pruning (a writer holds SQLite's lock only
/// that long).
const PRUNE_BATCH: i64 = 2_000;

impl Store {
    /// The records `filter` selects, newest first: at most `filter.limit`, and whether
    /// more follow.
    pub async fn audit_page(
        &self,
        filter: &AuditFilter,
    ) -> Result<(Vec<AuditRecord>, bool), StoreError> {
        let limit = filter.limit.clamp(1, 100_000);
        let (clause, binds) = filter.conditions();
        let sql = format!(
            "SELECT seq, at, key_name, tool, descriptor_hash, catalog_version, args_sha256, \
             outcome, upstream_status, classification, trace_id, duration_ms, confirmation, policies, cost, guards \
             FROM audit{clause} ORDER BY seq DESC LIMIT {}",
            limit + 1
        );
        let rows: Vec<Row> = on_pool!(self, pool => {
            let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql));
            for bind in binds {
                query = match bind {
                    Bind::Int(i) => query.bind(i),
                    Bind::Text(t) => query.bind(t),
                };
            }
            query
                .fetch_all(pool)
                .await
                .map_err(|e| self.failed("read the write audit", &e))
        })?;
        let more = rows.len() > usize::try_from(limit).unwrap_or(usize::MAX);
        let records = rows
            .into_iter()
            .take(usize::try_from(limit).unwrap_or(usize::MAX))
            .map(record)
            .collect();
        Ok((records, more))
    }

    /// Everyone the audit names, with their last record's time (Unix ms) and how many
    /// records they have, most recent first, at most `limit`. Counted on `audit_by_key`
    /// alone (name and position), then one row read per name for its time.
    pub async fn audit_callers(&self, limit: i64) -> Result<Vec<AuditCaller>, StoreError> {
        let rows: Vec<(String, i64, i64)> = on_pool!(self, pool => sqlx::query_as(
            "SELECT a.key_name, a.at_ms, g.n FROM \
             (SELECT key_name, MAX(seq) AS last, COUNT(*) AS n FROM audit GROUP BY key_name) g \
             JOIN audit a ON a.seq = g.last ORDER BY g.last DESC LIMIT $1"
        )
        .bind(limit)
        .fetch_all(pool)
        .await
        .map_err(|e| self.failed("read the write audit's callers", &e)))?;
        Ok(rows
            .into_iter()
            .map(|(name, last_ms, records)| AuditCaller {
                name,
                last_ms,
                records: u64::try_from(records).unwrap_or(0),
            })
            .collect())
    }

    /// The time of the oldest record kept (RFC 3339), if any.
    pub async fn oldest_audit(&self) -> Result<Option<String>, StoreError> {
        let row: Option<(String,)> = on_pool!(self, pool => sqlx::query_as(
            "SELECT at FROM audit ORDER BY seq LIMIT 1"
        )
        .fetch_optional(pool)
        .await
        .map_err(|e| self.failed("read the write audit", &e)))?;
        Ok(row.map(|r| r.0))
    }

    /// Removes audit records that started before `before_ms` (a batch per transaction,
    /// each batch recorded in `audit_prunes`), tasks and approvals that expired before
    /// it and jobs submitted before it. The audit's triggers refuse any record under a day old
    /// whatever the bound.
    pub async fn prune_audit(&self, before_ms: i64, now_ms: i64) -> Result<Pruned, StoreError> {
        let mut pruned = Pruned::default();
        loop {
            let removed: u64 = on_pool!(self, pool => {
                let run = async {
                    let mut tx = pool.begin().await?;
                    let (id,): (i64,) = sqlx::query_as(
                        "INSERT INTO audit_prunes (at_ms, before_ms) VALUES ($1, $2) RETURNING id",
                    )
                    .bind(now_ms)
                    .bind(before_ms)
                    .fetch_one(&mut *tx)
                    .await?;
                    let removed = sqlx::query(
                        "DELETE FROM audit WHERE seq IN \
                         (SELECT seq FROM audit WHERE at_ms < $1 ORDER BY seq LIMIT $2)",
                    )
                    .bind(before_ms)
                    .bind(PRUNE_BATCH)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                    if removed == 0 {
                        // Nothing to remove: no history row for it.
                        tx.rollback().await?;
                        return Ok::<u64, sqlx::Error>(0);
                    }
                    sqlx::query("UPDATE audit_prunes SET removed = $1 WHERE id = $2")
                        .bind(i64::try_from(removed).unwrap_or(i64::MAX))
                        .bind(id)
                        .execute(&mut *tx)
                        .await?;
                    tx.commit().await?;
                    Ok(removed)
                };
                run.await.map_err(|e| self.failed("prune the write audit", &e))
            })?;
            pruned.audit += removed;
            if removed < PRUNE_BATCH.unsigned_abs() {
                break;
            }
        }
        pruned.tasks = self.prune_tasks(before_ms).await?;
        pruned.jobs = on_pool!(self, pool => sqlx::query("DELETE FROM jobs WHERE submitted_ms < $1")
            .bind(before_ms)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
            .map_err(|e| self.failed("prune jobs", &e)))?;
        pruned.approvals = on_pool!(self, pool => sqlx::query("DELETE FROM approvals WHERE expires_ms < $1")
            .bind(before_ms)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
            .map_err(|e| self.failed("prune approvals", &e)))?;
        Ok(pruned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_given_filters_become_conditions_numbered_in_order() {
        let (clause, binds) = AuditFilter::default().conditions();
        assert_eq!((clause.as_str(), binds.len()), ("", 0));
        let filter = AuditFilter {
            before_seq: Some(10),
            service: Some("crm".into()),
            policy: Some("a_b%".into()),
            ..AuditFilter::default()
        };
        let (clause, binds) = filter.conditions();
        assert_eq!(
            clause,
            " WHERE seq < $1 AND tool >= $2 AND tool < $3 AND policies LIKE $4 ESCAPE '\\'"
        );
        assert_eq!(binds.len(), 4);
        assert_eq!(policy_pattern("a_b%"), "%\"a\\_b\\%\"%");
    }
}
