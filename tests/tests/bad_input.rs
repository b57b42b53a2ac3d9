//! Bad input always gets a clear envelope with the right status: never a panic, a hang
//! or a 500.

use serde_json::{Value, json};

use crate::support::{API_KEY, Setup, TestBroker, classification};

async fn broker() -> TestBroker {
    TestBroker::start(Setup::all_upstreams("http://127.0.0.1:9")).await
}

#[tokio::test]
async fn malformed_requests_are_invalid_request() {
    let b = broker().await;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("not json", b"{nope".to_vec()),
        ("empty body", Vec::new()),
        ("a string", b"\"tools/call\"".to_vec()),
        ("a batch", br#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"portal.check_connection"}}]"#.to_vec()),
        ("no jsonrpc", br#"{"id":1,"method":"tools/call","params":{"name":"portal.check_connection"}}"#.to_vec()),
        ("wrong jsonrpc", br#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"portal.check_connection"}}"#.to_vec()),
        ("no id", br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"portal.check_connection"}}"#.to_vec()),
        ("id of wrong type", br#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"portal.check_connection"}}"#.to_vec()),
        ("unknown method", br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#.to_vec()),
        ("method of wrong type", br#"{"jsonrpc":"2.0","id":1,"method":7,"params":{}}"#.to_vec()),
        ("no params", br#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#.to_vec()),
        ("params not object", br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}"#.to_vec()),
        ("no name", br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#.to_vec()),
        ("name of wrong type", br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}"#.to_vec()),
        ("name without service", br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"check_connection"}}"#.to_vec()),
        ("name with empty tool", br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"portal."}}"#.to_vec()),
    ];
    for (what, body) in cases {
        let (status, envelope) = b.post_raw(body, &[]).await;
        assert_eq!(status, 400, "{what}: {envelope}");
        assert_eq!(
            classification(&envelope),
            "invalid_request",
            "{what}: {envelope}"
        );
        assert!(
            !envelope["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .is_empty(),
            "{what}"
        );
    }
}

#[tokio::test]
async fn the_request_id_is_echoed_as_a_string() {
    let b = broker().await;
    let body = json!({"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {"name": "hosting.check_configuration"}});
    let (status, envelope) = b.post_raw(body.to_string().into_bytes(), &[]).await;
    assert_eq!(status, 200);
    assert_eq!(envelope["meta"]["requestId"], "42");
    // The trace id is a W3C one (32 lower-case hex digits), not the request id.
    let trace = envelope["meta"]["traceId"].as_str().unwrap();
    assert!(
        trace.len() == 32
            && trace
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
        "{trace}"
    );
    let long = "x".repeat(500);
    let body = json!({"jsonrpc": "2.0", "id": long, "method": "tools/call", "params": {"name": "hosting.check_configuration"}});
    let (status, envelope) = b.post_raw(body.to_string().into_bytes(), &[]).await;
    assert_eq!(
        (status, classification(&envelope)),
        (400, "invalid_request")
    );
}

#[tokio::test]
async fn unknown_tools_are_404_with_a_suggestion() {
    let b = broker().await;
    let (status, envelope) = b
        .call("hosting.dns_get_dns_record_v1", json!({}), &[])
        .await;
    assert_eq!((status, classification(&envelope)), (404, "unknown_tool"));
    assert!(
        envelope["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did you mean `hosting.dns_get_dns_records_v1`?"),
        "{envelope}"
    );
    let (status, envelope) = b.call("nosuch.tool", json!({}), &[]).await;
    assert_eq!((status, classification(&envelope)), (404, "unknown_tool"));
    let (status, envelope) = b.call("portal.nosuch", json!({}), &[]).await;
    assert_eq!((status, classification(&envelope)), (404, "unknown_tool"));
    assert_eq!(
        envelope["serviceId"], "portal",
        "portal names answer the portal envelope"
    );
}

#[tokio::test]
async fn arguments_of_wrong_types_list_every_failure_with_its_pointer() {
    let b = broker().await;
    let (status, envelope) = b
        .call(
            "media.audio_duck",
            json!({"voice_asset_id": 1, "ratio": "high", "attack_ms": 1.5, "extra": true}),
            &[],
        )
        .await;
    assert_eq!(
        (status, classification(&envelope)),
        (422, "validation_error")
    );
    let mut pointers: Vec<String> = envelope["error"]["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["pointer"].as_str().unwrap().to_string())
        .collect();
    pointers.sort();
    assert_eq!(
        pointers,
        vec![
            "",
            "/attack_ms",
            "/music_asset_id",
            "/ratio",
            "/voice_asset_id"
        ],
        "{envelope:#}"
    );
    let (status, envelope) = b.call("media.audio_duck", json!([1, 2]), &[]).await;
    assert_eq!(
        (status, classification(&envelope)),
        (422, "validation_error")
    );
    let (status, envelope) = b.call("media.audio_duck", json!("x"), &[]).await;
    assert_eq!(
        (status, classification(&envelope)),
        (422, "validation_error")
    );
}

#[tokio::test]
async fn omitted_arguments_are_fine_when_none_is_required() {
    let b = broker().await;
    let body = json!({"jsonrpc": "2.0", "id": "1", "method": "tools/call", "params": {"name": "portal.check_connection"}});
    let (status, envelope) = b.post_raw(body.to_string().into_bytes(), &[]).await;
    assert_eq!(status, 200, "{envelope}");
    let body = json!({"jsonrpc": "2.0", "id": "1", "method": "tools/call", "params": {"name": "media.audio_duck"}});
    let (status, envelope) = b.post_raw(body.to_string().into_bytes(), &[]).await;
    assert_eq!(
        (status, classification(&envelope)),
        (422, "validation_error")
    );
}

#[tokio::test]
async fn bodies_over_the_limit_are_413() {
    let b = broker().await;
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"portal.check_connection","arguments":{{"serviceId":"{}"}}}}}}"#,
        "x".repeat(1024 * 1024 + 10)
    );
    let (status, envelope) = b.post_raw(big.into_bytes(), &[]).await;
    assert_eq!(
        (status, classification(&envelope)),
        (413, "payload_too_large")
    );

    // Without a Content-Length (chunked), the limit still holds.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        (0..40).map(|_| Ok(vec![b' '; 64 * 1024])).collect();
    let response = reqwest::Client::new()
        .post(format!("{}/", b.url))
        .header("authorization", format!("Bearer {API_KEY}"))
        .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
            chunks,
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 413);
    let envelope: Value = response.json().await.unwrap();
    crate::support::check_envelope(&envelope);
    assert_eq!(classification(&envelope), "payload_too_large");
}

#[tokio::test]
async fn callers_need_a_known_bearer_token() {
    let b = broker().await;
    let body = json!({"jsonrpc": "2.0", "id": "1", "method": "tools/call", "params": {"name": "portal.check_connection"}});
    for auth in [
        None,
        Some("Bearer wrong"),
        Some("Basic abc"),
        Some("Bearer "),
    ] {
        let mut req = reqwest::Client::new()
            .post(format!("{}/", b.url))
            .body(body.to_string());
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        let response = req.send().await.unwrap();
        assert_eq!(response.status().as_u16(), 401, "{auth:?}");
        let envelope: Value = response.json().await.unwrap();
        crate::support::check_envelope(&envelope);
        assert_eq!(classification(&envelope), "unauthorized");
    }
}

#[tokio::test]
async fn health_and_unknown_paths() {
    let b = broker().await;
    let client = reqwest::Client::new();
    let health = client
        .get(format!("{}/healthz", b.url))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
    let ready: Value = client
        .get(format!("{}/readyz", b.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ready["status"], "ready");
    assert_eq!(ready["snapshotId"], b.broker.parts.catalog.snapshot_id);
    // Metrics count calls by catalog tool name only; unknown names are not echoed.
    let _ = b.call("hosting.check_configuration", json!({}), &[]).await;
    let _ = b
        .call("hosting.SECRET_LOOKING_NAME_1234", json!({}), &[])
        .await;
    let metrics = client
        .get(format!("{}/metrics", b.url))
        .send()
        .await
        .unwrap();
    assert_eq!(metrics.status().as_u16(), 200);
    let text = metrics.text().await.unwrap();
    assert!(
        text.contains(
            r#"tool_broker_calls_total{tool="hosting.check_configuration",outcome="ok"} 1"#
        ),
        "{text}"
    );
    assert!(
        text.contains(r#"tool_broker_calls_total{tool="unknown",outcome="unknown_tool"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"tool_broker_responses_total{status="404"} 1"#),
        "{text}"
    );
    assert!(!text.contains("SECRET_LOOKING_NAME"), "{text}");
    let get_root = client.get(format!("{}/", b.url)).send().await.unwrap();
    assert_eq!(get_root.status().as_u16(), 405);
    let other = client.post(format!("{}/nope", b.url)).send().await.unwrap();
    assert_eq!(other.status().as_u16(), 404);
}

#[tokio::test]
async fn a_dot_segment_path_parameter_is_refused_before_anything_is_sent() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let upstream = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "id": "cus_1" })))
        .mount(&upstream)
        .await;
    let b = TestBroker::start(Setup::all_upstreams(&upstream.uri())).await;
    let key = [("x-payments-api-key", "sk_dots")];
    for value in [".", ".."] {
        let (status, body) = b
            .call(
                "payments.get_customers_customer",
                json!({ "path_params": { "customer": value } }),
                &key,
            )
            .await;
        assert_eq!(
            (status, classification(&body)),
            (422, "validation_error"),
            "{value}: {body}"
        );
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("may not be") && message.contains("another resource"),
            "{message}"
        );
    }
    assert!(upstream.received_requests().await.unwrap().is_empty());
    // Dots inside a value are a value: sent, encoded as they are.
    let (status, _) = b
        .call(
            "payments.get_customers_customer",
            json!({ "path_params": { "customer": "..." } }),
            &key,
        )
        .await;
    assert_eq!(status, 200);
    let sent = upstream.received_requests().await.unwrap();
    assert_eq!(sent[0].url.path(), "/v1/customers/...");
}

