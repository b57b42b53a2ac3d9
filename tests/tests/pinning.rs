//! Descriptor pinning (decision 010): a caller states the descriptor hash it
//! reviewed; when the tool changed since, nothing runs and the answer is 409
//! `descriptor_changed` with the current hash. On every endpoint, with the catalog changed
//! between the read and the call.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{
    API_KEY, Setup, TestBroker, check_envelope, classification, mcp_tools_call, sources_with,
};

const KEY: (&str, &str) = ("x-media-api-key", "mk_1234567");

/// The probe tools as first reviewed (`v1`) and after a change of description (`v2`).
fn probe_tools(version: &str) -> String {
    format!(
        r#"
[[tool]]
name = "pin_probe"
title = "Pin Probe"
description = "Reads the probe ({version})."
tier = "agent_ready"
risk = "read"
[tool.http]
method = "GET"
path = "/v1/pinned"
[tool.arguments]
type = "object"

[[tool]]
name = "pin_write"
title = "Pin Write"
description = "Writes the probe ({version})."
tier = "agent_ready"
risk = "write"
[tool.http]
method = "POST"
path = "/v1/pinned"
[tool.arguments]
type = "object"
properties = {{ confirm = {{ type = "boolean" }} }}
"#
    )
}

async fn broker_with(version: &str, server: &MockServer) -> TestBroker {
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.sources = Some(sources_with(&[(
        "catalog/media/pin.toml",
        &probe_tools(version),
    )]));
    TestBroker::start(setup).await
}

/// A `tools/call` on `/mcp`; returns the HTTP status and the envelope.
async fn mcp_call(broker: &TestBroker, params: Value) -> (u16, Value) {
    let (status, reply) = mcp_tools_call(broker, params, &[KEY]).await;
    let envelope = reply["result"]["structuredContent"].clone();
    assert!(envelope.is_object(), "{reply}");
    check_envelope(&envelope);
    (status, envelope)
}

/// The REST endpoint: `POST /mcp/<service>/<tool-name-with-hyphens>`.
async fn rest_call(broker: &TestBroker, tool: &str, pin: Option<&str>) -> (u16, Value) {
    let bearer = format!("Bearer {API_KEY}");
    let mut headers = vec![
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
        KEY,
    ];
    if let Some(pin) = pin {
        headers.push(("x-descriptor-hash", pin));
    }
    let (status, _, text) = broker
        .send(
            reqwest::Method::POST,
            &format!("/mcp/media/{tool}"),
            Some(b"{}".to_vec()),
            &headers,
        )
        .await;
    let envelope: Value = serde_json::from_str(&text).unwrap();
    check_envelope(&envelope);
    (status, envelope)
}

/// `POST /` with `params.descriptorHash`.
async fn rpc_call(broker: &TestBroker, tool: &str, pin: Value, args: Value) -> (u16, Value) {
    let body = json!({ "jsonrpc": "2.0", "id": "p-1", "method": "tools/call",
                       "params": { "name": tool, "arguments": args, "descriptorHash": pin } });
    broker.post_raw(body.to_string().into_bytes(), &[KEY]).await
}

