//! The MCP endpoint (`POST /mcp`), the REST paths of the projection and `GET /openapi.json`:
//! every JSON-RPC error path, both Accept orders, notifications, pagination, toolsets,
//! the stateless revision's envelope checks, and tool calls answering the envelope.

use std::collections::BTreeSet;

use reqwest::Method;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{API_KEY, Setup, TestBroker, check_envelope};

const BEARER: &str = "Bearer tb_test_bearer_0123456789";
const BOTH: &str = "application/json, text/event-stream";

async fn broker() -> (MockServer, TestBroker) {
    let server = MockServer::start().await;
    let broker = TestBroker::start(Setup::all_upstreams(&server.uri())).await;
    (server, broker)
}

/// Posts a message to /mcp: `(status, body or Null for an empty body)`.
async fn post(broker: &TestBroker, body: &str, extra: &[(&str, &str)]) -> (u16, Value) {
    let mut headers = vec![
        ("authorization", BEARER),
        ("content-type", "application/json"),
        ("accept", BOTH),
    ];
    for (k, v) in extra {
        headers.retain(|(h, _)| h != k);
        headers.push((k, v));
    }
    let (status, _, text) = broker
        .send(
            Method::POST,
            "/mcp",
            Some(body.as_bytes().to_vec()),
            &headers,
        )
        .await;
    let value = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
    };
    (status, value)
}

async fn rpc(
    broker: &TestBroker,
    method: &str,
    params: Value,
    extra: &[(&str, &str)],
) -> (u16, Value) {
    let body = json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params });
    post(broker, &body.to_string(), extra).await
}

fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "test", "version": "1" }
    })
}

#[tokio::test]
async fn initialize_negotiates_or_counter_offers() {
    let (_server, broker) = broker().await;
    for (offered, expected) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2099-01-01", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
    ] {
        let (status, body) = rpc(
            &broker,
            "initialize",
            json!({ "protocolVersion": offered, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }),
            &[],
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["id"], 7);
        assert_eq!(body["result"]["protocolVersion"], expected, "{offered}");
        assert_eq!(body["result"]["serverInfo"]["name"], "tool-broker");
        assert!(body["result"]["capabilities"]["tools"].is_object());
        assert!(body["result"].get("resultType").is_none());
    }
    // Notifications are acknowledged with 202 and no body.
    let (status, body) = post(
        &broker,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        &[("mcp-protocol-version", "2025-11-25")],
    )
    .await;
    assert_eq!((status, body), (202, Value::Null));
    let (status, body) = rpc(
        &broker,
        "ping",
        json!({}),
        &[("mcp-protocol-version", "2025-11-25")],
    )
    .await;
    assert_eq!((status, &body["result"]), (200, &json!({})));
}

#[tokio::test]
async fn both_accept_orders_are_answered_as_json() {
    let (_server, broker) = broker().await;
    for accept in [
        "application/json, text/event-stream",
        "text/event-stream, application/json",
        "*/*",
        "application/*",
        "Application/JSON; q=0.9",
        "text/html , APPLICATION/json;charset=utf-8",
    ] {
        let (status, body) = rpc(&broker, "ping", json!({}), &[("accept", accept)]).await;
        assert_eq!(status, 200, "{accept}: {body}");
    }
    for accept in [
        "text/event-stream",
        "text/html, application/xml",
        "application/json-seq",
        "application/jsonx; q=1",
    ] {
        let (status, body) = rpc(&broker, "ping", json!({}), &[("accept", accept)]).await;
        assert_eq!(status, 406, "{accept}: {body}");
        assert_eq!(body["error"]["code"], -32600);
    }
}

#[tokio::test]
async fn messages_must_be_sent_as_json() {
    let (_server, broker) = broker().await;
    for (content_type, expected) in [
        ("application/json", 200),
        ("Application/JSON; charset=utf-8", 200),
        ("  application/json", 200),
        ("application/jso", 415),
        ("text/plain", 415),
        ("application/x-www-form-urlencoded", 415),
        ("", 415),
    ] {
        let (status, body) = rpc(
            &broker,
            "ping",
            json!({}),
            &[("content-type", content_type)],
        )
        .await;
        assert_eq!(status, expected, "{content_type:?}: {body}");
        if expected == 415 {
            assert_eq!(body["error"]["code"], -32600, "{content_type:?}");
        }
    }
}

