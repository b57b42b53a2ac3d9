//! Long-running tools as MCP tasks (the tasks extension of MCP 2026-07-28, SEP-2663).
//!
//! A `tools/call` whose `_meta` client capabilities declare the extension
//! ([`EXTENSION`]) and that names a tool that waits (a `[tool.poll]` plan: imagegen's
//! "... And Wait" tools, agent's Wait briefly for a task) or one whose job a task
//! watches (a `[tool.task]` plan: media's queue tools) answers at once with a
//! `CreateTaskResult` (`resultType: "task"`, flat: `taskId`, `status`, `createdAt`,
//! `lastUpdatedAt`, `ttlMs`, `pollIntervalMs`). The call runs in the background on the
//! replica that took it, watching its job for [`WATCH`] instead of the tool's own
//! bounded wait, and settles the task in the store ([`crate::store::tasks`]) with the
//! same `CallToolResult` the call would have answered (a tool's failure is `completed`
//! with `isError`; only a broker fault is `failed`). `tasks/get` and `tasks/cancel` work
//! from any replica: the store is the truth, and only the task's owner (the caller's key
//! name and upstream key fingerprint, as for jobs) sees it; anyone else gets the
//! unknown-task error. A cancel settles the task `cancelled`; the running replica sees
//! it at its next heartbeat and stops watching; the upstream job may still finish (the
//! status message says so, and never resubmits). A task whose replica stopped renewing
//! its heartbeat for [`STALE_MS`] is reported `failed`, naming the tool that reads the job.
//!
//! Calls the broker would hold for confirmation (a write under `bound` or `human` without
//! its token or approval, and the retry of an input-required round) are answered
//! synchronously: a task could not carry their rounds. A client that does not opt in
//! gets today's bounded wait.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::{code, complete, error, result, server_info};
use crate::call::{Broker, CallInput};
use crate::caller::Caller;
use crate::catalog::Tool;
use crate::catalog::descriptor::Risk;
use crate::config::WriteConfirmation;
use crate::reply::Reply;
use crate::run::TaskWatch;
use crate::store::tasks::StoredTask;

/// The extension's identifier, in capabilities.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// How long a task is kept after it is created.
pub const TTL_MS: i64 = 3_600_000;
/// How often clients are told to poll.
pub const POLL_INTERVAL_MS: i64 = 1_000;
/// How long a call run as a task watches its job.
pub const WATCH: Duration = Duration::from_secs(30 * 60);
/// How often the running replica renews a task's heartbeat (and sees a cancel).
const HEARTBEAT: Duration = Duration::from_secs(2);
/// A working task without a heartbeat for this long lost its replica.
pub const STALE_MS: i64 = 30_000;

/// Whether a 2026-07-28 request opted into tasks (`_meta` client capabilities name the
/// extension).
pub fn opted_in(params: &Value) -> bool {
    super::client_capabilities(params)
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(EXTENSION))
        .is_some_and(Value::is_object)
}

/// The tool a call names, through `call_tool` too.
fn target<'a>(broker: &'a Broker, input: &CallInput<'_>) -> Option<&'a Tool> {
    let name = if input.name == super::tools::CALL {
        input.arguments.as_ref()?.get("name")?.as_str()?
    } else {
        input.name
    };
    broker.parts.catalog.resolve(name)
}

/// Whether a call is run as a task: a tool that waits, which the caller may use with
/// these arguments (key fields, schema, policies: a refused call is answered at once
/// and never stored as a task), and that the broker will not hold for a confirmation
/// round.
fn runs_as_task(broker: &Broker, tool: &Tool, input: &CallInput<'_>) -> bool {
    if tool.poll.is_none() && tool.task.is_none() {
        return false;
    }
    if input
        .elicitation
        .as_ref()
        .is_some_and(|e| e.state.is_some())
    {
        return false;
    }
    let args = if input.name == super::tools::CALL {
        input.arguments.as_ref().and_then(|a| a.get("arguments"))
    } else {
        input.arguments.as_ref()
    };
    let mut own = args.cloned();
    for name in [
        crate::confirm::bound::TOKEN_ARG,
        crate::confirm::APPROVAL_ARG,
    ] {
        crate::confirm::bound::take_arg(&mut own, name);
    }
    if !broker.admits(tool, input.caller, own.as_ref()) {
        return false;
    }
    let has = |k: &str| args.and_then(|a| a.get(k)).is_some();
    let held = tool.risk == Risk::Write
        && match input.caller.confirmation {
            WriteConfirmation::Flag => false,
            WriteConfirmation::Bound => !has(crate::confirm::bound::TOKEN_ARG),
            WriteConfirmation::Human => !has(crate::confirm::APPROVAL_ARG),
        };
    !held
}

fn new_id() -> String {
    let mut raw = [0u8; 16];
    let _ = getrandom::fill(&mut raw);
    crate::catalog::identity::hex(&raw)
}

