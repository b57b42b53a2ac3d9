//! The catalog pages and `/admin/api/tools[/<name>]`: every tool, searched with the
//! ranking `find_tools` uses and filtered by service, risk, tier and class; a tool's
//! page shows its descriptor, hash and version, argument schema, confirmation rule,
//! redaction paths, cost (when priced) and the policies whose scope can reach it (when
//! `[policy]` exists).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::Viewer;
use crate::call::Broker;
use crate::catalog::Tool;
use crate::catalog::costs::{Count, Price};
use crate::html::{escape, folded_json};
use crate::reply::Reply;

/// Tools a list shows by default, and at most.
const LIST_ROWS: (usize, usize) = (100, 2_000);

/// What a list selects.
#[derive(Debug, Default)]
struct Selection {
    q: Option<String>,
    service: Option<String>,
    risk: Option<String>,
    tier: Option<String>,
    class: Option<String>,
    offset: usize,
    limit: usize,
}

fn selection(fields: &BTreeMap<String, String>) -> Result<Selection, String> {
    let text = |name: &str| super::field(fields, name);
    for name in fields.keys() {
        if !["q", "service", "risk", "tier", "class", "cursor", "limit"].contains(&name.as_str()) {
            return Err(format!(
                "unknown parameter `{name}`: the catalog takes q, service, risk, tier, class, cursor and limit"
            ));
        }
    }
    let check = |name: &str, allowed: &[&str]| -> Result<Option<String>, String> {
        match text(name) {
            Some(v) if !allowed.contains(&v.as_str()) => {
                Err(format!("{name} `{v}`: one of {}", allowed.join(", ")))
            }
            v => Ok(v),
        }
    };
    let number = |name: &str, most: usize| -> Result<Option<usize>, String> {
        text(name)
            .map(|v| {
                v.parse::<usize>()
                    .ok()
                    .filter(|n| *n <= most)
                    .ok_or_else(|| format!("{name} `{v}`: a whole number up to {most}"))
            })
            .transpose()
    };
    Ok(Selection {
        q: text("q"),
        service: text("service"),
        risk: check("risk", &["read", "write"])?,
        tier: check("tier", &["agent_ready", "legacy"])?,
        class: check(
            "class",
            &["spend", "destructive", "billing", "token", "credits"],
        )?,
        offset: number("cursor", usize::MAX)?.unwrap_or(0),
        limit: number("limit", LIST_ROWS.1)?
            .filter(|n| *n > 0)
            .unwrap_or(LIST_ROWS.0),
    })
}

fn class_word(c: crate::catalog::descriptor::Class) -> String {
    serde_json::to_value(c)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

/// The tools `s` selects, best first when searched, by name otherwise.
fn select<'a>(broker: &'a Broker, s: &Selection) -> Result<Vec<&'a Tool>, String> {
    let catalog = &broker.parts.catalog;
    if let Some(service) = &s.service
        && !catalog.services.contains_key(service)
    {
        return Err(format!("service `{service}` is not in the catalog"));
    }
    let keep = |tool: &Tool| {
        s.service.as_ref().is_none_or(|x| &tool.service == x)
            && s.risk.as_ref().is_none_or(|r| tool.risk.as_str() == r)
            && s.tier.as_ref().is_none_or(|t| tool.tier.as_str() == t)
            && s.class
                .as_ref()
                .is_none_or(|c| tool.classes.iter().any(|k| &class_word(*k) == c))
    };
    Ok(match &s.q {
        Some(q) => catalog
            .search()
            .search_all(s.service.as_deref(), q, |i| {
                catalog.tools.get(i).is_some_and(keep)
            })
            .into_iter()
            .filter_map(|hit| catalog.tools.get(hit.tool))
            .collect(),
        None => {
            let mut tools: Vec<&Tool> = catalog.tools.iter().filter(|t| keep(t)).collect();
            tools.sort_by(|a, b| a.full_name.cmp(&b.full_name));
            tools
        }
    })
}

fn row(broker: &Broker, tool: &Tool) -> Value {
    let mut row = crate::catalog::describe::summary(&broker.parts.catalog, tool);
    if let Some(map) = row.as_object_mut() {
        map.insert("service".into(), json!(tool.service));
        map.insert("descriptorHash".into(), json!(tool.descriptor_hash));
    }
    row
}

/// `GET /admin/api/tools`.
pub fn api_list(broker: &Broker, query: &str) -> Reply {
    let fields = super::query(query);
    let selected = selection(&fields).and_then(|s| Ok((select(broker, &s)?, s)));
    let (tools, s) = match selected {
        Ok(x) => x,
        Err(message) => return Reply::error(400, "invalid_request", &message),
    };
    let total = tools.len();
    let page: Vec<Value> = tools
        .iter()
        .skip(s.offset)
        .take(s.limit)
        .map(|t| row(broker, t))
        .collect();
    let next = (s.offset + s.limit < total).then(|| (s.offset + s.limit).to_string());
    Reply::ok(&json!({
        "tools": page,
        "total": total,
        "nextCursor": next,
        "snapshotId": broker.parts.catalog.snapshot_id,
    }))
}

