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

use super::schemas::{compact_envelope_schema, published_input};
use crate::answer::envelope::{self, Enveloped, Meta};
use crate::call::{Broker, CallInput};
use crate::caller::Caller;
use crate::catalog::describe::{descriptor, found};
use crate::catalog::descriptor::{Class, EnvelopeKind, Risk, Tier};
use crate::catalog::unknown_tool;
use crate::catalog::{Action, Catalog, Tool};
use crate::config::{Toolset, ToolsetName};
use crate::error::CallError;
use crate::hooks::{FindFilters, text};
use crate::policy::Policies;
use crate::served::Served;
use crate::telemetry::trace::CallTrace;

/// Names of the discovery tools (no service prefix, so they never collide with a
/// catalog tool, whose names are `<service>.<tool>`).
pub const FIND: &str = "find_tools";
/// See [`FIND`].
pub const REFERENCE: &str = "get_tool_reference";
/// See [`FIND`].
pub const CALL: &str = "call_tool";

/// The MCP entry of a catalog tool.
pub fn entry(catalog: &Catalog, tool: &Tool) -> Value {
    let service = catalog.services.get(&tool.service);
    let envelope_kind = service.map_or(EnvelopeKind::Standard, |s| s.envelope);
    let local = matches!(tool.action, Action::Hook(_));
    let idempotent = match (&tool.action, tool.risk) {
        (_, Risk::Read) => true,
        (Action::Http(plan), Risk::Write) => {
            matches!(plan.method.as_str(), "PUT" | "DELETE")
        }
        (Action::Hook(_) | Action::Mcp(_), Risk::Write) => false,
    };
    // Only hints that differ from MCP's defaults (readOnly false, destructive true,
    // idempotent false, openWorld true) are written; destructive and idempotent mean
    // something only for a tool that writes.
    let mut annotations = Map::new();
    if tool.risk == Risk::Read {
        annotations.insert("readOnlyHint".into(), json!(true));
    } else {
        if !tool.classes.contains(&Class::Destructive) {
            annotations.insert("destructiveHint".into(), json!(false));
        }
        if idempotent {
            annotations.insert("idempotentHint".into(), json!(true));
        }
    }
    if local {
        annotations.insert("openWorldHint".into(), json!(false));
    }
    // An MCP server's tool says it itself.
    if let Action::Mcp(plan) = &tool.action
        && plan.open_world == Some(false)
    {
        annotations.insert("openWorldHint".into(), json!(false));
    }
    // The listed name carries the service in the characters model APIs take (the
    // canonical `<service>.<tool>` is in `_meta` and resolves too); only agent-ready
    // tools are listed; the hash and the version let a client pin what it was shown.
    json!({
        "name": tool.listed_name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": published_input(catalog, tool),
        "outputSchema": compact_envelope_schema(envelope_kind),
        "annotations": annotations,
        "_meta": {
            "canonicalName": tool.full_name,
            "catalogVersion": service.map(|s| s.catalog_version.clone()),
            "descriptorHash": tool.descriptor_hash,
        },
    })
}

/// One listed entry as the JSON text `tools/list` sends: entries are kept as text, not
/// as `serde_json::Value` trees, which took six times the memory (52 MB for the
/// catalog) and were copied into every list answer.
pub type EntryText = Box<str>;

/// Entries of every catalog tool as JSON text, in catalog order.
pub fn all_entries(catalog: &Catalog) -> Vec<EntryText> {
    catalog
        .tools
        .iter()
        .map(|t| entry(catalog, t).to_string().into_boxed_str())
        .collect()
}

/// Entries of every catalog tool, built on first use and kept with the endpoints.
fn entries(served: &Served) -> &[EntryText] {
    served
        .endpoints
        .mcp_entries
        .get_or_init(|| all_entries(&served.broker.parts.catalog))
}

fn discovery_entries() -> &'static [EntryText] {
    static ENTRIES: OnceLock<Vec<EntryText>> = OnceLock::new();
    ENTRIES.get_or_init(|| {
        discovery_values()
            .iter()
            .map(|v| v.to_string().into_boxed_str())
            .collect()
    })
}