fn iso(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// Starts a call as a task and answers its `CreateTaskResult`; gives the input back
/// when the call is not one for a task (or the store cannot record it: the call then
/// runs as it would without tasks).
pub async fn start<'a>(
    broker: &Arc<Broker>,
    id: &Value,
    input: CallInput<'a>,
) -> Result<Reply, CallInput<'a>> {
    let Some(tool) = target(broker, &input).filter(|t| runs_as_task(broker, t, &input)) else {
        return Err(input);
    };
    let now = broker.parts.now().as_millisecond();
    let task = StoredTask {
        id: new_id(),
        owner: crate::store::jobs::owner(
            &input.caller.name,
            broker.parts.upstream_key(&tool.service, input.headers),
        ),
        tool: tool.full_name.clone(),
        status: "working".into(),
        result: None,
        created_ms: now,
        updated_ms: now,
        heartbeat_ms: now,
        expires_ms: now + TTL_MS,
    };
    if let Err(e) = broker.parts.store.create_task(&task).await {
        tracing::error!(error = %e, "task not recorded; the call runs without a task");
        return Err(input);
    }
    prune_now_and_then(broker, now).await;
    tracing::info!(task = %task.id, tool = %task.tool, caller = %input.caller.name, "task started");
    let detached = super::detached::Detached::of(input, false);
    tokio::spawn(run(broker.clone(), task.id.clone(), detached));
    Ok(result(
        id,
        json!({
            "resultType": "task",
            "taskId": task.id,
            "status": "working",
            "createdAt": iso(now),
            "lastUpdatedAt": iso(now),
            "ttlMs": TTL_MS,
            "pollIntervalMs": POLL_INTERVAL_MS,
            "_meta": { super::SERVER_INFO_KEY: server_info() },
        }),
    ))
}

/// Runs the call, renewing the heartbeat; settles the task unless it was cancelled.
/// The call runs as its own tokio task, so a heartbeat waiting on the store never
/// stalls it; a cancel ends its watch, never the call itself.
async fn run(broker: Arc<Broker>, task: String, mut call: super::detached::Detached) {
    let watch = TaskWatch {
        limit: WATCH,
        stop: Arc::new(std::sync::atomic::AtomicBool::new(false)),
    };
    let stop = watch.stop.clone();
    let calling = broker.clone();
    let mut running = tokio::spawn(async move {
        let input = call.input(None, Some(watch));
        super::run_call(&calling, input).await
    });
    let mut beat = tokio::time::interval(HEARTBEAT);
    let (status, text) = loop {
        tokio::select! {
            done = &mut running => break match done {
                Ok(response) => ("completed", super::tool_result(&response, true)),
                Err(_) => {
                    tracing::error!(task = %task, "a task's call panicked; the task failed");
                    ("failed", json!({ "code": -32603, "message": "the broker failed while running this call; the upstream job may still finish" }).to_string())
                }
            },
            _ = beat.tick() => {
                match broker.parts.store.task_heartbeat(&task, broker.parts.now().as_millisecond()).await {
                    Ok(false) => {
                        // Never aborted: a submit in flight finishes and is audited;
                        // the watch ends at its next read, its answer is dropped.
                        stop.store(true, std::sync::atomic::Ordering::Relaxed);
                        let _ = running.await;
                        tracing::info!(task = %task, "task cancelled; its watch ended");
                        return;
                    }
                    Ok(true) => {}
                    Err(e) => tracing::warn!(task = %task, error = %e, "task heartbeat not renewed"),
                }
            }
        }
    };
    match broker
        .parts
        .store
        .settle_task(
            &task,
            status,
            Some(&text),
            broker.parts.now().as_millisecond(),
        )
        .await
    {
        Ok(true) => tracing::info!(task = %task, status, "task settled"),
        Ok(false) => tracing::info!(task = %task, "task was cancelled before it finished"),
        Err(e) => tracing::error!(task = %task, error = %e, "task result not stored"),
    }
}

/// How often a replica prunes expired tasks (at most).
const PRUNE_EVERY_MS: i64 = 10 * 60 * 1000;
static PRUNED: crate::store::Every = crate::store::Every::new();

async fn prune_now_and_then(broker: &Broker, now: i64) {
    if !PRUNED.due(now, PRUNE_EVERY_MS) {
        return;
    }
    match broker.parts.store.prune_tasks(now).await {
        Ok(n) if n > 0 => tracing::info!(pruned = n, "expired tasks pruned"),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "expired tasks not pruned"),
    }
}

fn unknown(id: &Value) -> Reply {
    error(
        id,
        code::INVALID_PARAMS,
        "no such task for this caller (unknown, expired, or another caller's)",
        None,
    )
}

