//! The two exact envelopes of the spec (DECISIONS section 2) and the one place that turns
//! a [`CallError`] into a response. Their JSON Schemas are committed in `schemas/`
//! (`additionalProperties: false`) and every envelope the tests see is validated
//! against them.

use serde::Serialize;
use serde_json::{Value, json};

use crate::error::CallError;
use crate::rules::Rules;

/// Safe metadata of a standard envelope. Never a header value, key or token.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    /// The JSON-RPC id, as a string.
    pub request_id: String,
    /// The broker's trace id for this call.
    pub trace_id: String,
    /// Service id, when the tool resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    /// Full tool name, when the tool resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The service's catalog version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catalog_version: Option<String>,
    /// The tool's descriptor hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub descriptor_hash: Option<String>,
    /// Catalog snapshot id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<String>,
    /// Time spent in the broker and upstream, in milliseconds.
    pub duration_ms: u64,
    /// Whether this was a dry-run preview.
    pub dry_run: bool,
    /// The upstream HTTP status, when the upstream answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream_status: Option<u16>,
    /// Pagination figures copied from the upstream answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pagination: Option<Value>,
    /// Lists cut to the item budget: `{ pointer, total, returned }` each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub truncation: Vec<Truncation>,
    /// How many values redaction replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redacted: Option<usize>,
    /// The raw tool a wrapper ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dispatched_to: Option<String>,
    /// Present (`true`) when the tool consumes upstream credits (class `spend` or
    /// `credits`), also on previews and failures.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub consumes_credits: bool,
}

/// One truncated list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Truncation {
    /// JSON pointer of the list inside `data`.
    pub pointer: String,
    /// Items the upstream returned.
    pub total: usize,
    /// Items kept.
    pub returned: usize,
}

/// A finished response: HTTP status, body, extra headers.
#[derive(Debug, Clone)]
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// The envelope.
    pub body: Value,
    /// Extra headers (e.g. `Retry-After`).
    pub headers: Vec<(&'static str, String)>,
}

/// The error object of both envelopes.
pub fn error_object(err: &CallError, rules: &Rules) -> Value {
    let mut obj = json!({
        "classification": err.classification.as_str(),
        "message": err.message,
        "retryable": rules.retryable(err.classification),
    });
    if let Some(map) = obj.as_object_mut() {
        if let Some(d) = &err.details {
            map.insert("details".into(), d.clone());
        }
        if let Some(s) = err.upstream_status {
            map.insert("upstreamStatus".into(), json!(s));
        }
        if let Some(s) = err.retry_after_seconds {
            map.insert("retryAfterSeconds".into(), json!(s));
        }
    }
    obj
}

fn retry_headers(err: &CallError) -> Vec<(&'static str, String)> {
    err.retry_after_seconds
        .map(|s| vec![("retry-after", s.to_string())])
        .unwrap_or_default()
}

/// A standard success envelope.
pub fn standard_ok(data: Value, meta: &Meta) -> Response {
    Response {
        status: 200,
        body: json!({ "ok": true, "data": data, "meta": meta, "error": null }),
        headers: Vec::new(),
    }
}

/// A standard failure envelope with the classification's status.
pub fn standard_err(err: &CallError, meta: &Meta, rules: &Rules) -> Response {
    Response {
        status: rules.status(err.classification),
        body: json!({ "ok": false, "data": null, "meta": meta, "error": error_object(err, rules) }),
        headers: retry_headers(err),
    }
}

/// The fields of a portal envelope.
#[derive(Debug, Clone, Default)]
pub struct Portal {
    /// Service the call concerned.
    pub service_id: String,
    /// Tool name (without service prefix for portal tools, as called).
    pub tool_name: String,
    /// Trace id.
    pub trace_id: String,
    /// One-line summary.
    pub summary: String,
    /// Tool result.
    pub data: Value,
    /// The resource acted on, or null.
    pub resource: Value,
    /// Pagination, or null.
    pub pagination: Value,
    /// What to do next, or null.
    pub next_action: Option<String>,
}

/// A portal envelope: success when `err` is `None`.
pub fn portal(p: Portal, err: Option<&CallError>, rules: &Rules) -> Response {
    let (status, error, headers) = match err {
        None => (200, Value::Null, Vec::new()),
        Some(e) => (
            rules.status(e.classification),
            error_object(e, rules),
            retry_headers(e),
        ),
    };
    Response {
        status,
        body: json!({
            "ok": err.is_none(),
            "serviceId": p.service_id,
            "toolName": p.tool_name,
            "traceId": p.trace_id,
            "summary": p.summary,
            "data": if err.is_none() { p.data } else { Value::Null },
            "resource": p.resource,
            "pagination": p.pagination,
            "nextAction": p.next_action,
            "error": error,
        }),
        headers,
    }
}
