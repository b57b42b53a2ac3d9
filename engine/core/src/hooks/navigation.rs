//! Navigation hooks, shared by every provider service: each works on the tools of the
//! service its catalog entry belongs to, never contacts an upstream, and answers from the
//! compiled catalog only.
//!
//! - `find_tools`: ranked search ([`crate::catalog::search`]) with `category`, `risk` and
//!   `include_legacy` filters;
//! - `tool_reference`: one complete descriptor by native name, canonical name, alias or
//!   title;
//! - `capabilities`: identity and counts, or (`include_descriptors`) every descriptor,
//!   paginated;
//! - `endpoint_coverage`: upstream endpoints mapped to tools, with the coverage figures.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::catalog::describe::{build_id, descriptor, found, status};
use crate::catalog::descriptor::{Risk, Tier};
use crate::catalog::unknown_tool;
use crate::catalog::{Action, Catalog, Tool};
use crate::error::CallError;
use crate::run::{Exec, Pipeline, RequestCtx};

fn bad(pointer: &str, message: String) -> CallError {
    CallError::validation(message.clone())
        .with_details(json!([{ "pointer": pointer, "message": message }]))
}

fn flag(args: &Map<String, Value>, name: &str) -> bool {
    args.get(name).and_then(Value::as_bool).unwrap_or(false)
}

/// A non-empty, trimmed string argument.
pub fn text<'a>(args: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    args.get(name)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// `(offset, limit)` from `cursor` and `limit`; the cursor is the offset this hook
/// handed out as `nextCursor`.
fn page(
    args: &Map<String, Value>,
    default: usize,
    max: usize,
) -> Result<(usize, usize), CallError> {
    let limit = match args.get("limit").and_then(Value::as_u64) {
        Some(n) => usize::try_from(n).unwrap_or(max).clamp(1, max),
        None => default,
    };
    let offset = match text(args, "cursor") {
        None => 0,
        Some(c) => c.parse::<usize>().map_err(|_| {
            bad(
                "/cursor",
                format!("`{c}` is not a cursor this tool handed out; pass `nextCursor` from the previous page or omit it"),
            )
        })?,
    };
    Ok((offset, limit))
}

fn next_cursor(offset: usize, shown: usize, total: usize) -> Value {
    if offset + shown < total {
        json!((offset + shown).to_string())
    } else {
        Value::Null
    }
}

fn service_tools<'a>(catalog: &'a Catalog, service: &'a str) -> impl Iterator<Item = &'a Tool> {
    catalog.tools.iter().filter(move |t| t.service == service)
}

/// Checks a `category` filter against the service's categories.
fn category_filter<'a>(
    catalog: &Catalog,
    service: &str,
    args: &'a Map<String, Value>,
) -> Result<Option<&'a str>, CallError> {
    let Some(wanted) = text(args, "category") else {
        return Ok(None);
    };
    let mut known: Vec<&str> = service_tools(catalog, service)
        .filter_map(|t| t.category.as_deref())
        .collect();
    known.sort_unstable();
    known.dedup();
    if known.iter().any(|k| k.eq_ignore_ascii_case(wanted)) {
        Ok(Some(wanted))
    } else {
        let close = crate::catalog::diag::did_you_mean(wanted, known.iter().copied());
        let listed = if known.len() > 30 {
            format!(
                "{}, and {} more (the coverage tool lists them)",
                known[..30].join(", "),
                known.len() - 30
            )
        } else {
            known.join(", ")
        };
        Err(bad(
            "/category",
            match close {
                Some(help) => format!("`{service}` has no category `{wanted}`; {help}"),
                None => {
                    format!("`{service}` has no category `{wanted}`; its categories are: {listed}")
                }
            },
        ))
    }
}

/// The filters every find tool shares (a service's own and the MCP discovery one):
/// `risk`, `include_legacy` and `limit` (default 10, at most 50).
#[derive(Debug, Clone, Copy)]
pub struct FindFilters {
    /// Only tools of this risk.
    pub risk: Option<Risk>,
    /// Legacy tools too.
    pub include_legacy: bool,
    /// Most results.
    pub limit: usize,
}

impl FindFilters {
    /// Reads the filters from a find call's arguments.
    pub fn from_args(args: &Map<String, Value>) -> Self {
        Self {
            risk: match text(args, "risk") {
                Some("read") => Some(Risk::Read),
                Some("write") => Some(Risk::Write),
                _ => None,
            },
            include_legacy: flag(args, "include_legacy"),
            limit: args
                .get("limit")
                .and_then(Value::as_u64)
                .map_or(10, |n| usize::try_from(n).unwrap_or(50).clamp(1, 50)),
        }
    }

