//! Who confirms a write (decision 008), mode `bound`: a write runs only with the
//! `confirmationToken` its preview answered, bound to the caller, the tool, its
//! descriptor hash and the arguments; single use across replicas; expiring. Every
//! refusal names its reason and sends nothing. Reads and previews stay free.

use std::sync::atomic::{AtomicI64, Ordering};

use serde_json::{Value, json};
use wiremock::MockServer;

use crate::support::{Setup, TestBroker, check_envelope, classification, posts};

const KEY: (&str, &str) = ("x-payments-api-key", "pk_bound_canary_4");

/// Seconds added to the real clock by brokers built with [`shifted_clock`].
static SHIFT: AtomicI64 = AtomicI64::new(0);

fn shifted_clock() -> jiff::Timestamp {
    let now = jiff::Timestamp::now();
    now.checked_add(jiff::SignedDuration::from_secs(
        SHIFT.load(Ordering::SeqCst),
    ))
    .unwrap_or(now)
}

async fn bound_broker(
    server: &MockServer,
    store: Option<tool_broker::store::Store>,
    clock: Option<fn() -> jiff::Timestamp>,
) -> TestBroker {
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some("confirmation = \"bound\"\nconfirmation_ttl_seconds = 120\n".into());
    setup.store = store;
    setup.clock = clock;
    TestBroker::start(setup).await
}

fn create(name: &str) -> Value {
    json!({ "name": name, "confirm": true })
}

fn with_token(mut args: Value, token: &str) -> Value {
    args["confirmationToken"] = json!(token);
    args
}

/// The preview of a call without a token, and the token it answered.
async fn preview(broker: &TestBroker, tool: &str, args: Value) -> String {
    let (status, body) = broker.call(tool, args, &[KEY]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["meta"]["dryRun"], true, "{body}");
    assert!(
        body["data"]["nextAction"]
            .as_str()
            .unwrap()
            .contains("confirmationToken")
    );
    body["data"]["confirmationToken"]
        .as_str()
        .unwrap_or_else(|| panic!("no token: {body}"))
        .to_string()
}

/// `payments.post_customers` for `name`, confirmed, with `token`.
async fn confirmed(broker: &TestBroker, name: &str, token: &str) -> (u16, Value) {
    broker
        .call(
            "payments.post_customers",
            with_token(create(name), token),
            &[KEY],
        )
        .await
}

fn reason(body: &Value) -> &str {
    assert_eq!(classification(body), "confirmation_required", "{body}");
    body["error"]["details"]["reason"].as_str().unwrap_or("")
}

