//! No key, token or header value ever reaches a response body or a log line, through any
//! endpoint (`POST /`, `POST /mcp`, `POST /mcp/<service>/<tool>`).
//!
//! Distinctive values go in as the bearer, the upstream keys, other headers and
//! arguments; a local upstream answers with credential-like fields at several depths
//! and echoes the key and a credential-like header (a cookie) back. The broker never
//! reflects a header itself; values of credential-like headers are also scrubbed from
//! whatever an upstream answers. Every response body and everything logged during the test
//! binary's run are searched for those values; so are what confirmation and tasks hand
//! out (bound previews and decoded token claims, approval pages, elicitation forms, task
//! results).

use serde_json::{Value, json};
use wiremock::matchers::{any, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{Setup, TestBroker, all_logs, closed_port_url, sources_with};

const UPSTREAM_KEY: &str = "hk_LEAKCHECK_upstream_4f1c9";
const AGENT_KEY: &str = "ak_LEAKCHECK_agent_7d2e1";
const CRM_KEY: &str = "ck_LEAKCHECK_crm_93ab0";
const QUERY_KEY: &str = "qk_LEAKCHECK_query_51e0";
const HEADER_VALUE: &str = "LEAKCHECK_header_88ab";
const COOKIE: &str = "session=LEAKCHECK_cookie_0d9";
const WRONG_BEARER: &str = "tb_LEAKCHECK_wrongbearer_77";
const ARG_SECRET: &str = "sk_live_LEAKCHECK_arg_6c1";
const DEEP: [&str; 5] = [
    "LEAKCHECK_deep_token_1",
    "LEAKCHECK_deep_password_2",
    "LEAKCHECK_deep_secret_3",
    "LEAKCHECK_deep_apikey_4",
    "LEAKCHECK_deep_refresh_5",
];

fn secret_answer() -> Value {
    json!({
        "access_token": DEEP[0],
        "items": [
            { "name": "ok", "password": DEEP[1] },
            { "nested": { "deeper": { "client_secret": DEEP[2], "apiKey": DEEP[3] } } }
        ],
        "auth": { "refresh_token": DEEP[4], "Authorization": format!("Bearer {UPSTREAM_KEY}") },
        "note": format!("you called with {UPSTREAM_KEY}"),
        // The probe service's key, from a credential header whose name is not
        // credential-like: scrubbed because the header carries a service's key.
        "query": format!("the probe key was {QUERY_KEY}"),
        "echo": format!("cookie was {COOKIE}")
    })
}

const QUERY_SERVICE: &str = r#"
id = "leakq"
title = "Leak probe"
description = "A test service that places its key in the query string."
catalog_version = "leakq-2026.11.21.1"
version_format = "service_dotted_date"
[credential]
header = "x-leakq-pass"
placement = "query"
name = "api_key"
"#;

const QUERY_TOOL: &str = r#"
[[tool]]
name = "probe"
title = "Probe"
description = "Reads the probe."
tier = "agent_ready"
risk = "read"
[tool.http]
method = "GET"
path = "/probe"
[tool.arguments]
type = "object"
"#;

#[tokio::test]
async fn secrets_never_reach_responses_or_logs() {
    let server = MockServer::start().await;
    Mock::given(path("/api/billing/v1/subscriptions"))
        .respond_with(ResponseTemplate::new(500).set_body_json(secret_answer()))
        .mount(&server)
        .await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_body_json(secret_answer()))
        .mount(&server)
        .await;
    let unreachable = closed_port_url();
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.sources = Some(sources_with(&[
        ("catalog/leakq/service.toml", QUERY_SERVICE),
        ("catalog/leakq/tools.toml", QUERY_TOOL),
    ]));
    setup.upstreams.insert("leakq".into(), server.uri());
    let b = TestBroker::start(setup).await;
    let headers = [
        ("x-hosting-api-key", UPSTREAM_KEY),
        ("x-agent-api-key", AGENT_KEY),
        ("x-crm-api-key", CRM_KEY),
        ("x-leakq-pass", QUERY_KEY),
        ("x-trace-note", HEADER_VALUE),
        ("cookie", COOKIE),
    ];
    let mut bodies = Vec::new();
    let calls: Vec<(&str, Value)> = vec![
        ("hosting.dns_get_dns_records_v1", json!({"domain": "a.b"})),
        ("hosting.billing_get_subscription_list_v1", json!({})),
        (
            "hosting.dns_get_dns_records_v1",
            json!({"domain": "a.b", "dry_run": true}),
        ),
        ("agent.create_task", json!({"message": {"content": "x"}})),
        ("agent.list_agents", json!({})),
        ("portal.check_connection", json!({})),
        (
            "portal.call_read_tool",
            json!({"serviceId": "agent", "toolName": "list_agents", "arguments": {}}),
        ),
        ("hosting.check_configuration", json!({})),
        ("leakq.probe", json!({})),
        (
            "crm.create_custom_provider_config",
            json!({"locationId": "l", "live": {"apiKey": ARG_SECRET, "publishableKey": "pk_x", "extra": 1}, "test": {"apiKey": 5, "publishableKey": "pk"}}),
        ),
        (
            "crm.create_custom_provider_config",
            json!({"locationId": "l", "live": {"apiKey": ARG_SECRET, "publishableKey": "pk_x"}, "test": {"apiKey": ARG_SECRET, "publishableKey": "pk"}}),
        ),
    ];
    let bearer = format!("Bearer {}", crate::support::API_KEY);
    let mut call_headers: Vec<(&str, &str)> = headers.to_vec();
    call_headers.push(("authorization", &bearer));
    call_headers.push(("content-type", "application/json"));
    for (name, args) in calls {
        let (status, body) = b.call(name, args.clone(), &headers).await;
        assert!(status != 500, "{name}: {body}");
        bodies.push((name, body.to_string()));
        // The same call through the MCP endpoint and through the projection's REST path.
        let rpc = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": { "name": name, "arguments": args } });
        let (status, _, text) = b
            .send(
                reqwest::Method::POST,
                "/mcp",
                Some(rpc.to_string().into_bytes()),
                &call_headers,
            )
            .await;
        assert!(status < 500, "{name} via /mcp: {text}");
        bodies.push((name, text));
        let (service, tool) = name.split_once('.').unwrap();
        let rest = format!("/mcp/{service}/{}", tool.replace('_', "-"));
        let (status, _, text) = b
            .send(
                reqwest::Method::POST,
                &rest,
                Some(args.to_string().into_bytes()),
                &call_headers,
            )
            .await;
        assert!(status != 500, "{name} via {rest}: {text}");
        bodies.push((name, text));
    }
    let wrong = format!("Bearer {WRONG_BEARER}");
    let (status, _, text) = b
        .send(
            reqwest::Method::POST,
            "/mcp",
            Some(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_vec()),
            &[
                ("authorization", wrong.as_str()),
                ("content-type", "application/json"),
            ],
        )
        .await;
    assert_eq!(status, 401);
    bodies.push(("wrong bearer via /mcp", text));
    let (status, body) = b
        .call_as(WRONG_BEARER, "portal.check_connection", json!({}), &headers)
        .await;
    assert_eq!(status, 401);
    bodies.push(("wrong bearer", body.to_string()));

    // The query-placed key to an unreachable upstream: the error must not carry the URL.
    let mut setup = Setup::all_upstreams(&unreachable);
    setup.sources = Some(sources_with(&[
        ("catalog/leakq/service.toml", QUERY_SERVICE),
        ("catalog/leakq/tools.toml", QUERY_TOOL),
    ]));
    setup.upstreams.insert("leakq".into(), unreachable.clone());
    let b2 = TestBroker::start(setup).await;
    let (status, body) = b2.call("leakq.probe", json!({}), &headers).await;
    assert_eq!(status, 502, "{body}");
    bodies.push(("leakq unreachable", body.to_string()));

    // The query key did reach the upstream, where it belongs.
    let sent = server.received_requests().await.unwrap();
    assert!(
        sent.iter()
            .any(|r| r.url.query().unwrap_or_default().contains(QUERY_KEY))
    );

    let log_text = all_logs();
    let mut probes = vec![
        UPSTREAM_KEY,
        AGENT_KEY,
        CRM_KEY,
        QUERY_KEY,
        HEADER_VALUE,
        COOKIE,
        WRONG_BEARER,
        ARG_SECRET,
        crate::support::API_KEY,
    ];
    probes.extend(DEEP);
    for probe in probes {
        for (name, body) in &bodies {
            assert!(
                !body.contains(probe),
                "`{probe}` leaked into the response of {name}: {body}"
            );
        }
        assert!(!log_text.contains(probe), "`{probe}` leaked into the logs");
    }
    assert!(log_text.contains("tool call"), "logs were captured");
}

