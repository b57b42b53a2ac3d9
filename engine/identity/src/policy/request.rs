//! What Cedar is asked about one call: the principal's entity (its roles, its claims),
//! the tool's entity and action (built once per catalog), and the context
//! (`arguments` read by the tool's Cedar shape, `dryRun`, `now`).

use std::collections::{HashMap, HashSet};

use cedar_policy::{Entity, EntityId, EntityTypeName, EntityUid, RestrictedExpression};
use serde_json::Value;

use super::schema::{CALL_GROUP, class_word};
use crate::caller::{Caller, Claim};
use crate::catalog::Tool;

/// The Cedar type an argument is read as (from [`super::schema::cedar_type`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// `String`.
    String,
    /// `Long`.
    Long,
    /// `Bool`.
    Bool,
    /// `Set` of a type.
    Set(Box<Shape>),
    /// A record of named fields (each optional unless required).
    Record(Vec<(String, Shape)>),
}

impl Shape {
    /// The shape of a Cedar type in the schema's JSON form; `None` for a type this
    /// module does not make (the schema never holds one).
    pub fn from_cedar(t: &Value) -> Option<Shape> {
        Some(match t.get("type")?.as_str()? {
            "String" => Shape::String,
            "Long" => Shape::Long,
            "Boolean" => Shape::Bool,
            "Set" => Shape::Set(Box::new(Shape::from_cedar(t.get("element")?)?)),
            "Record" => Shape::Record(
                t.get("attributes")?
                    .as_object()?
                    .iter()
                    .filter_map(|(k, v)| Some((k.clone(), Shape::from_cedar(v)?)))
                    .collect(),
            ),
            _ => return None,
        })
    }

    /// A JSON value read as this shape; `Err` with the JSON pointer, relative to
    /// `value`, of what does not fit (a type the schema check let through, or an integer
    /// beyond 64 bits). The pointer is written only on that path: a call that fits
    /// allocates none.
    pub fn read(&self, value: &Value) -> Result<RestrictedExpression, String> {
        match (self, value) {
            (Shape::String, Value::String(s)) => Ok(RestrictedExpression::new_string(s.clone())),
            (Shape::Bool, Value::Bool(b)) => Ok(RestrictedExpression::new_bool(*b)),
            (Shape::Long, Value::Number(n)) => match n.as_i64() {
                Some(i) => Ok(RestrictedExpression::new_long(i)),
                // A whole number written with a fraction (`5.0`) is the integer it is.
                None => match n.as_f64() {
                    Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 =>
                    {
                        #[expect(clippy::cast_possible_truncation, reason = "whole and in range")]
                        Ok(RestrictedExpression::new_long(f as i64))
                    }
                    _ => Err(String::new()),
                },
            },
            (Shape::Set(element), Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    out.push(element.read(item).map_err(|p| format!("/{i}{p}"))?);
                }
                Ok(RestrictedExpression::new_set(out))
            }
            (Shape::Record(fields), Value::Object(map)) => read_record(fields, map),
            _ => Err(String::new()),
        }
    }
}

/// An object read as a record of `fields` (the arguments of a call, or an object
/// argument). Fields the shape does not name are not read: no policy can name them;
/// `null` for a field is its absence.
pub fn read_record(
    fields: &[(String, Shape)],
    map: &serde_json::Map<String, Value>,
) -> Result<RestrictedExpression, String> {
    let mut out = Vec::with_capacity(fields.len());
    for (name, shape) in fields {
        match map.get(name) {
            None | Some(Value::Null) => {}
            Some(v) => out.push((
                name.clone(),
                shape.read(v).map_err(|p| format!("/{}{p}", escape(name)))?,
            )),
        }
    }
    RestrictedExpression::new_record(out).map_err(|_| String::new())
}

/// A JSON pointer token.
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// The entity type names policies use, parsed once.
#[derive(Debug, Clone)]
pub struct Types {
    user: EntityTypeName,
    key: EntityTypeName,
    role: EntityTypeName,
    tool: EntityTypeName,
    service: EntityTypeName,
    action: EntityTypeName,
}

impl Types {
    /// The six type names.
    pub fn new() -> Result<Self, String> {
        let name = |n: &str| {
            n.parse::<EntityTypeName>()
                .map_err(|e| format!("Cedar type `{n}`: {e}"))
        };
        Ok(Self {
            user: name("User")?,
            key: name("Key")?,
            role: name("Role")?,
            tool: name("Tool")?,
            service: name("Service")?,
            action: name("Action")?,
        })
    }

    fn uid(t: &EntityTypeName, id: &str) -> EntityUid {
        EntityUid::from_type_name_and_id(t.clone(), EntityId::new(id))
    }

