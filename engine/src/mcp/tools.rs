//! What MCP `tools/list` shows and the three discovery tools.
//!
//! Each catalog tool becomes one MCP tool entry (built once, then shared): its full
//! name (`payments.get_customers`), title, description, published input schema, the
//! envelope as output schema, annotations from risk and class words, and `_meta` with
//! tier, catalog version and descriptor hash. Which entries a caller sees is the key's
//! toolset (config `toolset`): every agent-ready tool it may call (default), the tools
//! of some services, or only the discovery tools `find_tools`, `get_tool_reference` and
//! `call_tool`, so an agent searches instead of loading hundreds of schemas. The
//! discovery tools can be called under every toolset.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use super::schemas::{envelope_schema, published_input};
use crate::auth::Principal;
use crate::call::{Broker, CallInput, unknown_tool};
use crate::catalog::{Action, Tool};
use crate::config::{Toolset, ToolsetName};
use crate::describe::{descriptor, summary};
use crate::descriptor::{Class, EnvelopeKind, Risk, Tier};
use crate::envelope::{self, Meta, Response};
use crate::error::CallError;
use crate::hooks::{FindFilters, text};

/// Names of the discovery tools (no service prefix, so they never collide with a
/// catalog tool, whose names are `<service>.<tool>`).
pub const FIND: &str = "find_tools";
/// See [`FIND`].
pub const REFERENCE: &str = "get_tool_reference";
/// See [`FIND`].
pub const CALL: &str = "call_tool";

/// The MCP entry of a catalog tool.
pub fn entry(broker: &Broker, tool: &Tool) -> Value {
    let service = broker.catalog.services.get(&tool.service);
    let envelope_kind = service.map_or(EnvelopeKind::Standard, |s| s.envelope);
    let local = matches!(tool.action, Action::Hook(_));
    let idempotent = match (&tool.action, tool.risk) {
        (_, Risk::Read) => true,
        (Action::Http(plan), Risk::Write) => {
            matches!(plan.method.as_str(), "PUT" | "DELETE")
        }
        (Action::Hook(_), Risk::Write) => false,
    };
    json!({
        "name": tool.full_name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": published_input(tool),
        "outputSchema": envelope_schema(envelope_kind),
        "annotations": {
            "title": tool.title,
            "readOnlyHint": tool.risk == Risk::Read,
            "destructiveHint": tool.risk == Risk::Write && tool.classes.contains(&Class::Destructive),
            "idempotentHint": idempotent,
            "openWorldHint": !local,
        },
        "_meta": {
            "tier": tool.tier,
            "risk": tool.risk,
            "catalogVersion": service.map(|s| s.catalog_version.clone()),
            "descriptorHash": tool.descriptor_hash,
            "service": tool.service,
        },
    })
}

/// Entries of every catalog tool, in catalog order, built on first use.
fn entries(broker: &Broker) -> &[Value] {
    broker.mcp_entries.get_or_init(|| {
        broker
            .catalog
            .tools
            .iter()
            .map(|t| entry(broker, t))
            .collect()
    })
}

fn discovery_entries() -> &'static [Value] {
    static ENTRIES: OnceLock<Vec<Value>> = OnceLock::new();
    ENTRIES.get_or_init(|| {
        let output = envelope_schema(EnvelopeKind::Standard);
        let annotations = |read_only: bool, title: &str| {
            json!({
                "title": title,
                "readOnlyHint": read_only,
                "destructiveHint": !read_only,
                "idempotentHint": read_only,
                "openWorldHint": !read_only,
            })
        };
        vec![
            json!({
                "name": FIND,
                "title": "Find tools",
                "description": "Ranked search over every tool you may use, across services, by what you want to do (\"list issuing cards\", \"create a contact\"). Returns names, titles, risk and one line each; read a result's full schema with get_tool_reference, run it with call_tool. Local: contacts no upstream.",
                "inputSchema": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["query"],
                    "properties": {
                        "query": { "type": "string", "minLength": 1, "maxLength": 200 },
                        "service": { "type": "string", "description": "Only this service." },
                        "risk": { "type": "string", "enum": ["read", "write"] },
                        "include_legacy": { "type": "boolean", "default": false },
                        "limit": { "type": "integer", "minimum": 1, "maximum": 50, "default": 10 }
                    }
                },
                "outputSchema": output,
                "annotations": annotations(true, "Find tools"),
            }),
            json!({
                "name": REFERENCE,
                "title": "Get a tool reference",
                "description": "The complete descriptor of one tool by its full name (`<service>.<tool>`, an alias or a title also resolves): argument and output schemas, risk, confirmation rule, descriptor hash. Local: contacts no upstream.",
                "inputSchema": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["name"],
                    "properties": {
                        "name": { "type": "string", "minLength": 3, "maxLength": 300 }
                    }
                },
                "outputSchema": output,
                "annotations": annotations(true, "Get a tool reference"),
            }),
            json!({
                "name": CALL,
                "title": "Call a tool",
                "description": "Runs one tool by its full name with its arguments object, exactly as calling it directly: same permissions, confirmation rules and envelope. Read its reference first; writes need the confirmation its reference names.",
                "inputSchema": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["name"],
                    "properties": {
                        "name": { "type": "string", "minLength": 3, "maxLength": 300 },
                        "arguments": { "type": "object" }
                    }
                },
                "outputSchema": output,
                "annotations": annotations(false, "Call a tool"),
            }),
        ]
    })
}

