//! The Cedar schema of a compiled catalog: what a policy may name, typed by the catalog.
//!
//! - Principals: `User` (an OAuth user, `User::"<issuer>#<subject>"`, with the claims the
//!   deployment names as optional `String` attributes) and `Key` (a static key,
//!   `Key::"<name>"`), each a member of `Role`s.
//! - Resources: `Tool::"<service>.<tool>"`, a member of `Service::"<service>"`, with
//!   `risk`, `tier`, `classes`, `version` (its service's catalog version) and
//!   `descriptorHash`.
//! - Actions: one per tool, `Action::"<service>.<tool>"`, a member of the groups
//!   `Action::"call"`, `Action::"<service>"`, its risk (`"read"`/`"write"`) and each of its
//!   classes (`"spend"`, `"destructive"`, `"billing"`, `"token"`, `"credits"`).
//! - Context per action: `dryRun` (Boolean), `now` (a `datetime`: when the call is
//!   decided), `cost` (a record of the call's estimated cost: one optional `Long`
//!   attribute per cost unit, present when the tool is priced in it) and `arguments`, a
//!   record typed from the tool's argument schema ([`cedar_type`]).

use std::collections::BTreeSet;

use cedar_policy::Schema;
use serde_json::{Map, Value, json};

use crate::catalog::Catalog;
use crate::config::PolicyConfig;

/// Every class word, as its action group is named.
pub const CLASS_GROUPS: [&str; 5] = ["spend", "destructive", "billing", "token", "credits"];

/// The action every tool's action is a member of.
pub const CALL_GROUP: &str = "call";

/// The Cedar schema of `catalog` with the users' attributes `config` names, ready for
/// validation.
pub fn schema(catalog: &Catalog, config: &PolicyConfig) -> Result<Schema, Vec<String>> {
    let json = schema_json(catalog, &config.claims, &config.set_claims, &config.units)
        .map_err(|e| vec![e])?;
    Schema::from_json_value(json).map_err(|e| vec![format!("the catalog's Cedar schema: {e}")])
}

/// The schema in Cedar's own syntax (what `policy schema` prints by default).
pub fn schema_text(json: &Value) -> Result<String, String> {
    let fragment = cedar_policy::SchemaFragment::from_json_value(json.clone())
        .map_err(|e| format!("the catalog's Cedar schema: {e}"))?;
    let text = fragment
        .to_cedarschema()
        .map_err(|e| format!("the catalog's Cedar schema: {e}"))?;
    // No entity or common type of the schema is named `String`, `Long`, `Bool` or
    // `datetime`, so the builtin names need no `__cedar::` to be read right.
    Ok(text.replace("__cedar::", ""))
}

/// The Cedar schema (JSON form) of `catalog`, with `claims` as the users' `String`
/// attributes and `set_claims` as their `Set<String>` attributes, and `context.cost`
/// typed with the catalog's cost units and `units`. Fails when a service id is also
/// the name of a fixed action group.
pub fn schema_json(
    catalog: &Catalog,
    claims: &[String],
    set_claims: &[String],
    units: &[String],
) -> Result<Value, String> {
    let cost: Map<String, Value> = catalog
        .costs
        .units
        .iter()
        .chain(units)
        .map(|unit| (unit.clone(), json!({ "type": "Long", "required": false })))
        .collect();
    let cost = json!({ "type": "Record", "attributes": cost, "required": true });
    let mut actions = Map::new();
    let fixed: BTreeSet<&str> = [CALL_GROUP, "read", "write"]
        .into_iter()
        .chain(CLASS_GROUPS)
        .collect();
    for group in &fixed {
        actions.insert((*group).to_string(), json!({}));
    }
    for service in catalog.services.keys() {
        if fixed.contains(service.as_str()) {
            return Err(format!(
                "service `{service}` has the name of an action group; policies could not tell them apart"
            ));
        }
        actions.insert(service.clone(), json!({}));
    }
    for tool in &catalog.tools {
        let mut member_of = vec![
            json!({ "id": CALL_GROUP }),
            json!({ "id": tool.service }),
            json!({ "id": tool.risk.as_str() }),
        ];
        for class in &tool.classes {
            member_of.push(json!({ "id": class_word(*class) }));
        }
        let arguments = tool_arguments(&tool.arguments.value());
        actions.insert(
            tool.full_name.clone(),
            json!({
                "memberOf": member_of,
                "appliesTo": {
                    "principalTypes": ["User", "Key"],
                    "resourceTypes": ["Tool"],
                    "context": {
                        "type": "Record",
                        "attributes": {
                            "arguments": arguments,
                            "dryRun": { "type": "Boolean", "required": true },
                            "cost": cost,
                            "guards": { "type": "Set", "element": { "type": "String" }, "required": true },
                            "now": { "type": "Extension", "name": "datetime", "required": true },
                        }
                    }
                }
            }),
        );
    }
    let claims: Map<String, Value> = claims
        .iter()
        .map(|c| (c.clone(), json!({ "type": "String", "required": false })))
        .chain(set_claims.iter().map(|c| {
            let set = json!({ "type": "Set", "element": { "type": "String" }, "required": false });
            (c.clone(), set)
        }))
        .collect();
    Ok(json!({
        "": {
            "entityTypes": {
                "Role": {},
                "Service": {},
                "User": {
                    "memberOfTypes": ["Role"],
                    "shape": { "type": "Record", "attributes": claims }
                },
                "Key": { "memberOfTypes": ["Role"] },
                "Tool": {
                    "memberOfTypes": ["Service"],
                    "shape": {
                        "type": "Record",
                        "attributes": {
                            "risk": { "type": "String" },
                            "tier": { "type": "String" },
                            "classes": { "type": "Set", "element": { "type": "String" } },
                            "version": { "type": "String" },
                            "descriptorHash": { "type": "String" },
                        }
                    }
                }
            },
            "actions": actions,
        }
    }))
}

