//! `submit_and_poll`: submit a job once, then watch it for a bounded time.
//!
//! The upstream requests are not written here: the tool's `[tool.poll]` names raw
//! catalog tools of the same service (a submit tool, chosen by `when` expressions, and a
//! status tool) and expressions for their arguments, the job id, the status word and the
//! result. Every step runs through the ordinary pipeline, with the caller's permission
//! checked for each step tool and the submit tool's own confirmation rule in force: a
//! call without `confirm=true` answers the submit tool's dry-run preview and sends
//! nothing.
//!
//! The submit is never repeated. Once it succeeded, the job id is in every answer: a
//! status read that fails, or a wait that runs out, ends the call with `ok: true`, the
//! id, `outcome: "pending"` and a next action naming the tool to check on it later.
//! With no submit choices the id comes from the arguments (watch an existing job); a
//! failed read is then the answer, except that a call run as an MCP task reads through
//! passing failures (see [`passing`]) until its bound.
//!
//! Outcomes: `done`, `failed`, `waiting` (the job needs the caller), `pending`.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::steps::{eval, step_tool};
use crate::catalog::template::Scope;
use crate::catalog::{Poll, Tool};
use crate::error::CallError;
use crate::run::{Exec, Pipeline, RequestCtx};

fn word(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn wait_for(plan: &Poll, args: &Map<String, Value>, ctx: &RequestCtx<'_>) -> Duration {
    // Run as an MCP task, the call watches its job for the task's own bound.
    if let Some(watch) = &ctx.task_watch {
        return watch.limit;
    }
    match args.get(&plan.wait_arg).and_then(Value::as_f64) {
        Some(seconds) if seconds.is_finite() && seconds > 0.0 => {
            Duration::from_secs_f64(seconds).min(plan.max_wait)
        }
        Some(_) => Duration::ZERO,
        None => plan.default_wait,
    }
}

/// A failed status read worth reading through: one the error rules call retryable (an
/// unreachable upstream, a timeout, a rate limit) or an upstream 5xx or 429 answer.
fn passing(cx: &dyn Pipeline, e: &CallError) -> bool {
    cx.catalog.rules.retryable(e.classification)
        || e.upstream_status.is_some_and(|s| s >= 500 || s == 429)
}

/// Runs the hook.
pub async fn submit_and_poll(
    cx: &dyn Pipeline,
    tool: &Tool,
    args: Map<String, Value>,
    ctx: &RequestCtx<'_>,
) -> Result<Exec, CallError> {
    let Some(plan) = &tool.poll else {
        return Err(CallError::internal());
    };
    let wait = wait_for(plan, &args, ctx);
    let interval = cx
        .setting(&tool.service, "poll_interval_ms")
        .and_then(Value::as_u64)
        .map_or(plan.interval, |ms| {
            Duration::from_millis(ms.max(1)).min(plan.interval)
        });
    let mut scope = cx.template_context(tool, &args, ctx.headers);

    // Submit once, through the first choice whose `when` holds.
    let mut submitted = Value::Null;
    if !plan.submit.is_empty() {
        let (name, arguments) = chosen_submit(cx, plan, &scope)?;
        let submit = step_tool(cx, tool, name, ctx)?;
        let submit_args = eval(cx, arguments, &scope)?;
        let exec = cx.execute(submit, Some(submit_args), ctx).await?;
        if exec.dry_run {
            // Not confirmed: the submit tool's preview, nothing sent, nothing to watch.
            return Ok(exec);
        }
        submitted = exec.data.into_value();
        scope["submitted"] = submitted.clone();
    }

    let id = eval(cx, &plan.id, &scope)?;
    if id.is_null() || id == json!("") {
        return Ok(Exec {
            summary: Some(format!(
                "{}: submitted; the answer names no job id, so there is nothing to watch",
                tool.full_name
            )),
            data: json!({ "outcome": "submitted", "id": Value::Null, "submitted": submitted })
                .into(),
            ..Exec::default()
        });
    }
    scope["id"] = id.clone();
    let status_tool = step_tool(cx, tool, &plan.status_tool, ctx)?;
    let check = plan.check_tool.as_ref().map_or_else(
        || status_tool.full_name.clone(),
        |t| format!("{}.{t}", tool.service),
    );
    let owner = cx.job_owner(&tool.service, ctx);
    let started = Instant::now();
    let mut reads = 0usize;
    loop {
        let status_args = eval(cx, &plan.status_arguments, &scope)?;
        reads += 1;
        let (outcome, status, data, poll_error) =
            match cx.execute(status_tool, Some(status_args), ctx).await {
                Ok(read) => {
                    let data = read.data.into_value();
                    let status = status_of(cx, tool, &scope, &data, &owner, &id).await?;
                    (outcome_of(plan, &status), status, data, None)
                }
                // Nothing submitted: the caller asked to watch a job and the read
                // failed, which is the answer; run as a task, only a failure that is
                // not worth retrying (an unknown job, a refused key) ends the watch.
                Err(e) if submitted.is_null() && (ctx.task_watch.is_none() || !passing(cx, &e)) => {
                    return Err(e);
                }
                // Submitted: never lose the id over a failed read.
                Err(e) => ("pending", String::new(), Value::Null, Some(e)),
            };
        let out_of_time = started.elapsed() + interval > wait;
        // A task watches through failed reads until its bound or its cancel.
        let (as_task, cancelled) = ctx
            .task_watch
            .as_ref()
            .map_or((false, false), |w| (true, w.stopped()));
        if outcome != "pending" || out_of_time || cancelled || (poll_error.is_some() && !as_task) {
            scope["status"] = json!(status);
            scope["data"] = data;
            let mut result = eval(cx, &plan.result, &scope)?;
            if let Value::Object(map) = &mut result {
                let watched =
                    json!({ "outcome": outcome, "id": id, "status": status, "statusReads": reads });
                if let Value::Object(watched) = watched {
                    map.extend(watched);
                }
                if let Some(e) = &poll_error {
                    map.insert(
                        "pollError".into(),
                        json!({ "classification": e.classification.as_str(), "message": e.message }),
                    );
                }
            }
            let id_text = word(&id);
            let waited = started.elapsed().as_secs();
            let next_action = next_action(outcome, &id_text, &status, &check, waited);
            if let (Some(next), Value::Object(map)) = (&next_action, &mut result) {
                map.insert("nextAction".into(), json!(next));
            }
            return Ok(Exec {
                summary: Some(format!("job {id_text}: {outcome} ({status})")),
                data: result.into(),
                next_action,
                ..Exec::default()
            });
        }
        tokio::time::sleep(interval).await;
    }
}

/// The first submit choice whose `when` holds (one without `when` always does).
fn chosen_submit<'p>(
    cx: &dyn Pipeline,
    plan: &'p crate::catalog::Poll,
    scope: &Value,
) -> Result<(&'p String, &'p crate::catalog::template::Expr), CallError> {
    for (when, name, arguments) in &plan.submit {
        let applies = match when {
            None => true,
            Some(expr) => cx
                .catalog
                .templates
                .truthy(expr, &Scope::borrowed(scope))
                .map_err(|e| {
                    tracing::error!(template = %e.name, kind = %e.kind, "poll `when` failed");
                    CallError::internal()
                })?,
        };
        if applies {
            return Ok((name, arguments));
        }
    }
    Err(CallError::internal())
}

