//! `category_dispatch`: a wrapper tool that runs one raw tool of its own service, named by
//! `toolName`, limited by the wrapper's `[tool.dispatch]` (categories, risk, excluded
//! class words). Arguments are the wrapper's other keys with the nested `arguments`
//! object laid over them: nested values win (the contract's crm precedence rule).

use serde_json::{Map, Value, json};

use crate::catalog::unknown_tool;
use crate::catalog::{Action, Tool};
use crate::error::CallError;
use crate::run::{Exec, Pipeline, RequestCtx};

/// Keys of the wrapper that are not forwarded to the raw tool.
const OWN_KEYS: [&str; 2] = ["toolName", "arguments"];

fn refuse(message: String) -> CallError {
    CallError::validation(message).with_details(
        json!([{ "pointer": "/toolName", "message": "not a tool this wrapper may run" }]),
    )
}

/// Runs the wrapper.
pub async fn category_dispatch(
    cx: &dyn Pipeline,
    wrapper: &Tool,
    args: Map<String, Value>,
    ctx: &RequestCtx<'_>,
) -> Result<Exec, CallError> {
    let Some(rule) = &wrapper.dispatch else {
        return Err(CallError::internal());
    };
    let name = args
        .get("toolName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(raw) = cx.catalog.resolve_in(&wrapper.service, name) else {
        return Err(unknown_tool(
            &cx.catalog,
            &format!("{}.{name}", wrapper.service),
        ));
    };
    let in_category = raw
        .category
        .as_ref()
        .is_some_and(|c| rule.categories.iter().any(|allowed| allowed == c));
    if !in_category || !matches!(raw.action, Action::Http(_)) {
        return Err(refuse(format!(
            "`{}` runs tools of the categories {}; `{}` is not one of them",
            wrapper.full_name,
            rule.categories
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", "),
            raw.full_name
        )));
    }
    if raw.risk != rule.risk {
        return Err(refuse(format!(
            "`{}` runs {} tools only; `{}` is a {} tool",
            wrapper.full_name,
            rule.risk.as_str(),
            raw.full_name,
            raw.risk.as_str()
        )));
    }
    if let Some(class) = raw
        .classes
        .iter()
        .find(|c| rule.exclude_classes.contains(c))
    {
        return Err(refuse(format!(
            "`{}` does not run {} tools like `{}`; call it directly",
            wrapper.full_name,
            serde_json::to_value(class)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
            raw.full_name
        )));
    }
    ctx.caller.check(raw)?;
    let mut merged: Map<String, Value> = args
        .iter()
        .filter(|(k, _)| !OWN_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    // Schema defaults of the wrapper (e.g. strictTenant) must not override the raw
    // tool's own: only forward what the caller sent or the raw tool accepts.
    if let Some(Value::Object(nested)) = args.get("arguments") {
        for (k, v) in nested {
            merged.insert(k.clone(), v.clone());
        }
    }
    if raw.closed_arguments {
        merged.retain(|k, _| {
            raw.declares(k) || args.get("arguments").and_then(|a| a.get(k)).is_some()
        });
    }
    let mut exec = cx.execute(raw, Some(Value::Object(merged)), ctx).await?;
    exec.dispatched_to = Some(raw.full_name.clone());
    Ok(exec)
}
