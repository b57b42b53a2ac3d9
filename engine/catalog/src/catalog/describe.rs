//! Descriptors: how a tool describes itself to callers (tool reference, capabilities,
//! coverage, find results). One place, so every endpoint shows the same facts.

use serde_json::{Value, json};

use crate::catalog::descriptor::{ConfirmationMode, Tier};
use crate::catalog::search::{Hit, Why};
use crate::catalog::{Action, Catalog, Tool};

/// The build id: the broker's version and the catalog snapshot it serves.
pub fn build_id(catalog: &Catalog) -> String {
    format!(
        "tool-broker-{}+{}",
        env!("CARGO_PKG_VERSION"),
        catalog.snapshot_id
    )
}

/// What a caller must do before the tool acts, as data.
pub fn confirmation(catalog: &Catalog, tool: &Tool) -> Value {
    let c = &catalog.rules.confirmation;
    match tool.confirmation {
        ConfirmationMode::None | ConfirmationMode::Auto => json!({ "mode": "none" }),
        ConfirmationMode::ConfirmFlag => json!({
            "mode": "confirm_flag",
            "argument": c.confirm_arg,
            "rule": format!("refused with confirmation_required unless `{}` is true", c.confirm_arg),
        }),
        ConfirmationMode::DryRunDefault => json!({
            "mode": "dry_run_default",
            "argument": c.confirm_arg,
            "previewArgument": tool.preview_arg,
            "rule": format!("answers a dry-run preview and sends nothing unless `{}` is true", c.confirm_arg),
        }),
        ConfirmationMode::ConfirmApply => json!({
            "mode": "confirm_apply",
            "argument": c.apply_arg,
            "phrase": c.apply_phrase,
            "rule": format!("refused with confirmation_required unless `{}` is exactly `{}`", c.apply_arg, c.apply_phrase),
        }),
    }
}

/// Exposure status for coverage: `exposed`, `raw_only` or `legacy`.
pub fn status(tool: &Tool) -> &'static str {
    if !tool.exposed {
        "raw_only"
    } else if tool.tier == Tier::Legacy {
        "legacy"
    } else {
        "exposed"
    }
}

/// Longest one-line summary, in characters.
const SUMMARY_CHARS: usize = 160;

/// The first sentence of a description, on one line, at most `SUMMARY_CHARS`
/// characters (cut at a word, with `…`).
pub fn one_line(description: &str) -> String {
    let flat = description.split_whitespace().collect::<Vec<_>>().join(" ");
    let sentence = flat
        .char_indices()
        .find(|&(i, c)| {
            matches!(c, '.' | '!' | '?')
                && flat[i + c.len_utf8()..].starts_with(' ')
                && !flat[..i].ends_with("e.g")
                && !flat[..i].ends_with("i.e")
        })
        .map_or(flat.as_str(), |(i, c)| &flat[..i + c.len_utf8()]);
    if sentence.chars().count() <= SUMMARY_CHARS {
        return sentence.to_string();
    }
    let cut: String = sentence.chars().take(SUMMARY_CHARS - 1).collect();
    let at_word = cut.rfind(' ').map_or(cut.as_str(), |i| &cut[..i]);
    format!("{}…", at_word.trim_end_matches([',', ';', ':']))
}

/// The type a schema names, short: `string`, `integer|null`, `enum(a|b)`, `object`.
fn type_label(schema: &Value) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let shown: Vec<String> = values
            .iter()
            .take(6)
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            .collect();
        let more = if values.len() > 6 { "|…" } else { "" };
        return format!("enum({}{more})", shown.join("|"));
    }
    match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("|"),
        _ if schema.get("properties").is_some() => "object".into(),
        _ => "any".into(),
    }
}

