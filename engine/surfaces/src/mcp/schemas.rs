//! Schemas as MCP clients and model providers receive them.
//!
//! Model providers refuse tool input schemas that are not objects at the root or that
//! keep `$ref` / `$defs` / `$schema` (they resolve nothing), and some refuse property
//! names outside `^[a-zA-Z0-9_.-]{1,64}$`. [`lint`] reports those problems for a
//! catalog (`tool-broker catalog lint`); [`published_input`] is what `tools/list`
//! sends: the argument schema without `$schema`/`$id` (a schema with `$ref` or
//! `$defs` would fail the lint, which CI runs).
//!
//! Output schemas describe `structuredContent`, which is the envelope. Every tool entry
//! carries it, so `tools/list` publishes a compact form derived from the standard or
//! portal envelope schema of `schemas/` ([`compact_envelope_schema`]): the same
//! required keys, no others allowed, each key's JSON type. Every envelope the broker
//! returns validates against it (a client that validates `structuredContent` accepts
//! it); the complete schema (`schemas/envelope-*.schema.json`, also in
//! `GET /openapi.json`) says the rest.

use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::catalog::descriptor::{ConfirmationMode, EnvelopeKind};
use crate::catalog::{Catalog, Tool};

const STANDARD: &str = include_str!("../../../../schemas/envelope-standard.schema.json");
const PORTAL: &str = include_str!("../../../../schemas/envelope-portal.schema.json");

/// Keys no published schema keeps.
const DROPPED: [&str; 2] = ["$schema", "$id"];

/// The input schema `tools/list` (and the projection) publishes for a tool: the
/// argument schema the broker validates, minus what costs a model tokens and says
/// nothing it acts on:
/// - `$schema` / `$id` at the root (providers refuse them);
/// - the confirmation arguments (`confirm`, `confirmApply`) on a tool that needs no
///   confirmation (a read takes them and ignores them);
/// - `title` annotations inside the schema (names of upstream schema components);
/// - repeated identical `anyOf` branches (an import artefact; the same set of values).
///
/// Every value it accepts, the broker accepts.
pub fn published_input(catalog: &Catalog, tool: &Tool) -> Value {
    let arguments = tool.arguments.value();
    let Value::Object(map) = &arguments else {
        return arguments;
    };
    let rules = &catalog.rules.confirmation;
    let idle: Vec<&str> = match tool.confirmation {
        ConfirmationMode::None | ConfirmationMode::Auto => {
            vec![rules.confirm_arg.as_str(), rules.apply_arg.as_str()]
        }
        _ => Vec::new(),
    };
    let mut out = Map::new();
    for (key, value) in map {
        match key.as_str() {
            k if DROPPED.contains(&k) => {}
            "properties" => {
                let properties = value
                    .as_object()
                    .map(|props| {
                        props
                            .iter()
                            .filter(|(name, _)| !idle.contains(&name.as_str()))
                            .map(|(name, schema)| (name.clone(), slim(schema)))
                            .collect::<Map<_, _>>()
                    })
                    .unwrap_or_default();
                let mut properties = properties;
                if tool.risk == crate::catalog::descriptor::Risk::Write {
                    // The broker's own argument (decision 008): accepted by every
                    // write, never validated against the tool's schema, never sent.
                    properties.insert(
                        crate::confirm::bound::TOKEN_ARG.into(),
                        serde_json::json!({
                            "type": "string",
                            "description": "Token from this call's preview, where writes are confirmed by token"
                        }),
                    );
                    properties.insert(
                        crate::confirm::APPROVAL_ARG.into(),
                        serde_json::json!({
                            "type": "string",
                            "description": "Id of the approval a person gave, where writes are approved by a person"
                        }),
                    );
                }
                out.insert(key.clone(), Value::Object(properties));
            }
            _ => {
                out.insert(key.clone(), slim_keyword(key, value));
            }
        }
    }
    Value::Object(out)
}