fn listed(tool: &Tool, principal: &Principal) -> bool {
    tool.tier == Tier::AgentReady && principal.check(tool).is_ok()
}

/// The entries a caller sees, in a stable order.
pub fn visible<'a>(broker: &'a Broker, principal: &Principal) -> Vec<&'a Value> {
    match &principal.toolset {
        Toolset::Named(ToolsetName::Discovery) => discovery_entries().iter().collect(),
        Toolset::Services(services) => broker
            .catalog
            .tools
            .iter()
            .zip(entries(broker))
            .filter(|(t, _)| services.contains(&t.service) && listed(t, principal))
            .map(|(_, e)| e)
            .collect(),
        Toolset::All | Toolset::Named(ToolsetName::All) => broker
            .catalog
            .tools
            .iter()
            .zip(entries(broker))
            .filter(|(t, _)| listed(t, principal))
            .map(|(_, e)| e)
            .collect(),
    }
}

fn meta(broker: &Broker, request_id: &str, tool: &str) -> Meta {
    Meta {
        request_id: request_id.to_string(),
        trace_id: broker.trace_id(request_id),
        tool: Some(tool.to_string()),
        snapshot_id: Some(broker.catalog.snapshot_id.clone()),
        ..Meta::default()
    }
}

fn invalid(broker: &Broker, request_id: &str, tool: &str, message: &str) -> Response {
    let err = CallError::validation(message.to_string())
        .with_details(json!([{ "pointer": "", "message": message }]));
    envelope::standard_err(&err, &meta(broker, request_id, tool), &broker.catalog.rules)
}

/// Runs a discovery tool; `None` when `name` is not one.
pub async fn call_discovery(
    broker: &Broker,
    name: &str,
    arguments: Option<Value>,
    headers: &hyper::HeaderMap,
    principal: &Principal,
    request_id: &str,
) -> Option<Response> {
    if ![FIND, REFERENCE, CALL].contains(&name) {
        return None;
    }
    let args = match arguments {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map,
        Some(_) => {
            return Some(invalid(
                broker,
                request_id,
                name,
                "`arguments` must be an object",
            ));
        }
    };
    let catalog = &broker.catalog;
    Some(match name {
        FIND => {
            let Some(query) = text(&args, "query") else {
                return Some(invalid(
                    broker,
                    request_id,
                    name,
                    "`query` is required: what you want to do, in plain words",
                ));
            };
            let service = text(&args, "service");
            let filters = FindFilters::from_args(&args);
            let keep = |i: usize| {
                catalog
                    .tools
                    .get(i)
                    .is_some_and(|t| principal.check(t).is_ok() && filters.admits(t))
            };
            let mut hits = Vec::new();
            for id in catalog.services.keys() {
                if service.is_some_and(|s| s != id) {
                    continue;
                }
                hits.extend(catalog.search.search(id, query, keep));
            }
            hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.tool.cmp(&b.tool)));
            let results: Vec<Value> = hits
                .iter()
                .take(filters.limit)
                .filter_map(|h| catalog.tools.get(h.tool))
                .map(summary)
                .collect();
            envelope::standard_ok(
                json!({ "query": query, "total": hits.len(), "results": results,
                        "next": "get_tool_reference with a result's fullName, then call_tool" }),
                &meta(broker, request_id, name),
            )
        }
        REFERENCE => {
            let wanted = text(&args, "name").unwrap_or_default();
            match catalog.resolve(wanted) {
                Some(tool) => match principal.check(tool) {
                    Ok(()) => envelope::standard_ok(
                        descriptor(catalog, tool),
                        &meta(broker, request_id, name),
                    ),
                    Err(e) => {
                        envelope::standard_err(&e, &meta(broker, request_id, name), &catalog.rules)
                    }
                },
                None => envelope::standard_err(
                    &unknown_tool(catalog, wanted),
                    &meta(broker, request_id, name),
                    &catalog.rules,
                ),
            }
        }
        _ => {
            let Some(inner) = text(&args, "name") else {
                return Some(invalid(
                    broker,
                    request_id,
                    name,
                    "`name` is required: `<service>.<tool>`",
                ));
            };
            let inner = inner.to_string();
            broker
                .call(CallInput {
                    request_id: request_id.to_string(),
                    name: &inner,
                    arguments: args.get("arguments").cloned(),
                    headers,
                    principal,
                })
                .await
        }
    })
}
