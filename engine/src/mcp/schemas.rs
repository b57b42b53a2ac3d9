//! Schemas as MCP clients and model providers receive them.
//!
//! Model providers refuse tool input schemas that are not objects at the root or that
//! keep `$ref` / `$defs` / `$schema` (they resolve nothing), and some refuse property
//! names outside `^[a-zA-Z0-9_.-]{1,64}$`. [`lint`] reports those problems for a
//! catalog (`tool-broker catalog lint`); [`published_input`] is what `tools/list`
//! sends: the argument schema without `$schema`/`$id` (a schema with `$ref` or
//! `$defs` would fail the lint, which CI runs).
//!
//! Output schemas describe `structuredContent`, which is the envelope: the standard or
//! portal envelope schema of `schemas/`, with its `$defs` inlined.

use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::catalog::Tool;
use crate::descriptor::EnvelopeKind;

const STANDARD: &str = include_str!("../../../schemas/envelope-standard.schema.json");
const PORTAL: &str = include_str!("../../../schemas/envelope-portal.schema.json");

/// Keys no published schema keeps.
const DROPPED: [&str; 2] = ["$schema", "$id"];

/// The input schema `tools/list` publishes for a tool.
pub fn published_input(tool: &Tool) -> Value {
    match &tool.arguments {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !DROPPED.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The envelope schema of a tool's service, self-contained (no `$ref`, no `$defs`).
pub fn envelope_schema(kind: EnvelopeKind) -> &'static Value {
    static STANDARD_SCHEMA: OnceLock<Value> = OnceLock::new();
    static PORTAL_SCHEMA: OnceLock<Value> = OnceLock::new();
    let (cell, text) = match kind {
        EnvelopeKind::Portal => (&PORTAL_SCHEMA, PORTAL),
        _ => (&STANDARD_SCHEMA, STANDARD),
    };
    cell.get_or_init(|| {
        let schema: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        let defs = schema.get("$defs").cloned().unwrap_or(Value::Null);
        let mut inlined = inline_defs(&schema, &defs, 0);
        if let Value::Object(map) = &mut inlined {
            map.remove("$defs");
            for key in DROPPED {
                map.remove(key);
            }
        }
        inlined
    })
}

fn inline_defs(value: &Value, defs: &Value, depth: usize) -> Value {
    match value {
        Value::Object(map) => {
            if let Some(name) = map
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/$defs/"))
                && depth < 16
                && let Some(target) = defs.get(name)
            {
                return inline_defs(target, defs, depth + 1);
            }
            Value::Object(
                map.iter()
                    .filter(|(k, _)| k.as_str() != "$defs")
                    .map(|(k, v)| (k.clone(), inline_defs(v, defs, depth)))
                    .collect::<Map<_, _>>(),
            )
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| inline_defs(v, defs, depth)).collect())
        }
        other => other.clone(),
    }
}

/// One lint finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Full tool name.
    pub tool: String,
    /// JSON pointer into the argument schema.
    pub pointer: String,
    /// What a provider would refuse.
    pub problem: String,
    /// Whether providers refuse the whole schema (else some providers only).
    pub refused: bool,
}

fn name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// Problems model providers would have with a tool's input schema.
pub fn lint(tool: &Tool) -> Vec<Finding> {
    let mut out = Vec::new();
    let schema = published_input(tool);
    if schema.get("type") != Some(&Value::String("object".into())) {
        out.push(Finding {
            tool: tool.full_name.clone(),
            pointer: String::new(),
            problem: "the root is not `type: object`".into(),
            refused: true,
        });
    }
    walk(&schema, String::new(), tool, &mut out);
    out
}

fn walk(value: &Value, pointer: String, tool: &Tool, out: &mut Vec<Finding>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let here = format!("{pointer}/{}", k.replace('~', "~0").replace('/', "~1"));
                if matches!(
                    k.as_str(),
                    "$ref" | "$defs" | "definitions" | "$schema" | "$id"
                ) {
                    out.push(Finding {
                        tool: tool.full_name.clone(),
                        pointer: here.clone(),
                        problem: format!("`{k}` is not resolved by model providers"),
                        refused: true,
                    });
                }
                if k == "properties"
                    && let Value::Object(props) = v
                {
                    for name in props.keys() {
                        if !name_ok(name) {
                            out.push(Finding {
                                tool: tool.full_name.clone(),
                                pointer: format!("{here}/{name}"),
                                problem: format!(
                                    "property name `{name}` is outside ^[a-zA-Z0-9_.-]{{1,64}}$ (refused by some providers)"
                                ),
                                refused: false,
                            });
                        }
                    }
                }
                // Values of `enum`, `const`, `default` and `examples` are data, not schemas.
                if !matches!(k.as_str(), "enum" | "const" | "default" | "examples") {
                    walk(v, here, tool, out);
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                walk(v, format!("{pointer}/{i}"), tool, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_schemas_are_self_contained_objects() {
        for kind in [EnvelopeKind::Standard, EnvelopeKind::Portal] {
            let schema = envelope_schema(kind);
            assert_eq!(schema["type"], "object");
            let text = schema.to_string();
            assert!(!text.contains("$ref") && !text.contains("$defs"), "{text}");
            assert!(jsonschema::validator_for(schema).is_ok());
        }
    }
}
