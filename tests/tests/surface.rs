//! What an MCP client is handed: the default toolset within its budget, compact entries
//! whose output schema still validates every envelope, find hits that lead straight to
//! the call, and the 2026-07-28 details the official conformance suite checks.

use reqwest::Method;
use serde_json::{Value, json};
use tool_broker::config::{Toolset, ToolsetName};
use tool_broker::mcp::surface::surfaces;
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{API_KEY, Setup, TestBroker, check_envelope, embedded_catalog};

/// The default surface must stay under this: about 5,000 tokens.
const DEFAULT_BUDGET_BYTES: usize = 20_000;

async fn broker(config: &str) -> (MockServer, TestBroker) {
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "data": [] })))
        .mount(&server)
        .await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some(config.to_string());
    let broker = TestBroker::start(setup).await;
    (server, broker)
}

/// Posts one MCP message; `(status, reply, body length)`.
async fn mcp(broker: &TestBroker, body: Value, extra: &[(&str, &str)]) -> (u16, Value, usize) {
    let bearer = format!("Bearer {API_KEY}");
    let mut headers = vec![
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
    ];
    headers.extend_from_slice(extra);
    let (status, _, text) = broker
        .send(
            Method::POST,
            "/mcp",
            Some(body.to_string().into_bytes()),
            &headers,
        )
        .await;
    let reply = serde_json::from_str(&text).unwrap_or(Value::Null);
    (status, reply, text.len())
}

fn call(name: &str, arguments: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": { "name": name, "arguments": arguments } })
}

#[tokio::test]
async fn the_default_surface_is_the_discovery_tools_within_budget() {
    let (_server, broker) = broker("").await;
    let (status, reply, bytes) = mcp(
        &broker,
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }),
        &[],
    )
    .await;
    assert_eq!(status, 200);
    let names: Vec<&str> = reply["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["find_tools", "get_tool_reference", "call_tool"]);
    assert!(reply["result"].get("nextCursor").is_none());
    assert!(
        bytes < DEFAULT_BUDGET_BYTES,
        "the default tools/list is {bytes} bytes"
    );

    // The catalog-level measure agrees, and `all` stays available by configuration.
    let rows = surfaces(&embedded_catalog());
    let discovery = rows.iter().find(|r| r.toolset == "discovery").unwrap();
    assert!(discovery.bytes < DEFAULT_BUDGET_BYTES && discovery.tools == 3);
    let all = rows.iter().find(|r| r.toolset == "all").unwrap();
    assert!(all.tools > 1500);
    // Nothing repeated costs kilobytes per tool: the envelope schema is compact.
    for row in &rows {
        assert!(row.bytes / row.tools.max(1) < 5_000, "{row:?}");
    }
    assert_eq!(Toolset::default(), Toolset::Named(ToolsetName::Discovery));
}

#[tokio::test]
async fn the_compact_output_schema_accepts_every_envelope() {
    let (_server, broker) = broker("toolset = \"all\"\n").await;
    let mut checked = 0;
    for (name, arguments, headers) in [
        (
            "agent.list_tasks",
            json!({}),
            vec![("x-agent-api-key", "ak_1")],
        ),
        ("agent.list_tasks", json!({}), vec![]),
        (
            "agent.create_task",
            json!({ "prompt": "x" }),
            vec![("x-agent-api-key", "ak_1")],
        ),
        ("portal.check_connection", json!({}), vec![]),
        ("payments.find_tools", json!({ "query": "refund" }), vec![]),
        ("hosting.no_such_tool", json!({}), vec![]),
    ] {
        // The entry tools/list shows for the tool (the discovery tools and unknown
        // names answer the standard envelope).
        let catalog = embedded_catalog();
        let schema = catalog.resolve(name).map_or_else(
            || {
                tool_broker::mcp::schemas::compact_envelope_schema(
                    tool_broker::catalog::descriptor::EnvelopeKind::Standard,
                )
                .clone()
            },
            |tool| tool_broker::mcp::tools::entry(&catalog, tool)["outputSchema"].clone(),
        );
        let validator = jsonschema::validator_for(&schema).unwrap();
        let (status, reply, _) = mcp(&broker, call(name, arguments), &headers).await;
        assert_eq!(status, 200, "{reply}");
        let envelope = &reply["result"]["structuredContent"];
        check_envelope(envelope);
        assert!(
            validator.is_valid(envelope),
            "{name}: {envelope} against {schema}"
        );
        checked += 1;
    }
    assert_eq!(checked, 6);
}

