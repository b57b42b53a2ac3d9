//! Upstream failures and caller permissions.

use std::time::Duration;

use serde_json::json;
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::failures::SLOW_TOOL;
use crate::support::{Setup, TestBroker, classification, closed_port_url, sources_with};

#[tokio::test]
async fn a_slow_upstream_is_upstream_timeout() {
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(3)))
        .mount(&server)
        .await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.sources = Some(sources_with(&[("catalog/media/slow.toml", SLOW_TOOL)]));
    let b = TestBroker::start(setup).await;
    let (status, envelope) = b
        .call(
            "media.slow_job",
            json!({}),
            &[("x-media-api-key", "mk_1234567")],
        )
        .await;
    assert_eq!(
        (status, classification(&envelope)),
        (504, "upstream_timeout"),
        "{envelope}"
    );
    assert_eq!(envelope["error"]["retryable"], true);
}

const HEADER_TOOL: &str = r#"
[[tool]]
name = "tagged_job"
title = "Tagged Job"
description = "A test tool that sends an argument as a header."
tier = "agent_ready"
risk = "read"
[tool.http]
method = "GET"
path = "/v1/tagged"
[tool.http.headers]
X-Tag = "args.tag"
[tool.arguments]
type = "object"
required = ["tag"]
properties = { tag = { type = "string" } }
"#;

#[tokio::test]
async fn an_argument_a_header_cannot_carry_is_refused_and_nothing_is_sent() {
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ok": 1})))
        .mount(&server)
        .await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.sources = Some(sources_with(&[("catalog/media/tagged.toml", HEADER_TOOL)]));
    let b = TestBroker::start(setup).await;
    let (status, envelope) = b
        .call(
            "media.tagged_job",
            json!({ "tag": "a\r\nX-Injected: secret-value" }),
            &[("x-media-api-key", "mk_1234567")],
        )
        .await;
    assert_eq!(
        (status, classification(&envelope)),
        (422, "validation_error"),
        "{envelope}"
    );
    let message = envelope["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("X-Tag") || message.contains("x-tag"),
        "{message}"
    );
    assert!(
        !message.contains("secret-value"),
        "the value is never quoted: {message}"
    );
    assert!(server.received_requests().await.unwrap().is_empty());
    // An ordinary value is sent as the header.
    let (status, _) = b
        .call(
            "media.tagged_job",
            json!({ "tag": "blue" }),
            &[("x-media-api-key", "mk_1234567")],
        )
        .await;
    assert_eq!(status, 200);
    let sent = server.received_requests().await.unwrap();
    assert_eq!(sent[0].headers.get("x-tag").unwrap(), "blue");
}

#[tokio::test]
async fn an_unreachable_upstream_is_upstream_unavailable() {
    let b = TestBroker::start(Setup::all_upstreams(&closed_port_url())).await;
    let (status, envelope) = b
        .call(
            "agent.list_agents",
            json!({}),
            &[("x-agent-api-key", "ak_1234567")],
        )
        .await;
    assert_eq!(
        (status, classification(&envelope)),
        (502, "upstream_unavailable"),
        "{envelope}"
    );
    assert!(
        !envelope["error"]["message"]
            .as_str()
            .unwrap()
            .contains("127.0.0.1"),
        "no URL in messages"
    );
}

#[tokio::test]
async fn a_service_without_base_url_is_not_configured() {
    // media has no default base URL.
    let b = TestBroker::start(Setup::default()).await;
    let (status, envelope) = b
        .call(
            "media.media_transcode",
            json!({"asset_id": "a", "preset": "p"}),
            &[("x-media-api-key", "mk_1234567")],
        )
        .await;
    assert_eq!(
        (status, classification(&envelope)),
        (503, "not_configured"),
        "{envelope}"
    );
    assert!(
        envelope["error"]["message"]
            .as_str()
            .unwrap()
            .contains("TOOL_BROKER_UPSTREAM_MEDIA")
    );
}