    /// `Action::"<id>"`.
    pub fn action(&self, id: &str) -> EntityUid {
        Self::uid(&self.action, id)
    }

    /// `Role::"<id>"`.
    pub fn role(&self, id: &str) -> EntityUid {
        Self::uid(&self.role, id)
    }

    /// `Service::"<id>"`.
    pub fn service(&self, id: &str) -> EntityUid {
        Self::uid(&self.service, id)
    }

    /// `Tool::"<id>"`.
    pub fn tool(&self, id: &str) -> EntityUid {
        Self::uid(&self.tool, id)
    }

    /// The principal's uid: `User::"<issuer>#<subject>"` or `Key::"<name>"`.
    pub fn principal_uid(&self, p: &Caller) -> EntityUid {
        match &p.user {
            Some(u) => Self::uid(&self.user, &format!("{}#{}", u.issuer, u.subject)),
            None => Self::uid(&self.key, &p.name),
        }
    }

    /// The principal's entity: in its roles, with its claims as attributes.
    pub fn principal(&self, p: &Caller) -> Result<Entity, String> {
        let parents: HashSet<EntityUid> = p.roles.iter().map(|r| self.role(r)).collect();
        let uid = self.principal_uid(p);
        if p.claims.is_empty() {
            return Ok(Entity::new_no_attrs(uid, parents));
        }
        let attrs: HashMap<String, RestrictedExpression> = p
            .claims
            .iter()
            .map(|(name, value)| {
                let v = match value {
                    Claim::One(s) => RestrictedExpression::new_string(s.clone()),
                    Claim::Many(items) => RestrictedExpression::new_set(
                        items
                            .iter()
                            .map(|s| RestrictedExpression::new_string(s.clone())),
                    ),
                };
                (name.clone(), v)
            })
            .collect();
        Entity::new(uid, attrs, parents).map_err(|e| e.to_string())
    }

    /// A tool's action entity: a member of `call`, its service, its risk and its classes.
    pub fn action_entity(&self, tool: &Tool) -> Entity {
        let parents: HashSet<EntityUid> = action_groups(tool)
            .into_iter()
            .map(|g| self.action(g))
            .collect();
        Entity::new_no_attrs(self.action(&tool.full_name), parents)
    }

    /// A tool's resource entity: in its service, with its attributes.
    pub fn tool_entity(&self, tool: &Tool, version: &str) -> Result<Entity, String> {
        let attrs = HashMap::from([
            (
                "risk".to_string(),
                RestrictedExpression::new_string(tool.risk.as_str().into()),
            ),
            (
                "tier".to_string(),
                RestrictedExpression::new_string(tool.tier.as_str().into()),
            ),
            (
                "classes".to_string(),
                RestrictedExpression::new_set(
                    tool.classes
                        .iter()
                        .map(|c| RestrictedExpression::new_string(class_word(*c).into())),
                ),
            ),
            (
                "version".to_string(),
                RestrictedExpression::new_string(version.into()),
            ),
            (
                "descriptorHash".to_string(),
                RestrictedExpression::new_string(tool.descriptor_hash.clone()),
            ),
        ]);
        let parents = HashSet::from([self.service(&tool.service)]);
        Entity::new(self.tool(&tool.full_name), attrs, parents).map_err(|e| e.to_string())
    }
}

/// The action groups a tool's action is a member of.
pub fn action_groups(tool: &Tool) -> Vec<&str> {
    let mut groups = vec![CALL_GROUP, tool.service.as_str(), tool.risk.as_str()];
    groups.extend(tool.classes.iter().map(|c| class_word(*c)));
    groups
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn arguments_are_read_by_their_shape() {
        let shape = Shape::Record(vec![
            ("amount".into(), Shape::Long),
            ("tags".into(), Shape::Set(Box::new(Shape::String))),
            ("note".into(), Shape::String),
        ]);
        let args = json!({ "amount": 5000, "tags": ["a"], "other": 1.5, "note": null });
        assert!(shape.read(&args).is_ok());
        let whole = json!({ "amount": 5.0 });
        assert!(shape.read(&whole).is_ok());
        let fraction = json!({ "amount": 5.5 });
        assert_eq!(shape.read(&fraction).err().as_deref(), Some("/amount"));
        let huge = json!({ "amount": u64::MAX });
        assert_eq!(shape.read(&huge).err().as_deref(), Some("/amount"));
        let wrong = json!({ "tags": ["a", 1] });
        assert_eq!(shape.read(&wrong).err().as_deref(), Some("/tags/1"));
    }
}