#[tokio::test]
async fn every_protocol_error_is_a_json_rpc_error_with_its_status() {
    let (_server, broker) = broker().await;
    let cases: [(&str, u16, i64); 7] = [
        ("{not json", 400, -32700),
        (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, 400, -32600),
        (r#"{"id":1,"method":"ping"}"#, 400, -32600),
        (r#"{"jsonrpc":"2.0","id":1}"#, 400, -32600),
        (
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
            400,
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"resources/list"}"#,
            404,
            -32601,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]}"#,
            400,
            -32602,
        ),
    ];
    for (body, status, code) in cases {
        let (got, reply) = post(&broker, body, &[]).await;
        assert_eq!(got, status, "{body}: {reply}");
        assert_eq!(reply["jsonrpc"], "2.0");
        assert_eq!(reply["error"]["code"], code, "{body}: {reply}");
        assert!(
            reply["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
    }
    // A version header from no revision the broker speaks.
    let (status, reply) = rpc(
        &broker,
        "tools/list",
        json!({}),
        &[("mcp-protocol-version", "2024-01-01")],
    )
    .await;
    assert_eq!(
        (status, reply["error"]["code"].clone()),
        (400, json!(-32600)),
        "{reply}"
    );
    // tools/call without a name.
    let (status, reply) = rpc(&broker, "tools/call", json!({ "arguments": {} }), &[]).await;
    assert_eq!(
        (status, reply["error"]["code"].clone()),
        (400, json!(-32602))
    );
    // The transport is POST only.
    let (status, _, _) = broker
        .send(
            Method::GET,
            "/mcp",
            None,
            &[("authorization", BEARER), ("accept", "text/event-stream")],
        )
        .await;
    assert_eq!(status, 405);
}

#[tokio::test]
async fn the_bearer_token_is_checked_on_every_request() {
    let (_server, broker) = broker().await;
    for auth in ["Bearer wrong-token", ""] {
        let (status, reply) =
            rpc(&broker, "tools/list", json!({}), &[("authorization", auth)]).await;
        assert_eq!(status, 401, "{reply}");
        assert_eq!(reply["error"]["code"], -32001);
        assert_eq!(reply["id"], 7);
        assert!(!reply.to_string().contains("wrong-token"));
    }
    let (status, _) = post(
        &broker,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        &[("authorization", "Bearer nope")],
    )
    .await;
    assert_eq!(status, 401, "notifications need the token too");
}

async fn list_all(broker: &TestBroker, extra: &[(&str, &str)], params: Value) -> Vec<Value> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100 {
        let mut p = params.clone();
        if let Some(c) = &cursor {
            p["cursor"] = json!(c);
        }
        let (status, reply) = rpc(broker, "tools/list", p, extra).await;
        assert_eq!(status, 200, "{reply}");
        tools.extend(reply["result"]["tools"].as_array().unwrap().iter().cloned());
        match reply["result"]["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return tools,
        }
    }
    panic!("tools/list never ended");
}