/// The three discovery tools' entries.
fn discovery_values() -> Vec<Value> {
    let output = compact_envelope_schema(EnvelopeKind::Standard);
    let annotations = |read_only: bool| {
        if read_only {
            json!({ "readOnlyHint": true, "openWorldHint": false })
        } else {
            json!({})
        }
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
            "annotations": annotations(true),
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
            "annotations": annotations(true),
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
                    "arguments": { "type": "object" },
                    "descriptorHash": { "type": "string", "description": "The descriptorHash you reviewed: if the tool changed since, nothing runs (descriptor_changed)." }
                }
            },
            "outputSchema": output,
            "annotations": annotations(false),
        }),
    ]
}

fn listed(tool: &Tool, caller: &Caller, policies: Option<&Policies>) -> bool {
    tool.tier == Tier::AgentReady
        && caller.may_see(tool)
        && policies.is_none_or(|p| p.may_see(tool, caller))
}

/// The entries a caller sees, in a stable order: its toolset, what its key or role
/// fields allow, and with `[policy]` the tools some call could be permitted.
pub fn visible<'a>(served: &'a Served, caller: &Caller) -> Vec<&'a EntryText> {
    let policies = served.broker.parts.policy_set();
    listing(
        &served.broker.parts.catalog,
        entries(served),
        caller,
        policies.as_deref(),
    )
}

/// The entries of `entries` (one per catalog tool, in catalog order) that `caller`'s
/// toolset lists.
pub fn listing<'a>(
    catalog: &Catalog,
    entries: &'a [EntryText],
    caller: &Caller,
    policies: Option<&Policies>,
) -> Vec<&'a EntryText> {
    match &caller.toolset {
        Toolset::Named(ToolsetName::Discovery) => discovery_entries().iter().collect(),
        Toolset::Services(services) => catalog
            .tools
            .iter()
            .zip(entries)
            .filter(|(t, _)| services.contains(&t.service) && listed(t, caller, policies))
            .map(|(_, e)| e)
            .collect(),
        Toolset::Named(ToolsetName::All) => catalog
            .tools
            .iter()
            .zip(entries)
            .filter(|(t, _)| listed(t, caller, policies))
            .map(|(_, e)| e)
            .collect(),
    }
}

fn meta(broker: &Broker, request_id: &str, trace: &CallTrace, tool: &str) -> Meta {
    Meta {
        request_id: request_id.to_string(),
        trace_id: trace.id.clone(),
        tool: Some(tool.into()),
        snapshot_id: Some(broker.parts.catalog.snapshot_id.as_str().into()),
        ..Meta::default()
    }
}

fn invalid(
    broker: &Broker,
    request_id: &str,
    trace: &CallTrace,
    tool: &str,
    message: &str,
) -> Enveloped {
    let err = CallError::validation(message.to_string())
        .with_details(json!([{ "pointer": "", "message": message }]));
    let meta = meta(broker, request_id, trace, tool);
    envelope::standard_err(&err, meta, &broker.parts.catalog.rules)
}

/// Runs a discovery tool; gives the input back when its name is not one. `find_tools`
/// and `get_tool_reference` are a span of their own; `call_tool`'s is the call's.
pub async fn call_discovery<'a>(
    broker: &Broker,
    input: CallInput<'a>,
) -> Result<Enveloped, CallInput<'a>> {
    let name = input.name;
    if ![FIND, REFERENCE, CALL].contains(&name) {
        return Err(input);
    }
    let trace = broker.parts.traces.start(input.trace_parent.clone());
    let (endpoint, caller) = (input.endpoint, input.caller);
    let request_id = input.request_id.clone();
    let response = discovery(broker, &trace, input).await;
    if name != CALL {
        trace.finish(
            || format!("tools/call {name}"),
            |span| {
                crate::call::call_span(span, endpoint, caller, &request_id, name);
                let class = response
                    .meta
                    .as_ref()
                    .and_then(|_| response.body.get("error"))
                    .and_then(|e| e.get("classification"))
                    .and_then(Value::as_str);
                match class {
                    Some(class) => {
                        span.text("error.type", class.to_string());
                        span.text("tool_broker.classification", class.to_string());
                        span.error = true;
                    }
                    None => span.text("tool_broker.classification", "ok"),
                }
            },
        );
    }
    Ok(response)
}