/// Required arguments and their types, one level into required objects
/// (`path_params.customer: string`), so a search hit is enough to call the tool.
pub fn required_arguments(schema: &Value) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    let required = |schema: &Value| -> Vec<String> {
        schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    };
    for name in required(schema) {
        let property = schema.pointer(&format!(
            "/properties/{}",
            name.replace('~', "~0").replace('/', "~1")
        ));
        let property = property.unwrap_or(&Value::Null);
        let inner = required(property);
        if inner.is_empty() {
            out.insert(name, json!(type_label(property)));
        } else {
            for child in inner {
                let child_schema = property
                    .get("properties")
                    .and_then(|p| p.get(&child))
                    .unwrap_or(&Value::Null);
                out.insert(format!("{name}.{child}"), json!(type_label(child_schema)));
            }
        }
    }
    out
}

/// What a search result shows: enough to call the tool through `call_tool` without a
/// reference lookup in the common case (name, title, one line, risk and class words,
/// required arguments with their types, the confirmation a write needs).
pub fn summary(catalog: &Catalog, tool: &Tool) -> Value {
    let (method, path, hook) = tool.upstream_label();
    let mut row = json!({
        "name": tool.name,
        "fullName": tool.full_name,
        "title": tool.title,
        "summary": one_line(&tool.description),
        "risk": tool.risk,
        "classes": tool.classes,
        "required": tool.required_arguments,
        "category": tool.category,
        "tier": tool.tier,
        "method": method,
        "path": path,
        "local": hook.is_some(),
    });
    if !matches!(
        tool.confirmation,
        ConfirmationMode::None | ConfirmationMode::Auto
    ) && let Some(map) = row.as_object_mut()
    {
        map.insert(
            "confirmation".into(),
            confirmation(catalog, tool)["rule"].clone(),
        );
    }
    row
}

/// A search's answer, best first: each of the first `limit` hits as its [`summary`],
/// with its rank, its score (three decimals) and why it ranked (`why` read for the same
/// query). The per-service `find_tools`, the MCP discovery `find_tools` and
/// `tool-broker catalog find` all answer with these rows.
pub fn found(catalog: &Catalog, hits: &[Hit], why: &Why<'_>, limit: usize) -> Vec<Value> {
    hits.iter()
        .filter_map(|hit| Some((hit, catalog.tools.get(hit.tool)?)))
        .take(limit)
        .enumerate()
        .map(|(rank, (hit, tool))| {
            let mut row = summary(catalog, tool);
            if let Some(map) = row.as_object_mut() {
                map.insert("rank".into(), json!(rank + 1));
                map.insert("score".into(), json!((hit.score * 1000.0).round() / 1000.0));
                map.insert("why".into(), json!(why.of(hit)));
            }
            row
        })
        .collect()
}

/// The complete descriptor: everything a caller needs to call the tool correctly.
pub fn descriptor(catalog: &Catalog, tool: &Tool) -> Value {
    let (method, path, hook) = tool.upstream_label();
    let service = catalog.services.get(&tool.service);
    json!({
        "name": tool.name,
        "fullName": tool.full_name,
        "canonicalName": tool.canonical_name(),
        "service": tool.service,
        "title": tool.title,
        "description": tool.description,
        "documentation": tool.documentation,
        "aliases": tool.aliases,
        "intents": tool.intents,
        "tier": tool.tier,
        "risk": tool.risk,
        "classes": tool.classes,
        "category": tool.category,
        "status": status(tool),
        "confirmation": confirmation(catalog, tool),
        "upstream": match &tool.action {
            Action::Http(_) => json!({ "method": method, "path": path }),
            Action::Mcp(plan) => json!({ "mcpTool": plan.tool, "pinned": plan.pinned }),
            Action::Hook(_) => Value::Null,
        },
        "local": hook.is_some(),
        "arguments": tool.arguments,
        "output": tool.output,
        "timeoutMs": u64::try_from(tool.timeout.as_millis()).unwrap_or(u64::MAX),
        "source": tool.provenance,
        "catalogFile": format!("{}:{}", tool.source.0, tool.source.1),
        "catalogVersion": service.map(|s| s.catalog_version.clone()),
        "descriptorHash": tool.descriptor_hash,
        "snapshotId": catalog.snapshot_id,
        "buildId": build_id(catalog),
    })
}