/// A class's word (its action group).
pub fn class_word(class: crate::catalog::descriptor::Class) -> &'static str {
    use crate::catalog::descriptor::Class;
    match class {
        Class::Spend => "spend",
        Class::Destructive => "destructive",
        Class::Billing => "billing",
        Class::Token => "token",
        Class::Credits => "credits",
    }
}

/// The `arguments` record of a tool: every argument whose type Cedar can hold, required
/// where the schema requires it.
fn tool_arguments(schema: &Value) -> Value {
    match cedar_type(schema) {
        Some(record) if record["type"] == "Record" => {
            let mut record = record;
            record["required"] = json!(true);
            record
        }
        _ => json!({ "type": "Record", "attributes": {}, "required": true }),
    }
}

/// The Cedar type of a JSON Schema, where Cedar can hold it:
///
/// | JSON Schema | Cedar |
/// |---|---|
/// | `string` (any format, enums) | `String` |
/// | `integer` | `Long` |
/// | `boolean` | `Boolean` |
/// | `array` of a type Cedar holds | `Set` of it |
/// | `object` with `properties` | `Record`, each property optional unless `required` |
///
/// Not held, so not named by any policy (a policy that names one is refused by the
/// check as an unknown attribute): `number` (Cedar has no floating point; its `decimal`
/// keeps four places, so a cap on a fraction could be passed by a fifth), `null`, a
/// union of types, `anyOf`/`oneOf`, and an object without `properties` (any keys).
pub fn cedar_type(schema: &Value) -> Option<Value> {
    match schema.get("type")?.as_str()? {
        "string" => Some(json!({ "type": "String" })),
        "integer" => Some(json!({ "type": "Long" })),
        "boolean" => Some(json!({ "type": "Boolean" })),
        "array" => {
            let element = cedar_type(schema.get("items")?)?;
            Some(json!({ "type": "Set", "element": element }))
        }
        "object" => {
            let properties = schema.get("properties")?.as_object()?;
            let required: BTreeSet<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let mut attributes = Map::new();
            for (name, property) in properties {
                if let Some(mut t) = cedar_type(property) {
                    t["required"] = json!(required.contains(name.as_str()));
                    attributes.insert(name.clone(), t);
                }
            }
            Some(json!({ "type": "Record", "attributes": attributes }))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_schema_types_map_to_cedar_types_or_are_left_out() {
        let schema = json!({
            "type": "object",
            "required": ["amount", "tags"],
            "properties": {
                "amount": { "type": "integer" },
                "reason": { "type": "string", "enum": ["duplicate", "fraud"] },
                "live": { "type": "boolean" },
                "tags": { "type": "array", "items": { "type": "string" } },
                "rate": { "type": "number" },
                "either": { "type": ["string", "null"] },
                "any": { "type": "object" },
                "address": {
                    "type": "object",
                    "properties": { "city": { "type": "string" } },
                    "required": ["city"]
                },
                "rows": { "type": "array", "items": { "type": "object" } }
            }
        });
        let t = cedar_type(&schema).unwrap_or_default();
        let attributes = t["attributes"].as_object().cloned().unwrap_or_default();
        let names: Vec<&str> = attributes.keys().map(String::as_str).collect();
        assert_eq!(names, ["address", "amount", "live", "reason", "tags"]);
        assert_eq!(
            attributes["amount"],
            json!({ "type": "Long", "required": true })
        );
        assert_eq!(attributes["live"]["required"], json!(false));
        assert_eq!(
            attributes["tags"],
            json!({ "type": "Set", "element": { "type": "String" }, "required": true })
        );
        assert_eq!(
            attributes["address"]["attributes"]["city"],
            json!({ "type": "String", "required": true })
        );
    }
}