    /// Whether a callable tool passes the tier and risk filters.
    pub fn admits(&self, tool: &Tool) -> bool {
        tool.exposed
            && (self.include_legacy || tool.tier == Tier::AgentReady)
            && self.risk.is_none_or(|r| tool.risk == r)
    }
}

/// With `[policy]`, whether some call of `tool` by this caller could be permitted (a
/// search or a reference shows no other).
fn policy_visible(ctx: &RequestCtx<'_>, tool: &Tool) -> bool {
    ctx.policies
        .as_deref()
        .is_none_or(|p| p.may_see(tool, ctx.caller))
}

/// The `find_tools` hook.
pub fn find_tools(
    cx: &dyn Pipeline,
    tool: &Tool,
    args: &Map<String, Value>,
    ctx: &RequestCtx<'_>,
) -> Result<Exec, CallError> {
    let catalog = &cx.catalog;
    let query = text(args, "query").unwrap_or_default();
    let category = category_filter(catalog, &tool.service, args)?;
    let filters = FindFilters::from_args(args);
    let FindFilters {
        risk,
        include_legacy,
        limit,
    } = filters;
    let keep = |i: usize| {
        catalog.tools.get(i).is_some_and(|t| {
            filters.admits(t)
                && policy_visible(ctx, t)
                && category.is_none_or(|c| {
                    t.category
                        .as_deref()
                        .is_some_and(|tc| tc.eq_ignore_ascii_case(c))
                })
        })
    };
    let hits = catalog.search().search(&tool.service, query, keep);
    let results = found(catalog, &hits, &catalog.search().why(query), limit);
    let summary_text = match results.first() {
        Some(best) => format!(
            "{} tools match `{query}`; best: {}",
            hits.len(),
            best["fullName"].as_str().unwrap_or("")
        ),
        None => format!("no `{}` tool matches `{query}`", tool.service),
    };
    Ok(Exec {
        summary: Some(summary_text),
        data: json!({
            "query": query,
            "filters": { "category": category, "risk": risk, "includeLegacy": include_legacy },
            "total": hits.len(),
            "results": results,
            "next": "call the tool reference tool with a result's name for its full argument schema",
        }).into(),
        ..Exec::default()
    })
}

/// The `tool_reference` hook.
pub fn tool_reference(
    cx: &dyn Pipeline,
    tool: &Tool,
    args: &Map<String, Value>,
    ctx: &RequestCtx<'_>,
) -> Result<Exec, CallError> {
    let catalog = &cx.catalog;
    let name = text(args, "name").unwrap_or_default();
    // `hosting.x` names the service explicitly; only this service's tools are described.
    let local = name
        .strip_prefix(&tool.service)
        .and_then(|rest| rest.strip_prefix('.'))
        .unwrap_or(name);
    let Some(found) = catalog.resolve_in(&tool.service, local) else {
        return Err(unknown_tool(catalog, &format!("{}.{local}", tool.service)));
    };
    if let Some(policies) = ctx.policies.as_deref() {
        policies.check_visible(found, ctx.caller)?;
    }
    Ok(Exec {
        summary: Some(format!("descriptor of {}", found.full_name)),
        data: descriptor(catalog, found).into(),
        ..Exec::default()
    })
}

fn counts<'a>(tools: impl Iterator<Item = &'a Tool>) -> Value {
    let (mut total, mut exposed, mut agent_ready, mut legacy, mut raw_only, mut local) =
        (0, 0, 0, 0, 0, 0);
    let (mut read, mut write) = (0, 0);
    let mut by_category: BTreeMap<String, usize> = BTreeMap::new();
    let mut documented = 0;
    for t in tools {
        total += 1;
        match status(t) {
            "raw_only" => raw_only += 1,
            "legacy" => {
                exposed += 1;
                legacy += 1;
            }
            _ => {
                exposed += 1;
                agent_ready += 1;
            }
        }
        if matches!(t.action, Action::Hook(_)) {
            local += 1;
        }
        match t.risk {
            Risk::Read => read += 1,
            Risk::Write => write += 1,
        }
        if !t.description.trim().is_empty() {
            documented += 1;
        }
        *by_category
            .entry(t.category.clone().unwrap_or_else(|| "uncategorized".into()))
            .or_default() += 1;
    }
    json!({
        "raw": total,
        "exposed": exposed,
        "agentReady": agent_ready,
        "documented": documented,
        "legacy": legacy,
        "rawOnly": raw_only,
        "local": local,
        "upstreamOperations": total - local,
        "byRisk": { "read": read, "write": write },
        "byCategory": by_category,
    })
}

