//! The portal hooks: `portal.call_read_tool` runs one catalog read tool of any service
//! through the ordinary pipeline; `portal.check_connection` reports authentication and
//! catalog readiness without contacting any upstream.

use serde_json::{Map, Value, json};

use super::check::CallerPart;
use crate::catalog::descriptor::Risk;
use crate::catalog::unknown_tool;
use crate::error::{CallError, Classification};
use crate::run::{Exec, Pipeline, RequestCtx};

fn str_arg<'a>(args: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    args.get(name).and_then(Value::as_str)
}

/// `portal.call_read_tool`.
pub async fn call_read_tool(
    cx: &dyn Pipeline,
    args: Map<String, Value>,
    ctx: &RequestCtx<'_>,
) -> Result<Exec, CallError> {
    let catalog = &cx.catalog;
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
            && !ctx.caller.profiles.iter().any(|allowed| allowed == p)
        {
            return Err(CallError::new(
                Classification::Forbidden,
                format!("this API key may not use the profile given in `{profile}`"),
            ));
        }
    }
    ctx.caller.check(tool)?;
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
    let mut inner = cx.execute(tool, arguments, ctx).await?;
    let data = std::mem::take(&mut inner.data).into_value();
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
        .unwrap_or_else(|| cx.summary(tool, &data));
    Ok(Exec {
        summary: Some(if summary.is_empty() {
            format!("{}: ok", tool.title)
        } else {
            summary
        }),
        data: data.into(),
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

/// `portal.check_connection` answers kept by what they depend on: who calls, their write
/// confirmation, the `serviceId` asked for, and each service's caller part
/// (`check::CallerPart`). The rest of an answer is fixed while the broker runs,
/// so an answer is built once per such state and then served as its text. Bounded: at
/// `MAX_ANSWERS` states the map is emptied and refilled.
pub type ConnectionAnswers = std::collections::HashMap<Vec<u8>, (std::sync::Arc<str>, usize)>;

/// The most `portal.check_connection` answers a broker keeps.
pub const MAX_ANSWERS: usize = 256;

/// Who the broker saw: a user's issuer, subject and scopes, or a key's name; never a
/// token or a key.
fn identity(caller: &crate::caller::Caller) -> Value {
    match &caller.user {
        Some(user) => json!({
            "kind": "user",
            "issuer": user.issuer,
            "subject": user.subject,
            "scopes": caller.scopes.as_ref().map(crate::caller::oauth::scopes::Scopes::names),
        }),
        None => json!({ "kind": "key", "name": caller.name }),
    }
}

/// `portal.get_budget`: each budget binding the caller, with what its window holds now
/// and when it resets. No upstream is contacted.
pub async fn get_budget(cx: &dyn Pipeline, ctx: &RequestCtx<'_>) -> Exec {
    let rooms = crate::run::budgets::standing(cx.parts(), ctx.caller, None, None).await;
    let budgets = crate::run::budgets::as_json(&rooms);
    let summary = match rooms.as_slice() {
        [] => "no budget binds this caller".to_string(),
        [one] => format!(
            "budget {}: {} of {} {} left until {}",
            one.name, one.remaining, one.limit, one.unit, one.resets_at
        ),
        many => format!("{} budgets bind this caller", many.len()),
    };
    Exec {
        summary: Some(summary),
        data: crate::answer::envelope::object([
            ("identity", identity(ctx.caller)),
            ("budgets", Value::Array(budgets)),
        ])
        .into(),
        ..Exec::default()
    }
}

/// `portal.check_connection`.
pub fn check_connection(
    cx: &dyn Pipeline,
    state: &super::State,
    args: Map<String, Value>,
    ctx: &RequestCtx<'_>,
    stored: &[String],
) -> Result<Exec, CallError> {
    let catalog = &cx.catalog;
    let only = str_arg(&args, "serviceId");
    if let Some(id) = only
        && !catalog.services.contains_key(id)
    {
        return Err(CallError::validation(format!(
            "`serviceId` is not a configured service{}",
            crate::catalog::diag::did_you_mean(id, catalog.services.keys().map(String::as_str))
                .map(|h| format!("; {h}"))
                .unwrap_or_default()
        ))
        .with_details(json!([{ "pointer": "/serviceId", "message": "unknown service id" }])));
    }
    let parts: Vec<_> = catalog
        .services
        .values()
        .map(|s| (s, CallerPart::of(cx, s, ctx, stored)))
        .collect();
    let confirmation = ctx.caller.confirmation.as_str();
    let who = &ctx.caller.name;
    let mut key = Vec::with_capacity(
        who.len() + confirmation.len() + only.map_or(0, str::len) + parts.len() + 3,
    );
    key.extend_from_slice(who.as_bytes());
    key.push(0);
    key.extend_from_slice(confirmation.as_bytes());
    key.push(0);
    key.extend_from_slice(only.unwrap_or_default().as_bytes());
    key.push(0);
    key.extend(parts.iter().map(|(_, part)| part.key_byte()));
    let kept = state
        .connection_answers
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&key)
        .cloned();
    let (text, count) = match kept {
        Some(kept) => kept,
        None => {
            let services: Vec<Value> = parts
                .into_iter()
                .filter(|(s, part)| only.is_none_or(|id| id == s.id) && part.granted)
                .map(|(s, part)| super::check::readiness_with(cx, state, s, part, ctx))
                .collect();
            let count = services.len();
            let data = crate::answer::envelope::object([
                ("authenticated", Value::Bool(true)),
                ("identity", identity(ctx.caller)),
                ("catalogReady", Value::Bool(true)),
                ("snapshotId", json!(catalog.snapshot_id)),
                ("services", Value::Array(services)),
            ]);
            let text = serde_json::to_string(&data).map_err(|_| CallError::internal())?;
            let answer = (std::sync::Arc::from(text), count);
            let mut answers = state
                .connection_answers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if answers.len() >= MAX_ANSWERS {
                answers.clear();
            }
            answers.insert(key, answer.clone());
            answer
        }
    };
    Ok(Exec {
        summary: Some(format!(
            "authenticated; catalog {} ready with {count} service{}",
            catalog.snapshot_id,
            if count == 1 { "" } else { "s" }
        )),
        data: crate::run::Data::Text(text),
        resource: Some(json!({ "snapshotId": catalog.snapshot_id })),
        ..Exec::default()
    })
}