#[tokio::test]
async fn tools_list_pages_through_every_agent_ready_tool_once() {
    let server = MockServer::start().await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some("toolset = \"all\"\n".into());
    let broker = TestBroker::start(setup).await;
    let catalog = broker.broker.parts.catalog.clone();
    let tools = list_all(
        &broker,
        &[("mcp-protocol-version", "2025-11-25")],
        json!({}),
    )
    .await;
    let expected: Vec<&str> = catalog
        .tools
        .iter()
        .filter(|t| t.exposed && t.tier == tool_broker::catalog::descriptor::Tier::AgentReady)
        .map(|t| t.full_name.as_str())
        .collect();
    // `_meta.canonicalName` keeps `<service>.<tool>`, in catalog order, once each.
    let canonical: Vec<&str> = tools
        .iter()
        .map(|t| t["_meta"]["canonicalName"].as_str().unwrap())
        .collect();
    assert_eq!(canonical, expected);
    assert!(canonical.len() > 1000);
    // The listed names are what every model API takes (`^[a-zA-Z0-9_-]{1,64}$`, so
    // Claude and OpenAI accept the whole list), unique, and `<service>_<tool>` unless
    // that is over 64 characters.
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    let unique: BTreeSet<&&str> = names.iter().collect();
    assert_eq!(unique.len(), names.len());
    let mut shortened = 0;
    for (name, full) in names.iter().zip(&canonical) {
        assert!(
            !name.is_empty()
                && name.len() <= 64
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
            "`{name}` ({full}) is refused by model APIs"
        );
        let plain = full.replace('.', "_");
        if plain.len() <= 64 {
            assert_eq!(*name, plain);
        } else {
            shortened += 1;
            assert!(name.starts_with(&plain[..50]), "{name} for {full}");
        }
    }
    assert!(shortened > 0, "the catalog has names over 64 characters");
    // The same catalog lists the same names on every start.
    let again = TestBroker::start({
        let mut setup = Setup::all_upstreams(&server.uri());
        setup.config = Some("toolset = \"all\"\n".into());
        setup
    })
    .await;
    let relisted = list_all(&again, &[("mcp-protocol-version", "2025-11-25")], json!({})).await;
    let renamed: Vec<&str> = relisted
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(renamed, names);
    for t in &tools {
        assert_eq!(t["inputSchema"]["type"], "object", "{}", t["name"]);
        assert_eq!(t["outputSchema"]["type"], "object");
        let text = t["inputSchema"].to_string();
        assert!(
            !text.contains("\"$ref\"")
                && !text.contains("\"$defs\"")
                && !text.contains("\"$schema\"")
        );
        assert_eq!(t["_meta"]["descriptorHash"].as_str().unwrap().len(), 64);
        assert!(t["_meta"]["catalogVersion"].is_string());
        // Hints are written only where they differ from MCP's defaults.
        let tool = catalog.resolve(t["name"].as_str().unwrap()).unwrap();
        let read = tool.risk == tool_broker::catalog::descriptor::Risk::Read;
        assert_eq!(
            t["annotations"].get("readOnlyHint"),
            read.then_some(&json!(true))
        );
        assert!(
            t["annotations"].get("title").is_none(),
            "the title is the entry's own"
        );
    }
    let find = |name: &str| {
        tools
            .iter()
            .find(|t| t["_meta"]["canonicalName"] == name)
            .unwrap()
    };
    let delete = find("agent.delete_webhook");
    // destructive and not read-only: both MCP defaults, so neither is written.
    assert_eq!(delete["annotations"], json!({}), "{delete}");
    let create = find("agent.create_task");
    assert_eq!(create["annotations"]["destructiveHint"], false);
    let local = find("payments.find_tools");
    assert_eq!(
        local["annotations"],
        json!({ "readOnlyHint": true, "openWorldHint": false })
    );
    // A cursor from nowhere.
    let (status, reply) = rpc(&broker, "tools/list", json!({ "cursor": "x" }), &[]).await;
    assert_eq!(
        (status, reply["error"]["code"].clone()),
        (400, json!(-32602))
    );
    let (status, reply) = rpc(
        &broker,
        "tools/list",
        json!({ "cursor": "100:deadbeef" }),
        &[],
    )
    .await;
    assert_eq!(status, 400, "{reply}");
}

