//! The jobs-and-tasks page and `/admin/api/tasks`: MCP tasks (tool calls run in the
//! background for a client that asked) and the upstream jobs calls submitted
//! (webhook-backed or polled), newest first across callers.
//!
//! A task or job is shown with its owner's name (the caller key or user), never the
//! fingerprint of the upstream key the owner column also holds, and a task's result
//! never: it is the caller's answer. A failed task shows its error message. A working
//! task whose replica stopped beating is shown `stalled` until its owner's next
//! `tasks/get` settles it failed (the console never writes to read).

use serde_json::{Value, json};

use super::Viewer;
use crate::html::{escape, time};
use crate::reply::Reply;
use crate::run::budgets::rfc3339;
use crate::served::Served;
use crate::store::jobs::{JobCursor, ListedJob};
use crate::store::tasks::StoredTask;

const MAX_LIMIT: i64 = 200;
const DEFAULT_LIMIT: i64 = 50;
/// The task statuses a filter may name.
const STATUSES: [&str; 4] = ["working", "completed", "failed", "cancelled"];

/// What a page asks for.
#[derive(Debug, Default, PartialEq, Eq)]
struct Selection {
    status: Option<String>,
    task_cursor: Option<(i64, String)>,
    job_cursor: Option<JobCursor>,
    limit: i64,
}

fn parse_job_cursor(text: &str) -> Option<JobCursor> {
    let mut parts = text.splitn(4, '.');
    let ms = parts.next()?.parse().ok()?;
    let decode = |p: &str| {
        percent_encoding::percent_decode_str(p)
            .decode_utf8()
            .ok()
            .map(|s| s.into_owned())
    };
    Some((
        ms,
        decode(parts.next()?)?,
        decode(parts.next()?)?,
        decode(parts.next()?)?,
    ))
}

fn job_cursor(j: &ListedJob) -> String {
    let enc = |s: &str| {
        percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
    };
    format!(
        "{}.{}.{}.{}",
        j.submitted_ms,
        enc(&j.job.service),
        enc(&j.owner),
        enc(&j.job.id)
    )
}

fn selection(query: &str) -> Result<Selection, String> {
    let fields = super::query(query);
    super::only(&fields, &["status", "taskCursor", "jobCursor", "limit"])?;
    let status = super::field(&fields, "status");
    if let Some(s) = &status
        && !STATUSES.contains(&s.as_str())
    {
        return Err(format!("status `{s}`: one of {}", STATUSES.join(", ")));
    }
    let task_cursor = super::position(&fields, "taskCursor")?;
    let job_cursor = super::field(&fields, "jobCursor")
        .map(|c| {
            parse_job_cursor(&c).ok_or_else(|| {
                format!("jobCursor `{c}`: pass the nextJobCursor of the page before")
            })
        })
        .transpose()?;
    let limit = super::limit(&fields, DEFAULT_LIMIT, MAX_LIMIT)?;
    Ok(Selection {
        status,
        task_cursor,
        job_cursor,
        limit,
    })
}

/// The owner's name: the owner column without the upstream key's fingerprint.
fn owner_name(owner: &str) -> &str {
    match owner.rsplit_once(':') {
        Some((name, print))
            if print.len() == 16 && print.bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            name
        }
        _ => owner,
    }
}

fn task_status(t: &StoredTask, now_ms: i64) -> &str {
    if t.status == "working" && now_ms - t.heartbeat_ms > crate::mcp::tasks::STALE_MS {
        "stalled"
    } else {
        &t.status
    }
}

fn task_json(t: &StoredTask, now_ms: i64) -> Value {
    let error = (t.status == "failed")
        .then(|| {
            t.result
                .as_deref()
                .and_then(|r| serde_json::from_str::<Value>(r).ok())
        })
        .flatten()
        .and_then(|e| e.get("message").and_then(Value::as_str).map(String::from));
    json!({
        "id": t.id,
        "owner": owner_name(&t.owner),
        "tool": t.tool,
        "status": task_status(t, now_ms),
        "error": error,
        "createdAt": rfc3339(t.created_ms),
        "updatedAt": rfc3339(t.updated_ms),
        "expiresAt": rfc3339(t.expires_ms),
    })
}