#[tokio::test]
async fn an_upstream_redirect_is_never_followed() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let internal = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "secret": "internal" })))
        .mount(&internal)
        .await;
    let upstream = MockServer::start().await;
    let b = TestBroker::start(Setup::all_upstreams(&upstream.uri())).await;
    for (status, location) in [
        (302, format!("{}/latest/meta-data", internal.uri())),
        (307, "http://169.254.169.254/latest/meta-data/".to_string()),
        (301, "http://10.0.0.1/admin".to_string()),
        (308, "http://[fe80::1]/".to_string()),
    ] {
        upstream.reset().await;
        Mock::given(method("GET"))
            .respond_with(
                ResponseTemplate::new(status).insert_header("location", location.as_str()),
            )
            .mount(&upstream)
            .await;
        let (_, body) = b
            .call(
                "payments.get_customers",
                json!({}),
                &[("x-payments-api-key", "sk_redirect")],
            )
            .await;
        assert_eq!(body["ok"], false, "{status} to {location}: {body}");
        assert!(!body.to_string().contains("internal"), "{body}");
        // The 3xx is the upstream's answer, classified; the Location is not fetched
        // (an unreachable one would have been upstream_unavailable or a timeout).
        assert_eq!(
            classification(&body),
            "upstream_http_error",
            "{status}: {body}"
        );
        assert_eq!(body["error"]["upstreamStatus"], status, "{body}");
        assert_eq!(upstream.received_requests().await.unwrap().len(), 1);
    }
    assert!(internal.received_requests().await.unwrap().is_empty());
}