#[tokio::test]
async fn toolsets_choose_what_each_key_sees() {
    let server = MockServer::start().await;
    let mut setup = Setup::all_upstreams(&server.uri());
    let hash = |t: &str| tool_broker::catalog::identity::sha256_hex(t.as_bytes());
    setup.config = Some(format!(
        "[[keys]]\nname = \"finder\"\nsha256 = \"{}\"\ntoolset = \"discovery\"\n\
         [[keys]]\nname = \"media-only\"\nsha256 = \"{}\"\ntoolset = [\"media\"]\n\
         [[keys]]\nname = \"readers\"\nsha256 = \"{}\"\nrisks = [\"read\"]\nservices = [\"agent\"]\ntoolset = \"all\"\n\
         [[keys]]\nname = \"default\"\nsha256 = \"{}\"\n",
        hash("tb_finder_key_000000"),
        hash("tb_media_key_0000000"),
        hash("tb_reader_key_000000"),
        hash("tb_plain_key_0000000"),
    ));
    let broker = TestBroker::start(setup).await;
    let as_key = |k: &'static str| format!("Bearer {k}");
    let finder = as_key("tb_finder_key_000000");
    let tools = list_all(&broker, &[("authorization", &finder)], json!({})).await;
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["find_tools", "get_tool_reference", "call_tool"]);
    // A key that names no toolset, and TOOL_BROKER_API_KEY, get the deployment's
    // default: the discovery tools unless the config says otherwise.
    for bearer in [as_key("tb_plain_key_0000000"), BEARER.to_string()] {
        let tools = list_all(&broker, &[("authorization", &bearer)], json!({})).await;
        let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["find_tools", "get_tool_reference", "call_tool"]);
    }
    let media = as_key("tb_media_key_0000000");
    let tools = list_all(&broker, &[("authorization", &media)], json!({})).await;
    assert!(
        !tools.is_empty()
            && tools
                .iter()
                .all(|t| t["name"].as_str().unwrap().starts_with("media_")
                    && t["_meta"]["canonicalName"]
                        .as_str()
                        .unwrap()
                        .starts_with("media."))
    );
    let reader = as_key("tb_reader_key_000000");
    let tools = list_all(&broker, &[("authorization", &reader)], json!({})).await;
    assert!(
        tools
            .iter()
            .all(|t| t["name"].as_str().unwrap().starts_with("agent_")
                && t["annotations"]["readOnlyHint"] == true)
    );

    // The discovery tools search, describe and call, within the key's permissions.
    let (_, found) = rpc(
        &broker,
        "tools/call",
        json!({ "name": "find_tools", "arguments": { "query": "list tasks" } }),
        &[("authorization", &reader)],
    )
    .await;
    let envelope = &found["result"]["structuredContent"];
    check_envelope(envelope);
    assert_eq!(
        envelope["data"]["results"][0]["fullName"], "agent.list_tasks",
        "{found}"
    );
    let (_, reference) = rpc(
        &broker,
        "tools/call",
        json!({ "name": "get_tool_reference", "arguments": { "name": "agent.list_tasks" } }),
        &[("authorization", &finder)],
    )
    .await;
    assert_eq!(
        reference["result"]["structuredContent"]["data"]["fullName"],
        "agent.list_tasks"
    );
    let (_, refused) = rpc(
        &broker,
        "tools/call",
        json!({ "name": "call_tool", "arguments": { "name": "agent.create_task", "arguments": { "prompt": "x" } } }),
        &[("authorization", &reader)],
    )
    .await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert_eq!(
        refused["result"]["structuredContent"]["error"]["classification"],
        "forbidden"
    );
    let _ = API_KEY;
}

