//! Approvals (decision 008, mode `human`): writes a person must approve. Each
//! state change is one conditional `UPDATE`, so two replicas (or two approvers) racing
//! on one approval change it once: pending -> approved | declined, approved -> used.

use super::{Store, StoreError, on_pool};

/// Where an approval stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalState {
    /// Waiting for a person.
    Pending,
    /// Approved: the write may run once.
    Approved,
    /// Declined: the write never runs.
    Declined,
    /// Approved and run.
    Used,
}

impl ApprovalState {
    /// The stored word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Declined => "declined",
            Self::Used => "used",
        }
    }

    fn parse(text: &str) -> Self {
        match text {
            "approved" => Self::Approved,
            "declined" => Self::Declined,
            "used" => Self::Used,
            _ => Self::Pending,
        }
    }
}

/// One approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// Random id (in the approval URL).
    pub id: String,
    /// The caller: key name and upstream key fingerprint.
    pub caller: String,
    /// The caller key's name, shown to the approver.
    pub key_name: String,
    /// Full tool name.
    pub tool: String,
    /// The tool's descriptor hash when asked.
    pub descriptor_hash: String,
    /// sha256 of the bound arguments.
    pub args_sha256: String,
    /// sha256 of the plan of writes the approver was shown, for a tool that runs
    /// others (decision 017); `None` for a tool that sends only its own request.
    pub plan_sha256: Option<String>,
    /// What the approver is shown (JSON text: the redacted request preview).
    pub preview: String,
    /// Where it stands.
    pub state: ApprovalState,
    /// Who approved or declined it.
    pub approver: Option<String>,
    /// When it was asked (Unix ms).
    pub created_ms: i64,
    /// When it expires (Unix ms).
    pub expires_ms: i64,
}

type Row = (
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    Option<String>,
    i64,
    i64,
    Option<String>,
);

fn approval(r: Row) -> Approval {
    Approval {
        id: r.0,
        caller: r.1,
        key_name: r.2,
        tool: r.3,
        descriptor_hash: r.4,
        args_sha256: r.5,
        preview: r.6,
        state: ApprovalState::parse(&r.7),
        approver: r.8,
        created_ms: r.9,
        expires_ms: r.10,
        plan_sha256: r.11,
    }
}

/// Which approvals a list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// Every approval.
    All,
    /// Waiting for a person and not expired.
    Pending,
    /// Waited until it expired, undecided.
    Expired,
    /// Approved, declined or used.
    Decided,
}

impl Store {
    /// Records a pending approval.
    pub async fn create_approval(&self, a: &Approval) -> Result<(), StoreError> {
        let sql = "INSERT INTO approvals (id, caller, key_name, tool, descriptor_hash, args_sha256, \
                   preview, state, created_ms, expires_ms, plan_sha256) \
                   VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9, $10)";
        on_pool!(self, pool => sqlx::query(sql)
            .bind(&a.id)
            .bind(&a.caller)
            .bind(&a.key_name)
            .bind(&a.tool)
            .bind(&a.descriptor_hash)
            .bind(&a.args_sha256)
            .bind(&a.preview)
            .bind(a.created_ms)
            .bind(a.expires_ms)
            .bind(&a.plan_sha256)
            .execute(pool)
            .await
            .map(|_| ())
            .map_err(|e| self.failed("record an approval", &e)))
    }

    /// An approval by id.
    pub async fn approval(&self, id: &str) -> Result<Option<Approval>, StoreError> {
        let sql = "SELECT id, caller, key_name, tool, descriptor_hash, args_sha256, preview, state, \
                   approver, created_ms, expires_ms, plan_sha256 FROM approvals WHERE id = $1";
        let row: Option<Row> = on_pool!(self, pool => sqlx::query_as(sql)
            .bind(id)
            .fetch_optional(pool)
            .await
            .map_err(|e| self.failed("read an approval", &e)))?;
        Ok(row.map(approval))
    }

    /// Approvals newest first, at most `limit`, for the console: those `shown` selects
    /// at `now_ms`, before the cursor `before` (`(created_ms, id)` of the last one
    /// shown).
    pub async fn list_approvals(
        &self,
        shown: Shown,
        now_ms: i64,
        before: Option<(i64, &str)>,
        limit: i64,
    ) -> Result<Vec<Approval>, StoreError> {
        let shown = match shown {
            Shown::All => "all",
            Shown::Pending => "pending",
            Shown::Expired => "expired",
            Shown::Decided => "decided",
        };
        let sql = "SELECT id, caller, key_name, tool, descriptor_hash, args_sha256, preview, state, \
                   approver, created_ms, expires_ms, plan_sha256 FROM approvals \
                   WHERE (created_ms < $2 OR (created_ms = $2 AND id < $3)) \
                   AND ($5 = 'all' \
                     OR ($5 = 'pending' AND state = 'pending' AND expires_ms > $1) \
                     OR ($5 = 'expired' AND state = 'pending' AND expires_ms <= $1) \
                     OR ($5 = 'decided' AND state <> 'pending')) \
                   ORDER BY created_ms DESC, id DESC LIMIT $4";
        let (before_ms, before_id) = before.unwrap_or((i64::MAX, ""));
        let rows: Vec<Row> = on_pool!(self, pool => sqlx::query_as(sql)
            .bind(now_ms)
            .bind(before_ms)
            .bind(before_id)
            .bind(limit)
            .bind(shown)
            .fetch_all(pool)
            .await
            .map_err(|e| self.failed("list approvals", &e)))?;
        Ok(rows.into_iter().map(approval).collect())
    }

    /// A person's decision on a pending, unexpired approval; `false` when it was not
    /// pending any more (decided elsewhere) or has expired.
    pub async fn decide_approval(
        &self,
        id: &str,
        approver: &str,
        approve: bool,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let state = if approve {
            ApprovalState::Approved
        } else {
            ApprovalState::Declined
        };
        let sql = "UPDATE approvals SET state = $1, approver = $2, decided_ms = $3 \
                   WHERE id = $4 AND state = 'pending' AND expires_ms > $3";
        let rows = on_pool!(self, pool => sqlx::query(sql)
            .bind(state.as_str())
            .bind(approver)
            .bind(now_ms)
            .bind(id)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
            .map_err(|e| self.failed("decide an approval", &e)))?;
        Ok(rows == 1)
    }

    /// Spends an approved, unexpired approval for its one write; `false` when it is not
    /// approved (any more) or has expired.
    pub async fn use_approval(&self, id: &str, now_ms: i64) -> Result<bool, StoreError> {
        let sql = "UPDATE approvals SET state = 'used' \
                   WHERE id = $1 AND state = 'approved' AND expires_ms > $2";
        let rows = on_pool!(self, pool => sqlx::query(sql)
            .bind(id)
            .bind(now_ms)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
            .map_err(|e| self.failed("use an approval", &e)))?;
        Ok(rows == 1)
    }
}
