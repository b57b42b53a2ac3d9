//! Idempotent writes (engine/core/src/confirm/idempotency.rs, decision 009): a completed
//! write repeated with the same `Idempotency-Key` is answered from the store without a
//! new upstream call, on every endpoint and across replicas; other arguments are a 409;
//! payments also gets a derived key upstream.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{API_KEY, Setup, TestBroker, check_envelope, classification};

const KEY: (&str, &str) = ("x-payments-api-key", "pk_idem_key_1");

async fn upstream(delay_ms: u64) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/customers"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({ "id": "cus_1", "object": "customer" }))
                .set_delay(std::time::Duration::from_millis(delay_ms)),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v1/customers"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({ "object": "list", "data": [] })),
        )
        .mount(&server)
        .await;
    server
}

async fn posts(server: &MockServer) -> Vec<wiremock::Request> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.method.as_str() == "POST")
        .collect()
}

fn create(name: &str) -> Value {
    json!({ "name": name, "confirm": true })
}

#[tokio::test]
async fn a_repeated_write_is_answered_from_the_store_with_one_upstream_call() {
    let server = upstream(0).await;
    let broker = TestBroker::start(Setup::all_upstreams(&server.uri())).await;
    let idem = ("idempotency-key", "order-7");
    let bearer = format!("Bearer {API_KEY}");
    let (status, first) = broker
        .call("payments.post_customers", create("Jo"), &[KEY, idem])
        .await;
    assert_eq!(status, 200, "{first}");
    // The upstream got a key derived from caller, tool and key: never the caller's text.
    let sent = posts(&server).await;
    let upstream_key = sent[0]
        .headers
        .get("idempotency-key")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        upstream_key.starts_with("tb-") && !upstream_key.contains("order-7"),
        "{upstream_key}"
    );

    let (status, headers, text) = broker
        .send(
            reqwest::Method::POST,
            "/",
            Some(
                json!({ "jsonrpc": "2.0", "id": "t-1", "method": "tools/call",
                        "params": { "name": "payments.post_customers", "arguments": create("Jo") } })
                .to_string()
                .into_bytes(),
            ),
            &[
                ("authorization", bearer.as_str()),
                ("content-type", "application/json"),
                KEY,
                idem,
            ],
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(headers.get("idempotent-replayed").unwrap(), "true");
    let replayed: Value = serde_json::from_str(&text).unwrap();
    check_envelope(&replayed);
    assert_eq!(replayed, first, "the first answer, exactly");
    assert_eq!(posts(&server).await.len(), 1, "no second upstream call");

    // The REST path and the MCP endpoint (header, or _meta) share the record.
    let (status, _, rest) = broker
        .send(
            reqwest::Method::POST,
            "/mcp/payments/post-customers",
            Some(create("Jo").to_string().into_bytes()),
            &[
                ("authorization", bearer.as_str()),
                ("content-type", "application/json"),
                KEY,
                idem,
            ],
        )
        .await;
    assert_eq!(status, 200, "{rest}");
    let mcp = json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call",
                      "params": { "name": "payments.post_customers", "arguments": create("Jo"),
                                  "_meta": { "idempotencyKey": "order-7" } } });
    let (status, _, text) = broker
        .send(
            reqwest::Method::POST,
            "/mcp",
            Some(mcp.to_string().into_bytes()),
            &[
                ("authorization", bearer.as_str()),
                ("content-type", "application/json"),
                KEY,
            ],
        )
        .await;
    assert_eq!(status, 200, "{text}");
    let reply: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(reply["result"]["structuredContent"], first);
    assert_eq!(posts(&server).await.len(), 1);

    // Same key, other arguments: a conflict, nothing sent.
    let (status, body) = broker
        .call(
            "payments.post_customers",
            create("Someone else"),
            &[KEY, idem],
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(classification(&body), "idempotency_conflict");
    assert_eq!(posts(&server).await.len(), 1);
    // Another caller (another upstream key) with the same key text is a new call.
    let (status, _) = broker
        .call(
            "payments.post_customers",
            create("Jo"),
            &[("x-payments-api-key", "pk_other"), idem],
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(posts(&server).await.len(), 2);
}

#[tokio::test]
async fn a_write_that_did_not_run_frees_its_key_and_reads_ignore_keys() {
    let server = upstream(0).await;
    let broker = TestBroker::start(Setup::all_upstreams(&server.uri())).await;
    let idem = ("idempotency-key", "order-8");
    // Without its confirmation the write is refused and nothing is kept...
    let (status, body) = broker
        .call(
            "payments.post_customers",
            json!({ "name": "Jo" }),
            &[KEY, idem],
        )
        .await;
    assert_eq!(status, 428, "{body}");
    // ...so the confirmed call with the same key runs.
    let (status, body) = broker
        .call("payments.post_customers", create("Jo"), &[KEY, idem])
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(posts(&server).await.len(), 1);
    // Reads run every time.
    for _ in 0..2 {
        let (status, _) = broker
            .call("payments.get_customers", json!({}), &[KEY, idem])
            .await;
        assert_eq!(status, 200);
    }
    let gets = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.method.as_str() == "GET")
        .count();
    assert_eq!(gets, 2);
    // A key over 200 characters is the request's error.
    let long = "k".repeat(201);
    let (status, body) = broker
        .call(
            "payments.post_customers",
            create("Jo"),
            &[KEY, ("idempotency-key", &long)],
        )
        .await;
    assert_eq!(
        (status, classification(&body)),
        (400, "invalid_request"),
        "{body}"
    );
}

#[tokio::test]
async fn two_replicas_racing_with_one_key_make_one_upstream_call() {
    // A slow upstream: the second call arrives while the first is in flight.
    let server = upstream(300).await;
    let dir = tempfile::tempdir().unwrap();
    let config = tool_broker::store::StoreConfig::Sqlite(dir.path().join("data"));
    let start = |store| {
        let mut setup = Setup::all_upstreams(&server.uri());
        setup.store = Some(store);
        TestBroker::start(setup)
    };
    let one = start(tool_broker::store::Store::open(&config).await.unwrap()).await;
    let two = start(tool_broker::store::Store::open(&config).await.unwrap()).await;
    let headers = [KEY, ("idempotency-key", "race-1")];
    let (a, b) = tokio::join!(
        one.call("payments.post_customers", create("Jo"), &headers),
        two.call("payments.post_customers", create("Jo"), &headers),
    );
    assert_eq!((a.0, b.0), (200, 200), "{} {}", a.1, b.1);
    assert_eq!(a.1["data"], b.1["data"]);
    assert_eq!(posts(&server).await.len(), 1, "one write upstream");
}