#[tokio::test]
async fn tools_call_answers_the_envelope_as_structured_content() {
    let (server, broker) = broker().await;
    Mock::given(method("GET"))
        .and(path("/v2/task.list"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({ "ok": true, "data": [{ "id": "t1" }], "has_more": false })),
        )
        .mount(&server)
        .await;
    let (status, reply) = rpc(
        &broker,
        "tools/call",
        json!({ "name": "agent.list_tasks", "arguments": {} }),
        &[
            ("x-agent-api-key", "ak_mcp_1"),
            ("mcp-protocol-version", "2025-11-25"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    let result = &reply["result"];
    check_envelope(&result["structuredContent"]);
    assert_eq!(result["isError"], false);
    assert_eq!(result["structuredContent"]["data"][0]["id"], "t1");
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, result["structuredContent"]);
    assert_eq!(result["content"][0]["type"], "text");
    // A read whose answer is written in one pass (its envelope's `ok` and `error` kept
    // apart from the body, `envelope::Enveloped::ok_members`) is no error either.
    Mock::given(method("GET"))
        .and(path("/api/billing/v1/catalog"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([{ "id": "c1" }])))
        .mount(&server)
        .await;
    let (status, reply) = rpc(
        &broker,
        "tools/call",
        json!({ "name": "hosting.billing_get_catalog_item_list_v1", "arguments": {} }),
        &[
            ("x-hosting-api-key", "hk_mcp_1"),
            ("mcp-protocol-version", "2025-11-25"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    let result = &reply["result"];
    check_envelope(&result["structuredContent"]);
    assert_eq!(result["isError"], false, "{reply}");
    assert_eq!(result["structuredContent"]["ok"], true, "{reply}");
    assert_eq!(result["structuredContent"]["data"][0]["id"], "c1");
    // A tool's own failure is a result with isError, not a protocol error.
    let (status, reply) = rpc(
        &broker,
        "tools/call",
        json!({ "name": "agent.list_tasks", "arguments": {} }),
        &[],
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(reply["result"]["isError"], true);
    assert_eq!(
        reply["result"]["structuredContent"]["error"]["classification"],
        "missing_required_credentials"
    );
    let (_, reply) = rpc(
        &broker,
        "tools/call",
        json!({ "name": "agent.no_such_tool" }),
        &[],
    )
    .await;
    assert_eq!(
        reply["result"]["structuredContent"]["error"]["classification"],
        "unknown_tool"
    );
    assert!(!reply.to_string().contains("ak_mcp_1"));
}

#[tokio::test]
async fn the_stateless_revision_checks_its_envelope_and_headers() {
    let (_server, broker) = broker().await;
    let modern = |method: &'static str| {
        vec![
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", method),
        ]
    };
    let (status, reply) = rpc(
        &broker,
        "server/discover",
        json!({ "_meta": modern_meta() }),
        &modern("server/discover"),
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["result"]["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(reply["result"]["resultType"], "complete");
    assert!(reply["result"]["ttlMs"].is_number());
    // No envelope: invalid params (clients then fall back to initialize).
    let (status, reply) = rpc(&broker, "server/discover", json!({}), &[]).await;
    assert_eq!(
        (status, reply["error"]["code"].clone()),
        (400, json!(-32602)),
        "{reply}"
    );
    // Headers that disagree with the body.
    let (status, reply) = rpc(
        &broker,
        "tools/list",
        json!({ "_meta": modern_meta() }),
        &modern("tools/call"),
    )
    .await;
    assert_eq!(
        (status, reply["error"]["code"].clone()),
        (400, json!(-32020)),
        "{reply}"
    );
    // A version the broker does not speak names the ones it does.
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/protocolVersion"] = json!("2030-01-01");
    let (status, reply) = rpc(
        &broker,
        "tools/list",
        json!({ "_meta": meta }),
        &[
            ("mcp-protocol-version", "2030-01-01"),
            ("mcp-method", "tools/list"),
        ],
    )
    .await;
    assert_eq!(
        (status, reply["error"]["code"].clone()),
        (400, json!(-32022)),
        "{reply}"
    );
    assert_eq!(reply["error"]["data"]["supported"], json!(["2026-07-28"]));
    // Lists and calls carry resultType; a call names its tool in Mcp-Name.
    let (status, reply) = rpc(
        &broker,
        "tools/list",
        json!({ "_meta": modern_meta() }),
        &modern("tools/list"),
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["result"]["resultType"], "complete");
    assert_eq!(reply["result"]["cacheScope"], "private");
    let mut headers = modern("tools/call");
    headers.push(("mcp-name", "payments.find_tools"));
    let (status, reply) = rpc(
        &broker,
        "tools/call",
        json!({ "_meta": modern_meta(), "name": "payments.find_tools", "arguments": { "query": "refund" } }),
        &headers,
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["result"]["resultType"], "complete");
    assert_eq!(reply["result"]["isError"], false);
    let mut headers = modern("tools/call");
    headers.push(("mcp-name", "payments.other"));
    let (status, reply) = rpc(
        &broker,
        "tools/call",
        json!({ "_meta": modern_meta(), "name": "payments.find_tools", "arguments": { "query": "refund" } }),
        &headers,
    )
    .await;
    assert_eq!(
        (status, reply["error"]["code"].clone()),
        (400, json!(-32020))
    );
}

#[tokio::test]
async fn rest_paths_run_the_tool_and_answer_as_post_slash_does() {
    let (server, broker) = broker().await;
    Mock::given(method("GET"))
        .and(path("/v2/task.list"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({ "ok": true, "data": [], "has_more": false })),
        )
        .mount(&server)
        .await;
    let headers = [
        ("authorization", BEARER),
        ("content-type", "application/json"),
        ("x-agent-api-key", "ak_rest_1"),
        ("x-request-id", "req-42"),
    ];
    let (status, _, text) = broker
        .send(
            Method::POST,
            "/mcp/agent/list-tasks",
            Some(b"{\"limit\": 5}".to_vec()),
            &headers,
        )
        .await;
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(status, 200, "{body}");
    check_envelope(&body);
    assert_eq!(body["meta"]["requestId"], "req-42");
    assert_eq!(body["meta"]["tool"], "agent.list_tasks");
    // Without arguments, without a request id.
    let (status, _, text) = broker
        .send(Method::POST, "/mcp/agent/list-tasks", None, &headers[..3])
        .await;
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(
        body["meta"]["requestId"]
            .as_str()
            .unwrap()
            .starts_with("rest-")
    );
    for (path, body, status, classification) in [
        ("/mcp/agent/no-such-tool", "{}", 404, "unknown_tool"),
        ("/mcp/agent/list-tasks", "[1", 400, "invalid_request"),
        ("/mcp/agent", "{}", 400, "invalid_request"),
    ] {
        let (got, _, text) = broker
            .send(Method::POST, path, Some(body.as_bytes().to_vec()), &headers)
            .await;
        assert_eq!(got, status, "{path}: {text}");
        if !classification.is_empty() {
            let v: Value = serde_json::from_str(&text).unwrap();
            check_envelope(&v);
            assert_eq!(v["error"]["classification"], classification);
        }
    }
    let (status, _, _) = broker
        .send(
            Method::POST,
            "/mcp/agent/list-tasks",
            Some(b"{}".to_vec()),
            &[("authorization", "Bearer no")],
        )
        .await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn the_projection_lists_every_exposed_tool_with_its_extensions() {
    let (_server, broker) = broker().await;
    let (status, headers, text) = broker.send(Method::GET, "/openapi.json", None, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "application/json");
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(
        doc["components"]["securitySchemes"]["bearerAuth"],
        json!({ "type": "http", "scheme": "bearer" })
    );
    let catalog = broker.broker.parts.catalog.clone();
    let agent_ready = catalog
        .tools
        .iter()
        .filter(|t| t.exposed && t.tier == tool_broker::catalog::descriptor::Tier::AgentReady)
        .count();
    assert_eq!(doc["paths"].as_object().unwrap().len(), agent_ready);
    let op = &doc["paths"]["/mcp/payments/get-issuing-cards"]["post"];
    assert_eq!(op["operationId"], "payments_get-issuing-cards");
    assert_eq!(op["x-mcp-service-id"], "payments");
    assert_eq!(op["x-mcp-tool-name"], "get_issuing_cards");
    assert_eq!(op["x-mcp-tool-source"], "catalog");
    assert_eq!(op["x-mcp-contract-tier"], "agent_ready");
    assert_eq!(op["x-mcp-risk"], "read");
    assert_eq!(
        op["x-mcp-broker-endpoint"],
        "/mcp/payments/get-issuing-cards"
    );
    let tool = catalog.resolve("payments.get_issuing_cards").unwrap();
    assert_eq!(op["x-mcp-descriptor-hash"], tool.descriptor_hash.as_str());
    assert_eq!(
        op["responses"]["200"]["description"],
        "Successful tool execution"
    );
    assert_eq!(
        op["responses"]["default"]["description"],
        "Error response from broker or upstream"
    );
    assert_eq!(
        op["requestBody"]["content"]["application/json"]["schema"]["type"],
        "object"
    );
    let (_, _, all) = broker
        .send(Method::GET, "/openapi.json?include_legacy=true", None, &[])
        .await;
    let all: Value = serde_json::from_str(&all).unwrap();
    let exposed = catalog.tools.iter().filter(|t| t.exposed).count();
    assert_eq!(all["paths"].as_object().unwrap().len(), exposed);
}
