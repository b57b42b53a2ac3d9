//! The write audit: one append-only record per write the broker executed, refused or
//! saw declined, per key a user stored, replaced or deleted in the hub, and per action
//! an admin took in the console. It says who (the key's name), what (tool, descriptor hash, catalog
//! version, sha256 of the canonical arguments), how it ended (outcome, upstream status,
//! classification) and when (time, trace id, duration). Never an argument value, never
//! a key. The store has no statement that changes or removes a record, and the tables
//! refuse both by trigger.

use serde::Serialize;

use super::{Store, StoreError, on_pool};

/// How a write ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Sent upstream (whatever the upstream answered).
    Executed,
    /// Not sent: the broker refused it (confirmation, validation, permission, limit, ...).
    Refused,
    /// Not sent: the person asked to approve it declined.
    Declined,
    /// Not sent: its preview answered a confirmation token (mode `bound`).
    TokenIssued,
    /// A person approved it on the approval page (mode `human`); it may now run once.
    Approved,
    /// A user stored an upstream key in the hub (`tool` is `hub/keys/<service>`).
    KeyStored,
    /// A user replaced the upstream key the hub held.
    KeyReplaced,
    /// A user deleted their upstream key from the hub (or an admin did, in the
    /// console: `confirmation` names them).
    KeyDeleted,
    /// An admin ended a user's sessions in the console (`tool` is `hub/sessions`).
    SessionsEnded,
    /// A user connected an account by OAuth (`tool` is `hub/keys/<service>`), or
    /// connected it again.
    Connected,
    /// A connection was ended (by the user, or an admin in the console); its tokens
    /// were revoked at the provider where it has an endpoint.
    Disconnected,
    /// The provider refused a connection's refresh token: it needs the user to
    /// connect again (nothing was deleted).
    ReconnectNeeded,
}

impl Outcome {
    /// Every outcome.
    pub const ALL: [Self; 12] = [
        Self::Executed,
        Self::Refused,
        Self::Declined,
        Self::TokenIssued,
        Self::Approved,
        Self::KeyStored,
        Self::KeyReplaced,
        Self::KeyDeleted,
        Self::SessionsEnded,
        Self::Connected,
        Self::Disconnected,
        Self::ReconnectNeeded,
    ];

    /// The stored word.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Executed => "executed",
            Self::Refused => "refused",
            Self::Declined => "declined",
            Self::TokenIssued => "token_issued",
            Self::Approved => "approved",
            Self::KeyStored => "key_stored",
            Self::KeyReplaced => "key_replaced",
            Self::KeyDeleted => "key_deleted",
            Self::SessionsEnded => "sessions_ended",
            Self::Connected => "connected",
            Self::Disconnected => "disconnected",
            Self::ReconnectNeeded => "reconnect_needed",
        }
    }

    pub(super) fn parse(text: &str) -> Self {
        Self::ALL
            .into_iter()
            .find(|o| o.as_str() == text)
            .unwrap_or(Self::Refused)
    }
}

/// One audit record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRecord {
    /// Position in the audit (assigned by the store; 0 before it is appended).
    pub seq: i64,
    /// When the call started (RFC 3339).
    pub at: String,
    /// The caller key's name (never the key).
    pub key_name: String,
    /// Full tool name.
    pub tool: String,
    /// The tool's descriptor hash at the time.
    pub descriptor_hash: String,
    /// The service's catalog version at the time.
    pub catalog_version: String,
    /// sha256 (hex) of the canonical JSON of the arguments as given.
    pub args_sha256: String,
    /// How it ended.
    pub outcome: Outcome,
    /// The upstream's HTTP status, when it answered.
    pub upstream_status: Option<u16>,
    /// `ok` or the error classification.
    pub classification: String,
    /// The call's trace id.
    pub trace_id: String,
    /// Milliseconds the call took.
    pub duration_ms: u64,
    /// How the write was confirmed: `flag` or `bound` (absent in records from before).
    pub confirmation: Option<String>,
    /// With `[policy]`: the ids of the policies that decided it (the permits that
    /// allowed it, or the forbids that refused it; empty when nothing permitted it).
    pub policies: Option<Vec<String>>,
    /// What the write was charged, in its unit (`{"credits": 3}`), when its tool is
    /// priced and it ran (docs/budgets.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<std::collections::BTreeMap<String, u64>>,
    /// The ids of the guard rules that acted on the call (its arguments, and answers
    /// read before the record was written; docs/guards.md), when any did. Never a value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guards: Option<Vec<String>>,
}

