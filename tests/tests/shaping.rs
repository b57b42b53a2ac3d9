//! payments answers: compact by default, `response_mode = "full"`, `fields` projection;
//! none of the three is sent upstream.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{Setup, TestBroker};

const KEY: (&str, &str) = ("x-payments-api-key", "pk_shape_key");

fn customers() -> Value {
    json!({
        "object": "list", "url": "/v1/customers", "has_more": true,
        "data": [{
            "id": "cus_1", "object": "customer", "email": "a@example.invalid", "name": "Ada",
            "balance": 0, "created": 1700000000, "livemode": false,
            "address": { "city": "Oslo", "line1": "Street 1" },
            "metadata": { "plan": "gold" },
            "default_source": { "id": "card_1", "object": "card", "last4": "4242" },
            "tax_ids": { "object": "list", "data": [] }
        }]
    })
}

async fn call(args: Value) -> (Value, Vec<(String, String)>) {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/customers"))
        .respond_with(ResponseTemplate::new(200).set_body_json(customers()))
        .mount(&server)
        .await;
    let broker = TestBroker::start(Setup::all_upstreams(&server.uri())).await;
    let (status, body) = broker.call("payments.get_customers", args, &[KEY]).await;
    assert_eq!(status, 200, "{body}");
    let request = server.received_requests().await.unwrap().remove(0);
    let query = request
        .url
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    (body["data"].clone(), query)
}

#[tokio::test]
async fn compact_is_the_default() {
    let (data, query) = call(json!({ "limit": 1 })).await;
    assert_eq!(query, vec![("limit".to_string(), "1".to_string())]);
    assert_eq!(
        data,
        json!({
            "object": "list", "url": "/v1/customers", "has_more": true,
            "data": [{ "id": "cus_1", "object": "customer", "email": "a@example.invalid",
                       "name": "Ada", "balance": 0, "created": 1700000000 }]
        })
    );
}

#[tokio::test]
async fn full_returns_whole_objects() {
    let (data, query) = call(json!({ "response_mode": "full" })).await;
    assert!(query.is_empty(), "{query:?}");
    assert_eq!(data["data"][0]["address"]["city"], "Oslo");
    assert_eq!(data["data"][0]["default_source"]["last4"], "4242");
}

#[tokio::test]
async fn fields_keep_exactly_the_named_paths() {
    let (data, query) = call(json!({ "fields": ["id", "address.city", "metadata.plan"] })).await;
    assert!(query.is_empty(), "{query:?}");
    assert_eq!(
        data["data"][0],
        json!({ "id": "cus_1", "address": { "city": "Oslo" }, "metadata": { "plan": "gold" } })
    );
}

#[tokio::test]
async fn a_bad_mode_or_field_path_is_refused_before_sending() {
    let server = MockServer::start().await;
    let broker = TestBroker::start(Setup::all_upstreams(&server.uri())).await;
    for args in [
        json!({ "response_mode": "tiny" }),
        json!({ "fields": ["address..city"] }),
    ] {
        let (status, body) = broker.call("payments.get_customers", args, &[KEY]).await;
        assert_eq!(status, 422, "{body}");
    }
    assert!(server.received_requests().await.unwrap().is_empty());
}

const PROBE_KEY: &str = "hk_ONEPASS_probe_key_5e1";

const PROBE_SERVICE: &str = r#"
id = "probe"
title = "One-pass probe"
description = "A test service whose two tools read the same answer, one in one pass."
catalog_version = "probe-2026.11.24.1"
version_format = "service_dotted_date"
[credential]
header = "x-probe-api-key"
placement = "header"
name = "x-api-key"
"#;

/// `plain` is written in one pass; `whole` selects `$`, which takes the tree path.
const PROBE_TOOLS: &str = r#"
[[tool]]
name = "plain"
title = "Plain"
description = "Reads the answer as it is."
tier = "agent_ready"
risk = "read"
item_budget = 2
[tool.http]
method = "GET"
path = "/answer"
[tool.arguments]
type = "object"

[[tool]]
name = "whole"
title = "Whole"
description = "Reads the answer through a selection of all of it."
tier = "agent_ready"
risk = "read"
item_budget = 2
[tool.http]
method = "GET"
path = "/answer"
[tool.arguments]
type = "object"
[tool.response]
data = "$"
"#;

/// A broker with the probe service, whose upstream answers `answer` (as it is, with a
/// JSON content type) to `GET /answer`.
async fn probe_broker(answer: &str) -> (MockServer, TestBroker) {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/answer"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(answer.as_bytes().to_vec(), "application/json"),
        )
        .mount(&server)
        .await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.sources = Some(crate::support::sources_with(&[
        ("catalog/probe/service.toml", PROBE_SERVICE),
        ("catalog/probe/tools.toml", PROBE_TOOLS),
    ]));
    setup.upstreams.insert("probe".into(), server.uri());
    (server, TestBroker::start(setup).await)
}