/// What confirmation and tasks hand out: a bound preview and its token, an approval
/// page, an elicitation form, a task's result. None carries a key, the bearer, a header
/// value or a credential-like argument, although each shows (or seals) the request.
#[expect(
    clippy::too_many_lines,
    reason = "one scenario: every place a request is shown or sealed, checked for the same secrets"
)]
#[tokio::test]
async fn tokens_approval_pages_forms_and_task_results_carry_no_secret() {
    use crate::support::poll::GENERATION_ID;
    let server = MockServer::start().await;
    let echo = |extra: Value| {
        let mut answer = secret_answer();
        if let (Some(a), Some(e)) = (answer.as_object_mut(), extra.as_object()) {
            a.extend(e.clone());
        }
        answer
    };
    Mock::given(path("/generations"))
        .respond_with(ResponseTemplate::new(200).set_body_json(echo(
            json!({ "sdGenerationJob": { "generationId": GENERATION_ID } }),
        )))
        .mount(&server)
        .await;
    Mock::given(path(format!("/generations/{GENERATION_ID}")))
        .respond_with(ResponseTemplate::new(200).set_body_json(echo(
            json!({ "generations_by_pk": { "id": GENERATION_ID, "status": "COMPLETE", "note": format!("key {UPSTREAM_KEY}") } }),
        )))
        .mount(&server)
        .await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_body_json(secret_answer()))
        .mount(&server)
        .await;
    let headers = [
        ("x-crm-api-key", CRM_KEY),
        ("x-imagegen-api-key", UPSTREAM_KEY),
        ("x-trace-note", HEADER_VALUE),
        ("cookie", COOKIE),
    ];
    let provider = json!({"locationId": "l", "live": {"apiKey": ARG_SECRET, "publishableKey": "pk_x"}, "test": {"apiKey": ARG_SECRET, "publishableKey": "pk"}});
    let mut texts: Vec<(&str, String)> = Vec::new();

    // Bound: the preview and its token.
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some("confirmation = \"bound\"\n".into());
    let bound = TestBroker::start(setup).await;
    let (_, body) = bound
        .call(
            "crm.create_custom_provider_config",
            provider.clone(),
            &headers,
        )
        .await;
    let token = body["data"]["confirmationToken"]
        .as_str()
        .or(body["error"]["details"]["confirmationToken"].as_str())
        .unwrap_or_else(|| panic!("no token: {body}"))
        .to_string();
    texts.push(("bound preview", body.to_string()));
    // The token's claims are readable base64: decoded, they hold no secret either.
    use base64::Engine as _;
    for part in token.split('.') {
        if let Ok(bytes) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(part) {
            texts.push(("token claims", String::from_utf8_lossy(&bytes).into_owned()));
        }
    }

    // Human: the approval page an approver sees, and the elicitation form.
    let dir = tempfile::tempdir().unwrap();
    let human = crate::support::approval::human_broker(&server, dir.path()).await;
    let (_, body) = human
        .call(
            "crm.create_custom_provider_config",
            provider.clone(),
            &headers,
        )
        .await;
    texts.push(("approval refusal", body.to_string()));
    let link = body["error"]["details"]["approvalUrl"].as_str().unwrap();
    let page = link[link.find("/approvals/").unwrap()..].to_string();
    let session = crate::support::approval::sign_in(&human, &page).await;
    let (status, html) = crate::support::approval::get(&human, &page, Some(&session)).await;
    assert_eq!(status, 200);
    assert!(html.contains("crm.create_custom_provider_config"), "{html}");
    texts.push(("approval page", html));
    let bearer = format!("Bearer {}", crate::support::API_KEY);
    let mcp = |name: &str, params: Value| {
        let mut headers: Vec<(&str, String)> =
            headers.iter().map(|(k, v)| (*k, v.to_string())).collect();
        headers.extend([
            ("authorization", bearer.clone()),
            ("content-type", "application/json".into()),
            ("mcp-protocol-version", "2026-07-28".into()),
            ("mcp-method", params["method"].as_str().unwrap().to_string()),
            ("mcp-name", name.to_string()),
        ]);
        (headers, params.to_string().into_bytes())
    };
    let meta = |capabilities: Value| {
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities,
            "io.modelcontextprotocol/clientInfo": { "name": "leak", "version": "1" }
        })
    };
    let (h, body) = mcp(
        "crm.create_custom_provider_config",
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "crm.create_custom_provider_config", "arguments": provider,
            "_meta": meta(json!({ "elicitation": {} })) } }),
    );
    let refs: Vec<(&str, &str)> = h.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (_, _, text) = human
        .send(reqwest::Method::POST, "/mcp", Some(body), &refs)
        .await;
    assert!(text.contains("input_required"), "{text}");
    texts.push(("elicitation form", text));

    // A task's result, read back with tasks/get.
    let tasks = TestBroker::start(Setup::all_upstreams(&server.uri())).await;
    let extension = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    let (h, body) = mcp(
        "imagegen.generate_image_and_wait",
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "imagegen.generate_image_and_wait",
            "arguments": { "prompt": "p", "confirm": true },
            "_meta": meta(extension.clone()) } }),
    );
    let refs: Vec<(&str, &str)> = h.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (_, _, text) = tasks
        .send(reqwest::Method::POST, "/mcp", Some(body), &refs)
        .await;
    let created: Value = serde_json::from_str(&text).unwrap();
    let task = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {text}"))
        .to_string();
    let mut settled = String::new();
    for _ in 0..200 {
        let (h, body) = mcp(
            &task,
            json!({ "jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {
                "taskId": task, "_meta": meta(extension.clone()) } }),
        );
        let refs: Vec<(&str, &str)> = h.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (_, _, text) = tasks
            .send(reqwest::Method::POST, "/mcp", Some(body), &refs)
            .await;
        if text.contains("\"completed\"") {
            settled = text;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        settled.contains("structuredContent"),
        "the task never completed"
    );
    texts.push(("task result", settled));

    let mut probes = vec![
        UPSTREAM_KEY,
        CRM_KEY,
        HEADER_VALUE,
        COOKIE,
        ARG_SECRET,
        crate::support::API_KEY,
    ];
    probes.extend(DEEP);
    for probe in probes {
        for (name, text) in &texts {
            assert!(!text.contains(probe), "`{probe}` is in the {name}: {text}");
        }
    }
    assert!(!all_logs().contains(&token), "a token reached the logs");
}