fn price_json(price: &Price) -> Value {
    let count = match &price.count {
        Count::Constant(n) => json!({ "each": "call", "units": n }),
        Count::PerItem { pointer, each, max } => {
            json!({ "each": "item", "of": pointer, "units": each, "most": max })
        }
        Count::PerUnit { pointer, each } => {
            json!({ "each": "unit", "of": pointer, "units": each })
        }
        Count::Amount { pointer, currency } => json!({
            "amountOf": pointer,
            "currency": currency.as_ref().map(|(arg, c)| json!({ "argument": arg, "is": c })),
        }),
    };
    json!({
        "unit": price.unit,
        "count": count,
        "settledFrom": price.actual,
        "chargedIf": price.charged_if,
        "writtenAt": price.origin.to_string(),
    })
}

/// The policies whose scope can reach `tool`: id, effect, where, text.
fn policies_of(broker: &Broker, tool: &Tool) -> Option<Value> {
    let policies = broker.parts.policy_set()?;
    let list: Vec<Value> = policies
        .sources()
        .iter()
        .enumerate()
        .filter(|(i, _)| policies.tools_of(*i).any(|n| n == tool.full_name))
        .map(|(_, s)| {
            json!({
                "id": s.id,
                "effect": format!("{:?}", s.effect).to_lowercase(),
                "at": format!("{}:{}", s.file, s.line),
                "text": s.policy.to_string(),
            })
        })
        .collect();
    Some(Value::Array(list))
}

/// Everything the console shows of one tool.
fn detail(broker: &Broker, tool: &Tool) -> Value {
    let catalog = &broker.parts.catalog;
    let redaction: Vec<&str> = tool
        .response
        .redact
        .iter()
        .map(|p| p.source.as_str())
        .collect();
    let conditional: Vec<Value> = tool
        .response
        .redact_unless
        .iter()
        .map(|(_, paths)| json!(paths.iter().map(|p| p.source.as_str()).collect::<Vec<_>>()))
        .collect();
    json!({
        "descriptor": crate::catalog::describe::descriptor(catalog, tool),
        "redaction": {
            "paths": redaction,
            "unlessPaths": conditional,
            "alsoEveryAnswer": "credential-like keys (rules/redaction.toml)",
        },
        "cost": catalog.costs.price(catalog, tool).map(price_json),
        "policies": policies_of(broker, tool),
    })
}

/// `GET /admin/api/tools/<name>`.
pub fn api_tool(broker: &Broker, name: &str) -> Reply {
    match broker.parts.catalog.resolve(name) {
        Some(tool) => Reply::ok(&detail(broker, tool)),
        None => Reply::error(
            404,
            "not_found",
            &format!("no tool `{name}` in the catalog (full names: <service>.<tool>)"),
        ),
    }
}

/// `GET /admin/tools`.
pub fn page(broker: &Broker, viewer: &Viewer, query: &str) -> crate::html::Page {
    let fields = super::query(query);
    let value = |n: &str| fields.get(n).map(String::as_str);
    let services = broker.parts.catalog.service_ids();
    let mut body = format!(
        "<form class=\"filters\" method=\"get\" action=\"/admin/tools\" role=\"search\" aria-label=\"Search the catalog\">\
<label>Search<input type=\"search\" name=\"q\" value=\"{}\" placeholder=\"refund a payment\"></label>{}{}{}{}\
<button type=\"submit\">Search</button> <a href=\"/admin/tools\">Clear</a></form>",
        escape(value("q").unwrap_or("")),
        crate::html::select("service", "Service", &services, value("service")),
        crate::html::select("risk", "Risk", &["read", "write"], value("risk")),
        crate::html::select("tier", "Tier", &["agent_ready", "legacy"], value("tier")),
        crate::html::select(
            "class",
            "Class",
            &["spend", "destructive", "billing", "token", "credits"],
            value("class")
        ),
    );
    let selected = selection(&fields).and_then(|s| Ok((select(broker, &s)?, s)));
    let (tools, s) = match selected {
        Ok(x) => x,
        Err(message) => {
            body.push_str(&format!(
                "<p class=\"warn\" role=\"alert\">{}</p>",
                escape(&message)
            ));
            return super::shell::page(broker, viewer, "/admin/tools", 400, "Catalog", &body);
        }
    };
    body.push_str(&format!(
        "<p class=\"muted\">{} of {} tools{}. Snapshot <code>{}</code>.</p>",
        tools.len(),
        broker.parts.catalog.tools.len(),
        if s.q.is_some() {
            ", best match first"
        } else {
            ", by name"
        },
        escape(&broker.parts.catalog.snapshot_id)
    ));
    if tools.is_empty() {
        body.push_str("<p class=\"empty\">No tool matches. Try fewer words or clear a filter.</p>");
    } else {
        body.push_str("<div class=\"scroll\"><table class=\"sortable\"><thead><tr><th>Tool</th><th>Title</th><th>Risk</th><th>Classes</th><th>Tier</th><th>Confirmation</th></tr></thead><tbody>");
        for tool in tools.iter().skip(s.offset).take(s.limit) {
            let confirmation = crate::catalog::describe::confirmation(&broker.parts.catalog, tool);
            body.push_str(&format!(
                "<tr><td><a href=\"/admin/tools/{}\"><code>{}</code></a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&tool.full_name),
                escape(&tool.full_name),
                escape(&tool.title),
                tool.risk.as_str(),
                escape(&tool.classes.iter().map(|c| class_word(*c)).collect::<Vec<_>>().join(", ")),
                tool.tier.as_str(),
                escape(confirmation["mode"].as_str().unwrap_or("")),
            ));
        }
        body.push_str("</tbody></table></div>");
        if s.offset + s.limit < tools.len() {
            let mut next = fields.clone();
            next.insert("cursor".into(), (s.offset + s.limit).to_string());
            let q: String = url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(next.iter().filter(|(_, v)| !v.is_empty()))
                .finish();
            body.push_str(&format!(
                "<nav class=\"pager\" aria-label=\"Pages\"><a href=\"/admin/tools?{}\">Next {} tools</a></nav>",
                escape(&q),
                s.limit.min(tools.len() - s.offset - s.limit)
            ));
        }
    }
    super::shell::page(broker, viewer, "/admin/tools", 200, "Catalog", &body)
}