/// What `audit list` selects.
#[derive(Debug, Clone, Default)]
pub struct AuditQuery {
    /// Records at or after this time.
    pub since: Option<jiff::Timestamp>,
    /// Only this tool (full name).
    pub tool: Option<String>,
    /// At most this many, newest last.
    pub limit: i64,
}

/// A record as both readers select it (`SELECT seq, at, ... cost, guards`).
pub(super) type Row = (
    i64,
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    Option<i32>,
    String,
    String,
    i64,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

impl Store {
    /// Appends one record.
    pub async fn append_audit(&self, r: &AuditRecord) -> Result<(), StoreError> {
        let at_ms =
            r.at.parse::<jiff::Timestamp>()
                .map(super::millis)
                .unwrap_or(0);
        let sql = "INSERT INTO audit (at, at_ms, key_name, tool, descriptor_hash, catalog_version, \
                   args_sha256, outcome, upstream_status, classification, trace_id, duration_ms, confirmation, \
                   policies, cost, guards) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)";
        let policies = r
            .policies
            .as_ref()
            .map(|p| serde_json::Value::from(p.clone()).to_string());
        let cost = r.cost.as_ref().and_then(|c| serde_json::to_string(c).ok());
        let guards = r
            .guards
            .as_ref()
            .map(|g| serde_json::Value::from(g.clone()).to_string());
        on_pool!(self, pool => sqlx::query(sql)
            .bind(&r.at)
            .bind(at_ms)
            .bind(&r.key_name)
            .bind(&r.tool)
            .bind(&r.descriptor_hash)
            .bind(&r.catalog_version)
            .bind(&r.args_sha256)
            .bind(r.outcome.as_str())
            .bind(r.upstream_status.map(i32::from))
            .bind(&r.classification)
            .bind(&r.trace_id)
            .bind(i64::try_from(r.duration_ms).unwrap_or(i64::MAX))
            .bind(r.confirmation.as_deref())
            .bind(policies.as_deref())
            .bind(cost.as_deref())
            .bind(guards.as_deref())
            .execute(pool)
            .await
            .map(|_| ())
            .map_err(|e| self.failed("append to the write audit", &e)))
    }

    /// Records matching `q`, oldest first (the newest `limit` of them).
    pub async fn list_audit(&self, q: &AuditQuery) -> Result<Vec<AuditRecord>, StoreError> {
        let since = q.since.map_or(i64::MIN, super::millis);
        let sql = "SELECT seq, at, key_name, tool, descriptor_hash, catalog_version, args_sha256, \
                   outcome, upstream_status, classification, trace_id, duration_ms, confirmation, policies, cost, guards FROM audit \
                   WHERE at_ms >= $1 AND ($2 = '' OR tool = $2) ORDER BY seq DESC LIMIT $3";
        let rows: Vec<Row> = on_pool!(self, pool => sqlx::query_as(sql)
            .bind(since)
            .bind(q.tool.clone().unwrap_or_default())
            .bind(q.limit.max(1))
            .fetch_all(pool)
            .await
            .map_err(|e| self.failed("read the write audit", &e)))?;
        let mut records: Vec<AuditRecord> = rows.into_iter().map(record).collect();
        records.reverse();
        Ok(records)
    }
}

/// A selected row as a record.
pub(super) fn record(r: Row) -> AuditRecord {
    AuditRecord {
        seq: r.0,
        at: r.1,
        key_name: r.2,
        tool: r.3,
        descriptor_hash: r.4,
        catalog_version: r.5,
        args_sha256: r.6,
        outcome: Outcome::parse(&r.7),
        upstream_status: r.8.and_then(|s| u16::try_from(s).ok()),
        classification: r.9,
        trace_id: r.10,
        duration_ms: u64::try_from(r.11).unwrap_or(0),
        confirmation: r.12,
        policies: r.13.and_then(|text| serde_json::from_str(&text).ok()),
        cost: r.14.and_then(|text| serde_json::from_str(&text).ok()),
        guards: r.15.and_then(|text| serde_json::from_str(&text).ok()),
    }
}