#[tokio::test]
async fn under_bound_a_write_runs_once_with_its_own_token_and_never_on_the_flag() {
    let server = MockServer::start().await;
    crate::support::mount_customers(&server).await;
    let broker = bound_broker(&server, None, None).await;

    // The flag alone: the preview and a token, nothing sent.
    let token = preview(&broker, "payments.post_customers", create("Jo")).await;
    assert_eq!(posts(&server).await, 0);
    // Reads are never held.
    let (status, body) = broker
        .call("payments.get_customers", json!({}), &[KEY])
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["data"].get("confirmationToken").is_none());
    let (_, config) = broker
        .call("payments.check_configuration", json!({}), &[KEY])
        .await;
    assert_eq!(config["data"]["writeConfirmation"], "bound", "{config}");

    // Refused, nothing sent: altered, other arguments, other tool, other caller.
    let mut altered = token.clone();
    let last = altered.pop().unwrap();
    altered.push(if last == 'A' { 'B' } else { 'A' });
    let other_tool_token = preview(
        &broker,
        "payments.post_products",
        json!({ "name": "Jo", "confirm": true }),
    )
    .await;
    for (args, expected) in [
        (with_token(create("Jo"), &altered), "invalid"),
        (with_token(create("Jo"), "not-a-token"), "invalid"),
        (with_token(create("Al"), &token), "other_arguments"),
        (with_token(create("Jo"), &other_tool_token), "other_tool"),
    ] {
        let (status, body) = broker.call("payments.post_customers", args, &[KEY]).await;
        assert_eq!((status, reason(&body)), (428, expected), "{body}");
    }
    let (status, body) = broker
        .call(
            "payments.post_customers",
            with_token(create("Jo"), &token),
            &[("x-payments-api-key", "pk_someone_else")],
        )
        .await;
    assert_eq!((status, reason(&body)), (428, "other_caller"));
    assert_eq!(posts(&server).await, 0, "no refusal sent anything");

    // The token without the contract's flag: the contract's refusal, and the token not spent.
    let (status, body) = broker
        .call(
            "payments.post_customers",
            with_token(json!({ "name": "Jo" }), &token),
            &[KEY],
        )
        .await;
    assert_eq!(status, 428, "{body}");
    assert_eq!(classification(&body), "confirmation_required");
    assert_eq!(posts(&server).await, 0);

    // The token and the flag: one upstream request, the token never sent upstream.
    let (status, body) = confirmed(&broker, "Jo", &token).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["meta"]["dryRun"], false);
    assert_eq!(posts(&server).await, 1);
    let sent = &server.received_requests().await.unwrap()[0];
    let sent_body = String::from_utf8_lossy(&sent.body).to_string();
    assert!(!sent_body.contains("confirmationToken") && !sent_body.contains(&token));

    // Used once: refused after.
    let (status, body) = confirmed(&broker, "Jo", &token).await;
    assert_eq!((status, reason(&body)), (428, "used"));
    assert_eq!(posts(&server).await, 1);

    // The audit says what was issued and what ran, and how it was confirmed.
    let records = broker
        .broker
        .parts
        .store
        .list_audit(&tool_broker::store::audit::AuditQuery {
            tool: Some("payments.post_customers".into()),
            limit: 50,
            ..Default::default()
        })
        .await
        .unwrap();
    let outcomes: Vec<(&str, Option<&str>)> = records
        .iter()
        .map(|r| (r.outcome.as_str(), r.confirmation.as_deref()))
        .collect();
    assert_eq!(outcomes.first(), Some(&("token_issued", Some("bound"))));
    assert!(
        outcomes.contains(&("executed", Some("bound"))),
        "{outcomes:?}"
    );
    assert_eq!(
        outcomes.iter().filter(|o| o.0 == "executed").count(),
        1,
        "{outcomes:?}"
    );
    // No token reaches the logs.
    assert!(!crate::support::all_logs().contains(&token));
}

#[tokio::test]
async fn a_token_expires_and_every_endpoint_takes_it() {
    let server = MockServer::start().await;
    crate::support::mount_customers(&server).await;
    let broker = bound_broker(&server, None, Some(shifted_clock)).await;
    let token = preview(&broker, "payments.post_customers", create("Jo")).await;
    // Two minutes and a second later the token is past its expiry.
    SHIFT.store(121, Ordering::SeqCst);
    let (status, body) = confirmed(&broker, "Jo", &token).await;
    SHIFT.store(0, Ordering::SeqCst);
    assert_eq!((status, reason(&body)), (428, "expired"));
    assert_eq!(posts(&server).await, 0);

    // The REST path: preview and token, then the run.
    let bearer = format!("Bearer {}", crate::support::API_KEY);
    let rest = |args: Value| {
        let bearer = bearer.clone();
        let broker = &broker;
        async move {
            let (status, _, text) = broker
                .send(
                    reqwest::Method::POST,
                    "/mcp/payments/post-customers",
                    Some(args.to_string().into_bytes()),
                    &[
                        ("authorization", bearer.as_str()),
                        ("content-type", "application/json"),
                        KEY,
                    ],
                )
                .await;
            let body: Value = serde_json::from_str(&text).unwrap();
            check_envelope(&body);
            (status, body)
        }
    };
    let (status, body) = rest(create("Rest")).await;
    assert_eq!((status, &body["meta"]["dryRun"]), (200, &json!(true)));
    let token = body["data"]["confirmationToken"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, body) = rest(with_token(create("Rest"), &token)).await;
    assert_eq!(
        (status, &body["meta"]["dryRun"]),
        (200, &json!(false)),
        "{body}"
    );
    assert_eq!(posts(&server).await, 1);

    // The MCP endpoint: the same, through tools/call arguments.
    let mcp = |args: Value| {
        let bearer = bearer.clone();
        let broker = &broker;
        async move {
            let call = json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/call",
                "params": { "name": "payments.post_customers", "arguments": args } });
            let (status, _, text) = broker
                .send(
                    reqwest::Method::POST,
                    "/mcp",
                    Some(call.to_string().into_bytes()),
                    &[
                        ("authorization", bearer.as_str()),
                        ("content-type", "application/json"),
                        ("accept", "application/json, text/event-stream"),
                        KEY,
                    ],
                )
                .await;
            assert_eq!(status, 200, "{text}");
            let reply: Value = serde_json::from_str(&text).unwrap();
            reply["result"]["structuredContent"].clone()
        }
    };
    let envelope = mcp(create("Mcp")).await;
    assert_eq!(envelope["meta"]["dryRun"], true, "{envelope}");
    assert_eq!(posts(&server).await, 1);
    let token = envelope["data"]["confirmationToken"]
        .as_str()
        .unwrap()
        .to_string();
    let envelope = mcp(with_token(create("Mcp"), &token)).await;
    assert_eq!(envelope["meta"]["dryRun"], false, "{envelope}");
    assert_eq!(posts(&server).await, 2);
    let envelope = mcp(with_token(create("Mcp"), &token)).await;
    assert_eq!(envelope["error"]["details"]["reason"], "used", "{envelope}");
    assert_eq!(posts(&server).await, 2);
}

