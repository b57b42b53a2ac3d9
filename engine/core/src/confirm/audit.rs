//! The audit records of a person's decisions on writes (mode `human`): who decided, on
//! which tool, for which caller key; never a value.

use crate::run::Parts;

/// A person's decision on a write, for the audit.
pub struct Decided<'a> {
    /// The caller key that asked.
    pub key_name: &'a str,
    /// The tool's full name.
    pub tool: &'a str,
    /// The descriptor hash the decision was about.
    pub descriptor_hash: &'a str,
    /// The bound arguments' digest.
    pub args_sha256: &'a str,
    /// Approved (else declined).
    pub approve: bool,
    /// How and by whom: `human:<approver>`, `human:elicitation`.
    pub by: String,
    /// The trace id of the call or the approval.
    pub trace_id: String,
}

/// Appends the audit record of a person's decision: who decided, on which tool, for
/// which caller key (never a value). Logged if the store fails.
pub async fn decided(parts: &Parts, d: Decided<'_>) {
    use crate::store::audit::{AuditRecord, Outcome};
    let record = AuditRecord {
        seq: 0,
        at: parts.now().to_string(),
        key_name: d.key_name.to_string(),
        tool: d.tool.to_string(),
        descriptor_hash: d.descriptor_hash.to_string(),
        catalog_version: parts
            .catalog
            .resolve(d.tool)
            .and_then(|t| parts.catalog.services.get(&t.service))
            .map(|s| s.catalog_version.clone())
            .unwrap_or_default(),
        args_sha256: d.args_sha256.to_string(),
        outcome: if d.approve {
            Outcome::Approved
        } else {
            Outcome::Declined
        },
        upstream_status: None,
        classification: if d.approve {
            "ok".into()
        } else {
            "confirmation_declined".into()
        },
        trace_id: d.trace_id,
        duration_ms: 0,
        confirmation: Some(d.by),
        guards: None,
        policies: None,
        cost: None,
    };
    if let Err(e) = parts.store.append_audit(&record).await {
        tracing::error!(error = %e, "approval decision not audited");
    }
}

/// Appends the audit record of an approver's decision on approval `id`.
pub async fn decision(parts: &Parts, id: &str, approver: &str, approve: bool) {
    let Ok(Some(a)) = parts.store.approval(id).await else {
        return;
    };
    decided(
        parts,
        Decided {
            key_name: &a.key_name,
            tool: &a.tool,
            descriptor_hash: &a.descriptor_hash,
            args_sha256: &a.args_sha256,
            approve,
            by: format!("human:{approver}"),
            trace_id: format!("approval-{id}"),
        },
    )
    .await;
}