/// What a client reviewed: the hash `get_tool_reference` shows on `/mcp`.
async fn reviewed_hash(broker: &TestBroker, tool: &str) -> String {
    let (status, envelope) = mcp_call(
        broker,
        json!({ "name": "get_tool_reference", "arguments": { "name": tool } }),
    )
    .await;
    assert_eq!(status, 200, "{envelope}");
    envelope["data"]["descriptorHash"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A refusal: 409 on `POST /` and the REST endpoint; on `/mcp` the HTTP status is 200 and
/// the envelope is the tool result (`isError`), as for every tool failure.
fn assert_changed(status: u16, envelope: &Value, current: &str, pinned: &str) {
    assert_eq!(
        (status, classification(envelope)),
        (409, "descriptor_changed"),
        "{envelope}"
    );
    assert_eq!(envelope["error"]["retryable"], false);
    let details = &envelope["error"]["details"];
    assert_eq!(details["currentHash"], current, "{envelope}");
    assert_eq!(details["pinnedHash"], pinned, "{envelope}");
    assert!(
        details["nextAction"]
            .as_str()
            .unwrap()
            .contains("get_tool_reference"),
        "{envelope}"
    );
}

#[tokio::test]
async fn a_changed_tool_refuses_a_stale_pin_on_every_endpoint_and_runs_a_current_one() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/pinned"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "probe": 1 })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/pinned"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "wrote": 1 })))
        .mount(&server)
        .await;

    // A client reviews the tools, then the catalog changes under it.
    let before = broker_with("v1", &server).await;
    let old = reviewed_hash(&before, "media.pin_probe").await;
    let old_write = reviewed_hash(&before, "media.pin_write").await;
    drop(before);
    let after = broker_with("v2", &server).await;
    let new = reviewed_hash(&after, "media.pin_probe").await;
    let new_write = reviewed_hash(&after, "media.pin_write").await;
    assert_ne!(old, new);

    // A stale pin: 409 on every endpoint, the current hash in the details, nothing sent.
    let (status, envelope) = rpc_call(&after, "media.pin_probe", json!(old), json!({})).await;
    assert_changed(status, &envelope, &new, &old);
    let (status, envelope) = mcp_call(
        &after,
        json!({ "name": "media.pin_probe", "arguments": {}, "_meta": { "descriptorHash": old } }),
    )
    .await;
    assert_eq!(status, 200);
    assert_changed(409, &envelope, &new, &old);
    // By its listed name too, and through `call_tool`.
    let (_, envelope) = mcp_call(
        &after,
        json!({ "name": "media_pin_probe", "_meta": { "descriptorHash": old } }),
    )
    .await;
    assert_changed(409, &envelope, &new, &old);
    let (_, envelope) = mcp_call(
        &after,
        json!({ "name": "call_tool",
                "arguments": { "name": "media.pin_probe", "arguments": {}, "descriptorHash": old } }),
    )
    .await;
    assert_changed(409, &envelope, &new, &old);
    let (status, envelope) = rest_call(&after, "pin-probe", Some(&old)).await;
    assert_changed(status, &envelope, &new, &old);
    // A write is refused before any preview or confirmation, even when confirmed.
    let (status, envelope) = rpc_call(
        &after,
        "media.pin_write",
        json!(old_write),
        json!({ "confirm": true }),
    )
    .await;
    assert_changed(status, &envelope, &new_write, &old_write);
    let sent = server.received_requests().await.unwrap_or_default();
    assert!(
        sent.is_empty(),
        "a stale pin reached the upstream: {sent:?}"
    );

    // The current hash runs as usual on every endpoint (upper case is the same hash).
    let (status, envelope) = rpc_call(&after, "media.pin_probe", json!(new), json!({})).await;
    assert_eq!(
        (status, &envelope["data"]),
        (200, &json!({ "probe": 1 })),
        "{envelope}"
    );
    let (status, envelope) = mcp_call(
        &after,
        json!({ "name": "media_pin_probe", "_meta": { "descriptorHash": new.to_uppercase() } }),
    )
    .await;
    assert_eq!(
        (status, envelope["ok"].as_bool()),
        (200, Some(true)),
        "{envelope}"
    );
    let (status, envelope) = rest_call(&after, "pin-probe", Some(&new)).await;
    assert_eq!(
        (status, envelope["ok"].as_bool()),
        (200, Some(true)),
        "{envelope}"
    );
    let (status, envelope) = rpc_call(
        &after,
        "media.pin_write",
        json!(new_write),
        json!({ "confirm": true }),
    )
    .await;
    assert_eq!(
        (status, &envelope["data"]),
        (200, &json!({ "wrote": 1 })),
        "{envelope}"
    );
    // No pin: as before.
    let (status, _) = rest_call(&after, "pin-probe", None).await;
    assert_eq!(status, 200);
    assert_eq!(
        server.received_requests().await.unwrap_or_default().len(),
        5
    );
}

#[tokio::test]
async fn a_pin_that_is_no_hash_is_the_callers_mistake() {
    let server = MockServer::start().await;
    let broker = broker_with("v1", &server).await;
    for pin in [json!("not-a-hash"), json!("ab".repeat(33)), json!("")] {
        let (status, envelope) = rpc_call(&broker, "media.pin_probe", pin.clone(), json!({})).await;
        assert_eq!(
            (status, classification(&envelope)),
            (400, "invalid_request"),
            "{pin}: {envelope}"
        );
    }
    let (status, envelope) = rpc_call(&broker, "media.pin_probe", json!(7), json!({})).await;
    assert_eq!(
        (status, classification(&envelope)),
        (400, "invalid_request")
    );
    assert!(
        envelope["error"]["message"]
            .as_str()
            .unwrap()
            .contains("descriptorHash"),
        "{envelope}"
    );
    let (status, envelope) = rest_call(&broker, "pin-probe", Some("zz")).await;
    assert_eq!(
        (status, classification(&envelope)),
        (400, "invalid_request")
    );
    // On /mcp a `_meta.descriptorHash` that is not a string is an invalid param.
    let (_, reply) = mcp_tools_call(
        &broker,
        json!({ "name": "media.pin_probe", "_meta": { "descriptorHash": 5 } }),
        &[],
    )
    .await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert!(
        server
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty()
    );
}