/// The `capabilities` hook.
pub fn capabilities(
    cx: &dyn Pipeline,
    tool: &Tool,
    args: &Map<String, Value>,
    ctx: &RequestCtx<'_>,
) -> Result<Exec, CallError> {
    let catalog = &cx.catalog;
    let service = catalog
        .services
        .get(&tool.service)
        .ok_or_else(CallError::internal)?;
    let mut data = json!({
        "service": {
            "id": service.id,
            "title": service.title,
            "description": service.description,
            "catalogVersion": service.catalog_version,
        },
        "snapshotId": catalog.snapshot_id,
        "buildId": build_id(catalog),
        "counts": counts(service_tools(catalog, &service.id).filter(|t| policy_visible(ctx, t))),
    });
    let mut summary_text = format!("{} capabilities", service.id);
    if flag(args, "include_descriptors") {
        let (offset, limit) = page(args, 25, 100)?;
        let tools: Vec<&Tool> = service_tools(catalog, &service.id)
            .filter(|t| policy_visible(ctx, t))
            .collect();
        let shown: Vec<Value> = tools
            .iter()
            .skip(offset)
            .take(limit)
            .map(|t| descriptor(catalog, t))
            .collect();
        summary_text = format!(
            "{} descriptors {}-{} of {}",
            service.id,
            offset + 1,
            offset + shown.len(),
            tools.len()
        );
        if let Some(map) = data.as_object_mut() {
            map.insert(
                "nextCursor".into(),
                next_cursor(offset, shown.len(), tools.len()),
            );
            map.insert("descriptors".into(), Value::Array(shown));
        }
    }
    Ok(Exec {
        summary: Some(summary_text),
        data: data.into(),
        ..Exec::default()
    })
}

/// The `endpoint_coverage` hook.
pub fn endpoint_coverage(
    cx: &dyn Pipeline,
    tool: &Tool,
    args: &Map<String, Value>,
    ctx: &RequestCtx<'_>,
) -> Result<Exec, CallError> {
    let catalog = &cx.catalog;
    let category = category_filter(catalog, &tool.service, args)?;
    let wanted_status = text(args, "status");
    if let Some(s) = wanted_status
        && !matches!(s, "exposed" | "raw_only" | "legacy")
    {
        return Err(bad(
            "/status",
            format!("status `{s}` is not one of exposed, raw_only, legacy"),
        ));
    }
    let (offset, limit) = page(args, 100, 500)?;
    // What the caller's policies hide stays hidden here too, as in every other list.
    let all: Vec<&Tool> = service_tools(catalog, &tool.service)
        .filter(|t| policy_visible(ctx, t))
        .collect();
    let endpoints: Vec<Value> = all
        .iter()
        .filter(|t| matches!(t.action, Action::Http(_)))
        .filter(|t| wanted_status.is_none_or(|s| status(t) == s))
        .filter(|t| {
            category.is_none_or(|c| {
                t.category
                    .as_deref()
                    .is_some_and(|tc| tc.eq_ignore_ascii_case(c))
            })
        })
        .map(|t| {
            let (method, path, _) = t.upstream_label();
            json!({
                "method": method,
                "path": path,
                "tool": t.name,
                "risk": t.risk,
                "status": status(t),
                "category": t.category,
                "operationId": t.provenance.as_ref().and_then(|p| p.operation_id.clone()),
            })
        })
        .collect();
    let total = endpoints.len();
    let shown: Vec<Value> = endpoints.into_iter().skip(offset).take(limit).collect();
    let local: Vec<&str> = all
        .iter()
        .filter(|t| matches!(t.action, Action::Hook(_)))
        .map(|t| t.name.as_str())
        .collect();
    Ok(Exec {
        summary: Some(format!(
            "{} endpoints of {} match; {} shown",
            total,
            tool.service,
            shown.len()
        )),
        data: json!({
            "figures": counts(all.iter().copied()),
            "filters": { "category": category, "status": wanted_status },
            "total": total,
            "nextCursor": next_cursor(offset, shown.len(), total),
            "endpoints": shown,
            "localTools": local,
        })
        .into(),
        ..Exec::default()
    })
}