#[tokio::test]
async fn a_token_used_on_one_replica_is_spent_on_the_other() {
    let server = MockServer::start().await;
    crate::support::mount_customers(&server).await;
    let dir = tempfile::tempdir().unwrap();
    let config = tool_broker::store::StoreConfig::Sqlite(dir.path().to_path_buf());
    let (a, b) = tokio::join!(
        tool_broker::store::Store::open(&config),
        tool_broker::store::Store::open(&config)
    );
    let one = bound_broker(&server, Some(a.unwrap()), None).await;
    let two = bound_broker(&server, Some(b.unwrap()), None).await;
    // Sealed on one, opened on the other (the key ring is in the store).
    let token = preview(&one, "payments.post_customers", create("Jo")).await;
    let (status, body) = confirmed(&two, "Jo", &token).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = confirmed(&one, "Jo", &token).await;
    assert_eq!((status, reason(&body)), (428, "used"));
    assert_eq!(posts(&server).await, 1);
}

#[test]
fn every_write_lists_the_token_argument_and_no_read_does() {
    let catalog = crate::support::embedded_catalog();
    for tool in &catalog.tools {
        let schema = tool_broker::mcp::schemas::published_input(&catalog, tool);
        let write = tool.risk == tool_broker::catalog::descriptor::Risk::Write;
        for arg in ["confirmationToken", "approvalId"] {
            let listed = schema["properties"].get(arg).is_some();
            assert_eq!(listed, write, "{} {arg}", tool.full_name);
        }
    }
}

#[tokio::test]
async fn a_bound_write_with_an_idempotency_key_runs_once_and_is_replayed_after() {
    let server = MockServer::start().await;
    crate::support::mount_customers(&server).await;
    let broker = bound_broker(&server, None, None).await;
    let idem = ("idempotency-key", "bound-order-1");
    // The preview does not hold the key: the confirmed call can claim it.
    let (status, body) = broker
        .call("payments.post_customers", create("Jo"), &[KEY, idem])
        .await;
    assert_eq!((status, &body["meta"]["dryRun"]), (200, &json!(true)));
    let token = body["data"]["confirmationToken"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, first) = broker
        .call(
            "payments.post_customers",
            with_token(create("Jo"), &token),
            &[KEY, idem],
        )
        .await;
    assert_eq!(status, 200, "{first}");
    // A retry of the same request (a lost answer): the kept answer, not a refusal for
    // the spent token, and no second upstream call.
    let (status, again) = broker
        .call(
            "payments.post_customers",
            with_token(create("Jo"), &token),
            &[KEY, idem],
        )
        .await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again, first);
    assert_eq!(posts(&server).await, 1);
}
