//! The OpenAPI 3.1 projection of the catalog (`GET /openapi.json`,
//! `tool-broker catalog openapi`): one POST operation per exposed tool at
//! `/mcp/<service_id>/<tool-name-with-hyphens>`, operationId
//! `<service_id>_<tool-name-with-hyphens>`, the tool's argument schema as request body,
//! `200` "Successful tool execution" and `default` "Error response from broker or
//! upstream" both answering the envelope, HTTP bearer security, and the `x-mcp-*`
//! extensions of the spec. Legacy tools only on request (`include_legacy`). Every
//! path really works (see `server.rs`): the body is the arguments object and the answer
//! is what `POST /` answers.

use serde_json::{Map, Value, json};

use crate::catalog::{Catalog, Tool};
use crate::descriptor::{EnvelopeKind, Tier};
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

/// The projection document.
pub fn document(catalog: &Catalog, include_legacy: bool) -> Value {
    let mut paths = Map::new();
    for tool in &catalog.tools {
        if !tool.exposed || (tool.tier == Tier::Legacy && !include_legacy) {
            continue;
        }
        paths.insert(path_of(tool), json!({ "post": operation(catalog, tool) }));
    }
    let tags: Vec<Value> = catalog
        .services
        .values()
        .map(|s| {
            json!({ "name": s.id, "description": format!("{} (catalog {})", s.description, s.catalog_version) })
        })
        .collect();
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Tool broker",
            "version": catalog.snapshot_id,
            "description": "One POST operation per catalog tool. The body is the tool's arguments object; the answer is the tool's envelope, exactly as a JSON-RPC tools/call at POST / answers it.",
        },
        "security": [{ "bearerAuth": [] }],
        "tags": tags,
        "paths": paths,
        "components": {
            "securitySchemes": {
                "bearerAuth": { "type": "http", "scheme": "bearer" }
            },
            "schemas": {
                "StandardEnvelope": envelope_schema(EnvelopeKind::Standard),
                "PortalEnvelope": envelope_schema(EnvelopeKind::Portal),
            }
        },
    })
}