#[tokio::test]
async fn the_environment_overrides_the_upstream_url() {
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"job_id": "j", "cache_hit": true})),
        )
        .mount(&server)
        .await;
    let setup = Setup {
        config: Some("[upstreams]\nmedia = \"http://127.0.0.1:9\"\n".into()),
        env: [("TOOL_BROKER_UPSTREAM_MEDIA".to_string(), server.uri())].into(),
        ..Setup::default()
    };
    let b = TestBroker::start(setup).await;
    let (status, envelope) = b
        .call(
            "media.media_transcode",
            json!({"asset_id": "a", "preset": "p"}),
            &[("x-media-api-key", "mk_1234567")],
        )
        .await;
    assert_eq!(status, 200, "{envelope}");
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn keys_are_limited_to_their_services_tiers_and_risks() {
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
        .mount(&server)
        .await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some(format!(
        r#"
[[keys]]
name = "hosting-reader"
sha256 = "{}"
services = ["hosting", "agent", "portal"]
tiers = ["agent_ready"]
risks = ["read"]
"#,
        tool_broker::catalog::identity::sha256_hex(b"tb_reader_key_1")
    ));
    let b = TestBroker::start(setup).await;
    let hk = [
        ("x-hosting-api-key", "hk_1234567"),
        ("x-agent-api-key", "ak_1234567"),
    ];
    let (status, _) = b
        .call_as(
            "tb_reader_key_1",
            "hosting.dns_get_dns_records_v1",
            json!({"domain": "a.b"}),
            &hk,
        )
        .await;
    assert_eq!(status, 200);
    let (status, envelope) = b
        .call_as(
            "tb_reader_key_1",
            "agent.create_task",
            json!({"message": {"content": "x"}}),
            &hk,
        )
        .await;
    assert_eq!(
        (status, classification(&envelope)),
        (403, "forbidden"),
        "{envelope}"
    );
    let (status, envelope) = b
        .call_as(
            "tb_reader_key_1",
            "crm.get_opportunity",
            json!({"opportunityId": "o"}),
            &hk,
        )
        .await;
    assert_eq!((status, classification(&envelope)), (403, "forbidden"));
    // The portal cannot be used to reach a service the key may not use.
    let (status, envelope) = b
        .call_as(
            "tb_reader_key_1",
            "portal.call_read_tool",
            json!({"serviceId": "crm", "toolName": "get_opportunity", "arguments": {"opportunityId": "o"}}),
            &hk,
        )
        .await;
    assert_eq!((status, classification(&envelope)), (403, "forbidden"));
    // Only one request reached the upstream: the allowed read.
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_server_side_key_is_used_when_the_caller_sends_none() {
    let server = MockServer::start().await;
    // The upstream echoes the server-side key: the answer must not carry it.
    Mock::given(any())
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"data": [{"note": "sk_server_side_123"}]})),
        )
        .mount(&server)
        .await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some("[server_keys.payments]\nenv = \"PAYMENTS_SECRET_KEY\"\n".into());
    setup
        .env
        .insert("PAYMENTS_SECRET_KEY".into(), "sk_server_side_123".into());
    let b = TestBroker::start(setup).await;
    let (status, envelope) = b.call("payments.get_issuing_cards", json!({}), &[]).await;
    assert_eq!(status, 200, "{envelope}");
    // The caller's own key wins when it sends one.
    let (status, _) = b
        .call(
            "payments.get_issuing_cards",
            json!({}),
            &[("x-payments-api-key", "sk_caller_456")],
        )
        .await;
    assert_eq!(status, 200);
    let auth: Vec<String> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| {
            r.headers
                .get("authorization")
                .unwrap()
                .to_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        auth,
        vec!["Bearer sk_server_side_123", "Bearer sk_caller_456"]
    );
    assert!(!envelope.to_string().contains("sk_server_side_123"));
    assert_eq!(envelope["meta"]["redacted"], 1, "{envelope}");
}
