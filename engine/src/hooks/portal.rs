//! The portal hooks: `portal.call_read_tool` runs one catalog read tool of any service
//! through the ordinary pipeline; `portal.check_connection` reports authentication and
//! catalog readiness without contacting any upstream.

use serde_json::{Map, Value, json};

use crate::call::{Broker, Exec, RequestCtx, unknown_tool};
use crate::descriptor::Risk;
use crate::error::{CallError, Classification};

fn str_arg<'a>(args: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    args.get(name).and_then(Value::as_str)
}

/// `portal.call_read_tool`.
pub async fn call_read_tool(
    broker: &Broker,
    args: Map<String, Value>,
    ctx: &RequestCtx<'_>,
) -> Result<Exec, CallError> {
    let catalog = &broker.catalog;
    let service_id = str_arg(&args, "serviceId").unwrap_or_default();
    let tool_name = str_arg(&args, "toolName").unwrap_or_default();
    if !catalog.services.contains_key(service_id) || service_id == "portal" {
        return Err(unknown_tool(catalog, &format!("{service_id}.{tool_name}")));
    }
    let Some(tool) = catalog.resolve_in(service_id, tool_name) else {
        return Err(unknown_tool(catalog, &format!("{service_id}.{tool_name}")));
    };
    if tool.risk != Risk::Read {
        return Err(CallError::new(
            Classification::Forbidden,
            format!(
                "`{}` is a write tool; portal.call_read_tool runs read tools only: call `{}` directly",
                tool.full_name, tool.full_name
            ),
        ));
    }
    for profile in ["profileId", "profileSlug"] {
        if let Some(p) = str_arg(&args, profile)
            && !ctx.principal.profiles.iter().any(|allowed| allowed == p)
        {
            return Err(CallError::new(
                Classification::Forbidden,
                format!("this API key may not use the profile given in `{profile}`"),
            ));
        }
    }
    ctx.principal.check(tool)?;
    // The portal's profile arguments route the inner call when its tool takes them.
    let mut arguments = args.get("arguments").cloned();
    if let Some(Value::Object(inner)) = &mut arguments {
        for profile in ["profileId", "profileSlug"] {
            if let Some(p) = str_arg(&args, profile)
                && tool.declares(profile)
            {
                inner.insert(profile.to_string(), Value::String(p.to_string()));
            }
        }
    }
    let inner = broker.execute(tool, arguments, ctx).await?;
    let service = catalog.services.get(&tool.service);
    let mut pagination = inner.pagination.unwrap_or_else(|| json!({}));
    if !inner.truncation.is_empty()
        && let Some(map) = pagination.as_object_mut()
    {
        map.insert("truncation".into(), json!(inner.truncation));
    }
    let pagination = match pagination.as_object() {
        Some(m) if m.is_empty() => Value::Null,
        _ => pagination,
    };
    let summary = inner
        .summary
        .clone()
        .unwrap_or_else(|| broker.summary(tool, &inner.data));
    Ok(Exec {
        summary: Some(if summary.is_empty() {
            format!("{}: ok", tool.title)
        } else {
            summary
        }),
        data: inner.data,
        resource: Some(json!({
            "serviceId": tool.service,
            "toolName": tool.name,
            "catalogVersion": service.map(|s| s.catalog_version.clone()),
            "descriptorHash": tool.descriptor_hash,
            "upstreamStatus": inner.upstream_status,
        })),
        pagination: Some(pagination),
        next_action: inner.next_action,
        ..Exec::default()
    })
}

/// `portal.check_connection`.
pub fn check_connection(
    broker: &Broker,
    args: Map<String, Value>,
    ctx: &RequestCtx<'_>,
) -> Result<Exec, CallError> {
    let catalog = &broker.catalog;
    let only = str_arg(&args, "serviceId");
    if let Some(id) = only
        && !catalog.services.contains_key(id)
    {
        return Err(CallError::validation(format!(
            "`serviceId` is not a configured service{}",
            crate::diag::did_you_mean(id, catalog.services.keys().map(String::as_str))
                .map(|h| format!("; {h}"))
                .unwrap_or_default()
        ))
        .with_details(json!([{ "pointer": "/serviceId", "message": "unknown service id" }])));
    }
    let services: Vec<Value> = catalog
        .services
        .values()
        .filter(|s| only.is_none_or(|id| id == s.id))
        .filter(|s| {
            ctx.principal
                .services
                .as_ref()
                .is_none_or(|allowed| allowed.contains(&s.id))
        })
        .map(|s| super::check::readiness(broker, s, ctx))
        .collect();
    let count = services.len();
    Ok(Exec {
        summary: Some(format!(
            "authenticated; catalog {} ready with {count} service{}",
            catalog.snapshot_id,
            if count == 1 { "" } else { "s" }
        )),
        data: crate::envelope::object([
            ("authenticated", Value::Bool(true)),
            ("catalogReady", Value::Bool(true)),
            ("snapshotId", json!(catalog.snapshot_id)),
            ("services", Value::Array(services)),
        ]),
        resource: Some(json!({ "snapshotId": catalog.snapshot_id })),
        ..Exec::default()
    })
}
