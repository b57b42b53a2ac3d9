//! Arguments made from a tool's JSON Schema, for sweeps of the whole catalog: every
//! required property and every optional one the schema describes, each the plainest value
//! its keywords allow (an `enum`'s first, a `const`, the minimum, a string of the
//! minimum length in the declared `format`, a pattern met by one of a few common shapes).
//! Kept in the tests, apart from the engine's own samples, so a sweep does not check the
//! broker with the broker's idea of a valid call.

use serde_json::{Map, Value, json};

/// Shapes tried, in order, for a string with a `pattern`.
const SHAPES: [&str; 12] = [
    "sample",
    "a1b2c3d4-0000-4000-8000-000000000007",
    "a",
    "1",
    "12345",
    "AB",
    "example.com",
    "https://example.com",
    "2026-01-01",
    "user@example.com",
    "US",
    "+15555550123",
];

/// A value `schema` accepts, as far as these keywords tell.
pub fn arguments(schema: &Value) -> Value {
    value(schema, 0)
}

fn value(schema: &Value, depth: usize) -> Value {
    let Some(map) = schema.as_object() else {
        return Value::Null;
    };
    if depth > 12 {
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
    if let Some(all) = map.get("allOf").and_then(Value::as_array) {
        let mut merged = map.clone();
        merged.remove("allOf");
        for part in all.iter().filter_map(Value::as_object) {
            for (k, v) in part {
                match (merged.get_mut(k), v) {
                    (Some(Value::Object(into)), Value::Object(from)) => {
                        into.extend(from.clone());
                    }
                    (Some(Value::Array(into)), Value::Array(from)) => into.extend(from.clone()),
                    _ => {
                        merged.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        return value(&Value::Object(merged), depth + 1);
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(first) = map
            .get(key)
            .and_then(Value::as_array)
            .and_then(|o| o.first())
            && !map.contains_key("properties")
        {
            return value(first, depth + 1);
        }
    }
    let kind = match map.get("type") {
        Some(Value::String(t)) => t.as_str(),
        // A list of types: the first that is not null.
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if map.contains_key("properties") => "object",
        _ if map.contains_key("items") => "array",
        _ => "string",
    };
    match kind {
        "object" => object(map, depth),
        "array" => {
            let count = map
                .get("minItems")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .max(1);
            let item = map.get("items").map_or(json!("x"), |i| value(i, depth + 1));
            Value::Array((0..count).map(|_| item.clone()).collect())
        }
        "integer" => json!(number(map).ceil() as i64),
        "number" => json!(number(map)),
        "boolean" => json!(false),
        "null" => Value::Null,
        _ => string(map),
    }
}

fn object(map: &Map<String, Value>, depth: usize) -> Value {
    let mut out = Map::new();
    if let Some(properties) = map.get("properties").and_then(Value::as_object) {
        for (name, schema) in properties {
            out.insert(name.clone(), value(schema, depth + 1));
        }
    }
    if let Some(required) = map.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            out.entry(name.to_string()).or_insert_with(|| json!("x"));
        }
    }
    Value::Object(out)
}

fn number(map: &Map<String, Value>) -> f64 {
    let at_least = map.get("minimum").and_then(Value::as_f64);
    let above = map
        .get("exclusiveMinimum")
        .and_then(Value::as_f64)
        .map(|m| m + 1.0);
    let at_most = map.get("maximum").and_then(Value::as_f64);
    match (at_least.or(above), at_most) {
        (Some(low), _) => low,
        (None, Some(high)) => high.min(1.0),
        (None, None) => 1.0,
    }
}

fn string(map: &Map<String, Value>) -> Value {
    let min = map.get("minLength").and_then(Value::as_u64).unwrap_or(1) as usize;
    let max = map
        .get("maxLength")
        .and_then(Value::as_u64)
        .map(|m| m as usize);
    let formatted = match map.get("format").and_then(Value::as_str) {
        Some("date-time") => Some("2026-01-01T00:00:00Z"),
        Some("date") => Some("2026-01-01"),
        Some("email") => Some("user@example.com"),
        Some("uri" | "url") => Some("https://example.com"),
        Some("uuid") => Some("a1b2c3d4-0000-4000-8000-000000000007"),
        Some("ipv4") => Some("192.0.2.1"),
        _ => None,
    };
    if let Some(text) = formatted {
        return json!(text);
    }
    if let Some(pattern) = map.get("pattern").and_then(Value::as_str) {
        let schema = json!({ "type": "string", "pattern": pattern });
        if let Ok(check) = jsonschema::validator_for(&schema)
            && let Some(shape) = SHAPES.iter().find(|s| check.is_valid(&json!(s)))
        {
            return json!(shape);
        }
    }
    let mut text = "sample".to_string();
    while text.len() < min {
        text.push('x');
    }
    if let Some(max) = max {
        text.truncate(max.max(min).max(1));
    }
    json!(text)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::arguments;

    #[test]
    fn every_keyword_it_reads_is_met() {
        let schema = json!({
            "type": "object",
            "required": ["id"],
            "properties": {
                "id": { "type": "string", "pattern": "^[0-9]+$" },
                "n": { "type": "integer", "minimum": 3 },
                "kind": { "enum": ["b", "a"] },
                "when": { "type": ["null", "string"], "format": "date-time" },
                "tags": { "type": "array", "items": { "type": "string" }, "minItems": 2 },
            }
        });
        let made = arguments(&schema);
        assert!(
            jsonschema::validator_for(&schema).unwrap().is_valid(&made),
            "{made}"
        );
        assert_eq!(made["id"], "1");
        assert_eq!(made["n"], 3);
        assert_eq!(made["kind"], "b");
        assert_eq!(made["tags"].as_array().unwrap().len(), 2);
    }
}