/// The text of `data` in an envelope's JSON text (its keys are in order: `data` first,
/// then `error`).
fn data_text(envelope: &str) -> &str {
    let start = envelope.find(r#"{"data":"#).map(|i| i + 8).unwrap();
    let end = envelope.rfind(r#","error":"#).unwrap();
    &envelope[start..end]
}

#[tokio::test]
async fn an_answer_in_one_pass_is_the_answer_the_tree_gives() {
    // Keys out of order and repeated, credential-like keys (one null), the caller's key
    // echoed in a string, escapes, numbers serde_json rewrites, lists over the budget.
    let answers = [
        format!(
            r#"{{"zeta":[1,2,3],"alpha":{{"b":"x\u00e9\/","a":1.0}},"dup":1,"dup":{{"password":"p"}},"api_key":"k","nil_token":null,"items":[{{"n":"echo {PROBE_KEY}"}},{{"n":"é"}},3],"num":1e2,"list/odd~":[1,2,3]}}"#
        ),
        r#"[{"b":1,"a":2},{"secret":{"deep":"x"}},3,4]"#.to_string(),
        "  ".to_string(),
        r#"{"cut": [1, 2"#.to_string(),
    ];
    for answer in answers {
        let (_server, b) = probe_broker(&answer).await;
        let bearer = format!("Bearer {}", crate::support::API_KEY);
        let headers = [
            ("authorization", bearer.as_str()),
            ("content-type", "application/json"),
            ("x-probe-api-key", PROBE_KEY),
        ];
        let mut seen = Vec::new();
        for tool in ["probe.plain", "probe.whole"] {
            let rpc = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                              "params": { "name": tool, "arguments": {} } });
            let (status, _, text) = b
                .send(
                    reqwest::Method::POST,
                    "/",
                    Some(rpc.to_string().into_bytes()),
                    &headers,
                )
                .await;
            assert!(!text.contains(PROBE_KEY), "{tool}: {text}");
            let envelope: Value = serde_json::from_str(&text).unwrap();
            crate::support::check_envelope(&envelope);
            seen.push((status, text, envelope));
        }
        let (plain, whole) = (&seen[0], &seen[1]);
        assert_eq!(plain.0, whole.0, "{answer}: {} / {}", plain.1, whole.1);
        assert_eq!(plain.2["ok"], whole.2["ok"], "{answer}");
        assert_eq!(plain.2["error"], whole.2["error"], "{answer}");
        for field in ["redacted", "truncation", "upstreamStatus"] {
            assert_eq!(
                plain.2["meta"][field], whole.2["meta"][field],
                "{answer}: {field}"
            );
        }
        // Byte for byte: key order, numbers and escapes as serde_json writes them.
        assert_eq!(data_text(&plain.1), data_text(&whole.1), "{answer}");
        // The catalog's names, as shared at assembly, in each envelope's `meta`.
        let catalog = &b.broker.parts.catalog;
        for (tool, (_, _, envelope)) in ["probe.plain", "probe.whole"].iter().zip(&seen) {
            let meta = &envelope["meta"];
            let compiled = catalog.resolve(tool).unwrap();
            assert_eq!(meta["service"], "probe");
            assert_eq!(meta["tool"], *tool);
            assert_eq!(
                meta["catalogVersion"],
                catalog.services["probe"].catalog_version.as_str()
            );
            assert_eq!(meta["descriptorHash"], compiled.descriptor_hash.as_str());
            assert_eq!(meta["snapshotId"], catalog.snapshot_id.as_str());
        }
    }
}

#[tokio::test]
async fn an_answer_in_one_pass_redacts_cuts_and_counts() {
    let answer = format!(
        r#"{{"zeta":[1,2,3],"api_key":"k","nil_token":null,"note":"echo {PROBE_KEY}","alpha":{{"b":1,"a":2}}}}"#
    );
    let (_server, b) = probe_broker(&answer).await;
    let bearer = format!("Bearer {}", crate::support::API_KEY);
    let headers = [
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2025-11-25"),
        ("x-probe-api-key", PROBE_KEY),
    ];
    let rpc = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": { "name": "probe.plain", "arguments": {} } });
    let expected = r#"{"alpha":{"a":2,"b":1},"api_key":"[REDACTED]","nil_token":null,"note":"[REDACTED]","zeta":[1,2]}"#;
    for endpoint in ["/", "/mcp"] {
        let (status, _, text) = b
            .send(
                reqwest::Method::POST,
                endpoint,
                Some(rpc.to_string().into_bytes()),
                &headers,
            )
            .await;
        assert_eq!(status, 200, "{endpoint}: {text}");
        let envelope: Value = serde_json::from_str(&text).unwrap();
        let envelope = match endpoint {
            "/" => envelope,
            _ => envelope["result"]["structuredContent"].clone(),
        };
        assert_eq!(
            envelope["data"],
            serde_json::from_str::<Value>(expected).unwrap()
        );
        assert_eq!(envelope["meta"]["redacted"], 2, "{endpoint}: {text}");
        assert_eq!(
            envelope["meta"]["truncation"],
            json!([{ "pointer": "/zeta", "returned": 2, "total": 3 }]),
            "{endpoint}"
        );
        if endpoint == "/" {
            assert!(
                text.starts_with(&format!(r#"{{"data":{expected},"error":null,"#)),
                "{text}"
            );
        }
    }
}