#[tokio::test]
async fn find_hits_carry_what_a_call_needs() {
    let (_server, broker) = broker("").await;
    let (_, reply, _) = mcp(
        &broker,
        call(
            "find_tools",
            json!({ "query": "refund a charge", "service": "payments", "limit": 5 }),
        ),
        &[],
    )
    .await;
    let envelope = &reply["result"]["structuredContent"];
    check_envelope(envelope);
    let hits = envelope["data"]["results"].as_array().unwrap();
    let hit = hits
        .iter()
        .find(|h| h["fullName"] == "payments.post_charges_charge_refund")
        .unwrap_or_else(|| panic!("{hits:#?}"));
    assert_eq!(hit["risk"], "write");
    assert_eq!(hit["required"], json!({ "path_params.charge": "string" }));
    assert!(
        hit["confirmation"].as_str().unwrap().contains("`confirm`"),
        "{hit}"
    );
    for h in hits {
        let summary = h["summary"].as_str().unwrap();
        assert!(!summary.is_empty() && summary.chars().count() <= 160 && !summary.contains('\n'));
        assert!(h["title"].is_string() && h["classes"].is_array() && h["required"].is_object());
        assert!(
            h.get("description").is_none(),
            "hits carry one line, not the description"
        );
    }
    // The hit is enough: call_tool with its name and required arguments previews the write.
    let (_, reply, _) = mcp(
        &broker,
        call(
            "call_tool",
            json!({ "name": "payments.post_charges_charge_refund",
                    "arguments": { "path_params": { "charge": "ch_1" } } }),
        ),
        &[("x-payments-api-key", "pk_1")],
    )
    .await;
    let envelope = &reply["result"]["structuredContent"];
    assert_eq!(
        envelope["error"]["classification"], "confirmation_required",
        "{envelope}"
    );
}

fn modern(method: &str, params: Value) -> (Value, Vec<(&'static str, String)>) {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    (
        json!({ "jsonrpc": "2.0", "id": 9, "method": method, "params": params }),
        vec![
            ("mcp-protocol-version", "2026-07-28".to_string()),
            ("mcp-method", method.to_string()),
        ],
    )
}

#[tokio::test]
async fn the_stateless_revision_drops_the_handshake_and_names_the_server() {
    let (_server, broker) = broker("").await;
    for method in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
    ] {
        let (body, headers) = modern(method, json!({}));
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, reply, _) = mcp(&broker, body, &headers).await;
        assert_eq!(
            (status, &reply["error"]["code"]),
            (404, &json!(-32601)),
            "{method}: {reply}"
        );
    }
    for method in ["server/discover", "tools/list"] {
        let (body, headers) = modern(method, json!({}));
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, reply, _) = mcp(&broker, body, &headers).await;
        assert_eq!(status, 200, "{reply}");
        let result = &reply["result"];
        assert_eq!(result["resultType"], "complete");
        assert_eq!(
            result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "tool-broker"
        );
    }
    let (body, mut headers) = modern(
        "tools/call",
        json!({ "name": "find_tools", "arguments": { "query": "tasks" } }),
    );
    headers.push(("mcp-name", "find_tools".into()));
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, reply, _) = mcp(&broker, body, &headers).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(
        reply["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "tool-broker"
    );
    // The handshake revisions keep initialize and ping.
    let (status, reply, _) = mcp(
        &broker,
        json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": { "protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": { "name": "t", "version": "1" } } }),
        &[],
    )
    .await;
    assert_eq!(
        (status, &reply["result"]["protocolVersion"]),
        (200, &json!("2025-06-18"))
    );
    assert!(reply["result"].get("_meta").is_none());
    let (status, reply, _) = mcp(
        &broker,
        json!({ "jsonrpc": "2.0", "id": 2, "method": "ping" }),
        &[("mcp-protocol-version", "2025-11-25")],
    )
    .await;
    assert_eq!((status, &reply["result"]), (200, &json!({})));
}

#[test]
fn published_schemas_drop_what_a_model_cannot_act_on_and_keep_what_it_can() {
    let catalog = embedded_catalog();
    let entry =
        |name: &str| tool_broker::mcp::tools::entry(&catalog, catalog.resolve(name).unwrap());
    // A read takes `confirm` and ignores it: not published. A write keeps it.
    let read = entry("hosting.domains_get_domain_list_v1");
    assert!(
        read["inputSchema"]["properties"].get("confirm").is_none(),
        "{read}"
    );
    assert!(read["inputSchema"]["properties"].get("dry_run").is_some());
    let write = entry("hosting.dns_delete_dns_records_v1");
    assert!(
        write["inputSchema"]["properties"].get("confirm").is_some(),
        "{write}"
    );
    // Identical anyOf branches of an import are published once; nested titles go.
    let contact = entry("crm.contacts_create_contact");
    let branches = contact["inputSchema"]["properties"]["body"]["properties"]["customFields"]["items"]["anyOf"]
        .as_array()
        .unwrap();
    let unique: std::collections::BTreeSet<String> =
        branches.iter().map(Value::to_string).collect();
    assert_eq!(unique.len(), branches.len(), "{branches:?}");
    let raw = catalog.resolve("crm.contacts_create_contact").unwrap();
    let raw_schema = raw.arguments.value();
    let raw_branches =
        raw_schema["properties"]["body"]["properties"]["customFields"]["items"]["anyOf"]
            .as_array()
            .unwrap();
    assert!(branches.len() < raw_branches.len());
    let payments = entry("payments.get_customers").to_string();
    assert!(
        !payments.contains("\"title\":\"range_query_specs\""),
        "{payments}"
    );
    // Hints only where they differ from MCP's defaults; _meta keeps what pins the tool.
    assert_eq!(read["annotations"], json!({ "readOnlyHint": true }));
    assert_eq!(
        read["_meta"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["canonicalName", "catalogVersion", "descriptorHash"]
    );
}
