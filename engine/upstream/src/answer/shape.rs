//! Response shaping for tools that offer it (payments): `response_mode` (`compact`, the
//! default, or `full`) and a `fields` projection, applied to `data` after redaction and
//! before list truncation.
//!
//! Compact keeps a small field set per object. Objects say their type in an `object`
//! field (`"customer"`, `"charge"`); a service table (`[tables.compact_fields]`) lists the
//! fields kept for a type. A type without an entry keeps its scalar fields (strings,
//! numbers, booleans); a nested object that has an `id` (an expanded reference) becomes
//! that id, other nested objects and arrays are dropped. List envelopes (`{"object":
//! "list", "data": [...], "has_more": ...}`) keep their paging fields and compact each
//! item. `fields` (dot paths, e.g. `["id", "email", "address.city"]`) keeps exactly
//! those paths of each object instead, whatever the mode.

use serde_json::{Map, Value};

/// Keys of a list envelope that are kept as they are.
const LIST_KEYS: [&str; 6] = [
    "object",
    "has_more",
    "url",
    "total_count",
    "next_page",
    "data",
];

fn is_list_envelope(map: &Map<String, Value>) -> bool {
    map.get("data").is_some_and(Value::is_array)
        && map
            .get("object")
            .and_then(Value::as_str)
            .is_some_and(|o| o == "list" || o == "search_result")
}

/// Applies `f` to each object: the items of a list or of a list envelope, or the value.
fn each_object(value: Value, f: &dyn Fn(Map<String, Value>) -> Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.into_iter().map(|v| each_object(v, f)).collect()),
        Value::Object(map) if is_list_envelope(&map) => Value::Object(
            map.into_iter()
                .filter(|(k, _)| LIST_KEYS.contains(&k.as_str()))
                .map(|(k, v)| {
                    let v = if k == "data" { each_object(v, f) } else { v };
                    (k, v)
                })
                .collect(),
        ),
        Value::Object(map) => f(map),
        other => other,
    }
}

/// The compact form of `data`; `table` maps an object type to the fields it keeps.
pub fn compact(data: Value, table: Option<&Value>) -> Value {
    each_object(data, &|map| compact_object(map, table))
}

fn compact_object(map: Map<String, Value>, table: Option<&Value>) -> Value {
    let listed: Option<Vec<&str>> = map
        .get("object")
        .and_then(Value::as_str)
        .and_then(|kind| table?.get(kind))
        .and_then(Value::as_array)
        .map(|fields| fields.iter().filter_map(Value::as_str).collect());
    let mut out = Map::new();
    match listed {
        Some(fields) => {
            for field in fields {
                if let Some(v) = map.get(field)
                    && !v.is_null()
                {
                    out.insert(field.to_string(), reference(v.clone()));
                }
            }
        }
        None => {
            for (k, v) in map {
                match v {
                    Value::Null | Value::Array(_) => {}
                    Value::Object(inner) => {
                        if let Some(id) = inner.get("id").filter(|id| id.is_string()) {
                            out.insert(k, id.clone());
                        }
                    }
                    scalar => {
                        out.insert(k, scalar);
                    }
                }
            }
        }
    }
    Value::Object(out)
}

/// An expanded object named in a compact field list becomes its id.
fn reference(value: Value) -> Value {
    match value {
        Value::Object(inner) if inner.get("id").is_some_and(Value::is_string) => {
            inner.get("id").cloned().unwrap_or(Value::Null)
        }
        other => other,
    }
}

/// Keeps exactly the dot paths `fields` of each object.
pub fn project(data: Value, fields: &[String]) -> Value {
    each_object(data, &|map| {
        let source = Value::Object(map);
        let mut out = Value::Object(Map::new());
        for path in fields {
            let parts: Vec<&str> = path.split('.').filter(|p| !p.is_empty()).collect();
            let mut found = Some(&source);
            for part in &parts {
                found = found.and_then(|v| v.get(part));
            }
            if let Some(value) = found {
                insert_path(&mut out, &parts, value.clone());
            }
        }
        out
    })
}

fn insert_path(target: &mut Value, parts: &[&str], value: Value) {
    let Some((last, parents)) = parts.split_last() else {
        return;
    };
    let mut node = target;
    for part in parents {
        let Value::Object(map) = node else { return };
        node = map
            .entry((*part).to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    if let Value::Object(map) = node {
        map.insert((*last).to_string(), value);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn compact_uses_the_table_then_scalars() {
        let table = json!({ "customer": ["id", "object", "email", "default_source"] });
        let list = json!({
            "object": "list", "has_more": true, "url": "/v1/customers", "extra": 1,
            "data": [
                { "id": "cus_1", "object": "customer", "email": "a@b.c", "name": "A",
                  "default_source": { "id": "card_1", "object": "card" } },
                { "id": "ch_1", "object": "charge", "amount": 5, "metadata": { "k": "v" },
                  "customer": { "id": "cus_1", "object": "customer" }, "refunds": [1], "note": null }
            ]
        });
        assert_eq!(
            compact(list, Some(&table)),
            json!({
                "object": "list", "has_more": true, "url": "/v1/customers",
                "data": [
                    { "id": "cus_1", "object": "customer", "email": "a@b.c", "default_source": "card_1" },
                    { "id": "ch_1", "object": "charge", "amount": 5, "customer": "cus_1" }
                ]
            })
        );
    }

    #[test]
    fn fields_keep_exact_paths_of_each_object() {
        let one =
            json!({ "id": "cus_1", "email": "a@b.c", "address": { "city": "Oslo", "line1": "x" } });
        assert_eq!(
            project(one, &["id".into(), "address.city".into(), "missing".into()]),
            json!({ "id": "cus_1", "address": { "city": "Oslo" } })
        );
    }
}