/// `GET /admin/tools/<name>`.
pub fn tool_page(broker: &Broker, viewer: &Viewer, name: &str) -> crate::html::Page {
    let Some(tool) = broker.parts.catalog.resolve(name) else {
        let body = format!(
            "<p class=\"empty\">No tool <code>{}</code> in the catalog. <a href=\"/admin/tools\">Search the catalog</a>.</p>",
            escape(name)
        );
        return super::shell::page(broker, viewer, "/admin/tools", 404, "No such tool", &body);
    };
    let d = detail(broker, tool);
    let descriptor = &d["descriptor"];
    let text = |v: &Value| escape(v.as_str().unwrap_or(""));
    let mut body = format!(
        "<p>{}</p><dl><dt>Full name</dt><dd><code>{}</code></dd><dt>Service</dt><dd>{}</dd>\
<dt>Risk</dt><dd>{}</dd><dt>Tier</dt><dd>{}</dd><dt>Upstream</dt><dd><code>{}</code></dd>\
<dt>Descriptor hash</dt><dd><code>{}</code></dd><dt>Catalog version</dt><dd>{}</dd><dt>Written at</dt><dd><code>{}</code></dd></dl>",
        escape(crate::catalog::describe::one_line(&tool.description).as_str()),
        escape(&tool.full_name),
        escape(&tool.service),
        tool.risk.as_str(),
        tool.tier.as_str(),
        escape(&match (
            &descriptor["upstream"]["method"],
            &descriptor["upstream"]["path"]
        ) {
            (Value::String(m), Value::String(p)) => format!("{m} {p}"),
            _ => "local tool (runs in the broker)".into(),
        }),
        text(&descriptor["descriptorHash"]),
        text(&descriptor["catalogVersion"]),
        text(&descriptor["catalogFile"]),
    );
    body.push_str(&format!(
        "<h2>Confirmation</h2>{}",
        folded_json(&descriptor["confirmation"], "The confirmation rule")
    ));
    body.push_str("<h2>Arguments</h2>");
    body.push_str(&folded_json(
        &descriptor["arguments"],
        "The argument schema",
    ));
    body.push_str("<h2>Redaction</h2>");
    let paths = d["redaction"]["paths"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if paths.is_empty() {
        body.push_str("<p class=\"muted\">No paths of its own; the rules' credential-like keys are redacted from every answer.</p>");
    } else {
        body.push_str("<ul>");
        for p in &paths {
            body.push_str(&format!("<li><code>{}</code></li>", text(p)));
        }
        body.push_str(
            "</ul><p class=\"muted\">And the rules' credential-like keys, in every answer.</p>",
        );
    }
    if !d["cost"].is_null() {
        body.push_str(&format!(
            "<h2>Cost</h2>{}",
            folded_json(&d["cost"], "The price")
        ));
    }
    if let Some(policies) = d["policies"].as_array() {
        body.push_str("<h2>Policies that can apply</h2>");
        if policies.is_empty() {
            body.push_str("<p class=\"muted\">No policy's scope reaches this tool: every call of it is denied (policies deny by default).</p>");
        }
        for p in policies {
            body.push_str(&format!(
                "<h3><code>{}</code> <span class=\"tag\">{}</span> <span class=\"muted\">{}</span></h3><pre>{}</pre>",
                text(&p["id"]),
                text(&p["effect"]),
                text(&p["at"]),
                text(&p["text"]),
            ));
        }
    }
    body.push_str(&format!(
        "<h2>Whole descriptor</h2>{}",
        folded_json(descriptor, "The descriptor as get_tool_reference gives it")
    ));
    super::shell::page(broker, viewer, "/admin/tools", 200, &tool.full_name, &body)
}
