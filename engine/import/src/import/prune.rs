//! A self-contained, non-recursive copy of an OpenAPI document, for request validators
//! that cannot load the original (conformance runs; see docs/conformance.md).
//!
//! The copy keeps what request validation needs, verbatim: servers, security, and every
//! operation's parameters and request body. Every `$ref` (local or to a relative file)
//! is replaced by the value it names, so no `components` are left. Where a reference is
//! already being expanded (a recursive schema), nests deeper than the limit, or names
//! nothing (a dangling reference), it becomes `{}`: the copy accepts anything there, so
//! it can only be more lenient than the original, never stricter, and the counts say
//! how many places were cut. Answers are replaced by one `200` JSON object, so a mock
//! answers quickly once the request is valid.
//!
//! Unlike [`Documents::inline_schema`], nothing is rewritten for the catalog (no
//! `nullable` conversion, no description cuts): the copy stays in the document's own
//! OpenAPI version.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::openapi::{Documents, OpenApiError};

/// What pruning had to give up, for the report.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PruneReport {
    /// Operations kept.
    pub operations: usize,
    /// References cut because they were recursive.
    pub recursive: usize,
    /// References cut at the depth limit.
    pub too_deep: usize,
    /// References that named nothing, with the reference text (deduplicated).
    pub dangling: Vec<String>,
}

/// Builds the pruned copy of the document at `path`, expanding at most `max_depth`
/// nested references.
pub fn prune_document(
    docs: &mut Documents,
    path: &Path,
    max_depth: usize,
) -> Result<(Value, PruneReport), OpenApiError> {
    let base = docs.load(path)?;
    let doc = docs.get(&base).cloned().unwrap_or(Value::Null);
    let mut report = PruneReport::default();
    let mut pruner = Pruner {
        docs,
        report: &mut report,
        stack: Vec::new(),
    };
    let mut out = Map::new();
    for key in ["openapi", "info", "servers", "security"] {
        if let Some(value) = doc.get(key) {
            out.insert(key.to_string(), value.clone());
        }
    }
    if let Some(schemes) = doc.pointer("/components/securitySchemes") {
        out.insert(
            "components".into(),
            json!({ "securitySchemes": pruner.expand(&base, schemes, max_depth) }),
        );
    }
    let mut paths = Map::new();
    if let Some(Value::Object(items)) = doc.get("paths") {
        for (template, item) in items {
            let (item_base, item) = pruner.docs.deref(&base, item);
            let Value::Object(item) = item else { continue };
            let mut kept = Map::new();
            for (key, value) in &item {
                let kept_value = match key.as_str() {
                    "parameters" | "servers" => pruner.expand(&item_base, value, max_depth),
                    "get" | "put" | "post" | "delete" | "patch" | "head" | "options" | "trace" => {
                        pruner.report.operations += 1;
                        pruner.operation(&item_base, value, max_depth)
                    }
                    _ => continue,
                };
                kept.insert(key.clone(), kept_value);
            }
            paths.insert(template.clone(), Value::Object(kept));
        }
    }
    out.insert("paths".into(), Value::Object(paths));
    report.dangling.sort();
    report.dangling.dedup();
    Ok((Value::Object(out), report))
}

struct Pruner<'a> {
    docs: &'a mut Documents,
    report: &'a mut PruneReport,
    stack: Vec<String>,
}

impl Pruner<'_> {
    fn operation(&mut self, base: &Path, operation: &Value, depth: usize) -> Value {
        let mut out = Map::new();
        if let Value::Object(map) = operation {
            for (key, value) in map {
                match key.as_str() {
                    "parameters" | "requestBody" | "security" | "servers" => {
                        out.insert(key.clone(), self.expand(base, value, depth));
                    }
                    "operationId" | "deprecated" | "summary" => {
                        out.insert(key.clone(), value.clone());
                    }
                    _ => {}
                }
            }
        }
        out.insert(
            "responses".into(),
            json!({ "200": {
                "description": "answer pruned for request validation",
                "content": { "application/json": { "schema": { "type": "object" } } }
            } }),
        );
        Value::Object(out)
    }

    fn expand(&mut self, base: &Path, value: &Value, depth: usize) -> Value {
        match value {
            Value::Object(map) => {
                if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
                    return self.follow(base, reference, depth);
                }
                Value::Object(
                    map.iter()
                        .map(|(k, v)| (k.clone(), self.expand(base, v, depth)))
                        .collect(),
                )
            }
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| self.expand(base, v, depth)).collect())
            }
            other => other.clone(),
        }
    }

    fn follow(&mut self, base: &Path, reference: &str, depth: usize) -> Value {
        let key = format!("{}#{}", base.display(), reference);
        if self.stack.contains(&key) {
            self.report.recursive += 1;
            return json!({});
        }
        if depth == 0 {
            self.report.too_deep += 1;
            return json!({});
        }
        let Some((target, value)) = self.docs.follow(base, reference) else {
            self.report.dangling.push(reference.to_string());
            return json!({});
        };
        let target: PathBuf = target;
        self.stack.push(key);
        let out = self.expand(&target, &value, depth - 1);
        self.stack.pop();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recursion_and_dangling_references_become_permissive() {
        let dir = std::env::temp_dir().join(format!("prune-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("doc.json");
        let doc = json!({
            "openapi": "3.0.3",
            "info": { "title": "t", "version": "1" },
            "paths": { "/nodes": { "post": {
                "operationId": "createNode",
                "requestBody": { "content": { "application/json": {
                    "schema": { "$ref": "#/components/schemas/Node" } } } },
                "responses": { "400": { "$ref": "#/components/responses/Missing" } }
            } } },
            "components": { "schemas": { "Node": {
                "type": "object", "nullable": true, "required": ["name"],
                "properties": {
                    "name": { "type": "string" },
                    "child": { "$ref": "#/components/schemas/Node" },
                    "owner": { "$ref": "#/components/schemas/Gone" }
                }
            } } }
        });
        std::fs::write(&path, doc.to_string()).unwrap();
        let (pruned, report) = prune_document(&mut Documents::default(), &path, 8).unwrap();
        let schema = &pruned["paths"]["/nodes"]["post"]["requestBody"]["content"]["application/json"]
            ["schema"];
        assert_eq!(schema["required"], json!(["name"]));
        assert_eq!(schema["nullable"], json!(true), "kept verbatim");
        assert_eq!(schema["properties"]["child"], json!({}), "recursion cut");
        assert_eq!(schema["properties"]["owner"], json!({}));
        assert!(pruned.get("components").is_none());
        assert!(!pruned.to_string().contains("$ref"));
        assert_eq!(
            report,
            PruneReport {
                operations: 1,
                recursive: 1,
                too_deep: 0,
                dangling: vec!["#/components/schemas/Gone".into()],
            }
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
