//! Reading OpenAPI 3.0 / 3.1 documents (JSON or YAML) and resolving `$ref`s, local
//! (`#/components/...`) and to relative files (`../common/x.json#/...`).
//!
//! Schemas are inlined so the catalog holds self-contained argument schemas (no `$ref`
//! left). A reference that is already being expanded (a recursive schema) or that would
//! nest deeper than the depth limit becomes a permissive `{}` with a description naming
//! what was not expanded, so a schema never grows without bound.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

/// Every document read, by canonical path.
#[derive(Debug, Default)]
pub struct Documents {
    docs: BTreeMap<PathBuf, Value>,
}

/// Why a document or reference could not be read.
#[derive(Debug, thiserror::Error)]
pub enum OpenApiError {
    /// File unreadable.
    #[error("cannot read `{path}`: {message}")]
    Read {
        /// Path.
        path: String,
        /// Cause.
        message: String,
    },
    /// Not JSON or YAML.
    #[error("`{path}` is neither JSON nor YAML: {message}")]
    Parse {
        /// Path.
        path: String,
        /// Cause.
        message: String,
    },
}

impl Documents {
    /// Loads a document (and, lazily, those it refers to).
    pub fn load(&mut self, path: &Path) -> Result<PathBuf, OpenApiError> {
        let canonical = path.canonicalize().map_err(|e| OpenApiError::Read {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        if self.docs.contains_key(&canonical) {
            return Ok(canonical);
        }
        let text = std::fs::read_to_string(&canonical).map_err(|e| OpenApiError::Read {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let value: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(json_err) => {
                serde_norway::from_str(&text).map_err(|yaml_err| OpenApiError::Parse {
                    path: path.display().to_string(),
                    message: format!("as JSON: {json_err}; as YAML: {yaml_err}"),
                })?
            }
        };
        self.docs.insert(canonical.clone(), value);
        Ok(canonical)
    }

    /// The parsed document.
    pub fn get(&self, path: &Path) -> Option<&Value> {
        self.docs.get(path)
    }

    /// Follows one `$ref` from `base`; returns the target document's path and the value.
    pub fn follow(&mut self, base: &Path, reference: &str) -> Option<(PathBuf, Value)> {
        let (file, pointer) = reference.split_once('#').unwrap_or((reference, ""));
        let target = if file.is_empty() {
            base.to_path_buf()
        } else {
            let dir = base.parent().unwrap_or(Path::new("."));
            self.load(&dir.join(file)).ok()?
        };
        let doc = self.docs.get(&target)?;
        let value = if pointer.is_empty() {
            doc.clone()
        } else {
            doc.pointer(pointer)?.clone()
        };
        Some((target, value))
    }

    /// Resolves a parameter, request body or response object that may itself be a `$ref`.
    pub fn deref(&mut self, base: &Path, value: &Value) -> (PathBuf, Value) {
        let mut current = (base.to_path_buf(), value.clone());
        for _ in 0..8 {
            let Some(reference) = current
                .1
                .get("$ref")
                .and_then(Value::as_str)
                .map(String::from)
            else {
                break;
            };
            match self.follow(&current.0, &reference) {
                Some(next) => current = next,
                None => break,
            }
        }
        current
    }

    /// Inlines a schema: every `$ref` expanded up to `max_depth` nested references, OpenAPI
    /// 3.0 `nullable` turned into a JSON Schema type union, nulls, examples and `x-`
    /// extensions dropped, and long descriptions cut to their first sentence.
    pub fn inline_schema(&mut self, base: &Path, schema: &Value, max_depth: usize) -> Value {
        let mut stack = Vec::new();
        self.inline(base, schema, max_depth, &mut stack)
    }

    fn inline(
        &mut self,
        base: &Path,
        schema: &Value,
        depth: usize,
        stack: &mut Vec<String>,
    ) -> Value {
        match schema {
            Value::Object(map) => {
                if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
                    let key = format!("{}#{}", base.display(), reference);
                    let name = reference
                        .rsplit('/')
                        .next()
                        .unwrap_or(reference)
                        .to_string();
                    if stack.contains(&key) {
                        return json!({ "description": format!("{name} (recursive, not expanded)") });
                    }
                    if depth == 0 {
                        return json!({ "description": format!("{name} (not expanded)") });
                    }
                    let Some((target, value)) = self.follow(base, reference) else {
                        return json!({ "description": format!("{name} (unresolved reference)") });
                    };
                    stack.push(key);
                    let out = self.inline(&target, &value, depth - 1, stack);
                    stack.pop();
                    return out;
                }
                let mut out = Map::new();
                for (k, v) in map {
                    if k.starts_with("x-")
                        || matches!(
                            k.as_str(),
                            "example"
                                | "examples"
                                | "xml"
                                | "externalDocs"
                                | "discriminator"
                                | "nullable"
                        )
                        || v.is_null()
                    {
                        continue;
                    }
                    let inner = match k.as_str() {
                        // Maps of schemas.
                        "properties" | "patternProperties" | "$defs" | "definitions" => match v {
                            Value::Object(props) => Value::Object(
                                props
                                    .iter()
                                    .map(|(pk, pv)| {
                                        (pk.clone(), self.inline(base, pv, depth, stack))
                                    })
                                    .collect(),
                            ),
                            other => other.clone(),
                        },
                        "description" | "title" => match v.as_str() {
                            Some(text) => Value::String(short_text(text)),
                            None => v.clone(),
                        },
                        "enum" => match v {
                            Value::Array(items) => Value::Array(
                                items.iter().filter(|i| !i.is_null()).cloned().collect(),
                            ),
                            other => other.clone(),
                        },
                        "default" | "const" => v.clone(),
                        _ => self.inline(base, v, depth, stack),
                    };
                    out.insert(k.clone(), inner);
                }
                repair(&mut out);
                if map.get("nullable") == Some(&Value::Bool(true))
                    && let Some(t) = out.get("type").cloned()
                {
                    out.insert("type".into(), nullable(t));
                }
                if out
                    .get("enum")
                    .and_then(Value::as_array)
                    .is_some_and(Vec::is_empty)
                {
                    out.remove("enum");
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|i| self.inline(base, i, depth, stack))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

/// What JSON Schema or its validator would refuse in an inlined schema, repaired: a
/// pattern that does not compile is dropped and said in the description, type names
/// JSON Schema does not know are dropped, a type its enum contradicts is dropped, and
/// an OpenAPI 2 `required: true` is removed.
fn repair(out: &mut Map<String, Value>) {
    // A pattern the validator cannot compile would make the whole schema
    // invalid: drop it and say so where authors and agents will see it.
    if let Some(Value::String(pattern)) = out.get("pattern").cloned()
        && jsonschema::validator_for(&json!({ "pattern": pattern })).is_err()
    {
        out.remove("pattern");
        let note = format!(
            "upstream pattern `{pattern}` is not a valid regular expression and is not enforced"
        );
        let description = match out.get("description").and_then(Value::as_str) {
            Some(d) => format!("{d} ({note})"),
            None => note,
        };
        out.insert("description".into(), Value::String(description));
    }
    // Type names JSON Schema does not know (`any`) are dropped: any value passes.
    const TYPES: [&str; 7] = [
        "string", "number", "integer", "boolean", "object", "array", "null",
    ];
    match out.get("type").cloned() {
        Some(Value::String(t)) if !TYPES.contains(&t.as_str()) => {
            out.remove("type");
        }
        Some(Value::Array(list)) => {
            let kept: Vec<Value> = list
                .into_iter()
                .filter(|t| t.as_str().is_some_and(|t| TYPES.contains(&t)))
                .collect();
            if kept.is_empty() {
                out.remove("type");
            } else {
                out.insert("type".into(), Value::Array(kept));
            }
        }
        _ => {}
    }
    // An enum whose values contradict the declared type (strings under
    // `type: number`) keeps the enum and drops the type.
    if let (Some(Value::Array(values)), Some(Value::String(t))) = (out.get("enum"), out.get("type"))
    {
        let fits = |v: &Value| match t.as_str() {
            "string" => v.is_string(),
            "number" => v.is_number(),
            "integer" => v.is_i64() || v.is_u64(),
            "boolean" => v.is_boolean(),
            _ => true,
        };
        if !values.iter().all(fits) {
            out.remove("type");
        }
    }
    // OpenAPI 2 style `required: true` inside a property is not JSON Schema.
    if out.get("required").is_some_and(|r| !r.is_array()) {
        out.remove("required");
    }
}

fn nullable(t: Value) -> Value {
    match t {
        Value::String(s) => json!([s, "null"]),
        Value::Array(mut list) => {
            if !list.contains(&json!("null")) {
                list.push(json!("null"));
            }
            Value::Array(list)
        }
        other => other,
    }
}

/// The first sentence (or 200 characters, cut at a word) of upstream prose, as plain
/// text (`import::prose`).
pub fn short_text(text: &str) -> String {
    super::prose::short(text, 200)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_is_cut_to_a_short_sentence() {
        assert_eq!(
            short_text("Lists tasks. Use [project.list](https://x/y) to find ids.\nMore."),
            "Lists tasks."
        );
        assert_eq!(
            short_text("See [the docs](https://x) for more"),
            "See the docs for more"
        );
        assert!(short_text(&"a ".repeat(300)).chars().count() <= 200);
    }
}