/// `find_tools`: the tools this caller may see that match the query, best first.
fn find(
    broker: &Broker,
    trace: &CallTrace,
    request_id: &str,
    caller: &Caller,
    args: &Map<String, Value>,
) -> Enveloped {
    let (name, catalog) = (FIND, &broker.parts.catalog);
    let Some(query) = text(args, "query") else {
        return invalid(
            broker,
            request_id,
            trace,
            name,
            "`query` is required: what you want to do, in plain words",
        );
    };
    let service = text(args, "service");
    let filters = FindFilters::from_args(args);
    let policies = broker.parts.policy_set();
    let keep = |i: usize| {
        catalog.tools.get(i).is_some_and(|t| {
            broker.parts.may_see(policies.as_deref(), caller, t) && filters.admits(t)
        })
    };
    // One corpus across services, so scores of two services compare.
    let hits = catalog.search().search_all(service, query, keep);
    let results = found(catalog, &hits, &catalog.search().why(query), filters.limit);
    envelope::standard_ok(
        json!({ "query": query, "total": hits.len(), "results": results,
                "next": "call_tool with a result's fullName and its required arguments; get_tool_reference for the full schema" }),
        meta(broker, request_id, trace, name),
    )
}

/// `get_tool_reference`: a tool's whole descriptor, when the caller may see it.
fn reference(
    broker: &Broker,
    trace: &CallTrace,
    request_id: &str,
    caller: &Caller,
    args: &Map<String, Value>,
) -> Enveloped {
    let (name, catalog) = (REFERENCE, &broker.parts.catalog);
    let wanted = text(args, "name").unwrap_or_default();
    match catalog.resolve(wanted) {
        Some(tool) => match caller.check_permission(tool).and_then(|()| {
            (broker.parts.policy_set()).map_or(Ok(()), |p| p.check_visible(tool, caller))
        }) {
            Ok(()) => envelope::standard_ok(
                descriptor(catalog, tool),
                meta(broker, request_id, trace, name),
            ),
            Err(e) => {
                envelope::standard_err(&e, meta(broker, request_id, trace, name), &catalog.rules)
            }
        },
        None => envelope::standard_err(
            &unknown_tool(catalog, wanted),
            meta(broker, request_id, trace, name),
            &catalog.rules,
        ),
    }
}

/// A discovery tool's answer.
async fn discovery(broker: &Broker, trace: &CallTrace, input: CallInput<'_>) -> Enveloped {
    let name = input.name;
    let CallInput {
        request_id,
        arguments,
        headers,
        caller,
        idempotency_key,
        elicitation,
        relay,
        task_watch,
        descriptor_hash,
        trace_parent,
        endpoint,
        ..
    } = input;
    let request_id = request_id.as_str();
    let args = match arguments {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map,
        Some(_) => {
            return invalid(
                broker,
                request_id,
                trace,
                name,
                "`arguments` must be an object",
            );
        }
    };
    match name {
        FIND => find(broker, trace, request_id, caller, &args),
        REFERENCE => reference(broker, trace, request_id, caller, &args),
        _ => {
            let Some(inner) = text(&args, "name") else {
                return invalid(
                    broker,
                    request_id,
                    trace,
                    name,
                    "`name` is required: `<service>.<tool>`",
                );
            };
            let inner = inner.to_string();
            // The pin of the tool called: `call_tool`'s own argument, else the request's.
            let descriptor_hash = match args.get("descriptorHash") {
                None => descriptor_hash,
                Some(Value::String(h)) => Some(h.clone()),
                Some(_) => {
                    return invalid(
                        broker,
                        request_id,
                        trace,
                        name,
                        "`descriptorHash` must be a string: the `descriptorHash` of the tool you reviewed",
                    );
                }
            };
            broker
                .call(CallInput {
                    request_id: request_id.to_string(),
                    name: &inner,
                    arguments: args.get("arguments").cloned(),
                    headers,
                    caller,
                    idempotency_key,
                    elicitation,
                    relay,
                    task_watch,
                    descriptor_hash,
                    trace_parent,
                    endpoint,
                })
                .await
        }
    }
}
