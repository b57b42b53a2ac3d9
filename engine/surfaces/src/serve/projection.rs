//! The OpenAPI 3.1 projection of the catalog (`GET /openapi.json`,
//! `tool-broker catalog openapi`): one POST operation per exposed tool at
//! `/mcp/<service_id>/<tool-name-with-hyphens>`, operationId
//! `<service_id>_<tool-name-with-hyphens>`, the tool's argument schema as request body,
//! `200` "Successful tool execution" and `default` "Error response from broker or
//! upstream" both answering the envelope, HTTP bearer security, and the `x-mcp-*`
//! extensions of the contract (docs/contract.md). Legacy tools only on request (`include_legacy`). Every
//! path really works (see `server.rs`): the body is the arguments object and the answer
//! is what `POST /` answers.
//!
//! The document is written as text one operation at a time ([`text`]): a value tree of
//! the whole document peaked near 100 MB, which the allocator kept after it was freed.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value, json};

use crate::catalog::descriptor::{EnvelopeKind, Tier};
use crate::catalog::{Catalog, Tool};
use crate::mcp::schemas::{envelope_schema, published_input};

/// The path of a tool's operation.
pub fn path_of(tool: &Tool) -> String {
    format!("/mcp/{}/{}", tool.service, tool.canonical_name())
}

fn operation(catalog: &Catalog, tool: &Tool) -> Value {
    let service = catalog.services.get(&tool.service);
    let envelope = match service.map(|s| s.envelope) {
        Some(EnvelopeKind::Portal) => "#/components/schemas/PortalEnvelope",
        _ => "#/components/schemas/StandardEnvelope",
    };
    let answer = |description: &str| {
        json!({
            "description": description,
            "content": { "application/json": { "schema": { "$ref": envelope } } }
        })
    };
    let input = published_input(catalog, tool);
    let required = input
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty());
    json!({
        "operationId": format!("{}_{}", tool.service, tool.canonical_name()),
        "summary": tool.title,
        "description": tool.description,
        "tags": [tool.service],
        "requestBody": {
            "required": required,
            "content": { "application/json": { "schema": input } }
        },
        "responses": {
            "200": answer("Successful tool execution"),
            "default": answer("Error response from broker or upstream"),
        },
        "x-mcp-service-id": tool.service,
        "x-mcp-tool-name": tool.name,
        "x-mcp-tool-source": "catalog",
        "x-mcp-contract-tier": tool.tier,
        "x-mcp-risk": tool.risk,
        "x-mcp-descriptor-hash": tool.descriptor_hash,
        "x-mcp-broker-endpoint": path_of(tool),
    })
}

/// The projected tools by path, in path order (a later tool with the same path wins,
/// as in a map).
fn projected(catalog: &Catalog, include_legacy: bool) -> Vec<(String, &Tool)> {
    let mut paths: Vec<(String, &Tool)> = catalog
        .tools
        .iter()
        .filter(|t| t.exposed && (t.tier != Tier::Legacy || include_legacy))
        .map(|t| (path_of(t), t))
        .collect();
    // Stable, so equal paths keep catalog order; keep the last of each.
    paths.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out: Vec<(String, &Tool)> = Vec::with_capacity(paths.len());
    for (path, tool) in paths {
        match out.last_mut() {
            Some(last) if last.0 == path => last.1 = tool,
            _ => out.push((path, tool)),
        }
    }
    out
}

/// The `paths` object, serialised one operation at a time.
struct Paths<'a> {
    catalog: &'a Catalog,
    projected: Vec<(String, &'a Tool)>,
}

impl Serialize for Paths<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.projected.len()))?;
        for (path, tool) in &self.projected {
            map.serialize_entry(path, &json!({ "post": operation(self.catalog, tool) }))?;
        }
        map.end()
    }
}

/// The document: the small members of [`frame`] with `paths` in its sorted place.
struct Document<'a> {
    frame: Map<String, Value>,
    paths: Paths<'a>,
}

impl Serialize for Document<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.frame.len() + 1))?;
        let mut paths_written = false;
        for (key, value) in &self.frame {
            if !paths_written && key.as_str() > "paths" {
                map.serialize_entry("paths", &self.paths)?;
                paths_written = true;
            }
            map.serialize_entry(key, value)?;
        }
        if !paths_written {
            map.serialize_entry("paths", &self.paths)?;
        }
        map.end()
    }
}

/// The projection document as compact JSON text.
pub fn text(catalog: &Catalog, include_legacy: bool) -> Result<String, serde_json::Error> {
    serde_json::to_string(&Document {
        frame: frame(catalog),
        paths: Paths {
            catalog,
            projected: projected(catalog, include_legacy),
        },
    })
}

/// Every member of the document but `paths`.
fn frame(catalog: &Catalog) -> Map<String, Value> {
    let tags: Vec<Value> = catalog
        .services
        .values()
        .map(|s| {
            json!({ "name": s.id, "description": format!("{} (catalog {})", s.description, s.catalog_version) })
        })
        .collect();
    let frame = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Tool broker",
            "version": catalog.snapshot_id,
            "description": "One POST operation per catalog tool. The body is the tool's arguments object; the answer is the tool's envelope, exactly as a JSON-RPC tools/call at POST / answers it.",
        },
        "security": [{ "bearerAuth": [] }],
        "tags": tags,
        "components": {
            "securitySchemes": {
                "bearerAuth": { "type": "http", "scheme": "bearer" }
            },
            "schemas": {
                "StandardEnvelope": envelope_schema(EnvelopeKind::Standard),
                "PortalEnvelope": envelope_schema(EnvelopeKind::Portal),
            }
        },
    });
    match frame {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::source::Sources;

    /// The whole document built as one value tree, the plain way.
    fn reference(catalog: &Catalog, include_legacy: bool) -> Value {
        let mut paths = Map::new();
        for tool in &catalog.tools {
            if !tool.exposed || (tool.tier == Tier::Legacy && !include_legacy) {
                continue;
            }
            paths.insert(path_of(tool), json!({ "post": operation(catalog, tool) }));
        }
        let mut doc = frame(catalog);
        doc.insert("paths".into(), Value::Object(paths));
        Value::Object(doc)
    }

    #[test]
    fn the_text_is_the_document_written_in_one_piece() {
        let catalog = crate::catalog::compile::compile(&Sources::embedded())
            .unwrap_or_else(|d| panic!("{d}"));
        for include_legacy in [false, true] {
            let text = text(&catalog, include_legacy).unwrap_or_else(|e| panic!("{e}"));
            let expected = reference(&catalog, include_legacy);
            assert_eq!(
                text,
                expected.to_string(),
                "byte for byte, legacy {include_legacy}"
            );
            assert!(
                expected["paths"]
                    .as_object()
                    .is_some_and(|p| p.len() > 1000)
            );
        }
    }
}
