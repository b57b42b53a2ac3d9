//! `list_jobs`: the caller's recent jobs of the tool's service from the store
//! ([`crate::store::jobs`]), newest first, optionally by the upstream's status word
//! (`status`) or by the job state it maps to (`state`, decision 007, through the
//! service's `[webhook] states`). Never contacts the upstream.

use serde_json::{Map, Value, json};

use crate::catalog::Tool;
use crate::error::CallError;
use crate::run::{Exec, Pipeline, RequestCtx};

/// Runs the hook.
pub async fn list_jobs(
    cx: &dyn Pipeline,
    tool: &Tool,
    args: &Map<String, Value>,
    ctx: &RequestCtx<'_>,
) -> Result<Exec, CallError> {
    let limit = args
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(20, |n| usize::try_from(n).unwrap_or(100).clamp(1, 100));
    let status = args.get("status").and_then(Value::as_str);
    let owner = cx.job_owner(&tool.service, ctx);
    let listed = cx
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
    // Each job with the state its status maps to (decision 007), where the
    // service's `[webhook] states` says.
    let states = cx
        .catalog
        .services
        .get(&tool.service)
        .and_then(|s| s.webhook.as_ref())
        .map(|w| &w.spec.states);
    let state_of = |job: &crate::store::jobs::Job| {
        job.status
            .as_ref()
            .and_then(|s| states.and_then(|m| m.get(s)))
            .map(|s| s.as_str())
    };
    let wanted_state = args.get("state").and_then(Value::as_str);
    let jobs: Vec<_> = listed
        .into_iter()
        .filter(|j| status.is_none_or(|s| j.status.as_deref() == Some(s)))
        .filter(|j| wanted_state.is_none_or(|w| state_of(j) == Some(w)))
        .collect();
    let total = jobs.len();
    let shown: Vec<Value> = jobs
        .into_iter()
        .take(limit)
        .map(|job| {
            let state = state_of(&job);
            let mut value = serde_json::to_value(&job).unwrap_or(Value::Null);
            if let Value::Object(map) = &mut value {
                map.insert("state".into(), json!(state));
            }
            value
        })
        .collect();
    Ok(Exec {
        summary: Some(format!(
            "{} of {total} recent {} jobs",
            shown.len(),
            tool.service
        )),
        data: json!({
            "total": total,
            "jobs": shown,
            "scope": "jobs submitted through this cx with your key (any replica); the upstream stays the source of truth",
        }).into(),
        ..Exec::default()
    })
}
