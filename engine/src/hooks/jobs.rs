//! `list_jobs`: the caller's recent jobs of the tool's service from the store
//! ([`crate::store::jobs`]), newest first, optionally by status. Never contacts the
//! upstream.

use serde_json::{Map, Value, json};

use crate::call::{Broker, Exec, RequestCtx};
use crate::catalog::Tool;
use crate::error::CallError;

/// Runs the hook.
pub async fn list_jobs(
    broker: &Broker,
    tool: &Tool,
    args: &Map<String, Value>,
    ctx: &RequestCtx<'_>,
) -> Result<Exec, CallError> {
    let limit = args
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(20, |n| usize::try_from(n).unwrap_or(100).clamp(1, 100));
    let status = args.get("status").and_then(Value::as_str);
    let owner = broker.job_owner(&tool.service, ctx);
    let listed = broker
        .store
        .list_jobs(&tool.service, &owner)
        .await
        .map_err(|e| {
            tracing::error!(error = %e, tool = %tool.full_name, "jobs not listed");
            CallError::new(
                crate::error::Classification::NotConfigured,
                "the broker's job store cannot be read right now; retry shortly",
            )
        })?;
    let jobs: Vec<_> = listed
        .into_iter()
        .filter(|j| status.is_none_or(|s| j.status.as_deref() == Some(s)))
        .collect();
    let total = jobs.len();
    let shown: Vec<_> = jobs.into_iter().take(limit).collect();
    Ok(Exec {
        summary: Some(format!(
            "{} of {total} recent {} jobs",
            shown.len(),
            tool.service
        )),
        data: json!({
            "total": total,
            "jobs": shown,
            "scope": "jobs submitted through this broker with your key (any replica); the upstream stays the source of truth",
        }),
        ..Exec::default()
    })
}
