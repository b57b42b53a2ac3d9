//! Phase 11, audit: a write's record (decision 009), appended once its result is known:
//! the door's own write here ([`Broker::audit_call`]), a write sent inside another tool
//! by the gate when its permit ends, under the door's trace. A preview is not a write
//! and is not recorded. A store that fails is logged; the caller still gets its answer,
//! since the write may already have run.

use super::Broker;
use super::admit::Ruling;
use super::resolve::Call;
use super::settle::Settled;
use crate::answer::envelope::Cost;
use crate::catalog::Tool;
use crate::config::WriteConfirmation;
use crate::error::{CallError, Classification};
use crate::run::{Exec, RequestCtx};
use crate::store::audit::{AuditRecord, Outcome};

/// One write's audit record, less what its result says.
pub(super) struct Entry<'e> {
    /// The tool the write belongs to.
    pub(super) tool: &'e Tool,
    /// sha256 of the write's arguments (the door's) or of its request (an inner write).
    pub(super) args_sha256: String,
    /// When it started.
    pub(super) at: jiff::Timestamp,
    /// How long it took.
    pub(super) duration_ms: u64,
    /// The policies that decided it.
    pub(super) policies: Option<&'e [String]>,
    /// How it was confirmed.
    pub(super) mode: WriteConfirmation,
    /// What a failed call was charged (`meta.cost`).
    pub(super) failed_cost: Option<&'e Cost>,
}

impl Broker {
    /// Phase 11 at the door: the call's record, when it is a write that ran, was
    /// refused or issued a token.
    pub(super) async fn audit_call(
        &self,
        call: &Call<'_>,
        ruling: &Ruling,
        settled: &Settled,
        ctx: &RequestCtx<'_>,
    ) {
        let Some(args_sha256) = &call.args_sha256 else {
            return;
        };
        let entry = Entry {
            tool: call.tool,
            args_sha256: args_sha256.clone(),
            at: call.started_at,
            duration_ms: settled.duration_ms,
            policies: ruling.policies.as_deref(),
            mode: ruling.mode,
            failed_cost: settled.failed_cost.as_deref(),
        };
        self.audit(&entry, &settled.result, ctx).await;
    }

    /// Appends the audit record of a write with this `result`.
    pub(super) async fn audit(
        &self,
        entry: &Entry<'_>,
        result: &Result<Exec, CallError>,
        ctx: &RequestCtx<'_>,
    ) {
        let Some(outcome) = write_outcome(result) else {
            return;
        };
        let tool = entry.tool;
        let (upstream_status, classification) = match result {
            Ok(exec) => (exec.upstream_status, "ok"),
            Err(e) => (e.upstream_status, e.classification.as_str()),
        };
        let record = AuditRecord {
            seq: 0,
            at: entry.at.to_string(),
            key_name: ctx.caller.name.clone(),
            tool: tool.full_name.clone(),
            descriptor_hash: tool.descriptor_hash.clone(),
            catalog_version: self
                .parts
                .catalog
                .services
                .get(&tool.service)
                .map(|s| s.catalog_version.clone())
                .unwrap_or_default(),
            args_sha256: entry.args_sha256.clone(),
            outcome,
            upstream_status,
            classification: classification.to_string(),
            trace_id: ctx.trace.id.to_string(),
            duration_ms: entry.duration_ms,
            confirmation: Some(entry.mode.as_str().to_string()),
            policies: entry.policies.map(<[String]>::to_vec),
            guards: ctx
                .guards
                .map(|acted| acted.on(crate::catalog::guards::LooksAt::Both))
                .filter(|set| !set.is_empty())
                .map(|set| {
                    let ids = self.parts.guards.guards.ids(set);
                    ids.iter().map(|id| id.to_string()).collect()
                }),
            cost: match result {
                Ok(exec) => exec.cost.as_deref(),
                Err(_) => entry.failed_cost,
            }
            .and_then(|c| {
                c.actual
                    .filter(|n| *n > 0 || result.is_ok())
                    .map(|n| std::iter::once((c.unit.to_string(), n)).collect())
            }),
        };
        if let Err(e) = self.parts.store.append_audit(&record).await {
            tracing::error!(error = %e, tool = %tool.full_name, trace_id = %ctx.trace.id, "write audit record not stored");
        }
    }
}

/// How a write call ended, for the audit and idempotency: `None` for a dry-run preview
/// (not a write); executed when a request went upstream (an answer, or a timeout after
/// sending); refused when nothing was sent.
pub(super) fn write_outcome(result: &Result<Exec, CallError>) -> Option<Outcome> {
    match result {
        Ok(exec) if exec.token_issued => Some(Outcome::TokenIssued),
        Ok(exec) if exec.dry_run => None,
        Ok(_) => Some(Outcome::Executed),
        Err(e)
            if e.upstream_status.is_some()
                || e.classification == Classification::UpstreamTimeout =>
        {
            Some(Outcome::Executed)
        }
        Err(_) => Some(Outcome::Refused),
    }
}