/// The status word a read answered (the plan's `status` over the read's `data`),
/// stored on the caller's job (`owner`, `id`) when there is one.
async fn status_of(
    cx: &dyn Pipeline,
    tool: &Tool,
    scope: &Value,
    data: &Value,
    owner: &str,
    id: &Value,
) -> Result<String, CallError> {
    let Some(plan) = &tool.poll else {
        return Err(CallError::internal());
    };
    let mut with_data = scope.clone();
    with_data["data"] = data.clone();
    let status = word(&eval(cx, &plan.status, &with_data)?);
    if !status.is_empty()
        && let Err(e) = cx
            .store
            .update_job(&tool.service, owner, &word(id), &status, cx.now())
            .await
    {
        tracing::warn!(error = %e, tool = %tool.full_name, "job status not stored");
    }
    Ok(status)
}

/// What a job's status word means by the plan: `done`, `failed`, `waiting` (for
/// input), or `pending`.
fn outcome_of(plan: &crate::catalog::Poll, status: &String) -> &'static str {
    if plan.done.contains(status) {
        "done"
    } else if plan.failed.contains(status) {
        "failed"
    } else if plan.waiting.contains(status) {
        "waiting"
    } else {
        "pending"
    }
}

/// What the caller does next with a job that did not finish here (`check`: the tool
/// that reads it later; `waited`: seconds watched).
fn next_action(outcome: &str, id: &str, status: &str, check: &str, waited: u64) -> Option<String> {
    match outcome {
        "pending" => Some(format!(
            "The job `{id}` is still running after {waited} s. Call `{check}` with its id later; do not submit again."
        )),
        "waiting" => Some(format!(
            "The job `{id}` waits for input (status {status}); read it with `{check}` and act on what it asks."
        )),
        "failed" => Some(format!(
            "The job `{id}` failed upstream (status {status}); it was not retried. Ask the user before submitting again."
        )),
        _ => None,
    }
}

/// Run as an MCP task, a tool that answers a job at once (`[tool.task]`) watches it:
/// after the tool's own answer (`exec`, sent and not a preview), its watch tool runs
/// with the task's bound and the answer gains `data.job` (the watch's data), the watch's
/// summary and next action. A watch that cannot run keeps the tool's answer whole and
/// says why in `data.job` (`outcome: "unknown"`): the job was submitted, and its id is
/// in the answer.
pub async fn watch_answered_job(
    cx: &dyn Pipeline,
    tool: &Tool,
    plan: &crate::catalog::TaskPlan,
    args: &Map<String, Value>,
    mut exec: Exec,
    ctx: &RequestCtx<'_>,
) -> Exec {
    // An answer that took one pass is text: the watch reads into it, and adds `job`.
    let mut scope = cx.template_context(tool, args, ctx.headers);
    scope["data"] = exec.data.value_mut().clone();
    let watched = async {
        let watch_args = eval(cx, &plan.arguments, &scope)?;
        if watch_args.is_null() {
            return Ok(None);
        }
        let watch = step_tool(cx, tool, &plan.watch, ctx)?;
        cx.execute(watch, Some(watch_args), ctx).await.map(Some)
    }
    .await;
    let job = match watched {
        Ok(None) => return exec,
        Ok(Some(watch)) => {
            if let Some(summary) = watch.summary {
                exec.summary = Some(match exec.summary {
                    Some(own) => format!("{own}; {summary}"),
                    None => summary,
                });
            }
            exec.next_action = watch.next_action.or(exec.next_action);
            watch.data.into_value()
        }
        Err(e) => {
            let check = format!("{}.{}", tool.service, plan.watch);
            json!({
                "outcome": "unknown",
                "watchError": { "classification": e.classification.as_str(), "message": e.message },
                "nextAction": format!("The job was submitted but could not be watched; read it later with `{check}`. Do not submit again."),
            })
        }
    };
    match exec.data.value_mut() {
        Value::Object(map) => {
            map.insert("job".into(), job);
        }
        other => {
            let own = std::mem::take(other);
            *other = json!({ "answer": own, "job": job });
        }
    }
    exec
}
