//! What multi-step hooks share: finding a step tool (with the caller's permission
//! checked for it) and evaluating a step expression.

use serde_json::Value;

use crate::catalog::Tool;
use crate::catalog::template::{Expr, Scope};
use crate::error::CallError;
use crate::run::{Pipeline, RequestCtx};

/// A step tool of the hook tool's own service, which the caller must be allowed to run.
/// Compile has checked that it exists and has the right risk.
pub fn step_tool<'a>(
    cx: &'a dyn Pipeline,
    hook_tool: &Tool,
    name: &str,
    ctx: &RequestCtx<'_>,
) -> Result<&'a Tool, CallError> {
    let tool = cx
        .catalog
        .resolve_in(&hook_tool.service, name)
        .ok_or_else(CallError::internal)?;
    ctx.caller.check(tool)?;
    Ok(tool)
}

/// Evaluates a step expression over `scope`; a failure is logged by template name and
/// answers `internal_error` (the catalog, not the caller, is wrong).
pub fn eval(cx: &dyn Pipeline, expr: &Expr, scope: &Value) -> Result<Value, CallError> {
    cx.catalog
        .templates
        .eval(expr, &Scope::borrowed(scope))
        .map(Option::unwrap_or_default)
        .map_err(|e| {
            tracing::error!(template = %e.name, kind = %e.kind, "step expression failed");
            CallError::internal()
        })
}