fn job_json(j: &ListedJob) -> Value {
    json!({
        "service": j.job.service,
        "id": j.job.id,
        "owner": owner_name(&j.owner),
        "tool": j.job.tool,
        "status": j.job.status,
        "submittedAt": j.job.submitted_at,
        "updatedAt": j.job.updated_at,
    })
}

struct Listed {
    selection: Selection,
    tasks: Vec<StoredTask>,
    next_task: Option<String>,
    jobs: Vec<ListedJob>,
    next_job: Option<String>,
}

async fn list(served: &Served, query: &str) -> Result<Listed, Reply> {
    let broker = &served.broker;
    let s = selection(query).map_err(|m| Reply::error(400, "invalid_request", &m))?;
    let store = super::store(served);
    let now = broker.parts.now().as_millisecond();
    let unavailable = |e: crate::store::StoreError| super::store_down("tasks and jobs", &e);
    let limit = usize::try_from(s.limit).unwrap_or(usize::MAX);
    let mut tasks = store
        .list_tasks(
            s.status.as_deref(),
            now,
            s.task_cursor.as_ref().map(|(ms, id)| (*ms, id.as_str())),
            s.limit + 1,
        )
        .await
        .map_err(unavailable)?;
    let next_task = (tasks.len() > limit)
        .then(|| {
            tasks
                .get(limit - 1)
                .map(|t| format!("{}.{}", t.created_ms, t.id))
        })
        .flatten();
    tasks.truncate(limit);
    // Jobs have no status filter of the broker's own (each upstream names its own).
    let mut jobs = if s.status.is_some() {
        Vec::new()
    } else {
        store
            .list_recent_jobs(s.job_cursor.as_ref(), s.limit + 1)
            .await
            .map_err(unavailable)?
    };
    let next_job = (jobs.len() > limit)
        .then(|| jobs.get(limit - 1).map(job_cursor))
        .flatten();
    jobs.truncate(limit);
    Ok(Listed {
        selection: s,
        tasks,
        next_task,
        jobs,
        next_job,
    })
}

/// `GET /admin/api/tasks?status=&taskCursor=&jobCursor=&limit=`.
pub async fn api(served: &Served, query: &str) -> Reply {
    let broker = &served.broker;
    let now = broker.parts.now().as_millisecond();
    match list(served, query).await {
        Ok(l) => Reply::ok(&json!({
            "tasks": l.tasks.iter().map(|t| task_json(t, now)).collect::<Vec<_>>(),
            "nextTaskCursor": l.next_task,
            "jobs": l.jobs.iter().map(job_json).collect::<Vec<_>>(),
            "nextJobCursor": l.next_job,
        })),
        Err(a) => a,
    }
}

fn status_tag(status: &str) -> String {
    let class = match status {
        "completed" => "ok",
        "failed" | "stalled" => "warn",
        _ => "muted",
    };
    format!("<span class=\"tag {class}\">{}</span>", escape(status))
}

