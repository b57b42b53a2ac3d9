//! Minimal valid instances of JSON Schemas: the arguments a conformance run sends for each
//! tool, and the proof (in tests) that every tool's argument schema can be satisfied and
//! every satisfied call renders a request.
//!
//! Only what an object schema requires is filled in; every value is the simplest one its
//! keywords allow (first enum value, the minimum, a string of the minimum length, a value
//! of the declared format). Patterns are met by trying a few common shapes.

use serde_json::{Map, Value, json};

/// Candidates tried, in order, for a string with a `pattern`.
const PATTERN_CANDIDATES: [&str; 14] = [
    "a1b2c3d4-0000-4000-8000-000000000007",
    "sample",
    "a",
    "1",
    "12345",
    "AB",
    "example.com",
    "https://example.com",
    "2026-01-01",
    "user@example.com",
    "Europe/Berlin",
    "php-fpm",
    "US",
    "+15555550123",
];

/// A minimal instance of `schema`.
pub fn sample(schema: &Value) -> Value {
    sample_depth(schema, 0)
}

fn sample_depth(schema: &Value, depth: usize) -> Value {
    let Some(map) = schema.as_object() else {
        return Value::Null;
    };
    if depth > 24 {
        return Value::Null;
    }
    if let Some(c) = map.get("const") {
        return c.clone();
    }
    if let Some(first) = map
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = map.get(key).and_then(Value::as_array) {
            // `anyOf` beside `properties` usually only says which of them is required.
            if map.contains_key("properties") {
                let mut merged = map.clone();
                merged.remove(key);
                if let Some(first) = options.first().and_then(Value::as_object) {
                    let mut required: Vec<Value> = merged
                        .get("required")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    required.extend(
                        first
                            .get("required")
                            .and_then(Value::as_array)
                            .cloned()
                            .unwrap_or_default(),
                    );
                    merged.insert("required".into(), Value::Array(required));
                }
                return sample_depth(&Value::Object(merged), depth + 1);
            }
            let pick = options
                .iter()
                .find(|o| o.get("type") != Some(&json!("null")))
                .or_else(|| options.first());
            if let Some(option) = pick {
                return sample_depth(option, depth + 1);
            }
        }
    }
    if let Some(parts) = map.get("allOf").and_then(Value::as_array) {
        let mut merged = Map::new();
        for part in parts {
            if let Value::Object(o) = sample_depth(part, depth + 1) {
                merged.extend(o);
            }
        }
        return Value::Object(merged);
    }
    let kind = match map.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null")
            .to_string(),
        _ if map.contains_key("properties") || map.contains_key("required") => "object".into(),
        _ if map.contains_key("items") => "array".into(),
        _ => return json!("sample"),
    };
    match kind.as_str() {
        "object" => sample_object(map, depth),
        "array" => {
            // One item at least: an empty list says nothing in a query string.
            let max = map
                .get("maxItems")
                .and_then(Value::as_u64)
                .unwrap_or(u64::MAX);
            let count = map
                .get("minItems")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .max(1)
                .min(max);
            let item = map.get("items").cloned().unwrap_or(json!({}));
            Value::Array((0..count).map(|_| sample_depth(&item, depth + 1)).collect())
        }
        "integer" | "number" => {
            let min = map
                .get("minimum")
                .and_then(Value::as_f64)
                .or_else(|| {
                    map.get("exclusiveMinimum")
                        .and_then(Value::as_f64)
                        .map(|m| m + 1.0)
                })
                .unwrap_or(1.0)
                .ceil();
            let max = map
                .get("maximum")
                .and_then(Value::as_f64)
                .unwrap_or(f64::MAX);
            let value = if min <= max { min } else { max };
            json!(value as i64)
        }
        "boolean" => json!(false),
        "null" => Value::Null,
        _ => string_sample(map),
    }
}