/// Where to read the job the task watched, for status messages: the check tool of the
/// tool's poll plan, or of its task's watch tool.
fn reader(broker: &Broker, tool: &str) -> String {
    let resolved = broker.parts.catalog.resolve(tool);
    let watch = resolved
        .and_then(|t| Some((t, t.task.as_ref()?)))
        .and_then(|(t, plan)| broker.parts.catalog.resolve_in(&t.service, &plan.watch));
    watch
        .or(resolved)
        .and_then(|t| Some((t, t.poll.as_ref()?.check_tool.as_deref()?)))
        .map(|(t, check)| format!("{}.{check}", t.service))
        .unwrap_or_else(|| tool.to_string())
}

/// `tasks/get`, `tasks/cancel` and `tasks/update` (2026-07-28, the caller opted in).
pub async fn handle(
    broker: &Broker,
    id: &Value,
    method: &str,
    params: &Value,
    headers: &hyper::HeaderMap,
    caller: &Caller,
) -> Reply {
    if !opted_in(params) {
        return error(
            id,
            code::MISSING_CLIENT_CAPABILITY,
            format!(
                "`{method}` needs the `{EXTENSION}` extension declared in params._meta's client capabilities"
            ),
            Some(json!({ "requiredCapabilities": { "extensions": { EXTENSION: {} } } })),
        );
    }
    let Some(task_id) = params.get("taskId").and_then(Value::as_str) else {
        return error(
            id,
            code::INVALID_PARAMS,
            "`params.taskId` is required (a string)",
            None,
        );
    };
    let now = broker.parts.now().as_millisecond();
    let task = match broker.parts.store.task(task_id, now).await {
        Ok(Some(t)) => t,
        Ok(None) => return unknown(id),
        Err(e) => {
            tracing::error!(error = %e, "task store unavailable");
            return error(
                id,
                -32603,
                "the broker cannot read tasks right now (its store does not answer); retry shortly",
                None,
            );
        }
    };
    let owner = broker.parts.catalog.resolve(&task.tool).map(|t| {
        crate::store::jobs::owner(&caller.name, broker.parts.upstream_key(&t.service, headers))
    });
    if owner.as_deref() != Some(task.owner.as_str()) {
        return unknown(id);
    }
    match method {
        "tasks/cancel" => {
            if task.status == "working" {
                match broker
                    .parts
                    .store
                    .settle_task(task_id, "cancelled", None, now)
                    .await
                {
                    Ok(_) => tracing::info!(task = %task_id, "task cancelled"),
                    Err(e) => {
                        tracing::error!(error = %e, "task not cancelled");
                        return error(
                            id,
                            -32603,
                            "the broker cannot cancel tasks right now (its store does not answer); retry shortly",
                            None,
                        );
                    }
                }
            }
            complete(id, json!({}))
        }
        // The broker never asks for input inside a task: nothing to update.
        "tasks/update" => complete(id, json!({})),
        _ => complete(id, detailed(broker, task, now).await),
    }
}

/// The `DetailedTask` of `tasks/get`.
async fn detailed(broker: &Broker, mut task: StoredTask, now: i64) -> Value {
    let check = reader(broker, &task.tool);
    if task.status == "working" && now - task.heartbeat_ms > STALE_MS {
        // The replica running it stopped: settle it failed, once.
        let error = json!({
            "code": -32603,
            "message": format!("the broker replica running this task stopped; the upstream job may still finish: read it with {check}"),
        })
        .to_string();
        if let Ok(true) = broker
            .parts
            .store
            .settle_task(&task.id, "failed", Some(&error), now)
            .await
        {
            task.status = "failed".into();
            task.result = Some(error);
            task.updated_ms = now;
        } else if let Ok(Some(fresh)) = broker.parts.store.task(&task.id, now).await {
            task = fresh;
        }
    }
    let mut out = json!({
        "taskId": task.id,
        "status": task.status,
        "createdAt": iso(task.created_ms),
        "lastUpdatedAt": iso(task.updated_ms),
        "ttlMs": TTL_MS,
        "pollIntervalMs": POLL_INTERVAL_MS,
    });
    let stored = task
        .result
        .as_deref()
        .and_then(|t| serde_json::from_str::<Value>(t).ok());
    match task.status.as_str() {
        "completed" => {
            if let Some(mut r) = stored {
                if let Value::Object(map) = &mut r {
                    map.remove("_meta");
                }
                out["result"] = r;
            }
        }
        "failed" => {
            out["error"] = stored.unwrap_or_else(|| json!({ "code": -32603, "message": "failed" }));
        }
        "cancelled" => {
            out["statusMessage"] = json!(format!(
                "cancelled: the broker stopped watching; the upstream job may still finish (read it with {check}); nothing was resubmitted"
            ));
        }
        _ => {
            out["statusMessage"] = json!(format!("{} is running", task.tool));
        }
    }
    out
}