/// A subschema without `title` and with distinct `anyOf` branches.
fn slim(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| k.as_str() != "title")
                .map(|(k, v)| (k.clone(), slim_keyword(k, v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The value of one schema keyword, slimmed where it holds subschemas.
fn slim_keyword(key: &str, value: &Value) -> Value {
    match (key, value) {
        ("properties" | "patternProperties" | "$defs" | "definitions", Value::Object(m)) => {
            Value::Object(m.iter().map(|(k, v)| (k.clone(), slim(v))).collect())
        }
        ("anyOf", Value::Array(branches)) => {
            let mut distinct: Vec<Value> = Vec::new();
            for branch in branches.iter().map(slim) {
                if !distinct.contains(&branch) {
                    distinct.push(branch);
                }
            }
            Value::Array(distinct)
        }
        ("oneOf" | "allOf" | "prefixItems", Value::Array(branches)) => {
            Value::Array(branches.iter().map(slim).collect())
        }
        (
            "items"
            | "additionalProperties"
            | "not"
            | "if"
            | "then"
            | "else"
            | "contains"
            | "propertyNames"
            | "unevaluatedProperties"
            | "unevaluatedItems",
            Value::Object(_),
        ) => slim(value),
        _ => value.clone(),
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

/// The envelope's shape as `tools/list` publishes it on every tool: object, its
/// required keys, no other keys, and each key's JSON type (taken from the full schema,
/// through `oneOf`/`anyOf` branches and `$defs`). About 200 bytes instead of 2-3 KB.
pub fn compact_envelope_schema(kind: EnvelopeKind) -> &'static Value {
    static STANDARD_COMPACT: OnceLock<Value> = OnceLock::new();
    static PORTAL_COMPACT: OnceLock<Value> = OnceLock::new();
    let cell = match kind {
        EnvelopeKind::Portal => &PORTAL_COMPACT,
        _ => &STANDARD_COMPACT,
    };
    cell.get_or_init(|| {
        let full = envelope_schema(kind);
        let properties: Map<String, Value> = full
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .map(|(name, schema)| {
                        // One `type` per schema: clients that map tool schemas onto
                        // a single-type dialect (Gemini's OpenAPI subset) refuse
                        // type arrays, so several types are `anyOf` branches; a value
                        // of any type (`data`) lists all six rather than saying
                        // nothing, which portability linters flag.
                        let types = json_types(schema)
                            .unwrap_or_else(|| ALL_TYPES.map(String::from).to_vec());
                        let shape = match types.as_slice() {
                            [one] => serde_json::json!({ "type": one }),
                            several => {
                                let branches: Vec<Value> = several
                                    .iter()
                                    .map(|t| serde_json::json!({ "type": t }))
                                    .collect();
                                serde_json::json!({ "anyOf": branches })
                            }
                        };
                        (name.clone(), shape)
                    })
                    .collect()
            })
            .unwrap_or_default();
        serde_json::json!({
            "type": "object",
            "required": full.get("required").cloned().unwrap_or(Value::Array(Vec::new())),
            "additionalProperties": false,
            "properties": properties,
        })
    })
}

/// Every JSON type (`integer` is a kind of `number`).
const ALL_TYPES: [&str; 6] = ["object", "array", "string", "number", "boolean", "null"];

/// The JSON types a (self-contained) schema admits, when it says: its `type`, or the
/// union of its `oneOf`/`anyOf` branches' types. `None`: any type.
fn json_types(schema: &Value) -> Option<Vec<String>> {
    match schema.get("type") {
        Some(Value::String(t)) => return Some(vec![t.clone()]),
        Some(Value::Array(ts)) => {
            return Some(
                ts.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect(),
            );
        }
        _ => {}
    }
    let branches = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array)?;
    let mut types: Vec<String> = Vec::new();
    for branch in branches {
        for t in json_types(branch)? {
            if !types.contains(&t) {
                types.push(t);
            }
        }
    }
    Some(types)
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
pub fn lint(catalog: &Catalog, tool: &Tool) -> Vec<Finding> {
    let mut out = Vec::new();
    let schema = published_input(catalog, tool);
    if schema.get("type") != Some(&Value::String("object".into())) {
        out.push(Finding {
            tool: tool.full_name.clone(),
            pointer: String::new(),
            problem: "the root is not `type: object`".into(),
            refused: true,
        });
    }
    walk(&schema, String::new(), tool, &mut out);
    out.extend(name_findings(tool));
    out
}

/// What model APIs would make of a tool's name: its listed name must be one they take
/// (`^[a-zA-Z0-9_-]{1,64}$`, always so by construction, checked all the same), and so
/// must the characters of its native name, or the listing rewrites them; a listed name
/// that had to be shortened (over 64 characters) is a warning.
fn name_findings(tool: &Tool) -> Vec<Finding> {
    use crate::catalog::listed::{MAX_LEN, model_safe};
    let finding = |problem: String, refused: bool| Finding {
        tool: tool.full_name.clone(),
        pointer: String::new(),
        problem,
        refused,
    };
    let mut out = Vec::new();
    if !model_safe(&tool.listed_name) {
        out.push(finding(
            format!(
                "the listed name `{}` is outside ^[a-zA-Z0-9_-]{{1,{MAX_LEN}}}$ (a whole tool list is refused over it)",
                tool.listed_name
            ),
            true,
        ));
    }
    let refused_chars = tool.name.is_empty()
        || !tool
            .name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if refused_chars {
        out.push(finding(
            format!(
                "the tool name `{}` holds characters outside ^[a-zA-Z0-9_-]$, which model APIs refuse; rename it (it is listed as `{}`)",
                tool.name, tool.listed_name
            ),
            true,
        ));
    } else if tool.listed_name != format!("{}_{}", tool.service, tool.name) {
        out.push(finding(
            format!(
                "listed on /mcp as `{}`: `{}_{}` is over {MAX_LEN} characters or taken; a shorter name reads better",
                tool.listed_name, tool.service, tool.name
            ),
            false,
        ));
    }
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

    #[test]
    fn compact_envelope_schemas_keep_keys_and_types() {
        let standard = compact_envelope_schema(EnvelopeKind::Standard);
        assert_eq!(standard["additionalProperties"], false);
        assert_eq!(
            standard["properties"]["ok"],
            serde_json::json!({ "type": "boolean" })
        );
        assert_eq!(
            standard["properties"]["error"],
            serde_json::json!({ "anyOf": [{ "type": "null" }, { "type": "object" }] })
        );
        // `data` may be any JSON value: six single-type branches, not a type array.
        assert_eq!(
            standard["properties"]["data"]["anyOf"]
                .as_array()
                .map(Vec::len),
            Some(6)
        );
        for kind in [EnvelopeKind::Standard, EnvelopeKind::Portal] {
            let compact = compact_envelope_schema(kind);
            assert_eq!(compact["required"], envelope_schema(kind)["required"]);
            assert!(compact.to_string().len() < 800, "{compact}");
        }
    }
}
