//! What a call's SERVER span says (decision 013): the OpenTelemetry MCP conventions, the
//! endpoint, the caller, the tool, its cost and how it ended. Never an argument value,
//! a key or a token.

use std::time::Instant;

use super::Endpoint;
use crate::answer::envelope::Cost;
use crate::caller::Caller;
use crate::catalog::Tool;
use crate::catalog::descriptor::Risk;
use crate::error::CallError;
use crate::run::Exec;
use crate::telemetry::trace::Span;

/// Milliseconds since `started`.
pub(super) fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A call's SERVER span attributes (`find_tools` and the other discovery tools too):
/// the OpenTelemetry MCP conventions, the endpoint and the caller.
pub fn call_span(
    span: &mut Span,
    endpoint: Endpoint,
    caller: &Caller,
    request_id: &str,
    tool: &str,
) {
    span.text("mcp.method.name", "tools/call");
    span.text("gen_ai.operation.name", "execute_tool");
    span.text("gen_ai.tool.name", tool);
    if endpoint != Endpoint::Rest && !request_id.is_empty() {
        span.text("jsonrpc.request.id", request_id);
    }
    span.text("tool_broker.endpoint", endpoint.as_str());
    span.text("tool_broker.user", caller.name.as_str());
}

/// A resolved tool's call: [`call_span`], what the catalog says of the tool, and who
/// confirms its writes.
pub(super) fn tool_span(
    span: &mut Span,
    endpoint: Endpoint,
    caller: &Caller,
    request_id: &str,
    tool: &Tool,
) {
    call_span(span, endpoint, caller, request_id, &tool.full_name);
    span.text("tool_broker.service", tool.service.as_str());
    span.text("tool_broker.risk", tool.risk.as_str());
    if tool.risk == Risk::Write {
        span.text("tool_broker.confirmation", caller.confirmation.as_str());
    }
}

/// What a priced call cost: its unit, estimate and (once charged) actual units.
pub(super) fn cost_span(span: &mut Span, cost: &Cost) {
    span.text("tool_broker.cost.unit", &*cost.unit);
    for (name, n) in [
        ("tool_broker.cost.estimate", cost.estimate),
        ("tool_broker.cost.actual", cost.actual),
    ] {
        if let Some(n) = n {
            span.int(name, i64::try_from(n).unwrap_or(i64::MAX));
        }
    }
}

/// How the call ended: its classification (`error.type` and status ERROR when it
/// failed), the upstream status, whether it was a dry run.
pub(super) fn result_span(span: &mut Span, result: &Result<Exec, CallError>) {
    match result {
        Ok(exec) => {
            span.text("tool_broker.classification", "ok");
            span.bool("tool_broker.dry_run", exec.dry_run);
            if let Some(status) = exec.upstream_status {
                span.int("tool_broker.upstream.status", i64::from(status));
            }
        }
        Err(e) => {
            span.text("error.type", e.classification.as_str());
            span.text("tool_broker.classification", e.classification.as_str());
            span.bool("tool_broker.dry_run", false);
            if let Some(status) = e.upstream_status {
                span.int("tool_broker.upstream.status", i64::from(status));
            }
            span.error = true;
        }
    }
}