/// A minimal object: its required properties; a nested object that requires nothing
/// gets its first property that samples to something.
fn sample_object(map: &Map<String, Value>, depth: usize) -> Value {
    let mut out = Map::new();
    let props = map.get("properties").and_then(Value::as_object);
    for name in map
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(name) = name.as_str() {
            let prop = props
                .and_then(|p| p.get(name))
                .cloned()
                .unwrap_or(json!({}));
            out.insert(name.to_string(), sample_depth(&prop, depth + 1));
        }
    }
    // A nested object that requires nothing would be `{}`, which a form or query
    // encoding cannot carry at all: give it its first property, so a required
    // object still reaches the upstream. The root (the arguments) stays minimal.
    // A scalar property is preferred, so the sample stays shallow.
    if out.is_empty()
        && depth > 0
        && let Some(props) = props
    {
        // Never into a schema the importer cut ("... (not expanded)"): what it
        // requires is unknown, so a sample there would be a guess.
        let samples = props
            .iter()
            .filter(|(_, prop)| !prop.to_string().contains("not expanded)"))
            .map(|(name, prop)| (name, sample_depth(prop, depth + 1)));
        let mut first_object = None;
        for (name, value) in samples {
            match &value {
                Value::Object(inner) if !inner.is_empty() => {
                    first_object.get_or_insert((name.clone(), value));
                }
                Value::String(_) | Value::Number(_) | Value::Bool(_) => {
                    first_object = Some((name.clone(), value));
                    break;
                }
                _ => {}
            }
        }
        out.extend(first_object);
    }
    Value::Object(out)
}

fn string_sample(map: &Map<String, Value>) -> Value {
    let min = map.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
    let base = match map.get("format").and_then(Value::as_str) {
        Some("date-time") => "2026-01-01T00:00:00Z".to_string(),
        Some("date") => "2026-01-01".to_string(),
        Some("email") => "user@example.com".to_string(),
        Some("uri" | "url") => "https://example.com".to_string(),
        Some("uuid") => "a1b2c3d4-0000-4000-8000-000000000007".to_string(),
        Some("ipv4") => "192.0.2.1".to_string(),
        _ => "sample".to_string(),
    };
    let mut value = if base.len() >= min {
        base
    } else {
        "a".repeat(min)
    };
    if let Some(pattern) = map.get("pattern").and_then(Value::as_str) {
        let checker =
            jsonschema::validator_for(&json!({ "type": "string", "pattern": pattern })).ok();
        let fits = |s: &str| checker.as_ref().is_some_and(|c| c.is_valid(&json!(s)));
        if !fits(&value)
            && let Some(found) = PATTERN_CANDIDATES
                .iter()
                .find(|c| fits(c) && c.len() >= min)
        {
            value = (*found).to_string();
        }
    }
    if let Some(max) = map.get("maxLength").and_then(Value::as_u64) {
        value.truncate(max as usize);
    }
    Value::String(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_fill_only_what_is_required() {
        let schema = json!({
            "type": "object",
            "required": ["id", "n", "when", "kind", "tags", "nested"],
            "properties": {
                "id": { "type": "string", "pattern": "^[0-9]+$" },
                "n": { "type": "integer", "minimum": 3 },
                "when": { "type": "string", "format": "date-time" },
                "kind": { "enum": ["b", "c"] },
                "tags": { "type": "array", "minItems": 1, "items": { "type": "string", "minLength": 2 } },
                "nested": { "type": ["object", "null"], "required": ["x"], "properties": { "x": { "type": "boolean" } } },
                "optional": { "type": "string" }
            }
        });
        assert_eq!(
            sample(&schema),
            json!({ "id": "1", "n": 3, "when": "2026-01-01T00:00:00Z", "kind": "b", "tags": ["sample"], "nested": { "x": false } })
        );
        assert_eq!(
            sample(&json!({ "type": "array", "items": { "type": "integer" } })),
            json!([1])
        );
    }

    #[test]
    fn a_required_object_that_requires_nothing_still_carries_a_value() {
        // `{}` disappears in a form or query encoding: the first scalar property is
        // given, never one inside a schema the importer cut.
        let schema = json!({
            "type": "object",
            "required": ["features"],
            "properties": { "features": { "type": "object", "properties": {
                "cut": { "description": "Thing (not expanded)" },
                "portal": { "type": "object", "required": ["enabled"], "properties": { "enabled": { "type": "boolean" } } },
                "label": { "type": "string" }
            } } }
        });
        assert_eq!(
            sample(&schema),
            json!({ "features": { "label": "sample" } })
        );
        // Without a scalar, the first non-empty object.
        let schema = json!({
            "type": "object",
            "required": ["features"],
            "properties": { "features": { "type": "object", "properties": {
                "portal": { "type": "object", "required": ["enabled"], "properties": { "enabled": { "type": "boolean" } } }
            } } }
        });
        assert_eq!(
            sample(&schema),
            json!({ "features": { "portal": { "enabled": false } } })
        );
        // The arguments themselves stay minimal.
        assert_eq!(
            sample(&json!({ "type": "object", "properties": { "a": { "type": "string" } } })),
            json!({})
        );
    }
}