/// `GET /admin/tasks`.
pub async fn page(served: &Served, viewer: &Viewer, query: &str) -> crate::html::Page {
    let broker = &served.broker;
    let l = match list(served, query).await {
        Ok(l) => l,
        Err(answer) => {
            return super::shell::failed(
                broker,
                viewer,
                "/admin/tasks",
                "Jobs and tasks",
                &answer,
                "",
            );
        }
    };
    let now = broker.parts.now().as_millisecond();
    let mut words = vec!["all"];
    words.extend(STATUSES);
    let mut body = super::shell::filter_links(
        "Which tasks",
        &words,
        l.selection.status.as_deref().unwrap_or("all"),
        |word| match word {
            "all" => "/admin/tasks".to_string(),
            status => format!("/admin/tasks?status={status}"),
        },
    );
    body.push_str("<h2>MCP tasks</h2>");
    if l.tasks.is_empty() {
        body.push_str("<p class=\"empty\">No task here: a task is a call an MCP client asked to run in the background.</p>");
    } else {
        body.push_str("<table class=\"sortable\"><thead><tr><th>Created</th><th>Tool</th><th>Owner</th><th>Status</th><th>Updated</th><th>Kept until</th></tr></thead><tbody>");
        for t in &l.tasks {
            let shown = task_json(t, now);
            let error = shown["error"]
                .as_str()
                .map(|e| format!("<div class=\"muted\">{}</div>", escape(e)))
                .unwrap_or_default();
            body.push_str(&format!(
                "<tr><td data-sort=\"{}\">{}</td><td><code>{}</code></td><td><code>{}</code></td><td>{}{error}</td><td>{}</td><td>{}</td></tr>",
                t.created_ms,
                time(&rfc3339(t.created_ms)),
                escape(&t.tool),
                escape(owner_name(&t.owner)),
                status_tag(task_status(t, now)),
                time(&rfc3339(t.updated_ms)),
                time(&rfc3339(t.expires_ms)),
            ));
        }
        body.push_str("</tbody></table>");
    }
    let limit = l.selection.limit;
    if let Some(next) = &l.next_task {
        let status = l
            .selection
            .status
            .as_deref()
            .map(|s| format!("status={s}&amp;"))
            .unwrap_or_default();
        body.push_str(&format!("<p class=\"pager\"><a href=\"/admin/tasks?{status}taskCursor={}&amp;limit={limit}\">Older tasks</a></p>", escape(next)));
    }
    if l.selection.status.is_none() {
        body.push_str("<h2>Upstream jobs</h2>");
        if l.jobs.is_empty() {
            body.push_str("<p class=\"empty\">No job: a job is what a tool submits upstream to finish later (an image, a run).</p>");
        } else {
            body.push_str("<table class=\"sortable\"><thead><tr><th>Submitted</th><th>Service</th><th>Job</th><th>Tool</th><th>Owner</th><th>Last status</th><th>Seen</th></tr></thead><tbody>");
            for j in &l.jobs {
                body.push_str(&format!(
                    "<tr><td data-sort=\"{}\">{}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                    j.submitted_ms,
                    time(&j.job.submitted_at),
                    escape(&j.job.service),
                    escape(&j.job.id),
                    escape(&j.job.tool),
                    escape(owner_name(&j.owner)),
                    j.job.status.as_deref().map_or_else(|| "<span class=\"muted\">not read yet</span>".to_string(), escape),
                    j.job.updated_at.as_deref().map_or_else(String::new, time),
                ));
            }
            body.push_str("</tbody></table>");
        }
        if let Some(next) = &l.next_job {
            body.push_str(&format!("<p class=\"pager\"><a href=\"/admin/tasks?jobCursor={}&amp;limit={limit}\">Older jobs</a></p>", escape(&url::form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>())));
        }
    }
    super::shell::page(broker, viewer, "/admin/tasks", 200, "Jobs and tasks", &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_is_shown_without_the_fingerprint_of_its_upstream_key() {
        assert_eq!(owner_name("agent-a:0123456789abcdef"), "agent-a");
        assert_eq!(
            owner_name("https://idp#ana:0123456789abcdef"),
            "https://idp#ana"
        );
        assert_eq!(owner_name("https://idp#ana"), "https://idp#ana");
        assert_eq!(owner_name("agent-a"), "agent-a");
    }

    #[test]
    fn cursors_and_filters_are_read_back_exactly() {
        let job = ListedJob {
            job: crate::store::jobs::Job {
                service: "imagegen".into(),
                id: "job.1/x".into(),
                tool: "imagegen.generate".into(),
                status: None,
                submitted_at: String::new(),
                updated_at: None,
            },
            owner: "https://idp#a.b:0123456789abcdef".into(),
            submitted_ms: 17,
        };
        assert_eq!(
            parse_job_cursor(&job_cursor(&job)),
            Some((17, "imagegen".into(), job.owner.clone(), "job.1/x".into()))
        );
        assert_eq!(
            selection("status=failed&limit=3")
                .unwrap()
                .status
                .as_deref(),
            Some("failed")
        );
        for (query, says) in [
            ("status=done", "status `done`"),
            ("taskCursor=x", "taskCursor `x`"),
            ("jobCursor=1.a", "jobCursor `1.a`"),
            ("limit=500", "limit `500`"),
            ("page=2", "unknown parameter `page`"),
        ] {
            let err = selection(query).unwrap_err();
            assert!(err.contains(says), "{query}: {err}");
        }
    }
}
